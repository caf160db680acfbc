import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * The failures every room shares ([D11]), each a tagged error carrying its status. A room's own
 * cases (a promo that does not apply, a suspended service, ...) are declared in the room; the
 * wire form of all of them is the error envelope, built by `src/http/Errors.ts`.
 */

export const FieldErrors = Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) })
export type FieldErrors = typeof FieldErrors.Type

const message = (fallback: string) => Schema.optionalWith(Schema.String, { default: () => fallback })

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()(
  "Unauthenticated",
  {
    message: message("Unauthenticated.")
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()(
  "InvalidCredentials",
  {
    message: message("Invalid credentials.")
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()(
  "InvalidSignature",
  {
    message: message("Invalid signature.")
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** 403: `Forbidden.` by default; named cases carry their own message (`Account disabled.`, ...). */
export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  {
    message: message("Forbidden.")
  },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  {
    message: message("Resource not found.")
  },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** The value, or 404 `Resource not found.` ([D11]: missing and other users' rows alike). */
export const orNotFound = <A>(option: Option.Option<A>): Effect.Effect<A, NotFound> =>
  Option.match(option, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()(
  "MethodNotAllowed",
  {
    message: message("Method not allowed.")
  },
  HttpApiSchema.annotations({ status: 405 })
) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  {
    message: message("Payload too large.")
  },
  HttpApiSchema.annotations({ status: 413 })
) {}

/** 422 for invalid fields, with `errors` per [D12]. */
export class ValidationError extends Schema.TaggedError<ValidationError>()(
  "ValidationError",
  {
    message: message("The given data was invalid."),
    errors: FieldErrors
  },
  HttpApiSchema.annotations({ status: 422 })
) {
  /** One field, one message: `ValidationError.field("token", "The token is invalid.")` */
  static field(name: string, text: string): ValidationError {
    return new ValidationError({ errors: { [name]: [text] } })
  }
}

/** 422 for a business rule with its own fixed message and no `errors` ([D10]). */
export class BusinessRuleViolation extends Schema.TaggedError<BusinessRuleViolation>()(
  "BusinessRuleViolation",
  {
    message: Schema.String
  },
  HttpApiSchema.annotations({ status: 422 })
) {}

/** 423: `Service suspended.` or `Bandwidth limit exceeded.` */
export class Locked extends Schema.TaggedError<Locked>()(
  "Locked",
  {
    message: Schema.String
  },
  HttpApiSchema.annotations({ status: 423 })
) {}

export class TooManyAttempts extends Schema.TaggedError<TooManyAttempts>()(
  "TooManyAttempts",
  {
    message: message("Too Many Attempts.")
  },
  HttpApiSchema.annotations({ status: 429 })
) {}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()(
  "ServiceUnavailable",
  {
    message: message("Service temporarily unavailable.")
  },
  HttpApiSchema.annotations({ status: 503 })
) {}

export class InternalError extends Schema.TaggedError<InternalError>()(
  "InternalError",
  {
    message: message("An unexpected error occurred.")
  },
  HttpApiSchema.annotations({ status: 500 })
) {}
