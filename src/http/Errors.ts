import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ErrorBody, FieldErrors } from "./Envelope.ts"

/**
 * One tagged error per documented case of [D11]. On the wire each is the error envelope
 * `{success: false, message, errors?}` with its status; handlers fail with the class.
 */

type WithMessage = { readonly message: string; readonly errors?: Readonly<Record<string, ReadonlyArray<string>>> | undefined }

/** The wire form of a tagged error: the envelope, with the error's status. */
const envelope = <Self extends WithMessage, I, R>(
  cls: Schema.Schema<Self, I, R>,
  status: number,
  identifier: string,
  fromBody: (body: typeof ErrorBody.Type) => Self
) =>
  Schema.transform(ErrorBody, Schema.typeSchema(cls), {
    strict: true,
    decode: fromBody,
    encode: (e) => ({ success: false as const, message: e.message, ...(e.errors ? { errors: e.errors } : {}) })
  }).annotations({ identifier, ...HttpApiSchema.annotations({ status }) })

const message = (fallback: string) => Schema.optionalWith(Schema.String, { default: () => fallback })

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  message: message("Unauthenticated.")
}) {}
export const UnauthenticatedResponse = envelope(Unauthenticated, 401, "Unauthenticated", (b) => new Unauthenticated(b))

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {
  message: message("Invalid credentials.")
}) {}
export const InvalidCredentialsResponse = envelope(InvalidCredentials, 401, "InvalidCredentials", (b) => new InvalidCredentials(b))

export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {
  message: message("Invalid signature.")
}) {}
export const InvalidSignatureResponse = envelope(InvalidSignature, 401, "InvalidSignature", (b) => new InvalidSignature(b))

/** 403: `Forbidden.` by default; named cases carry their own message (`Account disabled.`, ...). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: message("Forbidden.")
}) {}
export const ForbiddenResponse = envelope(Forbidden, 403, "Forbidden", (b) => new Forbidden(b))

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: message("Resource not found.")
}) {}
export const NotFoundResponse = envelope(NotFound, 404, "NotFound", (b) => new NotFound(b))

/** The value, or 404 `Resource not found.` ([D11]: missing and other users' rows alike). */
export const orNotFound = <A>(option: Option.Option<A>): Effect.Effect<A, NotFound> =>
  Option.match(option, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  message: message("Method not allowed.")
}) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: message("Payload too large.")
}) {}
export const PayloadTooLargeResponse = envelope(PayloadTooLarge, 413, "PayloadTooLarge", (b) => new PayloadTooLarge(b))

/** 422 for invalid fields, with `errors` per [D12]. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: message("The given data was invalid."),
  errors: FieldErrors
}) {
  /** One field, one message: `ValidationError.field("token", "The token is invalid.")` */
  static field(name: string, text: string): ValidationError {
    return new ValidationError({ errors: { [name]: [text] } })
  }
}
export const ValidationErrorResponse = envelope(
  ValidationError,
  422,
  "ValidationError",
  (b) => new ValidationError({ message: b.message, errors: b.errors ?? {} })
)

/** 422 for a business rule with its own fixed message and no `errors` ([D10]). */
export class BusinessRuleViolation extends Schema.TaggedError<BusinessRuleViolation>()("BusinessRuleViolation", {
  message: Schema.String
}) {}
export const BusinessRuleViolationResponse = envelope(
  BusinessRuleViolation,
  422,
  "BusinessRuleViolation",
  (b) => new BusinessRuleViolation(b)
)

/** 423: `Service suspended.` or `Bandwidth limit exceeded.` */
export class Locked extends Schema.TaggedError<Locked>()("Locked", {
  message: Schema.String
}) {}
export const LockedResponse = envelope(Locked, 423, "Locked", (b) => new Locked(b))

export class TooManyAttempts extends Schema.TaggedError<TooManyAttempts>()("TooManyAttempts", {
  message: message("Too Many Attempts.")
}) {}
export const TooManyAttemptsResponse = envelope(TooManyAttempts, 429, "TooManyAttempts", (b) => new TooManyAttempts(b))

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: message("Service temporarily unavailable.")
}) {}
export const ServiceUnavailableResponse = envelope(ServiceUnavailable, 503, "ServiceUnavailable", (b) => new ServiceUnavailable(b))

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: message("An unexpected error occurred.")
}) {}
export const InternalErrorResponse = envelope(InternalError, 500, "InternalError", (b) => new InternalError(b))
