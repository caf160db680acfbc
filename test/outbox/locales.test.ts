import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import Mustache from "mustache"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { englishNoticeView, englishSecurityView, renderNotice, renderSecurityMail } from "../../src/outbox/MailTexts.ts"
import type { NoticeViews, SecurityViews } from "../../src/outbox/NoticeViews.ts"
import { botText, type BotText, telegramText } from "../../src/outbox/TelegramTexts.ts"
import { type NotificationKind, render, SECURITY_TEMPLATES, type SecurityKind, TEMPLATES } from "../../src/outbox/Templates.ts"
import { LOCALES } from "../../src/platform/i18n/Locale.ts"
import type { Mail } from "../../src/platform/Mailer.ts"
import { DAY, days, servicesFixtures } from "../billing/services-fixtures.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { GIB, makeServer } from "../vpn/fixtures.ts"

// [D120] the outbox's notices and security mail, and their Telegram copies ([D125]), in the
// recipient's language: every kind renders in en, ru, fa and zh with every placeholder filled;
// a Russian and a Persian user get their quota notice and security mail in their language, with
// dates and numbers in its forms, Persian right to left.
setDefaultTimeout(30_000)

const at = new Date("2026-03-10T12:34:56.000Z")
const later = new Date("2026-04-09T12:34:56.000Z")
const to = { name: "Ada <Lovelace>", app_url: "https://app.example.test" }

/** views of every kind, with each branch (a reset date or none, a balance or none, ...) */
const NOTICES: { readonly [K in NotificationKind]: ReadonlyArray<NoticeViews[K]> } = {
  "expiry-3d": [{ service_id: 7, plan_name: "Pro <Plus>", expires_at: at }],
  "expiry-1d": [{ service_id: 7, plan_name: "Pro", expires_at: at }],
  expired: [{ service_id: 7, plan_name: "Pro", expires_at: at }],
  "quota-80": [
    { service_id: 7, plan_name: "Pro", used_gb: "8.50", limit_gb: 10, percent: 85, period_start: "2026-03", reset_date: "2026-04-01" },
    { service_id: 7, plan_name: "Pro", used_gb: "8.50", limit_gb: 10, percent: 85, period_start: "2026-03-10", reset_date: null }
  ],
  "quota-100": [{ service_id: 7, plan_name: "Pro", used_gb: "10.00", limit_gb: 10, percent: 100, period_start: "2026-03", reset_date: "2026-04-01" }],
  "renewal-invoice": [{ invoice_uuid: "inv-1", amount: "1234.50", currency: "EUR", due_date: at, service_id: 7, expires_at: at }],
  "renewal-failed": [
    {
      invoice_uuid: "inv-1",
      amount: "10.00",
      currency: "USD",
      service_id: 7,
      reason: "card_declined",
      card: { brand: "visa", last4: "4242" },
      attempt: 1,
      grace_until: later,
      next_attempt_at: at,
      final: false
    },
    {
      invoice_uuid: "inv-1",
      amount: "10.00",
      currency: "USD",
      service_id: 7,
      reason: "charge_failed",
      card: { brand: "mastercard", last4: "4444" },
      attempt: 3,
      grace_until: later,
      next_attempt_at: null,
      final: false
    },
    {
      invoice_uuid: "inv-1",
      amount: "10.00",
      currency: "USD",
      service_id: 7,
      reason: "no_saved_card",
      card: null,
      attempt: 2,
      grace_until: later,
      next_attempt_at: at,
      final: false
    },
    {
      invoice_uuid: "inv-1",
      amount: "10.00",
      currency: "USD",
      service_id: 7,
      reason: "no_saved_card",
      card: null,
      attempt: 4,
      grace_until: later,
      next_attempt_at: null,
      final: true
    }
  ],
  "payment-received": [
    { invoice_uuid: "inv-1", amount: "12.30", currency: "USD", balance_applied: "2.00", paid_at: at, service_id: 7, period_start: at, period_end: later },
    { invoice_uuid: "inv-1", amount: "12.30", currency: "USD", balance_applied: null, paid_at: at, service_id: null, period_start: null, period_end: null }
  ],
  "ticket-reply": [{ ticket_id: 4, ticket_subject: "Slow <node>", message: "Try the other server.\n{{not a placeholder}}" }],
  "refund-issued": [
    { invoice_uuid: "inv-1", credit_note_id: 3, amount: "5.00", currency: "EUR", refunded_to: "balance", gateway: null, reason: "Goodwill" },
    { invoice_uuid: "inv-1", credit_note_id: 3, amount: "5.00", currency: "EUR", refunded_to: "gateway", gateway: "stripe", reason: "Goodwill" }
  ],
  "service-cancelled": [
    { service_id: 7, plan_name: "Pro", at_period_end: true, ends_at: later },
    { service_id: 7, plan_name: "Pro", at_period_end: false, ends_at: at }
  ]
}

