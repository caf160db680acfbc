import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"
import { mapSliced } from "../platform/Slices.ts"
import { NoticeMetrics } from "./NoticeMetrics.ts"
import { Outbox } from "./Outbox.ts"
import { type Addressee, renderNotice, renderSecurityMail } from "./MailTexts.ts"
import type { NoticeInput, SecurityInput } from "./NoticeViews.ts"
import { Recipients, type Recipient } from "./Recipients.ts"
import { telegramText } from "./TelegramTexts.ts"

/**
 * The notification e-mails of [D96]: each governed by the user's `email_notifications` setting,
 * written to the outbox in the caller's transaction, at most once per occasion (`dedupeKey`, e.g.
 * `expiry-3d:<service>:<expires_at>`). `security` writes the security mail of [D96] that has a
 * template here (a sign-in with a second factor, an API key created): always sent, whatever the
 * setting. Who to write to comes through the `Recipients` port (accounts provides it).
 *
 * [D125]: a notice also goes to the user's linked Telegram chat unless `telegram_notifications` is
 * off, through the same outbox and in the same transaction (its own occasion: the mail's key with
 * `:telegram`), whatever `email_notifications` says.
 *
 * [D120]: every message is written in the recipient's `locale`, from the facts of its view (dates
 * as `Date`, money with its currency), when it is written to the outbox.
 */
export class Notifications extends Effect.Service<Notifications>()("outbox/Notifications", {
  effect: Effect.gen(function* () {
    const contacts = yield* Recipients
    const outbox = yield* Outbox
    const config = yield* AppConfig
    const noticeMetrics = yield* NoticeMetrics

    const localeOf = (contact: Recipient) => contact.locale ?? "en"
    const addressee = (contact: Recipient): Addressee => ({ name: contact.name, app_url: config.appUrl })
    const mailOf = (contact: Recipient, input: NoticeInput) => {
      const { html, subject, text } = renderNotice(input.kind, input.view, localeOf(contact), addressee(contact))
      return { to: contact.email, subject, text, html }
    }

    /** the notice as a Telegram message to the contact's chat, when it goes there ([D125]) */
    const telegramCopy = (contact: Recipient, input: NoticeInput) => {
      if (contact.telegramChatId === null || !contact.telegramNotifications) return []
      const text = telegramText(input.kind, input.view, localeOf(contact), config.appUrl)
      return [{ kind: input.kind, dedupeKey: `${input.dedupeKey}:telegram`, chatId: contact.telegramChatId, text }]
    }

    /**
     * Writes the notification unless the user turned notices off (or is gone); `true` when a new
     * message was written. Call it inside the transaction of what caused it, then `wake` after.
     */
    const notify = (input: NoticeInput): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const contact = yield* contacts.find(input.userId)
        if (Option.isNone(contact)) return false
        let written = false
        for (const message of telegramCopy(contact.value, input)) written = (yield* outbox.enqueueTelegram(message)) || written
        if (!contact.value.emailNotifications) return written
        const mailed = yield* outbox.enqueueMail({ kind: input.kind, dedupeKey: input.dedupeKey, mail: mailOf(contact.value, input) })
        if (mailed) noticeMetrics.written(input.kind)
        return mailed || written
      })

    /** many notifications in one go (the jobs' batches): one read of the contacts, one insert */
    const notifyMany = (inputs: ReadonlyArray<NoticeInput>): Effect.Effect<number> =>
      Effect.gen(function* () {
        if (inputs.length === 0) return 0
        const people = yield* contacts.findMany(inputs.map((i) => i.userId))
        // [D125]: the Telegram copies, one statement
        const chats = (yield* mapSliced(inputs, (input) => {
          const contact = people.get(input.userId)
          return contact === undefined ? [] : telegramCopy(contact, input)
        })).flat()
        let written = yield* outbox.enqueueTelegrams(chats)
        // rendered in slices of a few ms: a batch of 500 mails does not block the API (issue 27)
        const mails = (yield* mapSliced(inputs, (input) => {
          const contact = people.get(input.userId)
          if (contact === undefined || !contact.emailNotifications) return []
          return [{ kind: input.kind, dedupeKey: input.dedupeKey, mail: mailOf(contact, input) }]
        })).flat()
        // one statement per kind (the jobs' batches are of one kind): the figures count them by kind
        for (const kind of new Set(mails.map((m) => m.kind))) {
          const n = yield* outbox.enqueueMails(mails.filter((m) => m.kind === kind))
          noticeMetrics.written(kind, n)
          written += n
        }
        return written
      })

    /**
     * Writes a security mail ([D96]: always sent, `email_notifications` or not); each occasion is
     * its own (a random dedupe key). Call it inside the transaction of what caused it, then `wake`.
     */
    const security = (input: SecurityInput): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const contact = yield* contacts.find(input.userId)
        if (Option.isNone(contact)) return false
        const { html, subject, text } = renderSecurityMail(input.kind, input.view, localeOf(contact.value), addressee(contact.value))
        const written = yield* outbox.enqueueMail({
          kind: input.kind,
          dedupeKey: `${input.kind}:${input.userId}:${crypto.randomUUID()}`,
          mail: { to: contact.value.email, subject, text, html }
        })
        if (written) noticeMetrics.written(input.kind)
        return written
      })

    return { notify, notifyMany, security, wake: outbox.wake } as const
  }),
  dependencies: [Outbox.Default, NoticeMetrics.Default]
}) {}
