import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { ValidationError } from "../platform/Errors.ts"

/** The accounts room's own failures; field errors ([D12]) are the shared `ValidationError`. */

/** Login to an account with `status` 0 ([D11], [D21]). */
export class AccountDisabled extends Schema.TaggedError<AccountDisabled>()("AccountDisabled", {
  message: Schema.optionalWith(Schema.String, { default: () => "Account disabled." })
}, HttpApiSchema.annotations({ status: 403 })) {}

export const EMAIL_TAKEN = "The email has already been taken."
export const PASSWORD_INCORRECT = "The password is incorrect."
export const INVALID_VERIFY_TOKEN = "The verification token is invalid or has expired."
export const INVALID_RESET_TOKEN = "This password reset token is invalid or has expired."
export const LAST_ADMIN = "The last admin cannot be demoted or disabled."

export const emailTaken = () => ValidationError.field("email", EMAIL_TAKEN)
export const passwordIncorrect = (field: string) => ValidationError.field(field, PASSWORD_INCORRECT)
export const invalidVerifyToken = () => ValidationError.field("token", INVALID_VERIFY_TOKEN)
export const invalidResetToken = () => ValidationError.field("token", INVALID_RESET_TOKEN)
