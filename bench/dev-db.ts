/**
 * A seeded PostgreSQL for profiling by hand (not part of `bun run bench`): starts a throwaway
 * cluster, lets our server apply the migrations, seeds the benchmark's data set, writes the
 * environment to the file named by the first argument and keeps running until killed.
 */
import { writeFileSync } from "node:fs"
import { startPostgres } from "./lib/postgres.ts"
import { seed } from "./lib/seed.ts"

const out = process.argv[2] ?? "/tmp/bench-dev.env"
const pg = startPostgres()
const appKey = crypto.getRandomValues(new Uint8Array(32))
const env = {
  DATABASE_URL: pg.url,
  APP_KEY: Buffer.from(appKey).toString("base64"),
  PUBLIC_URL: "http://127.0.0.1",
  HOST: "127.0.0.1",
  GENERAL_RATE_LIMIT: "0",
  LOG_LEVEL: "warn"
}
const migrate = Bun.spawnSync(["bun", "run", "src/main.ts", "migrate"], { env: { ...process.env, ...env }, stdout: "inherit", stderr: "inherit" })
if (migrate.exitCode !== 0) {
  pg.stop()
  process.exit(1)
}
const seeded = await seed(pg.url, appKey)
writeFileSync(
  out,
  Object.entries({ ...env, TOKEN: seeded.token, SERVER_ID: String(seeded.serverId) })
    .map(([k, v]) => `${k}='${v}'`)
    .join("\n") + "\n"
)
console.log(`ready: ${out}`)
const stop = () => {
  pg.stop()
  process.exit(0)
}
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
setInterval(() => {}, 1 << 30)
