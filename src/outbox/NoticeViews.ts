import { formatDay, formatMoment, formatMoney, formatNumber } from "../platform/i18n/Format.ts"
import type { Locale } from "../platform/i18n/Locale.ts"
import { type Catalogue, plural } from "../platform/i18n/Messages.ts"
import { mailTime, type NotificationKind, type SecurityKind } from "./Templates.ts"
import type { UserId } from "../platform/Ids.ts"

/**
 * What each notice of [D96] (and each security mail) is told, as facts rather than text: moments
 * as `Date`, money as the API's decimal string with its currency, counts as numbers, choices as
 * codes. The outbox writes them in the recipient's language ([D120]) when it renders the message;
 * a caller never formats a date or writes an English word into a view.
 */
export interface ExpiryView {
  readonly service_id: number
  readonly plan_name: string
  readonly expires_at: Date
}

export interface QuotaView {
  readonly service_id: number
  readonly plan_name: string
  /** used, in GB with two decimals (`8.50`) */
  readonly used_gb: string
  readonly limit_gb: number
  readonly percent: number
  /** the period's label ([D95]): `2026-03` (a calendar month) or `2026-03-10` */
  readonly period_start: string
  /** the next period's first day, `YYYY-MM-DD`; null: the quota never resets */
  readonly reset_date: string | null
}

/**
 * [D124] why a renewal attempt failed, as a code each locale words ([D120]); a processor's own
 * text is never shown. `card_declined`: the bank declined the saved card; `charge_failed`: the
 * charge failed another way (the processor unreachable, an authentication asked for);
 * `no_saved_card`: the balance did not cover it and no card is kept.
 */
export type RenewalFailure = "card_declined" | "charge_failed" | "no_saved_card"

export interface RenewalFailedView {
  readonly invoice_uuid: string
  readonly amount: string
  readonly currency: string
  readonly service_id: number
  readonly reason: RenewalFailure
  /** the card charged (`card_declined`, `charge_failed`); null with `no_saved_card` */
  readonly card: { readonly brand: string; readonly last4: string } | null
  /** this attempt's number, from 1 */
  readonly attempt: number
  readonly grace_until: Date
  /** the next retry; null: none left */
  readonly next_attempt_at: Date | null
  /** the last attempt failed: the invoice is cancelled and the service expired */
  readonly final: boolean
}

export interface NoticeViews {
  readonly "expiry-3d": ExpiryView
  readonly "expiry-1d": ExpiryView
  readonly expired: ExpiryView
  readonly "quota-80": QuotaView
  readonly "quota-100": QuotaView
  readonly "renewal-invoice": {
    readonly invoice_uuid: string
    readonly amount: string
    readonly currency: string
    readonly due_date: Date
    readonly service_id: number
    readonly expires_at: Date
  }
  readonly "renewal-failed": RenewalFailedView
  readonly "payment-received": {
    readonly invoice_uuid: string
    readonly amount: string
    readonly currency: string
    /** [D109]: what the balance paid; null when it paid nothing */
    readonly balance_applied: string | null
    readonly paid_at: Date
    readonly service_id: number | null
    readonly period_start: Date | null
    readonly period_end: Date | null
  }
  readonly "ticket-reply": {
    readonly ticket_id: number
    readonly ticket_subject: string
    readonly message: string
  }
  readonly "refund-issued": {
    readonly invoice_uuid: string
    readonly credit_note_id: number
    readonly amount: string
    readonly currency: string
    /** where the money went: the balance, or back through the invoice's gateway */
    readonly refunded_to: "balance" | "gateway"
    readonly gateway: string | null
    readonly reason: string
  }
  readonly "service-cancelled": {
    readonly service_id: number
    readonly plan_name: string
    readonly at_period_end: boolean
    readonly ends_at: Date
  }
}

export interface SignInView {
  readonly factor: "otp" | "recovery_code"
  readonly signed_in_at: Date
  /** the client's address and user agent; null: not known */
  readonly ip: string | null
  readonly user_agent: string | null
  /** recovery codes left after this sign-in (a recovery code was used); null otherwise */
  readonly recovery_codes_left: number | null
}

export interface RevokedView {
  readonly at: Date
  readonly ip: string | null
  /** sessions revoked */
  readonly sessions: number
  /** API keys revoked (kept, for `signed-out-everywhere`) */
  readonly keys: number
}

export interface SecurityViews {
  readonly "sign-in-2fa": SignInView
  readonly "sign-in-telegram-2fa": SignInView
  readonly "api-key-created": {
    readonly key_id: number
    readonly key_name: string
    readonly scopes: ReadonlyArray<string>
    readonly expires_at: Date | null
    readonly created_at: Date
    readonly ip: string | null
  }
  readonly "password-changed": RevokedView
  readonly "password-reset": RevokedView
  readonly "signed-out-everywhere": RevokedView
}

/** the view of a notice kind (a kind without one here fails the type check) */
export type NoticeView<K extends NotificationKind> = NoticeViews[K]
export type SecurityView<K extends SecurityKind> = SecurityViews[K]

