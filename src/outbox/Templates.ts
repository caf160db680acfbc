import Mustache from "mustache"

/**
 * The notification e-mails of [D96] in English, as Mustache templates (a maintained, logic-less
 * engine that escapes HTML in `{{value}}`): each has a subject, a plain-text part and an HTML part.
 * Views carry the numbers a customer needs, already written as English writes them; `name` and
 * `app_url` are always there. [D120]: these are the `en` form, kept word for word as they always
 * read; `MailTexts.ts` writes the other locales from the catalogues and chooses between them.
 */
interface Template {
  readonly subject: string
  readonly text: string
  /** the inside of the HTML layout's body */
  readonly html: string
}

const FOOTER_TEXT = `
--
You receive this e-mail because notifications are on in your account settings ({{app_url}}).`

const LAYOUT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{subject}}</title></head>
<body style="font-family: sans-serif; line-height: 1.5; color: #222">
{{> body}}
<p style="color: #666; font-size: 0.9em">You receive this e-mail because notifications are on in your
<a href="{{app_url}}">account settings</a>.</p>
</body></html>`

export const TEMPLATES = {
  "expiry-3d": {
    subject: "Your VPN service expires in 3 days",
    text: `Hello {{name}},

Your {{plan_name}} service #{{service_id}} expires on {{expires_at}}, within 3 days.
Auto-renew is off: renew it before then to keep your VPN access.

Manage it in the app: {{app_url}} (GET /v1/services/{{service_id}}).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your <strong>{{plan_name}}</strong> service #{{service_id}} expires on <strong>{{expires_at}}</strong>, within 3 days.
Auto-renew is off: renew it before then to keep your VPN access.</p>
<p><a href="{{app_url}}">Manage your service</a></p>`
  },
  "expiry-1d": {
    subject: "Your VPN service expires tomorrow",
    text: `Hello {{name}},

Your {{plan_name}} service #{{service_id}} expires on {{expires_at}}, within a day.
Auto-renew is off: renew it now to keep your VPN access.

Manage it in the app: {{app_url}} (GET /v1/services/{{service_id}}).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your <strong>{{plan_name}}</strong> service #{{service_id}} expires on <strong>{{expires_at}}</strong>, within a day.
Auto-renew is off: renew it now to keep your VPN access.</p>
<p><a href="{{app_url}}">Manage your service</a></p>`
  },
  expired: {
    subject: "Your VPN service has expired",
    text: `Hello {{name}},

Your {{plan_name}} service #{{service_id}} expired on {{expires_at}}. Its VPN access has stopped.
Order a new period to continue: {{app_url}} (POST /v1/orders).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your <strong>{{plan_name}}</strong> service #{{service_id}} expired on <strong>{{expires_at}}</strong>.
Its VPN access has stopped.</p>
<p><a href="{{app_url}}">Order a new period</a></p>`
  },
  "quota-80": {
    subject: "You have used 80 % of your data for this period",
    text: `Hello {{name}},

