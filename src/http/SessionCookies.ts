import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { AppConfig } from "../platform/Config.ts"
import { CSRF_COOKIE, SESSION_COOKIE } from "./Auth.ts"

/**
 * The two cookies of a browser session ([D119]): `vpn_session`, the access token (HttpOnly), and
 * `vpn_csrf`, the value a script sends back as `X-CSRF-Token` on every request other than
 * GET/HEAD. Both `SameSite=Strict`, `Path=/`, `Secure` when `APP_URL` is https, and live as long
 * as a bearer token (`TOKEN_TTL_DAYS`). Set (or cleared) on the handler's response.
 */
export const sessionCookies = (config: AppConfig["Type"], csrfOf: (token: string) => string) => {
  const common = { path: "/", sameSite: "strict", secure: config.appUrl.startsWith("https:") } as const
  const maxAge = Duration.days(config.tokenTtlDays)
  const onResponse = (change: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse) =>
    HttpApp.appendPreResponseHandler((_request, response) =>
      // a response that opens or ends a session is never cached
      Effect.succeed(HttpServerResponse.setHeader(change(response), "cache-control", "no-store"))
    )
  return {
    /** the session of `token` in the response's cookies */
    set: (token: string) =>
      onResponse((response) =>
        response.pipe(
          HttpServerResponse.unsafeSetCookie(SESSION_COOKIE, token, { ...common, httpOnly: true, maxAge }),
          HttpServerResponse.unsafeSetCookie(CSRF_COOKIE, csrfOf(token), { ...common, maxAge })
        )
      ),
    /** both cookies expired (`Max-Age=0`) */
    clear: onResponse((response) =>
      response.pipe(HttpServerResponse.expireCookie(SESSION_COOKIE, { ...common, httpOnly: true }), HttpServerResponse.expireCookie(CSRF_COOKIE, common))
    )
  }
}
