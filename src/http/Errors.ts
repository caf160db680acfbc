import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import {
  BusinessRuleViolation,
  FieldErrors,
  Forbidden,
  InternalError,
  InvalidCredentials,
  InvalidSignature,
  Locked,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  TooManyAttempts,
  Unauthenticated,
  ValidationError
} from "../platform/Errors.ts"

export * from "../platform/Errors.ts"

/** The error envelope of [D10]: `{success: false, message, errors?}`. */
export const ErrorBody = Schema.Struct({
  success: Schema.Literal(false),
  message: Schema.String,
  errors: Schema.optional(FieldErrors)
})

type ErrorFields = { readonly message: string; readonly errors?: Readonly<Record<string, ReadonlyArray<string>>> | undefined }

/**
 * The wire form of a tagged error: the envelope, with the status its class declares
 * (`HttpApiSchema.annotations({ status })`) and its tag as the OpenAPI identifier. A room
 * declares its own errors on its endpoints with `.addError(errorEnvelope(PromoInvalid))`.
 */
export const errorEnvelope = <Self extends ErrorFields, I, R>(
  cls: Schema.Schema<Self, I, R> & {
    readonly identifier: string
    new (props: { readonly message: string; readonly errors: Readonly<Record<string, ReadonlyArray<string>>> }): Self
  }
) =>
  Schema.transform(ErrorBody, Schema.typeSchema(cls), {
    strict: true,
    decode: (body) => new cls({ message: body.message, errors: body.errors ?? {} }),
    encode: (e) => ({ success: false as const, message: e.message, ...(e.errors ? { errors: e.errors } : {}) })
  }).annotations({ identifier: cls.identifier, ...HttpApiSchema.annotations({ status: HttpApiSchema.getStatusErrorAST(cls.ast) }) })

export const UnauthenticatedResponse = errorEnvelope(Unauthenticated)
export const InvalidCredentialsResponse = errorEnvelope(InvalidCredentials)
export const InvalidSignatureResponse = errorEnvelope(InvalidSignature)
export const ForbiddenResponse = errorEnvelope(Forbidden)
export const NotFoundResponse = errorEnvelope(NotFound)
export const PayloadTooLargeResponse = errorEnvelope(PayloadTooLarge)
export const ValidationErrorResponse = errorEnvelope(ValidationError)
export const BusinessRuleViolationResponse = errorEnvelope(BusinessRuleViolation)
export const LockedResponse = errorEnvelope(Locked)
export const TooManyAttemptsResponse = errorEnvelope(TooManyAttempts)
export const MethodNotAllowedResponse = errorEnvelope(MethodNotAllowed)
export const ServiceUnavailableResponse = errorEnvelope(ServiceUnavailable)
export const InternalErrorResponse = errorEnvelope(InternalError)
