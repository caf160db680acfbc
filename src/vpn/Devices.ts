import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DomainEvents } from "../events/DomainEvents.ts"
import { Services as Subscriptions } from "../services/Services.ts"
import { AppClock } from "../platform/Clock.ts"
import { BusinessRuleViolation, NotFound } from "../platform/Errors.ts"
import { Credentials, VpnCredentials } from "./Credentials.ts"
import { Peers } from "./Peers.ts"
import { SubscriptionLinks } from "./SubscriptionLinks.ts"
import { Device, DeviceWithCredentials, Platform, PLATFORMS } from "./Domain.ts"
import { DeviceId, UserId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { Device, DeviceWithCredentials, Platform, PLATFORMS }

const DeviceRow = Schema.Struct({
  id: DeviceId,
  user_id: UserId,
  name: Schema.String,
  platform: Platform,
  created_at: Schema.DateFromSelf
})
type DeviceRow = typeof DeviceRow.Type

export const DEVICE_LIMIT_REACHED = "Device limit reached."
/** the key space of this room's per-user device lock (the same as the migration's `vpn_default_device`) */
const DEVICE_LOCK_SPACE = 4_080_090

const Owned = Schema.Struct({ userId: Schema.Int, id: Schema.Int })

/**
 * The devices of [D90]: each holds its own WireGuard peers (one per server) and its own OpenVPN
 * credentials. Creation is counted against the current service's plan under a per-user
 * transaction lock, so concurrent creations (on any instance) never pass the limit.
 */
export class Devices extends Effect.Service<Devices>()("vpn/Devices", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const domainEvents = yield* DomainEvents
    const subscriptions = yield* Subscriptions
    const credentials = yield* Credentials
    const peers = yield* Peers
    const links = yield* SubscriptionLinks
    const columns = sql`id, user_id, name, platform, created_at`

    const listRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: DeviceRow,
      execute: (userId) => sql`select ${columns} from vpn_devices where user_id = ${userId} order by created_at, id`
    })
    const oldest = SqlSchema.findOne({
      Request: Schema.Int,
      Result: DeviceRow,
      execute: (userId) => sql`select ${columns} from vpn_devices where user_id = ${userId} order by created_at, id limit 1`
    })
    const ownedRow = SqlSchema.findOne({
      Request: Owned,
      Result: DeviceRow,
      execute: ({ id, userId }) => sql`select ${columns} from vpn_devices where id = ${id} and user_id = ${userId}`
    })
    const countOf = SqlSchema.single({
      Request: Schema.Int,
      Result: Schema.Struct({ n: Schema.Int }),
      execute: (userId) => sql`select count(*)::int as n from vpn_devices where user_id = ${userId}`
    })
    const insertRow = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Int, name: Schema.String, platform: Platform, now: Schema.DateFromSelf }),
      Result: DeviceRow,
      execute: (r) => sql`
        insert into vpn_devices (user_id, name, platform, created_at) values (${r.userId}, ${r.name}, ${r.platform}, ${r.now})
        returning ${columns}`
    })
    const renameRow = SqlSchema.findOne({
      Request: Schema.Struct({ ...Owned.fields, name: Schema.String }),
      Result: DeviceRow,
      execute: ({ id, name, userId }) => sql`
        update vpn_devices set name = ${name} where id = ${id} and user_id = ${userId} returning ${columns}`
    })
    const deleteRow = SqlSchema.findOne({
      Request: Owned,
      Result: Schema.Struct({ id: Schema.Int }),
      execute: ({ id, userId }) => sql`delete from vpn_devices where id = ${id} and user_id = ${userId} returning id`
    })

    const lockUser = (userId: UserId) => sql`select pg_advisory_xact_lock(${DEVICE_LOCK_SPACE}, ${userId})`.pipe(Effect.asVoid)

    const show = (row: DeviceRow): Device => ({ id: row.id, name: row.name, platform: row.platform, created_at: row.created_at })
    const withCredentials = (row: DeviceRow, c: VpnCredentials): DeviceWithCredentials => ({
      ...show(row),
      openvpn: { username: c.username, password: c.password }
    })

    const owned = (userId: UserId, id: number) =>
      ownedRow({ userId, id }).pipe(
        Effect.orDie,
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(new NotFound()),
            onSome: Effect.succeed
          })
        )
      )

    /** 422 `Device limit reached.` beyond the current service's plan limit, or without a current service */
    const create = (userId: UserId, input: { readonly name: string; readonly platform: Platform }) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            yield* lockUser(userId)
            const current = yield* subscriptions.current(userId)
            if (Option.isNone(current)) return yield* Effect.fail(new BusinessRuleViolation({ message: DEVICE_LIMIT_REACHED }))
            const limit = current.value.plan.deviceLimit
            if (limit > 0 && (yield* countOf(userId)).n >= limit) {
              return yield* Effect.fail(new BusinessRuleViolation({ message: DEVICE_LIMIT_REACHED }))
            }
            const row = yield* insertRow({ userId, name: input.name, platform: input.platform, now: yield* clock.now })
            // [D101]: in the device's transaction
            yield* domainEvents.emit({ type: "device.created", data: { ...show(row), created_at: row.created_at.toISOString(), user_id: userId } })
            return withCredentials(row, yield* credentials.ofDevice({ userId, deviceId: row.id }))
          })
        )
        .pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die, NoSuchElementException: Effect.die }), Effect.tap(domainEvents.wake))

    /**
     * The default device of clients that know no devices: the oldest, made as `Default` (platform
     * `other`) when the user has none. It counts toward the limit, but is made whatever the limit.
     */
    const defaultOf = (userId: UserId) =>
      oldest(userId).pipe(
        Effect.flatMap(
          Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              sql.withTransaction(
                Effect.gen(function* () {
                  yield* lockUser(userId)
                  const again = yield* oldest(userId)
                  if (Option.isSome(again)) return again.value
                  return yield* insertRow({ userId, name: "Default", platform: "other", now: yield* clock.now })
                })
              )
          })
        ),
        Effect.orDie
      )

    /**
     * [D90]: new OpenVPN credentials and new WireGuard key pairs (addresses kept); the old ones
     * stop working at once, and so does the device's subscription link ([D122])
     */
    const rotateRow = (row: DeviceRow) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            yield* peers.rekeyDevice(row.id)
            yield* links.endDevice(row.id, row.user_id)
            return withCredentials(row, yield* credentials.renew({ userId: row.user_id, deviceId: row.id }))
          })
        )
        .pipe(Effect.orDie)

    return {
      list: (userId: UserId) =>
        listRows(userId).pipe(
          Effect.map((rows) => rows.map(show)),
          Effect.orDie
        ),
      create,
      /** the caller's device, 404 for another user's ([D11]) */
      owned,
      rename: (userId: UserId, id: number, name: string) =>
        renameRow({ userId, id, name }).pipe(
          Effect.orDie,
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.fail(new NotFound()),
              onSome: (row) => Effect.succeed(show(row))
            })
          )
        ),
      /** its peers and credentials go with it (cascade): off every node at once */
      remove: (userId: UserId, id: number) =>
        sql
          .withTransaction(
            Effect.flatMap(
              deleteRow({ userId, id }),
              Option.match({
                onNone: () => Effect.succeed(false),
                // [D101]: in the deletion's transaction
                onSome: () => Effect.as(domainEvents.emit({ type: "device.deleted", data: { id, user_id: userId } }), true)
              })
            )
          )
          .pipe(
            Effect.orDie,
            Effect.flatMap((deleted) => (deleted ? domainEvents.wake : Effect.fail(new NotFound())))
          ),
      rotate: (userId: UserId, id: number) => Effect.flatMap(owned(userId, id), rotateRow),
      defaultOf,
      /** [D53] on the default device: its credentials, and their rotation */
      defaultCredentials: (userId: UserId) => Effect.flatMap(defaultOf(userId), (row) => credentials.ofDevice({ userId, deviceId: row.id })),
      rotateDefaultCredentials: (userId: UserId) => Effect.flatMap(defaultOf(userId), (row) => credentials.renew({ userId, deviceId: row.id }))
    } as const
  }),
  dependencies: [Subscriptions.Default, Credentials.Default, Peers.Default, SubscriptionLinks.Default]
}) {}
