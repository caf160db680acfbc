import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.ts"
import { pageResponse } from "../http/Envelope.ts"
import { WebhookDelivery, WebhookEndpoint } from "./Domain.ts"
import { WebhookDeliveries } from "./Deliveries.ts"
import { WebhookEndpoints } from "./Endpoints.ts"
import { noStore } from "../http/Caching.ts"

/** the answer carrying the signing secret is never cached ([D11]) */
/** `/v1/admin/webhooks...` ([D101]); the services come from `DomainLive`. */
export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooksAdmin", (handlers) =>
  Effect.gen(function* () {
    const webhooks = yield* WebhookEndpoints
    const deliveries = yield* WebhookDeliveries
    return handlers
      .handle("listWebhooks", ({ urlParams }) => Effect.map(webhooks.listPage(urlParams.page ?? 1), (page) => pageResponse(WebhookEndpoint, page)))
      .handle("createWebhook", ({ payload }) => webhooks.create(payload).pipe(Effect.zipLeft(noStore)))
      .handle("getWebhook", ({ path }) => webhooks.get(path.id))
      .handle("updateWebhook", ({ path, payload }) => webhooks.update(path.id, payload))
      .handle("deleteWebhook", ({ path }) => webhooks.remove(path.id).pipe(Effect.as("Webhook deleted.")))
      .handle("listWebhookDeliveries", ({ path, urlParams }) =>
        Effect.map(deliveries.deliveriesPage(path.id, urlParams.page ?? 1), (page) => pageResponse(WebhookDelivery, page))
      )
      .handle("redeliverWebhook", ({ path }) => Effect.map(deliveries.redeliver(path.id, path.delivery), (data) => ({ message: "Delivery queued.", data })))
  })
)
