import fontkit from "@cantoo/fontkit"
import { type PDFFont, type PDFPage, PDFDocument, rgb } from "@cantoo/pdf-lib"
import bidiFactory from "bidi-js"
import { formatDay, formatMoment, formatMoney } from "../../platform/i18n/Format.ts"
import { directionOf, type Locale } from "../../platform/i18n/Locale.ts"
import { fill, messagesOf } from "../../platform/i18n/Messages.ts"
import { fontBytes, type Script, scriptOf } from "./PdfFonts.ts"

/**
 * [D113]: an invoice as a PDF, in its owner's language ([D120]): labels from the catalogues,
 * dates and money formatted for the locale, Persian laid out right to left. Text is drawn with
 * embedded TrueType fonts (subset to the glyphs used), each character with the font of its
 * script, so names in any of the four languages show as written. fontkit shapes Arabic script;
 * the Unicode bidirectional algorithm (bidi-js) orders mixed runs (digits, Latin names) in a
 * right-to-left line.
 */

export interface CreditNoteLine {
  readonly id: number | string
  readonly amount: string
  readonly currency: string
  readonly to: string
  readonly reason: string
  readonly createdAt: Date
}

export interface InvoiceDocument {
  readonly locale: Locale
  readonly seller: { readonly name: string | null; readonly address: string | null; readonly taxId: string | null }
  readonly buyer: { readonly name: string; readonly email: string }
  readonly uuid: string
  readonly status: "pending" | "paid" | "cancelled"
  readonly createdAt: Date
  readonly paidAt: Date | null
  readonly dueDate: Date
  readonly plan: string
  readonly cycle: string
  readonly durationDays: number
  /** the period the payment bought; none while unpaid (it starts at payment) */
  readonly period: { readonly from: Date; readonly to: Date } | null
  /** the cycle's price before the discount and the balance */
  readonly subtotal: string
  readonly discount: string
  readonly promoCode: string | null
  readonly balanceApplied: string
  readonly amount: string
  readonly currency: string
  readonly gateway: string
  readonly creditNotes: ReadonlyArray<CreditNoteLine>
}

const A4: [number, number] = [595.28, 841.89]
const MARGIN = 50
const GREY = rgb(0.35, 0.35, 0.35)
const bidi = bidiFactory()

type Weight = "regular" | "bold"
type Fonts = (script: Script, weight: Weight) => PDFFont

const ARABIC = /[\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff]/
const MIRRORED: Record<string, string> = { "(": ")", ")": "(", "[": "]", "]": "[", "<": ">", ">": "<", "«": "»", "»": "«" }
/** the bidi controls: they steer the ordering and are never drawn */
const CONTROLS = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/
/** a value kept left to right inside any line (a uuid, an e-mail): without it, a uuid that starts with digits is split and reordered in a right-to-left line */
const ltr = (text: string) => `\u2066${text}\u2069`
/** a value in the direction of its own first strong letter (a plan's or a cycle's name) */
const own = (text: string) => `\u2068${text}\u2069`
const reversed = (text: string) =>
  [...text]
    .reverse()
    .map((c) => MIRRORED[c] ?? c)
    .join("")

interface Run {
  readonly text: string
  readonly script: Script
  readonly level: number
}

/** a line's runs of one font and one bidi level, in logical order */
const runsOf = (line: string, rtl: boolean): Array<Run> => {
  const levels = bidi.getEmbeddingLevels(line, rtl ? "rtl" : "ltr").levels
  const chars = [...line]
  const runs: Array<{ text: string; script: Script; level: number }> = []
  let offset = 0
  let fallback: Script = "latin"
  for (const char of chars) {
    const level = levels[offset] ?? 0
    offset += char.length
    if (CONTROLS.test(char)) continue
    const script: Script = scriptOf(char) ?? runs.at(-1)?.script ?? fallback
    fallback = script
    const last = runs.at(-1)
    if (last !== undefined && last.script === script && last.level === level) last.text += char
    else runs.push({ text: char, script, level })
  }
  return runs
}

