import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { AdminAuthentication, Authentication } from "../http/Middleware.ts"
import { Ok, OkMessage } from "../http/Envelope.ts"
import { Body, boolean, IdParam, integer, label, oneOf } from "../platform/Fields.ts"
import { ADMIN_SERVICE_STATUSES, noSchedule, type ServiceSchedule, ServiceStatus, type Subscription } from "./Domain.ts"

// ---- resources ([D34]) ------------------------------------------------------------------

const Status = ServiceStatus

/** [D108]: a downgrade waiting for the period's end (null unless one is scheduled) */
const ScheduledChangeField = Schema.NullOr(
  Schema.Struct({
    plan: Schema.Struct({ id: Schema.Int, name: Schema.String }),
    cycle: Schema.Struct({ id: Schema.Int, name: Schema.String, duration_days: Schema.Int, price: Schema.String }),
    effective_at: Schema.String
  })
)

/** The spec's Service as listed: plan {id, name}, cycle {name, duration_days, price}. */
export const ServiceListItem = Schema.Struct({
  id: Schema.Int,
  plan: Schema.Struct({ id: Schema.Int, name: Schema.String }),
  cycle: Schema.Struct({ name: Schema.String, duration_days: Schema.Int, price: Schema.String }),
  status: Status,
  starts_at: Schema.String,
  expires_at: Schema.String,
  auto_renew: Schema.Boolean,
  /** [D124]: while the service is in `grace`, when its last renewal retry is (null otherwise) */
  grace_until: Schema.NullOr(Schema.String),
  /** [D111]: when a cancel at the period's end takes effect (null unless so) */
  cancel_at: Schema.NullOr(Schema.String),
  /** [D108] */
  scheduled_change: ScheduledChangeField
}).annotations({ identifier: "ServiceListItem" })

const PlanWithLimits = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  bandwidth_limit_gb: Schema.Int,
  speed_limit_mbps: Schema.NullOr(Schema.Int)
})

/** [D34]: every Service field (plan with limits, cycle, status, starts_at, expires_at, auto_renew). */
export const ServiceDetail = Schema.Struct({
  id: Schema.Int,
  plan: PlanWithLimits,
  cycle: Schema.Struct({
    id: Schema.Int,
    name: Schema.String,
    duration_days: Schema.Int,
    price: Schema.String,
    currency: Schema.String
  }),
  status: Status,
  starts_at: Schema.String,
  expires_at: Schema.String,
  auto_renew: Schema.Boolean,
  /** [D124]: while the service is in `grace`, when its last renewal retry is (null otherwise) */
  grace_until: Schema.NullOr(Schema.String),
  /** [D124]: only while the service is in `grace`: the speed its devices get meanwhile (GRACE_SPEED_MBPS, or the plan's own limit when lower) */
  grace_speed_mbps: Schema.optional(Schema.Int),
  /** [D111]: when a cancel at the period's end takes effect (null unless so) */
  cancel_at: Schema.NullOr(Schema.String),
  /** [D108]: a downgrade waiting for the period's end (null unless one is scheduled) */
  scheduled_change: ScheduledChangeField
}).annotations({ identifier: "ServiceDetail" })

/** The list shape of the spec: plan {id, name}, cycle {name, duration_days, price}. */
export const renderListItem = (s: Subscription, schedule: ServiceSchedule = noSchedule): typeof ServiceListItem.Encoded => ({
  id: s.id,
  plan: { id: s.plan.id, name: s.plan.name },
  cycle: { name: s.cycle.name, duration_days: s.cycle.durationDays, price: s.cycle.price },
  status: s.status,
  starts_at: s.startsAt.toISOString(),
  expires_at: s.expiresAt.toISOString(),
  auto_renew: s.autoRenew,
  grace_until: s.graceUntil === null ? null : s.graceUntil.toISOString(),
  cancel_at: schedule.cancel_at,
  scheduled_change: schedule.scheduled_change
})

/** Every Service field ([D34]): plan with limits, cycle with id and currency; its schedule ([D108], [D111]). */
export const renderDetail = (s: Subscription, schedule: ServiceSchedule = noSchedule): typeof ServiceDetail.Encoded => ({
  id: s.id,
  plan: {
    id: s.plan.id,
    name: s.plan.name,
    bandwidth_limit_gb: s.plan.bandwidthLimitGb,
    speed_limit_mbps: s.plan.speedLimitMbps
  },
  cycle: {
    id: s.cycle.id,
    name: s.cycle.name,
    duration_days: s.cycle.durationDays,
    price: s.cycle.price,
    currency: s.cycle.currency
  },
  status: s.status,
  starts_at: s.startsAt.toISOString(),
  expires_at: s.expiresAt.toISOString(),
  auto_renew: s.autoRenew,
  grace_until: s.graceUntil === null ? null : s.graceUntil.toISOString(),
  cancel_at: schedule.cancel_at,
  scheduled_change: schedule.scheduled_change
})

