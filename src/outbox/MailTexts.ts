import type { Locale } from "../platform/i18n/Locale.ts"
import { type Catalogue, messagesOf } from "../platform/i18n/Messages.ts"
import {
  counted,
  type ExpiryView,
  factorText,
  fillPlain,
  type NoticeView,
  type NoticeViews,
  orUnknown,
  type QuotaView,
  refundedToText,
  renewalFailureText,
  type RevokedView,
  type SecurityView,
  type SecurityViews,
  shownIn,
  type SignInView
} from "./NoticeViews.ts"
export type { Addressee, Rendered } from "./MailLayout.ts"
import { ENGLISH_NOTICES, ENGLISH_SECURITY } from "./MailTextsEnglish.ts"
import { type Addressee, type Build, type Doc, type Localized, mailOf, type Rendered, type Block } from "./MailLayout.ts"
import { type NotificationKind, render, renderSecurity, type SecurityKind, type View } from "./Templates.ts"

/**
 * The notices and security mail of [D96] in the recipient's language ([D120]). English is the
 * templates of `Templates.ts`, word for word as they always read, given the facts of the view in
 * the forms English writes them. Russian, Persian and Chinese are written here from the
 * catalogues (`platform/i18n/messages`), with dates, numbers and money in the locale's forms and,
 * for Persian, the HTML part laid out right to left.
 */

// ---- the other locales: a message built from the catalogue's sentences -------------------------

type ExpiryTexts = Catalogue["mail"]["expiry_3d"] | Catalogue["mail"]["expired"]

const expiry =
  (pick: (m: Catalogue) => ExpiryTexts): Build<ExpiryView> =>
  (v, s, m, to) => {
    const t = pick(m)
    return {
      subject: t.subject,
      blocks: [
        {
          p: [
            {
              template: t.body,
              values: { plan_name: v.plan_name, service_id: v.service_id, expires_at: s.moment(v.expires_at) },
              strong: ["plan_name", "expires_at"]
            },
            ...("renew" in t ? [{ template: t.renew }] : [])
          ]
        },
        { link: t.link, href: to.app_url }
      ]
    }
  }

const quota =
  (pick: (m: Catalogue) => Catalogue["mail"]["quota_80"]): Build<QuotaView> =>
  (v, s, m, to) => {
    const t = pick(m)
    const values = {
      plan_name: v.plan_name,
      service_id: v.service_id,
      used_gb: s.number(v.used_gb),
      limit_gb: s.number(v.limit_gb),
      percent: s.number(v.percent),
      period_start: s.day(v.period_start)
    }
    return {
      subject: t.subject,
      blocks: [
        {
          p: [
            { template: t.body, values, strong: ["plan_name", "used_gb"] },
            ...(v.reset_date === null ? [] : [{ template: m.mail.quota_resets, values: { reset_date: s.day(v.reset_date) } }])
          ]
        },
        { link: t.link, href: to.app_url }
      ]
    }
  }

const invoiceLink = (to: Addressee, uuid: string) => `${to.app_url}/invoices/${uuid}`

