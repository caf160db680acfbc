import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Api } from "../Api.ts"
import { escapeHtml, htmlPage } from "../http/Html.ts"
import { AppConfig } from "../platform/Config.ts"
import { label } from "../platform/Fields.ts"
import { directionOf, type Locale, negotiateLocale } from "../platform/i18n/Locale.ts"
import { type Catalogue, messagesOf } from "../platform/i18n/Messages.ts"
import { Accounts } from "./Accounts.ts"
import { invalidVerifyToken } from "./Errors.ts"
import { ResetPasswordPayload } from "./Api.ts"

/**
 * The two pages of [D26] that e-mailed links open: plain HTML, labelled fields, no script needed
 * (the reset form is an ordinary form post), in the language of the user the link belongs to,
 * else the browser's ([D120]), with a link into the portal ([D118]).
 */

const STYLE = `body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; color: #111; }
label { display: block; margin-top: 1rem; font-weight: 600; }
input { box-sizing: border-box; width: 100%; padding: .5rem; font-size: 1rem; }
button { margin-top: 1.5rem; padding: .6rem 1.2rem; font-size: 1rem; }
.error { color: #a00000; }`

const resetForm = (m: Catalogue, options: { readonly token: string; readonly email: string; readonly errors?: ReadonlyArray<string> }) => {
  const errors =
    options.errors && options.errors.length > 0
      ? `<div role="alert" class="error" id="errors"><p>${escapeHtml(m.page.reset_errors)}</p><ul>${options.errors
          .map((e) => `<li>${escapeHtml(e)}</li>`)
          .join("")}</ul></div>`
      : ""
  return `${errors}
<p>${escapeHtml(m.page.reset_intro)}</p>
<form method="post" action="/reset-password">
<input type="hidden" name="token" value="${escapeHtml(options.token)}">
<label for="email">${escapeHtml(m.page.reset_email)}</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(options.email)}">
<label for="password">${escapeHtml(m.page.reset_password)}</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<label for="password_confirmation">${escapeHtml(m.page.reset_confirm)}</label>
<input id="password_confirmation" name="password_confirmation" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<button type="submit">${escapeHtml(m.page.reset_submit)}</button>
</form>`
}

/** Laravel-style messages for the form's fields, as the API would report them ([D12]; English, as the API's). */
const formErrors = (error: ParseResult.ParseError): ReadonlyArray<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => {
    const field = String(issue.path[0] ?? "body")
    if (issue._tag === "Missing") return `The ${label(field)} field is required.`
    return issue.message.startsWith("The ") ? issue.message : `The ${label(field)} field is invalid.`
  })

const formFields = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* Effect.orElseSucceed(request.urlParamsBody, () => [] as ReadonlyArray<readonly [string, string]>)
  const fields: Record<string, string> = {}
  for (const [key, value] of params) fields[key] = value
  return fields
})

/** the link owner's language when known, else the best the browser accepts ([D120]) */
const pageLocale = (owner: Option.Option<Locale>) =>
  Option.match(owner, {
    onSome: (locale) => Effect.succeed(locale),
    onNone: () => Effect.map(HttpServerRequest.HttpServerRequest, (request) => negotiateLocale(request.headers["accept-language"]))
  })

export const PagesLive = HttpApiBuilder.group(Api, "accountsPages", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const config = yield* AppConfig
    const page = (locale: Locale, status: number, title: (m: Catalogue) => string, body: (m: Catalogue) => string) => {
      const m = messagesOf(locale)
      return htmlPage({
        status,
        lang: locale,
        dir: directionOf(locale),
        title: title(m),
        style: STYLE,
        body: `${body(m)}\n<p><a href="${escapeHtml(`${config.appUrl}/`)}">${escapeHtml(m.page.open_app)}</a></p>`
      })
    }
    const brokenResetLink = (locale: Locale) =>
      page(
        locale,
        422,
        (m) => m.page.reset_bad_title,
        (m) => `<p class="error" role="alert">${escapeHtml(m.page.reset_bad)}</p>\n<p>${escapeHtml(m.page.reset_bad_next)}</p>`
      )
    const localeOfEmail = (email: string | undefined) =>
      email === undefined || email === "" ? Effect.succeed(Option.none<Locale>()) : accounts.localeOfEmail(email)
    return handlers
      .handle("verifyEmailPage", ({ urlParams }) =>
        (urlParams.token ? accounts.verifyEmail(urlParams.token) : Effect.fail(invalidVerifyToken())).pipe(
          Effect.either,
          Effect.flatMap((outcome) =>
            Effect.map(
              Effect.flatMap(Either.isRight(outcome) ? accounts.localeOf(outcome.right) : Effect.succeed(Option.none<Locale>()), pageLocale),
              (locale) =>
                Either.isRight(outcome)
                  ? page(
                      locale,
                      200,
                      (m) => m.page.verify_ok_title,
                      (m) => `<p role="status">${escapeHtml(m.page.verify_ok)}</p>`
                    )
                  : page(
                      locale,
                      422,
                      (m) => m.page.verify_bad_title,
                      (m) => `<p class="error" role="alert">${escapeHtml(m.page.verify_bad)}</p>\n<p>${escapeHtml(m.page.verify_bad_next)}</p>`
                    )
            )
          )
        )
      )
      .handle("resetPasswordPage", ({ urlParams }) =>
        Effect.map(Effect.flatMap(localeOfEmail(urlParams.email), pageLocale), (locale) =>
          urlParams.token
            ? page(
                locale,
                200,
                (m) => m.page.reset_title,
                (m) => resetForm(m, { token: urlParams.token!, email: urlParams.email ?? "" })
              )
            : brokenResetLink(locale)
        )
      )
      .handle("resetPasswordForm", () =>
        Effect.gen(function* () {
          const fields = yield* formFields
          const token = fields["token"] ?? ""
          const email = fields["email"] ?? ""
          const locale = yield* Effect.flatMap(localeOfEmail(email), pageLocale)
          if (token === "") return brokenResetLink(locale)
          const decoded = Schema.decodeUnknownEither(ResetPasswordPayload, { errors: "all", onExcessProperty: "ignore" })(fields)
          if (Either.isLeft(decoded)) {
            return page(
              locale,
              422,
              (m) => m.page.reset_title,
              (m) => resetForm(m, { token, email, errors: formErrors(decoded.left) })
            )
          }
          return yield* accounts.resetPassword(decoded.right).pipe(
            Effect.match({
              onSuccess: () =>
                page(
                  locale,
                  200,
                  (m) => m.page.reset_done_title,
                  (m) => `<p role="status">${escapeHtml(m.page.reset_done)}</p>`
                ),
              onFailure: () => brokenResetLink(locale)
            })
          )
        })
      )
  })
)
