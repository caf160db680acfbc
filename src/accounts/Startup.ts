import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { Passwords } from "./Passwords.ts"
import { Users } from "./Users.ts"

/** Creates the admin of `email`, verified, unless an account holds that e-mail; safe on several instances at once. */
const createAdmin = (email: string, password: string, name: string) =>
  Effect.gen(function* () {
    const users = yield* Users
    const passwords = yield* Passwords
    const clock = yield* AppClock
    const now = yield* clock.now
    const passwordHash = yield* passwords.hash(password)
    return yield* users.insert({ name, email, passwordHash, role: "admin", verifiedAt: now, now }).pipe(
      Effect.as(Option.none()),
      // another instance created it a moment ago
      Effect.catchTag("EmailTaken", () => users.findByEmail(email))
    )
  })

/**
 * The CLI's `create-admin`: creates the admin of `email`, or explicitly makes the existing
 * account of that e-mail an admin. Never changes an existing password.
 */
export const ensureAdmin = (email: string, password: string, name = "Administrator") =>
  Effect.gen(function* () {
    const users = yield* Users
    const clock = yield* AppClock
    const normalised = email.trim().toLowerCase()
    const found = yield* users.findByEmail(normalised)
    const existing = Option.isSome(found) ? found : yield* createAdmin(normalised, password, name)
    if (Option.isNone(existing)) return "created" as const
    if (existing.value.role === "admin") return "exists" as const
    yield* users.setAdminFields(existing.value.id, { role: "admin", now: yield* clock.now })
    return "promoted" as const
  }).pipe(Effect.provide(Layer.mergeAll(Users.Default, Passwords.Default)))

/**
 * Start-up's admin of ADMIN_EMAIL/ADMIN_PASSWORD ([D1], rev. 2): created (verified, role admin)
 * when no account holds that e-mail. An existing account is never changed; when it is not an
 * admin, one warning line says so (promotion is the CLI's explicit `create-admin`).
 */
export const bootstrapAdmin = (email: string, password: string) =>
  Effect.gen(function* () {
    const users = yield* Users
    const normalised = email.trim().toLowerCase()
    const found = yield* users.findByEmail(normalised)
    const existing = Option.isSome(found) ? found : yield* createAdmin(normalised, password, "Administrator")
    if (Option.isNone(existing)) return "created" as const
    return existing.value.role === "admin" ? ("exists" as const) : ("not-admin" as const)
  }).pipe(Effect.provide(Layer.mergeAll(Users.Default, Passwords.Default)))

/** What start-up makes sure of for accounts (the admin of ADMIN_EMAIL/ADMIN_PASSWORD, [D1]). */
export const AccountsStartup = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isNone(config.adminEmail) || Option.isNone(config.adminPassword)) return
    const email = config.adminEmail.value
    const outcome = yield* bootstrapAdmin(email, Redacted.value(config.adminPassword.value))
    if (outcome === "not-admin") {
      yield* Effect.logWarning(
        `admin user ${email}: an account with this e-mail exists and is not an admin; start-up leaves it unchanged (promote it with create-admin)`
      )
    } else {
      yield* Effect.logInfo(`admin user ${email}: ${outcome}`)
    }
  })
)