const LOCALIZED_NOTICES: { readonly [K in NotificationKind]: Localized<NoticeViews, K> } = {
  "expiry-3d": expiry((m) => m.mail.expiry_3d),
  "expiry-1d": expiry((m) => m.mail.expiry_1d),
  expired: expiry((m) => m.mail.expired),
  "quota-80": quota((m) => m.mail.quota_80),
  "quota-100": quota((m) => m.mail.quota_100),
  "renewal-invoice": (v, s, m, to) => {
    const t = m.mail.renewal_invoice
    const amount = s.money(v.amount, v.currency)
    return {
      subject: fillPlain(t.subject, { invoice_uuid: v.invoice_uuid, amount }),
      blocks: [
        { p: [{ template: t.body, values: { service_id: v.service_id, expires_at: s.moment(v.expires_at) } }] },
        {
          table: [
            [m.mail.label.invoice, v.invoice_uuid],
            [m.mail.label.amount, amount],
            [m.mail.label.due_date, s.moment(v.due_date)]
          ]
        },
        { link: t.link, href: invoiceLink(to, v.invoice_uuid) }
      ]
    }
  },
  "renewal-failed": (v, s, m, to): Doc => {
    const t = m.mail.renewal_failed
    const amount = s.money(v.amount, v.currency)
    const invoice: Block = {
      table: [
        [m.mail.label.invoice, v.invoice_uuid],
        [m.mail.label.amount, amount]
      ]
    }
    if (v.final) {
      return {
        subject: t.subject_final,
        blocks: [
          { p: [{ template: t.body_final, values: { service_id: v.service_id } }] },
          invoice,
          { link: t.link_final, href: invoiceLink(to, v.invoice_uuid) }
        ]
      }
    }
    return {
      subject: fillPlain(t.subject, { amount }),
      blocks: [
        {
          p: [
            { template: t.body, values: { service_id: v.service_id, reason: renewalFailureText(m, v) } },
            { template: t.grace, values: { grace_until: s.moment(v.grace_until) }, strong: ["grace_until"] },
            ...(v.next_attempt_at === null ? [] : [{ template: t.next_attempt, values: { next_attempt_at: s.moment(v.next_attempt_at) } }])
          ]
        },
        invoice,
        { link: t.link, href: invoiceLink(to, v.invoice_uuid) }
      ]
    }
  },
  "payment-received": (v, s, m, to) => {
    const t = m.mail.payment_received
    const L = m.mail.label
    const service =
      v.service_id === null || v.period_start === null || v.period_end === null
        ? []
        : [
            [
              L.service,
              fillPlain(t.service_period, { service_id: v.service_id, period_start: s.moment(v.period_start), period_end: s.moment(v.period_end) })
            ] as const
          ]
    return {
      subject: fillPlain(t.subject, { invoice_uuid: v.invoice_uuid }),
      blocks: [
        { p: [{ template: t.body }] },
        {
          table: [
            [L.invoice, v.invoice_uuid],
            [L.amount, s.money(v.amount, v.currency)],
            ...(v.balance_applied === null ? [] : [[L.from_balance, s.money(v.balance_applied, v.currency)] as const]),
            [L.paid_at, s.moment(v.paid_at)],
            ...service
          ]
        },
        { link: t.link, href: invoiceLink(to, v.invoice_uuid) }
      ]
    }
  },
  "ticket-reply": (v, _s, m, to) => {
    const t = m.mail.ticket_reply
    const values = { ticket_id: v.ticket_id, ticket_subject: v.ticket_subject }
    return {
      subject: fillPlain(t.subject, values),
      blocks: [{ p: [{ template: t.body, values }] }, { quote: v.message }, { link: t.link, href: to.app_url }]
    }
  },
  "refund-issued": (v, s, m, to) => {
    const t = m.mail.refund_issued
    const L = m.mail.label
    const amount = s.money(v.amount, v.currency)
    return {
      subject: fillPlain(t.subject, { invoice_uuid: v.invoice_uuid }),
      blocks: [
        { p: [{ template: t.body, values: { amount, invoice_uuid: v.invoice_uuid } }] },
        {
          table: [
            [L.credit_note, `#${v.credit_note_id}`],
            [L.amount, amount],
            [L.refunded_to, refundedToText(m, v)],
            [L.reason, v.reason]
          ]
        },
        { link: t.link, href: invoiceLink(to, v.invoice_uuid) }
      ]
    }
  },
  "service-cancelled": (v, s, m, to) => {
    const t = m.mail.service_cancelled
    const values = { service_id: v.service_id, plan_name: v.plan_name, ends_at: s.stamp(v.ends_at) }
    return {
      subject: fillPlain(t.subject, values),
      blocks: [{ p: [{ template: v.at_period_end ? t.at_period_end : t.now, values, strong: ["ends_at"] }] }, { link: t.link, href: to.app_url }]
    }
  }
}

const signIn =
  (pick: (m: Catalogue) => { readonly body: string; readonly advice: string }): Build<SignInView> =>
  (v, s, m, to) => {
    const t = m.mail.sign_in_2fa
    const own = pick(m)
    const L = m.mail.label
    return {
      subject: t.subject,
      blocks: [
        { p: [{ template: own.body, values: { factor: factorText(m, v.factor) } }] },
        {
          table: [
            [L.when, s.stamp(v.signed_in_at)],
            [L.address, orUnknown(m, v.ip)],
            [L.user_agent, orUnknown(m, v.user_agent)]
          ]
        },
        ...(v.recovery_codes_left === null ? [] : [{ p: [{ template: t.recovery_left, values: { recovery_codes_left: s.number(v.recovery_codes_left) } }] }]),
        { p: [{ template: own.advice }] },
        { link: t.link, href: to.app_url }
      ]
    }
  }

