import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { ValidationError } from "../platform/Errors.ts"

/** The accounts room's own failures; field errors ([D12]) are the shared `ValidationError`. */

/** Login to an account with `status` 0 ([D11], [D21]). */
export class AccountDisabled extends Schema.TaggedError<AccountDisabled>()(
  "AccountDisabled",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Account disabled." })
  },
  HttpApiSchema.annotations({ status: 403 })
) {}

export const EMAIL_TAKEN = "The email has already been taken."
export const PASSWORD_INCORRECT = "The password is incorrect."
export const INVALID_VERIFY_TOKEN = "The verification token is invalid or has expired."
export const INVALID_RESET_TOKEN = "This password reset token is invalid or has expired."
export const LAST_ADMIN = "The last admin cannot be demoted or disabled."

export const emailTaken = () => ValidationError.field("email", EMAIL_TAKEN)
export const passwordIncorrect = (field: string) => ValidationError.field(field, PASSWORD_INCORRECT)
export const invalidVerifyToken = () => ValidationError.field("token", INVALID_VERIFY_TOKEN)
export const invalidResetToken = () => ValidationError.field("token", INVALID_RESET_TOKEN)

// two-factor sign-in ([D97])
export const OTP_REQUIRED = "The otp field is required."
export const TWO_FACTOR_CODE_INVALID = "The two-factor code is invalid."
export const TWO_FACTOR_ALREADY_ENABLED = "Two-factor authentication is already enabled."
export const TWO_FACTOR_NOT_ENABLED = "Two-factor authentication is not enabled."

/** a code (or recovery code) that does not match, under the field it came in (`code`, `otp`) */
export const twoFactorCodeInvalid = (field: string) => ValidationError.field(field, TWO_FACTOR_CODE_INVALID)
export const otpRequired = () => ValidationError.field("otp", OTP_REQUIRED)
/** set-up while it is on, or turning off while it is off: reported under `two_factor` */
export const twoFactorAlreadyEnabled = () => new ValidationError({ message: TWO_FACTOR_ALREADY_ENABLED, errors: { two_factor: [TWO_FACTOR_ALREADY_ENABLED] } })
export const twoFactorNotEnabled = () => new ValidationError({ message: TWO_FACTOR_NOT_ENABLED, errors: { two_factor: [TWO_FACTOR_NOT_ENABLED] } })
