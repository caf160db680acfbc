import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, randomToken, sha256Hex } from "../platform/Crypto.ts"
import { type Principal, Role } from "./Domain.ts"

export type { Principal } from "./Domain.ts"

const MAX_INT4 = 2_147_483_647
const TOKEN_SHAPE = /^([1-9][0-9]{0,9})\|([A-Za-z0-9]{40})$/
const TOUCH_EVERY_MS = 60_000

const LiveToken = Schema.Struct({
  user_id: Schema.Int,
  secret_hash: Schema.String,
  last_used_at: Schema.DateFromSelf,
  role: Role,
  two_factor: Schema.Boolean
})

/**
 * Bearer tokens of [D20]: `<id>|<40 random characters>`, only a SHA-256 of the secret stored,
 * compared in constant time, expiring `TOKEN_TTL_DAYS` after their last use.
 */
export class Tokens extends Effect.Service<Tokens>()("accounts/Tokens", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const ttlMs = config.tokenTtlDays * 86_400_000

    const insert = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Int, secretHash: Schema.String, now: Schema.DateFromSelf }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (t) => sql`
        insert into access_tokens (user_id, secret_hash, created_at, last_used_at)
        values (${t.userId}, ${t.secretHash}, ${t.now}, ${t.now}) returning id`
    })
    const live = SqlSchema.findOne({
      Request: Schema.Int,
      Result: LiveToken,
      execute: (id) => sql`
        select t.user_id, t.secret_hash, t.last_used_at, u.role, u.two_factor_secret is not null as two_factor
        from access_tokens t join users u on u.id = t.user_id
        where t.id = ${id} and u.status = 1`
    })
    const touch = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf }),
      execute: (t) => sql`update access_tokens set last_used_at = ${t.now} where id = ${t.id}`
    })
    const revokeOne = SqlSchema.void({ Request: Schema.Int, execute: (id) => sql`delete from access_tokens where id = ${id}` })
    const revokeAllOf = SqlSchema.void({
      Request: Schema.Struct({ userId: Schema.Int, except: Schema.NullOr(Schema.Int) }),
      execute: (r) => r.except === null
        ? sql`delete from access_tokens where user_id = ${r.userId}`
        : sql`delete from access_tokens where user_id = ${r.userId} and id <> ${r.except}`
    })

    const issue = (userId: number) =>
      Effect.gen(function*() {
        const secret = randomToken(40)
        const row = yield* insert({ userId, secretHash: sha256Hex(secret), now: yield* clock.now })
        return `${row.id}|${secret}`
      }).pipe(Effect.orDie)

    const verify = (token: string) =>
      Effect.gen(function*() {
        const match = TOKEN_SHAPE.exec(token)
        if (!match) return Option.none<Principal>()
        const id = Number(match[1])
        if (id > MAX_INT4) return Option.none<Principal>()
        const found = yield* live(id)
        if (Option.isNone(found) || !constantTimeEqual(found.value.secret_hash, sha256Hex(match[2]!))) return Option.none<Principal>()
        const row = found.value
        const now = yield* clock.now
        if (row.last_used_at.getTime() + ttlMs <= now.getTime()) return Option.none<Principal>()
        if (now.getTime() - row.last_used_at.getTime() >= TOUCH_EVERY_MS) yield* touch({ id, now })
        return Option.some<Principal>({ tokenId: id, userId: row.user_id, role: row.role, twoFactor: row.two_factor })
      }).pipe(Effect.orDie)

    return {
      issue,
      verify,
      revoke: (tokenId: number) => Effect.orDie(revokeOne(tokenId)),
      revokeAll: (userId: number, options?: { readonly except?: number }) =>
        Effect.orDie(revokeAllOf({ userId, except: options?.except ?? null }))
    } as const
  })
}) {}
