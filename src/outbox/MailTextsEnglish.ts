import { type Catalogue } from "../platform/i18n/Messages.ts"
import {
  counted,
  type ExpiryView,
  factorText,
  type NoticeViews,
  orUnknown,
  refundedToText,
  renewalFailureText,
  type RevokedView,
  type SecurityViews,
  type Shown,
  type SignInView
} from "./NoticeViews.ts"
import type { NotificationKind, SecurityKind, View } from "./Templates.ts"

/** The English notices and security mail of [D96]: the templates of `Templates.ts`, given the facts as English writes them. */
// ---- English: the facts as the templates of Templates.ts always had them ------------------------

type English<Views, K extends keyof Views> = (view: Views[K], shown: Shown, m: Catalogue, appUrl: string) => View

const expiryEn = (v: ExpiryView, s: Shown): View => ({
  service_id: v.service_id,
  plan_name: v.plan_name,
  expires_at: s.moment(v.expires_at)
})

export const ENGLISH_NOTICES: { readonly [K in NotificationKind]: English<NoticeViews, K> } = {
  "expiry-3d": expiryEn,
  "expiry-1d": expiryEn,
  expired: expiryEn,
  "quota-80": (v) => ({ ...v }),
  "quota-100": (v) => ({ ...v }),
  "renewal-invoice": (v, s) => ({ ...v, due_date: s.moment(v.due_date), expires_at: s.moment(v.expires_at) }),
  "renewal-failed": (v, s, m, appUrl) => ({
    invoice_uuid: v.invoice_uuid,
    invoice_url: `${appUrl}/invoices/${v.invoice_uuid}`,
    amount: v.amount,
    currency: v.currency,
    service_id: v.service_id,
    reason: renewalFailureText(m, v),
    attempt: v.attempt,
    grace_until: s.moment(v.grace_until),
    next_attempt_at: v.next_attempt_at === null ? null : s.moment(v.next_attempt_at),
    final: v.final
  }),
  "payment-received": (v, s) => ({
    ...v,
    paid_at: s.moment(v.paid_at),
    period_start: v.period_start === null ? null : s.moment(v.period_start),
    period_end: v.period_end === null ? null : s.moment(v.period_end)
  }),
  "ticket-reply": (v) => ({ ...v }),
  "refund-issued": (v, _s, m) => ({
    invoice_uuid: v.invoice_uuid,
    credit_note_id: v.credit_note_id,
    amount: v.amount,
    currency: v.currency,
    to_text: refundedToText(m, v),
    reason: v.reason
  }),
  "service-cancelled": (v, s) => ({ ...v, ends_at: s.stamp(v.ends_at) })
}

const signInEn = (v: SignInView, s: Shown, m: Catalogue): View => ({
  factor: factorText(m, v.factor),
  signed_in_at: s.stamp(v.signed_in_at),
  ip: orUnknown(m, v.ip),
  user_agent: orUnknown(m, v.user_agent),
  recovery_codes_left_known: v.recovery_codes_left !== null,
  recovery_codes_left: v.recovery_codes_left
})

const revokedEn = (v: RevokedView, s: Shown, m: Catalogue) => ({
  at: s.stamp(v.at),
  ip: orUnknown(m, v.ip),
  sessions: counted(m, s, "sessions", v.sessions),
  keys: counted(m, s, "keys", v.keys)
})

export const ENGLISH_SECURITY: { readonly [K in SecurityKind]: English<SecurityViews, K> } = {
  "sign-in-2fa": signInEn,
  "sign-in-telegram-2fa": signInEn,
  "api-key-created": (v, s, m) => ({
    key_id: v.key_id,
    key_name: v.key_name,
    scopes: v.scopes.join(", "),
    expires_at: v.expires_at === null ? m.mail.api_key_created.never : s.stamp(v.expires_at),
    created_at: s.stamp(v.created_at),
    ip: orUnknown(m, v.ip)
  }),
  "password-changed": (v, s, m) => {
    const r = revokedEn(v, s, m)
    return {
      at: r.at,
      ip: r.ip,
      revoked: `every other session (${r.sessions}) and every API key (${r.keys}); the session that changed it stays signed in.`
    }
  },
  "password-reset": (v, s, m) => {
    const r = revokedEn(v, s, m)
    return {
      at: r.at,
      ip: r.ip,
      revoked: `every session (${r.sessions}), every API key (${r.keys}) and the VPN configurations and credentials issued before the reset.`
    }
  },
  "signed-out-everywhere": (v, s, m) => {
    const r = revokedEn(v, s, m)
    return {
      at: r.at,
      ip: r.ip,
      revoked: `every session (${r.sessions}).`,
      kept: `your API keys (${r.keys}): revoke them one by one if you need to (GET /v1/account/api-keys).`
    }
  }
}
