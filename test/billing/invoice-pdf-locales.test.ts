import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { LOCALES } from "../../src/platform/i18n/Locale.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"

// [D120]: the invoice PDF in its owner's language, with embedded fonts that show Persian (right to
// left, shaped) and Chinese; read back with `pdftotext` (apt poppler-utils; .ci/run installs it).
const pdftotext = Bun.which("pdftotext")

let app: TestApp
let staff: TypedClient

beforeAll(async () => {
  app = await makeTestApp()
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Premium Plus', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'EUR')`
})
afterAll(() => app.dispose())

/** the PDF's text, without the bidi controls pdftotext wraps right-to-left lines in */
const pdfTextOf = async (uuid: string, token: string) => {
  const res = await app.fetch(new Request(`http://localhost:3000/v1/invoices/${uuid}/pdf`, { headers: { authorization: `Bearer ${token}` } }))
  expect(res.status).toBe(200)
  const bytes = new Uint8Array(await res.arrayBuffer())
  const proc = Bun.spawnSync([pdftotext!, "-layout", "-", "-"], { stdin: bytes })
  expect(proc.exitCode).toBe(0)
  return { bytes, text: proc.stdout.toString().replace(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, "") }
}

const paidInvoiceOf = async (locale: (typeof LOCALES)[number], name: string) => {
  const user = await app.createUser({ name })
  const me = await typedClient(app, { token: user.token })
  await ok(me.accounts.updateProfile({ payload: { locale } }))
  const { uuid } = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
  return { uuid, token: user.token }
}

describe("the invoice PDF in the owner's language [D120]", () => {
  test.skipIf(pdftotext === null)("zh: Chinese labels, the date and the money as zh-CN writes them", async () => {
    const { token, uuid } = await paidInvoiceOf("zh", "王小明")
    const { bytes, text } = await pdfTextOf(uuid, token)
    for (const word of ["账单", "状态", "已支付", "开具时间", "买方", "王小明", "套餐", "Premium Plus", "已付金额", "€10.00", "2026年1月15日", uuid]) {
      expect(text).toContain(word)
    }
    expect(text).not.toContain("Amount paid")
    // the Chinese font is embedded as a subset: the file stays small
    expect(bytes.length).toBeLessThan(400_000)
  })

  test.skipIf(pdftotext === null)("fa: Persian labels and name, Persian digits and calendar, the uuid left to right", async () => {
    const paid = await paidInvoiceOf("fa", "مریم احمدی")
    // a uuid that starts with digits: the bidi algorithm alone splits it at its first hyphen and
    // shows "06c3-…-49225102" in a right-to-left line; it must stay one left-to-right run
    const uuid = "49225102-06c3-48d8-850e-0bb9af522b6c"
    await app.sql`update invoices set uuid = ${uuid} where uuid = ${paid.uuid}`
    const { text } = await pdfTextOf(uuid, paid.token)
    for (const word of ["صورتحساب", "وضعیت", "خریدار", "مریم احمدی", "طرح", "Premium Plus", "مبلغ", "۱۰٫۰۰", "۱۴۰۴", uuid, "user"]) {
      expect(text).toContain(word)
    }
    expect(text).not.toContain("Amount paid")
  })

  test.skipIf(pdftotext === null)("ru: Russian labels, 10,00 €", async () => {
    const { token, uuid } = await paidInvoiceOf("ru", "Сергей Петров")
    const { text } = await pdfTextOf(uuid, token)
    for (const word of ["СЧЁТ", "Статус", "оплачен", "Покупатель", "Сергей Петров", "10,00 €", "15 января 2026 г."]) expect(text).toContain(word)
  })
})
