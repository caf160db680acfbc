import * as Schema from "effect/Schema"

/**
 * The languages of [D120]: every user has one, chosen at registration from `Accept-Language` and
 * changed on the profile; it picks the language of mails, pages and the invoice PDF. API answers
 * stay English.
 */
export const LOCALES = ["en", "ru", "fa", "zh"] as const
export const Locale = Schema.Literal(...LOCALES)
export type Locale = typeof Locale.Type
export const DEFAULT_LOCALE: Locale = "en"

export const isLocale = (value: unknown): value is Locale => typeof value === "string" && (LOCALES as ReadonlyArray<string>).includes(value)

/** `rtl` for Persian, laid out right to left; `ltr` for the others */
export const directionOf = (locale: Locale): "rtl" | "ltr" => (locale === "fa" ? "rtl" : "ltr")

/** the tag Intl formats with (`zh` is Simplified Chinese, as the catalogue is written) */
export const intlTag = (locale: Locale): string => (locale === "zh" ? "zh-CN" : locale)

/**
 * The best of our locales for an `Accept-Language` header ([D120]): each range with its q-value
 * (1 when absent, 0 = not acceptable), the highest q first and, at equal q, the one listed first;
 * a range matches a locale by its primary subtag (`ru-RU` → `ru`, `zh-Hant-TW` → `zh`); `*`
 * matches the default. None acceptable: `en`.
 */
export const negotiateLocale = (header: string | undefined | null): Locale => {
  if (header === undefined || header === null) return DEFAULT_LOCALE
  const ranked = header.split(",").flatMap((part, index) => {
    const [range, ...params] = part
      .trim()
      .split(";")
      .map((s) => s.trim())
    if (range === undefined || range === "") return []
    let q = 1
    for (const param of params) {
      const match = /^q\s*=\s*([0-9](?:\.[0-9]{0,3})?)$/i.exec(param)
      if (match) q = Math.min(1, Number(match[1]))
    }
    if (!(q > 0)) return []
    const primary = range.toLowerCase().split("-")[0]!
    const locale: Locale | undefined = primary === "*" ? DEFAULT_LOCALE : isLocale(primary) ? primary : undefined
    return locale === undefined ? [] : [{ locale, q, index }]
  })
  ranked.sort((a, b) => b.q - a.q || a.index - b.index)
  return ranked[0]?.locale ?? DEFAULT_LOCALE
}
