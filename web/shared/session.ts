/**
 * The browser session of [D119]: signed in by `POST /v1/auth/session` (or registration, or
 * sign-in with Telegram, with `X-Session: cookie`), the credential an HttpOnly cookie this code
 * never sees; `GET /v1/auth/session` tells who is signed in.
 */
import { type QueryClient as Client, QueryClient, useQuery } from "@tanstack/react-query"
import { ApiError, call, setUnauthenticatedHandler } from "./api.ts"
import type { RequestOf, SuccessOf } from "./api-types.ts"
import { applyLocale, isLocale, type Locale } from "./i18n.ts"

export type User = SuccessOf<"accounts", "user">

export const SESSION_KEY = ["session"] as const

export const makeQueryClient = () => {
  const client = new QueryClient({
    defaultOptions: {
      queries: {
        retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
        refetchOnWindowFocus: false,
        staleTime: 10_000
      }
    }
  })
  // a 401 anywhere: the session is over
  setUnauthenticatedHandler(() => client.setQueryData(SESSION_KEY, null))
  return client
}

/** `X-Session: cookie`: the answer keeps only the user, the session goes into the cookies ([D119]) */
export const COOKIE_SESSION = { "x-session": "cookie" } as const

/**
 * The user of a sign-in's answer. With `X-Session: cookie` the contract's union (a token and the
 * user, or the user only) always has the second form; a token here would be a server bug, and is
 * never kept.
 */
const userOf = (data: { readonly user: unknown }): User => data.user as User

/** The signed-in user, or `null`. */
export const fetchSession = async (): Promise<User | null> => {
  try {
    return (await call("accounts", "currentSession")).user
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 404)) return null
    throw e
  }
}

export const useSession = () => useQuery({ queryKey: SESSION_KEY, queryFn: fetchSession, staleTime: 60_000 })

export const signIn = async (payload: { email: string; password: string; otp?: string | undefined }) =>
  (await call("accounts", "createSession", { payload })).user

export const signUp = async (payload: { name: string; email: string; password: string; password_confirmation: string }) =>
  userOf(await call("accounts", "register", { payload, headers: COOKIE_SESSION }))

/** [D125]: the Login Widget's fields (from Telegram's login page), and a second factor when asked */
export const signInWithTelegram = async (payload: RequestOf<"telegram", "telegramSignIn">["payload"]) =>
  userOf(await call("telegram", "telegramSignIn", { payload, headers: COOKIE_SESSION }))

/** [D125]: a Mini App's `initData`, and a second factor when asked */
export const signInWithTelegramWebApp = async (payload: RequestOf<"telegram", "telegramWebAppSignIn">["payload"]) =>
  userOf(await call("telegram", "telegramWebAppSignIn", { payload, headers: COOKIE_SESSION }))

export const signOut = () => call("accounts", "logout")

/**
 * [D120]: the language switch. The app turns at once, the signed-in user's cached session takes
 * the new `locale` too (a session read still under way, or one read again, must not turn the app
 * back to the old language), and the account keeps it (mails, PDFs, pages).
 */
export const chooseLocale = (client: Client, locale: Locale) => {
  applyLocale(locale)
  const user = client.getQueryData<User | null>(SESSION_KEY)
  if (user === null) return Promise.resolve(undefined)
  // the session is still being read: the account takes the choice once it is known
  if (user === undefined) {
    chosenWhileLoading = locale
    return Promise.resolve(undefined)
  }
  // a session read under way answers the old language: it is dropped (the cache is right)
  void client.cancelQueries({ queryKey: SESSION_KEY })
  // the session's user carries the account's `locale` (GET /v1/auth/session)
  const withLocale: User & { readonly locale: Locale } = { ...user, locale }
  client.setQueryData<User | null>(SESSION_KEY, withLocale)
  return call("accounts", "updateProfile", { payload: { locale } })
}

let chosenWhileLoading: Locale | undefined

/**
 * The language once the session is known: the one picked while it was being read (which the
 * account then keeps), else the account's own.
 */
export const sessionLocale = (client: Client, user: User | null | undefined) => {
  if (!user) return
  const chosen = chosenWhileLoading
  chosenWhileLoading = undefined
  if (chosen !== undefined) return void chooseLocale(client, chosen).catch(() => undefined)
  const locale = (user as { readonly locale?: unknown }).locale
  if (isLocale(locale)) applyLocale(locale)
}
