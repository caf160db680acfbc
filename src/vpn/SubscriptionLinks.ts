import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppConfig } from "../platform/Config.ts"
import { AppKey, randomToken, sha256Hex } from "../platform/Crypto.ts"

/**
 * [D122] One link per device: `$PUBLIC_URL/s/<token>`. The token is never stored: each device
 * has a random seed, the token is the HMAC-SHA256 of it under APP_KEY (43 URL-safe characters,
 * base64url of 32 bytes), so the link can be shown again, and only its SHA-256 is kept, to find
 * the device a request names. A rotation (of the link, of the device, or of every device by
 * [D91]) clears both: the old link stops at once on every instance (each request looks the hash
 * up; nothing is cached), and the next showing draws a new seed. Each device also keeps the log
 * of its last 50 answered fetches.
 */

/** the path of the links, outside `/v1` */
export const LINK_PREFIX = "/s/"
/** the fetches each device keeps (and each read answers) */
export const MAX_FETCHES = 50

/** [D122]: a token as this server writes them; anything else is not looked up */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,128}$/

/** [D122]: one answered fetch of a device's link */
// the schema the contract shows lives in `Domain.ts` (issue 34)
import { SubscriptionFetch } from "./Domain.ts"
import { DeviceId, UserId } from "../platform/Ids.ts"
export { SubscriptionFetch }

/** the device a link names, its owner, and whether the owner's VPN access is on hold ([D91]) */
export interface LinkedDevice {
  readonly deviceId: DeviceId
  readonly userId: UserId
  readonly name: string
  /** the key of the link's own rate limit: the hash, so a new link starts afresh */
  readonly hash: string
  readonly held: boolean
  /** the link itself, for the QR code */
  readonly url: string
}

const SeedRow = Schema.Struct({ id: Schema.Int, subscription_seed: Schema.NullOr(Schema.String) })
const FetchRow = Schema.Struct({
  device_id: Schema.Int,
  at: Schema.DateFromSelf,
  address: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
})

