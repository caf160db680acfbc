import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AuditLog } from "../audit/AuditLog.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { AppClock } from "../platform/Clock.ts"
import { matchSecret, randomToken, sha256Hex } from "../platform/Crypto.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import { KeyScope, type Principal, Role } from "./Domain.ts"
import { UserId } from "../platform/Ids.ts"

const KEY_SHAPE = /^vpk_([1-9][0-9]{0,9})_([A-Za-z0-9]{40})$/
const TOUCH_EVERY_MS = 60_000

export const ADMIN_SCOPES_FOR_ADMINS = "The admin scopes are only for an admin's keys."
export const EXPIRES_IN_PAST = "The expires at field must be a date after now."

/** scopes travel as one space-separated text (no driver differences over arrays) */
const ScopesText = Schema.transform(Schema.String, Schema.Array(KeyScope), {
  strict: false,
  decode: (text) => text.split(" ").filter((s) => s.length > 0),
  encode: (scopes) => scopes.join(" ")
})
const Row = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  scopes: ScopesText,
  created_at: Schema.DateFromSelf,
  last_used_at: Schema.NullOr(Schema.DateFromSelf),
  expires_at: Schema.NullOr(Schema.DateFromSelf)
})
const LiveKey = Schema.Struct({
  user_id: UserId,
  secret_hash: Schema.String,
  scopes: ScopesText,
  last_used_at: Schema.NullOr(Schema.DateFromSelf),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  role: Role,
  two_factor: Schema.Boolean,
  second_factor: Schema.Boolean
})

/**
 * API keys of [D98]: `vpk_<id>_<40 random characters>`, shown once, only a SHA-256 of the secret
 * stored and compared in constant time. A key acts as its owner within its scopes (checked by
 * the authentication middleware); an expired or revoked (deleted) key is no key at all.
 */
