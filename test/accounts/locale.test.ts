import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, withToken } from "../support/typed.ts"
import { anyAddress, freshEmail, PASSWORD, resetTokenOf, waitForMail } from "./helpers.ts"

// [D120] the user's language: chosen at registration from Accept-Language, shown and changed on
// the profile, and spoken by the mails and the HTML pages (fa right to left).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const registerIn = async (acceptLanguage: string | undefined, name = "Ada") => {
  const email = freshEmail("locale")
  const anonymous = await typedClient(app, {
    headers: { ...anyAddress(), ...(acceptLanguage !== undefined ? { "accept-language": acceptLanguage } : {}) }
  })
  // a 201 with the token: the typed client decodes the declared status only
  const registered = withToken(await ok(anonymous.accounts.register({ payload: { name, email, password: PASSWORD, password_confirmation: PASSWORD } })))
  return { email, token: registered.token }
}

const localeOf = async (token: string): Promise<string> => {
  const me = await typedClient(app, { token })
  return (await ok(me.accounts.profile())).locale
}

describe("locale at registration and on the profile [D120]", () => {
  test("registration takes the best-ranked of en, ru, fa, zh in Accept-Language, else en", async () => {
    expect(await localeOf((await registerIn("de, ru;q=0.8")).token)).toBe("ru")
    expect(await localeOf((await registerIn("fr;q=0.9, zh-CN;q=0.5, fa;q=0.7")).token)).toBe("fa")
    expect(await localeOf((await registerIn("zh-TW")).token)).toBe("zh")
    expect(await localeOf((await registerIn("de, fr")).token)).toBe("en")
    expect(await localeOf((await registerIn(undefined)).token)).toBe("en")
  })

  test("GET /v1/account/profile shows locale; PUT {locale} changes it; another value is 422 errors.locale", async () => {
    const { token } = await registerIn("en")
    const profile = await app.get("/v1/account/profile", { token })
    expect(Object.keys(profile.body.data).sort()).toEqual(["created_at", "email", "id", "locale", "name"])
    expect(profile.body.data.locale).toBe("en")
    const me = await typedClient(app, { token })
    const changed = await ok(me.accounts.updateProfile({ payload: { locale: "zh" } }))
    expect(changed.message).toBe("Profile updated.")
    expect(await localeOf(token)).toBe("zh")
    for (const bad of ["de", "", "ZH", 7, null]) {
      const res = await app.put("/v1/account/profile", { token, body: { locale: bad } })
      expect(res.status).toBe(422)
      expect(res.body).toEqual({ success: false, message: "The given data was invalid.", errors: { locale: ["The selected locale is invalid."] } })
    }
    expect(await localeOf(token)).toBe("zh")
    // the cookie session's user carries it too ([D119])
    const session = await ok(me.accounts.currentSession())
    expect(session.user.locale).toBe("zh")
  })
})

describe("mails and pages in the user's language [D120]", () => {
  test("the verification mail of a Russian registration is in Russian", async () => {
    const { email } = await registerIn("ru-RU,ru;q=0.9,en;q=0.8", "Сергей")
    const mail = await waitForMail(app, (m) => m.to === email && m.text.includes("/verify-email?token="))
    expect(mail.subject).toBe("Подтвердите адрес электронной почты")
    expect(mail.text).toContain("Здравствуйте, Сергей!")
    expect(mail.text).toContain("Пожалуйста, подтвердите адрес электронной почты")
    expect(mail.text).not.toContain("Please confirm")
  })

  test("the reset page of a Persian user is in Persian, lang=fa dir=rtl; an unknown address follows Accept-Language", async () => {
    const { email, token } = await registerIn("fa")
    expect(await localeOf(token)).toBe("fa")
    const anonymous = await typedClient(app, { headers: anyAddress() })
    await ok(anonymous.accounts.forgotPassword({ payload: { email } }))
    const mail = await waitForMail(app, (m) => m.to === email && m.text.includes("/reset-password?token="))
    expect(mail.subject).toBe("بازنشانی گذرواژه")
    const link = new URL(/https?:\/\/\S+\/reset-password\?\S+/.exec(mail.text)![0])
    // the browser says English: the link's owner wins
    const page = await app.get(`${link.pathname}${link.search}`, { headers: { ...anyAddress(), "accept-language": "en" } })
    expect(page.status).toBe(200)
    expect(page.text).toContain('<html lang="fa" dir="rtl">')
    expect(page.text).toContain("بازنشانی گذرواژه")
    expect(page.text).toContain("گذرواژهٔ تازه")
    expect(page.text).not.toContain("New password")

    const stranger = await app.get(`/reset-password?token=${resetTokenOf(mail)}&email=nobody%40example.com`, {
      headers: { ...anyAddress(), "accept-language": "zh-CN,zh;q=0.9" }
    })
    expect(stranger.text).toContain('<html lang="zh">')
    expect(stranger.text).toContain("重置您的密码")
    const english = await app.get("/reset-password", { headers: anyAddress() })
    expect(english.status).toBe(422)
    expect(english.text).toContain('<html lang="en">')
    expect(english.text).toContain("Reset link invalid")
  })

  test("the verify page speaks the verified user's language", async () => {
    const { email } = await registerIn("zh")
    const mail = await waitForMail(app, (m) => m.to === email && m.text.includes("/verify-email?token="))
    const token = /token=([A-Za-z0-9]+)/.exec(mail.text)![1]
    const page = await app.get(`/verify-email?token=${token}`, { headers: { ...anyAddress(), "accept-language": "ru" } })
    expect(page.status).toBe(200)
    expect(page.text).toContain('<html lang="zh">')
    expect(page.text).toContain("邮箱已验证。")
    const bad = await app.get("/verify-email?token=nope", { headers: { ...anyAddress(), "accept-language": "ru" } })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('<html lang="ru">')
    expect(bad.text).toContain("Ссылка подтверждения недействительна")
  })
})
