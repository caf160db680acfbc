import { type PDFFont, type PDFPage, PDFDocument, rgb, StandardFonts } from "@cantoo/pdf-lib"

/**
 * [D113]: an invoice as a PDF, drawn with pdf-lib's standard Helvetica (its metrics are compiled
 * into the library, so nothing is read from disk: it works inside `bun build --compile`).
 */

export interface CreditNoteLine {
  readonly id: number | string
  readonly amount: string
  readonly currency: string
  readonly to: string
  readonly reason: string
  readonly createdAt: string
}

export interface InvoiceDocument {
  readonly seller: { readonly name: string | null; readonly address: string | null; readonly taxId: string | null }
  readonly buyer: { readonly name: string; readonly email: string }
  readonly uuid: string
  readonly status: string
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

const day = (d: Date) => d.toISOString().slice(0, 10)
const moment = (d: Date) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`

const A4: [number, number] = [595.28, 841.89]
const MARGIN = 50
const GREY = rgb(0.35, 0.35, 0.35)

export const renderInvoicePdf = async (doc: InvoiceDocument): Promise<Uint8Array> => {
  const pdf = await PDFDocument.create({ updateMetadata: false })
  pdf.setTitle(`Invoice ${doc.uuid}`)
  pdf.setCreator("vpn-api")
  pdf.setProducer("vpn-api")
  pdf.setCreationDate(doc.createdAt)
  pdf.setModificationDate(doc.paidAt ?? doc.createdAt)
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  // the standard fonts speak WinAnsi: a character outside it is shown as "?" rather than failing
  const known = new Set(regular.getCharacterSet())
  const printable = (text: string) => [...text].map((c) => known.has(c.codePointAt(0)!) ? c : "?").join("")

  let page: PDFPage = pdf.addPage(A4)
  let y = A4[1] - MARGIN
  const need = (height: number) => {
    if (y - height < MARGIN) {
      page = pdf.addPage(A4)
      y = A4[1] - MARGIN
    }
  }
  const write = (text: string, options: { font?: PDFFont; size?: number; x?: number; color?: ReturnType<typeof rgb> } = {}) => {
    const size = options.size ?? 10
    const font = options.font ?? regular
    const width = A4[0] - MARGIN - (options.x ?? MARGIN)
    // wrap on spaces to the page's width
    const lines: Array<string> = []
    for (const paragraph of text.split("\n").map(printable)) {
      let line = ""
      for (const word of paragraph.split(" ")) {
        const next = line === "" ? word : `${line} ${word}`
        if (line !== "" && font.widthOfTextAtSize(next, size) > width) {
          lines.push(line)
          line = word
        } else line = next
      }
      lines.push(line)
    }
    for (const line of lines) {
      need(size + 4)
      page.drawText(line, { x: options.x ?? MARGIN, y: y - size, size, font, color: options.color ?? rgb(0, 0, 0) })
      y -= size + 4
    }
  }
  const gap = (h = 10) => {
    y -= h
  }
  const row = (label: string, value: string) => {
    need(14)
    page.drawText(printable(label), { x: MARGIN, y: y - 10, size: 10, font: regular, color: GREY })
    page.drawText(printable(value), { x: MARGIN + 150, y: y - 10, size: 10, font: bold })
    y -= 14
  }

  write("INVOICE", { font: bold, size: 20 })
  gap(4)
  write(`Invoice ${doc.uuid}`, { size: 11 })
  gap()
  row("Status", doc.status)
  row("Created", moment(doc.createdAt))
  row("Paid", doc.paidAt === null ? "not paid" : moment(doc.paidAt))
  if (doc.paidAt === null) row("Due", day(doc.dueDate))
  row("Gateway", doc.gateway)
  gap()

  write("Seller", { font: bold, size: 12 })
  const seller = [doc.seller.name, doc.seller.address, doc.seller.taxId === null ? null : `Tax ID: ${doc.seller.taxId}`].filter((l) => l !== null)
  for (const line of seller.length > 0 ? seller : ["(seller details not configured)"]) write(line)
  gap()
  write("Bill to", { font: bold, size: 12 })
  write(doc.buyer.name)
  write(doc.buyer.email)
  gap()

  write("Line", { font: bold, size: 12 })
  row("Plan", doc.plan)
  row("Cycle", `${doc.cycle} (${doc.durationDays} days)`)
  row("Period", doc.period === null ? `${doc.durationDays} days from payment` : `${day(doc.period.from)} to ${day(doc.period.to)}`)
  gap()

  write("Amounts", { font: bold, size: 12 })
  row("Subtotal", `${doc.subtotal} ${doc.currency}`)
  row(doc.promoCode === null ? "Discount" : `Discount (${doc.promoCode})`, `-${doc.discount} ${doc.currency}`)
  row("Balance applied", `-${doc.balanceApplied} ${doc.currency}`)
  row(doc.status === "paid" ? "Amount paid" : "Amount due", `${doc.amount} ${doc.currency}`)
  row("Currency", doc.currency)

  if (doc.creditNotes.length > 0) {
    gap()
    write("Credit notes", { font: bold, size: 12 })
    for (const note of doc.creditNotes) {
      write(`Credit note ${note.id}: ${note.amount} ${note.currency} to ${note.to}, ${note.createdAt}`)
      write(`Reason: ${note.reason}`, { x: MARGIN + 12, color: GREY })
    }
  }
  return pdf.save()
}
