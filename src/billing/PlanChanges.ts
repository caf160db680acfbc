import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { formatCents, toCents } from "../catalog/Money.ts"
import { AppClock } from "../platform/Clock.ts"
import { BusinessRuleViolation, NotFound, ValidationError } from "../platform/Errors.ts"
import { retryConflicts } from "../platform/SqlErrors.ts"
import type { Subscription } from "../services/Domain.ts"
import { Schedules } from "../services/Schedule.ts"
import { Services } from "../services/Services.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { Balance } from "./Balance.ts"
import { Funding } from "./Funding.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { Payments } from "./Payments.ts"
import { type ChangeKind, changeKind, prorate, type Prorated } from "./Proration.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

const DAY_MS = 86_400_000
/**
 * [D108] (issue 34): a change invoice is due an hour after it is made, not the 7 days of [D36]:
 * its credit is priced at the change, and the old plan runs until it is paid
 */
export const CHANGE_DUE_MS = 3_600_000

export const cannotChange = () => new BusinessRuleViolation({ message: "Service cannot be changed." })

export interface ChangeRequest {
  readonly planId: number
  readonly cycleId: number
  /** [D112]: the upgrade invoice's gateway (absent: the default) */
  readonly gateway?: string | null | undefined
  /** [D124]: the payer agrees to keep the card for the renewals */
  readonly saveCard?: boolean | undefined
}

/** [D108]: the answer of a quote */
export interface ChangeQuote {
  readonly kind: ChangeKind
  readonly credit: string
  readonly amount_due: string
  readonly currency: string
  readonly effective_at: Date | null
}

/**
 * [D108] Plan changes. An upgrade is an invoice of the new cycle's price less the prorated credit
 * of the paid period (`change_credit` kept on it); paying it switches the service at once
 * (`Payments`), a 0.00 one is paid at once from here. A downgrade is scheduled for the period's
 * end and the renewal of [D80] bills the new cycle. A second change cancels a pending change
 * invoice (its balance given back, [D109]).
 */
