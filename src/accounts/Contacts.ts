import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { oneLine } from "./Mails.ts"
import { Recipients } from "../outbox/Recipients.ts"

const ContactRow = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  email_notifications: Schema.NullOr(Schema.Boolean)
})

/** How to reach a user: name (one line, as mails show it, [D117]), address and whether they want notices (on when never set). */
export const Contact = Schema.Struct({
  userId: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  emailNotifications: Schema.Boolean
})
export type Contact = typeof Contact.Type

/** How to reach a user, for the rooms that notify (support replies). Accounts owns the tables. */
export class Contacts extends Effect.Service<Contacts>()("accounts/Contacts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.Int,
      Result: ContactRow,
      execute: (id) => sql`
        select u.id, u.name, u.email, s.email_notifications
        from users u left join user_settings s on s.user_id = u.id
        where u.id = ${id}`
    })
    const byIds = SqlSchema.findAll({
      Request: Schema.Array(Schema.Int),
      Result: ContactRow,
      execute: (ids) => sql`
        select u.id, u.name, u.email, s.email_notifications
        from users u left join user_settings s on s.user_id = u.id
        where u.id in ${sql.in(ids)}`
    })
    return {
      /** the contacts of many users at once (the jobs' notices), by user id */
      findMany: (userIds: ReadonlyArray<number>): Effect.Effect<ReadonlyMap<number, Contact>> =>
        userIds.length === 0
          ? Effect.succeed(new Map())
          : byIds([...new Set(userIds)]).pipe(
            Effect.map((rows) =>
              new Map(rows.map((r) => [r.id, { userId: r.id, name: oneLine(r.name), email: r.email, emailNotifications: r.email_notifications ?? true }]))
            ),
            Effect.orDie
          ),
      find: (userId: number): Effect.Effect<Option.Option<Contact>> =>
        byId(userId).pipe(
          Effect.map(Option.map((r) => ({ userId: r.id, name: oneLine(r.name), email: r.email, emailNotifications: r.email_notifications ?? true }))),
          Effect.orDie
        )
    } as const
  })
}) {}

/** The outbox's `Recipients` port ([D96]), provided by this room: the users' contacts. */
export const RecipientsLive = Layer.effect(Recipients, Effect.map(Contacts, (contacts) => Recipients.of(contacts))).pipe(
  Layer.provide(Contacts.Default)
)
