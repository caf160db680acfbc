import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { createHash } from "node:crypto"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { formatCents, parseCents, toCents } from "../../catalog/Money.ts"
import { AppClock } from "../../platform/Clock.ts"
import { AppConfig, type CryptoBotConfig } from "../../platform/Config.ts"
import { constantTimeEqual, hmacSha256Hex } from "../../platform/Crypto.ts"
import { InvalidSignature, ValidationError } from "../../platform/Errors.ts"
import type { Invoice } from "../Domain.ts"
import { makeCryptoBotClient, WebhookUpdate } from "./CryptoBotClient.ts"
import type { PaymentGateway, GatewayWebhook, WebhookOutcome } from "./Gateway.ts"

/** [D123]: a Crypto Pay invoice made for a payment URL is payable this long, and reused meanwhile */
export const CRYPTOBOT_INVOICE_SECONDS = 3600

/**
 * [D123]: `crypto-pay-api-signature` is the hex HMAC-SHA256 of the raw body keyed by the
 * SHA-256 of the app's token (compared in constant time)
 */
export const cryptoBotSignature = (token: string, raw: string) => hmacSha256Hex(createHash("sha256").update(token).digest(), raw)

/** the Crypto Pay invoices made as an invoice's payment URL (`cryptobot_invoices`, billing room) */
const Made = Schema.Struct({ url: Schema.String, amount: Schema.String, currency: Schema.String, expires_at: Schema.DateFromSelf })

const decodeUpdate = Schema.decodeUnknownEither(Schema.parseJson(WebhookUpdate))

/**
 * The `cryptobot` gateway ([D123]): the payment is a Crypto Pay invoice in the invoice's fiat
 * currency (`currency_type: fiat`), payable in CRYPTOBOT_ASSETS, its URL the `bot_invoice_url`;
 * the webhook is checked by `crypto-pay-api-signature` and an `invoice_paid` update is the
 * payment of the invoice its `payload` names. No refund: Crypto Pay has none for invoices.
 * None when CRYPTOBOT_TOKEN is not set.
 */
export class CryptoBotGateway extends Context.Tag("billing/CryptoBotGateway")<CryptoBotGateway, Option.Option<PaymentGateway>>() {
  static readonly Live = Layer.effect(
    CryptoBotGateway,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const cryptobot = Option.flatten(Option.fromNullable(config.cryptobot))
      if (Option.isNone(cryptobot)) return Option.none()
      return Option.some(yield* make(cryptobot.value))
    })
  )
}

const make = (settings: CryptoBotConfig) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const client = makeCryptoBotClient({ apiUrl: settings.apiUrl, token: settings.token })
    const token = Redacted.value(settings.token)

    const latest = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Made,
      execute: (invoiceId) => sql`
        select url, amount, currency, expires_at from cryptobot_invoices where invoice_id = ${invoiceId} order by id desc limit 1`
    })
    const remember = SqlSchema.void({
      Request: Schema.Struct({ ...Made.fields, invoice_id: Schema.Int, crypto_invoice_id: Schema.Int }),
      execute: (r) => sql`
        insert into cryptobot_invoices (invoice_id, crypto_invoice_id, url, amount, currency, expires_at)
        values (${r.invoice_id}, ${r.crypto_invoice_id}, ${r.url}, ${r.amount}, ${r.currency}, ${r.expires_at})
        on conflict (crypto_invoice_id) do nothing`
    })

    const paymentLink = (invoice: Invoice) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const amount = formatCents(toCents(invoice.amount))
        // a second call while the Crypto Pay invoice is payable answers the same one
        const open = yield* Effect.orDie(latest(invoice.id))
        if (Option.isSome(open) && open.value.expires_at > now && open.value.amount === amount && open.value.currency === invoice.currency) {
          return { url: open.value.url, expiresAt: open.value.expires_at }
        }
        const made = yield* client.createInvoice({
          currency_type: "fiat",
          fiat: invoice.currency,
          amount,
          accepted_assets: settings.assets.join(","),
          payload: invoice.uuid,
          description: `Invoice ${invoice.uuid}`,
          expires_in: CRYPTOBOT_INVOICE_SECONDS
        })
        const expiresAt = new Date(now.getTime() + CRYPTOBOT_INVOICE_SECONDS * 1000)
        yield* Effect.orDie(
          remember({
            invoice_id: invoice.id,
            crypto_invoice_id: made.invoice_id,
            url: made.bot_invoice_url,
            amount,
            currency: invoice.currency,
            expires_at: expiresAt
          })
        )
        return { url: made.bot_invoice_url, expiresAt }
      })

    const parseWebhook = (delivery: GatewayWebhook) =>
      Effect.gen(function* () {
        const signature = (delivery.headers["crypto-pay-api-signature"] ?? "").toLowerCase()
        if (!/^[0-9a-f]{64}$/.test(signature) || !constantTimeEqual(signature, cryptoBotSignature(token, delivery.raw))) {
          return yield* Effect.fail(new InvalidSignature())
        }
        const update = decodeUpdate(delivery.raw)
        if (update._tag === "Left") return yield* Effect.fail(ValidationError.field("body", "The body must be a Crypto Pay update."))
        const { payload: paid, update_id, update_type } = update.right
        if (update_type !== "invoice_paid") return { _tag: "Ignore", eventId: String(update_id), type: update_type } satisfies WebhookOutcome
        // a fiat invoice is paid its amount in its fiat currency, whatever asset the payer chose
        if (paid.currency_type !== "fiat" || paid.fiat === undefined) {
          return { _tag: "Ignore", eventId: String(update_id), type: "invoice_paid:crypto" } satisfies WebhookOutcome
        }
        const cents = parseCents(paid.amount)
        if (Option.isNone(cents)) return yield* Effect.fail(ValidationError.field("amount", "The amount must be a decimal of at most two places."))
        return {
          _tag: "Paid",
          invoiceUuid: (paid.payload ?? "").toLowerCase(),
          amountCents: cents.value,
          currency: paid.fiat.toUpperCase(),
          eventId: String(update_id),
          // one Crypto Pay invoice is paid once: its id is the payment's, whichever update carries it
          transactionId: `cryptobot:${paid.invoice_id}`,
          payload: { update_id, update_type, invoice_id: paid.invoice_id, paid_asset: paid.paid_asset ?? null, paid_amount: paid.paid_amount ?? null }
        } satisfies WebhookOutcome
      })

    return { name: "cryptobot", displayName: "Crypto (CryptoBot)", paymentLink, parseWebhook } satisfies PaymentGateway
  })
