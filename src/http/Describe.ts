import * as OpenApi from "@effect/platform/OpenApi"

/**
 * An operation's summary and description in the OpenAPI document, written for a client
 * developer (issue 28): `endpoint.annotateContext(describe("Sign in", "..."))`.
 */
export const describe = (summary: string, description: string) => OpenApi.annotations({ summary, description })