export class SubscriptionLinks extends Effect.Service<SubscriptionLinks>()("vpn/SubscriptionLinks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const appKey = yield* AppKey
    const config = yield* AppConfig

    const tokenOf = (seed: string) => Buffer.from(appKey.sign(`subscription-link:${seed}`), "hex").toString("base64url")
    const urlOf = (seed: string) => `${config.publicUrl}${LINK_PREFIX}${tokenOf(seed)}`

    const seedRows = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.Int, deviceId: Schema.NullOr(Schema.Int) }),
      Result: SeedRow,
      execute: ({ deviceId, userId }) => sql`
        select id, subscription_seed from vpn_devices
        where user_id = ${userId} and (${deviceId}::int is null or id = ${deviceId}::int)`
    })
    /** a first seed for a device without one; none when another request gave it one meanwhile */
    const firstSeed = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Int, seed: Schema.String, hash: Schema.String }),
      Result: SeedRow,
      execute: ({ hash, id, seed }) => sql`
        update vpn_devices set subscription_seed = ${seed}, subscription_hash = ${hash}
        where id = ${id} and subscription_seed is null
        returning id, subscription_seed`
    })
    const seedOf = SqlSchema.findOne({
      Request: Schema.Int,
      Result: SeedRow,
      execute: (id) => sql`select id, subscription_seed from vpn_devices where id = ${id}`
    })
    const clearOne = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Int, deviceId: Schema.Int }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: ({ deviceId, userId }) => sql`
        update vpn_devices set subscription_seed = null, subscription_hash = null
        where id = ${deviceId} and user_id = ${userId} returning id`
    })
    const clearAll = SqlSchema.void({
      Request: Schema.Int,
      execute: (userId) => sql`
        update vpn_devices set subscription_seed = null, subscription_hash = null
        where user_id = ${userId} and subscription_seed is not null`
    })
    const byHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: DeviceId, user_id: UserId, name: Schema.String, subscription_seed: Schema.String, held: Schema.Boolean }),
      execute: (hash) => sql`
        select d.id, d.user_id, d.name, d.subscription_seed,
               exists(select 1 from vpn_access_holds h where h.user_id = d.user_id) as held
        from vpn_devices d where d.subscription_hash = ${hash}`
    })
    const insertFetch = SqlSchema.void({
      Request: Schema.Struct({
        deviceId: Schema.Int,
        at: Schema.DateFromSelf,
        address: Schema.NullOr(Schema.String),
        userAgent: Schema.NullOr(Schema.String)
      }),
      execute: (f) => sql`
        insert into vpn_subscription_fetches (device_id, at, address, user_agent)
        values (${f.deviceId}, ${f.at}, ${f.address}, ${f.userAgent})`
    })
    const trimFetches = SqlSchema.void({
      Request: Schema.Int,
      execute: (deviceId) => sql`
        delete from vpn_subscription_fetches where id in (
          select id from vpn_subscription_fetches where device_id = ${deviceId}
          order by at desc, id desc offset ${MAX_FETCHES}
        )`
    })
    const fetchRows = SqlSchema.findAll({
      Request: Schema.Array(Schema.Int),
      Result: FetchRow,
      execute: (ids) => sql`
        select device_id, at, address, user_agent from vpn_subscription_fetches
        where device_id in ${sql.in(ids)}
        order by device_id, at desc, id desc`
    })

    /** the device's seed, drawn now if it has none (the first showing of its link) */
    const ensureSeed = (row: typeof SeedRow.Type): Effect.Effect<string> => {
      if (row.subscription_seed !== null) return Effect.succeed(row.subscription_seed)
      const seed = randomToken(32)
      return firstSeed({ id: row.id, seed, hash: sha256Hex(tokenOf(seed)) }).pipe(
        Effect.flatMap(
          Option.match({
            onSome: (r) => Effect.succeed(r.subscription_seed ?? seed),
            // another request gave the device its seed first: that one holds
            onNone: () => Effect.map(seedOf(row.id), (again) => Option.getOrThrow(again).subscription_seed ?? seed)
          })
        ),
        Effect.orDie
      )
    }

    /** [D122]: the links of the user's devices (of one device with `deviceId`), by device id */
    const urlsOf = (userId: UserId, deviceId: DeviceId | null = null): Effect.Effect<ReadonlyMap<number, string>> =>
      seedRows({ userId, deviceId }).pipe(
        Effect.orDie,
        Effect.flatMap((rows) => Effect.forEach(rows, (row) => Effect.map(ensureSeed(row), (seed) => [row.id, urlOf(seed)] as const))),
        Effect.map((entries) => new Map(entries))
      )

    return {
      urlsOf,
      /** [D122]: the device a link names, none for an unknown, malformed or rotated token */
      find: (token: string): Effect.Effect<Option.Option<LinkedDevice>> =>
        !TOKEN_PATTERN.test(token)
          ? Effect.succeed(Option.none())
          : byHash(sha256Hex(token)).pipe(
              Effect.map(
                Option.map(
                  (r): LinkedDevice => ({
                    deviceId: r.id,
                    userId: r.user_id,
                    name: r.name,
                    hash: sha256Hex(token),
                    held: r.held,
                    url: urlOf(r.subscription_seed)
                  })
                )
              ),
              Effect.orDie
            ),
      /** [D122]: the device's link ends at once; false when the device is not the user's */
      rotate: (userId: UserId, deviceId: DeviceId) => clearOne({ userId, deviceId }).pipe(Effect.map(Option.isSome), Effect.orDie),
      /** [D90], [D91]: a rotated device's link ends with its keys (runs in the caller's transaction) */
      endDevice: (deviceId: DeviceId, userId: UserId) => clearOne({ userId, deviceId }).pipe(Effect.asVoid, Effect.orDie),
      /** [D91]: every link of the user ends (runs in the caller's transaction) */
      endAll: (userId: UserId) => clearAll(userId).pipe(Effect.orDie),
      /** [D122]: an answered fetch, in the device's log of its last 50 */
      record: (fetch: { readonly deviceId: DeviceId; readonly at: Date; readonly address: string | null; readonly userAgent: string | null }) =>
        insertFetch(fetch).pipe(Effect.zipRight(trimFetches(fetch.deviceId)), Effect.orDie),
      /** [D122]: the last 50 fetches of each device, newest first, by device id */
      fetchesOf: (deviceIds: ReadonlyArray<number>): Effect.Effect<ReadonlyMap<number, ReadonlyArray<SubscriptionFetch>>> =>
        (deviceIds.length === 0 ? Effect.succeed([]) : fetchRows(deviceIds)).pipe(
          Effect.map((rows) => {
            const byDevice = new Map<number, Array<SubscriptionFetch>>()
            for (const r of rows) {
              const list = byDevice.get(r.device_id) ?? []
              if (list.length < MAX_FETCHES) list.push({ at: r.at, address: r.address, user_agent: r.user_agent })
              byDevice.set(r.device_id, list)
            }
            return byDevice as ReadonlyMap<number, ReadonlyArray<SubscriptionFetch>>
          }),
          Effect.orDie
        )
    } as const
  })
}) {}
