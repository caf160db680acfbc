import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { AuditLog } from "../../audit/AuditLog.ts"
import { Notifications } from "../../outbox/Notifications.ts"
import { Outbox } from "../../outbox/Outbox.ts"
import { botText, type BotText } from "../../outbox/TelegramTexts.ts"
import { AppClock } from "../../platform/Clock.ts"
import { AppConfig, type TelegramConfig } from "../../platform/Config.ts"
import { type Locale, negotiateLocale } from "../../platform/i18n/Locale.ts"
import { constantTimeEqual, randomToken, sha256Hex } from "../../platform/Crypto.ts"
import { InvalidSignature, ServiceUnavailable, ValidationError } from "../../platform/Errors.ts"
import { requestOrigin } from "../../platform/RequestOrigin.ts"
import { TelegramBot, type TelegramBotApi } from "../../platform/Telegram.ts"
import type { Principal, UserRecord } from "../Domain.ts"
import { AccountDisabled } from "../Errors.ts"
import { Tokens } from "../Tokens.ts"
import { TwoFactor } from "../TwoFactor.ts"
import { Users } from "../Users.ts"
import { LINK_CODE_TTL_MS, SIGN_IN_FUTURE_SKEW_S, SIGN_IN_MAX_AGE_S, TelegramDisabled, TelegramLoginInvalid, TelegramNotLinked } from "./Domain.ts"
import { TelegramLinks } from "./Links.ts"
import { initDataSigned, parseInitData, type WidgetField, widgetSigned } from "./Signatures.ts"
import type { UserId } from "../../platform/Ids.ts"

/** The part of a Bot API update the bot reads ([D125]); the rest is ignored. */
const Update = Schema.Struct({
  update_id: Schema.Int,
  message: Schema.optional(
    Schema.Struct({
      text: Schema.optional(Schema.String),
      chat: Schema.Struct({ id: Schema.Int, type: Schema.String }),
      from: Schema.optional(
        Schema.Struct({
          id: Schema.Int,
          username: Schema.optional(Schema.String),
          language_code: Schema.optional(Schema.String)
        })
      )
    })
  )
})
const decodeUpdate = Schema.decodeUnknownOption(Update)

/** `/start`, `/start <code>`, `/start@bot <code>` */
const START = /^\/start(?:@[A-Za-z0-9_]+)?(?:\s+(\S+))?\s*$/

/**
 * [D120]: before the bot knows whose chat it is, it answers in the chat's Telegram language when
 * that is one of ours (`ru`, `pt-br` → English), else English; once it knows, in the user's locale.
 */
const chatLocale = (code: string | undefined): Locale => negotiateLocale(code === undefined || code === "" ? undefined : code)

/** a Telegram user id (the widget's `id`, `user.id` of initData) as text; none when it is not one */
const telegramId = (value: unknown): string | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0
    ? String(value)
    : typeof value === "string" && /^[1-9][0-9]{0,19}$/.test(value)
      ? value
      : undefined

/** The fields of the Login Widget as the payload decoded them ([D125]), each as it was sent. */
export interface WidgetLogin {
  readonly fields: Partial<Record<WidgetField, string>>
  readonly hash: string
  readonly otp?: string | undefined
  readonly recovery_code?: string | undefined
}

/**
 * Telegram in the accounts room ([D125]): linking a chat by a one-time `t.me` link and the bot's
 * webhook, unlinking, and signing in with the Login Widget or a Mini App's `initData`. Everything
 * answers 404 while Telegram is not configured, but a user's link can always be read and removed.
 */
