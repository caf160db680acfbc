import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Contacts } from "../accounts/Contacts.ts"
import { Services as Subscriptions } from "../services/Services.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { periodAt, periodStart } from "./Bandwidth.ts"
import { Device, Devices } from "./Devices.ts"
import { SubscriptionLinks } from "./SubscriptionLinks.ts"
import { type Activity, AdminDevice, DeviceDetail, DeviceSeen, DeviceServer } from "./Domain.ts"
import { DeviceId, ServerId, UserId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { AdminDevice, DeviceDetail, DeviceSeen, DeviceServer }

/**
 * [D107] Devices you can see: each device's last handshake (the newest a node reported for one
 * of its peers), whether it is online (a handshake in the last 180 s) and its bytes in the
 * current quota period ([D95]), in all and per server. The bytes come from `vpn_device_usage`,
 * which migration 23's trigger fills from the same counters reports as the services' usage, in
 * the same transaction: counted exactly once ([D94]).
 */

/** a handshake this recent means the device is online */
export const ONLINE_WITHIN_MS = 180_000

const ServerRow = Schema.Struct({
  device_id: DeviceId,
  server_id: ServerId,
  server_name: Schema.String,
  address: Schema.NullOr(Schema.String),
  last_handshake_at: Schema.NullOr(Schema.DateFromSelf),
  rx_bytes: Schema.NumberFromString,
  tx_bytes: Schema.NumberFromString
})
type ServerRow = typeof ServerRow.Type

/** the largest handshake time accepted (unix seconds, year 9999) */
const MAX_HANDSHAKE = 253_402_300_799

/** [D107]: `latest_handshake` of a counters entry: absent, or unix seconds (0 = never) */
export const handshakeErrors = (payload: ReadonlyArray<unknown>): Record<string, Array<string>> => {
  const errors: Record<string, Array<string>> = {}
  payload.forEach((raw, i) => {
    if (typeof raw !== "object" || raw === null || !("latest_handshake" in raw)) return
    const v = (raw as { readonly latest_handshake: unknown }).latest_handshake
    if (v === undefined || v === null) return
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_HANDSHAKE) {
      errors[`${i}.latest_handshake`] = [`The ${i}.latest_handshake field must be an integer between 0 and ${MAX_HANDSHAKE}.`]
    }
  })
  return errors
}

/** the WireGuard entries of a report that name a handshake */
const handshakesOf = (payload: ReadonlyArray<unknown>) =>
  payload.flatMap((raw) => {
    if (typeof raw !== "object" || raw === null) return []
    const e = raw as { readonly public_key?: unknown; readonly latest_handshake?: unknown }
    return typeof e.public_key === "string" && typeof e.latest_handshake === "number" && e.latest_handshake > 0
      ? [{ key: e.public_key, at: e.latest_handshake }]
      : []
  })

