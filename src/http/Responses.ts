import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/**
 * Error envelopes ([D10]) built directly, for the layers that answer before or outside the typed
 * API (no route, 413, the general limit, a lost database, shutdown).
 */
export const envelope = (status: number, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson({ success: false, message }, { status, ...(headers ? { headers } : {}) })

export const notFound = () => envelope(404, "Resource not found.")
export const internalError = () => envelope(500, "An unexpected error occurred.")
export const unavailable = () => envelope(503, "Service temporarily unavailable.", { "retry-after": "5" })
