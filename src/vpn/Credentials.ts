import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppKey, constantTimeEqual, randomToken, sha256Hex } from "../platform/Crypto.ts"
import { VpnCredentials } from "./Domain.ts"
import { UserId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { VpnCredentials }

/** A row of `vpn_credentials` (one per device, [D90]): the secret stored encrypted (to show it) and hashed (to check it). */
const CredentialRow = Schema.Struct({
  user_id: UserId,
  device_id: Schema.Int,
  username: Schema.String,
  secret_enc: Schema.String,
  secret_hash: Schema.String,
  rotated_at: Schema.DateFromSelf
})
type CredentialRow = typeof CredentialRow.Type

const Owner = Schema.Struct({ user_id: UserId, username: Schema.String })
const DeviceOf = Schema.Struct({ userId: UserId, deviceId: Schema.Int })

/**
 * OpenVPN credentials of [D53], one pair per device ([D90]): a stable username and a generated
 * secret, stored encrypted with APP_KEY (to show it again) and as a SHA-256 (to check it).
 * Renewal replaces the secret; the old one stops working at once.
 */
export class Credentials extends Effect.Service<Credentials>()("vpn/Credentials", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const appKey = yield* AppKey
    const clock = yield* AppClock
    const columns = sql`user_id, device_id, username, secret_enc, secret_hash, rotated_at`

    const byDevice = SqlSchema.findOne({
      Request: Schema.Int,
      Result: CredentialRow,
      execute: (deviceId) => sql`select ${columns} from vpn_credentials where device_id = ${deviceId}`
    })
    /** the row of a username, and whether its user's access is on hold ([D91]) */
    const byUsername = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ ...CredentialRow.fields, held: Schema.Boolean }),
      execute: (username) => sql`
        select ${columns}, exists(select 1 from vpn_access_holds h where h.user_id = c.user_id) as held
        from vpn_credentials c where username = ${username}`
    })
    const owners = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Owner,
      // one probe of the username index per name, however many a node's report names
      execute: (usernames) => sql`
        select c.user_id, c.username from jsonb_array_elements_text(${JSON.stringify(usernames)}::jsonb) as n (name)
        cross join lateral (select user_id, username from vpn_credentials where username = n.name limit 1) c`
    })
    const devicesOf = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ device_id: Schema.Int }),
      execute: (userId) => sql`select device_id from vpn_credentials where user_id = ${userId} order by device_id for update`
    })
    const insert = SqlSchema.void({
      Request: CredentialRow,
      execute: (r) => sql`
        insert into vpn_credentials (user_id, device_id, username, secret_enc, secret_hash, rotated_at)
        values (${r.user_id}, ${r.device_id}, ${r.username}, ${r.secret_enc}, ${r.secret_hash}, ${r.rotated_at})
        on conflict (device_id) do nothing`
    })
    const replaceSecret = SqlSchema.findOne({
      Request: Schema.Struct({ deviceId: Schema.Int, secretEnc: Schema.String, secretHash: Schema.String, now: Schema.DateFromSelf }),
      Result: CredentialRow,
      execute: (r) => sql`
        update vpn_credentials set secret_enc = ${r.secretEnc}, secret_hash = ${r.secretHash}, rotated_at = ${r.now}
        where device_id = ${r.deviceId}
        returning ${columns}`
    })

    const open = (row: CredentialRow): VpnCredentials => {
      const secret = appKey.decrypt(row.secret_enc)
      return { username: row.username, password: secret, secret, rotated_at: row.rotated_at }
    }

    /** the device's credentials, made on first use */
    const ofDevice = (device: typeof DeviceOf.Type) =>
      Effect.gen(function* () {
        const found = yield* byDevice(device.deviceId)
        if (Option.isSome(found)) return open(found.value)
        const secret = randomToken(32)
        yield* insert({
          user_id: device.userId,
          device_id: device.deviceId,
          username: `u${device.userId}-${randomToken(8).toLowerCase()}`,
          secret_enc: appKey.encrypt(secret),
          secret_hash: sha256Hex(secret),
          rotated_at: yield* clock.now
        })
        // another request may have made them first: theirs stand
        return open(Option.getOrThrow(yield* byDevice(device.deviceId)))
      }).pipe(Effect.orDie)

    /** a new secret for the device's credentials (made first when it has none); the old one stops working */
    const renew = (device: typeof DeviceOf.Type) =>
      Effect.gen(function* () {
        yield* ofDevice(device)
        const secret = randomToken(32)
        const row = yield* replaceSecret({
          deviceId: device.deviceId,
          secretEnc: appKey.encrypt(secret),
          secretHash: sha256Hex(secret),
          now: yield* clock.now
        })
        return open(Option.getOrThrow(row))
      }).pipe(Effect.orDie)

    return {
      ofDevice,
      renew,
      /** [D91]: a new secret for every device of the user that has credentials */
      renewAllOf: (userId: UserId) =>
        Effect.gen(function* () {
          for (const { device_id } of yield* devicesOf(userId)) yield* renew({ userId, deviceId: device_id })
        }).pipe(Effect.orDie),
      /** the user whose username and secret these are, unless their VPN access is on hold ([D91]) */
      verify: (username: string, secret: string) =>
        byUsername(username).pipe(
          Effect.map(Option.filter((row) => !row.held && constantTimeEqual(row.secret_hash, sha256Hex(secret)))),
          Effect.map(Option.map((row) => row.user_id)),
          Effect.orDie
        ),
      /** the owners of these usernames, by username (unknown ones are absent) */
      usersOf: (usernames: ReadonlyArray<string>) =>
        (usernames.length === 0 ? Effect.succeed([]) : owners([...new Set(usernames)])).pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.username, r.user_id])) as ReadonlyMap<string, number>),
          Effect.orDie
        )
    } as const
  })
}) {}
