import * as Effect from "effect/Effect"
import * as Prometheus from "../platform/Prometheus.ts"
import { Metrics } from "../platform/Metrics.ts"
import { SECURITY_TEMPLATES, TEMPLATES } from "./Templates.ts"

const NAME = "vpn_api_notices_written_total"

/**
 * The notices of [D96] written to the outbox, by kind (`quota-80`, `quota-100`, `expired`, ...),
 * in the app's metrics registry ([D102]). Set beside the outbox's attempts by kind
 * (`vpn_api_outbox_deliveries_total{channel="mail",kind,outcome="sent"}`), it tells notices written
 * from notices sent: the quota-notice alerts compare the two. Every kind starts at 0.
 */
export class NoticeMetrics extends Effect.Service<NoticeMetrics>()("outbox/NoticeMetrics", {
  effect: Effect.map(Metrics, ({ registry }) => {
    const existing = registry.getSingleMetric(NAME)
    const written =
      existing instanceof Prometheus.Counter
        ? existing
        : new Prometheus.Counter({
            name: NAME,
            help: "Notification e-mails written to the outbox (in the transaction of their cause), by kind.",
            labelNames: ["kind"] as const,
            registers: [registry]
          })
    const labels = new Map([...Object.keys(TEMPLATES), ...Object.keys(SECURITY_TEMPLATES)].map((kind) => [kind, { kind }] as const))
    for (const l of labels.values()) written.inc(l, 0)
    return {
      /** `count` new notices of `kind` written */
      written: (kind: string, count = 1) => {
        if (count > 0) written.inc(labels.get(kind) ?? { kind }, count)
      }
    } as const
  })
}) {}
