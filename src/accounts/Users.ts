import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { NoSuchElementException } from "effect/Cause"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ParseError } from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Locale } from "../platform/i18n/Locale.ts"
import { partialService } from "../platform/TestLayer.ts"
import { ReadSql } from "../platform/ReadSql.ts"
import { isUniqueViolation } from "../platform/SqlErrors.ts"
import { Role, Settings, TwoFactorState, UserRecord } from "./Domain.ts"
import { memoryUsers } from "./UsersMemory.ts"

/**
 * The unfiltered admin user list counts its total exactly up to this many users; above, the total
 * is PostgreSQL's estimate (issue 27, [D70]: no counting a million rows for a page of 15).
 */
export const EXACT_TOTAL_LIMIT = 10_000

/** The e-mail is held by another account (the unique index on `lower(email)`). */
export class EmailTaken extends Data.TaggedError("EmailTaken")<{}> {}

/** a taken e-mail is the caller's to handle; any other failure is a defect */
const uniqueEmail = <A>(effect: Effect.Effect<A, SqlError | ParseError | NoSuchElementException>): Effect.Effect<A, EmailTaken> =>
  effect.pipe(
    Effect.catchTags({
      SqlError: (e) => (isUniqueViolation(e) ? Effect.fail(new EmailTaken()) : Effect.die(e)),
      ParseError: Effect.die,
      NoSuchElementException: Effect.die
    })
  )

/** Rows as the drivers hand them over (dates as `Date`). */
const Row = Schema.typeSchema(UserRecord)
const Id = Schema.Int
const Now = Schema.DateFromSelf

const InsertUser = Schema.Struct({
  name: Schema.String,
  email: Schema.String,
  passwordHash: Schema.String,
  role: Role,
  verifiedAt: Schema.NullOr(Now),
  locale: Locale,
  now: Now
})

const ProfileChange = Schema.Struct({
  id: Id,
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  locale: Schema.NullOr(Locale),
  now: Now
})

const AdminChange = Schema.Struct({
  id: Id,
  status: Schema.NullOr(Schema.Int),
  role: Schema.NullOr(Role),
  now: Now
})

const Sealed = Schema.String
const Updated = Schema.Struct({ id: Id })

const ListQuery = Schema.Struct({ needle: Schema.NullOr(Schema.String), limit: Schema.Int, offset: Schema.Int })

/**
 * The `users` and `user_settings` tables. Accounts owns them; other rooms read users through
 * `Contacts`. Statements run on the caller's transaction when there is one. SQL and parse
 * failures are defects here, at the edge.
 */
