import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { leanRow } from "../platform/LeanRow.ts"
import { isUniqueViolation } from "../platform/SqlErrors.ts"
import { hostCount, intToIpv4, parseSubnet } from "./Configs.ts"
import { SubnetFull } from "./Errors.ts"
import { ServerRecord, type ServerRow } from "./Servers.ts"
import { NodePeer } from "./Domain.ts"
import { DeviceId, ServerId, ServiceId, UserId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { NodePeer }

/** A WireGuard peer of one user on one server; `private_key_enc` is opened only for its owner. */
const PeerRow = Schema.Struct({
  user_id: UserId,
  public_key: Schema.String,
  private_key_enc: Schema.String,
  address: Schema.String
})
const StoredPeer = Schema.Struct({ ...PeerRow.fields, address6: Schema.NullOr(Schema.String) })
/**
 * issue 27: what a WireGuard download of the spec's route reads of the VPN room in one statement:
 * the server, whether the plan grants it, the service's usage in its period ([D95]), the user's
 * default device and its peer there (the device's and peer's columns null while missing)
 */
const DownloadRow = Schema.Struct({
  ...ServerRecord.fields,
  granted: Schema.Boolean,
  used: Schema.Int,
  device_id: Schema.NullOr(Schema.Int),
  peer_user_id: Schema.NullOr(UserId),
  peer_public_key: Schema.NullOr(Schema.String),
  private_key_enc: Schema.NullOr(Schema.String),
  address: Schema.NullOr(Schema.String),
  address6: Schema.NullOr(Schema.String)
})

/** what `Peers.downloadOf` found: the server, its grant, the period's bytes, the default device's peer */
export interface DownloadView {
  readonly server: ServerRow
  readonly granted: boolean
  readonly usedBytes: number
  readonly peer: Option.Option<Peer>
}

/** The device a peer belongs to ([D90]). */
export interface PeerDevice {
  readonly id: number
  readonly userId: UserId
}

export interface Peer {
  readonly userId: UserId
  readonly publicKey: string
  /** decrypted only for the owner's download */
  readonly privateKey: string
  readonly address: string
  /** [D90]: the same host number in the server's `subnet6`, when it has one */
  readonly address6: string | null
}

/** A peer as a node sees it: `held` when its user's VPN access is on hold ([D91]). */
const NodePeerRow = Schema.Struct({
  user_id: Schema.Int,
  public_key: Schema.String,
  address: Schema.String,
  address6: Schema.NullOr(Schema.String),
  held: Schema.Boolean
})

/** A peer as a node sees it, before its service is looked at. */
export interface ServerPeer {
  readonly userId: UserId
  readonly publicKey: string
  readonly address: string
  /** [D90]: the same host number in the server's `subnet6`, when it has one */
  readonly address6: string | null
  readonly held: boolean
}

class Retry extends Data.TaggedError("Retry")<{ readonly cause: SqlError }> {}

/**
 * WireGuard peers of [D52] and [D90]: made on a device's first download with an X25519 pair and
 * the lowest free /32 of the server's subnet (the lowest released host, else the server's
 * high-water mark: no read of the taken addresses). The server row is locked for the
 * allocation, and the unique indexes on (server_id, address) and (device_id, server_id) back it
 * up (a violation is retried).
 * Private keys are stored only encrypted with APP_KEY.
 */
const serverPeer = (r: typeof NodePeerRow.Type): ServerPeer => ({
  userId: UserId.make(r.user_id),
  publicKey: r.public_key,
  address: r.address,
  address6: r.address6,
  held: r.held
})

export class Peers extends Effect.Service<Peers>()("vpn/Peers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /** [D90]: the peer's host number in the server's IPv6 subnet, when it has one and the number fits */
    const address6 = sql`
      case when s.subnet6 is not null and p.host is not null and p.host < 2 ^ (128 - masklen(s.subnet6)) - 1
           then host(network(s.subnet6) + p.host) end`
    const appKey = yield* AppKey
    const keys = yield* KeyGen
    const clock = yield* AppClock

    const existing = SqlSchema.findOne({
      Request: Schema.Struct({ deviceId: Schema.Int, serverId: Schema.Int }),
      Result: StoredPeer,
      execute: ({ deviceId, serverId }) => sql`
        select p.user_id, p.public_key, p.private_key_enc, host(p.address) as address, ${address6} as address6
        from wireguard_peers p join servers s on s.id = p.server_id
        where p.device_id = ${deviceId} and p.server_id = ${serverId}`
    })
    /**
     * issue 27: one statement for the download's VPN reads (the same rows as `Servers.findGranted`,
     * `Usage.currentTotals`, `Devices.defaultOf` and `ensure` read one by one): the device's and peer's columns
     * are null while missing, the usage 0 without a row
     */
    const downloadRow = SqlSchema.findOne({
      Request: Schema.Struct({ serverId: Schema.Int, planId: Schema.Int, serviceId: Schema.Int, period: Schema.String, userId: Schema.Int }),
      Result: DownloadRow,
      execute: (q) => sql`
        select s.id, s.name, s.country, s.city, s.protocol, s.ip, s.port, s.transport, s.public_key,
               s.subnet::text as subnet, s.subnet6::text as subnet6, s.dns, s.ca_cert, s.status,
               exists(select 1 from server_plans sp where sp.server_id = s.id and sp.plan_id = ${q.planId}) as granted,
               coalesce((select least(u.rx_bytes::numeric + u.tx_bytes, 9007199254740991)::int8 from usage_records u
                         where u.service_id = ${q.serviceId} and u.period = ${q.period}::date limit 1), 0) as used,
               d.id as device_id, p.user_id as peer_user_id, p.public_key as peer_public_key, p.private_key_enc,
               host(p.address) as address, ${address6} as address6
        from servers s
        left join lateral (select id from vpn_devices where user_id = ${q.userId} order by created_at, id limit 1) d on true
        left join wireguard_peers p on p.device_id = d.id and p.server_id = s.id
        where s.id = ${q.serverId}`
    })
    const lockServer = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Schema.Struct({ subnet: Schema.String, next_host: Schema.NumberFromString }),
      execute: (id) => sql`select subnet::text as subnet, next_host::text as next_host from servers where id = ${id} for update`
    })
    /** the lowest host released below the mark, taken */
    const takeReleased = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Schema.Struct({ host: Schema.NumberFromString }),
      execute: (serverId) => sql`
        delete from vpn_free_hosts
        where server_id = ${serverId} and host = (select min(host) from vpn_free_hosts where server_id = ${serverId})
        returning host::text as host`
    })
    const raiseMark = SqlSchema.void({
      Request: Schema.Struct({ serverId: Schema.Int, next: Schema.Number }),
      execute: ({ next, serverId }) => sql`update servers set next_host = ${next} where id = ${serverId}`
    })
    const insert = SqlSchema.void({
      Request: Schema.Struct({ ...PeerRow.fields, device_id: Schema.Int, server_id: Schema.Int, host: Schema.Number, created_at: Schema.DateFromSelf }),
      execute: (r) => sql`
        insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address, host, created_at)
        values (${r.user_id}, ${r.device_id}, ${r.server_id}, ${r.public_key}, ${r.private_key_enc}, ${r.address}::inet,
                ${r.host}, ${r.created_at})`
    })
    const nodeColumns = sql`
      p.user_id, p.public_key, host(p.address) as address, ${address6} as address6,
      exists(select 1 from vpn_access_holds h where h.user_id = p.user_id) as held`
    const ofServerRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: NodePeerRow,
      execute: (serverId) => sql`
        select ${nodeColumns}
        from wireguard_peers p join servers s on s.id = p.server_id where p.server_id = ${serverId} order by p.id`
    })
    /** issue 27: one page of the server's peers in key order, after the peer `after` (keyset) */
    const pageOfServerRows = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, after: Schema.Int, limit: Schema.Int }),
      // thousands of rows a page: checked lean, the fields of `NodePeerRow` and the key
      Result: leanRow("NodePageRow", { id: "int", user_id: "int", public_key: "string", address: "string", address6: "string?", held: "boolean" }),
      execute: ({ after, limit, serverId }) => sql`
        select p.id, ${nodeColumns}
        from wireguard_peers p join servers s on s.id = p.server_id
        where p.server_id = ${serverId} and p.id > ${after} order by p.id limit ${limit}`
    })
    /** [D92]: the server's peers among these keys or of these users (both as JSON arrays) */
    const someOfServerRows = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, keys: Schema.String, users: Schema.String }),
      Result: NodePeerRow,
      execute: ({ keys, serverId, users }) => sql`
        select ${nodeColumns}
        from wireguard_peers p join servers s on s.id = p.server_id
        where p.server_id = ${serverId}
          and (p.public_key in (select jsonb_array_elements_text(${keys}::jsonb))
               or p.user_id in (select (jsonb_array_elements_text(${users}::jsonb))::int))
        order by p.id`
    })
    const owners = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, publicKeys: Schema.Array(Schema.String) }),
      Result: Schema.Struct({ user_id: UserId, public_key: Schema.String }),
      // one probe of the public_key index per key (a node's report names thousands: an `in` list
      // of that size is planned as a scan of the table)
      execute: ({ publicKeys, serverId }) => sql`
        select p.user_id, p.public_key from jsonb_array_elements_text(${JSON.stringify(publicKeys)}::jsonb) as k (key)
        cross join lateral (
          select user_id, public_key from wireguard_peers where public_key = k.key and server_id = ${serverId} limit 1
        ) p`
    })
    const peerIdsOf = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (userId) => sql`select id from wireguard_peers where user_id = ${userId} order by id for update`
    })
    const peerIdsOfDevice = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (deviceId) => sql`select id from wireguard_peers where device_id = ${deviceId} order by id for update`
    })
    const replaceKeys = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, publicKey: Schema.String, privateKeyEnc: Schema.String }),
      execute: (r) => sql`
        update wireguard_peers set public_key = ${r.publicKey}, private_key_enc = ${r.privateKeyEnc} where id = ${r.id}`
    })

    const open = (row: typeof StoredPeer.Type): Peer => ({
      userId: row.user_id,
      publicKey: row.public_key,
      privateKey: appKey.decrypt(row.private_key_enc),
      address: row.address,
      address6: row.address6
    })

    const rekey = (ids: ReadonlyArray<{ readonly id: number }>) =>
      Effect.forEach(
        ids,
        ({ id }) => Effect.flatMap(keys.x25519, (pair) => replaceKeys({ id, publicKey: pair.publicKey, privateKeyEnc: appKey.encrypt(pair.privateKey) })),
        { discard: true }
      )

    const attempt = (device: PeerDevice, server: ServerRow) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            // one allocation per server at a time (across instances too)
            const locked = yield* lockServer(server.id)
            const again = yield* existing({ deviceId: device.id, serverId: server.id })
            if (Option.isSome(again)) return open(again.value)
            if (Option.isNone(locked)) return yield* Effect.fail(new SubnetFull())
            const subnet = parseSubnet(locked.value.subnet)
            if (subnet === undefined) return yield* Effect.fail(new SubnetFull())
            // [D90]: the lowest released host, else the high-water mark: the same cost at any number of peers
            const released = yield* takeReleased(server.id)
            const host = Option.match(released, { onNone: () => locked.value.next_host, onSome: (r) => r.host })
            if (host < 2 || host >= hostCount(subnet) - 1) return yield* Effect.fail(new SubnetFull())
            if (Option.isNone(released)) yield* raiseMark({ serverId: server.id, next: host + 1 })
            const address = intToIpv4(subnet.network + host)
            const pair = yield* keys.x25519
            yield* insert({
              user_id: device.userId,
              device_id: device.id,
              server_id: server.id,
              public_key: pair.publicKey,
              private_key_enc: appKey.encrypt(pair.privateKey),
              address,
              host,
              created_at: yield* clock.now
            })
            return open(Option.getOrThrow(yield* existing({ deviceId: device.id, serverId: server.id })))
          })
        )
        .pipe(
          Effect.catchTags({
            SqlError: (e) => (isUniqueViolation(e) ? Effect.fail(new Retry({ cause: e })) : Effect.die(e)),
            ParseError: Effect.die
          })
        )

    return {
      /** the device's peer on the server, made on first download; read without a transaction once made */
      ensure: (device: PeerDevice, server: ServerRow) =>
        existing({ deviceId: device.id, serverId: server.id }).pipe(
          Effect.orDie,
          Effect.flatMap((found) =>
            Option.isSome(found)
              ? Effect.succeed(open(found.value))
              : attempt(device, server).pipe(
                  Effect.retry({ while: (e) => e._tag === "Retry", schedule: Schedule.recurs(10) }),
                  Effect.catchTag("Retry", (e) => Effect.die(e.cause))
                )
          )
        ),
      /**
       * issue 27: the spec's download in one read of this room: the server (none: unknown), its
       * grant to `planId`, the service's bytes in the period starting `period` ([D95]) and the
       * default device's peer there (none: the long way, `Devices.defaultOf` then `ensure`)
       */
      downloadOf: (q: {
        readonly serverId: ServerId
        readonly planId: number
        readonly serviceId: ServiceId
        readonly period: string
        readonly userId: UserId
      }) =>
        downloadRow(q).pipe(
          Effect.map(
            Option.map((r): DownloadView => {
              const { address, address6, device_id: _, granted, peer_public_key, peer_user_id, private_key_enc, used, ...server } = r
              return {
                server,
                granted,
                usedBytes: used,
                peer:
                  peer_user_id === null || peer_public_key === null || private_key_enc === null || address === null
                    ? Option.none()
                    : Option.some(open({ user_id: peer_user_id, public_key: peer_public_key, private_key_enc, address, address6 }))
              }
            })
          ),
          Effect.orDie
        ),
      /** the server's peers for its node, each with whether its user's access is on hold (one query) */
      ofServer: (serverId: ServerId) =>
        ofServerRows(serverId).pipe(
          Effect.map((rows) => rows.map(serverPeer)),
          Effect.orDie
        ),
      /**
       * issue 27: at most `limit` of the server's peers after the peer id `after`, in the order of
       * `ofServer`, with the id to continue after (one query)
       */
      pageOfServer: (serverId: ServerId, after: number, limit: number) =>
        pageOfServerRows({ serverId, after, limit }).pipe(
          Effect.map((rows) => ({ peers: rows.map(serverPeer), last: rows.length === 0 ? after : rows[rows.length - 1]!.id })),
          Effect.orDie
        ),
      /** [D92]: the server's peers with one of these keys or of one of these users (one query) */
      someOfServer: (serverId: ServerId, keys: ReadonlyArray<string>, userIds: ReadonlyArray<number>) =>
        (keys.length === 0 && userIds.length === 0
          ? Effect.succeed([])
          : someOfServerRows({ serverId, keys: JSON.stringify(keys), users: JSON.stringify(userIds) })
        ).pipe(
          Effect.map((rows) => rows.map(serverPeer)),
          Effect.orDie
        ),
      /** the owners of these public keys on this server, by key (unknown ones are absent) */
      ownersOf: (serverId: ServerId, publicKeys: ReadonlyArray<string>) =>
        (publicKeys.length === 0 ? Effect.succeed([]) : owners({ serverId, publicKeys: [...new Set(publicKeys)] })).pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.public_key, r.user_id])) as ReadonlyMap<string, number>),
          Effect.orDie
        ),
      /** [D91]: a new key pair for every peer of the user, addresses kept; the old keys stop working */
      rekeyAll: (userId: UserId) => sql.withTransaction(Effect.flatMap(peerIdsOf(userId), rekey)).pipe(Effect.orDie),
      /** [D90]: a new key pair for every peer of the device, addresses kept */
      rekeyDevice: (deviceId: DeviceId) => sql.withTransaction(Effect.flatMap(peerIdsOfDevice(deviceId), rekey)).pipe(Effect.orDie)
    } as const
  })
}) {}
