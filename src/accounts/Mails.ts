import { type Catalogue, fill, messagesOf } from "../platform/i18n/Messages.ts"
import type { Locale } from "../platform/i18n/Locale.ts"
import type { Mail } from "../platform/Mailer.ts"

/**
 * The e-mails of accounts, with the links of [D22] and [D23] (pages of [D26]), in the user's
 * language ([D120]).
 */

/**
 * A name as a mail shows it: one line, every line break a space ([D117]), so a name cannot add
 * lines of its own (a fake link, a fake signature) to a mail sent to someone else's address.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: vertical tab and form feed break a line in mail clients too
export const oneLine = (text: string): string => text.replace(/\r\n|[\n\r\u000b\u000c\u0085\u2028\u2029]/g, " ")

const hello = (m: Catalogue, name: string) => fill(m.mail.hello, { name: oneLine(name) })

export const verificationMail = (appUrl: string, to: { readonly name: string; readonly email: string }, token: string, locale: Locale = "en"): Mail => {
  const m = messagesOf(locale)
  const t = m.mail.verify_email
  return {
    to: to.email,
    subject: t.subject,
    text: [hello(m, to.name), "", t.intro, "", `${appUrl}/verify-email?token=${token}`, "", t.api, "", token, "", t.valid, t.ignore].join("\n")
  }
}

export const resetMail = (appUrl: string, email: string, token: string, locale: Locale = "en"): Mail => {
  const m = messagesOf(locale)
  const t = m.mail.reset_password
  return {
    to: email,
    subject: t.subject,
    text: [
      m.mail.hello_plain,
      "",
      t.intro,
      "",
      `${appUrl}/reset-password?token=${token}&email=${encodeURIComponent(email)}`,
      "",
      t.api,
      "",
      token,
      "",
      t.valid,
      t.ignore
    ].join("\n")
  }
}

/** The notice to the old address of an e-mail change ([D24]): a hijacked account is noticed. */
export const emailChangedMail = (to: { readonly name: string; readonly email: string }, newEmail: string, locale: Locale = "en"): Mail => {
  const m = messagesOf(locale)
  const t = m.mail.email_changed
  return {
    to: to.email,
    subject: t.subject,
    text: [hello(m, to.name), "", fill(t.changed, { old_email: to.email, new_email: newEmail }), t.next, "", t.warning].join("\n")
  }
}
