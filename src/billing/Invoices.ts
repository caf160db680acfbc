import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

export const INVOICE_STATUSES = ["pending", "paid", "cancelled"] as const

export const InvoiceListItem = Schema.Struct({
  id: Schema.Int,
  uuid: Schema.String,
  amount: Schema.String,
  currency: Schema.String,
  status: Schema.Literal(...INVOICE_STATUSES),
  gateway: Schema.String,
  created_at: Schema.String,
  paid_at: Schema.NullOr(Schema.String)
}).annotations({ identifier: "InvoiceListItem" })

export const InvoiceDetail = Schema.Struct({
  ...InvoiceListItem.fields,
  discount: Schema.String,
  promo_code: Schema.NullOr(Schema.String),
  plan: Schema.Struct({ name: Schema.String }),
  cycle: Schema.Struct({ name: Schema.String, duration_days: Schema.Int }),
  due_date: Schema.String
}).annotations({ identifier: "InvoiceDetail" })

export interface InvoiceRow {
  readonly id: number
  readonly uuid: string
  readonly user_id: number | null
  readonly service_id: number | null
  readonly plan_id: number
  readonly cycle_id: number
  readonly amount: string
  readonly discount: string
  readonly currency: string
  readonly status: (typeof INVOICE_STATUSES)[number]
  readonly gateway: string
  readonly promo_code: string | null
  readonly promo_code_id: number | null
  readonly due_date: Date
  readonly paid_at: Date | null
  readonly transaction_id: string | null
  readonly created_at: Date
  readonly plan_name: string
  readonly cycle_name: string
  readonly duration_days: number
}

export const toListItem = (r: InvoiceRow): typeof InvoiceListItem.Type => ({
  id: r.id,
  uuid: r.uuid,
  amount: r.amount,
  currency: r.currency,
  status: r.status,
  gateway: r.gateway,
  created_at: r.created_at.toISOString(),
  paid_at: r.paid_at ? r.paid_at.toISOString() : null
})

export const toDetail = (r: InvoiceRow): typeof InvoiceDetail.Type => ({
  ...toListItem(r),
  discount: r.discount,
  promo_code: r.promo_code,
  plan: { name: r.plan_name },
  cycle: { name: r.cycle_name, duration_days: r.duration_days },
  due_date: r.due_date.toISOString()
})

/** Invoices of the billing room: reads and rendering. */
export class Invoices extends Context.Tag("billing/Invoices")<Invoices, {
  readonly page: (userId: number, status: Option.Option<string>, page: number, perPage: number) => Effect.Effect<{ rows: ReadonlyArray<InvoiceRow>; total: number }>
  readonly byUuid: (uuid: string) => Effect.Effect<Option.Option<InvoiceRow>>
  readonly byId: (id: number) => Effect.Effect<Option.Option<InvoiceRow>>
}>() {
  static readonly Live = Layer.effect(
    Invoices,
    Effect.map(SqlClient.SqlClient, (sql) => {
      const columns = sql`
        i.id, i.uuid::text as uuid, i.user_id, i.service_id, i.plan_id, i.cycle_id, i.amount::text as amount,
        i.discount::text as discount, i.currency, i.status, i.gateway, i.promo_code, i.promo_code_id, i.due_date,
        i.paid_at, i.transaction_id, i.created_at, p.name as plan_name, c.name as cycle_name, c.duration_days`
      const from = sql`from invoices i join plans p on p.id = i.plan_id join billing_cycles c on c.id = i.cycle_id`
      const select = sql`select ${columns} ${from}`
      const one = (rows: ReadonlyArray<InvoiceRow>) => Option.fromNullable(rows[0])
      return {
        page: (userId, status, page, perPage) =>
          Effect.gen(function*() {
            const filter = Option.match(status, { onNone: () => sql``, onSome: (s) => sql`and i.status = ${s}` })
            // the page and the total in one round trip (issue 8); a page past the end has no row
            // to carry the total, so only then is it counted on its own
            const found = yield* sql<InvoiceRow & { readonly total_rows: number }>`
              select ${columns}, count(*) over ()::int as total_rows ${from}
              where i.user_id = ${userId} ${filter}
              order by i.created_at desc, i.id desc limit ${perPage} offset ${(page - 1) * perPage}`
            const total = found[0]?.total_rows ?? (page === 1 ? 0 : (yield* sql<{ n: number }>`
              select count(*)::int as n from invoices i where i.user_id = ${userId} ${filter}`)[0]!.n)
            const rows = found.map(({ total_rows: _, ...row }) => row as InvoiceRow)
            return { rows, total }
          }).pipe(Effect.orDie),
        byUuid: (uuid) => sql<InvoiceRow>`${select} where i.uuid = ${uuid}::uuid`.pipe(Effect.map(one), Effect.orDie),
        byId: (id) => sql<InvoiceRow>`${select} where i.id = ${id}`.pipe(Effect.map(one), Effect.orDie)
      }
    })
  )
}
