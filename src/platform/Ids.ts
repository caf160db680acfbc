import * as Schema from "effect/Schema"

/**
 * The entities' ids, branded (issue 35): a server's id is not a device's, and a change that
 * passes one for the other fails at compile time. Brands on numbers and strings encode as they
 * are, so the wire does not change. The numeric ids keep `Schema.Int`'s identifier: the OpenAPI
 * document (`$ref: Int`) and the decode messages stay those of `Schema.Int`.
 *
 * A value gets its brand at an edge: a row decoded by its schema, or `X.make(n)` where a number
 * comes from elsewhere (a handler's path id: the Api's path schemas stay plain numbers, so the
 * typed client and the portal still pass numbers).
 */
export const UserId = Schema.Int.pipe(Schema.brand("UserId", { identifier: "Int" }))
export type UserId = typeof UserId.Type

export const ServiceId = Schema.Int.pipe(Schema.brand("ServiceId", { identifier: "Int" }))
export type ServiceId = typeof ServiceId.Type

export const DeviceId = Schema.Int.pipe(Schema.brand("DeviceId", { identifier: "Int" }))
export type DeviceId = typeof DeviceId.Type

export const ServerId = Schema.Int.pipe(Schema.brand("ServerId", { identifier: "Int" }))
export type ServerId = typeof ServerId.Type

export const PlanId = Schema.Int.pipe(Schema.brand("PlanId", { identifier: "Int" }))
export type PlanId = typeof PlanId.Type

/** an invoice's public id (a uuid, lower case) */
export const InvoiceUuid = Schema.String.pipe(Schema.brand("InvoiceUuid"))
export type InvoiceUuid = typeof InvoiceUuid.Type
