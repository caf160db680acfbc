import type * as LanguageCommon from "@zxcvbn-ts/language-common"

/**
 * The 10 000 most common passwords of [D13], from zxcvbn-ts's maintained list (ranked by
 * frequency, most common first), rather than a list typed in by hand.
 *
 * The package decompresses its whole dictionary when it is evaluated (about 13 MB resident), so
 * it is loaded at the first password a process checks, not at start-up (issue 27;
 * docs/decisions.md, "Idle memory"). The check runs inside a synchronous schema filter, hence a
 * synchronous `require`; the bundler keeps the package in the binary and evaluates it then.
 */
let common: ReadonlySet<string> | undefined

const load = (): ReadonlySet<string> => {
  const { dictionary }: typeof LanguageCommon = require("@zxcvbn-ts/language-common")
  return new Set(dictionary["passwords-common"].slice(0, 10_000))
}

export const isCommonPassword = (password: string): boolean => (common ??= load()).has(password)
