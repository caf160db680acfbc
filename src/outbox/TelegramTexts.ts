import type { Locale } from "../platform/i18n/Locale.ts"
import { type Catalogue, messagesOf } from "../platform/i18n/Messages.ts"
import {
  type ExpiryView,
  fillPlain,
  type NoticeView,
  type NoticeViews,
  type QuotaView,
  refundedToText,
  renewalFailureText,
  rtlLines,
  sentenceGap,
  type Shown,
  shownIn
} from "./NoticeViews.ts"
import type { NotificationKind } from "./Templates.ts"

/**
 * The notices of [D96] and [D124] as Telegram messages ([D125]): plain text (no parse mode, so
 * nothing needs escaping), short, with the link into the app, in the user's language ([D120]):
 * the sentences are the catalogues' `telegram` section (`platform/i18n/messages`), the facts
 * written as the locale writes them (English keeps the forms these messages always had).
 */

type Text<K extends NotificationKind> = Write<NoticeViews[K]>
type Write<V> = (view: V, shown: Shown, m: Catalogue, appUrl: string) => string

const expiry =
  (pick: (t: Catalogue["telegram"]) => string): Write<ExpiryView> =>
  (v, s, m, appUrl) =>
    `${fillPlain(pick(m.telegram), { plan_name: v.plan_name, service_id: v.service_id, expires_at: s.moment(v.expires_at) })}\n${appUrl}`

const quota =
  (pick: (t: Catalogue["telegram"]) => string): Write<QuotaView> =>
  (v, s, m, appUrl) => {
    const used = fillPlain(pick(m.telegram), {
      plan_name: v.plan_name,
      service_id: v.service_id,
      used_gb: s.number(v.used_gb),
      limit_gb: s.number(v.limit_gb),
      percent: s.number(v.percent)
    })
    const resets = v.reset_date === null ? "" : `${sentenceGap(s.locale)}${fillPlain(m.mail.quota_resets, { reset_date: s.day(v.reset_date) })}`
    return `${used}${resets}\n${appUrl}`
  }

const TEXTS: { readonly [K in NotificationKind]: Text<K> } = {
  "expiry-3d": expiry((t) => t.expiry_3d),
  "expiry-1d": expiry((t) => t.expiry_1d),
  expired: expiry((t) => t.expired),
  "quota-80": quota((t) => t.quota_80),
  "quota-100": quota((t) => t.quota_100),
  "renewal-invoice": (v, s, m, appUrl) =>
    `${fillPlain(m.telegram.renewal_invoice, {
      invoice_uuid: v.invoice_uuid,
      service_id: v.service_id,
      amount: s.money(v.amount, v.currency),
      due_date: s.moment(v.due_date)
    })}\n${appUrl}/invoices/${v.invoice_uuid}`,
  "renewal-failed": (v, s, m, appUrl) => {
    const link = `\n${appUrl}/invoices/${v.invoice_uuid}`
    const amount = s.money(v.amount, v.currency)
    if (v.final) return `${fillPlain(m.telegram.renewal_failed_final, { service_id: v.service_id, invoice_uuid: v.invoice_uuid, amount })}${link}`
    const gap = sentenceGap(s.locale)
    const failed = fillPlain(m.telegram.renewal_failed, {
      service_id: v.service_id,
      reason: renewalFailureText(m, v),
      amount,
      grace_until: s.moment(v.grace_until)
    })
    const next = v.next_attempt_at === null ? "" : `${gap}${fillPlain(m.telegram.renewal_failed_next, { next_attempt_at: s.moment(v.next_attempt_at) })}`
    return `${failed}${next}${gap}${m.telegram.renewal_failed_pay}${link}`
  },
  "payment-received": (v, s, m, appUrl) => {
    const paid = fillPlain(m.telegram.payment_received, { invoice_uuid: v.invoice_uuid, amount: s.money(v.amount, v.currency) })
    const period =
      v.service_id === null || v.period_start === null || v.period_end === null
        ? ""
        : `${sentenceGap(s.locale)}${fillPlain(m.telegram.payment_received_service, {
            service_id: v.service_id,
            period_start: s.moment(v.period_start),
            period_end: s.moment(v.period_end)
          })}`
    return `${paid}${period}\n${appUrl}/invoices/${v.invoice_uuid}`
  },
  "ticket-reply": (v, _s, m, appUrl) =>
    `${fillPlain(m.telegram.ticket_reply, { ticket_id: v.ticket_id, ticket_subject: v.ticket_subject })}\n\n${v.message}\n\n${appUrl}`,
  "refund-issued": (v, s, m, appUrl) =>
    `${fillPlain(m.telegram.refund_issued, {
      amount: s.money(v.amount, v.currency),
      invoice_uuid: v.invoice_uuid,
      refunded_to: refundedToText(m, v)
    })}\n${appUrl}/invoices/${v.invoice_uuid}`,
  "service-cancelled": (v, s, m, appUrl) =>
    `${fillPlain(v.at_period_end ? m.telegram.service_cancelled_at_period_end : m.telegram.service_cancelled_now, {
      service_id: v.service_id,
      plan_name: v.plan_name,
      ends_at: s.stamp(v.ends_at)
    })}\n${appUrl}`
}

/** the bot's own answers in a chat ([D125]) */
export type BotText = "linked" | "already-linked" | "linked-elsewhere" | "invalid-code" | "private-only" | "welcome"

const BOT_KEYS = {
  linked: "linked",
  "already-linked": "already_linked",
  "linked-elsewhere": "linked_elsewhere",
  "invalid-code": "invalid_code",
  "private-only": "private_only",
  welcome: "welcome"
} as const satisfies Record<BotText, keyof Catalogue["telegram"]["bot"]>

/** Telegram caps a message at 4096 characters */
const MAX_TEXT = 4096

const fit = (text: string) => ([...text].length <= MAX_TEXT ? text : `${[...text].slice(0, MAX_TEXT - 1).join("")}…`)

/** A notice as a Telegram message in `locale`, linking into the app at `appUrl`. */
export const telegramText = <K extends NotificationKind>(kind: K, view: NoticeView<K>, locale: Locale, appUrl: string): string =>
  fit(rtlLines(locale, TEXTS[kind](view, shownIn(locale), messagesOf(locale), appUrl)))

/** One of the bot's answers, in `locale`. */
export const botText = (text: BotText, view: Readonly<Record<string, string>>, locale: Locale): string =>
  fit(rtlLines(locale, fillPlain(messagesOf(locale).telegram.bot[BOT_KEYS[text]], view)))
