import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Grammy from "grammy"
import { AppConfig, type TelegramConfig } from "./Config.ts"

/** How a `sendMessage` went wrong, as the outbox needs to know it ([D125]). */
export type TelegramSendFailure =
  /** 429: Telegram asks to wait this long before any further call */
  | { readonly _tag: "RateLimited"; readonly retryAfterMs: number; readonly reason: string }
  /** 403: the user blocked the bot (or deleted their account): the chat cannot be reached again */
  | { readonly _tag: "Unreachable"; readonly reason: string }
  /** refused for good (400: a chat that does not exist, a text Telegram will not take) */
  | { readonly _tag: "Rejected"; readonly reason: string }
  /** nothing was sent (Telegram answered an error, or the connection was never made): safe to try again */
  | { readonly _tag: "NotSent"; readonly reason: string }
  /** the request may have reached Telegram (a timeout, a connection cut mid-answer): sending again could send twice */
  | { readonly _tag: "Unknown"; readonly reason: string }

export interface TelegramBotApi {
  /** the bot's `@username` from `getMe`, read once per process and kept */
  readonly username: Effect.Effect<string, { readonly reason: string }>
  /** a plain-text message to a chat */
  readonly sendMessage: (chatId: string, text: string) => Effect.Effect<void, TelegramSendFailure>
}

/** the error codes of a connection that was never made: the request cannot have reached Telegram */
const NOT_CONNECTED = new Set(["ConnectionRefused", "ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "FailedToOpenSocket"])

const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const e = error as { readonly code?: unknown; readonly cause?: unknown }
  return typeof e.code === "string" ? e.code : codeOf(e.cause)
}

/**
 * The Telegram Bot API ([D125]) through grammY's `Api` client (a maintained client; `apiRoot` is
 * `TELEGRAM_API_URL` in tests). None when TELEGRAM_BOT_TOKEN / TELEGRAM_WEBHOOK_SECRET are not set.
 * grammY is loaded at the first call a process makes, never at start-up (issue 27, "Idle memory").
 * The token is never logged: grammY leaves the URL out of its errors.
 */
export class TelegramBot extends Context.Tag("platform/TelegramBot")<TelegramBot, Option.Option<TelegramBotApi>>() {
  static readonly Live = Layer.effect(
    TelegramBot,
    Effect.map(AppConfig, (config) => Option.map(Option.flatten(Option.fromNullable(config.telegram)), make))
  )
}

const make = (telegram: TelegramConfig): TelegramBotApi => {
  let client: Promise<{ readonly api: Grammy.Api; readonly module: typeof Grammy }> | undefined
  const load = () =>
    (client ??= import("grammy").then((module) => ({
      module,
      api: new module.Api(Redacted.value(telegram.botToken), {
        ...Option.match(telegram.apiUrl, { onNone: () => ({}), onSome: (apiRoot) => ({ apiRoot }) }),
        // Bun's own fetch, not grammY's node-fetch
        fetch: globalThis.fetch as unknown as NonNullable<Grammy.ApiClientOptions["fetch"]>,
        timeoutSeconds: 20
      })
    })))

  let username: string | undefined
  const getUsername = Effect.suspend(() =>
    username !== undefined
      ? Effect.succeed(username)
      : Effect.tryPromise({
          try: async () => {
            const { api } = await load()
            const me = await api.getMe()
            if (me.username === undefined || me.username === "") throw new Error("getMe answered no username")
            username = me.username
            return me.username
          },
          catch: (error) => ({ reason: error instanceof Error ? error.message : String(error) })
        })
  )

  const classify = (module: typeof Grammy, error: unknown): TelegramSendFailure => {
    if (error instanceof module.GrammyError) {
      const reason = `${error.error_code}: ${error.description}`
      if (error.error_code === 429) {
        return { _tag: "RateLimited", retryAfterMs: Math.max(1, error.parameters.retry_after ?? 1) * 1000, reason }
      }
      if (error.error_code === 403) return { _tag: "Unreachable", reason }
      if (error.error_code >= 400 && error.error_code < 500) return { _tag: "Rejected", reason }
      return { _tag: "NotSent", reason }
    }
    const cause = error instanceof module.HttpError ? error.error : error
    const code = codeOf(cause)
    const reason = `${code ?? "network error"}: ${cause instanceof Error ? cause.message : String(cause)}`.slice(0, 300)
    return code !== undefined && NOT_CONNECTED.has(code) ? { _tag: "NotSent", reason } : { _tag: "Unknown", reason }
  }

  const sendMessage = (chatId: string, text: string): Effect.Effect<void, TelegramSendFailure> =>
    Effect.tryPromise({
      try: () => load(),
      catch: (error): TelegramSendFailure => ({ _tag: "NotSent", reason: `grammY did not load: ${String(error)}` })
    }).pipe(
      Effect.flatMap(({ api, module }) =>
        Effect.tryPromise({
          try: () => api.sendMessage(chatId, text, { link_preview_options: { is_disabled: true } }),
          catch: (error) => classify(module, error)
        })
      ),
      Effect.asVoid
    )

  return { username: getUsername, sendMessage }
}
