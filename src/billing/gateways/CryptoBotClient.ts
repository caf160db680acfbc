import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { ServiceUnavailable } from "../../platform/Errors.ts"

/**
 * A small typed client of the Crypto Pay API (Telegram's @CryptoBot, [D123]): no maintained
 * TypeScript client lets the base URL be set (a local stand-in in tests) and speaks its fiat
 * invoices, so the two things we use are here, each with its Schema. Every method is
 * `POST $CRYPTOBOT_API_URL/<method>` with a JSON body and the app's token in
 * `Crypto-Pay-API-Token`; the answer is `{ok: true, result}` or `{ok: false, error}`.
 */

/** An invoice of the Crypto Pay API (the fields we read; others are ignored) */
export const CryptoInvoice = Schema.Struct({
  invoice_id: Schema.Int,
  status: Schema.String,
  currency_type: Schema.optional(Schema.String),
  /** a fiat invoice's currency (`USD`) */
  fiat: Schema.optional(Schema.String),
  /** a crypto invoice's asset */
  asset: Schema.optional(Schema.String),
  /** the invoice's amount, a decimal string in its currency */
  amount: Schema.String,
  paid_asset: Schema.optional(Schema.String),
  paid_amount: Schema.optional(Schema.String),
  bot_invoice_url: Schema.String,
  /** what we attached: the invoice's uuid */
  payload: Schema.optional(Schema.String),
  expiration_date: Schema.optional(Schema.String),
  created_at: Schema.optional(Schema.String),
  paid_at: Schema.optional(Schema.String)
})
export type CryptoInvoice = typeof CryptoInvoice.Type

/** `createInvoice`'s parameters as we send them: an amount in fiat, paid in one of the assets */
export const CreateInvoiceParams = Schema.Struct({
  currency_type: Schema.Literal("fiat"),
  fiat: Schema.String,
  amount: Schema.String,
  accepted_assets: Schema.String,
  payload: Schema.String,
  description: Schema.String,
  expires_in: Schema.Int
})
export type CreateInvoiceParams = typeof CreateInvoiceParams.Type

const Answer = <A, I>(result: Schema.Schema<A, I>) =>
  Schema.Union(
    Schema.Struct({ ok: Schema.Literal(true), result }),
    Schema.Struct({ ok: Schema.Literal(false), error: Schema.Struct({ code: Schema.optional(Schema.Number), name: Schema.String }) })
  )

/** A webhook update (`invoice_paid` is the one we act on) */
export const WebhookUpdate = Schema.Struct({
  update_id: Schema.Int,
  update_type: Schema.String,
  request_date: Schema.optional(Schema.String),
  payload: CryptoInvoice
})
export type WebhookUpdate = typeof WebhookUpdate.Type

const unavailable = () => new ServiceUnavailable({ message: "The payment gateway is unavailable." })

export const makeCryptoBotClient = (options: { readonly apiUrl: string; readonly token: Redacted.Redacted<string> }) => {
  const call = <A, I>(method: string, body: unknown, result: Schema.Schema<A, I>) =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(`${options.apiUrl}/${method}`, {
          method: "POST",
          headers: { "content-type": "application/json", "crypto-pay-api-token": Redacted.value(options.token) },
          body: JSON.stringify(body),
          signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)])
        })
        return (await response.json()) as unknown
      },
      catch: (e) => e
    }).pipe(
      Effect.flatMap(Schema.decodeUnknown(Answer(result))),
      Effect.flatMap((answer) => (answer.ok ? Effect.succeed(answer.result) : Effect.fail(answer.error.name))),
      // the token never reaches the log: only the method and what went wrong
      Effect.tapError((e) =>
        Effect.logWarning(`cryptobot: ${method} failed`, typeof e === "string" ? e : e instanceof Error ? e.message : "unreadable answer")
      ),
      Effect.mapError(unavailable)
    )

  return {
    createInvoice: (params: CreateInvoiceParams) => call("createInvoice", Schema.encodeSync(CreateInvoiceParams)(params), CryptoInvoice)
  } as const
}