type RevokedTexts = Catalogue["mail"]["password_changed"] | Catalogue["mail"]["signed_out_everywhere"]

const revoked =
  (pick: (m: Catalogue) => RevokedTexts): Build<RevokedView> =>
  (v, s, m, to) => {
    const t = pick(m)
    const counts = { sessions: counted(m, s, "sessions", v.sessions), keys: counted(m, s, "keys", v.keys) }
    return {
      subject: t.subject,
      blocks: [
        { p: [{ template: t.body }] },
        {
          table: [
            [m.mail.label.when, s.stamp(v.at)],
            [m.mail.label.address, orUnknown(m, v.ip)]
          ]
        },
        { p: [{ template: t.revoked, values: counts }, ...("kept" in t ? [{ template: t.kept, values: counts }] : [])] },
        { p: [{ template: t.advice }] },
        { link: t.link, href: to.app_url }
      ]
    }
  }

const LOCALIZED_SECURITY: { readonly [K in SecurityKind]: Localized<SecurityViews, K> } = {
  "sign-in-2fa": signIn((m) => m.mail.sign_in_2fa),
  "sign-in-telegram-2fa": signIn((m) => m.mail.sign_in_telegram_2fa),
  "api-key-created": (v, s, m, to) => {
    const t = m.mail.api_key_created
    const L = m.mail.label
    return {
      subject: fillPlain(t.subject, { key_name: v.key_name }),
      blocks: [
        { p: [{ template: t.body }] },
        {
          table: [
            [L.name, v.key_name],
            [L.scopes, v.scopes.join(", ")],
            [L.expires, v.expires_at === null ? t.never : s.stamp(v.expires_at)],
            [L.created, s.stamp(v.created_at)],
            [L.address, orUnknown(m, v.ip)]
          ]
        },
        { p: [{ template: t.advice }] },
        { link: t.link, href: to.app_url }
      ]
    }
  },
  "password-changed": revoked((m) => m.mail.password_changed),
  "password-reset": revoked((m) => m.mail.password_reset),
  "signed-out-everywhere": revoked((m) => m.mail.signed_out_everywhere)
}

// ---- the two ways in --------------------------------------------------------------------------

/** what the English template of a notice is given (`name` and `app_url` aside) */
export const englishNoticeView = <K extends NotificationKind>(kind: K, view: NoticeView<K>, appUrl: string): View =>
  ENGLISH_NOTICES[kind](view, shownIn("en"), messagesOf("en"), appUrl)

/** what the English template of a security mail is given (`name` and `app_url` aside) */
export const englishSecurityView = <K extends SecurityKind>(kind: K, view: SecurityView<K>): View =>
  ENGLISH_SECURITY[kind](view, shownIn("en"), messagesOf("en"), "")

/** A notification of [D96] in `locale`: subject, plain text and HTML. */
export const renderNotice = <K extends NotificationKind>(kind: K, view: NoticeView<K>, locale: Locale, to: Addressee): Rendered => {
  if (locale === "en") return render(kind, { ...englishNoticeView(kind, view, to.app_url), name: to.name, app_url: to.app_url })
  const m = messagesOf(locale)
  return mailOf(locale, m, LOCALIZED_NOTICES[kind](view, shownIn(locale), m, to), to, m.mail.footer_notice)
}

/** A security mail of [D96] (always sent) in `locale`. */
export const renderSecurityMail = <K extends SecurityKind>(kind: K, view: SecurityView<K>, locale: Locale, to: Addressee): Rendered => {
  if (locale === "en") return renderSecurity(kind, { ...englishSecurityView(kind, view), name: to.name, app_url: to.app_url })
  const m = messagesOf(locale)
  return mailOf(locale, m, LOCALIZED_SECURITY[kind](view, shownIn(locale), m, to), to, m.mail.footer_security)
}
