import * as Option from "effect/Option"
import { htmlResponse } from "../http/Html.ts"
import type { InvoiceDetail } from "./Domain.ts"

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const page = (status: number, title: string, body: string) =>
  htmlResponse(
    status,
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<meta name="referrer" content="no-referrer">` +
      `<title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}` +
      `dt{font-weight:600}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`
  )

/**
 * The manual gateway's page for a signed link ([D37], [D26]): the invoice and how to pay it. A
 * forged, altered or expired link (or one for an invoice that is gone) is one 403 page: it tells
 * a guesser nothing about which invoices exist.
 */
export const payPage = (invoice: Option.Option<InvoiceDetail>) => {
  if (Option.isNone(invoice)) {
    return page(403, "Payment link invalid", "<p>This payment link is invalid or has expired. Ask for a new one from your invoices.</p>")
  }
  const inv = invoice.value
  const rows = [
    ["Invoice", inv.uuid],
    ["Plan", `${inv.plan.name} (${inv.cycle.name})`],
    ["Amount", `${inv.amount} ${inv.currency}`],
    ["Status", inv.status],
    ["Due", inv.due_date.toISOString().slice(0, 10)]
  ].map(([k, v]) => `<dt>${escapeHtml(k!)}</dt><dd>${escapeHtml(v!)}</dd>`).join("")
  const how = inv.status === "pending"
    ? `<h2>How to pay</h2><p>Pay by bank transfer of <strong>${escapeHtml(`${inv.amount} ${inv.currency}`)}</strong> with the reference <code>${escapeHtml(inv.uuid)}</code>. Your service starts as soon as the payment is recorded.</p>`
    : `<p>This invoice is ${escapeHtml(inv.status)}: there is nothing to pay.</p>`
  return page(200, "Pay your invoice", `<dl>${rows}</dl>${how}`)
}
