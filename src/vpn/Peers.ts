import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { nextFreeAddress, parseSubnet } from "./Configs.ts"
import { SubnetFull } from "./Errors.ts"
import type { ServerRow } from "./Servers.ts"

/** A WireGuard peer of one user on one server; `private_key_enc` is opened only for its owner. */
const PeerRow = Schema.Struct({
  user_id: Schema.Int,
  public_key: Schema.String,
  private_key_enc: Schema.String,
  address: Schema.String
})
type PeerRow = typeof PeerRow.Type

export interface Peer {
  readonly userId: number
  readonly publicKey: string
  /** decrypted only for the owner's download */
  readonly privateKey: string
  readonly address: string
}

/** [D54]: a peer as its node is told it. */
export const NodePeer = Schema.Struct({
  public_key: Schema.String,
  allowed_ips: Schema.String,
  enabled: Schema.Boolean
})

/** A peer as a node sees it: `held` when its user's VPN access is on hold ([D91]). */
const NodePeerRow = Schema.Struct({
  user_id: Schema.Int,
  public_key: Schema.String,
  address: Schema.String,
  held: Schema.Boolean
})

const isUniqueViolation = (e: unknown): boolean =>
  e instanceof SqlError && typeof e.cause === "object" && e.cause !== null && "code" in e.cause &&
  (e.cause as { code: unknown }).code === "23505"

class Retry extends Data.TaggedError("Retry")<{ readonly cause: SqlError }> {}

/**
 * WireGuard peers of [D52]: made on first download with an X25519 pair and the next free /32
 * of the server's subnet. The server row is locked for the allocation, and the unique indexes
 * on (server_id, address) and (user_id, server_id) back it up (a violation is retried).
 * Private keys are stored only encrypted with APP_KEY.
 */
export class Peers extends Effect.Service<Peers>()("vpn/Peers", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const appKey = yield* AppKey
    const keys = yield* KeyGen
    const clock = yield* AppClock

    const existing = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Int, serverId: Schema.Int }),
      Result: PeerRow,
      execute: ({ serverId, userId }) => sql`
        select user_id, public_key, private_key_enc, host(address) as address from wireguard_peers
        where user_id = ${userId} and server_id = ${serverId}`
    })
    const lockServer = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Schema.Struct({ subnet: Schema.String }),
      execute: (id) => sql`select subnet::text as subnet from servers where id = ${id} for update`
    })
    const takenAddresses = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ address: Schema.String }),
      execute: (serverId) => sql`
        select host(address) as address from wireguard_peers where server_id = ${serverId} and family(address) = 4`
    })
    const insert = SqlSchema.void({
      Request: Schema.Struct({ ...PeerRow.fields, server_id: Schema.Int, created_at: Schema.DateFromSelf }),
      execute: (r) => sql`
        insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address, created_at)
        values (${r.user_id}, ${r.server_id}, ${r.public_key}, ${r.private_key_enc}, ${r.address}::inet, ${r.created_at})`
    })
    const ofServerRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: NodePeerRow,
      execute: (serverId) => sql`
        select p.user_id, p.public_key, host(p.address) as address,
               exists(select 1 from vpn_access_holds h where h.user_id = p.user_id) as held
        from wireguard_peers p where p.server_id = ${serverId} order by p.id`
    })
    const owners = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, publicKeys: Schema.Array(Schema.String) }),
      Result: Schema.Struct({ user_id: Schema.Int, public_key: Schema.String }),
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
    const replaceKeys = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, publicKey: Schema.String, privateKeyEnc: Schema.String }),
      execute: (r) => sql`
        update wireguard_peers set public_key = ${r.publicKey}, private_key_enc = ${r.privateKeyEnc} where id = ${r.id}`
    })

    const open = (row: PeerRow): Peer => ({
      userId: row.user_id,
      publicKey: row.public_key,
      privateKey: appKey.decrypt(row.private_key_enc),
      address: row.address
    })

    const attempt = (userId: number, server: ServerRow) =>
      sql.withTransaction(Effect.gen(function*() {
        // one allocation per server at a time (across instances too)
        const locked = yield* lockServer(server.id)
        const again = yield* existing({ userId, serverId: server.id })
        if (Option.isSome(again)) return open(again.value)
        const subnet = parseSubnet(Option.match(locked, { onNone: () => server.subnet, onSome: (s) => s.subnet }))
        const taken = yield* takenAddresses(server.id)
        const address = subnet ? nextFreeAddress(subnet, taken.map((t) => t.address)) : undefined
        if (address === undefined) return yield* Effect.fail(new SubnetFull())
        const pair = yield* keys.x25519
        yield* insert({
          user_id: userId,
          server_id: server.id,
          public_key: pair.publicKey,
          private_key_enc: appKey.encrypt(pair.privateKey),
          address,
          created_at: yield* clock.now
        })
        return { userId, publicKey: pair.publicKey, privateKey: pair.privateKey, address }
      })).pipe(
        Effect.catchTags({
          SqlError: (e) => isUniqueViolation(e) ? Effect.fail(new Retry({ cause: e })) : Effect.die(e),
          ParseError: Effect.die
        })
      )

    return {
      /** the user's peer on the server, made on first download; read without a transaction once made */
      ensure: (userId: number, server: ServerRow) =>
        existing({ userId, serverId: server.id }).pipe(
          Effect.orDie,
          Effect.flatMap((found) =>
            Option.isSome(found) ? Effect.succeed(open(found.value)) : attempt(userId, server).pipe(
              Effect.retry({ while: (e) => e._tag === "Retry", schedule: Schedule.recurs(10) }),
              Effect.catchTag("Retry", (e) => Effect.die(e.cause))
            )
          )
        ),
      /** the server's peers for its node, each with whether its user's access is on hold */
      ofServer: (serverId: number) =>
        ofServerRows(serverId).pipe(
          Effect.map((rows) =>
            rows.map((r) => ({ userId: r.user_id, publicKey: r.public_key, address: r.address, held: r.held }))
          ),
          Effect.orDie
        ),
      /** the owners of these public keys on this server, by key (unknown ones are absent) */
      ownersOf: (serverId: number, publicKeys: ReadonlyArray<string>) =>
        (publicKeys.length === 0 ? Effect.succeed([]) : owners({ serverId, publicKeys: [...new Set(publicKeys)] })).pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.public_key, r.user_id])) as ReadonlyMap<string, number>),
          Effect.orDie
        ),
      /** [D91]: a new key pair for every peer of the user, addresses kept; the old keys stop working */
      rekeyAll: (userId: number) =>
        sql.withTransaction(Effect.gen(function*() {
          for (const { id } of yield* peerIdsOf(userId)) {
            const pair = yield* keys.x25519
            yield* replaceKeys({ id, publicKey: pair.publicKey, privateKeyEnc: appKey.encrypt(pair.privateKey) })
          }
        })).pipe(Effect.orDie)
    } as const
  })
}) {}
