import * as Schema from "effect/Schema"
import * as ParseResult from "effect/ParseResult"
import { Body, boolean, email, oneOf, string, timestamp } from "../platform/Fields.ts"
import { LOCALES } from "../platform/i18n/Locale.ts"
import { isCommonPassword } from "./CommonPasswords.ts"
import { KEY_SCOPES, KeyScope, SessionUser } from "./Domain.ts"

// ---- payload fields ([D12], [D13]) --------------------------------------------------------------

/** The bodies the accounts endpoints take (moved out of Api.ts, which keeps the endpoints). */
export const PASSWORD_MISMATCH = "The password field confirmation does not match."

/** A new password: 8-128 characters, not one of the 10 000 most common ([D13]). */
export const newPassword = (field = "password") =>
  string(field, { min: 8, max: 128 }).pipe(
    Schema.filter((p) => !isCommonPassword(p), { message: () => `The ${field.replace(/_/g, " ")} field is too common.` })
  )

/** A password to check against the stored hash: only required. */
export const givenPassword = (field = "password") => string(field, { min: 1, max: 1024 })

/** `password_confirmation` must equal `password`; a mismatch is reported under `password` ([D12]). */
const confirmed = <A extends { readonly password: string; readonly password_confirmation?: string | undefined }, I, R>(
  schema: Schema.Schema<A, I, R> & { readonly fields: Schema.Struct.Fields }
) =>
  schema.pipe(
    Schema.filter((body) => body.password === body.password_confirmation || { path: ["password"], message: PASSWORD_MISMATCH }, {
      // optional in the schema so that a missing one reads as the mismatch, but a client must send it
      jsonSchema: { required: requiredKeys(schema.fields) }
    })
  )

/** The keys a client must send: every field that is not optional, and the confirmation. */
const requiredKeys = (fields: Schema.Struct.Fields) => [
  ...Object.entries(fields)
    .filter(([, field]) => !Schema.isPropertySignature(field))
    .map(([key]) => key),
  "password_confirmation"
]

const confirmation = Schema.optional(Schema.String.annotations({ message: () => "The password confirmation field must be a string." }))

export const RegisterPayload = confirmed(
  Body({
    name: string("name"),
    email: email(),
    password: newPassword(),
    password_confirmation: confirmation
  })
)

/** With two-factor sign-in on, `otp` or `recovery_code` too ([D97]); checked after the password. */
export const LoginPayload = Body({
  email: email(),
  password: givenPassword(),
  otp: Schema.optional(string("otp", { min: 0 })),
  recovery_code: Schema.optional(string("recovery_code", { min: 0 }))
})

export const ResetPasswordPayload = confirmed(
  Body({
    token: string("token", { max: 255 }),
    email: email(),
    password: newPassword(),
    password_confirmation: confirmation
  })
)

export const ChangePasswordPayload = confirmed(
  Body({
    current_password: givenPassword("current_password"),
    password: newPassword(),
    password_confirmation: confirmation
  })
)

export const ProfilePayload = Body({
  name: Schema.optional(string("name")),
  email: Schema.optional(email()),
  // [D120]: the language of the user's mails, pages and PDFs
  locale: Schema.optional(oneOf("locale", LOCALES))
})

/** `scopes` of a new API key: a non-empty array of the four scopes ([D98]). */
const scopes = Schema.transformOrFail(Schema.Unknown, Schema.Array(KeyScope), {
  strict: true,
  decode: (input, _, ast) => {
    const fail = (message: string) => ParseResult.fail(new ParseResult.Type(ast, input, message))
    if (!Array.isArray(input)) return fail("The scopes field must be an array.")
    if (input.length === 0) return fail("The scopes field is required.")
    const known: ReadonlyArray<unknown> = KEY_SCOPES
    const valid = input.filter((scope): scope is KeyScope => known.includes(scope))
    return valid.length === input.length ? ParseResult.succeed(valid) : fail("The selected scopes is invalid.")
  },
  encode: ParseResult.succeed
}).annotations({ jsonSchema: { type: "array", minItems: 1, items: { type: "string", enum: KEY_SCOPES } } })

export const ApiKeyPayload = Body({
  name: string("name"),
  scopes,
  expires_at: Schema.optional(timestamp("expires_at"))
})

/** `X-Session: cookie` on registration: the session in cookies instead of a token in the body ([D119]) */
export const SESSION_HEADER = "x-session"
export const SESSION_HEADER_PARAMETER = {
  name: "X-Session",
  in: "header",
  required: false,
  description: "`cookie`: answer `{user}` without a token and set the session cookies instead ([D119]).",
  schema: { type: "string", enum: ["cookie"] }
}

/** `data` of the cookie-session routes ([D119]): the signed-in user, never a token */
export const SessionData = Schema.Struct({ user: SessionUser }).annotations({ identifier: "AccountsSessionData" })
/** [D24], [D125]: the settings present change; an empty body names the spec's field as required */
export const SettingsPayload = Body({
  email_notifications: Schema.optional(boolean("email_notifications")),
  telegram_notifications: Schema.optional(boolean("telegram_notifications"))
}).pipe(
  Schema.filter(
    (body) =>
      body.email_notifications !== undefined ||
      body.telegram_notifications !== undefined || { path: ["email_notifications"], message: "The email notifications field is required." }
  )
)
