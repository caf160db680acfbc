import { afterAll } from "bun:test"

// The unit tier's preload (bunfig.unit.toml): no database boots here. A unit test that reaches
// PGlite or a database client (through a fixture or a Live layer) fails the run, naming it.
process.env["VPN_TEST_TIER"] = "unit"

const DATABASE_MODULES = /@electric-sql[\\/]pglite|test[\\/]support[\\/](database|app)\.ts|[\\/]node_modules[\\/]pg[\\/]/

afterAll(() => {
  const loaded = Object.keys(require.cache).filter((path) => DATABASE_MODULES.test(path))
  if (loaded.length > 0) throw new Error(`the unit tier loaded a database module: ${loaded.join(", ")}`)
})