Your {{plan_name}} service #{{service_id}} has used {{used_gb}} GB of its {{limit_gb}} GB ({{percent}} %)
in the period that started on {{period_start}}.{{#reset_date}} The quota resets on {{reset_date}}.{{/reset_date}}

See your usage: {{app_url}} (GET /v1/bandwidth).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your <strong>{{plan_name}}</strong> service #{{service_id}} has used <strong>{{used_gb}} GB</strong> of its
{{limit_gb}} GB ({{percent}} %) in the period that started on {{period_start}}.{{#reset_date}} The quota resets on
{{reset_date}}.{{/reset_date}}</p>
<p><a href="{{app_url}}">See your usage</a></p>`
  },
  "quota-100": {
    subject: "You have used all your data for this period",
    text: `Hello {{name}},

Your {{plan_name}} service #{{service_id}} has used {{used_gb}} GB of its {{limit_gb}} GB: the quota of the
period that started on {{period_start}} is used up, and VPN traffic is paused.{{#reset_date}} The quota resets on {{reset_date}}.{{/reset_date}}

See your usage or upgrade: {{app_url}} (GET /v1/bandwidth).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your <strong>{{plan_name}}</strong> service #{{service_id}} has used <strong>{{used_gb}} GB</strong> of its
{{limit_gb}} GB: the quota of the period that started on {{period_start}} is used up, and VPN traffic is paused.
{{#reset_date}}The quota resets on {{reset_date}}.{{/reset_date}}</p>
<p><a href="{{app_url}}">See your usage or upgrade</a></p>`
  },
  "renewal-invoice": {
    subject: "Renewal invoice {{invoice_uuid}}: {{amount}} {{currency}}",
    text: `Hello {{name}},

Your service #{{service_id}} expires on {{expires_at}}. We created its renewal invoice:

  Invoice:  {{invoice_uuid}}
  Amount:   {{amount}} {{currency}}
  Due date: {{due_date}}

Pay it in the app: {{app_url}} (GET /v1/invoices/{{invoice_uuid}}/payment-url).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your service #{{service_id}} expires on {{expires_at}}. We created its renewal invoice:</p>
<table>
<tr><th align="left">Invoice</th><td>{{invoice_uuid}}</td></tr>
<tr><th align="left">Amount</th><td>{{amount}} {{currency}}</td></tr>
<tr><th align="left">Due date</th><td>{{due_date}}</td></tr>
</table>
<p><a href="{{app_url}}">Pay it in the app</a></p>`
  },
  "renewal-failed": {
    subject:
      "{{#final}}Your VPN service has expired: its renewal was not paid{{/final}}{{^final}}Your VPN renewal could not be paid: {{amount}} {{currency}}{{/final}}",
    text: `Hello {{name}},

{{#final}}We could not collect the renewal of your service #{{service_id}} after the last retry. The invoice is cancelled
and the service has expired.{{/final}}{{^final}}We could not collect the renewal of your service #{{service_id}} ({{reason}}).
Your VPN keeps working at a reduced speed until {{grace_until}}.{{#next_attempt_at}} We will try again on {{next_attempt_at}}.{{/next_attempt_at}}{{/final}}

  Invoice:  {{invoice_uuid}}
  Amount:   {{amount}} {{currency}}

{{^final}}Pay it now to get full speed back at once: {{/final}}{{invoice_url}}${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
{{#final}}<p>We could not collect the renewal of your service #{{service_id}} after the last retry. The invoice is cancelled
and the service has expired.</p>{{/final}}{{^final}}<p>We could not collect the renewal of your service #{{service_id}} ({{reason}}).
Your VPN keeps working at a reduced speed until <strong>{{grace_until}}</strong>.{{#next_attempt_at}} We will try again on {{next_attempt_at}}.{{/next_attempt_at}}</p>{{/final}}
<table>
<tr><th align="left">Invoice</th><td>{{invoice_uuid}}</td></tr>
<tr><th align="left">Amount</th><td>{{amount}} {{currency}}</td></tr>
</table>
<p><a href="{{invoice_url}}">{{^final}}Pay it now{{/final}}{{#final}}Your invoice{{/final}}</a></p>`
  },
  "payment-received": {
    subject: "Receipt for invoice {{invoice_uuid}}",
    text: `Hello {{name}},

Thank you: we received your payment.

  Invoice:  {{invoice_uuid}}
  Amount:   {{amount}} {{currency}}
{{#balance_applied}}  From your balance: {{balance_applied}} {{currency}}
{{/balance_applied}}  Paid at:  {{paid_at}}
{{#service_id}}  Service:  #{{service_id}}, {{period_start}} to {{period_end}}
{{/service_id}}
Your invoices: {{app_url}} (GET /v1/invoices/{{invoice_uuid}}).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Thank you: we received your payment.</p>
<table>
<tr><th align="left">Invoice</th><td>{{invoice_uuid}}</td></tr>
<tr><th align="left">Amount</th><td>{{amount}} {{currency}}</td></tr>
{{#balance_applied}}<tr><th align="left">From your balance</th><td>{{balance_applied}} {{currency}}</td></tr>{{/balance_applied}}
<tr><th align="left">Paid at</th><td>{{paid_at}}</td></tr>
{{#service_id}}<tr><th align="left">Service</th><td>#{{service_id}}, {{period_start}} to {{period_end}}</td></tr>{{/service_id}}
</table>
<p><a href="{{app_url}}">Your invoices</a></p>`
  },
  "ticket-reply": {
    subject: "Re: [Ticket #{{ticket_id}}] {{ticket_subject}}",
    text: `Hello {{name}},

Our support team replied to your ticket #{{ticket_id}} "{{ticket_subject}}":

{{message}}

Read the whole conversation and answer it in the app (ticket #{{ticket_id}}, GET /v1/tickets/{{ticket_id}}).
{{app_url}}${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Our support team replied to your ticket #{{ticket_id}} &ldquo;{{ticket_subject}}&rdquo;:</p>
<blockquote style="white-space: pre-wrap">{{message}}</blockquote>
<p><a href="{{app_url}}">Read the whole conversation and answer it</a> (ticket #{{ticket_id}}).</p>`
  },
  "refund-issued": {
    subject: "Refund for invoice {{invoice_uuid}}",
    text: `Hello {{name}},

We refunded {{amount}} {{currency}} of invoice {{invoice_uuid}}.

  Credit note: #{{credit_note_id}}
  Amount:      {{amount}} {{currency}}
  Refunded to: {{to_text}}
  Reason:      {{reason}}

Your invoices: {{app_url}} (GET /v1/invoices/{{invoice_uuid}}).${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>We refunded {{amount}} {{currency}} of invoice {{invoice_uuid}}.</p>
<table>
<tr><th align="left">Credit note</th><td>#{{credit_note_id}}</td></tr>
<tr><th align="left">Amount</th><td>{{amount}} {{currency}}</td></tr>
<tr><th align="left">Refunded to</th><td>{{to_text}}</td></tr>
<tr><th align="left">Reason</th><td>{{reason}}</td></tr>
</table>
<p><a href="{{app_url}}">Your invoices</a></p>`
  },
  "service-cancelled": {
    subject: "Your VPN service #{{service_id}} is cancelled",
    text: `Hello {{name}},

{{#at_period_end}}Your service #{{service_id}} ({{plan_name}}) will not renew: it stays active until {{ends_at}}, then ends.
You can resume it until then (POST /v1/services/{{service_id}}/resume).{{/at_period_end}}{{^at_period_end}}Your service #{{service_id}} ({{plan_name}}) is cancelled: its VPN access stopped on {{ends_at}}.{{/at_period_end}}

Your services: {{app_url}}${FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
{{#at_period_end}}<p>Your service #{{service_id}} ({{plan_name}}) will not renew: it stays active until {{ends_at}}, then ends.
You can resume it until then.</p>{{/at_period_end}}{{^at_period_end}}<p>Your service #{{service_id}} ({{plan_name}}) is cancelled: its VPN access stopped on {{ends_at}}.</p>{{/at_period_end}}
<p><a href="{{app_url}}">Your services</a></p>`
  }
} as const satisfies Record<string, Template>

export type NotificationKind = keyof typeof TEMPLATES

const SECURITY_FOOTER_TEXT = `
--
This security notice is always sent, whatever your notification settings ({{app_url}}).`

const SECURITY_LAYOUT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{subject}}</title></head>
<body style="font-family: sans-serif; line-height: 1.5; color: #222">
{{> body}}
<p style="color: #666; font-size: 0.9em">This security notice is always sent, whatever your
<a href="{{app_url}}">notification settings</a>.</p>
</body></html>`

/**
 * Security mail of [D96] written from templates (verification, reset and e-mail changed keep
 * theirs in the accounts room): always sent, and never carrying a secret (no code, no key).
 */
export const SECURITY_TEMPLATES = {
  "sign-in-2fa": {
    subject: "New sign-in to your account",
    text: `Hello {{name}},

Your account was signed in to with your password and {{factor}}.

  When:        {{signed_in_at}}
  Address:     {{ip}}
  User agent:  {{user_agent}}
{{#recovery_codes_left_known}}  Recovery codes left: {{recovery_codes_left}}
{{/recovery_codes_left_known}}
If this was you, there is nothing to do. If not, change your password at once and end the
sessions you do not know: {{app_url}} (GET /v1/account/sessions).${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your account was signed in to with your password and {{factor}}.</p>
<table>
<tr><th align="left">When</th><td>{{signed_in_at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
<tr><th align="left">User agent</th><td>{{user_agent}}</td></tr>
{{#recovery_codes_left_known}}<tr><th align="left">Recovery codes left</th><td>{{recovery_codes_left}}</td></tr>{{/recovery_codes_left_known}}
</table>
<p>If this was you, there is nothing to do. If not, change your password at once and
<a href="{{app_url}}">end the sessions you do not know</a>.</p>`
  },
  "api-key-created": {
    subject: "A new API key was created: {{key_name}}",
    text: `Hello {{name}},

A new API key was created for your account.

  Name:     {{key_name}}
  Scopes:   {{scopes}}
  Expires:  {{expires_at}}
  Created:  {{created_at}}
  Address:  {{ip}}

It acts as you within its scopes until it expires or is revoked. If you did not create it,
revoke it at once and change your password: {{app_url}} (DELETE /v1/account/api-keys/{{key_id}}).${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>A new API key was created for your account.</p>
<table>
<tr><th align="left">Name</th><td>{{key_name}}</td></tr>
<tr><th align="left">Scopes</th><td>{{scopes}}</td></tr>
<tr><th align="left">Expires</th><td>{{expires_at}}</td></tr>
<tr><th align="left">Created</th><td>{{created_at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
</table>
<p>It acts as you within its scopes until it expires or is revoked. If you did not create it,
<a href="{{app_url}}">revoke it at once</a> and change your password.</p>`
  },
  // [D125]: a sign-in with Telegram (the Login Widget or the Mini App) and a second factor
  "sign-in-telegram-2fa": {
    subject: "New sign-in to your account",
    text: `Hello {{name}},

Your account was signed in to with Telegram and {{factor}}.

  When:        {{signed_in_at}}
  Address:     {{ip}}
  User agent:  {{user_agent}}
{{#recovery_codes_left_known}}  Recovery codes left: {{recovery_codes_left}}
{{/recovery_codes_left_known}}
If this was you, there is nothing to do. If not, unlink Telegram, change your password and end the
sessions you do not know: {{app_url}} (GET /v1/account/sessions).${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Your account was signed in to with Telegram and {{factor}}.</p>
<table>
<tr><th align="left">When</th><td>{{signed_in_at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
<tr><th align="left">User agent</th><td>{{user_agent}}</td></tr>
{{#recovery_codes_left_known}}<tr><th align="left">Recovery codes left</th><td>{{recovery_codes_left}}</td></tr>{{/recovery_codes_left_known}}
</table>
<p>If this was you, there is nothing to do. If not, unlink Telegram, change your password and
<a href="{{app_url}}">end the sessions you do not know</a>.</p>`
  },
  // [D114]: each of these says what it revoked
  "password-changed": {
    subject: "Your password was changed",
    text: `Hello {{name}},

The password of your account was changed.

  When:     {{at}}
  Address:  {{ip}}

Revoked: {{revoked}}

If you did not change it, reset your password at once: {{app_url}} (POST /v1/auth/forgot-password).${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>The password of your account was changed.</p>
<table>
<tr><th align="left">When</th><td>{{at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
</table>
<p>Revoked: {{revoked}}</p>
<p>If you did not change it, <a href="{{app_url}}">reset your password at once</a>.</p>`
  },
  "password-reset": {
    subject: "Your password was reset",
    text: `Hello {{name}},

The password of your account was reset with a link sent to this address.

  When:     {{at}}
  Address:  {{ip}}

Revoked: {{revoked}}

If you did not reset it, ask for a new reset link at once and contact support: {{app_url}}.${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>The password of your account was reset with a link sent to this address.</p>
<table>
<tr><th align="left">When</th><td>{{at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
</table>
<p>Revoked: {{revoked}}</p>
<p>If you did not reset it, <a href="{{app_url}}">ask for a new reset link at once</a> and contact support.</p>`
  },
  "signed-out-everywhere": {
    subject: "You were signed out everywhere",
    text: `Hello {{name}},

Every session of your account was signed out.

  When:     {{at}}
  Address:  {{ip}}

Revoked: {{revoked}}
Not revoked: {{kept}}

If you did not do this, change your password: {{app_url}}.${SECURITY_FOOTER_TEXT}`,
    html: `<p>Hello {{name}},</p>
<p>Every session of your account was signed out.</p>
<table>
<tr><th align="left">When</th><td>{{at}}</td></tr>
<tr><th align="left">Address</th><td>{{ip}}</td></tr>
</table>
<p>Revoked: {{revoked}}</p>
<p>Not revoked: {{kept}}</p>
<p>If you did not do this, <a href="{{app_url}}">change your password</a>.</p>`
  }
} as const satisfies Record<string, Template>

export type SecurityKind = keyof typeof SECURITY_TEMPLATES

export type View = Readonly<Record<string, string | number | boolean | null>>

const asIs = (value: unknown) => String(value)

/** a moment as mails show it: `2026-03-10 12:00:00 UTC` */
export const mailTime = (at: Date): string => `${at.toISOString().slice(0, 19).replace("T", " ")} UTC`

const renderWith = (layout: string, template: Template, view: View): { subject: string; text: string; html: string } => {
  const subject = Mustache.render(template.subject, view, {}, { escape: asIs })
  const text = Mustache.render(template.text, view, {}, { escape: asIs })
  const html = Mustache.render(layout, { ...view, subject }, { body: template.html })
  return { subject, text, html }
}

/** The subject and both parts of an English notification: text unescaped, HTML escaped by the engine. */
export const render = (kind: NotificationKind, view: View): { subject: string; text: string; html: string } => renderWith(LAYOUT, TEMPLATES[kind], view)

/** The subject and both parts of an English security mail, in the layout that says it is always sent. */
export const renderSecurity = (kind: SecurityKind, view: View): { subject: string; text: string; html: string } =>
  renderWith(SECURITY_LAYOUT, SECURITY_TEMPLATES[kind], view)