export class TelegramAccounts extends Effect.Service<TelegramAccounts>()("accounts/TelegramAccounts", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const bot = yield* TelegramBot
    const links = yield* TelegramLinks
    const users = yield* Users
    const tokens = yield* Tokens
    const twoFactor = yield* TwoFactor
    const audit = yield* AuditLog
    const outbox = yield* Outbox
    const notifications = yield* Notifications

    const setup = Option.flatMap(Option.flatten(Option.fromNullable(config.telegram)), (telegram) =>
      Option.map(bot, (api): { readonly telegram: TelegramConfig; readonly api: TelegramBotApi } => ({ telegram, api }))
    )
    const enabled = Option.match(setup, {
      onNone: () => Effect.fail(new TelegramDisabled()),
      onSome: (s) => Effect.succeed(s)
    })
    const transaction = <A, E>(effect: Effect.Effect<A, E>) => sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))

    const event = (
      action: "telegram_linked" | "telegram_unlinked" | "sign_in" | "sign_in_failed" | "recovery_code_used",
      userId: UserId | null,
      kind: "token" | "api_key" | "telegram" | "none",
      resource?: string
    ) =>
      audit.record({
        action,
        actorId: kind === "none" ? null : userId,
        actorKind: kind,
        resource: resource ?? (userId === null ? null : `user:${userId}`),
        subjectId: userId
      })

    // ---- linking ----------------------------------------------------------------------------------

    const createLink = (caller: Principal) =>
      Effect.gen(function* () {
        const { api } = yield* enabled
        const username = yield* api.username.pipe(
          Effect.tapError((e) => Effect.logWarning("telegram: getMe failed", { reason: e.reason })),
          Effect.mapError(() => new ServiceUnavailable())
        )
        const code = randomToken(32)
        const now = yield* clock.now
        const expiresAt = new Date(now.getTime() + LINK_CODE_TTL_MS)
        yield* transaction(links.issueCode({ hash: sha256Hex(code), userId: caller.userId, expiresAt, now }))
        return { url: `https://t.me/${username}?start=${code}`, expires_at: expiresAt }
      })

    const status = (caller: Principal) =>
      Effect.map(
        links.ofUser(caller.userId),
        Option.match({
          onNone: () => ({ linked: false, username: null, linked_at: null }),
          onSome: (link) => ({ linked: true, username: link.username, linked_at: link.linked_at })
        })
      )

    const unlink = (caller: Principal) =>
      Effect.gen(function* () {
        if (yield* links.unlinkUser(caller.userId)) yield* event("telegram_unlinked", caller.userId, caller.kind)
      })

    /**
     * An update from the Bot API: checked by its secret token first (401, nothing read or changed),
     * then `/start <code>` in a private chat links that chat to the code's user, and the bot answers
     * in the chat through the outbox, once per update (Telegram sends an update again until it is
     * answered 200).
     */
    const webhook = (raw: string, secretToken: string | undefined) =>
      Effect.gen(function* () {
        const { telegram } = yield* enabled
        if (secretToken === undefined || !constantTimeEqual(secretToken, Redacted.value(telegram.webhookSecret))) {
          return yield* Effect.fail(new InvalidSignature())
        }
        let json: unknown
        try {
          json = JSON.parse(raw)
        } catch {
          return yield* Effect.fail(ValidationError.field("body", "The body must be valid JSON."))
        }
        const update = decodeUpdate(json)
        if (Option.isNone(update)) return { update_id: null, handled: false }
        const { message, update_id } = update.value
        const start = message?.text === undefined ? null : START.exec(message.text.trim())
        if (message === undefined || start === null) return { update_id, handled: false }
        const chatId = String(message.chat.id)
        const locale = chatLocale(message.from?.language_code)
        const reply = (text: BotText, view: Record<string, string> = {}, inLocale: Locale = locale) =>
          outbox.enqueueTelegram({
            kind: `bot-${text}`,
            dedupeKey: `telegram-update:${update_id}`,
            chatId,
            text: botText(text, { app_url: config.appUrl, ...view }, inLocale)
          })
        const code = start[1]
        yield* transaction(
          Effect.gen(function* () {
            if (message.chat.type !== "private" || message.from === undefined) return yield* reply("private-only")
            if (code === undefined) return yield* reply("welcome")
            yield* links.lockChat(chatId)
            const now = yield* clock.now
            const found = yield* links.code(sha256Hex(code))
            if (Option.isNone(found) || found.value.expires_at.getTime() <= now.getTime()) return yield* reply("invalid-code")
            const userId = found.value.user_id
            const current = yield* links.ofChat(chatId)
            // a chat stays with the user it is linked to; the code stays usable from another chat
            if (Option.isSome(current) && current.value.user_id !== userId) return yield* reply("linked-elsewhere")
            const user = yield* Effect.flatMap(users.findById(userId), Option.match({ onNone: () => Effect.die("code without user"), onSome: Effect.succeed }))
            yield* links.dropCodes(userId)
            // [D120]: the user is known now: the bot answers in the user's language
            if (Option.isSome(current)) return yield* reply("already-linked", { email: user.email }, user.locale)
            yield* links.link({ userId, telegramId: chatId, username: message.from.username ?? null, now })
            yield* event("telegram_linked", userId, "telegram", `telegram:${chatId}`)
            return yield* reply("linked", { email: user.email }, user.locale)
          })
        )
        yield* outbox.wake
        return { update_id, handled: true }
      })

    // ---- sign-in --------------------------------------------------------------------------------

    const invalid = Effect.zipRight(event("sign_in_failed", null, "none", undefined).pipe(Effect.ignore), Effect.fail(new TelegramLoginInvalid()))

    /**
     * Signed and fresh data of a Telegram account signs its linked user in, like login: the status,
     * the second factor ([D97]), a token, the audit log, and a security mail for a second factor.
     * The data set signs in once: its record is written with the token.
     */
    const signIn = (input: {
      readonly telegramId: string
      readonly authDate: number
      readonly digest: string
      readonly otp?: string | undefined
      readonly recovery_code?: string | undefined
    }) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const age = now.getTime() / 1000 - input.authDate
        if (!(age < SIGN_IN_MAX_AGE_S && age > -SIGN_IN_FUTURE_SKEW_S)) return yield* invalid
        if (yield* links.signInUsed(input.digest)) return yield* invalid
        const link = yield* links.ofChat(input.telegramId)
        if (Option.isNone(link)) return yield* Effect.fail(new TelegramNotLinked())
        const user: UserRecord = yield* Effect.flatMap(
          users.findById(link.value.user_id),
          Option.match({
            onNone: () => Effect.fail(new TelegramNotLinked()),
            onSome: Effect.succeed
          })
        )
        if (user.status !== 1) return yield* Effect.fail(new AccountDisabled())
        const triedCode = (input.otp ?? "").trim() !== "" || (input.recovery_code ?? "").trim() !== ""
        const factor = yield* twoFactor.signIn(user, input).pipe(Effect.tapError(() => (triedCode ? event("sign_in_failed", user.id, "none") : Effect.void)))
        const origin = yield* FiberRef.get(requestOrigin)
        const token = yield* transaction(
          Effect.gen(function* () {
            const fresh = yield* links.useSignIn({
              digest: input.digest,
              userId: user.id,
              expiresAt: new Date((input.authDate + SIGN_IN_MAX_AGE_S + SIGN_IN_FUTURE_SKEW_S) * 1000)
            })
            if (!fresh) return yield* Effect.fail(new TelegramLoginInvalid())
            if (factor.factor === "recovery_code") yield* event("recovery_code_used", user.id, "telegram")
            const token = yield* tokens.issue(user.id, { secondFactor: factor.factor !== "none" })
            yield* event("sign_in", user.id, "telegram", `session:${token.split("|")[0]}`)
            if (factor.factor !== "none") {
              yield* notifications.security({
                userId: user.id,
                kind: "sign-in-telegram-2fa",
                view: {
                  factor: factor.factor,
                  signed_in_at: now,
                  ip: origin.ip,
                  user_agent: origin.userAgent,
                  recovery_codes_left: factor.factor === "recovery_code" ? factor.left : null
                }
              })
            }
            return token
          })
        )
        if (factor.factor !== "none") yield* outbox.wake
        // the whole record: the answer's schema shows what each answer may (login's four fields, or
        // the session's user of [D119])
        return { token, user }
      })

    /** the Login Widget's fields ([D125]) */
    const signInWidget = (input: WidgetLogin) =>
      Effect.gen(function* () {
        const { telegram } = yield* enabled
        const id = input.fields.id
        const authDate = Number(input.fields.auth_date)
        if (id === undefined || !widgetSigned(Redacted.value(telegram.botToken), input.fields, input.hash)) return yield* invalid
        return yield* signIn({
          telegramId: id,
          authDate,
          digest: sha256Hex(`widget:${input.hash.toLowerCase()}`),
          otp: input.otp,
          recovery_code: input.recovery_code
        })
      })

    /** a Mini App's `initData` ([D125]) */
    const signInWebApp = (input: { readonly init_data: string; readonly otp?: string | undefined; readonly recovery_code?: string | undefined }) =>
      Effect.gen(function* () {
        const { telegram } = yield* enabled
        const pairs = parseInitData(input.init_data)
        if (pairs === undefined || !initDataSigned(Redacted.value(telegram.botToken), pairs)) return yield* invalid
        const authDate = pairs.get("auth_date") ?? ""
        let user: unknown
        try {
          user = JSON.parse(pairs.get("user") ?? "")
        } catch {
          user = undefined
        }
        const id = typeof user === "object" && user !== null ? telegramId((user as { readonly id?: unknown }).id) : undefined
        if (id === undefined || !/^[0-9]{1,12}$/.test(authDate)) return yield* invalid
        return yield* signIn({
          telegramId: id,
          authDate: Number(authDate),
          digest: sha256Hex(`webapp:${pairs.get("hash")!.toLowerCase()}`),
          otp: input.otp,
          recovery_code: input.recovery_code
        })
      })

    /** [D125]: whether the portal offers sign-in with Telegram, and the bot's public id */
    const signInConfig = Option.match(setup, {
      onNone: () => ({ enabled: false, bot_id: null }),
      onSome: ({ telegram }) => ({ enabled: true, bot_id: Number(Redacted.value(telegram.botToken).split(":")[0]) })
    })

    return {
      signInConfig,
      createLink,
      status,
      unlink,
      webhook,
      signInWidget,
      signInWebApp,
      /** expired link codes and sign-in records go (the jobs of [D80]) */
      purge: links.purge
    } as const
  }),
  dependencies: [
    TelegramLinks.Default,
    Users.Default,
    Tokens.Default,
    TwoFactor.Default,
    AuditLog.Default,
    Outbox.Default,
    Notifications.Default,
    TelegramBot.Live
  ]
}) {}
