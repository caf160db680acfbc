// Starts the shared test database before any test file runs (see database.ts).
import { sharedDatabase } from "./database.ts"

await sharedDatabase()
