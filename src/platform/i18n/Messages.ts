import Mustache from "mustache"
import en from "./messages/en.json"
import fa from "./messages/fa.json"
import ru from "./messages/ru.json"
import zh from "./messages/zh.json"
import { intlTag, type Locale } from "./Locale.ts"

/**
 * The server's messages in the four languages of [D120]: one JSON file per locale under
 * `messages/`, the English one the shape of all. `Catalogue` is that shape with every leaf a
 * string, so a key missing (or misspelled) in any locale fails the type check here, and
 * test/platform/i18n.test.ts fails on a missing key or placeholder too. The portal may import the
 * same files. API answers stay English; these are for mails, pages and the invoice PDF.
 */
type Shape<T> = { readonly [K in keyof T]: T[K] extends string ? string : Shape<T[K]> }
export type Catalogue = Shape<typeof en>

export const CATALOGUES: { readonly [L in Locale]: Catalogue } = { en, ru, fa, zh }

export const messagesOf = (locale: Locale): Catalogue => CATALOGUES[locale]

export type Values = Readonly<Record<string, string | number | boolean | null | undefined>>

const raw = (value: unknown) => String(value)

/** a message with its `{{placeholders}}` filled, nothing escaped (escape for HTML where it goes) */
export const fill = (template: string, values: Values = {}): string => Mustache.render(template, values, {}, { escape: raw })

/** the plural form of `forms` for `count` in `locale` (Intl's plural rules), filled with `{{count}}` */
export const plural = (
  locale: Locale,
  forms: { readonly one: string; readonly few: string; readonly many: string; readonly other: string },
  count: number,
  shown: string = String(count)
): string => {
  const rule = new Intl.PluralRules(intlTag(locale)).select(count)
  const form = rule === "one" || rule === "few" || rule === "many" ? forms[rule] : forms.other
  return fill(form, { count: shown })
}
