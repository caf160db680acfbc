import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication } from "../http/Middleware.ts"
import { Confirmation, Ok, OkMessage, OkPage } from "../http/Envelope.ts"
import { NotFoundResponse } from "../http/Errors.ts"
import { Body, IdParam, label, string } from "../platform/Fields.ts"
import { CreatedWebhookEndpoint, WEBHOOK_EVENTS, type WebhookEvent, WebhookDelivery, WebhookEndpoint } from "./Domain.ts"

/** a list of known events, at least one, each once: one Laravel message per failure ([D12]) */
const events = (field: string) =>
  Schema.transformOrFail(Schema.Unknown, Schema.Array(Schema.Literal(...WEBHOOK_EVENTS)), {
    strict: true,
    decode: (input, _, ast) => {
      const fail = (message: string) => ParseResult.fail(new ParseResult.Type(ast, input, message))
      if (!Array.isArray(input)) return fail(`The ${label(field)} field must be an array.`)
      if (input.length === 0) return fail(`The ${label(field)} field is required.`)
      const known = WEBHOOK_EVENTS as ReadonlyArray<unknown>
      if (!input.every((e) => known.includes(e))) return fail(`The selected ${label(field)} is invalid.`)
      return Either.right([...new Set(input as ReadonlyArray<WebhookEvent>)])
    },
    encode: ParseResult.succeed
  }).annotations({ jsonSchema: { type: "array", minItems: 1, items: { type: "string", enum: WEBHOOK_EVENTS } } })

const url = string("url", { max: 2048 })
const description = string("description", { max: 1000 })

export const CreateWebhookPayload = Body({
  url,
  events: events("events"),
  description: Schema.optional(Schema.NullOr(description))
})

export const UpdateWebhookPayload = Body({
  url: Schema.optional(url),
  events: Schema.optional(events("events")),
  description: Schema.optional(Schema.NullOr(description))
})

const WebhookPath = Schema.Struct({ id: IdParam })
const DeliveryPath = Schema.Struct({ id: IdParam, delivery: IdParam })

/** `/v1/admin/webhooks...` ([D101]): endpoints, their delivery log and redelivery. */
export class WebhooksAdminApi extends HttpApiGroup.make("webhooksAdmin")
  .annotate(OpenApi.Description, "Outgoing webhooks, for admins.")
  .add(
    HttpApiEndpoint.get("listWebhooks", "/admin/webhooks")
      .annotateContext(describe("List webhook endpoints (admin)", "The endpoints that receive the service's events, paginated."))
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(WebhookEndpoint, "WebhookEndpointPage"))
  )
  .add(
    HttpApiEndpoint.post("createWebhook", "/admin/webhooks")
      .annotateContext(
        describe(
          "Add a webhook endpoint (admin)",
          "An `https://` URL (or `http://` to a private address when the operator allows it) and the events it receives; answers the signing secret once. Deliveries are signed like the payment webhook and retried for 24 h."
        )
      )
      .setPayload(CreateWebhookPayload)
      .addSuccess(Ok(CreatedWebhookEndpoint, { identifier: "WebhookEndpointCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.get("getWebhook", "/admin/webhooks/:id")
      .annotateContext(describe("Get a webhook endpoint (admin)", "One endpoint with its events and state."))
      .setPath(WebhookPath)
      .addSuccess(Ok(WebhookEndpoint, { identifier: "WebhookEndpointResponse" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.put("updateWebhook", "/admin/webhooks/:id")
      .annotateContext(describe("Update a webhook endpoint (admin)", "Changes the fields present."))
      .setPath(WebhookPath)
      .setPayload(UpdateWebhookPayload)
      .addSuccess(Ok(WebhookEndpoint, { identifier: "WebhookEndpointUpdated" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook", "/admin/webhooks/:id")
      .annotateContext(describe("Delete a webhook endpoint (admin)", "The endpoint receives nothing more."))
      .setPath(WebhookPath)
      .addSuccess(Confirmation("WebhookEndpointDeleted"))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries", "/admin/webhooks/:id/deliveries")
      .annotateContext(
        describe("List an endpoint's deliveries (admin)", "Each event sent to the endpoint with its attempts and outcome, newest first, paginated.")
      )
      .setPath(WebhookPath)
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(WebhookDelivery, "WebhookDeliveryPage"))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("redeliverWebhook", "/admin/webhooks/:id/deliveries/:delivery/redeliver")
      .annotateContext(describe("Send a delivery again (admin)", "Queues the same event for the endpoint again."))
      .setPath(DeliveryPath)
      .addSuccess(OkMessage(WebhookDelivery, { identifier: "WebhookDeliveryQueued", status: 202 }))
      .addError(NotFoundResponse)
  )
  .middlewareEndpoints(AdminAuthentication) {}