/** a notice to write: its kind and that kind's view, checked together */
export type NoticeInput = {
  readonly [K in NotificationKind]: {
    readonly userId: UserId
    readonly kind: K
    readonly dedupeKey: string
    readonly view: NoticeView<K>
  }
}[NotificationKind]

export type SecurityInput = {
  readonly [K in SecurityKind]: { readonly userId: UserId; readonly kind: K; readonly view: SecurityView<K> }
}[SecurityKind]

/**
 * How a locale writes the facts of a view ([D120]). English keeps the forms these messages always
 * had (ISO moments in the notices, `2026-03-10 12:00:00 UTC` in the security mail and the
 * cancellation notice, `12.30 EUR`); the other locales use the Intl forms of `platform/i18n/Format`.
 */
export interface Shown {
  readonly locale: Locale
  /** a moment in a notice: ISO in English */
  readonly moment: (at: Date) => string
  /** a moment to the second (security mail, cancellation): `2026-03-10 12:00:00 UTC` in English */
  readonly stamp: (at: Date) => string
  /** a day (`YYYY-MM-DD`) or a month (`YYYY-MM`: its first day); as given in English */
  readonly day: (label: string) => string
  readonly money: (amount: string, currency: string) => string
  /** a number (given as a number or a decimal string) */
  readonly number: (value: number | string) => string
}

const DAY = /^(\d{4})-(\d{2})(?:-(\d{2}))?$/

export const shownIn = (locale: Locale): Shown =>
  locale === "en"
    ? {
        locale,
        moment: (at) => at.toISOString(),
        stamp: mailTime,
        day: (label) => label,
        money: (amount, currency) => formatMoney("en", amount, currency),
        number: (value) => String(value)
      }
    : {
        locale,
        moment: (at) => formatMoment(locale, at),
        stamp: (at) => formatMoment(locale, at, { seconds: true }),
        day: (label) => {
          const match = DAY.exec(label)
          return match === null ? label : formatDay(locale, new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3] ?? "1"))))
        },
        money: (amount, currency) => formatMoney(locale, amount, currency),
        number: (value) => {
          const n = typeof value === "number" ? value : Number(value)
          return Number.isFinite(n) ? formatNumber(locale, n) : String(value)
        }
      }

/** the second factor of a sign-in, in words */
export const factorText = (m: Catalogue, factor: SignInView["factor"]) =>
  factor === "otp" ? m.mail.sign_in_2fa.factor_otp : m.mail.sign_in_2fa.factor_recovery_code

/** where a refund went, in words */
export const refundedToText = (m: Catalogue, view: NoticeViews["refund-issued"]) =>
  view.refunded_to === "balance" ? m.mail.refund_issued.to_balance : fillPlain(m.mail.refund_issued.to_gateway, { gateway: view.gateway ?? "" })

/** why a renewal failed, in words (the card as `visa ending 4242`) */
export const renewalFailureText = (m: Catalogue, view: RenewalFailedView) =>
  fillPlain(m.mail.renewal_failed.reason[view.reason], { brand: view.card?.brand ?? "", last_four: view.card?.last4 ?? "" })

/** `3 sessions`, `1 key`, in the locale's plural forms */
export const counted = (m: Catalogue, shown: Shown, what: "sessions" | "keys", n: number) => plural(shown.locale, m.mail.count[what], n, shown.number(n))

/**
 * A catalogue message with its `{{placeholders}}` filled, nothing escaped. A placeholder without a
 * value stays visible as `{{name}}` (never an empty gap): the tests look for it. A value ending in
 * a full stop (`1 марта 2026 г.`) before the sentence's own full stop gives one full stop.
 */
export const fillPlain = (template: string, values: Readonly<Record<string, string | number>>): string =>
  template.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, name: string, offset: number) => {
    const value = values[name]
    if (value === undefined) return whole
    const text = String(value)
    return template[offset + whole.length] === "." && text.endsWith(".") ? text.slice(0, -1) : text
  })

/** after a label: `: `, and the full-width colon in Chinese */
export const colon = (locale: Locale) => (locale === "zh" ? "：" : ": ")

/** an address or user agent, or the locale's word for one not known */
export const orUnknown = (m: Catalogue, value: string | null) => value ?? m.mail.label.unknown

/**
 * Plain text in a right-to-left locale: each line holding Persian text starts with a right-to-left
 * mark, so a plain-text reader lays it out right to left even when it begins with a Latin name or
 * number. Lines of Latin text only (links) are left as they are.
 */
export const rtlLines = (locale: Locale, text: string): string =>
  locale !== "fa"
    ? text
    : text
        .split("\n")
        .map((line) => (/[\u0600-\u06ff]/.test(line) ? `\u200f${line}` : line))
        .join("\n")

/** between two sentences: a space, none in Chinese */
export const sentenceGap = (locale: Locale) => (locale === "zh" ? "" : " ")
