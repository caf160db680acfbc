import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"

/**
 * The users with a live service (active or suspended, not expired, or in [D124]'s grace: the
 * candidates for [D34]'s current service) on one of some plans: who an OpenVPN server may serve ([D106]). The caller
 * still asks `currentOf` which service is current.
 */
export class PlanMembers extends Effect.Service<PlanMembers>()("services/PlanMembers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const rows = SqlSchema.findAll({
      Request: Schema.Struct({ planIds: Schema.Array(Schema.Int), now: Schema.DateFromSelf }),
      Result: Schema.Struct({ user_id: Schema.Int }),
      execute: ({ now, planIds }) => sql`
        select distinct user_id from services
        where plan_id in (select (jsonb_array_elements_text(${JSON.stringify(planIds)}::jsonb))::int)
          and (status = 'grace' or (status in ('active', 'suspended') and expires_at > ${now}))
        order by user_id`
    })
    return {
      usersOnPlans: (planIds: ReadonlyArray<number>) =>
        planIds.length === 0
          ? Effect.succeed([] as ReadonlyArray<number>)
          : Effect.flatMap(clock.now, (now) => rows({ planIds, now })).pipe(
              Effect.map((r) => r.map((x) => x.user_id)),
              Effect.orDie
            )
    } as const
  })
}) {}
