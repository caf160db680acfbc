import { describe, expect, test } from "bun:test"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Schema from "effect/Schema"
import { type Invoice, InvoiceListItem, toListItem } from "../../src/billing/Domain.ts"
import { renderDetail, ServiceDetail } from "../../src/services/Api.ts"
import type { Subscription } from "../../src/services/Domain.ts"
import { makePage, Ok, OkPage, okResponse, pageResponse } from "../../src/http/Envelope.ts"
import { InvoiceUuid, ServiceId, UserId } from "../../src/platform/Ids.ts"

// issue 8: the hot reads build their wire form directly; it must be what the declared schema
// encodes ([D10] envelope), for the very renderers those routes use.
const bodyOf = (response: HttpServerResponse.HttpServerResponse): unknown => {
  const body = response.body
  if (body._tag !== "Uint8Array") throw new Error(`unexpected body ${body._tag}`)
  return JSON.parse(new TextDecoder().decode(body.body))
}

const invoice = (id: number, paid: boolean): Invoice => ({
  id,
  uuid: InvoiceUuid.make(`00000000-0000-4000-8000-${String(id).padStart(12, "0")}`),
  user_id: UserId.make(1),
  service_id: null,
  plan_id: 2,
  cycle_id: 3,
  amount: "8.99",
  discount: "0.00",
  balance_applied: "0.00",
  refunded_amount: "0.00",
  change_credit: null,
  change_source_id: null,
  credited_amount: "0.00",
  currency: "USD",
  status: paid ? "paid" : "pending",
  gateway: "manual",
  promo_code: null,
  promo_code_id: null,
  due_date: new Date("2026-02-01T00:00:00Z"),
  paid_at: paid ? new Date("2026-01-20T10:00:00.123Z") : null,
  transaction_id: null,
  created_at: new Date("2026-01-15T12:00:00Z"),
  save_card: false
})

describe("pre-encoded responses", () => {
  test("a page of invoices: the same JSON as OkPage(InvoiceListItem) encodes, status 200, application/json", () => {
    const page = makePage({
      rows: [invoice(1, true), invoice(2, false)].map(toListItem),
      total: 17,
      page: 2,
      perPage: 15,
      baseUrl: "http://localhost:3000/v1/invoices",
      query: [["status", undefined]]
    })
    const fast = pageResponse(InvoiceListItem, page)
    expect(fast.status).toBe(200)
    expect(fast.body.contentType).toBe("application/json")
    // the schema encodes the items' values (dates as Date): decode the wire items back to them
    const values = { ...page, data: page.data.map((item) => Schema.decodeSync(InvoiceListItem)(item)) }
    expect(bodyOf(fast)).toEqual(Schema.encodeSync(OkPage(InvoiceListItem, "InvoicePageCheck"))(values) as unknown)
  })

  test("the current service: the same JSON as Ok(ServiceDetail) encodes", () => {
    const row: Subscription = {
      id: ServiceId.make(7),
      userId: UserId.make(1),
      status: "active",
      startsAt: new Date("2026-01-01T00:00:00Z"),
      expiresAt: new Date("2026-01-31T00:00:00Z"),
      autoRenew: true,
      graceUntil: null,
      plan: {
        id: 2,
        name: "Plus",
        bandwidthLimitGb: 500,
        speedLimitMbps: null,
        deviceLimit: 5,
        usageReset: "monthly",
        quotaAction: "suspend",
        throttleMbps: null
      },
      cycle: { id: 3, name: "Monthly", durationDays: 30, price: "8.90", currency: "USD" }
    }
    const detail = renderDetail(row)
    expect(bodyOf(okResponse(ServiceDetail, detail))).toEqual(Schema.encodeSync(Ok(ServiceDetail, { identifier: "CurrentServiceCheck" }))(detail) as unknown)
  })
})
