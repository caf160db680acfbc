import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ServiceId } from "../platform/Ids.ts"
import { RenewalCandidate } from "./Domain.ts"

/** a service's id as a statement returns it */
const GracedId = Schema.Struct({ id: ServiceId })

/**
 * [D124]: the statements of a renewal's grace on the services table, built once with the service
 * that owns the table (`ServiceRows`): into grace when the renewal is due, expired when it ends.
 */
export const makeGraceRows = (sql: SqlClient.SqlClient) => {
  /**
   * [D124]: these auto-renewing active services whose renewal is due (their `expires_at` is the
   * one given) go into grace until `grace_until`; the ids that did
   */
  const enterGraceStatement = SqlSchema.findAll({
    Request: Schema.Struct({ json: Schema.String, now: Schema.DateFromSelf }),
    Result: GracedId,
    execute: ({ json, now }) => sql`
        update services s set status = 'grace', grace_until = g.grace_until, updated_at = ${now}
        from jsonb_to_recordset(${json}::jsonb) as g(id int, expires_at timestamptz, grace_until timestamptz)
        where s.id = g.id and s.status = 'active' and s.auto_renew and s.expires_at = g.expires_at
        returning s.id`
  })
  const enterGraceRows = (items: ReadonlyArray<{ readonly serviceId: ServiceId; readonly expiresAt: Date; readonly graceUntil: Date }>, now: Date) =>
    items.length === 0
      ? Effect.succeed<ReadonlyArray<number>>([])
      : enterGraceStatement({
          json: JSON.stringify(
            items.map((i) => ({
              id: i.serviceId,
              expires_at: i.expiresAt.toISOString(),
              grace_until: i.graceUntil.toISOString()
            }))
          ),
          now
        }).pipe(
          Effect.map((rows) => rows.map((r) => r.id)),
          Effect.orDie
        )

  /** [D124]: the grace ended without a payment: the service is expired; it, when it was in grace */
  const expireGraceStatement = SqlSchema.findOne({
    Request: Schema.Struct({ id: Schema.Number, now: Schema.DateFromSelf }),
    Result: RenewalCandidate,
    execute: ({ id, now }) => sql`
        update services set status = 'expired', grace_until = null, updated_at = ${now}
        where id = ${id} and status = 'grace'
        returning id, user_id, plan_id, cycle_id, expires_at`
  })
  const expireGraceRow = (id: number, now: Date) => expireGraceStatement({ id, now }).pipe(Effect.orDie)
  return { enterGraceRows, expireGraceRow } as const
}
