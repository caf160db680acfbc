import type { Invoice } from "./Domain.ts"
import type { ServiceId, UserId } from "../platform/Ids.ts"

/** What `Invoices` takes to create an invoice or a renewal, and an invoice as a webhook's data. */
export interface NewInvoice {
  readonly userId: UserId
  readonly serviceId: ServiceId | null
  readonly planId: number
  readonly cycleId: number
  readonly amount: string
  readonly discount: string
  readonly currency: string
  readonly status: "pending" | "cancelled"
  readonly promoCode: string | null
  readonly promoId: number | null
  readonly dueDate: Date
  /** [D112]: the gateway chosen at the order; none: `manual` */
  readonly gateway?: string
  /** [D124]: the payer agreed to keep the card (`save_card: true` on the order or the change) */
  readonly saveCard?: boolean
}

/** A renewal invoice of [D80]: one per service and expiry. */
export interface NewRenewal {
  readonly userId: UserId
  readonly serviceId: ServiceId
  readonly planId: number
  readonly cycleId: number
  readonly amount: string
  readonly currency: string
  readonly expiresAt: Date
}

/** an invoice's public fields as a webhook's `data` ([D101]) */
export const invoiceEvent = (i: Invoice) => ({
  uuid: i.uuid,
  user_id: i.user_id,
  service_id: i.service_id,
  plan_id: i.plan_id,
  cycle_id: i.cycle_id,
  amount: i.amount,
  discount: i.discount,
  currency: i.currency,
  status: i.status,
  gateway: i.gateway,
  due_date: i.due_date.toISOString(),
  paid_at: i.paid_at === null ? null : i.paid_at.toISOString(),
  created_at: i.created_at.toISOString()
})