/** the runs in visual order (rule L2 of the bidi algorithm, on whole runs), each as fontkit should get it */
const visual = (runs: Array<Run>): Array<Run> => {
  const order = [...runs]
  const highest = Math.max(0, ...order.map((r) => r.level))
  const lowestOdd = Math.min(...order.map((r) => r.level).filter((l) => l % 2 === 1), highest + 1)
  for (let level = highest; level >= lowestOdd; level--) {
    for (let i = 0; i < order.length; i++) {
      if (order[i]!.level < level) continue
      let j = i
      while (j + 1 < order.length && order[j + 1]!.level >= level) j++
      order.splice(i, j - i + 1, ...order.slice(i, j + 1).reverse())
      i = j
    }
  }
  // fontkit reverses a run of Arabic script itself; any other run is handed over in the order it shows
  return order.map((run) => {
    const rtl = run.level % 2 === 1
    const fontkitReverses = ARABIC.test(run.text)
    return rtl === fontkitReverses ? run : { ...run, text: reversed(run.text) }
  })
}

export const renderInvoicePdf = async (doc: InvoiceDocument): Promise<Uint8Array> => {
  const locale = doc.locale
  const m = messagesOf(locale)
  const p = m.pdf
  const rtl = directionOf(locale) === "rtl"
  const money = (amount: string) => formatMoney(locale, amount, doc.currency)

  const pdf = await PDFDocument.create({ updateMetadata: false })
  pdf.registerFontkit(fontkit)
  pdf.setTitle(fill(p.invoice, { uuid: doc.uuid }))
  pdf.setLanguage(locale)
  pdf.setCreator("vpn-api")
  pdf.setProducer("vpn-api")
  pdf.setCreationDate(doc.createdAt)
  pdf.setModificationDate(doc.paidAt ?? doc.createdAt)

  // every text first, so that only the fonts it needs are read and embedded
  const lines: Array<() => void> = []
  const texts: Array<string> = []
  const embedded = new Map<string, PDFFont>()
  const fonts: Fonts = (script, weight) => embedded.get(`${script}:${weight}`) ?? embedded.get(`latin:${weight}`)!

  let page: PDFPage = pdf.addPage(A4)
  let y = A4[1] - MARGIN
  const need = (height: number) => {
    if (y - height < MARGIN) {
      page = pdf.addPage(A4)
      y = A4[1] - MARGIN
    }
  }
  const widthOf = (text: string, weight: Weight, size: number) =>
    runsOf(text, rtl).reduce((sum, run) => sum + fonts(run.script, weight).widthOfTextAtSize(run.text, size), 0)
  /** one line at `x` from the start edge (the left, or the right for a right-to-left locale) */
  const drawLine = (text: string, options: { weight: Weight; size: number; x: number; color: ReturnType<typeof rgb> }) => {
    const width = widthOf(text, options.weight, options.size)
    let x = rtl ? A4[0] - options.x - width : options.x
    for (const run of visual(runsOf(text, rtl))) {
      const font = fonts(run.script, options.weight)
      page.drawText(run.text, { x, y: y - options.size, size: options.size, font, color: options.color })
      x += font.widthOfTextAtSize(run.text, options.size)
    }
  }
  const write = (text: string, options: { weight?: Weight; size?: number; x?: number; color?: ReturnType<typeof rgb> } = {}) => {
    texts.push(text)
    lines.push(() => {
      const size = options.size ?? 10
      const weight = options.weight ?? "regular"
      const start = options.x ?? MARGIN
      const width = A4[0] - MARGIN - start
      // wrap on spaces to the page's width
      const wrapped: Array<string> = []
      for (const paragraph of text.split("\n")) {
        let line = ""
        for (const word of paragraph.split(" ")) {
          const next = line === "" ? word : `${line} ${word}`
          if (line !== "" && widthOf(next, weight, size) > width) {
            wrapped.push(line)
            line = word
          } else line = next
        }
        wrapped.push(line)
      }
      for (const line of wrapped) {
        need(size + 4)
        drawLine(line, { weight, size, x: start, color: options.color ?? rgb(0, 0, 0) })
        y -= size + 4
      }
    })
  }
  const gap = (h = 10) => {
    lines.push(() => {
      y -= h
    })
  }
  const row = (label: string, value: string) => {
    texts.push(label, value)
    lines.push(() => {
      need(14)
      drawLine(label, { weight: "regular", size: 10, x: MARGIN, color: GREY })
      drawLine(value, { weight: "bold", size: 10, x: MARGIN + 150, color: rgb(0, 0, 0) })
      y -= 14
    })
  }

  const status = m.status[doc.status]
  write(p.title, { weight: "bold", size: 20 })
  gap(4)
  write(fill(p.invoice, { uuid: ltr(doc.uuid) }), { size: 11 })
  gap()
  row(p.status, status)
  row(p.created, formatMoment(locale, doc.createdAt))
  row(p.paid, doc.paidAt === null ? p.not_paid : formatMoment(locale, doc.paidAt))
  if (doc.paidAt === null) row(p.due, formatDay(locale, doc.dueDate))
  row(p.gateway, doc.gateway)
  gap()

  write(p.seller, { weight: "bold", size: 12 })
  const seller = [doc.seller.name, doc.seller.address, doc.seller.taxId === null ? null : fill(p.tax_id, { tax_id: doc.seller.taxId })].filter(
    (l) => l !== null
  )
  for (const line of seller.length > 0 ? seller : [p.seller_missing]) write(line)
  gap()
  write(p.bill_to, { weight: "bold", size: 12 })
  write(doc.buyer.name)
  write(ltr(doc.buyer.email))
  gap()

  write(p.line, { weight: "bold", size: 12 })
  row(p.plan, own(doc.plan))
  row(p.cycle, fill(p.cycle_days, { cycle: own(doc.cycle), days: doc.durationDays }))
  row(
    p.period,
    doc.period === null
      ? fill(p.period_from_payment, { days: doc.durationDays })
      : fill(p.period_range, { from: formatDay(locale, doc.period.from), to: formatDay(locale, doc.period.to) })
  )
  gap()

  write(p.amounts, { weight: "bold", size: 12 })
  row(p.subtotal, money(doc.subtotal))
  row(doc.promoCode === null ? p.discount : fill(p.discount_code, { code: doc.promoCode }), `-${money(doc.discount)}`)
  row(p.balance_applied, `-${money(doc.balanceApplied)}`)
  row(doc.status === "paid" ? p.amount_paid : p.amount_due, money(doc.amount))
  row(p.currency, doc.currency)

  if (doc.creditNotes.length > 0) {
    gap()
    write(p.credit_notes, { weight: "bold", size: 12 })
    for (const note of doc.creditNotes) {
      const to = note.to === "balance" ? m.mail.refund_issued.to_balance : fill(m.mail.refund_issued.to_gateway, { gateway: doc.gateway })
      write(
        fill(p.credit_note, {
          id: note.id,
          amount: formatMoney(locale, note.amount, note.currency),
          to,
          at: formatMoment(locale, note.createdAt)
        })
      )
      write(fill(p.reason, { reason: note.reason }), { x: MARGIN + 12, color: GREY })
    }
  }

  // the fonts of the scripts the text uses (Latin always: digits, names, the uuid)
  const scripts = new Set<Script>(["latin"])
  for (const text of texts) for (const char of text) scripts.add(scriptOf(char) ?? "latin")
  for (const script of scripts) {
    for (const weight of ["regular", "bold"] as const) {
      embedded.set(`${script}:${weight}`, await pdf.embedFont(await fontBytes(script, weight), { subset: true }))
    }
  }
  for (const draw of lines) draw()
  return pdf.save()
}
