import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { isConnectionLoss } from "./SqlErrors.ts"
import * as PgClient from "@effect/sql-pg/PgClient"
import { reconnecting, wasConnectionLoss, hadNoEffect } from "./Reconnect.ts"
import { registerFastPath } from "./SqlFastPath.ts"
import { type BunResult, convertAny, toParams } from "./BunSqlValues.ts"
import { countQueryError, registerPool } from "./DatabaseFigures.ts"
import { SQL } from "bun"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/**
 * An `@effect/sql` client over Bun's native PostgreSQL driver, `Bun.SQL` (issue 8): the `pg`
 * driver over Bun's `node:net` layer was the largest cost of a request. Same SQL dialect as
 * `@effect/sql-pg` (its compiler), and the same contract for what goes in and comes out as the
 * `pg` client of `Database.ts`:
 *
 * - parameters travel as `pg` sends them: numbers, booleans and bigints as text of no declared
 *   type, so PostgreSQL infers the type from the query (Bun would declare `int4`/`float8`/`bool`,
 *   and `text_column = $1` with a number would fail); `undefined` is NULL. A string bound to an
 *   explicit `$n::json`/`$n::jsonb` is JSON text, parsed by the server (Bun's prepared statements
 *   would store it as a JSON string).
 * - int8 (counts, byte totals) comes back as a JS number, integer arrays as plain arrays of
 *   numbers; numeric stays a string, timestamptz is a Date, json is parsed (Bun's own behaviour).
 * - a server error's SQLSTATE is `cause.code` (as with `pg`), Bun's own codes
 *   (`ERR_POSTGRES_CONNECTION_CLOSED`, ...) stay `cause.code` for connection failures.
 * - transactions run on a reserved connection (`db.reserve()`), released when the transaction's
 *   scope closes; `@effect/sql` sends BEGIN/COMMIT/SAVEPOINT itself on it.
 */
export interface BunSqlClientConfig {
  readonly url: Redacted.Redacted<string>
  readonly maxConnections: number
  /** named prepared statements (PostgreSQL); `false` on PGlite, whose one session all sockets share */
  readonly prepare: boolean
  readonly connectTimeout?: Duration.DurationInput | undefined
  readonly idleTimeout?: Duration.DurationInput | undefined
  readonly applicationName?: string | undefined
  /**
   * no connection at start-up (the replicas of `DATABASE_READ_URL`, [D126]): a replica that is
   * down must not stop the API from starting; its reads fail (503) until one is back
   */
  readonly lazy?: boolean | undefined
}

// ---- errors ----------------------------------------------------------------------------------

/** A PostgreSQL server error with its SQLSTATE as `code`, like the errors of `pg`. */
export class PostgresServerError extends Error {
  readonly code: string
  readonly detail: string | undefined
  readonly hint: string | undefined
  readonly constraint: string | undefined
  readonly table: string | undefined
  readonly column: string | undefined
  readonly schema: string | undefined
  readonly severity: string | undefined
  constructor(error: SQL.PostgresError) {
    super(error.message, { cause: error })
    this.name = "PostgresServerError"
    this.code = error.errno!
    this.detail = error.detail
    this.hint = error.hint
    this.constraint = error.constraint
    this.table = error.table
    this.column = error.column
    this.schema = error.schema
    this.severity = error.severity
  }
}

/** The SQLSTATE as `code` for server errors; anything else (connection failures) as Bun made it. */
export const normaliseCause = (cause: unknown): unknown => {
  if (
    typeof cause === "object" &&
    cause !== null &&
    (cause as { code?: unknown }).code === "ERR_POSTGRES_SERVER_ERROR" &&
    typeof (cause as { errno?: unknown }).errno === "string"
  ) {
    return new PostgresServerError(cause as SQL.PostgresError)
  }
  return cause
}

const failed = (cause: unknown) => {
  const error = new SqlError({ cause: normaliseCause(cause), message: "Failed to execute statement" })
  // a lost connection is noted as it happens: requests waiting meanwhile get their 503 in time ([D126])
  isConnectionLoss(error)
  return error
}

// ---- client ----------------------------------------------------------------------------------

