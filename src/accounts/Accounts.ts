import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import { AuditLog } from "../audit/AuditLog.ts"
import type { SecurityEvent } from "../audit/Domain.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { Forbidden, InvalidCredentials, NotFound, orNotFound, ValidationError } from "../platform/Errors.ts"
import type { Mail } from "../platform/Mailer.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { Outbox } from "../outbox/Outbox.ts"
import type { Locale } from "../platform/i18n/Locale.ts"
import { makePage } from "../platform/Page.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import type { Principal, Role, UserRecord } from "./Domain.ts"
import { AccountDisabled, emailTaken, invalidResetToken, invalidVerifyToken, LAST_ADMIN, passwordIncorrect } from "./Errors.ts"
import { EmailChanges } from "./EmailChanges.ts"
import { MailTokens } from "./MailTokens.ts"
import { emailChangedMail, resetMail, verificationMail } from "./Mails.ts"
import { Passwords } from "./Passwords.ts"
import { Revocations } from "./Revocations.ts"
import { Tokens } from "./Tokens.ts"
import { TwoFactor } from "./TwoFactor.ts"
import { Users } from "./Users.ts"
import { VpnAccessControl } from "./VpnAccessControl.ts"
import type { UserId } from "../platform/Ids.ts"

export const ADMIN_PAGE_SIZE = 15

/**
 * The accounts room: registration, sign-in, e-mail verification, password reset, the caller's
 * account and the admin's view of users ([D20]-[D25], [D70]). Handlers call these, one per endpoint.
 */
