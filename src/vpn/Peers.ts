import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { nextFreeAddress, parseSubnet } from "./Configs.ts"
import type { ServerRow } from "./Servers.ts"

export interface Peer {
  readonly userId: number
  readonly publicKey: string
  /** decrypted only for the owner's download */
  readonly privateKey: string
  readonly address: string
}

/** Every address of the server's subnet is taken: an operator must widen it ([D52]). */
export class SubnetFull extends Data.TaggedError("SubnetFull")<{ readonly serverId: number }> {}

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
export class Peers extends Context.Tag("vpn/Peers")<Peers, {
  readonly ensure: (userId: number, server: ServerRow) => Effect.Effect<Peer, SubnetFull>
  readonly ofServer: (serverId: number) => Effect.Effect<ReadonlyArray<{ readonly userId: number; readonly publicKey: string; readonly address: string }>>
  /** the owner of a peer of this server */
  readonly ownerOf: (serverId: number, publicKey: string) => Effect.Effect<Option.Option<number>>
}>() {
  static readonly Live = Layer.effect(
    Peers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const appKey = yield* AppKey
      const keys = yield* KeyGen
      const clock = yield* AppClock
      interface Row {
        readonly user_id: number
        readonly public_key: string
        readonly private_key_enc: string
        readonly address: string
      }
      const existing = (userId: number, serverId: number) =>
        sql<Row>`
          select user_id, public_key, private_key_enc, host(address) as address from wireguard_peers
          where user_id = ${userId} and server_id = ${serverId}`
      const open = (row: Row): Peer => ({
        userId: row.user_id,
        publicKey: row.public_key,
        privateKey: appKey.decrypt(row.private_key_enc),
        address: row.address
      })

      const attempt = (userId: number, server: ServerRow) =>
        sql.withTransaction(Effect.gen(function*() {
          // one allocation per server at a time (across instances too)
          yield* sql`select id from servers where id = ${server.id} for update`
          const again = yield* existing(userId, server.id)
          if (again[0]) return open(again[0])
          const [current] = yield* sql<{ subnet: string }>`select subnet::text as subnet from servers where id = ${server.id}`
          const subnet = parseSubnet(current?.subnet ?? server.subnet)
          const taken = yield* sql<{ address: string }>`
            select host(address) as address from wireguard_peers where server_id = ${server.id} and family(address) = 4`
          const address = subnet ? nextFreeAddress(subnet, taken.map((t) => t.address)) : undefined
          if (address === undefined) return yield* Effect.fail(new SubnetFull({ serverId: server.id }))
          const pair = yield* keys.x25519
          const now = yield* clock.now
          yield* sql`
            insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address, created_at)
            values (${userId}, ${server.id}, ${pair.publicKey}, ${appKey.encrypt(pair.privateKey)}, ${address}::inet, ${now})`
          return { userId, publicKey: pair.publicKey, privateKey: pair.privateKey, address }
        })).pipe(
          Effect.catchTag("SqlError", (e) => isUniqueViolation(e) ? Effect.fail(new Retry({ cause: e })) : Effect.die(e))
        )

      return {
        // a peer, once made, never changes: read it without a transaction (issue 8: BEGIN and
        // COMMIT were two of the download's round trips); only the first download allocates
        ensure: (userId, server) =>
          existing(userId, server.id).pipe(
            Effect.orDie,
            Effect.flatMap((found) =>
              found[0] ? Effect.succeed(open(found[0])) : attempt(userId, server).pipe(
                Effect.retry({ while: (e) => e._tag === "Retry", schedule: Schedule.recurs(10) }),
                Effect.catchTag("Retry", (e) => Effect.die(e.cause))
              )
            )
          ),
        ofServer: (serverId) =>
          sql<{ user_id: number; public_key: string; address: string }>`
            select user_id, public_key, host(address) as address from wireguard_peers
            where server_id = ${serverId} order by id`.pipe(
            Effect.map((rows) => rows.map((r) => ({ userId: r.user_id, publicKey: r.public_key, address: r.address }))),
            Effect.orDie
          ),
        ownerOf: (serverId, publicKey) =>
          sql<{ user_id: number }>`select user_id from wireguard_peers where server_id = ${serverId} and public_key = ${publicKey}`.pipe(
            Effect.map((rows) => Option.fromNullable(rows[0]?.user_id)),
            Effect.orDie
          )
      }
    })
  )
}
