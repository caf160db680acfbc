import * as Effect from "effect/Effect"
import * as Prometheus from "../platform/Prometheus.ts"
import { Metrics } from "../platform/Metrics.ts"

/**
 * What one POST to a receiver came to, as the alerts tell it apart ([D102], [D101]): answered 2xx,
 * answered with another status (by class: a redirect is not followed, so 3xx fails too), no answer
 * in 10 s, or never reached (DNS, connection refused, an address the URL rules refuse).
 */
export const WEBHOOK_RESULTS = ["delivered", "http_3xx", "http_4xx", "http_5xx", "timeout", "unreachable"] as const
export type WebhookResult = (typeof WEBHOOK_RESULTS)[number]

/** the sender's view of one attempt: the receiver's status, if it answered, and the error, if any */
export interface WebhookAttemptOutcome {
  readonly statusCode: number | null
  readonly error: string | null
}

export const webhookResultOf = (attempt: WebhookAttemptOutcome): WebhookResult => {
  if (attempt.statusCode !== null) {
    if (attempt.error === null) return "delivered"
    if (attempt.statusCode >= 500) return "http_5xx"
    if (attempt.statusCode >= 400) return "http_4xx"
    return "http_3xx"
  }
  return attempt.error !== null && attempt.error.startsWith("timed out") ? "timeout" : "unreachable"
}

const NAME = "vpn_api_webhook_deliveries_total"

/**
 * The webhooks room's figure in the app's metrics registry ([D102]): every delivery attempt by
 * result. Every result starts at 0, so a first failure is an increase the alert rules can see.
 */
export class WebhookMetrics extends Effect.Service<WebhookMetrics>()("webhooks/WebhookMetrics", {
  effect: Effect.map(Metrics, ({ registry }) => {
    const existing = registry.getSingleMetric(NAME)
    const attempts =
      existing instanceof Prometheus.Counter
        ? existing
        : new Prometheus.Counter({
            name: NAME,
            help: "Webhook delivery attempts, by result: delivered (2xx), http_3xx/http_4xx/http_5xx (the receiver's answer), timeout (no answer in 10 s), unreachable (DNS, connection, refused address).",
            labelNames: ["result"] as const,
            registers: [registry]
          })
    const labels = new Map(WEBHOOK_RESULTS.map((result) => [result, { result }] as const))
    for (const l of labels.values()) attempts.inc(l, 0)
    return {
      /** one POST to a receiver, whatever came of it */
      attempt: (attempt: WebhookAttemptOutcome) => attempts.inc(labels.get(webhookResultOf(attempt))!)
    } as const
  })
}) {}