const SECURITY: { readonly [K in SecurityKind]: ReadonlyArray<SecurityViews[K]> } = {
  "sign-in-2fa": [
    { factor: "otp", signed_in_at: at, ip: "198.51.100.7", user_agent: "Firefox/130", recovery_codes_left: null },
    { factor: "recovery_code", signed_in_at: at, ip: null, user_agent: null, recovery_codes_left: 3 }
  ],
  "sign-in-telegram-2fa": [{ factor: "otp", signed_in_at: at, ip: "198.51.100.7", user_agent: "Telegram", recovery_codes_left: null }],
  "api-key-created": [
    { key_id: 9, key_name: "deploy", scopes: ["read", "write"], expires_at: later, created_at: at, ip: "198.51.100.7" },
    { key_id: 9, key_name: "deploy", scopes: ["read"], expires_at: null, created_at: at, ip: null }
  ],
  "password-changed": [{ at, ip: "198.51.100.7", sessions: 3, keys: 1 }],
  "password-reset": [{ at, ip: null, sessions: 1, keys: 0 }],
  "signed-out-everywhere": [{ at, ip: "198.51.100.7", sessions: 5, keys: 2 }]
}

const BOT_TEXTS: ReadonlyArray<BotText> = ["linked", "already-linked", "linked-elsewhere", "invalid-code", "private-only", "welcome"]

