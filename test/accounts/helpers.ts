import type { Mail } from "../../src/platform/Mailer.ts"
import type { TestApp } from "../support/app.ts"

export const PASSWORD = "Tr1cky-Horse-Battery"

let addresses = 0
/** a client address of its own, so the per-address limits of [D30] stay out of tests about something else */
export const anyAddress = () => {
  addresses++
  return { "x-forwarded-for": `10.${200 + ((addresses >> 16) % 50)}.${(addresses >> 8) & 255}.${addresses & 255}` }
}

let counter = 0
/** a fresh address each call, so tests in one file never collide */
export const freshEmail = (prefix = "user") => `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}@example.com`

/** registers through the API and returns what the client would keep */
export const register = async (app: TestApp, fields: { name?: string; email?: string; password?: string } = {}) => {
  const email = fields.email ?? freshEmail()
  const password = fields.password ?? PASSWORD
  const res = await app.post("/v1/auth/register", {
    headers: anyAddress(),
    body: { name: fields.name ?? "Ada Lovelace", email, password, password_confirmation: password }
  })
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`)
  return { id: res.body.data.user.id as number, email: email.trim().toLowerCase(), password, token: res.body.data.token as string }
}

/** mails are sent after the response (a daemon fiber): wait for the one we expect */
export const waitForMail = async (app: TestApp, predicate: (mail: Mail) => boolean, timeoutMs = 2000): Promise<Mail> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = [...app.outbox].reverse().find(predicate)
    if (found) return found
    if (Date.now() > deadline) throw new Error("no matching mail was sent")
    await Bun.sleep(5)
  }
}

/** lets any mail that would be sent after the response go out */
export const settle = () => Bun.sleep(50)

export const verifyTokenOf = (mail: Mail): string => {
  const match = /\/verify-email\?token=([A-Za-z0-9]+)/.exec(mail.text)
  if (!match) throw new Error(`no verification link in: ${mail.text}`)
  return match[1]!
}

export const resetTokenOf = (mail: Mail): string => {
  const match = /\/reset-password\?token=([A-Za-z0-9]+)&email=/.exec(mail.text)
  if (!match) throw new Error(`no reset link in: ${mail.text}`)
  return match[1]!
}
