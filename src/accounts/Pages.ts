import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Api } from "../Api.ts"
import { htmlResponse } from "../http/Html.ts"
import { label } from "../platform/Fields.ts"
import { Accounts } from "./Accounts.ts"
import { invalidVerifyToken } from "./Errors.ts"
import { ResetPasswordPayload } from "./Api.ts"

/**
 * The two pages of [D26] that e-mailed links open until a web front exists: plain HTML,
 * labelled fields, no script needed (the reset form is an ordinary form post).
 */

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const page = (status: number, title: string, body: string) =>
  htmlResponse(
    status,
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; color: #111; }
label { display: block; margin-top: 1rem; font-weight: 600; }
input { box-sizing: border-box; width: 100%; padding: .5rem; font-size: 1rem; }
button { margin-top: 1.5rem; padding: .6rem 1.2rem; font-size: 1rem; }
.error { color: #a00000; }
</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`
  )

const resetForm = (options: { readonly token: string; readonly email: string; readonly errors?: ReadonlyArray<string> }) => {
  const errors = options.errors && options.errors.length > 0
    ? `<div role="alert" class="error" id="errors"><p>Please correct the following:</p><ul>${
      options.errors.map((e) => `<li>${escapeHtml(e)}</li>`).join("")
    }</ul></div>`
    : ""
  return `${errors}
<p>Choose a new password of at least 8 characters.</p>
<form method="post" action="/reset-password">
<input type="hidden" name="token" value="${escapeHtml(options.token)}">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(options.email)}">
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<label for="password_confirmation">Confirm the new password</label>
<input id="password_confirmation" name="password_confirmation" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<button type="submit">Reset password</button>
</form>`
}

const brokenResetLink = () =>
  page(
    422,
    "Reset link invalid",
    `<p class="error" role="alert">This password reset link is invalid, incomplete or has expired.</p>
<p>Ask for a new link with “Forgot password” in the app, then open the newest e-mail.</p>`
  )

/** Laravel-style messages for the form's fields, as the API would report them ([D12]). */
const formErrors = (error: ParseResult.ParseError): ReadonlyArray<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => {
    const field = String(issue.path[0] ?? "body")
    if (issue._tag === "Missing") return `The ${label(field)} field is required.`
    return issue.message.startsWith("The ") ? issue.message : `The ${label(field)} field is invalid.`
  })

const formFields = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* Effect.orElseSucceed(request.urlParamsBody, () => [] as ReadonlyArray<readonly [string, string]>)
  const fields: Record<string, string> = {}
  for (const [key, value] of params) fields[key] = value
  return fields
})

export const PagesLive = HttpApiBuilder.group(Api, "accountsPages", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return handlers
      .handle("verifyEmailPage", ({ urlParams }) =>
        (urlParams.token ? accounts.verifyEmail(urlParams.token) : Effect.fail(invalidVerifyToken())).pipe(
          Effect.match({
            onSuccess: () =>
              page(200, "Email verified.", `<p role="status">Your e-mail address is confirmed. You can close this page and go back to the app.</p>`),
            onFailure: () =>
              page(
                422,
                "Verification link invalid",
                `<p class="error" role="alert">This verification link is invalid, was already used or has expired.</p>
<p>Ask for a new one with “Resend verification” in the app, then open the newest e-mail.</p>`
              )
          })
        ))
      .handle("resetPasswordPage", ({ urlParams }) =>
        Effect.succeed(
          urlParams.token
            ? page(200, "Reset your password", resetForm({ token: urlParams.token, email: urlParams.email ?? "" }))
            : brokenResetLink()
        ))
      .handle("resetPasswordForm", () =>
        Effect.gen(function*() {
          const fields = yield* formFields
          const token = fields["token"] ?? ""
          const email = fields["email"] ?? ""
          if (token === "") return brokenResetLink()
          const decoded = Schema.decodeUnknownEither(ResetPasswordPayload, { errors: "all", onExcessProperty: "ignore" })(fields)
          if (Either.isLeft(decoded)) {
            return page(422, "Reset your password", resetForm({ token, email, errors: formErrors(decoded.left) }))
          }
          return yield* accounts.resetPassword(decoded.right).pipe(
            Effect.match({
              onSuccess: () =>
                page(
                  200,
                  "Password reset",
                  `<p role="status">Your password has been changed and every device was signed out. You can now log in with the new password.</p>`
                ),
              onFailure: () => brokenResetLink()
            })
          )
        }))
  }))
