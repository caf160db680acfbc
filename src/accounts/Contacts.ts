import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

export interface Contact {
  readonly userId: number
  readonly name: string
  readonly email: string
  /** the user's `email_notifications` setting (on when never set) */
  readonly emailNotifications: boolean
}

/** How to reach a user, for the rooms that notify (support replies). Accounts owns the tables. */
export class Contacts extends Context.Tag("Contacts")<Contacts, {
  readonly find: (userId: number) => Effect.Effect<Option.Option<Contact>>
}>() {
  static readonly Live = Layer.effect(
    Contacts,
    Effect.map(SqlClient.SqlClient, (sql) => ({
      find: (userId: number) =>
        sql<{ id: number; name: string; email: string; email_notifications: boolean | null }>`
          select u.id, u.name, u.email, s.email_notifications
          from users u left join user_settings s on s.user_id = u.id
          where u.id = ${userId}`.pipe(
          Effect.map((rows) =>
            Option.map(Option.fromNullable(rows[0]), (r) => ({
              userId: r.id,
              name: r.name,
              email: r.email,
              emailNotifications: r.email_notifications ?? true
            }))
          ),
          Effect.orDie
        )
    }))
  )
}
