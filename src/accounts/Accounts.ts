import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { type Page, makePage } from "../platform/Page.ts"
import { Forbidden, InvalidCredentials, NotFound, ValidationError } from "../platform/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { type Mail, Mailer, sendLater } from "../platform/Mailer.ts"
import { MailTokens } from "./MailTokens.ts"
import { resetMail, verificationMail } from "./Mails.ts"
import { Passwords } from "./Passwords.ts"
import { type Principal, Tokens } from "./Tokens.ts"
import { type UserRow, Users } from "./Users.ts"

export const EMAIL_TAKEN = "The email has already been taken."
export const PASSWORD_INCORRECT = "The password is incorrect."
export const INVALID_VERIFY_TOKEN = "The verification token is invalid or has expired."
export const INVALID_RESET_TOKEN = "This password reset token is invalid or has expired."
export const ADMIN_PAGE_SIZE = 15

const emailTaken = () => ValidationError.field("email", EMAIL_TAKEN)

/**
 * The accounts room: registration, sign-in, e-mail verification, password reset, the caller's
 * account and the admin's view of users ([D20]-[D25], [D70]). Handlers call these, one per endpoint.
 */
export class Accounts extends Context.Tag("Accounts")<Accounts, {
  readonly register: (input: { readonly name: string; readonly email: string; readonly password: string }) => Effect.Effect<
    { readonly token: string; readonly user: UserRow },
    ValidationError
  >
  readonly login: (email: string, password: string) => Effect.Effect<
    { readonly token: string; readonly user: UserRow },
    InvalidCredentials | Forbidden
  >
  readonly logout: (caller: Principal) => Effect.Effect<void>
  readonly logoutAll: (caller: Principal) => Effect.Effect<void>
  readonly forgotPassword: (email: string) => Effect.Effect<void>
  readonly resetPassword: (input: { readonly token: string; readonly email: string; readonly password: string }) => Effect.Effect<
    void,
    ValidationError
  >
  readonly verifyEmail: (token: string) => Effect.Effect<void, ValidationError>
  readonly resendVerification: (caller: Principal) => Effect.Effect<"sent" | "already-verified", NotFound>
  readonly user: (caller: Principal) => Effect.Effect<UserRow, NotFound>
  readonly updateProfile: (caller: Principal, changes: { readonly name?: string | undefined; readonly email?: string | undefined }) => Effect.Effect<
    UserRow,
    ValidationError | NotFound
  >
  readonly changePassword: (caller: Principal, current: string, password: string) => Effect.Effect<void, ValidationError | NotFound>
  readonly settings: (caller: Principal) => Effect.Effect<{ readonly email_notifications: boolean }>
  readonly updateSettings: (caller: Principal, emailNotifications: boolean) => Effect.Effect<{ readonly email_notifications: boolean }>
  readonly deleteAccount: (caller: Principal, password: string) => Effect.Effect<void, ValidationError | NotFound>
  readonly listUsers: (query: { readonly email?: string | undefined; readonly page: number }) => Effect.Effect<Page<UserRow>>
  readonly updateUser: (id: number, changes: { readonly status?: number | undefined; readonly role?: "user" | "admin" | undefined }) => Effect.Effect<
    UserRow,
    NotFound
  >
}>() {
  static readonly Live = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const config = yield* AppConfig
      const mailer = yield* Mailer
      const users = yield* Users
      const mailTokens = yield* MailTokens
      const passwords = yield* Passwords
      const tokens = yield* Tokens

      /** after the response: the caller never waits for SMTP */
      const mailLater = (mail: Mail) => sendLater(mail).pipe(Effect.provideService(Mailer, mailer))
      const transaction = <A, E>(effect: Effect.Effect<A, E>) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))
      const existing = (id: number) => Effect.flatMap(users.findById(id), Option.match({
        onNone: () => Effect.fail(new NotFound()),
        onSome: Effect.succeed
      }))
      /** the stored hash must match, else 422 under `field` ([D24], [D25]) */
      const checkPassword = (user: UserRow, password: string, field: string) =>
        Effect.flatMap(passwords.verify(password, user.password_hash), (ok) =>
          ok ? Effect.void : Effect.fail(ValidationError.field(field, PASSWORD_INCORRECT)))

      return {
        register: ({ email, name, password }) =>
          Effect.gen(function*() {
            const passwordHash = yield* passwords.hash(password)
            const now = yield* clock.now
            const created = yield* transaction(Effect.gen(function*() {
              const user = yield* users.insert({ name, email, passwordHash, now })
              const token = yield* tokens.issue(user.id)
              const verifyToken = yield* mailTokens.issue(user.id, "verify_email", now)
              return { user, token, verifyToken }
            })).pipe(Effect.catchTag("EmailTaken", () => Effect.fail(emailTaken())))
            yield* mailLater(verificationMail(config.appUrl, created.user, created.verifyToken))
            return { token: created.token, user: created.user }
          }),

        login: (email, password) =>
          Effect.gen(function*() {
            const found = yield* users.findByEmail(email)
            if (Option.isNone(found)) {
              // the same argon2 work as for a real account: response time tells nothing
              yield* passwords.verifyNobody(password)
              return yield* Effect.fail(new InvalidCredentials())
            }
            const user = found.value
            if (!(yield* passwords.verify(password, user.password_hash))) return yield* Effect.fail(new InvalidCredentials())
            if (user.status !== 1) return yield* Effect.fail(new Forbidden({ message: "Account disabled." }))
            return { token: yield* tokens.issue(user.id), user }
          }),

        logout: (caller) => tokens.revoke(caller.tokenId),
        logoutAll: (caller) => tokens.revokeAll(caller.userId),

        forgotPassword: (email) =>
          Effect.gen(function*() {
            const now = yield* clock.now
            // one statement for known and unknown addresses alike; only a known one gets a mail
            const issued = yield* mailTokens.issueResetFor(email, now)
            if (Option.isSome(issued)) yield* mailLater(resetMail(config.appUrl, email, issued.value.token))
          }),

        resetPassword: ({ email, password, token }) =>
          Effect.gen(function*() {
            const passwordHash = yield* passwords.hash(password)
            const now = yield* clock.now
            yield* transaction(Effect.gen(function*() {
              const userId = yield* mailTokens.consume(token, "reset_password", now, email)
              if (Option.isNone(userId)) return yield* Effect.fail(ValidationError.field("token", INVALID_RESET_TOKEN))
              yield* users.setPassword(userId.value, passwordHash, now)
              yield* mailTokens.invalidate(userId.value, "reset_password")
              yield* tokens.revokeAll(userId.value)
            }))
          }),

        verifyEmail: (token) =>
          Effect.gen(function*() {
            const now = yield* clock.now
            yield* transaction(Effect.gen(function*() {
              const userId = yield* mailTokens.consume(token, "verify_email", now)
              if (Option.isNone(userId)) return yield* Effect.fail(ValidationError.field("token", INVALID_VERIFY_TOKEN))
              yield* users.markVerified(userId.value, now)
            }))
          }),

        resendVerification: (caller) =>
          Effect.gen(function*() {
            const user = yield* existing(caller.userId)
            if (user.email_verified_at !== null) return "already-verified" as const
            const now = yield* clock.now
            const token = yield* transaction(Effect.gen(function*() {
              yield* mailTokens.invalidate(user.id, "verify_email")
              return yield* mailTokens.issue(user.id, "verify_email", now)
            }))
            yield* mailLater(verificationMail(config.appUrl, user, token))
            return "sent" as const
          }),

        user: (caller) => existing(caller.userId),

        updateProfile: (caller, changes) =>
          Effect.gen(function*() {
            const now = yield* clock.now
            const before = yield* existing(caller.userId)
            const emailChanged = changes.email !== undefined && changes.email !== before.email
            const result = yield* transaction(Effect.gen(function*() {
              const updated = yield* users.updateProfile(caller.userId, { ...changes, now })
              if (Option.isNone(updated)) return yield* Effect.fail(new NotFound())
              if (!emailChanged) return { user: updated.value, verifyToken: Option.none<string>() }
              // the old address's links must not verify the new one
              yield* mailTokens.invalidate(caller.userId, "verify_email")
              const verifyToken = yield* mailTokens.issue(caller.userId, "verify_email", now)
              return { user: updated.value, verifyToken: Option.some(verifyToken) }
            })).pipe(Effect.catchTag("EmailTaken", () => Effect.fail(emailTaken())))
            if (Option.isSome(result.verifyToken)) {
              yield* mailLater(verificationMail(config.appUrl, result.user, result.verifyToken.value))
            }
            return result.user
          }),

        changePassword: (caller, current, password) =>
          Effect.gen(function*() {
            const user = yield* existing(caller.userId)
            yield* checkPassword(user, current, "current_password")
            const passwordHash = yield* passwords.hash(password)
            const now = yield* clock.now
            yield* transaction(Effect.gen(function*() {
              yield* users.setPassword(user.id, passwordHash, now)
              yield* mailTokens.invalidate(user.id, "reset_password")
              yield* tokens.revokeAll(user.id, { except: caller.tokenId })
            }))
          }),

        settings: (caller) => Effect.map(users.emailNotifications(caller.userId), (on) => ({ email_notifications: on })),

        updateSettings: (caller, emailNotifications) =>
          Effect.gen(function*() {
            yield* users.setEmailNotifications(caller.userId, emailNotifications, yield* clock.now)
            return { email_notifications: yield* users.emailNotifications(caller.userId) }
          }),

        deleteAccount: (caller, password) =>
          Effect.gen(function*() {
            const user = yield* existing(caller.userId)
            yield* checkPassword(user, password, "password")
            // one transaction ([D25]): the schema cascades to tokens, mail tokens, settings, tickets and
            // replies, services with their usage, VPN peers and credentials; invoices are detached
            yield* transaction(Effect.gen(function*() {
              const locked = yield* users.lock(user.id)
              if (Option.isNone(locked)) return yield* Effect.fail(new NotFound())
              yield* users.delete(user.id)
            }))
          }),

        listUsers: ({ email, page }) =>
          Effect.map(
            users.list({ email, limit: ADMIN_PAGE_SIZE, offset: (page - 1) * ADMIN_PAGE_SIZE }),
            ({ rows, total }) =>
              makePage({
                rows,
                total,
                page,
                perPage: ADMIN_PAGE_SIZE,
                baseUrl: `${config.publicUrl}/v1/admin/users`,
                query: [["email", email === undefined || email === "" ? undefined : email]]
              })
          ),

        updateUser: (id, changes) =>
          Effect.gen(function*() {
            const updated = yield* users.setAdminFields(id, { ...changes, now: yield* clock.now })
            return yield* Option.match(updated, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })
          })
      }
    })
  ).pipe(Layer.provide(Layer.mergeAll(Users.Live, MailTokens.Live, Passwords.Live)))
}
