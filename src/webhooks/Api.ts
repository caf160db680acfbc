import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication } from "../http/Auth.ts"
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
  .add(
    HttpApiEndpoint.get("listWebhooks", "/admin/webhooks")
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(WebhookEndpoint, "WebhookEndpointPage"))
  )
  .add(
    HttpApiEndpoint.post("createWebhook", "/admin/webhooks")
      .setPayload(CreateWebhookPayload)
      .addSuccess(Ok(CreatedWebhookEndpoint, { identifier: "WebhookEndpointCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.get("getWebhook", "/admin/webhooks/:id")
      .setPath(WebhookPath)
      .addSuccess(Ok(WebhookEndpoint, { identifier: "WebhookEndpointResponse" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.put("updateWebhook", "/admin/webhooks/:id")
      .setPath(WebhookPath)
      .setPayload(UpdateWebhookPayload)
      .addSuccess(Ok(WebhookEndpoint, { identifier: "WebhookEndpointUpdated" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook", "/admin/webhooks/:id")
      .setPath(WebhookPath)
      .addSuccess(Confirmation("WebhookEndpointDeleted"))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries", "/admin/webhooks/:id/deliveries")
      .setPath(WebhookPath)
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(WebhookDelivery, "WebhookDeliveryPage"))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("redeliverWebhook", "/admin/webhooks/:id/deliveries/:delivery/redeliver")
      .setPath(DeliveryPath)
      .addSuccess(OkMessage(WebhookDelivery, { identifier: "WebhookDeliveryQueued", status: 202 }))
      .addError(NotFoundResponse)
  )
  .middlewareEndpoints(AdminAuthentication)
{}
