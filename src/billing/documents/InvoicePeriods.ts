import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

const Period = Schema.Struct({ period_start: Schema.NullOr(Schema.DateFromSelf), period_end: Schema.NullOr(Schema.DateFromSelf) })

/** [D113]: the period a paid invoice bought (`invoices.period_start` / `period_end`, written with the payment) */
export class InvoicePeriods extends Effect.Service<InvoicePeriods>()("billing/InvoicePeriods", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Period,
      execute: (id) => sql`select period_start, period_end from invoices where id = ${id}`
    })
    return {
      of: (invoiceId: number) =>
        Effect.map(Effect.orDie(find(invoiceId)), (found) =>
          Option.flatMap(found, (p) =>
            p.period_start !== null && p.period_end !== null ? Option.some({ from: p.period_start, to: p.period_end }) : Option.none()
          )
        )
    } as const
  })
}) {}