/** what must never show in a rendered message: a placeholder left unfilled, or a value that was not there */
const unfilled = (text: string) => /\{\{(?!not a placeholder)|(?<!a placeholder)\}\}|undefined|\bnull\b|NaN|Invalid Date|\[object/.exec(text)?.[0] ?? null

/** every name a Mustache template asks for (sections included) */
const namesOf = (template: string): Array<string> => {
  const walk = (tokens: Array<Array<unknown>>): Array<string> =>
    tokens.flatMap((t) => {
      const [type, name, , , children] = t as [string, string, number, number, Array<Array<unknown>> | undefined]
      if (type === "name" || type === "&" || type === "{") return [name]
      if (type === "#" || type === "^") return [name, ...walk(children ?? [])]
      return []
    })
  return walk(Mustache.parse(template) as Array<Array<unknown>>)
}

describe("every outbox template in every locale [D120]", () => {
  test("the English templates are given every name they ask for", () => {
    for (const kind of Object.keys(NOTICES) as Array<NotificationKind>) {
      for (const view of NOTICES[kind]) {
        const given = { ...englishNoticeView(kind, view as never, ""), name: "", app_url: "", subject: "" }
        const template = TEMPLATES[kind]
        for (const name of [template.subject, template.text, template.html].flatMap(namesOf))
          expect(`${kind}: ${name} ${name in given}`).toBe(`${kind}: ${name} true`)
      }
    }
    for (const kind of Object.keys(SECURITY) as Array<SecurityKind>) {
      for (const view of SECURITY[kind]) {
        const given = { ...englishSecurityView(kind, view as never), name: "", app_url: "", subject: "" }
        const template = SECURITY_TEMPLATES[kind]
        for (const name of [template.subject, template.text, template.html].flatMap(namesOf))
          expect(`${kind}: ${name} ${name in given}`).toBe(`${kind}: ${name} true`)
      }
    }
  })

  test("each notice, security mail and Telegram text renders in en, ru, fa, zh: nothing left unfilled, each in its language", () => {
    let rendered = 0
    const check = (label: string, mail: { subject: string; text: string; html: string }, english: { subject: string; text: string }) => {
      for (const part of [mail.subject, mail.text, mail.html]) expect({ label, unfilled: unfilled(part) }).toEqual({ label, unfilled: null })
      expect(mail.subject.length).toBeGreaterThan(0)
      expect(mail.text).toContain(to.app_url)
      expect(mail.html).toContain("Ada &lt;Lovelace&gt;")
      if (label.startsWith("en ")) return
      // not English: neither the subject nor the greeting
      expect(mail.subject, label).not.toBe(english.subject)
      expect(mail.text, label).not.toContain("Hello ")
      expect(mail.html, label).toContain(`<html lang="${label.slice(0, 2)}"${label.startsWith("fa ") ? ` dir="rtl"` : ""}>`)
    }
    for (const locale of LOCALES) {
      for (const kind of Object.keys(NOTICES) as Array<NotificationKind>) {
        for (const view of NOTICES[kind]) {
          const english = renderNotice(kind, view as never, "en", to)
          check(`${locale} ${kind}`, renderNotice(kind, view as never, locale, to), english)
          const chat = telegramText(kind, view as never, locale, to.app_url)
          expect({ kind, locale, unfilled: unfilled(chat) }).toEqual({ kind, locale, unfilled: null })
          expect(chat).toContain(to.app_url)
          if (locale !== "en") expect(chat).not.toBe(telegramText(kind, view as never, "en", to.app_url))
          rendered++
        }
      }
      for (const kind of Object.keys(SECURITY) as Array<SecurityKind>) {
        for (const view of SECURITY[kind]) {
          check(`${locale} ${kind}`, renderSecurityMail(kind, view as never, locale, to), renderSecurityMail(kind, view as never, "en", to))
          rendered++
        }
      }
      for (const text of BOT_TEXTS) {
        const said = botText(text, { email: "ada@example.com", app_url: to.app_url }, locale)
        expect({ text, locale, unfilled: unfilled(said) }).toEqual({ text, locale, unfilled: null })
        if (locale !== "en") expect(said).not.toBe(botText(text, { email: "ada@example.com", app_url: to.app_url }, "en"))
      }
    }
    expect(rendered).toBe(4 * (Object.values(NOTICES).flat().length + Object.values(SECURITY).flat().length))
  })

  test("dates, numbers and money in the locale's forms; English as it always was", () => {
    /** Intl separates with no-break spaces */
    const spaced = (text: string) => text.replace(/[\u00a0\u202f]/g, " ")
    const receipt = NOTICES["payment-received"][0]!
    expect(renderNotice("payment-received", receipt, "en", to).text).toContain("12.30 USD")
    expect(renderNotice("payment-received", receipt, "en", to).text).toContain(`${at.toISOString()} to ${later.toISOString()}`)
    const ru = spaced(renderNotice("payment-received", receipt, "ru", to).text)
    expect(ru).toContain("12,30 $")
    expect(ru).toContain("10 марта 2026 г.")
    const zh = renderNotice("payment-received", receipt, "zh", to).text
    expect(zh).toContain("US$12.30")
    expect(zh).toContain("2026年3月10日")
    const fa = renderNotice("payment-received", receipt, "fa", to).text
    // the Persian calendar and digits: 10 March 2026 is 19 Esfand 1404
    expect(fa).toContain("۱۹ اسفند ۱۴۰۴")
    expect(spaced(renderNotice("renewal-invoice", NOTICES["renewal-invoice"][0]!, "ru", to).subject)).toBe("Счёт на продление inv-1: 1 234,50 €")
    // a count in the locale's plural forms
    expect(renderSecurityMail("signed-out-everywhere", SECURITY["signed-out-everywhere"][0]!, "ru", to).text).toContain("все сеансы (5 сеансов)")
    expect(renderSecurityMail("password-changed", SECURITY["password-changed"][0]!, "ru", to).text).toContain("(3 сеанса)")
  })
})

describe("a failed renewal in every locale [D124] [D120]", () => {
  const [declined, failedOtherwise, noCard, final] = NOTICES["renewal-failed"]

  test("the reason is a code each locale words, with the card's brand and last digits", () => {
    const reasons = {
      en: ["the card visa ending 4242 was declined", "the charge of the card mastercard ending 4444 did not go through", "no saved card"],
      ru: ["карта visa, оканчивающаяся на 4242, отклонена", "списание с карты mastercard, оканчивающейся на 4444, не прошло", "нет сохранённой карты"],
      fa: ["کارت visa با چهار رقم پایانی 4242 رد شد", "برداشت از کارت mastercard با چهار رقم پایانی 4444 انجام نشد", "هیچ کارتی ذخیره نشده است"],
      zh: ["尾号为 4242 的 visa 卡被拒绝", "尾号为 4444 的 mastercard 卡扣款未成功", "没有已保存的银行卡"]
    } as const
    for (const locale of LOCALES) {
      const [card, other, none] = reasons[locale]
      for (const [view, words] of [
        [declined!, card],
        [failedOtherwise!, other],
        [noCard!, none]
      ] as const) {
        expect(renderNotice("renewal-failed", view, locale, to).text).toContain(words)
        expect(renderNotice("renewal-failed", view, locale, to).html).toContain(words)
        expect(telegramText("renewal-failed", view, locale, to.app_url)).toContain(words)
      }
      // the link to the invoice in the portal, in the mail and the chat
      expect(renderNotice("renewal-failed", declined!, locale, to).text).toContain(`${to.app_url}/invoices/inv-1`)
      expect(telegramText("renewal-failed", final!, locale, to.app_url)).toContain(`${to.app_url}/invoices/inv-1`)
    }
  })

  test("dates, money and the final notice in the locale's forms", () => {
    const spaced = (text: string) => text.replace(/[\u00a0\u202f]/g, " ")
    const ru = renderNotice("renewal-failed", declined!, "ru", to)
    expect(spaced(ru.subject)).toBe("Не удалось оплатить продление VPN: 10,00 $")
    expect(ru.text).toContain("до 9 апреля 2026 г.")
    expect(ru.text).toContain("Мы повторим попытку 10 марта 2026 г.")
    expect(renderNotice("renewal-failed", failedOtherwise!, "ru", to).text).not.toContain("повторим")
    expect(renderNotice("renewal-failed", final!, "ru", to).subject).toBe("Срок действия вашей услуги VPN истёк: продление не оплачено")
    expect(renderNotice("renewal-failed", final!, "zh", to).subject).toBe("您的 VPN 服务已到期：续费未支付")
    const fa = renderNotice("renewal-failed", declined!, "fa", to)
    expect(fa.html).toContain(`<html lang="fa" dir="rtl">`)
    // 9 April 2026 is 20 Farvardin 1405
    expect(fa.text).toContain("۲۰ فروردین ۱۴۰۵")
    expect(telegramText("renewal-failed", declined!, "zh", to.app_url)).toContain("2026年4月9日")
  })

  test("English word for word as the dunning notice always read", () => {
    const iso = {
      name: to.name,
      app_url: to.app_url,
      invoice_uuid: "inv-1",
      invoice_url: `${to.app_url}/invoices/inv-1`,
      amount: "10.00",
      currency: "USD",
      service_id: 7
    }
    expect(renderNotice("renewal-failed", declined!, "en", to)).toEqual(
      render("renewal-failed", {
        ...iso,
        reason: "the card visa ending 4242 was declined",
        attempt: 1,
        grace_until: later.toISOString(),
        next_attempt_at: at.toISOString(),
        final: false
      })
    )
    expect(renderNotice("renewal-failed", final!, "en", to)).toEqual(
      render("renewal-failed", {
        ...iso,
        reason: "no saved card",
        attempt: 4,
        grace_until: later.toISOString(),
        next_attempt_at: null,
        final: true
      })
    )
    expect(renderNotice("renewal-failed", declined!, "en", to).text).toBe(
      "Hello Ada <Lovelace>,\n\nWe could not collect the renewal of your service #7 (the card visa ending 4242 was declined).\n" +
        "Your VPN keeps working at a reduced speed until 2026-04-09T12:34:56.000Z. We will try again on 2026-03-10T12:34:56.000Z.\n\n" +
        "  Invoice:  inv-1\n  Amount:   10.00 USD\n\nPay it now to get full speed back at once: https://app.example.test/invoices/inv-1\n--\n" +
        "You receive this e-mail because notifications are on in your account settings (https://app.example.test)."
    )
    expect(telegramText("renewal-failed", declined!, "en", to.app_url)).toBe(
      "We could not collect the renewal of your service #7 (the card visa ending 4242 was declined): 10.00 USD. " +
        "Your VPN keeps working at a reduced speed until 2026-04-09T12:34:56.000Z. We will try again on 2026-03-10T12:34:56.000Z. " +
        "Pay it now to get full speed back:\nhttps://app.example.test/invoices/inv-1"
    )
    expect(telegramText("renewal-failed", final!, "en", to.app_url)).toBe(
      "The renewal of your service #7 was not paid after the last retry: invoice inv-1 (10.00 USD) is cancelled and the service has expired.\n" +
        "https://app.example.test/invoices/inv-1"
    )
  })
})

describe("English stays as it was [D96] [D120]", () => {
  test("a quota notice's and a security mail's plain text, word for word as before locales", () => {
    expect(renderNotice("quota-80", NOTICES["quota-80"][0]!, "en", to).text).toBe(
      "Hello Ada <Lovelace>,\n\nYour Pro service #7 has used 8.50 GB of its 10 GB (85 %)\nin the period that started on 2026-03. The quota resets on 2026-04-01.\n\n" +
        "See your usage: https://app.example.test (GET /v1/bandwidth).\n--\nYou receive this e-mail because notifications are on in your account settings (https://app.example.test)."
    )
    const changed = renderSecurityMail("password-changed", SECURITY["password-changed"][0]!, "en", to)
    expect(changed.subject).toBe("Your password was changed")
    expect(changed.text).toBe(
      "Hello Ada <Lovelace>,\n\nThe password of your account was changed.\n\n  When:     2026-03-10 12:34:56 UTC\n  Address:  198.51.100.7\n\n" +
        "Revoked: every other session (3 sessions) and every API key (1 key); the session that changed it stays signed in.\n\n" +
        "If you did not change it, reset your password at once: https://app.example.test (POST /v1/auth/forgot-password).\n--\n" +
        "This security notice is always sent, whatever your notification settings (https://app.example.test)."
    )
    expect(changed.html).toContain(`<tr><th align="left">When</th><td>2026-03-10 12:34:56 UTC</td></tr>`)
  })
})

// ---- through the API: a Russian and a Persian user -------------------------------------------

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ config: { appUrl: "https://app.example.test" } })
})
afterAll(() => app.dispose())

