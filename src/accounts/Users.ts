import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

export interface UserRow {
  readonly id: number
  readonly name: string
  readonly email: string
  readonly password_hash: string
  readonly role: "user" | "admin"
  readonly status: number
  readonly email_verified_at: Date | null
  readonly created_at: Date
}

/** The e-mail is held by another account (the unique index on `lower(email)`). */
export class EmailTaken extends Data.TaggedError("EmailTaken")<{}> {}

/** PostgreSQL's unique_violation, whichever driver carried it. */
export const isUniqueViolation = (error: SqlError): boolean => {
  const cause: unknown = error.cause
  return typeof cause === "object" && cause !== null && "code" in cause && (cause as { code: unknown }).code === "23505"
}

const uniqueEmail = <A>(effect: Effect.Effect<A, SqlError>): Effect.Effect<A, EmailTaken> =>
  effect.pipe(Effect.catchTag("SqlError", (e) => isUniqueViolation(e) ? Effect.fail(new EmailTaken()) : Effect.die(e)))

const pick = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

/**
 * The `users` and `user_settings` tables. Accounts owns them; other rooms read users through
 * `Contacts`. Statements run on the caller's transaction when there is one.
 */
export class Users extends Context.Tag("Users")<Users, {
  readonly insert: (user: {
    readonly name: string
    readonly email: string
    readonly passwordHash: string
    readonly role?: "user" | "admin"
    readonly verifiedAt?: Date | null
    readonly now: Date
  }) => Effect.Effect<UserRow, EmailTaken>
  readonly findById: (id: number) => Effect.Effect<Option.Option<UserRow>>
  readonly findByEmail: (email: string) => Effect.Effect<Option.Option<UserRow>>
  /** locks the row until the transaction ends */
  readonly lock: (id: number) => Effect.Effect<Option.Option<UserRow>>
  readonly updateProfile: (id: number, changes: {
    readonly name?: string | undefined
    readonly email?: string | undefined
    readonly now: Date
  }) => Effect.Effect<Option.Option<UserRow>, EmailTaken>
  readonly setPassword: (id: number, passwordHash: string, now: Date) => Effect.Effect<void>
  readonly markVerified: (id: number, now: Date) => Effect.Effect<void>
  readonly setAdminFields: (id: number, changes: {
    readonly status?: number | undefined
    readonly role?: "user" | "admin" | undefined
    readonly now: Date
  }) => Effect.Effect<Option.Option<UserRow>>
  /** deletes the user; the schema cascades to what [D25] deletes and detaches invoices */
  readonly delete: (id: number) => Effect.Effect<void>
  readonly list: (options: { readonly email?: string | undefined; readonly limit: number; readonly offset: number }) => Effect.Effect<{
    readonly rows: ReadonlyArray<UserRow>
    readonly total: number
  }>
  readonly emailNotifications: (id: number) => Effect.Effect<boolean>
  readonly setEmailNotifications: (id: number, on: boolean, now: Date) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    Users,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql`id, name, email, password_hash, role, status, email_verified_at, created_at`
      return {
        insert: (user) =>
          uniqueEmail(sql<UserRow>`
            insert into users (name, email, password_hash, role, status, email_verified_at, created_at, updated_at)
            values (${user.name}, ${user.email}, ${user.passwordHash}, ${user.role ?? "user"}, 1,
                    ${user.verifiedAt ?? null}, ${user.now}, ${user.now})
            returning ${columns}`.pipe(Effect.map((rows) => rows[0]!))),
        findById: (id) => sql<UserRow>`select ${columns} from users where id = ${id}`.pipe(Effect.map(pick), Effect.orDie),
        findByEmail: (email) =>
          sql<UserRow>`select ${columns} from users where lower(email) = ${email.trim().toLowerCase()}`.pipe(
            Effect.map(pick),
            Effect.orDie
          ),
        lock: (id) => sql<UserRow>`select ${columns} from users where id = ${id} for update`.pipe(Effect.map(pick), Effect.orDie),
        updateProfile: (id, changes) =>
          uniqueEmail(sql<UserRow>`
            update users set
              name = coalesce(${changes.name ?? null}::text, name),
              email_verified_at = case when ${changes.email ?? null}::text is not null and ${changes.email ?? null}::text <> email
                                       then null else email_verified_at end,
              email = coalesce(${changes.email ?? null}::text, email),
              updated_at = ${changes.now}
            where id = ${id}
            returning ${columns}`.pipe(Effect.map(pick))),
        setPassword: (id, passwordHash, now) =>
          sql`update users set password_hash = ${passwordHash}, updated_at = ${now} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
        markVerified: (id, now) =>
          sql`update users set email_verified_at = coalesce(email_verified_at, ${now}), updated_at = ${now} where id = ${id}`.pipe(
            Effect.asVoid,
            Effect.orDie
          ),
        setAdminFields: (id, changes) =>
          sql<UserRow>`
            update users set
              status = coalesce(${changes.status ?? null}::smallint, status),
              role = coalesce(${changes.role ?? null}::text, role),
              updated_at = ${changes.now}
            where id = ${id}
            returning ${columns}`.pipe(Effect.map(pick), Effect.orDie),
        delete: (id) => sql`delete from users where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
        list: ({ email, limit, offset }) =>
          Effect.gen(function*() {
            const needle = email === undefined || email.trim() === "" ? null : email.trim().toLowerCase()
            const [count] = yield* sql<{ total: number }>`
              select count(*)::int as total from users
              where (${needle}::text is null or position(${needle}::text in lower(email)) > 0)`
            const rows = yield* sql<UserRow>`
              select ${columns} from users
              where (${needle}::text is null or position(${needle}::text in lower(email)) > 0)
              order by id
              limit ${limit} offset ${offset}`
            return { rows, total: count?.total ?? 0 }
          }).pipe(Effect.orDie),
        emailNotifications: (id) =>
          sql<{ email_notifications: boolean }>`select email_notifications from user_settings where user_id = ${id}`.pipe(
            Effect.map((rows) => rows[0]?.email_notifications ?? true),
            Effect.orDie
          ),
        setEmailNotifications: (id, on, now) =>
          sql`
            insert into user_settings (user_id, email_notifications, updated_at) values (${id}, ${on}, ${now})
            on conflict (user_id) do update set email_notifications = excluded.email_notifications, updated_at = excluded.updated_at`
            .pipe(Effect.asVoid, Effect.orDie)
      }
    })
  )
}
