import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"
import { AppKey, constantTimeEqual, randomToken, sha256Hex } from "../platform/Crypto.ts"

export interface VpnCredential {
  readonly username: string
  readonly secret: string
  readonly rotatedAt: Date
}

/**
 * Per-user OpenVPN credentials of [D53]: a stable username and a generated secret, stored
 * encrypted with APP_KEY (to show it again) and as a SHA-256 (to check it). Rotation replaces
 * the secret; the old one stops working at once.
 */
export class Credentials extends Context.Tag("vpn/Credentials")<Credentials, {
  /** the user's credentials, made on first use */
  readonly get: (userId: number) => Effect.Effect<VpnCredential>
  readonly rotate: (userId: number) => Effect.Effect<VpnCredential>
  /** the user whose username and secret these are */
  readonly verify: (username: string, secret: string) => Effect.Effect<Option.Option<number>>
  readonly userOf: (username: string) => Effect.Effect<Option.Option<number>>
}>() {
  static readonly Live = Layer.effect(
    Credentials,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const appKey = yield* AppKey
      const clock = yield* AppClock
      interface Row {
        readonly user_id: number
        readonly username: string
        readonly secret_enc: string
        readonly secret_hash: string
        readonly rotated_at: Date
      }
      const select = (userId: number) =>
        sql<Row>`select user_id, username, secret_enc, secret_hash, rotated_at from vpn_credentials where user_id = ${userId}`
      const open = (row: Row): VpnCredential => ({
        username: row.username,
        secret: appKey.decrypt(row.secret_enc),
        rotatedAt: row.rotated_at
      })
      const get = (userId: number) =>
        Effect.gen(function*() {
          const found = yield* select(userId)
          if (found[0]) return open(found[0])
          const secret = randomToken(32)
          const now = yield* clock.now
          yield* sql`
            insert into vpn_credentials (user_id, username, secret_enc, secret_hash, rotated_at)
            values (${userId}, ${`u${userId}-${randomToken(8).toLowerCase()}`}, ${appKey.encrypt(secret)}, ${sha256Hex(secret)}, ${now})
            on conflict (user_id) do nothing`
          return open((yield* select(userId))[0]!)
        })
      return {
        get: (userId) => get(userId).pipe(Effect.orDie),
        rotate: (userId) =>
          Effect.gen(function*() {
            yield* get(userId)
            const secret = randomToken(32)
            const now = yield* clock.now
            const [row] = yield* sql<Row>`
              update vpn_credentials set secret_enc = ${appKey.encrypt(secret)}, secret_hash = ${sha256Hex(secret)}, rotated_at = ${now}
              where user_id = ${userId}
              returning user_id, username, secret_enc, secret_hash, rotated_at`
            return open(row!)
          }).pipe(Effect.orDie),
        verify: (username, secret) =>
          sql<Row>`select user_id, username, secret_enc, secret_hash, rotated_at from vpn_credentials where username = ${username}`.pipe(
            Effect.map((rows) => {
              const row = rows[0]
              return row && constantTimeEqual(row.secret_hash, sha256Hex(secret)) ? Option.some(row.user_id) : Option.none()
            }),
            Effect.orDie
          ),
        userOf: (username) =>
          sql<{ user_id: number }>`select user_id from vpn_credentials where username = ${username}`.pipe(
            Effect.map((rows) => Option.fromNullable(rows[0]?.user_id)),
            Effect.orDie
          )
      }
    })
  )
}
