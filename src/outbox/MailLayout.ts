import { escapeHtml } from "../platform/EscapeHtml.ts"
import { directionOf, type Locale } from "../platform/i18n/Locale.ts"
import type { Catalogue } from "../platform/i18n/Messages.ts"
import { colon, fillPlain, rtlLines, type Shown } from "./NoticeViews.ts"

/**
 * The layout of the localized mails of `MailTexts.ts` ([D96], [D120]): a message is a subject and
 * blocks of catalogue sentences, tables, quotes and links; this file writes them as plain text and
 * as HTML (escaped, bold where asked, right to left for Persian), with the greeting and the footer.
 */

type Values = Readonly<Record<string, string | number>>

/** a catalogue sentence and its values; `strong` values are bold in the HTML part */
export interface Sentence {
  readonly template: string
  readonly values?: Values
  readonly strong?: ReadonlyArray<string>
}

export type Block =
  | { readonly p: ReadonlyArray<Sentence> }
  | { readonly table: ReadonlyArray<readonly [label: string, value: string]> }
  | { readonly quote: string }
  | { readonly link: string; readonly href: string }

/** a message: its subject and its blocks (the greeting and the footer are the layout's) */
export interface Doc {
  readonly subject: string
  readonly blocks: ReadonlyArray<Block>
}

export type Localized<Views, K extends keyof Views> = Build<Views[K]>
export type Build<V> = (view: V, shown: Shown, m: Catalogue, to: Addressee) => Doc

const PLACEHOLDER = /\{\{\s*([a-z_]+)\s*\}\}/g

const plainOf = (s: Sentence) => fillPlain(s.template, s.values ?? {})

/** the sentence escaped for HTML, its values escaped too (and bold where asked) */
const htmlSentence = (s: Sentence) =>
  escapeHtml(s.template).replace(PLACEHOLDER, (whole, name: string, offset: number, template: string) => {
    const value = s.values?.[name]
    if (value === undefined) return whole
    // one full stop, as fillPlain writes it
    const text = String(value)
    const escaped = escapeHtml(template[offset + whole.length] === "." && text.endsWith(".") ? text.slice(0, -1) : text)
    return s.strong?.includes(name) ? `<strong>${escaped}</strong>` : escaped
  })

/** how many columns a label takes in a monospaced plain-text reader (a Chinese character two) */
const columns = (text: string) =>
  [...text].reduce((n, c) => n + (/[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(c) ? 2 : 1), 0)

const textOf = (locale: Locale, block: Block): string => {
  if ("p" in block) return block.p.map(plainOf).join("\n")
  if ("table" in block) {
    const labels = block.table.map(([label]) => `${label}${colon(locale).trimEnd()}`)
    const width = Math.max(...labels.map(columns)) + 2
    return block.table.map(([, value], i) => `  ${labels[i]}${" ".repeat(width - columns(labels[i]!))}${value}`).join("\n")
  }
  if ("quote" in block) return block.quote
  return `${block.link}${colon(locale)}${block.href}`
}

const htmlOf = (block: Block, align: "left" | "right"): string => {
  if ("p" in block) return `<p>${block.p.map(htmlSentence).join("\n")}</p>`
  if ("table" in block) {
    const rows = block.table.map(([label, value]) => `<tr><th align="${align}">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`)
    return `<table>\n${rows.join("\n")}\n</table>`
  }
  if ("quote" in block) return `<blockquote style="white-space: pre-wrap">${escapeHtml(block.quote)}</blockquote>`
  return `<p><a href="${escapeHtml(block.href)}">${escapeHtml(block.link)}</a></p>`
}

/** the layout of every localized mail: greeting, blocks, a footer saying why it was sent */
export const mailOf = (locale: Locale, m: Catalogue, doc: Doc, to: Addressee, footer: string): Rendered => {
  const rtl = directionOf(locale) === "rtl"
  const dir = rtl ? ` dir="rtl"` : ""
  const hello = fillPlain(m.mail.hello, { name: to.name })
  const text = `${[hello, ...doc.blocks.map((block) => textOf(locale, block))].join("\n\n")}\n--\n${footer}\n${to.app_url}`
  const html = `<!doctype html>
<html lang="${locale}"${dir}><head><meta charset="utf-8"><title>${escapeHtml(doc.subject)}</title></head>
<body${dir} style="font-family: sans-serif; line-height: 1.5; color: #222">
<p>${escapeHtml(hello)}</p>
${doc.blocks.map((block) => htmlOf(block, rtl ? "right" : "left")).join("\n")}
<p style="color: #666; font-size: 0.9em">${escapeHtml(footer)} <a href="${escapeHtml(to.app_url)}">${escapeHtml(to.app_url)}</a></p>
</body></html>`
  return { subject: doc.subject, text: rtlLines(locale, text), html }
}

export interface Rendered {
  readonly subject: string
  readonly text: string
  readonly html: string
}

/** who the message is to, and where the app is: in every message */
export interface Addressee {
  readonly name: string
  readonly app_url: string
}
