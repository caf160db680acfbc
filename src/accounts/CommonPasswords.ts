import { dictionary } from "@zxcvbn-ts/language-common"

/**
 * The 10 000 most common passwords of [D13], from zxcvbn-ts's maintained list (ranked by
 * frequency, most common first), rather than a list typed in by hand.
 */
const COMMON = new Set(dictionary["passwords-common"].slice(0, 10_000))

export const isCommonPassword = (password: string): boolean => COMMON.has(password)
