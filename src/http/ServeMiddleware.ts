import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import type { AppConfig } from "../platform/Config.ts"
import type { RouteFigures } from "../platform/Metrics.ts"
import { docsHeaders } from "./DocsHeaders.ts"
import { type InFlight, track } from "./Drain.ts"
import { requestLog } from "./RequestLog.ts"
import { requestMetrics } from "./RequestMetrics.ts"

/** Everything the server wraps around the API, outermost first. */
export const makeServeMiddleware = (options: {
  readonly inFlight: InFlight
  readonly config: AppConfig["Type"]
  /** the metrics of a request's route template ([D102]) */
  readonly figuresOf: (url: string) => RouteFigures
}) => {
  const { config } = options
  const cors = config.corsOrigins.length === 0
    ? (app: HttpApp.Default) => app
    : HttpMiddleware.cors({
      allowedOrigins: config.corsOrigins.includes("*") ? [] : (origin: string) => config.corsOrigins.includes(origin),
      allowedHeaders: ["authorization", "content-type", "x-request-id", "x-signature"],
      exposedHeaders: ["x-ratelimit-limit", "x-ratelimit-remaining", "retry-after", "content-disposition", "x-request-id"],
      maxAge: 600
    })
  return (app: HttpApp.Default) =>
    track(options.inFlight)(
      requestMetrics(options.figuresOf)(
        requestLog(config)(
          cors(docsHeaders(app))
        )
      )
    )
}
