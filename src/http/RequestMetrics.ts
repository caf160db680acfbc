import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import type { RouteFigures } from "../platform/Metrics.ts"

/**
 * Counts every answered request and its time by route template and status ([D102]): the
 * template's figures are found once per request (`figuresOf`), the label sets are made once per
 * route, method and status; no path ever becomes a label.
 */
export const requestMetrics =
  (figuresOf: (url: string) => RouteFigures) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const figures = figuresOf(request.url)
      const start = performance.now()
      return Effect.onExit(app, (exit) =>
        Effect.sync(() => figures.record(request.method, HttpServerError.exitResponse(exit).status, (performance.now() - start) / 1000))
      )
    })
