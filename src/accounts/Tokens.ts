import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { matchSecret, randomToken, sha256Hex } from "../platform/Crypto.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import { type Principal, Role, Session } from "./Domain.ts"
import { UserId } from "../platform/Ids.ts"

export type { Principal } from "./Domain.ts"

const TOKEN_SHAPE = /^([1-9][0-9]{0,9})\|([A-Za-z0-9]{40})$/
const TOUCH_EVERY_MS = 60_000

const LiveToken = Schema.Struct({
  user_id: UserId,
  secret_hash: Schema.String,
  last_used_at: Schema.DateFromSelf,
  role: Role,
  two_factor: Schema.Boolean,
  second_factor: Schema.Boolean
})

/**
 * Bearer tokens of [D20]: `<id>|<40 random characters>`, only a SHA-256 of the secret stored,
 * compared in constant time, expiring `TOKEN_TTL_DAYS` after their last use.
 */
export class Tokens extends Effect.Service<Tokens>()("accounts/Tokens", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const ttlMs = config.tokenTtlDays * 86_400_000

    const insert = SqlSchema.single({
      Request: Schema.Struct({
        userId: Schema.Int,
        secretHash: Schema.String,
        now: Schema.DateFromSelf,
        ip: Schema.NullOr(Schema.String),
        userAgent: Schema.NullOr(Schema.String),
        secondFactor: Schema.Boolean
      }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (t) => sql`
        insert into access_tokens (user_id, secret_hash, created_at, last_used_at, ip, user_agent, second_factor)
        values (${t.userId}, ${t.secretHash}, ${t.now}, ${t.now}, ${t.ip}, ${t.userAgent}, ${t.secondFactor}) returning id`
    })
    const liveOf = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.Int, since: Schema.DateFromSelf }),
      Result: Schema.typeSchema(Session.omit("current")),
      execute: (q) => sql`
        select id, created_at, last_used_at, ip, user_agent from access_tokens
        where user_id = ${q.userId} and last_used_at > ${q.since}
        order by last_used_at desc, id desc`
    })
    const revokeOwn = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Int, id: Schema.Int, since: Schema.DateFromSelf }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (q) => sql`
        delete from access_tokens where id = ${q.id} and user_id = ${q.userId} and last_used_at > ${q.since} returning id`
    })
    const live = SqlSchema.findOne({
      Request: Schema.Int,
      Result: LiveToken,
      execute: (id) => sql`
        select t.user_id, t.secret_hash, t.last_used_at, u.role, u.two_factor_secret is not null as two_factor, t.second_factor
        from access_tokens t join users u on u.id = t.user_id
        where t.id = ${id} and u.status = 1`
    })
    const touch = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf }),
      execute: (t) => sql`update access_tokens set last_used_at = ${t.now} where id = ${t.id}`
    })
    const revokeOne = SqlSchema.void({ Request: Schema.Int, execute: (id) => sql`delete from access_tokens where id = ${id}` })
    const revokeAllOf = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.Int, except: Schema.NullOr(Schema.Int) }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (r) =>
        r.except === null
          ? sql`delete from access_tokens where user_id = ${r.userId} returning id`
          : sql`delete from access_tokens where user_id = ${r.userId} and id <> ${r.except} returning id`
    })

    /**
     * a new session, with the address and user agent of the request that opened it ([D99]) and
     * whether its login passed the second factor ([D115])
     */
    const issue = (userId: UserId, options?: { readonly secondFactor?: boolean }) =>
      Effect.gen(function* () {
        const secret = randomToken(40)
        const origin = yield* FiberRef.get(requestOrigin)
        const row = yield* insert({
          userId,
          secretHash: sha256Hex(secret),
          now: yield* clock.now,
          ip: origin.ip,
          userAgent: origin.userAgent,
          secondFactor: options?.secondFactor ?? false
        })
        return `${row.id}|${secret}`
      }).pipe(Effect.orDie)

    /** the user's live tokens, most recently used first; `current` is the caller's own ([D99]) */
    const sessions = (caller: Principal) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const rows = yield* liveOf({ userId: caller.userId, since: new Date(now.getTime() - ttlMs) })
        return rows.map((row) => ({ ...row, current: caller.kind === "token" && row.id === caller.tokenId }))
      }).pipe(Effect.orDie)

    /** revokes one live token of the user's: false when it is not theirs (or not live) */
    const revokeSession = (userId: UserId, id: number) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        return Option.isSome(yield* revokeOwn({ userId, id, since: new Date(now.getTime() - ttlMs) }))
      }).pipe(Effect.orDie)

    const none = Effect.succeed(Option.none<Principal>())
    // issue 27: the bearer check of every request, as a chain of steps (no generator): one
    // query, and an update at most once a minute; never cached ([D4])
    const verify = (token: string): Effect.Effect<Option.Option<Principal>> => {
      return Effect.flatMap(matchSecret(TOKEN_SHAPE, token, live), (found) => {
        if (Option.isNone(found)) return none
        const [id, row] = found.value
        return Effect.flatMap(clock.now, (now) => {
          if (row.last_used_at.getTime() + ttlMs <= now.getTime()) return none
          const principal = Option.some<Principal>({
            kind: "token",
            tokenId: id,
            userId: row.user_id,
            role: row.role,
            twoFactor: row.two_factor,
            secondFactor: row.second_factor,
            scopes: []
          })
          return now.getTime() - row.last_used_at.getTime() >= TOUCH_EVERY_MS ? Effect.as(touch({ id, now }), principal) : Effect.succeed(principal)
        })
      }).pipe(Effect.orDie)
    }

    return {
      issue,
      verify,
      sessions,
      revokeSession,
      revoke: (tokenId: number) => Effect.orDie(revokeOne(tokenId)),
      /** every token of the user (but `except`); how many there were */
      revokeAll: (userId: UserId, options?: { readonly except?: number }) =>
        Effect.orDie(revokeAllOf({ userId, except: options?.except ?? null })).pipe(Effect.map((rows) => rows.length))
    } as const
  })
}) {}
