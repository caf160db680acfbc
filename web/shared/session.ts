/**
 * The browser session of [D119]: signed in by `POST /v1/auth/session` (or registration with
 * `X-Session: cookie`), the credential an HttpOnly cookie this code never sees; `GET
 * /v1/auth/session` tells who is signed in. Raw requests until the contract's `createSession`
 * and `currentSession` reach `endpoints.ts` (they come with the [D119] back end).
 */
import { QueryClient, useQuery } from "@tanstack/react-query"
import { ApiError, call, request, setUnauthenticatedHandler } from "./api.ts"
import type { SuccessOf } from "./api-types.ts"

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

const userOf = (data: unknown): User => {
  const d = data as { user?: User } & User
  return d.user ?? d
}

/** The signed-in user, or `null`. */
export const fetchSession = async (): Promise<User | null> => {
  try {
    return userOf(await request("GET", "/v1/auth/session"))
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 404)) return null
    throw e
  }
}

export const useSession = () => useQuery({ queryKey: SESSION_KEY, queryFn: fetchSession, staleTime: 60_000 })

export const signIn = async (payload: { email: string; password: string; otp?: string | undefined }) =>
  userOf(await request("POST", "/v1/auth/session", payload))

export const signUp = async (payload: { name: string; email: string; password: string; password_confirmation: string }) =>
  userOf(await request("POST", "/v1/auth/register", payload, "data", { "x-session": "cookie" }))

export const signOut = () => call("accounts", "logout")
