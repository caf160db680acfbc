import { describe, expect, test } from "bun:test"
import { Glob } from "bun"
import { resolve } from "node:path"
import { en } from "../../web/shared/locales/en.ts"
import { fa } from "../../web/shared/locales/fa.ts"
import { ru } from "../../web/shared/locales/ru.ts"
import { zh } from "../../web/shared/locales/zh.ts"

/*
 * [D120]: a message present in one locale is present in all four, and every key the portal and
 * the console use exists. (The compiler refuses a locale without a key of `en`; this also
 * catches extra keys, empty texts, lost `{{variables}}` and keys used in `web/` but never written.)
 */

const WEB = resolve(import.meta.dir, "../../web")
const LOCALES = { en, ru, fa, zh } as Record<string, Record<string, string>>
const variables = (text: string) => [...text.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]).sort()

describe("the four locales", () => {
  for (const [name, messages] of Object.entries(LOCALES)) {
    test(`${name} has exactly the keys of en, each non-empty, with the same variables`, () => {
      expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort())
      for (const [key, text] of Object.entries(en)) {
        expect(messages[key]?.trim().length ?? 0, `${name}: ${key}`).toBeGreaterThan(0)
        expect(variables(messages[key]!), `${name}: ${key}`).toEqual(variables(text))
      }
    })
  }

  test("every key used in web/ is a key of en (static keys and the prefixes built at run time)", async () => {
    const used = new Set<string>()
    const prefixes = new Set<string>()
    for await (const path of new Glob("**/*.tsx").scan(WEB)) {
      const source = await Bun.file(`${WEB}/${path}`).text()
      for (const m of source.matchAll(/\bt\(\s*"([\w.]+)"/g)) used.add(m[1]!)
      for (const m of source.matchAll(/\?\s*"([\w.]+)"\s*:\s*"([\w.]+)"/g)) if (m[1]!.includes(".")) used.add(m[1]!), used.add(m[2]!)
      for (const m of source.matchAll(/\bt\(`([\w.]+)\.\$\{/g)) prefixes.add(m[1]!)
    }
    expect(used.size).toBeGreaterThan(100)
    const missing = [...used].filter((key) => !(key in en))
    expect(missing).toEqual([])
    for (const prefix of prefixes)
      expect(
        Object.keys(en).some((k) => k.startsWith(`${prefix}.`)),
        prefix
      ).toBe(true)
    // the values those prefixes take
    for (const platform of ["ios", "android", "windows", "macos", "linux", "router", "other"]) expect(`platform.${platform}` in en).toBe(true)
    for (const status of ["active", "pending", "paid", "cancelled", "open", "closed", "disabled", "sent", "failed"]) expect(`status.${status}` in en).toBe(true)
  })

  test("the English labels of the sign-in and sign-up forms ([D121])", () => {
    expect([en["auth.email"], en["auth.password"], en["auth.signIn"]]).toEqual(["E-mail", "Password", "Sign in"])
    expect([en["auth.name"], en["auth.confirmPassword"], en["auth.createAccount"]]).toEqual(["Name", "Confirm password", "Create account"])
  })
})
