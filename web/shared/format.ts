/** Dates, numbers, money and sizes per locale ([D120]); the API keeps its own formats. */
import i18next from "i18next"

const tag = () => (i18next.language === "zh" ? "zh-CN" : i18next.language || "en")

export const formatDate = (iso: string | null | undefined) =>
  iso === null || iso === undefined ? "—" : new Intl.DateTimeFormat(tag(), { dateStyle: "medium" }).format(new Date(iso))

export const formatDateTime = (iso: string | null | undefined) =>
  iso === null || iso === undefined ? "—" : new Intl.DateTimeFormat(tag(), { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso))

/** `"4.49"` (the API's decimal string) in `USD` -> `$4.49` (per locale); never through cents arithmetic here */
export const formatMoney = (amount: string | number, currency: string) => {
  try {
    return new Intl.NumberFormat(tag(), { style: "currency", currency }).format(Number(amount))
  } catch {
    return `${amount} ${currency}`
  }
}

export const formatNumber = (n: number, digits = 0) => new Intl.NumberFormat(tag(), { maximumFractionDigits: digits }).format(n)

const UNITS = ["B", "KB", "MB", "GB", "TB"] as const
export const formatBytes = (bytes: number) => {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return `${formatNumber(value, unit === 0 ? 0 : 2)} ${UNITS[unit]}`
}
