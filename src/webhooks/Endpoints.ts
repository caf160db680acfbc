import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey } from "../platform/Crypto.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { makePage } from "../platform/Page.ts"
import { bareHost, checkAddresses, resolveHost, urlShapeProblem } from "./Addresses.ts"
import { type CreatedWebhookEndpoint, type WebhookEndpoint, type WebhookEvent } from "./Domain.ts"

/** admins' pages, as invoices */
export const WEBHOOKS_PAGE_SIZE = 15

const EndpointRow = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Unknown,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
type EndpointRow = typeof EndpointRow.Type
const PagedEndpointRow = Schema.Struct({ ...EndpointRow.fields, total_rows: Schema.Int })

const Id = Schema.Struct({ id: Schema.Int })
const Count = Schema.Struct({ n: Schema.Int })

const eventsOf = (value: unknown): ReadonlyArray<string> => (Array.isArray(value) ? value.filter((e): e is string => typeof e === "string") : [])

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  description: row.description,
  events: eventsOf(typeof row.events === "string" ? JSON.parse(row.events) : row.events),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

/** [D101]: the admins' endpoints (`webhook_endpoints`), each URL checked as the sender checks it. */
export class WebhookEndpoints extends Effect.Service<WebhookEndpoints>()("webhooks/WebhookEndpoints", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const config = yield* AppConfig
    const allowPrivate = config.webhooksAllowPrivate === true

    const insertEndpoint = SqlSchema.single({
      Request: Schema.Struct({
        url: Schema.String,
        description: Schema.NullOr(Schema.String),
        events: Schema.String,
        secret: Schema.String,
        now: Schema.DateFromSelf
      }),
      Result: EndpointRow,
      execute: (r) => sql`
        insert into webhook_endpoints (url, description, events, secret, created_at, updated_at)
        values (${r.url}, ${r.description}, ${r.events}::jsonb, ${r.secret}, ${r.now}, ${r.now})
        returning id, url, description, events, created_at, updated_at`
    })

    const findEndpoint = SqlSchema.findOne({
      Request: Schema.Int,
      Result: EndpointRow,
      execute: (id) => sql`select id, url, description, events, created_at, updated_at from webhook_endpoints where id = ${id}`
    })

    const updateEndpoint = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.Int,
        url: Schema.NullOr(Schema.String),
        setDescription: Schema.Boolean,
        description: Schema.NullOr(Schema.String),
        events: Schema.NullOr(Schema.String),
        now: Schema.DateFromSelf
      }),
      Result: EndpointRow,
      execute: (r) => sql`
        update webhook_endpoints set
          url = coalesce(${r.url}, url),
          description = case when ${r.setDescription} then ${r.description} else description end,
          events = coalesce(${r.events}::jsonb, events),
          updated_at = ${r.now}
        where id = ${r.id}
        returning id, url, description, events, created_at, updated_at`
    })

    const deleteEndpoint = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Id,
      execute: (id) => sql`delete from webhook_endpoints where id = ${id} returning id`
    })

    const listEndpoints = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Int, offset: Schema.Int }),
      Result: PagedEndpointRow,
      execute: (r) => sql`
        select id, url, description, events, created_at, updated_at, count(*) over ()::int as total_rows
        from webhook_endpoints order by id limit ${r.limit} offset ${r.offset}`
    })
    const countEndpoints = SqlSchema.single({
      Request: Schema.Void,
      Result: Count,
      execute: () => sql`select count(*)::int as n from webhook_endpoints`
    })

    /** the URL rules at create/update time: 422 `errors.url` */
    const checkUrl = (raw: string) =>
      Effect.gen(function* () {
        const shape = urlShapeProblem(raw, allowPrivate)
        if (shape !== undefined) return yield* Effect.fail(ValidationError.field("url", shape))
        const url = new URL(raw)
        // an https name that does not resolve now is kept: it is checked again before every send;
        // [D117]: http:// needs every address known now to be private, so it must resolve
        const addresses = yield* Effect.promise(() => resolveHost(bareHost(url)).catch(() => undefined))
        if (addresses === undefined || addresses.length === 0) {
          if (url.protocol === "http:") return yield* Effect.fail(ValidationError.field("url", "The url host does not resolve."))
          return url.href
        }
        const checked = checkAddresses(url, addresses, allowPrivate)
        if (!checked.ok) return yield* Effect.fail(ValidationError.field("url", checked.reason))
        return url.href
      })

    const create = (input: {
      readonly url: string
      readonly events: ReadonlyArray<WebhookEvent>
      readonly description?: string | null | undefined
    }): Effect.Effect<CreatedWebhookEndpoint, ValidationError> =>
      Effect.gen(function* () {
        const url = yield* checkUrl(input.url.trim())
        const secret = `whsec_${randomBytes(24).toString("hex")}`
        const row = yield* insertEndpoint({
          url,
          description: input.description ?? null,
          events: JSON.stringify(input.events),
          secret: appKey.encrypt(secret),
          now: yield* clock.now
        }).pipe(Effect.orDie)
        return { ...toEndpoint(row), secret }
      })

    const get = (id: number): Effect.Effect<WebhookEndpoint, NotFound> =>
      findEndpoint(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: (row) => Effect.succeed(toEndpoint(row)) }))
      )

    const update = (
      id: number,
      input: {
        readonly url?: string | undefined
        readonly events?: ReadonlyArray<WebhookEvent> | undefined
        readonly description?: string | null | undefined
      }
    ): Effect.Effect<WebhookEndpoint, NotFound | ValidationError> =>
      Effect.gen(function* () {
        yield* get(id)
        const url = input.url === undefined ? null : yield* checkUrl(input.url.trim())
        const row = yield* updateEndpoint({
          id,
          url,
          setDescription: input.description !== undefined,
          description: input.description ?? null,
          events: input.events === undefined ? null : JSON.stringify(input.events),
          now: yield* clock.now
        }).pipe(Effect.orDie)
        return yield* Option.match(row, { onNone: () => Effect.fail(new NotFound()), onSome: (r) => Effect.succeed(toEndpoint(r)) })
      })

    /** the endpoint and its delivery log go; its pending deliveries are dropped when their turn comes */
    const remove = (id: number): Effect.Effect<void, NotFound> =>
      deleteEndpoint(id).pipe(Effect.orDie, Effect.flatMap(Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: () => Effect.void })))

    const listPage = (pageNo: number) =>
      Effect.gen(function* () {
        const rows = yield* listEndpoints({ limit: WEBHOOKS_PAGE_SIZE, offset: (pageNo - 1) * WEBHOOKS_PAGE_SIZE })
        const total = rows.length > 0 ? rows[0]!.total_rows : (yield* countEndpoints(undefined)).n
        return makePage({
          rows: rows.map(toEndpoint),
          total,
          page: pageNo,
          perPage: WEBHOOKS_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/webhooks`
        })
      }).pipe(Effect.orDie)

    return { create, get, update, remove, listPage } as const
  })
}) {}