const mailsTo = (email: string) => app.outbox.filter((m) => m.to === email)
const waitFor = async (email: string, match: (mail: Mail) => boolean): Promise<Mail> => {
  const deadline = Date.now() + 3000
  for (;;) {
    const found = mailsTo(email).find(match)
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`no such mail to ${email}: ${JSON.stringify(mailsTo(email).map((m) => m.subject))}`)
    await Bun.sleep(10)
  }
}

const userIn = async (locale: "ru" | "fa", name: string) => {
  const user = await app.createUser({ name })
  const me = await typedClient(app, { token: user.token })
  // the declared 200 answer
  await ok(me.accounts.updateProfile({ payload: { locale } }))
  return user
}

describe("a quota notice in the user's language [D120] [D96]", () => {
  /** a user of `locale` with a 10 GB plan whose node reports 8.5 GB: the 80 % notice */
  const crossEightyPercent = async (locale: "ru" | "fa", name: string) => {
    app.clock.set(at)
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Pro <Plus>", bandwidth: 10 })
    const cycleId = await fx.cycle(planId, { days: 30, price: "12.30", currency: "EUR" })
    const user = await userIn(locale, name)
    await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(at, 20) })
    const server = await makeServer(app, { planIds: [planId] })
    const me = await typedClient(app, { token: user.token })
    // the config is only the step that makes the peer (its declared 200 answer)
    expect(await ok(me.vpn.wireguard({ path: { server: server.id } }))).toContain("[Interface]")
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${server.id} and user_id = ${user.id}`
    const node = await typedClient(app, { token: server.nodeToken })
    const report = await ok(node.node.usage({ headers: {}, payload: [{ public_key: peer!.public_key, rx_bytes: 8.5 * GIB, tx_bytes: 0 }] }))
    expect(report.accepted).toBe(1)
    await app.run(runJobsOnce)
    return { user, mail: await waitFor(user.email, (m) => m.html?.includes("<strong>Pro &lt;Plus&gt;</strong>") === true) }
  }

  test("Russian: the subject, the sentence, the numbers and the dates in Russian", async () => {
    const { mail } = await crossEightyPercent("ru", "Сергей")
    expect(mail.subject).toBe("Вы израсходовали 80 % трафика за этот период")
    expect(mail.text).toContain("Здравствуйте, Сергей!")
    expect(mail.text).toContain("израсходовала 8,5 ГБ из 10 ГБ (85 %) за период, начавшийся 1 марта 2026 г.")
    expect(mail.text).toContain("Лимит обновится 1 апреля 2026 г.")
    expect(mail.text).not.toContain("GB")
    expect(mail.text).not.toContain("Hello")
    expect(mail.html).toContain(`<html lang="ru">`)
    expect(mail.html).toContain("Pro &lt;Plus&gt;")
  })

  test("Persian: right to left, the Persian calendar and digits", async () => {
    const { mail } = await crossEightyPercent("fa", "Dariush")
    expect(mail.subject).toBe("۸۰ درصد حجم این دوره را مصرف کرده‌اید")
    expect(mail.html).toContain(`<html lang="fa" dir="rtl">`)
    expect(mail.html).toContain(`<body dir="rtl"`)
    expect(mail.text).toContain("Dariush عزیز، سلام")
    expect(mail.text).toContain("۸٫۵ گیگابایت از ۱۰ گیگابایت (۸۵ درصد)")
    // 1 March 2026 is 10 Esfand 1404; 1 April 2026 is 12 Farvardin 1405
    expect(mail.text).toContain("۱۰ اسفند ۱۴۰۴")
    expect(mail.text).toContain("۱۲ فروردین ۱۴۰۵")
    // every Persian line of the plain text opens with a right-to-left mark
    const persian = mail.text.split("\n").filter((line) => /[\u0600-\u06ff]/.test(line))
    expect(persian.length).toBeGreaterThan(3)
    for (const line of persian) expect(line.startsWith("\u200f")).toBe(true)
  })
})

describe("security mail in the user's language [D120] [D96]", () => {
  test("Russian: API key created, with its dates in Russian and 'never' for no expiry", async () => {
    app.clock.set(at)
    const user = await userIn("ru", "Сергей")
    const terraform = await typedClient(app, { token: user.token, headers: { "x-forwarded-for": "198.51.100.40", "user-agent": "Terraform/1.9" } })
    // the declared 201 answer
    const created = await ok(terraform.accounts.createApiKey({ payload: { name: "deploy <bot>", scopes: ["read"] } }))
    const mail = await waitFor(user.email, (m) => m.subject.startsWith("Создан новый API-ключ"))
    expect(mail.subject).toBe("Создан новый API-ключ: deploy <bot>")
    expect(mail.text).toContain("Название:")
    expect(mail.text).toContain("deploy <bot>")
    expect(mail.text).toMatch(/Истекает: +никогда/)
    expect(mail.text).toContain("10 марта 2026 г. в 12:34:56 UTC")
    expect(mail.text).toContain("198.51.100.40")
    expect(mail.text).toContain("Это уведомление о безопасности отправляется всегда")
    expect(mail.html).toContain("deploy &lt;bot&gt;")
    expect(mail.text).not.toContain(created.key)
  })

  test("Persian: signed out everywhere, right to left, counts in Persian", async () => {
    app.clock.set(at)
    const user = await userIn("fa", "Dariush")
    const me = await typedClient(app, { token: user.token, headers: { "x-forwarded-for": "198.51.100.41" } })
    // the declared 200 answer
    expect(typeof (await ok(me.accounts.logoutAll()))).toBe("string")
    const mail = await waitFor(user.email, (m) => m.subject === "از همهٔ دستگاه‌ها خارج شدید")
    expect(mail.html).toContain(`<html lang="fa" dir="rtl">`)
    expect(mail.text).toContain("باطل شد: همهٔ نشست‌ها (۱ نشست).")
    expect(mail.text).toContain("باطل نشد: کلیدهای API شما (۰ کلید)")
    expect(mail.text).toContain("۱۹ اسفند ۱۴۰۴")
    expect(mail.text).toContain("198.51.100.41")
    expect(mail.text).not.toContain("Revoked")
  })

  test("an English user's mail is unchanged: the same words and forms as before locales", async () => {
    app.clock.set(new Date(at.getTime() + DAY))
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token, headers: { "x-forwarded-for": "198.51.100.42" } })
    // the declared 200 answer
    expect(typeof (await ok(me.accounts.logoutAll()))).toBe("string")
    const mail = await waitFor(user.email, (m) => m.subject === "You were signed out everywhere")
    expect(mail.text).toContain(
      `When:     2026-03-11 12:34:56 UTC\n  Address:  198.51.100.42\n\nRevoked: every session (1 session).\nNot revoked: your API keys (0 keys)`
    )
    expect(mail.html).toContain(`<html lang="en">`)
  })
})
