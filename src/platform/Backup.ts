import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { chmodSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { APP_KEY_FILE } from "./Crypto.ts"
import { PGDATA, privateDataDir } from "./Database.ts"
import { LOCK_FILE, lockDataDir, SOCKET_NAME } from "./DataDirLock.ts"

/**
 * Backup and restore of the embedded database ([D2] rev. 2). A backup file is
 *
 *     vpn-api-backup 1\n
 *     {"created_at":"…","app_key":"<base64>","migrations":N}\n
 *     <PGlite's data directory as a gzipped tarball>
 *
 * It carries the application key: without it the stored WireGuard private keys and VPN secrets
 * of the restored database cannot be decrypted. So the file is a secret, written 0600.
 *
 * The tarball is taken by a PGlite of this process with the server stopped: PGlite is one
 * process's database, and a second process opening a `DATA_DIR` in use could corrupt it, so both
 * commands take the directory's lock (`DataDirLock.ts`) and refuse while a server holds it.
 */
export class BackupFailed extends Schema.TaggedError<BackupFailed>()("BackupFailed", { message: Schema.String }) {}

const MAGIC = "vpn-api-backup 1\n"

const Header = Schema.Struct({
  created_at: Schema.String,
  app_key: Schema.String,
  migrations: Schema.Number
})
const decodeHeader = Schema.decodeUnknownOption(Schema.parseJson(Header))
const MigrationCount = Schema.Struct({ n: Schema.Number })

const fail = (message: string) => Effect.fail(new BackupFailed({ message }))
const reason = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/** A PGlite on `root`'s cluster (loaded from `tarball` when given), closed after `use`. */
const withPglite = <A>(
  root: string,
  tarball: Uint8Array<ArrayBuffer> | undefined,
  use: (count: () => Promise<number>, dump: () => Promise<Uint8Array>) => Promise<A>
) =>
  Effect.tryPromise({
    try: async () => {
      const [{ PGlite }, { loadPgliteAssets }] = await Promise.all([import("@electric-sql/pglite"), import("./PgliteAssets.ts")])
      const db = await PGlite.create({
        dataDir: join(root, PGDATA),
        ...(tarball === undefined ? {} : { loadDataDir: new Blob([tarball]) }),
        ...(await loadPgliteAssets())
      })
      try {
        const count = async () => {
          const result = await db.query("select count(*)::int as n from schema_migrations")
          return Schema.decodeUnknownSync(MigrationCount)(result.rows[0]).n
        }
        // inside PGlite's query mutex: no statement runs while the files are read
        const dump = async () => new Uint8Array(await (await db.dumpDataDir("gzip")).arrayBuffer())
        return await use(count, dump)
      } finally {
        await db.close()
      }
    },
    catch: reason
  })

/** `file` written whole or not at all, 0600 from its first byte. */
const writePrivately = (file: string, bytes: Uint8Array) =>
  Effect.try({
    try: () => {
      const partial = `${file}.${process.pid}.partial`
      try {
        writeFileSync(partial, bytes, { mode: 0o600, flag: "wx" })
        chmodSync(partial, 0o600)
        renameSync(partial, file)
      } catch (cause) {
        rmSync(partial, { force: true })
        throw cause
      }
    },
    catch: (cause) => new BackupFailed({ message: `cannot write ${file}: ${reason(cause)}` })
  })

export interface BackupOutcome {
  readonly file: string
  readonly bytes: number
  readonly migrations: number
  readonly keyFrom: "APP_KEY" | "DATA_DIR"
}

/** The key the server decrypts with: `APP_KEY` when set, else the one generated into `DATA_DIR`. */
const keyInUse = (root: string, appKey: Option.Option<Redacted.Redacted<Uint8Array>>) =>
  Option.isSome(appKey)
    ? Effect.succeed({ key: Redacted.value(appKey.value), from: "APP_KEY" as const })
    : Effect.try({
        try: () => Buffer.from(readFileSync(join(root, APP_KEY_FILE), "utf8").trim(), "base64"),
        catch: () =>
          new BackupFailed({
            message: `no ${APP_KEY_FILE} in ${root} and no APP_KEY set: without the key, the stored WireGuard keys and VPN secrets could not be decrypted after a restore`
          })
      }).pipe(
        Effect.filterOrFail(
          (key) => key.length === 32,
          () => new BackupFailed({ message: `${join(root, APP_KEY_FILE)}: expected 32 base64-encoded bytes` })
        ),
        Effect.map((key) => ({ key: new Uint8Array(key), from: "DATA_DIR" as const }))
      )

export const backupEmbedded = (options: {
  readonly dataDir: string
  readonly appKey: Option.Option<Redacted.Redacted<Uint8Array>>
  readonly file: string
  readonly now: Date
}): Effect.Effect<BackupOutcome, BackupFailed> =>
  Effect.gen(function* () {
    const root = resolve(options.dataDir)
    const file = resolve(options.file)
    if (!existsSync(join(root, PGDATA, "PG_VERSION"))) return yield* fail(`no embedded database in ${root} (DATA_DIR)`)
    yield* lockDataDir(root).pipe(Effect.mapError((e) => new BackupFailed({ message: e.message })))
    const { from, key } = yield* keyInUse(root, options.appKey)
    privateDataDir(root)
    const { migrations, tarball } = yield* withPglite(root, undefined, async (count, dump) => ({
      migrations: await count(),
      tarball: await dump()
    })).pipe(Effect.mapError((cause) => new BackupFailed({ message: `cannot read the database in ${root}: ${cause}` })))
    privateDataDir(root)
    const header = JSON.stringify({ created_at: options.now.toISOString(), app_key: Buffer.from(key).toString("base64"), migrations })
    const bytes = Buffer.concat([Buffer.from(`${MAGIC}${header}\n`, "utf8"), tarball])
    yield* writePrivately(file, bytes)
    return { file, bytes: bytes.length, migrations, keyFrom: from }
  }).pipe(Effect.scoped)

export interface RestoreOutcome {
  readonly dataDir: string
  readonly createdAt: string
  readonly migrations: number
  /** `APP_KEY` is set to another key than the backup's: the restored secrets would not decrypt */
  readonly appKeyDiffers: boolean
}

const parseBackup = (file: string) =>
  Effect.gen(function* () {
    const raw = yield* Effect.try({
      try: () => readFileSync(file),
      catch: (cause) => new BackupFailed({ message: `cannot read ${file}: ${reason(cause)}` })
    })
    const notOurs = new BackupFailed({ message: `${file}: not a vpn-api backup` })
    if (raw.subarray(0, MAGIC.length).toString("utf8") !== MAGIC) return yield* Effect.fail(notOurs)
    const end = raw.indexOf(0x0a, MAGIC.length)
    const header = end < 0 ? Option.none() : decodeHeader(raw.subarray(MAGIC.length, end).toString("utf8"))
    if (Option.isNone(header)) return yield* Effect.fail(notOurs)
    const key = Buffer.from(header.value.app_key, "base64")
    if (key.length !== 32) return yield* Effect.fail(notOurs)
    return { header: header.value, key, tarball: new Uint8Array(raw.subarray(end + 1)) }
  })

export const restoreEmbedded = (options: {
  readonly dataDir: string
  readonly appKey: Option.Option<Redacted.Redacted<Uint8Array>>
  readonly file: string
  readonly force: boolean
}): Effect.Effect<RestoreOutcome, BackupFailed> =>
  Effect.gen(function* () {
    const root = resolve(options.dataDir)
    const backup = yield* parseBackup(resolve(options.file))
    if (existsSync(root) && !statSync(root).isDirectory()) return yield* fail(`${root} (DATA_DIR) is not a directory`)
    // the lock file of a server that ran and stopped holds nothing
    const entries = existsSync(root) ? readdirSync(root).filter((name) => name !== LOCK_FILE) : []
    if (entries.length > 0 && !options.force) {
      return yield* fail(`${root} (DATA_DIR) is not empty: restore goes into a new or empty directory; --force replaces its database and key`)
    }
    privateDataDir(root)
    yield* lockDataDir(root).pipe(Effect.mapError((e) => new BackupFailed({ message: e.message })))
    for (const name of [PGDATA, APP_KEY_FILE, SOCKET_NAME]) rmSync(join(root, name), { recursive: true, force: true })
    const migrations = yield* withPglite(root, backup.tarball, (count) => count()).pipe(
      Effect.tapError(() => Effect.sync(() => rmSync(join(root, PGDATA), { recursive: true, force: true }))),
      Effect.mapError((cause) => new BackupFailed({ message: `${options.file}: its database could not be loaded: ${cause}` }))
    )
    yield* Effect.try({
      try: () => writeFileSync(join(root, APP_KEY_FILE), backup.key.toString("base64"), { mode: 0o600 }),
      catch: (cause) => new BackupFailed({ message: `cannot write ${join(root, APP_KEY_FILE)}: ${reason(cause)}` })
    })
    privateDataDir(root)
    const appKeyDiffers = Option.isSome(options.appKey) && !backup.key.equals(Buffer.from(Redacted.value(options.appKey.value)))
    return { dataDir: root, createdAt: backup.header.created_at, migrations, appKeyDiffers }
  }).pipe(Effect.scoped)
