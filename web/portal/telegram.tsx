/**
 * Telegram in the portal ([D125]): signing in with Telegram's login page or as a Mini App, and
 * the account's link to a chat. The page scripts of [D118]'s CSP are the app's own (`script-src
 * 'self'`), so neither Telegram's Login Widget script nor its `telegram-web-app.js` runs here:
 * - the Login Widget's flow is a redirect to Telegram's own login page
 *   (`https://oauth.telegram.org/auth?bot_id=...&origin=...&return_to=...`, what the widget opens
 *   in its popup), which comes back to `/sign-in/telegram#tgAuthResult=<base64url JSON>`;
 * - a Mini App gets its `initData` as `#tgWebAppData=...` in the address Telegram opens, which is
 *   what `Telegram.WebApp.initData` would return.
 * Both are read once at start (and taken out of the address bar and the history), then posted
 * with `X-Session: cookie`: the session is in the cookies, no token reaches this code ([D119]).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query"
import { useEffect, useRef, useState } from "react"
import { useTranslation } from "react-i18next"
import { Link, useLocation } from "wouter"
import { ApiError, call, errorMessage } from "../shared/api.ts"
import type { RequestOf } from "../shared/api-types.ts"
import { formatDateTime } from "../shared/format.ts"
import { ActionButton, Field, FormError, Submit } from "../shared/forms.tsx"
import { SESSION_KEY, signInWithTelegram, signInWithTelegramWebApp, type User, useSession } from "../shared/session.ts"
import { Loaded } from "../shared/ui.tsx"

type WidgetFields = RequestOf<"telegram", "telegramSignIn">["payload"]

/** What Telegram handed this page when it opened: the login page's fields or a Mini App's initData. */
export type TelegramLaunch =
  | { readonly kind: "widget"; readonly fields: WidgetFields }
  | { readonly kind: "webapp"; readonly initData: string }
  /** Telegram's login page came back without a signed account (`tgAuthResult=false`, or unreadable) */
  | { readonly kind: "refused" }

export const TELEGRAM_ROUTE = "/sign-in/telegram"
const NEXT_KEY = "vpn-telegram-next"
const CONFIG_KEY = ["telegram", "config"] as const

/** `GET /v1/auth/telegram`: is sign-in with Telegram offered, and the bot's id for its login page */
export const useTelegramConfig = () =>
  useQuery({ queryKey: CONFIG_KEY, queryFn: () => call("telegram", "telegramSignInConfig"), staleTime: Number.POSITIVE_INFINITY })

const base64UrlText = (value: string) => {
  const base64 = value.replace(/-/g, "+").replace(/_/g, "/")
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4))
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
}

/** the login page's `tgAuthResult`: base64url of the widget's fields as JSON (UTF-8), or `false` */
export const readAuthResult = (encoded: string): WidgetFields | undefined => {
  let data: unknown
  try {
    data = JSON.parse(base64UrlText(encoded))
  } catch {
    return undefined
  }
  if (typeof data !== "object" || data === null) return undefined
  const d = data as Record<string, unknown>
  const whole = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v)) || (typeof v === "string" && /^[0-9]+$/.test(v))
  if (!whole(d["id"]) || !whole(d["auth_date"]) || typeof d["hash"] !== "string") return undefined
  const text = (key: string) => (typeof d[key] === "string" ? { [key]: d[key] as string } : {})
  // exactly the widget's fields, each as signed (the hash covers the values as Telegram sent them)
  return {
    id: String(d["id"]),
    auth_date: String(d["auth_date"]),
    hash: d["hash"] as string,
    ...text("first_name"),
    ...text("last_name"),
    ...text("username"),
    ...text("photo_url")
  }
}

let launch: TelegramLaunch | undefined

/**
 * At start, before the router reads the address: takes what Telegram put after `#` and removes it
 * from the address bar (a reload must not send it again: it signs in once). A Mini App opened at
 * any path goes to the Telegram sign-in page, and then back to that path.
 */
export const captureTelegramLaunch = () => {
  const hash = new URLSearchParams(window.location.hash.slice(1))
  const initData = hash.get("tgWebAppData")
  const authResult = hash.get("tgAuthResult")
  if (initData !== null && initData !== "") {
    launch = { kind: "webapp", initData }
    const here = `${window.location.pathname}${window.location.search}`
    rememberNext(here.startsWith(TELEGRAM_ROUTE) ? "/" : here)
    window.history.replaceState(null, "", TELEGRAM_ROUTE)
  } else if (authResult !== null) {
    const fields = readAuthResult(authResult)
    launch = fields === undefined ? { kind: "refused" } : { kind: "widget", fields }
    window.history.replaceState(null, "", `${window.location.pathname}${window.location.search}`)
  }
}

