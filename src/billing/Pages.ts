import * as Option from "effect/Option"
import { escapeHtml, htmlPage } from "../http/Html.ts"
import { formatDay, formatMoney } from "../platform/i18n/Format.ts"
import { directionOf, type Locale } from "../platform/i18n/Locale.ts"
import { fill, messagesOf } from "../platform/i18n/Messages.ts"
import type { InvoiceDetail } from "./Domain.ts"

const STYLE = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}\ndt{font-weight:600}"

/**
 * The manual gateway's page for a signed link ([D37], [D26]): the invoice and how to pay it, in
 * the owner's language ([D120]). A forged, altered or expired link (or one for an invoice that is
 * gone) is one 403 page: it tells a guesser nothing about which invoices exist.
 */
export const payPage = (invoice: Option.Option<InvoiceDetail>, locale: Locale, appUrl: string) => {
  const m = messagesOf(locale)
  const page = (status: number, title: string, body: string) =>
    htmlPage({
      status,
      lang: locale,
      dir: directionOf(locale),
      title,
      style: STYLE,
      body: `${body}<p><a href="${escapeHtml(`${appUrl}/`)}">${escapeHtml(m.page.open_app)}</a></p>`
    })
  if (Option.isNone(invoice)) return page(403, m.page.pay_bad_title, `<p>${escapeHtml(m.page.pay_bad)}</p>`)
  const inv = invoice.value
  const amount = formatMoney(locale, inv.amount, inv.currency)
  const status = m.status[inv.status]
  const rows = [
    [m.page.pay_invoice, inv.uuid],
    [m.page.pay_plan, `${inv.plan.name} (${inv.cycle.name})`],
    [m.page.pay_amount, amount],
    [m.page.pay_status, status],
    [m.page.pay_due, formatDay(locale, inv.due_date)]
  ]
    .map(([k, v]) => `<dt>${escapeHtml(k!)}</dt><dd>${escapeHtml(v!)}</dd>`)
    .join("")
  const how =
    inv.status === "pending"
      ? `<h2>${escapeHtml(m.page.pay_how_title)}</h2><p>${
          // the placeholders are filled with already escaped HTML
          fill(escapeHtml(m.page.pay_how), { amount: `<strong>${escapeHtml(amount)}</strong>`, reference: `<code>${escapeHtml(inv.uuid)}</code>` })
        }</p>`
      : `<p>${escapeHtml(fill(m.page.pay_nothing, { status }))}</p>`
  return page(200, m.page.pay_title, `<dl>${rows}</dl>${how}`)
}