export class Users extends Effect.Service<Users>()("accounts/Users", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // the admin list and its search may lag ([D126]): on the replicas when there are
    const readSql = yield* ReadSql
    const columns = sql`id, name, email, password_hash, role, status, email_verified_at, created_at,
      two_factor_secret is not null as two_factor, locale`

    const insertRow = SqlSchema.single({
      Request: InsertUser,
      Result: Row,
      execute: (u) => sql`
        insert into users (name, email, password_hash, role, status, email_verified_at, created_at, updated_at, locale)
        values (${u.name}, ${u.email}, ${u.passwordHash}, ${u.role}, 1, ${u.verifiedAt}, ${u.now}, ${u.now}, ${u.locale})
        returning ${columns}`
    })
    const byId = SqlSchema.findOne({ Request: Id, Result: Row, execute: (id) => sql`select ${columns} from users where id = ${id}` })
    const byEmail = SqlSchema.findOne({
      Request: Schema.String,
      Result: Row,
      execute: (email) => sql`select ${columns} from users where lower(email) = ${email}`
    })
    const lockRow = SqlSchema.findOne({
      Request: Id,
      Result: Row,
      execute: (id) => sql`select ${columns} from users where id = ${id} for update`
    })
    const updateProfileRow = SqlSchema.findOne({
      Request: ProfileChange,
      Result: Row,
      execute: (c) => sql`
        update users set
          name = coalesce(${c.name}::text, name),
          email_verified_at = case when ${c.email}::text is not null and ${c.email}::text <> email
                                   then null else email_verified_at end,
          email = coalesce(${c.email}::text, email),
          locale = coalesce(${c.locale}::text, locale),
          updated_at = ${c.now}
        where id = ${c.id}
        returning ${columns}`
    })
    const setPasswordRow = SqlSchema.void({
      Request: Schema.Struct({ id: Id, passwordHash: Schema.String, now: Now }),
      execute: (r) => sql`update users set password_hash = ${r.passwordHash}, updated_at = ${r.now} where id = ${r.id}`
    })
    const markVerifiedRow = SqlSchema.void({
      Request: Schema.Struct({ id: Id, now: Now }),
      execute: (r) => sql`update users set email_verified_at = coalesce(email_verified_at, ${r.now}), updated_at = ${r.now} where id = ${r.id}`
    })
    const setAdminFieldsRow = SqlSchema.findOne({
      Request: AdminChange,
      Result: Row,
      execute: (c) => sql`
        update users set
          status = coalesce(${c.status}::smallint, status),
          role = coalesce(${c.role}::text, role),
          updated_at = ${c.now}
        where id = ${c.id}
        returning ${columns}`
    })
    const lockActiveAdminsRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Id }),
      // in id order, so two transactions locking them never deadlock
      execute: () => sql`select id from users where role = 'admin' and status = 1 order by id for update`
    })
    const deleteRow = SqlSchema.void({ Request: Id, execute: (id) => sql`delete from users where id = ${id}` })
    /**
     * The admin list, filtered by a part of the e-mail: `lower(email) like '%part%'` (the part's
     * `%`, `_` and backslash taken literally), which the trigram index of migration 13 serves.
     */
    const matching = (q: typeof ListQuery.Type) =>
      q.needle === null ? readSql.literal("true") : readSql`lower(email) like ${`%${q.needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`
    /**
     * The list's total. Filtered: an exact count (the trigram index serves it). Unfiltered
     * (issue 27, [D70]): exact while the table holds at most EXACT_TOTAL_LIMIT users (a count that
     * stops there, so it never reads more), else PostgreSQL's own estimate of the table's rows
     * (`pg_class.reltuples`, kept by autovacuum / ANALYZE) and never below the limit + 1. When the
     * estimate is over twice the limit the capped count is not run at all (the `case` evaluates
     * only the branch it takes): it would read 10 001 rows for every page of a big table, and
     * only an estimate off by half could make the count come out at or under the limit.
     */
    const countRows = SqlSchema.single({
      Request: ListQuery,
      Result: Schema.Struct({ total: Schema.Int }),
      execute: (q) =>
        q.needle !== null
          ? readSql`select count(*)::int as total from users where ${matching(q)}`
          : readSql`
            with estimate as (select coalesce((select reltuples from pg_class where oid = 'users'::regclass), 0) as n)
            select case when estimate.n > ${EXACT_TOTAL_LIMIT * 2} then estimate.n::int
                        else (select case when capped.n <= ${EXACT_TOTAL_LIMIT} then capped.n
                                          else greatest(${EXACT_TOTAL_LIMIT + 1}, estimate.n)::int end
                              from (select count(*)::int as n from (select 1 from users limit ${EXACT_TOTAL_LIMIT + 1}) as s) as capped)
                   end as total
            from estimate`
    })
    const pageRows = SqlSchema.findAll({
      Request: ListQuery,
      Result: Row,
      execute: (q) => readSql`
        select ${columns} from users
        where ${matching(q)}
        order by id
        limit ${q.limit} offset ${q.offset}`
    })
    // notices are on until the user turns them off; Telegram's ([D125]) once a chat is linked
    const settingsRow = SqlSchema.single({
      Request: Id,
      Result: Settings,
      execute: (id) => sql`
        select coalesce(s.email_notifications, true) as email_notifications,
               coalesce(s.telegram_notifications, l.user_id is not null) as telegram_notifications
        from (select ${id}::int as id) u
        left join user_settings s on s.user_id = u.id
        left join telegram_links l on l.user_id = u.id`
    })
    const upsertSettings = SqlSchema.void({
      Request: Schema.Struct({ id: Id, email: Schema.NullOr(Schema.Boolean), telegram: Schema.NullOr(Schema.Boolean), now: Now }),
      execute: (r) => sql`
        insert into user_settings (user_id, email_notifications, telegram_notifications, updated_at)
        values (${r.id}, coalesce(${r.email}::boolean, true), ${r.telegram}::boolean, ${r.now})
        on conflict (user_id) do update set
          email_notifications = coalesce(${r.email}::boolean, user_settings.email_notifications),
          telegram_notifications = coalesce(${r.telegram}::boolean, user_settings.telegram_notifications),
          updated_at = excluded.updated_at`
    })

    // two-factor sign-in ([D97]): sealed secrets, the last accepted time step, hashed recovery codes
    const twoFactorRow = SqlSchema.findOne({
      Request: Id,
      Result: TwoFactorState,
      execute: (id) => sql`
        select two_factor_secret as secret, two_factor_pending as pending, two_factor_last_step as last_step,
               array_to_string(two_factor_recovery, ' ') as recovery
        from users where id = ${id}`
    })
    const setPendingRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Id, pending: Sealed, now: Now }),
      Result: Updated,
      execute: (r) => sql`
        update users set two_factor_pending = ${r.pending}, updated_at = ${r.now}
        where id = ${r.id} and two_factor_secret is null returning id`
    })
    const enableRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Id, pending: Sealed, recovery: Schema.String, step: Schema.Int, now: Now }),
      Result: Updated,
      // only the pending secret the code was checked against: a newer one waits for its own code;
      // the confirming code's step is spent: it does not sign in afterwards ([D115])
      execute: (r) => sql`
        update users set
          two_factor_secret = two_factor_pending,
          two_factor_pending = null,
          two_factor_last_step = ${r.step},
          two_factor_recovery = string_to_array(${r.recovery}::text, ' '),
          updated_at = ${r.now}
        where id = ${r.id} and two_factor_secret is null and two_factor_pending = ${r.pending}
        returning id`
    })
    const disableRow = SqlSchema.void({
      Request: Schema.Struct({ id: Id, now: Now }),
      execute: (r) => sql`
        update users set two_factor_secret = null, two_factor_pending = null, two_factor_last_step = null,
                         two_factor_recovery = '{}', updated_at = ${r.now}
        where id = ${r.id}`
    })
    const acceptStepRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Id, step: Schema.Int }),
      Result: Updated,
      execute: (r) => sql`
        update users set two_factor_last_step = ${r.step}
        where id = ${r.id} and two_factor_secret is not null
          and (two_factor_last_step is null or two_factor_last_step < ${r.step})
        returning id`
    })
    const useRecoveryRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Id, hash: Schema.String }),
      Result: Updated,
      execute: (r) => sql`
        update users set two_factor_recovery = array_remove(two_factor_recovery, ${r.hash}::text)
        where id = ${r.id} and two_factor_secret is not null and ${r.hash}::text = any(two_factor_recovery)
        returning id`
    })

    return {
      insert: (user: {
        readonly name: string
        readonly email: string
        readonly passwordHash: string
        readonly role?: Role
        readonly verifiedAt?: Date | null
        readonly locale?: Locale
        readonly now: Date
      }): Effect.Effect<UserRecord, EmailTaken> =>
        uniqueEmail(insertRow({ ...user, role: user.role ?? "user", verifiedAt: user.verifiedAt ?? null, locale: user.locale ?? "en" })),
      findById: (id: number) => Effect.orDie(byId(id)),
      findByEmail: (email: string) => Effect.orDie(byEmail(email.trim().toLowerCase())),
      /** locks the row until the transaction ends */
      lock: (id: number) => Effect.orDie(lockRow(id)),
      updateProfile: (
        id: number,
        changes: {
          readonly name?: string | undefined
          readonly email?: string | undefined
          readonly locale?: Locale | undefined
          readonly now: Date
        }
      ): Effect.Effect<Option.Option<UserRecord>, EmailTaken> =>
        uniqueEmail(updateProfileRow({ id, name: changes.name ?? null, email: changes.email ?? null, locale: changes.locale ?? null, now: changes.now })),
      setPassword: (id: number, passwordHash: string, now: Date) => Effect.orDie(setPasswordRow({ id, passwordHash, now })),
      markVerified: (id: number, now: Date) => Effect.orDie(markVerifiedRow({ id, now })),
      setAdminFields: (id: number, changes: { readonly status?: number | undefined; readonly role?: Role | undefined; readonly now: Date }) =>
        Effect.orDie(setAdminFieldsRow({ id, status: changes.status ?? null, role: changes.role ?? null, now: changes.now })),
      /** the ids of the active admins, locked until the transaction ends ([D21]) */
      lockActiveAdmins: Effect.orDie(lockActiveAdminsRows(undefined)).pipe(Effect.map((rows) => rows.map((r) => r.id))),
      /** deletes the user; the schema cascades to what [D25] deletes and detaches invoices */
      delete: (id: number) => Effect.orDie(deleteRow(id)),
      list: (options: { readonly email?: string | undefined; readonly limit: number; readonly offset: number }) => {
        const query = {
          needle: options.email === undefined || options.email.trim() === "" ? null : options.email.trim().toLowerCase(),
          limit: options.limit,
          offset: options.offset
        }
        return Effect.all({ total: Effect.map(countRows(query), (c) => c.total), rows: pageRows(query) }, { concurrency: 2 }).pipe(Effect.orDie)
      },
      /** the settings of [D24] and [D125] */
      settings: (id: number): Effect.Effect<Settings> => Effect.orDie(settingsRow(id)),
      /** the settings present change; the others stay */
      setSettings: (id: number, changes: { readonly email?: boolean | undefined; readonly telegram?: boolean | undefined }, now: Date) =>
        Effect.orDie(upsertSettings({ id, email: changes.email ?? null, telegram: changes.telegram ?? null, now })),
      twoFactor: (id: number) => Effect.orDie(twoFactorRow(id)),
      /** a new secret being set up; none when two-factor sign-in is on already */
      setTwoFactorPending: (id: number, pending: string, now: Date) => Effect.orDie(setPendingRow({ id, pending, now })).pipe(Effect.map(Option.isSome)),
      /**
       * turns on the pending secret `pending` with these recovery code hashes, `step` (the
       * confirming code's) spent; false when it is no longer pending
       */
      enableTwoFactor: (id: number, pending: string, recoveryHashes: ReadonlyArray<string>, step: number, now: Date) =>
        Effect.orDie(enableRow({ id, pending, recovery: recoveryHashes.join(" "), step, now })).pipe(Effect.map(Option.isSome)),
      disableTwoFactor: (id: number, now: Date) => Effect.orDie(disableRow({ id, now })),
      /** records `step` as the last accepted one; false when a step at or after it was accepted already */
      acceptTwoFactorStep: (id: number, step: number) => Effect.orDie(acceptStepRow({ id, step })).pipe(Effect.map(Option.isSome)),
      /** removes one recovery code hash; false when it is gone already (used by a concurrent request) */
      useRecoveryCode: (id: number, hash: string) => Effect.orDie(useRecoveryRow({ id, hash })).pipe(Effect.map(Option.isSome))
    } as const
  })
}) {
  /** issue 35: the users in memory (`UsersMemory.ts`); two-factor sign-in is left out */
  static readonly Test: Layer.Layer<Users> = Layer.sync(Users, () => partialService(Users, memoryUsers()))
}