export class ApiKeys extends Effect.Service<ApiKeys>()("accounts/ApiKeys", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const audit = yield* AuditLog
    const notifications = yield* Notifications

    const insert = SqlSchema.single({
      Request: Schema.Struct({
        userId: Schema.Int,
        name: Schema.String,
        scopes: Schema.String,
        secretHash: Schema.String,
        now: Schema.DateFromSelf,
        expiresAt: Schema.NullOr(Schema.DateFromSelf),
        secondFactor: Schema.Boolean
      }),
      Result: Row,
      execute: (k) => sql`
        insert into api_keys (user_id, name, scopes, secret_hash, created_at, expires_at, second_factor)
        values (${k.userId}, ${k.name}, string_to_array(${k.scopes}::text, ' '), ${k.secretHash}, ${k.now}, ${k.expiresAt}, ${k.secondFactor})
        returning id, name, array_to_string(scopes, ' ') as scopes, created_at, last_used_at, expires_at`
    })
    const listOf = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Row,
      execute: (userId) => sql`
        select id, name, array_to_string(scopes, ' ') as scopes, created_at, last_used_at, expires_at from api_keys
        where user_id = ${userId} order by id`
    })
    const deleteOwn = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Int, id: Schema.Int }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (k) => sql`delete from api_keys where id = ${k.id} and user_id = ${k.userId} returning id`
    })
    const deleteAllOf = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (userId) => sql`delete from api_keys where user_id = ${userId} returning id`
    })
    const live = SqlSchema.findOne({
      Request: Schema.Int,
      Result: LiveKey,
      execute: (id) => sql`
        select k.user_id, k.secret_hash, array_to_string(k.scopes, ' ') as scopes, k.last_used_at, k.expires_at, u.role,
               u.two_factor_secret is not null as two_factor, k.second_factor
        from api_keys k join users u on u.id = k.user_id
        where k.id = ${id} and u.status = 1`
    })
    const touch = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf }),
      execute: (k) => sql`update api_keys set last_used_at = ${k.now} where id = ${k.id}`
    })

    /** a new key; the admin scopes only for an admin, an expiry only in the future (422) */
    const create = (caller: Principal, input: { readonly name: string; readonly scopes: ReadonlyArray<KeyScope>; readonly expires_at?: Date | undefined }) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const errors: Record<string, Array<string>> = {}
        if (caller.role !== "admin" && input.scopes.some((s) => s.startsWith("admin:"))) errors["scopes"] = [ADMIN_SCOPES_FOR_ADMINS]
        if (input.expires_at !== undefined && input.expires_at.getTime() <= now.getTime()) errors["expires_at"] = [EXPIRES_IN_PAST]
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        const secret = randomToken(40)
        const scopes = [...new Set(input.scopes)]
        // the key, its audit entry and its security mail ([D96]: name, scopes, expiry; never the key) commit together
        const row = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const row = yield* insert({
                userId: caller.userId,
                name: input.name,
                scopes: scopes.join(" "),
                secretHash: sha256Hex(secret),
                now,
                expiresAt: input.expires_at ?? null,
                // a key is no stronger than the session that made it ([D115])
                secondFactor: caller.secondFactor
              })
              yield* audit.record({
                action: "api_key_created",
                actorId: caller.userId,
                actorKind: caller.kind,
                resource: `api_key:${row.id}`,
                subjectId: caller.userId
              })
              const origin = yield* FiberRef.get(requestOrigin)
              yield* notifications.security({
                userId: caller.userId,
                kind: "api-key-created",
                view: {
                  key_id: row.id,
                  key_name: row.name,
                  scopes: row.scopes,
                  expires_at: row.expires_at,
                  created_at: row.created_at,
                  ip: origin.ip
                }
              })
              return row
            })
          )
          .pipe(Effect.orDie)
        yield* notifications.wake
        return { id: row.id, name: row.name, scopes: row.scopes, expires_at: row.expires_at, key: `vpk_${row.id}_${secret}` }
      })

    const revoke = (caller: Principal, id: number) =>
      Effect.gen(function* () {
        const gone = yield* Effect.orDie(deleteOwn({ userId: caller.userId, id }))
        // another user's key reads as a missing one ([D11])
        if (Option.isNone(gone)) return yield* Effect.fail(new NotFound())
        yield* audit.record({
          action: "api_key_revoked",
          actorId: caller.userId,
          actorKind: caller.kind,
          resource: `api_key:${id}`,
          subjectId: caller.userId
        })
      })

    /** the principal of a live key: right secret, owner active, not expired */
    const none = Effect.succeed(Option.none<Principal>())
    // issue 27: the bearer check of every request made with a key, as a chain of steps (no
    // generator): one query, never cached ([D4])
    const verify = (key: string): Effect.Effect<Option.Option<Principal>> => {
      return Effect.flatMap(matchSecret(KEY_SHAPE, key, live), (found) => {
        if (Option.isNone(found)) return none
        const [id, row] = found.value
        return Effect.flatMap(clock.now, (now) => {
          if (row.expires_at !== null && row.expires_at.getTime() <= now.getTime()) return none
          const principal = Option.some<Principal>({
            kind: "api_key",
            tokenId: id,
            userId: row.user_id,
            role: row.role,
            twoFactor: row.two_factor,
            secondFactor: row.second_factor,
            scopes: row.scopes
          })
          // a read stays cheap: the last use is written at most once a minute
          return row.last_used_at === null || now.getTime() - row.last_used_at.getTime() >= TOUCH_EVERY_MS
            ? Effect.as(touch({ id, now }), principal)
            : Effect.succeed(principal)
        })
      }).pipe(Effect.orDie)
    }

    return {
      create,
      list: (caller: Principal) => Effect.orDie(listOf(caller.userId)),
      revoke,
      /** every key of the user (a password reset or change, [D114]); how many there were */
      revokeAll: (userId: UserId) => Effect.orDie(deleteAllOf(userId)).pipe(Effect.map((rows) => rows.length)),
      verify
    } as const
  }),
  dependencies: [AuditLog.Default, Notifications.Default]
}) {}
