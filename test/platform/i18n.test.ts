import { describe, expect, test } from "bun:test"
import { LOCALES, negotiateLocale } from "../../src/platform/i18n/Locale.ts"
import { CATALOGUES } from "../../src/platform/i18n/Messages.ts"

// [D120]: a message present in one locale is present in all four, with the same placeholders.

type Tree = { readonly [key: string]: string | Tree }

const leaves = (tree: Tree, prefix = ""): Map<string, string> => {
  const out = new Map<string, string>()
  for (const [key, value] of Object.entries(tree)) {
    const path = prefix === "" ? key : `${prefix}.${key}`
    if (typeof value === "string") out.set(path, value)
    else for (const [k, v] of leaves(value, path)) out.set(k, v)
  }
  return out
}

const placeholders = (text: string) => [...text.matchAll(/\{\{\s*([a-z_]+)\s*\}\}/g)].map((m) => m[1]).sort()

describe("the catalogues [D120]", () => {
  const english = leaves(CATALOGUES.en as unknown as Tree)

  test("every key of every locale is in every other, none empty", () => {
    expect(english.size).toBeGreaterThan(100)
    for (const locale of LOCALES) {
      const own = leaves(CATALOGUES[locale] as unknown as Tree)
      const missing = [...english.keys()].filter((k) => !own.has(k))
      const extra = [...own.keys()].filter((k) => !english.has(k))
      expect({ locale, missing, extra }).toEqual({ locale, missing: [], extra: [] })
      for (const [key, value] of own) expect(value.trim().length, `${locale} ${key}`).toBeGreaterThan(0)
    }
  })

  test("each message has the same placeholders in every locale", () => {
    for (const locale of LOCALES) {
      const own = leaves(CATALOGUES[locale] as unknown as Tree)
      for (const [key, value] of english) {
        expect({ key, locale, names: placeholders(own.get(key) ?? "") }).toEqual({ key, locale, names: placeholders(value) })
      }
    }
  })

  test("the other locales are translated, not copies of English", () => {
    for (const locale of ["ru", "fa", "zh"] as const) {
      const own = leaves(CATALOGUES[locale] as unknown as Tree)
      const same = [...english].filter(([key, value]) => own.get(key) === value && /[a-z]{4}/.test(value.replace(/\{\{[a-z_]+\}\}/g, "")))
      // a few are the same on purpose (API routes quoted in mails); most must not be
      expect(same.length, `${locale}: ${same.map(([k]) => k).join(", ")}`).toBeLessThan(3)
    }
  })
})

describe("Accept-Language [D120]", () => {
  test("the best-ranked of en, ru, fa, zh by q-value, else en", () => {
    expect(negotiateLocale("de, ru;q=0.8")).toBe("ru")
    expect(negotiateLocale("fr-FR,fr;q=0.9,zh-CN;q=0.8,en;q=0.7")).toBe("zh")
    expect(negotiateLocale("en;q=0.5, fa;q=0.9")).toBe("fa")
    expect(negotiateLocale("ru;q=0.5, fa;q=0.5")).toBe("ru")
    expect(negotiateLocale("FA-IR")).toBe("fa")
    expect(negotiateLocale("zh-Hant-TW;q=0.3, de")).toBe("zh")
    expect(negotiateLocale("ru;q=0, de")).toBe("en")
    expect(negotiateLocale("de, fr")).toBe("en")
    expect(negotiateLocale("")).toBe("en")
    expect(negotiateLocale(undefined)).toBe("en")
    expect(negotiateLocale("*;q=0.1, ru;q=0.05")).toBe("en")
    expect(negotiateLocale(";;,ru;q=abc")).toBe("ru")
  })
})
