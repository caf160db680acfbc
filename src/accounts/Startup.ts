import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { Passwords } from "./Passwords.ts"
import { Users } from "./Users.ts"

/**
 * Makes sure the admin of `email` exists ([D1]): creates it verified with role admin, or makes an
 * existing account of that e-mail an admin. Never changes an existing password. Safe to run on
 * several instances at once (the unique e-mail index decides). Also for an admin CLI.
 */
export const ensureAdmin = (email: string, password: string, name = "Administrator") =>
  Effect.gen(function*() {
    const users = yield* Users
    const passwords = yield* Passwords
    const clock = yield* AppClock
    const normalised = email.trim().toLowerCase()
    const found = yield* users.findByEmail(normalised)
    if (Option.isSome(found)) {
      if (found.value.role !== "admin") {
        yield* users.setAdminFields(found.value.id, { role: "admin", now: yield* clock.now })
        return "promoted" as const
      }
      return "exists" as const
    }
    const now = yield* clock.now
    const passwordHash = yield* passwords.hash(password)
    return yield* users.insert({ name, email: normalised, passwordHash, role: "admin", verifiedAt: now, now }).pipe(
      Effect.as("created" as const),
      // another instance created it a moment ago
      Effect.catchTag("EmailTaken", () => Effect.succeed("exists" as const))
    )
  }).pipe(Effect.provide(Layer.mergeAll(Users.Live, Passwords.Live)))

/** What start-up makes sure of for accounts (the admin of ADMIN_EMAIL/ADMIN_PASSWORD, [D1]). */
export const AccountsStartup: Layer.Layer<never, never, SqlClient.SqlClient | AppConfig | AppClock> = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.adminEmail) || Option.isNone(config.adminPassword)) return
    const outcome = yield* ensureAdmin(config.adminEmail.value, Redacted.value(config.adminPassword.value))
    yield* Effect.logInfo(`admin user ${config.adminEmail.value}: ${outcome}`)
  })
)
