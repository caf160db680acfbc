import * as Schema from "effect/Schema"
import { IdParam, UuidParam } from "./Fields.ts"

/**
 * The entities' ids, branded (issue 35): a server's id is not a device's, and a change that
 * passes one for the other fails at compile time. Brands on numbers and strings encode as they
 * are, so the wire does not change. The numeric ids keep `Schema.Int`'s identifier: the OpenAPI
 * document (`$ref: Int`) and the decode messages stay those of `Schema.Int`.
 *
 * A value gets its brand at an edge: a row decoded by its schema, a path id decoded by the
 * `*Param` schemas below, or `X.make(n)` where a number comes from elsewhere.
 */
const intId = <const B extends string>(brand: B) => Schema.Int.pipe(Schema.brand(brand, { identifier: "Int" }))

export const UserId = intId("UserId")
export type UserId = typeof UserId.Type

export const ServiceId = intId("ServiceId")
export type ServiceId = typeof ServiceId.Type

export const DeviceId = intId("DeviceId")
export type DeviceId = typeof DeviceId.Type

export const ServerId = intId("ServerId")
export type ServerId = typeof ServerId.Type

export const PlanId = intId("PlanId")
export type PlanId = typeof PlanId.Type

/** an invoice's public id (a uuid, lower case) */
export const InvoiceUuid = Schema.String.pipe(Schema.brand("InvoiceUuid"))
export type InvoiceUuid = typeof InvoiceUuid.Type

/** path ids (`/servers/:id`): a positive int4, else 404 ([D11]), branded */
export const ServerIdParam = IdParam.pipe(Schema.brand("ServerId"))
export const DeviceIdParam = IdParam.pipe(Schema.brand("DeviceId"))
export const ServiceIdParam = IdParam.pipe(Schema.brand("ServiceId"))
export const UserIdParam = IdParam.pipe(Schema.brand("UserId"))
export const PlanIdParam = IdParam.pipe(Schema.brand("PlanId"))
export const InvoiceUuidParam = UuidParam.pipe(Schema.brand("InvoiceUuid"))
