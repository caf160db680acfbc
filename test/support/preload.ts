// Starts the shared test database before any test file runs (see database.ts).
import { sharedDatabase } from "./database.ts"
// every child a test spawns is killed when the run ends (issue 23, item 16)
import "./children.ts"

await sharedDatabase()