const ATTR_DB_SYSTEM_NAME = "db.system.name"
const ATTR_DB_NAMESPACE = "db.namespace"
const ATTR_SERVER_ADDRESS = "server.address"
const ATTR_SERVER_PORT = "server.port"

/**
 * The parts the URL names, passed as options too: Bun's SQL lets `PGDATABASE`, `PGPASSWORD`, ...
 * override them ([D117]); the environment should only fill what the URL leaves out.
 */
const namedParts = (url: string) => {
  try {
    const parsed = new URL(url)
    return {
      ...(parsed.hostname !== "" ? { hostname: decodeURIComponent(parsed.hostname.replace(/^\[(.*)\]$/, "$1")) } : {}),
      ...(parsed.port !== "" ? { port: Number(parsed.port) } : {}),
      ...(parsed.username !== "" ? { username: decodeURIComponent(parsed.username) } : {}),
      ...(parsed.password !== "" ? { password: decodeURIComponent(parsed.password) } : {}),
      ...(parsed.pathname.length > 1 ? { database: decodeURIComponent(parsed.pathname.slice(1)) } : {})
    }
  } catch {
    return {}
  }
}

export const make = (config: BunSqlClientConfig): Effect.Effect<Client.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function* () {
    const url = Redacted.value(config.url)
    const prepare = config.prepare
    const db = new SQL(url, {
      ...namedParts(url),
      max: config.maxConnections,
      prepare,
      connectionTimeout: Duration.toSeconds(config.connectTimeout ?? Duration.seconds(5)),
      idleTimeout: Duration.toSeconds(config.idleTimeout ?? Duration.seconds(30)),
      connection: { application_name: config.applicationName ?? "vpn-api" }
    })

    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => (config.lazy === true ? Promise.resolve() : db.unsafe("select 1")),
        catch: (cause) => new SqlError({ cause: normaliseCause(cause), message: "BunSqlClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: config.connectTimeout ?? Duration.seconds(5),
          onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "BunSqlClient: Connection timed out" })
        }),
        Effect.onError(() => Effect.promise(() => db.close({ timeout: 0 }).catch(() => {})))
      ),
      () => Effect.promise(() => db.close({ timeout: 1 }).catch(() => {})).pipe(Effect.interruptible, Effect.timeoutOption(2000))
    )

    // the pool's use for the metrics ([D102]): queries running outside a transaction, and
    // connections a transaction holds; beyond `max` they wait for a connection
    let running = 0
    let reserved = 0
    const busy = () => running + reserved
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        registerPool({
          max: config.maxConnections,
          inUse: () => Math.min(config.maxConnections, busy()),
          waiting: () => Math.max(0, busy() - config.maxConnections)
        })
      ),
      (unregister) => Effect.sync(unregister)
    )

    class BunConnection implements Connection {
      constructor(
        readonly sql: SQL,
        readonly dedicated = false
      ) {}

      /**
       * one query on the pool, run again while it fails without effect (a failover, [D126]:
       * `Reconnect.ts`); on a transaction's connection, once (the transaction decides)
       */
      private run(text: string, params: ReadonlyArray<unknown>, values: boolean, raw: boolean) {
        return this.dedicated ? this.runOnce(text, params, values, raw) : reconnecting(() => this.runOnce(text, params, values, raw), hadNoEffect)
      }

      /** one query, one promise: a cancelled fiber lets the query finish and drops its result */
      private runOnce(text: string, params: ReadonlyArray<unknown>, values: boolean, raw: boolean) {
        const sql = this.sql
        return Effect.async<ReadonlyArray<object>, SqlError>((resume) => {
          let query: SQL.Query<BunResult>
          try {
            query = sql.unsafe(text, toParams(db, text, params, prepare))
            if (values) query = query.values()
          } catch (cause) {
            countQueryError(normaliseCause(cause))
            resume(Effect.fail(failed(cause)))
            return
          }
          const counted = !this.dedicated
          if (counted) running++
          query.then(
            (result: BunResult) => {
              if (counted) running--
              resume(Effect.succeed(raw ? result : convertAny(result, values)))
            },
            (cause: unknown) => {
              if (counted) running--
              countQueryError(normaliseCause(cause))
              resume(Effect.fail(failed(cause)))
            }
          )
        })
      }

      execute(text: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) {
        const run = this.run(text, params, false, false)
        return transformRows ? Effect.map(run, transformRows) : run
      }
      executeRaw(text: string, params: ReadonlyArray<unknown>) {
        return this.run(text, params, false, true)
      }
      executeWithoutTransform(text: string, params: ReadonlyArray<unknown>) {
        return this.run(text, params, false, false)
      }
      executeValues(text: string, params: ReadonlyArray<unknown>) {
        // `.values()` makes each row an array of its column values
        return this.run(text, params, true, false) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>
      }
      executeUnprepared(
        text: string,
        params: ReadonlyArray<unknown>,
        transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
      ) {
        return this.execute(text, params, transformRows)
      }
      executeStream(text: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) {
        return Stream.unwrap(Effect.map(this.execute(text, params, transformRows), (rows) => Stream.fromChunk(Chunk.unsafeFromArray(rows))))
      }
    }

    /** a dedicated connection for a transaction, released when the transaction's scope closes */
    const reserve: Effect.Effect<Connection, SqlError, Scope.Scope> = Effect.flatMap(Effect.scope, (scope) =>
      Effect.async<Connection, SqlError>((resume, signal) => {
        // waiting for a connection counts as using the pool (the excess shows as waiting)
        reserved++
        let held = true
        const release = () => {
          if (held) reserved--
          held = false
        }
        db.reserve({ signal }).then(
          (connection) => {
            if (signal.aborted) {
              release()
              connection.release().catch(() => {})
              return
            }
            resume(
              Effect.as(
                Scope.addFinalizer(
                  scope,
                  Effect.sync(() => {
                    release()
                    void connection.release().catch(() => {})
                  })
                ),
                new BunConnection(connection, true)
              )
            )
          },
          (cause: unknown) => {
            release()
            countQueryError(normaliseCause(cause))
            resume(Effect.fail(new SqlError({ cause: normaliseCause(cause), message: "Failed to acquire connection for transaction" })))
          }
        )
      })
    )

    let host = "localhost"
    let port = 5432
    let database = "postgres"
    try {
      const parsed = new URL(url)
      host = parsed.hostname || host
      port = parsed.port ? Number(parsed.port) : port
      database = decodeURIComponent(parsed.pathname.slice(1)) || parsed.username || database
    } catch {
      //
    }

    const connection = new BunConnection(db)
    const client = yield* Client.make({
      acquirer: Effect.succeed(connection),
      transactionAcquirer: reserve,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [
        [ATTR_DB_SYSTEM_NAME, "postgresql"],
        [ATTR_DB_NAMESPACE, database],
        [ATTR_SERVER_ADDRESS, host],
        [ATTR_SERVER_PORT, port]
      ]
    })
    registerFastPath(client`select 1`, connection)

    // [D126]: a transaction whose connection was lost before its body began (no connection to be
    // had, or BEGIN failed) is run again within `Reconnect.ts`'s bounds; once the body began, or
    // during COMMIT, a loss stays a failure. A nested transaction (a savepoint) is never retried
    // on its own: the outer one decides.
    const transaction = client.withTransaction
    const withTransaction = <R, E, A>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.flatMap(Effect.serviceOption(Client.TransactionConnection), (open) => {
        if (Option.isSome(open)) return transaction(effect)
        let began = false
        return reconnecting(
          () => {
            began = false
            return transaction(
              Effect.suspend(() => {
                began = true
                return effect
              })
            )
          },
          (cause) => !began && wasConnectionLoss(cause)
        )
      })
    Object.assign(client, { withTransaction })
    return client
  })

/** The `SqlClient` on `Bun.SQL`, its pool closed with the layer. */
export const layer = (config: BunSqlClientConfig): Layer.Layer<Client.SqlClient, SqlError> =>
  Layer.scopedContext(Effect.map(make(config), (client) => Context.make(Client.SqlClient, client))).pipe(Layer.provide(Reactivity.layer))