export class PlanChanges extends Effect.Service<PlanChanges>()("billing/PlanChanges", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const services = yield* Services
    const schedules = yield* Schedules
    const invoices = yield* Invoices
    const balance = yield* Balance
    const funding = yield* Funding
    const payments = yield* Payments
    const webhooks = yield* Webhooks
    const gateways = yield* PaymentGateways

    const paidForPeriodRow = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Schema.Int, paid: Schema.String }),
      execute: (serviceId) => sql`select id, greatest(amount + balance_applied - refunded_amount - credited_amount, 0)::text as paid from invoices
        where service_id = ${serviceId} and status = 'paid' order by paid_at desc, id desc limit 1`
    })
    /**
     * what was paid for the current period: the newest paid invoice of the service, less its
     * refunds and what earlier changes credited of it (issue 34: a period's value is credited once);
     * with that invoice's id (none: nothing was paid)
     */
    const paidForPeriod = (serviceId: ServiceId) =>
      paidForPeriodRow(serviceId).pipe(
        Effect.map(Option.match({ onNone: () => ({ sourceId: null, cents: 0 }), onSome: (r) => ({ sourceId: r.id, cents: toCents(r.paid) }) })),
        Effect.orDie
      )

    /** the caller's active service, the target plan and cycle checked as [D108] says, and the money */
    const price = (userId: UserId, serviceId: ServiceId, request: ChangeRequest) =>
      Effect.gen(function* () {
        const service = yield* Effect.flatMap(
          services.findOwned(userId, serviceId),
          Option.match({
            onNone: () => Effect.fail(new NotFound()),
            onSome: Effect.succeed
          })
        )
        const now = yield* clock.now
        if (service.status !== "active" || service.expiresAt.getTime() <= now.getTime()) return yield* Effect.fail(cannotChange())
        const { cycle } = yield* catalog.planAndCycle(request.planId, request.cycleId)
        if (cycle.currency !== service.cycle.currency) {
          return yield* Effect.fail(
            ValidationError.field("cycle_id", `The cycle must be billed in ${service.cycle.currency}, the currency of the current cycle.`)
          )
        }
        if (request.planId === service.plan.id && request.cycleId === service.cycle.id) {
          return yield* Effect.fail(ValidationError.field("plan_id", "The service is already on this plan and cycle."))
        }
        const kind = changeKind(
          { priceCents: toCents(service.cycle.price), days: service.cycle.durationDays },
          { priceCents: toCents(cycle.price), days: cycle.duration_days }
        )
        const priceCents = toCents(cycle.price)
        // the current period: the last cycle before expires_at, never before the service started
        const periodStart = new Date(Math.max(service.startsAt.getTime(), service.expiresAt.getTime() - service.cycle.durationDays * DAY_MS))
        const paid = kind === "upgrade" ? yield* paidForPeriod(service.id) : { sourceId: null, cents: 0 }
        const money: Prorated =
          kind === "upgrade"
            ? prorate({ paidCents: paid.cents, periodStart, periodEnd: service.expiresAt, now, priceCents })
            : { creditCents: 0, amountDueCents: priceCents, excessCents: 0 }
        return { service, cycle, kind, money, now, sourceId: paid.sourceId }
      })

    const quote = (userId: UserId, serviceId: ServiceId, request: ChangeRequest) =>
      Effect.map(
        price(userId, serviceId, request),
        ({ cycle, kind, money, service }): ChangeQuote => ({
          kind,
          credit: formatCents(money.creditCents),
          amount_due: formatCents(money.amountDueCents),
          currency: cycle.currency,
          effective_at: kind === "downgrade" ? service.expiresAt : null
        })
      )

    const cancelPendingChangeRows = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Schema.Int, user_id: Schema.NullOr(UserId), currency: Schema.String, balance_applied: Schema.String }),
      execute: (serviceId) => sql`update invoices set status = 'cancelled'
        where service_id = ${serviceId} and status = 'pending' and change_credit is not null
        returning id, user_id, currency, balance_applied::text as balance_applied`
    })
    /** [D108]: a pending change invoice of the service is cancelled (its balance given back) */
    const cancelPendingChange = (serviceId: ServiceId) =>
      Effect.gen(function* () {
        const cancelled = yield* cancelPendingChangeRows(serviceId).pipe(Effect.orDie)
        for (const i of cancelled) {
          yield* balance.returnFrom({ id: i.id, userId: i.user_id, balanceApplied: i.balance_applied, currency: i.currency })
        }
      })

    const stalePendingRenewals = SqlSchema.findAll({
      Request: Schema.Struct({ serviceId: Schema.Number, planId: Schema.Number, cycleId: Schema.Number }),
      Result: Schema.Struct({
        id: Schema.Int,
        user_id: Schema.NullOr(UserId),
        plan_id: Schema.Int,
        cycle_id: Schema.Int,
        currency: Schema.String,
        balance_applied: Schema.String,
        gateway: Schema.String,
        due_date: Schema.DateFromSelf,
        renewal_of_expiry: Schema.DateFromSelf
      }),
      execute: ({ cycleId, planId, serviceId }) => sql`select id, user_id, plan_id, cycle_id, currency, balance_applied::text as balance_applied, gateway,
          due_date, renewal_of_expiry from invoices
        where service_id = ${serviceId} and status = 'pending' and renewal_of_expiry is not null
          and (plan_id <> ${planId} or cycle_id <> ${cycleId})
        order by id for update`
    })
    /**
     * [D108]: a pending renewal of [D80] made before the schedule changed is made again for the
     * plan and cycle the service now renews on: the old one is cancelled (its balance given back,
     * [D109]; its expiry handed to the new one, which keeps it as the one renewal of that expiry)
     * and the new one, on the same gateway and due date, takes what it can from the balance.
     */
    const renewOn = (serviceId: ServiceId, planId: number, cycleId: number) =>
      Effect.gen(function* () {
        const pending = yield* stalePendingRenewals({ serviceId, planId, cycleId }).pipe(Effect.orDie)
        for (const old of pending) {
          if (old.user_id === null) continue
          yield* sql`update invoices set status = 'cancelled', renewal_of_expiry = null where id = ${old.id}`.pipe(Effect.orDie)
          yield* balance.returnFrom({ id: old.id, userId: old.user_id, balanceApplied: old.balance_applied, currency: old.currency })
          const { cycle } = yield* Effect.orDie(catalog.anyPlanAndCycle(planId, cycleId))
          const created = yield* invoices.insert({
            userId: old.user_id,
            serviceId,
            planId,
            cycleId,
            amount: cycle.price,
            discount: "0.00",
            currency: cycle.currency,
            status: "pending",
            promoCode: null,
            promoId: null,
            dueDate: old.due_date,
            ...(old.gateway === "balance" ? {} : { gateway: old.gateway })
          })
          yield* sql`update invoices set renewal_of_expiry = ${old.renewal_of_expiry} where id = ${created.id}`.pipe(Effect.orDie)
          yield* funding.fund(created)
        }
      })

    /**
     * [D108]: an upgrade's invoice (201), or the service with its scheduled downgrade. Issue 34:
     * the service row is locked first, so that changes of one service take turns and each prices
     * from what the one before it left (a paid period is credited once); a transaction PostgreSQL
     * aborts for a deadlock or a serialization failure is run again.
     */
    const change = (userId: UserId, serviceId: ServiceId, request: ChangeRequest) =>
      Effect.flatMap(gateways.resolve(request.gateway), (gateway) =>
        retryConflicts(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* services.lock(serviceId)
              const { cycle, kind, money, now, service, sourceId } = yield* price(userId, serviceId, request)
              yield* cancelPendingChange(service.id)
              if (kind === "downgrade") {
                yield* schedules.schedule(service.id, request.planId, request.cycleId)
                // [D108]: the renewal is made for the new cycle, also one made before this change
                yield* renewOn(service.id, request.planId, request.cycleId)
                return { kind, invoiceId: Option.none<number>(), service }
              }
              const created = yield* invoices.insert({
                userId,
                serviceId: service.id,
                planId: request.planId,
                cycleId: request.cycleId,
                amount: formatCents(money.amountDueCents),
                discount: "0.00",
                currency: cycle.currency,
                status: "pending",
                promoCode: null,
                promoId: null,
                dueDate: new Date(now.getTime() + CHANGE_DUE_MS),
                gateway: gateway.name,
                saveCard: request.saveCard ?? false
              })
              yield* sql`update invoices set change_credit = ${formatCents(money.creditCents)}, change_source_id = ${sourceId}
          where id = ${created.id}`.pipe(Effect.orDie)
              if (money.amountDueCents === 0) {
                // [D108]: nothing to pay: paid at once from the balance's side, the change takes effect now
                yield* sql`update invoices set gateway = 'balance' where id = ${created.id}`.pipe(Effect.orDie)
                yield* Effect.orDie(payments.markPaid(created.id, { transactionId: null, gateway: "balance" }))
              } else {
                yield* funding.fund(created)
              }
              return { kind, invoiceId: Option.some(created.id), service }
            })
          )
        )
      ).pipe(
        Effect.catchTag("SqlError", Effect.die),
        // [D123]: the payment page of a change invoice this one cancelled closes
        Effect.tap(() => Effect.zipRight(webhooks.wake, gateways.closeStale))
      )

    /** [D108]: the scheduled downgrade is removed (and a pending change invoice cancelled) */
    const removeScheduled = (userId: UserId, serviceId: ServiceId) =>
      Effect.gen(function* () {
        const service = yield* Effect.flatMap(
          services.findOwned(userId, serviceId),
          Option.match({
            onNone: () => Effect.fail(new NotFound()),
            onSome: (s: Subscription) => Effect.succeed(s)
          })
        )
        yield* retryConflicts(
          sql.withTransaction(
            Effect.all(
              [
                services.lock(service.id),
                schedules.unschedule(service.id),
                cancelPendingChange(service.id),
                // [D108]: a renewal made for the downgrade goes back to the current plan and cycle
                renewOn(service.id, service.plan.id, service.cycle.id)
              ],
              { discard: true }
            )
          )
        ).pipe(Effect.catchTag("SqlError", Effect.die))
        yield* gateways.closeStale
        return service
      })

    return { quote, change, removeScheduled } as const
  }),
  dependencies: [
    Catalog.Default,
    Services.Default,
    Schedules.Default,
    Invoices.Default,
    Balance.Default,
    Funding.Default,
    Payments.Default,
    Webhooks.Default,
    GatewaysLive
  ]
}) {
  /**
   * issue 35: the changes' rules over their neighbours' `Test` layers (services, catalogue,
   * invoices, balance in memory; the stand-in `manual` gateway), all given to the test too; the
   * clock, the events, `Schedules`, `Payments`, `Webhooks` and the SQL client are the test's.
   * What still runs SQL of its own here (an upgrade's paid period, a pending change cancelled)
   * throws on `SqlClientTest`: the quote of a downgrade and every refusal are units.
   */
  static readonly Test = PlanChanges.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(Funding.Test),
    Layer.provideMerge(Layer.mergeAll(Invoices.Test, PaymentGateways.Test)),
    Layer.provideMerge(Services.Test)
  )
}
