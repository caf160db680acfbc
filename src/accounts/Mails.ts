import type { Mail } from "../platform/Mailer.ts"

/** The e-mails of accounts, with the links of [D22] and [D23] (pages of [D26] until a web front exists). */

/**
 * A name as a mail shows it: one line, every line break a space ([D117]), so a name cannot add
 * lines of its own (a fake link, a fake signature) to a mail sent to someone else's address.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: vertical tab and form feed break a line in mail clients too
export const oneLine = (text: string): string => text.replace(/\r\n|[\n\r\u000b\u000c\u0085\u2028\u2029]/g, " ")

export const verificationMail = (appUrl: string, to: { readonly name: string; readonly email: string }, token: string): Mail => ({
  to: to.email,
  subject: "Verify your e-mail address",
  text: [
    `Hello ${oneLine(to.name)},`,
    "",
    "Please confirm your e-mail address by opening this link:",
    "",
    `${appUrl}/verify-email?token=${token}`,
    "",
    "Or send this token to POST /v1/auth/verify-email:",
    "",
    token,
    "",
    "The link is valid for 24 hours and can be used once.",
    "If you did not create an account, you can ignore this e-mail."
  ].join("\n")
})

export const resetMail = (appUrl: string, email: string, token: string): Mail => ({
  to: email,
  subject: "Reset your password",
  text: [
    "Hello,",
    "",
    "Someone asked to reset the password of your account. Open this link to choose a new one:",
    "",
    `${appUrl}/reset-password?token=${token}&email=${encodeURIComponent(email)}`,
    "",
    "Or send this token with your e-mail and new password to POST /v1/auth/reset-password:",
    "",
    token,
    "",
    "The link is valid for 60 minutes and can be used once.",
    "If you did not ask for it, ignore this e-mail: your password stays as it is."
  ].join("\n")
})

/** The notice to the old address of an e-mail change ([D24]): a hijacked account is noticed. */
export const emailChangedMail = (to: { readonly name: string; readonly email: string }, newEmail: string): Mail => ({
  to: to.email,
  subject: "Your e-mail address was changed",
  text: [
    `Hello ${oneLine(to.name)},`,
    "",
    `The e-mail address of your account was changed from ${to.email} to ${newEmail}.`,
    "Messages about your account now go to the new address.",
    "",
    "If you did not make this change, contact support at once: someone else may have access to your account."
  ].join("\n")
})
