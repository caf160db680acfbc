import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, randomToken, sha256Hex } from "../platform/Crypto.ts"

/** Who a valid bearer token belongs to. */
export interface Principal {
  readonly tokenId: number
  readonly userId: number
  readonly role: "user" | "admin"
}

const MAX_INT4 = 2_147_483_647
const TOKEN_SHAPE = /^([1-9][0-9]{0,9})\|([A-Za-z0-9]{40})$/
const TOUCH_EVERY_MS = 60_000

/**
 * Bearer tokens of [D20]: `<id>|<40 random characters>`, only a SHA-256 of the secret stored,
 * compared in constant time, expiring `TOKEN_TTL_DAYS` after their last use.
 */
export class Tokens extends Context.Tag("Tokens")<Tokens, {
  readonly issue: (userId: number) => Effect.Effect<string>
  readonly verify: (token: string) => Effect.Effect<Option.Option<Principal>>
  readonly revoke: (tokenId: number) => Effect.Effect<void>
  readonly revokeAll: (userId: number, options?: { readonly except?: number }) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    Tokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const config = yield* AppConfig
      const ttlMs = config.tokenTtlDays * 86_400_000

      const issue = (userId: number) =>
        Effect.gen(function*() {
          const secret = randomToken(40)
          const now = yield* clock.now
          const [row] = yield* sql<{ id: number }>`
            insert into access_tokens (user_id, secret_hash, created_at, last_used_at)
            values (${userId}, ${sha256Hex(secret)}, ${now}, ${now}) returning id`
          return `${row!.id}|${secret}`
        }).pipe(Effect.orDie)

      const verify = (token: string) =>
        Effect.gen(function*() {
          const match = TOKEN_SHAPE.exec(token)
          if (!match) return Option.none<Principal>()
          const id = Number(match[1])
          if (id > MAX_INT4) return Option.none<Principal>()
          const rows = yield* sql<{ user_id: number; secret_hash: string; last_used_at: Date; role: "user" | "admin" }>`
            select t.user_id, t.secret_hash, t.last_used_at, u.role
            from access_tokens t join users u on u.id = t.user_id
            where t.id = ${id} and u.status = 1`
          const row = rows[0]
          if (!row || !constantTimeEqual(row.secret_hash, sha256Hex(match[2]!))) return Option.none<Principal>()
          const now = yield* clock.now
          if (row.last_used_at.getTime() + ttlMs <= now.getTime()) return Option.none<Principal>()
          if (now.getTime() - row.last_used_at.getTime() >= TOUCH_EVERY_MS) {
            yield* sql`update access_tokens set last_used_at = ${now} where id = ${id}`
          }
          return Option.some<Principal>({ tokenId: id, userId: row.user_id, role: row.role })
        })

      return {
        issue,
        verify: (token) => verify(token).pipe(Effect.orDie),
        revoke: (tokenId) => sql`delete from access_tokens where id = ${tokenId}`.pipe(Effect.asVoid, Effect.orDie),
        revokeAll: (userId, options) =>
          (options?.except !== undefined
            ? sql`delete from access_tokens where user_id = ${userId} and id <> ${options.except}`
            : sql`delete from access_tokens where user_id = ${userId}`).pipe(Effect.asVoid, Effect.orDie)
      }
    })
  )
}
