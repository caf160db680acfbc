import { intlTag, type Locale } from "./Locale.ts"

/**
 * Dates, numbers and money as a person of each locale reads them ([D120]), always in UTC. English
 * keeps the forms the earlier decisions print ([D96] mails, [D113] PDF): `2026-01-15`,
 * `2026-01-15 12:00 UTC`, `9.00 EUR`; the other locales use Intl (the Persian calendar and digits
 * for `fa`, `2026年1月15日` for `zh`, `9,00 €` for `ru`).
 */

const cache = new Map<string, Intl.DateTimeFormat | Intl.NumberFormat>()
const dateFormat = (locale: Locale, key: string, options: Intl.DateTimeFormatOptions) => {
  const id = `d:${locale}:${key}`
  let format = cache.get(id) as Intl.DateTimeFormat | undefined
  if (format === undefined) {
    format = new Intl.DateTimeFormat(intlTag(locale), { ...options, timeZone: "UTC" })
    cache.set(id, format)
  }
  return format
}

/** a day: `2026-01-15` in English, `15 января 2026 г.` in Russian */
export const formatDay = (locale: Locale, at: Date): string =>
  locale === "en" ? at.toISOString().slice(0, 10) : dateFormat(locale, "day", { year: "numeric", month: "long", day: "numeric" }).format(at)

/** a moment, in UTC: `2026-01-15 12:00 UTC` in English (with `:ss` when `seconds`) */
export const formatMoment = (locale: Locale, at: Date, options: { readonly seconds?: boolean } = {}): string => {
  if (locale === "en")
    return `${at
      .toISOString()
      .slice(0, options.seconds ? 19 : 16)
      .replace("T", " ")} UTC`
  return dateFormat(locale, options.seconds ? "moment-s" : "moment", {
    year: "numeric",
    month: "long",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    ...(options.seconds ? { second: "2-digit" } : {}),
    hourCycle: "h23",
    timeZoneName: "short"
  }).format(at)
}

/** a number as the locale writes it (`1 234,5` in Russian, Persian digits in Persian) */
export const formatNumber = (locale: Locale, value: number): string =>
  locale === "en" ? String(value) : new Intl.NumberFormat(intlTag(locale), { maximumFractionDigits: 2 }).format(value)

/**
 * An amount of money (`amount` a decimal string such as `9.00`, as the API gives it) with its
 * currency: `9.00 EUR` in English, `9,00 €` in Russian, `€9.00` in Chinese.
 */
export const formatMoney = (locale: Locale, amount: string, currency: string): string => {
  const value = Number(amount)
  if (locale === "en" || !Number.isFinite(value) || !/^[A-Z]{3}$/.test(currency)) return `${amount} ${currency}`
  const id = `m:${locale}:${currency}`
  let format = cache.get(id) as Intl.NumberFormat | undefined
  if (format === undefined) {
    format = new Intl.NumberFormat(intlTag(locale), { style: "currency", currency })
    cache.set(id, format)
  }
  return format.format(value)
}
