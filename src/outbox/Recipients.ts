import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { Locale } from "../platform/i18n/Locale.ts"
import type { UserId } from "../platform/Ids.ts"

/** How to reach a user: name, address and whether they want notices (on when never set). */
export interface Recipient {
  readonly userId: UserId
  readonly name: string
  readonly email: string
  readonly emailNotifications: boolean
  /** [D125]: the linked Telegram chat, if any */
  readonly telegramChatId: string | null
  /** [D125]: notices also go to the linked chat (on once linked, until the user turns them off) */
  readonly telegramNotifications: boolean
  /** [D120]: the language of the user's mails and Telegram messages (English when absent) */
  readonly locale?: Locale | undefined
}

/**
 * Who the notifications of [D96] go to. A port: the outbox declares it, accounts (which owns the
 * users and their settings) provides it (`accounts/Contacts.ts`), as `http/Auth`'s `BearerTokens`.
 */
export class Recipients extends Context.Tag("outbox/Recipients")<
  Recipients,
  {
    readonly find: (userId: UserId) => Effect.Effect<Option.Option<Recipient>>
    /** many users at once (the jobs' notices), by user id */
    readonly findMany: (userIds: ReadonlyArray<number>) => Effect.Effect<ReadonlyMap<number, Recipient>>
  }
>() {}