export class Accounts extends Effect.Service<Accounts>()("accounts/Accounts", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const domainEvents = yield* DomainEvents
    const users = yield* Users
    const mailTokens = yield* MailTokens
    const passwords = yield* Passwords
    const vpnAccess = yield* VpnAccessControl
    const tokens = yield* Tokens
    const twoFactor = yield* TwoFactor
    const audit = yield* AuditLog
    const notifications = yield* Notifications
    const revocations = yield* Revocations
    const emailChanges = yield* EmailChanges

    /** a security event of the user's own ([D99]), in the audit log ([D100]) */
    const event = (
      action: SecurityEvent,
      userId: UserId,
      actor: { readonly id: number | null; readonly kind: "token" | "api_key" | "password" | "none" },
      resource: string | null = `user:${userId}`
    ) => audit.record({ action, actorId: actor.id, actorKind: actor.kind, resource, subjectId: userId })
    const byCaller = (caller: Principal) => ({ id: caller.userId, kind: caller.kind })

    /**
     * Security mail ([D96]: always sent), written to the outbox in the caller's transaction; each
     * issued token is its own occasion. `outbox.wake` after the commit sends it at once, and the
     * caller never waits for SMTP ([D23]).
     */
    const securityMail = (kind: string, userId: UserId | string, mail: Mail) =>
      outbox.enqueueMail({ kind, dedupeKey: `${kind}:${userId}:${crypto.randomUUID()}`, mail })
    /**
     * "New sign-in with a second factor" ([D96], [D97]): when, from which address and user agent,
     * with which factor; never the code.
     */
    const signInMail = (userId: UserId, factor: { readonly factor: "otp" } | { readonly factor: "recovery_code"; readonly left: number }) =>
      Effect.gen(function* () {
        const origin = yield* FiberRef.get(requestOrigin)
        yield* notifications.security({
          userId,
          kind: "sign-in-2fa",
          view: {
            factor: factor.factor,
            signed_in_at: yield* clock.now,
            ip: origin.ip,
            user_agent: origin.userAgent,
            recovery_codes_left: factor.factor === "recovery_code" ? factor.left : null
          }
        })
      })
    const transaction = <A, E>(effect: Effect.Effect<A, E>) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))
    const existing = (id: number) => Effect.flatMap(users.findById(id), orNotFound)
    /** the stored hash must match, else 422 under `field` ([D24], [D25]) */
    const checkPassword = (user: UserRecord, password: string, field: string) =>
      Effect.flatMap(passwords.verify(password, user.password_hash), (ok) => (ok ? Effect.void : Effect.fail(passwordIncorrect(field))))

    /** [D120]: `locale` is the language the registration chose (from `Accept-Language`) */
    const register = (input: { readonly name: string; readonly email: string; readonly password: string }, locale: Locale = "en") =>
      Effect.gen(function* () {
        // a taken e-mail costs no hash; the unique index stays the judge of a race
        if (Option.isSome(yield* users.findByEmail(input.email))) return yield* Effect.fail(emailTaken())
        const passwordHash = yield* passwords.hash(input.password)
        const now = yield* clock.now
        const created = yield* transaction(
          Effect.gen(function* () {
            const user = yield* users.insert({ name: input.name, email: input.email, passwordHash, locale, now })
            const token = yield* tokens.issue(user.id)
            const verifyToken = yield* mailTokens.issue(user.id, "verify_email", now)
            yield* securityMail("verify_email", user.id, verificationMail(config.appUrl, user, verifyToken, user.locale))
            // [D101]: the new account's public fields, in its transaction
            yield* domainEvents.emit({ type: "user.registered", data: { id: user.id, name: user.name, email: user.email, created_at: now.toISOString() } })
            return { user, token }
          })
        ).pipe(Effect.catchTag("EmailTaken", () => Effect.fail(emailTaken())))
        yield* outbox.wake
        return { token: created.token, user: created.user }
      })

    /** the password, then for an account with two-factor sign-in its second factor ([D20], [D97]) */
    const login = (input: {
      readonly email: string
      readonly password: string
      readonly otp?: string | undefined
      readonly recovery_code?: string | undefined
    }) =>
      Effect.gen(function* () {
        const { email, password } = input
        const found = yield* users.findByEmail(email)
        if (Option.isNone(found)) {
          // the same work as for a real account's wrong password: the argon2 hash ([D20]) and the
          // failed sign-in's row in the audit log, naming no one, so that the response time does
          // not tell which addresses are registered (issue 23, item 15)
          yield* passwords.verifyNobody(password)
          yield* audit.record({ action: "sign_in_failed", actorId: null, actorKind: "none", resource: null, subjectId: null })
          return yield* Effect.fail(new InvalidCredentials())
        }
        const user = found.value
        const outdated = yield* passwords.needsRehash(user.password_hash)
        // a hash of other (older, cheaper) parameters answers no sooner than a current one ([D20])
        const [valid] = outdated
          ? yield* Effect.all([passwords.verify(password, user.password_hash), passwords.verifyNobody(password)], { concurrency: 2 })
          : [yield* passwords.verify(password, user.password_hash)]
        const nobody = { id: null, kind: "none" } as const
        if (!valid) {
          yield* event("sign_in_failed", user.id, nobody)
          return yield* Effect.fail(new InvalidCredentials())
        }
        if (user.status !== 1) return yield* Effect.fail(new AccountDisabled())
        // a wrong code is a failed sign-in; asking for the code is not
        const triedCode = (input.otp ?? "").trim() !== "" || (input.recovery_code ?? "").trim() !== ""
        const factor = yield* twoFactor.signIn(user, input).pipe(Effect.tapError(() => (triedCode ? event("sign_in_failed", user.id, nobody) : Effect.void)))
        const self = { id: user.id, kind: "password" } as const
        if (outdated) yield* users.setPassword(user.id, yield* passwords.hash(password), yield* clock.now)
        const signedIn = Effect.gen(function* () {
          if (factor.factor === "recovery_code") yield* event("recovery_code_used", user.id, self)
          const token = yield* tokens.issue(user.id, { secondFactor: factor.factor !== "none" })
          yield* event("sign_in", user.id, self, `session:${token.split("|")[0]}`)
          if (factor.factor !== "none") yield* signInMail(user.id, factor)
          return token
        })
        // a sign-in with a second factor writes its security mail with the session ([D96], [D97])
        if (factor.factor === "none") return { token: yield* signedIn, user }
        const token = yield* transaction(signedIn)
        yield* outbox.wake
        return { token, user }
      })

    const forgotPassword = (email: string) =>
      Effect.gen(function* () {
        // one statement for known and unknown addresses alike; only a known one gets a mail
        const now = yield* clock.now
        const issued = yield* transaction(
          Effect.gen(function* () {
            const issued = yield* mailTokens.issueResetFor(email, now)
            if (Option.isSome(issued)) {
              const owner = yield* users.findById(issued.value.userId)
              const locale = Option.match(owner, { onNone: () => "en" as const, onSome: (u) => u.locale })
              yield* securityMail("reset_password", issued.value.userId, resetMail(config.appUrl, email, issued.value.token, locale))
            }
            return issued
          })
        )
        if (Option.isSome(issued)) yield* outbox.wake
      })

    const resetPassword = (input: { readonly token: string; readonly email: string; readonly password: string }) =>
      Effect.gen(function* () {
        // the token first: a request that cannot reset costs no hash ([D23])
        if (Option.isNone(yield* mailTokens.peek(input.token, "reset_password", yield* clock.now, input.email))) {
          return yield* Effect.fail(invalidResetToken())
        }
        const passwordHash = yield* passwords.hash(input.password)
        const now = yield* clock.now
        yield* transaction(
          Effect.gen(function* () {
            const userId = yield* mailTokens.consume(input.token, "reset_password", now, input.email)
            if (Option.isNone(userId)) return yield* Effect.fail(invalidResetToken())
            yield* users.setPassword(userId.value, passwordHash, now)
            yield* mailTokens.invalidate(userId.value, "reset_password")
            // every session and every API key, with a mail saying so ([D114])
            yield* revocations.afterReset(userId.value)
            // configs and credentials handed out before the reset stop working ([D23], [D91])
            yield* vpnAccess.revokeAll(userId.value)
            return userId.value
          })
        ).pipe(Effect.tap((userId) => event("password_reset", userId, { id: null, kind: "none" })))
        yield* outbox.wake
      })

    const verifyEmail = (token: string) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        // the user verified, whose language the HTML page speaks ([D120])
        return yield* transaction(
          Effect.gen(function* () {
            const userId = yield* mailTokens.consume(token, "verify_email", now)
            if (Option.isNone(userId)) return yield* Effect.fail(invalidVerifyToken())
            yield* users.markVerified(userId.value, now)
            return userId.value
          })
        )
      })

    const resendVerification = (caller: Principal) =>
      Effect.gen(function* () {
        const user = yield* existing(caller.userId)
        if (user.email_verified_at !== null) return "already-verified" as const
        const now = yield* clock.now
        yield* transaction(
          Effect.gen(function* () {
            yield* mailTokens.invalidate(user.id, "verify_email")
            const token = yield* mailTokens.issue(user.id, "verify_email", now)
            yield* securityMail("verify_email", user.id, verificationMail(config.appUrl, user, token, user.locale))
          })
        )
        yield* outbox.wake
        return "sent" as const
      })

    const updateProfile = (
      caller: Principal,
      changes: { readonly name?: string | undefined; readonly email?: string | undefined; readonly locale?: Locale | undefined }
    ) =>
      Effect.gen(function* () {
        // the e-mail leads to the password reset: a key never changes it ([D114])
        if (caller.kind === "api_key" && changes.email !== undefined) return yield* Effect.fail(new Forbidden())
        const now = yield* clock.now
        const before = yield* existing(caller.userId)
        const newEmail = changes.email
        const { emailChanged, updated } = yield* transaction(
          Effect.gen(function* () {
            // one user's e-mail changes in order, each counted against the limits of [D117]
            const current: UserRecord =
              newEmail !== undefined && newEmail !== before.email ? yield* Effect.flatMap(users.lock(caller.userId), orNotFound) : before
            const emailChanged = newEmail !== undefined && newEmail !== current.email
            if (emailChanged) yield* emailChanges.admit(caller.userId, newEmail)
            const updated = yield* Effect.flatMap(users.updateProfile(caller.userId, { ...changes, now }), orNotFound)
            if (!emailChanged) return { emailChanged, updated }
            // the old address's links must not verify the new one
            yield* mailTokens.invalidate(caller.userId, "verify_email")
            const verifyToken = yield* mailTokens.issue(caller.userId, "verify_email", now)
            yield* securityMail("verify_email", caller.userId, verificationMail(config.appUrl, updated, verifyToken, updated.locale))
            yield* securityMail("email_changed", caller.userId, emailChangedMail(current, updated.email, updated.locale))
            return { emailChanged, updated }
          })
        ).pipe(Effect.catchTag("EmailTaken", () => Effect.fail(emailTaken())))
        if (emailChanged) {
          yield* event("email_changed", caller.userId, byCaller(caller))
          yield* outbox.wake
        }
        return updated
      })

    const changePassword = (caller: Principal, current: string, password: string) =>
      Effect.gen(function* () {
        const user = yield* existing(caller.userId)
        yield* checkPassword(user, current, "current_password")
        const passwordHash = yield* passwords.hash(password)
        const now = yield* clock.now
        yield* transaction(
          Effect.gen(function* () {
            yield* users.setPassword(user.id, passwordHash, now)
            yield* mailTokens.invalidate(user.id, "reset_password")
            // every other session and every API key, with a mail saying so ([D114])
            yield* revocations.afterPasswordChange(caller)
          })
        )
        yield* event("password_changed", user.id, byCaller(caller))
        yield* outbox.wake
      })

    const deleteAccount = (caller: Principal, password: string) =>
      Effect.gen(function* () {
        const user = yield* existing(caller.userId)
        yield* checkPassword(user, password, "password")
        // one transaction ([D25]): the schema cascades to tokens, mail tokens, settings, tickets and
        // replies, services with their usage, VPN peers and credentials; invoices are detached
        yield* transaction(
          Effect.gen(function* () {
            yield* Effect.flatMap(users.lock(user.id), orNotFound)
            yield* users.delete(user.id)
          })
        )
      })

    const listUsers = (query: { readonly email?: string | undefined; readonly page: number }) =>
      Effect.map(users.list({ email: query.email, limit: ADMIN_PAGE_SIZE, offset: (query.page - 1) * ADMIN_PAGE_SIZE }), ({ rows, total }) =>
        makePage({
          rows,
          total,
          page: query.page,
          perPage: ADMIN_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/users`,
          query: [["email", query.email === undefined || query.email === "" ? undefined : query.email]]
        })
      )

    /**
     * Status and role by an admin ([D70]). The last active admin is never demoted or disabled
     * ([D21]): the active admins are locked first, so two admins demoting each other leave one.
     */
    const updateUser = (id: UserId, changes: { readonly status?: number | undefined; readonly role?: Role | undefined }) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        return yield* transaction(
          Effect.gen(function* () {
            const demotes = changes.role === "user" || changes.status === 0
            if (demotes) {
              const admins = yield* users.lockActiveAdmins
              if (admins.length === 1 && admins[0] === id) {
                const errors: Record<string, Array<string>> = {}
                if (changes.role === "user") errors["role"] = [LAST_ADMIN]
                if (changes.status === 0) errors["status"] = [LAST_ADMIN]
                return yield* Effect.fail(new ValidationError({ errors }))
              }
            }
            const user = yield* Effect.flatMap(users.setAdminFields(id, { ...changes, now }), orNotFound)
            // a disabled user's VPN access stops at once, and comes back when re-enabled ([D21], [D91])
            if (changes.status !== undefined) yield* vpnAccess.setUserEnabled(id, changes.status === 1)
            return user
          })
        )
      })

    return {
      register,
      login,
      logout: (caller: Principal) => tokens.revoke(caller.tokenId),
      /** every session, the caller's too; the API keys stay ([D114]) */
      logoutAll: (caller: Principal) => transaction(revocations.signOutEverywhere(caller)).pipe(Effect.zipRight(outbox.wake)),
      forgotPassword,
      resetPassword,
      verifyEmail,
      resendVerification,
      user: (caller: Principal): Effect.Effect<UserRecord, NotFound> => existing(caller.userId),
      /** the language of a user ([D120]), if there is such a user */
      localeOf: (userId: UserId): Effect.Effect<Option.Option<Locale>> =>
        Effect.map(
          users.findById(userId),
          Option.map((u) => u.locale)
        ),
      /** the language of the account of an e-mail ([D120]), if there is one */
      localeOfEmail: (email: string): Effect.Effect<Option.Option<Locale>> =>
        Effect.map(
          users.findByEmail(email),
          Option.map((u) => u.locale)
        ),
      updateProfile,
      changePassword,
      settings: (caller: Principal) => users.settings(caller.userId),
      updateSettings: (
        caller: Principal,
        changes: { readonly email_notifications?: boolean | undefined; readonly telegram_notifications?: boolean | undefined }
      ) =>
        Effect.flatMap(clock.now, (now) =>
          users.setSettings(caller.userId, { email: changes.email_notifications, telegram: changes.telegram_notifications }, now)
        ).pipe(Effect.zipRight(users.settings(caller.userId))),
      deleteAccount,
      listUsers,
      updateUser,
      sessions: tokens.sessions,
      /** one of the caller's sessions ends (404 for another user's, [D99]) */
      revokeSession: (caller: Principal, id: number) =>
        Effect.gen(function* () {
          if (!(yield* tokens.revokeSession(caller.userId, id))) return yield* Effect.fail(new NotFound())
          yield* event("session_revoked", caller.userId, byCaller(caller), `session:${id}`)
        })
    } as const
  }),
  dependencies: [
    Users.Default,
    MailTokens.Default,
    Passwords.Default,
    Tokens.Default,
    TwoFactor.Default,
    AuditLog.Default,
    Outbox.Default,
    Notifications.Default,
    Revocations.Default,
    EmailChanges.Default
  ]
}) {}