export const AutoRenew = Schema.Struct({ auto_renew: Schema.Boolean }).annotations({ identifier: "ServiceAutoRenew" })

// ---- payloads -------------------------------------------------------------------------

/** An ISO 8601 timestamp string ("2026-02-01T00:00:00Z"), as a Date. */
const timestamp = (field: string) => {
  const message = `The ${label(field)} field must be a valid date.`
  return Schema.transformOrFail(Schema.Unknown, Schema.DateFromSelf, {
    strict: true,
    decode: (input, _, ast) => {
      const date =
        typeof input === "string" && /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(input.trim())
          ? new Date(input.trim())
          : undefined
      return date && !Number.isNaN(date.getTime()) ? ParseResult.succeed(date) : ParseResult.fail(new ParseResult.Type(ast, input, message))
    },
    encode: ParseResult.succeed
  }).annotations({ jsonSchema: { type: "string", format: "date-time" } })
}

const ANY_INT = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }

export const AutoRenewPayload = Body({ auto_renew: boolean("auto_renew") })

export const GrantServicePayload = Body({
  plan_id: integer("plan_id", ANY_INT),
  cycle_id: integer("cycle_id", ANY_INT),
  status: Schema.optional(oneOf("status", ADMIN_SERVICE_STATUSES)),
  starts_at: Schema.optional(timestamp("starts_at")),
  expires_at: Schema.optional(timestamp("expires_at")),
  auto_renew: Schema.optional(boolean("auto_renew"))
})

export const UpdateServicePayload = Body({
  status: Schema.optional(oneOf("status", ADMIN_SERVICE_STATUSES)),
  expires_at: Schema.optional(timestamp("expires_at"))
})

const ServicePath = Schema.Struct({ service: IdParam })

// ---- groups ---------------------------------------------------------------------------

/** The caller's services ([D34]): list, current, one, auto-renew. */
export class ServicesApi extends HttpApiGroup.make("services")
  .annotate(OpenApi.Description, "Your subscriptions to plans.")
  .add(
    HttpApiEndpoint.get("listServices", "/services")
      .annotateContext(describe("List your services", "Every service of the caller, newest first, with plan, cycle, status and dates."))
      .addSuccess(Ok(Schema.Array(ServiceListItem), { identifier: "ServiceList" }))
  )
  .add(
    HttpApiEndpoint.get("currentService", "/services/current")
      .annotateContext(describe("Get your current service", "The newest active or suspended service not past its expiry; 404 when there is none."))
      .addSuccess(Ok(ServiceDetail, { identifier: "CurrentService" }))
  )
  .add(
    HttpApiEndpoint.get("getService", "/services/:service")
      .annotateContext(describe("Get a service", "One of the caller's services with every field. Another user's service is 404."))
      .setPath(ServicePath)
      .addSuccess(Ok(ServiceDetail, { identifier: "ServiceDetailResponse" }))
  )
  .add(
    HttpApiEndpoint.put("setAutoRenew", "/services/:service/auto-renew")
      .annotateContext(describe("Turn auto-renewal on or off", "With auto-renewal on, a renewal invoice is made 3 days before the service expires."))
      .setPath(ServicePath)
      .setPayload(AutoRenewPayload)
      .addSuccess(OkMessage(AutoRenew, { identifier: "ServiceAutoRenewUpdated" }))
  )
  .middlewareEndpoints(Authentication) {}

/** `/v1/admin/users/{user}/services`, `/v1/admin/services/{service}` ([D70]). */
export class ServicesAdminApi extends HttpApiGroup.make("servicesAdmin")
  .annotate(OpenApi.Description, "Subscriptions, for admins.")
  .add(
    HttpApiEndpoint.post("grantService", "/admin/users/:user/services")
      .annotateContext(
        describe("Grant a service (admin)", "Gives a user a service on a plan and cycle without an invoice; by default active from now for one cycle.")
      )
      .setPath(Schema.Struct({ user: IdParam }))
      .setPayload(GrantServicePayload)
      .addSuccess(Ok(ServiceDetail, { identifier: "AdminServiceGranted", status: 201 }))
  )
  .add(
    HttpApiEndpoint.put("updateService", "/admin/services/:service")
      .annotateContext(describe("Change a service's status or expiry (admin)", "Suspending, cancelling or expiring a service stops its VPN access at once."))
      .setPath(ServicePath)
      .setPayload(UpdateServicePayload)
      .addSuccess(Ok(ServiceDetail, { identifier: "AdminServiceUpdated" }))
  )
  .middlewareEndpoints(AdminAuthentication) {}
