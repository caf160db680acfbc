import type * as Effect from "effect/Effect"

/** [D96]: a message is given up this long after it was written, then shows as `failed`. */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000
/** the first retry comes this long after a failure, then twice as long each time... */
export const FIRST_RETRY_MS = 10_000
/** ...up to this */
export const MAX_RETRY_MS = 3_600_000
/** a claimed row is not claimed again for this long (a sender that died mid-send is retried after it) */
export const CLAIM_LEASE_MS = 5 * 60_000
/** delivered rows are deleted by the jobs this long after delivery ([D80] rev. 2) */
export const SENT_RETENTION_MS = 7 * 86_400_000
/** rows per claim and per purge batch */
export const OUTBOX_BATCH = 100
/** admins' list page size, as invoices */
export const OUTBOX_PAGE_SIZE = 15

/** the wait before attempt `attempts + 1` after `attempts` failures */
export const backoffMs = (attempts: number) => Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1))

/** A message to write: one per occasion (`dedupeKey`), its body sealed at rest. */
export interface NewMessage {
  readonly channel: string
  /** what the message is, e.g. `verify_email`, `expiry-3d`, `invoice.paid` */
  readonly kind: string
  /** unique per occasion: a second message with the same key is not written */
  readonly dedupeKey: string
  /** messages sharing it go out in order, one at a time ([D101]) */
  readonly orderingKey?: string | undefined
  readonly recipient: string
  readonly subject: string
  /** sealed with the application key before it is stored */
  readonly body: string
}

/** A claimed message, its body unsealed, handed to its channel's delivery. */
export interface ClaimedMessage {
  readonly id: number
  readonly channel: string
  readonly kind: string
  readonly recipient: string
  readonly body: string
  readonly attempts: number
  readonly createdAt: Date
  readonly orderingKey: string | null
  /**
   * a sender marked it in flight and never came back (it stopped mid-send): for an at-most-once
   * channel it may have arrived
   */
  readonly inFlight: boolean
}

/** Why a delivery did not happen, and what the sender should do about it. */
export interface DeliveryFailure {
  readonly reason: string
  /** the next try exactly this long from now (the peer said so: Telegram's `retry_after`), not the backoff */
  readonly retryAfterMs?: number
  /** not an attempt (the channel's pace had no slot soon): due again after `retryAfterMs`, attempts unchanged */
  readonly deferred?: boolean
  /** never try again: refused for good, or it may have arrived on an at-most-once channel */
  readonly giveUp?: boolean
  /** the recipient cannot be reached on this channel any more (Telegram's 403: the bot was blocked) */
  readonly unreachable?: boolean
}

/** a channel's delivery: fails with a reason to be retried (or not, as the failure says) */
export type Delivery = (message: ClaimedMessage) => Effect.Effect<void, DeliveryFailure>

export interface DeliveryOptions {
  /**
   * never twice, rather than at least once ([D125]): the row is marked in flight before the
   * delivery runs, and a row found still in flight (its sender stopped mid-send) is given up
   */
  readonly atMostOnce?: boolean
}

/** What one pass of the sender did. */
export interface SendReport {
  readonly sent: number
  readonly retried: number
  readonly failed: number
}
