import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Locale } from "../platform/i18n/Locale.ts"
import { oneLine } from "./Mails.ts"
import { Outbox } from "../outbox/Outbox.ts"
import { Recipients } from "../outbox/Recipients.ts"
import { TELEGRAM_CHANNEL } from "../outbox/TelegramDelivery.ts"
import { TelegramLinks } from "./telegram/Links.ts"
import { UserId } from "../platform/Ids.ts"

const ContactRow = Schema.Struct({
  id: UserId,
  name: Schema.String,
  email: Schema.String,
  email_notifications: Schema.NullOr(Schema.Boolean),
  telegram_id: Schema.NullOr(Schema.String),
  telegram_notifications: Schema.NullOr(Schema.Boolean),
  locale: Locale
})

/** How to reach a user: name (one line, as mails show it, [D117]), address and whether they want notices (on when never set). */
export const Contact = Schema.Struct({
  userId: UserId,
  name: Schema.String,
  email: Schema.String,
  emailNotifications: Schema.Boolean,
  /** [D125]: the linked Telegram chat */
  telegramChatId: Schema.NullOr(Schema.String),
  telegramNotifications: Schema.Boolean,
  /** [D120]: the language of the user's mails and Telegram messages */
  locale: Locale
})
export type Contact = typeof Contact.Type

const toContact = (r: typeof ContactRow.Type): Contact => ({
  userId: r.id,
  name: oneLine(r.name),
  email: r.email,
  emailNotifications: r.email_notifications ?? true,
  telegramChatId: r.telegram_id,
  telegramNotifications: r.telegram_notifications ?? true,
  locale: r.locale
})

/** How to reach a user, for the rooms that notify (support replies). Accounts owns the tables. */
export class Contacts extends Effect.Service<Contacts>()("accounts/Contacts", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.Int,
      Result: ContactRow,
      execute: (id) => sql`
        select u.id, u.name, u.email, u.locale, s.email_notifications, t.telegram_id, s.telegram_notifications
        from users u left join user_settings s on s.user_id = u.id left join telegram_links t on t.user_id = u.id
        where u.id = ${id}`
    })
    const byIds = SqlSchema.findAll({
      Request: Schema.Array(Schema.Int),
      Result: ContactRow,
      execute: (ids) => sql`
        select u.id, u.name, u.email, u.locale, s.email_notifications, t.telegram_id, s.telegram_notifications
        from users u left join user_settings s on s.user_id = u.id left join telegram_links t on t.user_id = u.id
        where u.id in ${sql.in(ids)}`
    })
    return {
      /** the contacts of many users at once (the jobs' notices), by user id */
      findMany: (userIds: ReadonlyArray<number>): Effect.Effect<ReadonlyMap<number, Contact>> =>
        userIds.length === 0
          ? Effect.succeed(new Map())
          : byIds([...new Set(userIds)]).pipe(
              Effect.map((rows) => new Map(rows.map((r) => [r.id, toContact(r)]))),
              Effect.orDie
            ),
      find: (userId: UserId): Effect.Effect<Option.Option<Contact>> => byId(userId).pipe(Effect.map(Option.map(toContact)), Effect.orDie)
    } as const
  })
}) {}

/**
 * The outbox's `Recipients` port ([D96]), provided by this room: the users' contacts. With it, the
 * room tells the outbox what a Telegram chat that blocked the bot means ([D125]): the chat is
 * unlinked, so no notice is written to it again.
 */
export const RecipientsLive = Layer.effect(
  Recipients,
  Effect.gen(function* () {
    const contacts = yield* Contacts
    const outbox = yield* Outbox
    const links = yield* TelegramLinks
    yield* outbox.registerUnreachable(TELEGRAM_CHANNEL, (chatId) =>
      links
        .unlinkChat(chatId)
        .pipe(
          Effect.tap((userId) =>
            Option.isSome(userId) ? Effect.logInfo("telegram: a chat blocked the bot and was unlinked", { user: userId.value }) : Effect.void
          )
        )
    )
    return Recipients.of(contacts)
  })
).pipe(Layer.provide(Layer.mergeAll(Contacts.Default, Outbox.Default, TelegramLinks.Default)))