export class DeviceActivity extends Effect.Service<DeviceActivity>()("vpn/DeviceActivity", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const devices = yield* Devices
    const subscriptions = yield* Subscriptions
    const contacts = yield* Contacts
    const links = yield* SubscriptionLinks

    // [D116]: only this server's peers; a handshake never goes back in time. Issue 34: nor past
    // the server's clock: a node's handshake in the future is taken as now, so it cannot keep a
    // device online
    const writeHandshakes = SqlSchema.void({
      Request: Schema.Struct({ serverId: Schema.Int, entries: Schema.String, now: Schema.DateFromSelf }),
      execute: ({ entries, now, serverId }) => sql`
        update wireguard_peers p set last_handshake_at = e.at
        from (
          select r.key, least(to_timestamp(r.at), ${now}::timestamptz) as at
          from jsonb_to_recordset(${entries}::jsonb) as r(key text, at bigint)
        ) e
        where p.server_id = ${serverId} and p.public_key = e.key
          and (p.last_handshake_at is null or p.last_handshake_at < e.at)`
    })
    /** each device's servers: those it has a peer on or bytes on since `since` */
    const serverRows = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.Int, since: Schema.String, deviceId: Schema.NullOr(Schema.Int) }),
      Result: ServerRow,
      execute: ({ deviceId, since, userId }) => sql`
        with mine as (
          select id from vpn_devices where user_id = ${userId} and (${deviceId}::int is null or id = ${deviceId}::int)
        ), used as (
          select u.device_id, u.server_id, sum(u.rx_bytes) as rx, sum(u.tx_bytes) as tx
          from vpn_device_usage u join mine on mine.id = u.device_id
          where u.day >= ${since}::date group by u.device_id, u.server_id
        ), peers as (
          select p.device_id, p.server_id, host(p.address) as address, p.last_handshake_at
          from wireguard_peers p join mine on mine.id = p.device_id
        )
        select coalesce(p.device_id, used.device_id) as device_id, s.id as server_id, s.name as server_name,
               p.address, p.last_handshake_at,
               coalesce(used.rx, 0)::text as rx_bytes, coalesce(used.tx, 0)::text as tx_bytes
        from peers p full join used on used.device_id = p.device_id and used.server_id = p.server_id
        join servers s on s.id = coalesce(p.server_id, used.server_id)
        order by 1, 2`
    })

    /** [D95]: the start of the user's current quota period (a calendar month without a service) */
    const periodSince = (userId: UserId) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const current = yield* subscriptions.current(userId)
        return Option.match(current, {
          onNone: () => periodStart(now),
          onSome: (s) => periodAt({ usageReset: s.plan.usageReset, startsAt: s.startsAt }, now).start
        })
      })

    const seen = (device: Device, rows: ReadonlyArray<ServerRow>, now: Date): Activity => {
      const mine = rows.filter((r) => r.device_id === device.id)
      const newest = mine.reduce<Date | null>(
        (newest, r) => (r.last_handshake_at !== null && (newest === null || r.last_handshake_at > newest) ? r.last_handshake_at : newest),
        null
      )
      // issue 34: never later than now (a value stored before the bound was kept, or another instance's clock)
      const last = newest !== null && newest > now ? now : newest
      return {
        ...device,
        last_handshake_at: last,
        online: last !== null && now.getTime() - last.getTime() <= ONLINE_WITHIN_MS,
        period_bytes: Math.min(
          Number.MAX_SAFE_INTEGER,
          mine.reduce((n, r) => n + r.rx_bytes + r.tx_bytes, 0)
        )
      }
    }

    /** [D107]: a user's devices, oldest first, each with its activity */
    const activities = (userId: UserId) =>
      Effect.gen(function* () {
        const all = yield* devices.list(userId)
        const rows = yield* serverRows({ userId, since: yield* periodSince(userId), deviceId: null }).pipe(Effect.orDie)
        const now = yield* clock.now
        return all.map((d) => seen(d, rows, now))
      })

    /** [D122]: a link for each device (one drawn now for a device that has none yet) */
    const withLinks = (userId: UserId, list: ReadonlyArray<Activity>, deviceId: DeviceId | null = null) =>
      Effect.map(links.urlsOf(userId, deviceId), (urls) =>
        list.flatMap((d): Array<DeviceSeen> => {
          const url = urls.get(d.id)
          return url === undefined ? [] : [{ ...d, subscription_url: url }]
        })
      )

    /** [D107], [D122]: the caller's devices, oldest first, with their activity and links */
    const list = (userId: UserId) => Effect.flatMap(activities(userId), (all) => withLinks(userId, all))

    /** [D107]: one of the user's devices with its servers; 404 for another user's */
    const detail = (userId: UserId, deviceId: DeviceId): Effect.Effect<DeviceDetail, NotFound> =>
      Effect.gen(function* () {
        const device = (yield* devices.list(userId)).find((d) => d.id === deviceId)
        if (device === undefined) return yield* Effect.fail(new NotFound())
        const rows = yield* serverRows({ userId, since: yield* periodSince(userId), deviceId }).pipe(Effect.orDie)
        const now = yield* clock.now
        const [linked] = yield* withLinks(userId, [seen(device, rows, now)], deviceId)
        if (linked === undefined) return yield* Effect.fail(new NotFound())
        return {
          ...linked,
          servers: rows.map((r) => ({
            server_id: r.server_id,
            server_name: r.server_name,
            address: r.address,
            last_handshake_at: r.last_handshake_at,
            rx_bytes: r.rx_bytes,
            tx_bytes: r.tx_bytes
          }))
        }
      })

    return {
      list,
      /** [D107], [D122]: an admin's view of a user's devices with their links' fetches; 404 for an unknown user */
      ofUser: (userId: UserId): Effect.Effect<ReadonlyArray<AdminDevice>, NotFound> =>
        Effect.flatMap(contacts.find(userId), (found) =>
          Option.isNone(found)
            ? Effect.fail(new NotFound())
            : Effect.flatMap(activities(userId), (all) =>
                Effect.map(links.fetchesOf(all.map((d) => d.id)), (fetches) => all.map((d) => ({ ...d, subscription_fetches: fetches.get(d.id) ?? [] })))
              )
        ),
      /** [D122]: the last 50 fetches of the caller's device's link, newest first; 404 for another user's device */
      fetchesOf: (userId: UserId, deviceId: DeviceId) =>
        Effect.flatMap(devices.owned(userId, deviceId), (device) => Effect.map(links.fetchesOf([device.id]), (fetches) => fetches.get(device.id) ?? [])),
      /** [D122]: a new link for the caller's device (the old one ends at once); the device as `detail` shows it */
      rotateLink: (userId: UserId, deviceId: DeviceId) =>
        Effect.flatMap(links.rotate(userId, deviceId), (rotated) => (rotated ? detail(userId, deviceId) : Effect.fail(new NotFound()))),
      detail,
      /** 422 for a `latest_handshake` that is not unix seconds, before the report counts */
      checkHandshakes: (payload: ReadonlyArray<unknown>) => {
        const errors = handshakeErrors(payload)
        return Object.keys(errors).length > 0 ? Effect.fail(new ValidationError({ errors })) : Effect.void
      },
      /** [D107]: the handshakes of a counters report, for this server's peers */
      recordHandshakes: (serverId: ServerId, payload: ReadonlyArray<unknown>) => {
        const entries = handshakesOf(payload)
        return entries.length === 0
          ? Effect.void
          : Effect.flatMap(clock.now, (now) => writeHandshakes({ serverId, entries: JSON.stringify(entries), now })).pipe(Effect.orDie)
      }
    } as const
  }),
  dependencies: [Devices.Default, Subscriptions.Default, Contacts.Default, SubscriptionLinks.Default]
}) {}
