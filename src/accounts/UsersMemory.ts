import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Settings, UserRecord } from "./Domain.ts"
import { EmailTaken, type Users } from "./Users.ts"
import { UserId } from "../platform/Ids.ts"

type UsersShape = Parameters<(typeof Users)["make"]>[0]

/**
 * `Users.Test` (issue 35): the `users` and `user_settings` tables in memory, with the rules the
 * schema holds (an address unique in any case, stored lower-case as the routes give it;
 * notices on until turned off). Two-factor sign-in ([D97]) is left out: its members throw,
 * naming themselves.
 */
export const memoryUsers = (): Partial<UsersShape> => {
  const rows = new Map<number, UserRecord>()
  const settings = new Map<number, Settings>()
  let nextId = 1
  const find = (id: number) => Effect.sync(() => Option.fromNullable(rows.get(id)))
  const emailTaken = (email: string, except: number) => [...rows.values()].some((u) => u.id !== except && u.email.toLowerCase() === email.toLowerCase())
  const change = (id: number, update: (u: UserRecord) => UserRecord) =>
    Option.map(Option.fromNullable(rows.get(id)), (u) => {
      const changed = update(u)
      rows.set(id, changed)
      return changed
    })

  return {
    insert: (user) => {
      if (emailTaken(user.email, 0)) return Effect.fail(new EmailTaken())
      const created: UserRecord = {
        id: UserId.make(nextId++),
        name: user.name,
        email: user.email,
        status: 1,
        role: user.role ?? "user",
        email_verified_at: user.verifiedAt ?? null,
        created_at: user.now,
        two_factor: false,
        password_hash: user.passwordHash,
        locale: user.locale ?? "en"
      }
      rows.set(created.id, created)
      return Effect.succeed(created)
    },
    findById: find,
    findByEmail: (email) => Effect.sync(() => Option.fromNullable([...rows.values()].find((u) => u.email.toLowerCase() === email.trim().toLowerCase()))),
    lock: find,
    updateProfile: (id, changes) => {
      if (changes.email !== undefined && emailTaken(changes.email, id)) return Effect.fail(new EmailTaken())
      return Effect.sync(() => change(id, (u) => ({ ...u, name: changes.name ?? u.name, email: changes.email ?? u.email, locale: changes.locale ?? u.locale })))
    },
    setPassword: (id, passwordHash) => Effect.sync(() => void change(id, (u) => ({ ...u, password_hash: passwordHash }))),
    markVerified: (id, now) => Effect.sync(() => void change(id, (u) => ({ ...u, email_verified_at: u.email_verified_at ?? now }))),
    setAdminFields: (id, changes) => Effect.sync(() => change(id, (u) => ({ ...u, status: changes.status ?? u.status, role: changes.role ?? u.role }))),
    lockActiveAdmins: Effect.sync(() => [...rows.values()].filter((u) => u.role === "admin" && u.status === 1).map((u) => u.id)),
    delete: (id) => Effect.sync(() => void rows.delete(id)),
    list: ({ email, limit, offset }) =>
      Effect.sync(() => {
        const needle = email === undefined || email.trim() === "" ? null : email.trim().toLowerCase()
        const found = [...rows.values()].filter((u) => needle === null || u.email.toLowerCase().includes(needle)).sort((a, b) => a.id - b.id)
        return { total: found.length, rows: found.slice(offset, offset + limit) }
      }),
    settings: (id) => Effect.sync(() => settings.get(id) ?? { email_notifications: true, telegram_notifications: false }),
    setSettings: (id, changes) =>
      Effect.sync(() => {
        const current = settings.get(id) ?? { email_notifications: true, telegram_notifications: false }
        settings.set(id, {
          email_notifications: changes.email ?? current.email_notifications,
          telegram_notifications: changes.telegram ?? current.telegram_notifications
        })
      })
  }
}