const rememberNext = (next: string) => {
  try {
    sessionStorage.setItem(NEXT_KEY, next)
  } catch {
    // storage off: back to the home page
  }
}

/** Only a path of this app, never another origin. */
export const safeNext = (next: string | null) => (next !== null && next.startsWith("/") && !next.startsWith("//") ? next : "/")

const takeNext = () => {
  try {
    const next = sessionStorage.getItem(NEXT_KEY)
    sessionStorage.removeItem(NEXT_KEY)
    return safeNext(next)
  } catch {
    return "/"
  }
}

/** Telegram's login page for this portal; it returns to {@link TELEGRAM_ROUTE} with the signed fields. */
export const telegramLoginUrl = (botId: number, language: string) => {
  const origin = window.location.origin
  const query = new URLSearchParams({ bot_id: String(botId), origin, return_to: `${origin}${TELEGRAM_ROUTE}`, lang: language })
  return `https://oauth.telegram.org/auth?${query.toString()}`
}

/** On the sign-in page: "Sign in with Telegram" when the service offers it. */
export const TelegramSignInButton = ({ next }: { readonly next: string }) => {
  const { t, i18n } = useTranslation()
  const config = useTelegramConfig()
  if (config.data === undefined || !config.data.enabled || config.data.bot_id === null) return null
  return (
    <p>
      <a href={telegramLoginUrl(config.data.bot_id, i18n.language)} role="button" className="secondary outline" onClick={() => rememberNext(next)}>
        {t("telegram.signIn")}
      </a>
    </p>
  )
}

const NOT_LINKED = "Telegram account not linked."

/**
 * `/sign-in/telegram`: posts what Telegram handed over, asks for the second factor when the API
 * says it is needed ([D97]; the same data may be sent again with it), then goes on.
 */
export const TelegramSignIn = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const session = useSession()
  const [, navigate] = useLocation()
  const [held] = useState(() => launch)
  const [next] = useState(takeNext)
  const [otp, setOtp] = useState("")
  const started = useRef(false)
  const signIn = useMutation({
    mutationFn: (code: string | undefined): Promise<User> => {
      const factor = code === undefined || code === "" ? {} : { otp: code }
      if (held?.kind === "widget") return signInWithTelegram({ ...held.fields, ...factor })
      if (held?.kind === "webapp") return signInWithTelegramWebApp({ init_data: held.initData, ...factor })
      return Promise.reject(new Error("no Telegram data"))
    },
    onSuccess: (user) => {
      launch = undefined
      client.setQueryData(SESSION_KEY, user)
      navigate(next)
    }
  })
  useEffect(() => {
    if (started.current || session.isPending || held === undefined || held.kind === "refused") return
    started.current = true
    // a Mini App opened by someone already signed in here: nothing to do
    if (held.kind === "webapp" && session.data) navigate(next)
    else signIn.mutate(undefined)
  }, [session.isPending, session.data, held, next, navigate, signIn])

  const error = signIn.error instanceof ApiError ? signIn.error : undefined
  const otpError = error?.field("otp")
  const failure =
    held === undefined
      ? t("telegram.nothing")
      : held.kind === "refused"
        ? t("telegram.refused")
        : error === undefined || otpError !== undefined
          ? undefined
          : error.status === 401 && error.message === NOT_LINKED
            ? t("telegram.notLinked")
            : error.status === 401
              ? t("telegram.invalid")
              : error.message
  return (
    <article className="narrow">
      <h1>{t("telegram.signInTitle")}</h1>
      {failure !== undefined ? (
        <>
          <p role="alert" className="form-error">
            {failure}
          </p>
          <p>
            <Link href="/sign-in">{t("telegram.backToSignIn")}</Link>
          </p>
        </>
      ) : otpError !== undefined ? (
        <form
          onSubmit={(e) => {
            e.preventDefault()
            signIn.mutate(otp)
          }}
          noValidate
        >
          <Field
            name="otp"
            label={t("auth.otp")}
            inputMode="numeric"
            autoComplete="one-time-code"
            value={otp}
            onChange={setOtp}
            error={otpError}
            hint={t("auth.otpHint")}
          />
          <Submit pending={signIn.isPending}>{t("auth.signIn")}</Submit>
        </form>
      ) : (
        <p aria-busy="true">{t("telegram.signingIn")}</p>
      )}
    </article>
  )
}

