import Mustache from "mustache"
import type { NotificationKind, View } from "./Templates.ts"

/**
 * The notices of [D96] and [D124] as Telegram messages ([D125]): plain text (no parse mode, so
 * nothing needs escaping), short, with the link into the app. One catalogue per locale ([D120]).
 *
 * LOCALE HOOK ([D120]): only `en` is written here. When users carry `locale`, the other three
 * catalogues (`ru`, `fa`, `zh`) go beside it with the same keys, and `telegramText` is called with
 * the user's locale (`Recipient.locale`); a locale or a kind without a text falls back to English,
 * and a kind without any Telegram text to the mail's subject and plain text.
 */
export const TELEGRAM_TEXTS: Readonly<Record<string, Partial<Record<NotificationKind, string>>>> = {
  en: {
    "expiry-3d": "Your {{plan_name}} service #{{service_id}} expires on {{expires_at}}, within 3 days. Auto-renew is off: renew it to keep your VPN access.\n{{app_url}}",
    "expiry-1d": "Your {{plan_name}} service #{{service_id}} expires on {{expires_at}}, within a day. Auto-renew is off: renew it now to keep your VPN access.\n{{app_url}}",
    "expired": "Your {{plan_name}} service #{{service_id}} expired on {{expires_at}}. Its VPN access has stopped.\n{{app_url}}",
    "quota-80": "Your {{plan_name}} service #{{service_id}} has used {{used_gb}} GB of its {{limit_gb}} GB ({{percent}} %) this period.{{#reset_date}} The quota resets on {{reset_date}}.{{/reset_date}}\n{{app_url}}",
    "quota-100": "Your {{plan_name}} service #{{service_id}} has used all {{limit_gb}} GB of this period: VPN traffic is paused.{{#reset_date}} The quota resets on {{reset_date}}.{{/reset_date}}\n{{app_url}}",
    "renewal-invoice": "Renewal invoice {{invoice_uuid}} for service #{{service_id}}: {{amount}} {{currency}}, due {{due_date}}.\n{{app_url}}/invoices/{{invoice_uuid}}",
    "renewal-failed": "{{#final}}The renewal of your service #{{service_id}} was not paid after the last retry: invoice {{invoice_uuid}} ({{amount}} {{currency}}) is cancelled and the service has expired.{{/final}}{{^final}}We could not collect the renewal of your service #{{service_id}} ({{reason}}): {{amount}} {{currency}}. Your VPN keeps working at a reduced speed until {{grace_until}}.{{#next_attempt_at}} We will try again on {{next_attempt_at}}.{{/next_attempt_at}} Pay it now to get full speed back:{{/final}}\n{{invoice_url}}",
    "payment-received": "Payment received, thank you: invoice {{invoice_uuid}}, {{amount}} {{currency}}.{{#service_id}} Service #{{service_id}}: {{period_start}} to {{period_end}}.{{/service_id}}\n{{app_url}}/invoices/{{invoice_uuid}}",
    "ticket-reply": "Support replied to your ticket #{{ticket_id}} \"{{ticket_subject}}\":\n\n{{message}}\n\n{{app_url}}",
    "refund-issued": "Refund of {{amount}} {{currency}} for invoice {{invoice_uuid}} ({{to_text}}).\n{{app_url}}/invoices/{{invoice_uuid}}",
    "service-cancelled": "{{#at_period_end}}Your service #{{service_id}} ({{plan_name}}) will not renew: it stays active until {{ends_at}}.{{/at_period_end}}{{^at_period_end}}Your service #{{service_id}} ({{plan_name}}) is cancelled: its VPN access stopped on {{ends_at}}.{{/at_period_end}}\n{{app_url}}"
  }
}

/** the bot's own answers in a chat ([D125]), per locale as above */
export const BOT_TEXTS: Readonly<Record<string, Readonly<Record<BotText, string>>>> = {
  en: {
    linked: "Done: this chat is now linked to your account {{email}}. Notices about your VPN service will come here. You can turn them off or unlink this chat in your account settings.",
    "already-linked": "This chat is already linked to your account {{email}}.",
    "linked-elsewhere": "This Telegram account is already linked to another account. Unlink it there first, then open a new link.",
    "invalid-code": "This link is invalid or has expired. Create a new one in your account settings: {{app_url}}",
    "private-only": "Open the link in a private chat with the bot.",
    welcome: "Hello! To get notices about your VPN service here, open \"Link Telegram\" in your account settings: {{app_url}}"
  }
}

export type BotText = "linked" | "already-linked" | "linked-elsewhere" | "invalid-code" | "private-only" | "welcome"

const asIs = (value: unknown) => String(value)

/** Telegram caps a message at 4096 characters */
const MAX_TEXT = 4096

const fit = (text: string) => ([...text].length <= MAX_TEXT ? text : `${[...text].slice(0, MAX_TEXT - 1).join("")}…`)

/** A notice as a Telegram message, in `locale` (English when there is no text in it); none: no Telegram text for the kind */
export const telegramText = (kind: NotificationKind, view: View, locale = "en"): string | undefined => {
  const template = TELEGRAM_TEXTS[locale]?.[kind] ?? TELEGRAM_TEXTS["en"]?.[kind]
  return template === undefined ? undefined : fit(Mustache.render(template, view, {}, { escape: asIs }))
}

/** One of the bot's answers, in `locale` (English when there is none in it). */
export const botText = (text: BotText, view: View, locale = "en"): string =>
  fit(Mustache.render((BOT_TEXTS[locale] ?? BOT_TEXTS["en"]!)[text], view, {}, { escape: asIs }))
