import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication, Authentication } from "../http/Middleware.ts"
import { OkPage } from "../http/Envelope.ts"
import { timestamp } from "../platform/Fields.ts"
import { ActivityEvent, AuditRecord } from "./Domain.ts"

/** The caller's security events ([D99]), newest first, paginated like invoices. */
export class AuditApi extends HttpApiGroup.make("audit")
  .annotate(OpenApi.Description, "Your account's security events.")
  .add(
    HttpApiEndpoint.get("activity", "/account/activity")
      .annotateContext(
        describe(
          "List your account activity",
          "Your security events (sign-ins, failed sign-ins, password and e-mail changes, two-factor, API keys), newest first, paginated."
        )
      )
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(ActivityEvent, "AuditActivityPage"))
  )
  .middlewareEndpoints(Authentication) {}

const text = (field: string) => Schema.String.annotations({ message: () => `The ${field} field must be a string.` })

/** `actor`: a user id */
const ActorParam = Schema.String.pipe(
  Schema.filter((s) => /^[0-9]{1,10}$/.test(s) && Number(s) <= 2_147_483_647, { message: () => "The actor field must be an integer." }),
  Schema.transform(Schema.Number, { strict: true, decode: Number, encode: String })
)

/** The audit log for admins ([D100]), newest first, filtered, paginated. */
export class AuditAdminApi extends HttpApiGroup.make("auditAdmin")
  .annotate(OpenApi.Description, "The audit log, for admins.")
  .add(
    HttpApiEndpoint.get("search", "/admin/audit")
      .annotateContext(
        describe("Search the audit log (admin)", "Every admin write and security event, newest first, filtered by actor, action, resource and time.")
      )
      .setUrlParams(
        Schema.Struct({
          actor: Schema.optional(ActorParam),
          action: Schema.optional(text("action")),
          resource: Schema.optional(text("resource")),
          from: Schema.optional(timestamp("from")),
          to: Schema.optional(timestamp("to")),
          page: Schema.optional(PageParam)
        }).annotations({ parseOptions: { errors: "all" } })
      )
      .addSuccess(OkPage(AuditRecord, "AuditRecordPage"))
  )
  .middlewareEndpoints(AdminAuthentication) {}