/**
 * On the account page: the linked chat (and unlinking it, and its notices), or a one-time link to
 * open in Telegram (a button and its QR code, for Telegram on a phone); without Telegram, a note.
 */
export const TelegramAccount = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const config = useTelegramConfig()
  const link = useMutation({ mutationFn: () => call("telegram", "createTelegramLink") })
  const waiting = link.data !== undefined && new Date(link.data.expires_at).getTime() > Date.now()
  const status = useQuery({
    queryKey: ["telegram", "status"],
    queryFn: () => call("telegram", "telegramStatus"),
    // after the link was handed out: watch for the chat to press Start
    refetchInterval: (query) => (waiting && query.state.data?.linked !== true ? 3000 : false)
  })
  const settings = useQuery({ queryKey: ["settings"], queryFn: () => call("accounts", "settings") })
  // the switch shows the person's choice at once, and the saved value again if saving fails
  const [chosen, setChosen] = useState<boolean | undefined>(undefined)
  const notify = useMutation({
    mutationFn: (value: boolean) => call("accounts", "updateSettings", { payload: { telegram_notifications: value } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ["settings"] }),
    onSettled: () => setChosen(undefined)
  })
  const [qr, setQr] = useState<string | undefined>(undefined)
  useEffect(() => {
    if (link.data === undefined) return
    // the QR library the API uses, loaded only when someone links Telegram
    void import("qrcode/lib/browser.js").then((QRCode) => QRCode.toDataURL(link.data.url, { margin: 1, width: 200 })).then(setQr)
  }, [link.data])
  const linked = status.data?.linked === true
  useEffect(() => {
    // linked: the notices setting now reads on ([D125])
    if (linked) void client.invalidateQueries({ queryKey: ["settings"] })
  }, [linked, client])
  return (
    <article aria-labelledby="telegram-heading">
      <header>
        <h2 id="telegram-heading">{t("telegram.title")}</h2>
      </header>
      <Loaded query={status}>
        {(s) =>
          s.linked ? (
            <>
              <p>
                {s.username === null
                  ? t("telegram.linked", { date: formatDateTime(s.linked_at) })
                  : t("telegram.linkedAs", { username: `@${s.username}`, date: formatDateTime(s.linked_at) })}
              </p>
              {settings.data !== undefined && (
                <label>
                  <input
                    type="checkbox"
                    role="switch"
                    name="telegram_notifications"
                    checked={chosen ?? settings.data.telegram_notifications}
                    onChange={(e) => {
                      setChosen(e.target.checked)
                      notify.mutate(e.target.checked)
                    }}
                  />
                  {t("telegram.notifications")}
                </label>
              )}
              <FormError message={notify.error === null ? undefined : errorMessage(notify.error)} />
              <div className="actions">
                <ActionButton
                  className="secondary outline"
                  confirm={t("telegram.unlinkConfirm")}
                  action={() => call("telegram", "unlinkTelegram")}
                  invalidate={[["telegram", "status"], ["settings"]]}
                  onDone={() => link.reset()}
                >
                  {t("telegram.unlink")}
                </ActionButton>
              </div>
            </>
          ) : config.data !== undefined && !config.data.enabled ? (
            <p>{t("telegram.unavailable")}</p>
          ) : (
            <>
              <p>{t("telegram.linkText")}</p>
              {link.data === undefined || !waiting ? (
                <button type="button" aria-busy={link.isPending} disabled={link.isPending} onClick={() => link.mutate()}>
                  {t("telegram.link")}
                </button>
              ) : (
                <div className="qr">
                  <a href={link.data.url} target="_blank" rel="noopener noreferrer" role="button">
                    {t("telegram.open")}
                  </a>
                  {qr !== undefined && <img src={qr} alt={t("telegram.qrAlt")} width={200} height={200} />}
                  <p>
                    <small>{t("telegram.linkExpires", { time: formatDateTime(link.data.expires_at) })}</small>
                  </p>
                </div>
              )}
              <FormError message={link.error === null ? undefined : errorMessage(link.error)} />
            </>
          )
        }
      </Loaded>
    </article>
  )
}
