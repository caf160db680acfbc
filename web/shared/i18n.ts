/**
 * The four languages of [D120]: `en`, `ru`, `fa` (right to left), `zh`. Before sign-in the app
 * follows the browser (or the language picked with the switch); signed in, the user's `locale`.
 * Every locale has every key of `en` (the compiler checks it, and test/portal/locales.test.ts).
 */
import i18next from "i18next"
import { initReactI18next } from "react-i18next"
import { en } from "./locales/en.ts"
import { fa } from "./locales/fa.ts"
import { ru } from "./locales/ru.ts"
import { zh } from "./locales/zh.ts"

export const LOCALES = ["en", "ru", "fa", "zh"] as const
export type Locale = (typeof LOCALES)[number]

export const LOCALE_NAMES: Record<Locale, string> = { en: "English", ru: "Русский", fa: "فارسی", zh: "中文" }

export const isLocale = (value: unknown): value is Locale => typeof value === "string" && (LOCALES as ReadonlyArray<string>).includes(value)

/** The best of the four in the browser's languages, in its order of preference; else `en`. */
export const browserLocale = (): Locale => {
  for (const language of navigator.languages ?? [navigator.language]) {
    const base = language.toLowerCase().split("-")[0]
    if (isLocale(base)) return base
  }
  return "en"
}

const STORED = "vpn-locale"

/** Switches the app's language and the document's `lang` and `dir` (`rtl` for `fa`). */
export const applyLocale = (locale: Locale) => {
  void i18next.changeLanguage(locale)
  document.documentElement.lang = locale
  document.documentElement.dir = locale === "fa" ? "rtl" : "ltr"
  try {
    localStorage.setItem(STORED, locale)
  } catch {
    // storage off: the browser's language next time
  }
}

export const initialLocale = (): Locale => {
  try {
    const stored = localStorage.getItem(STORED)
    if (isLocale(stored)) return stored
  } catch {
    // storage off
  }
  return browserLocale()
}

export const initI18n = () => {
  const locale = initialLocale()
  void i18next.use(initReactI18next).init({
    resources: { en: { translation: en }, ru: { translation: ru }, fa: { translation: fa }, zh: { translation: zh } },
    lng: locale,
    fallbackLng: "en",
    keySeparator: false,
    nsSeparator: false,
    interpolation: { escapeValue: false },
    returnNull: false
  })
  applyLocale(locale)
}
