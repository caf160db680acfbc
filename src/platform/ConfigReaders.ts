import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/** The readers of single variables that `Config.ts` assembles into the configuration of [D1]. */

export const positiveInt = (name: string, fallback: number, min = 1) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name}: must be an integer of at least ${min}`, validation: (n) => n >= min })
  )

export const optionalString = (name: string) =>
  Config.string(name).pipe(
    Config.map((s) => s.trim()),
    Config.option,
    Config.map(Option.filter((s) => s.length > 0))
  )

export const urlString = (name: string) =>
  optionalString(name).pipe(
    Config.validate({
      message: `${name}: must be an absolute http(s) URL`,
      validation: Option.match({
        onNone: () => true,
        onSome: (s) => {
          try {
            const u = new URL(s)
            return u.protocol === "http:" || u.protocol === "https:"
          } catch {
            return false
          }
        }
      })
    })
  )

export const levels: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

export const decodeKey = (raw: string): Uint8Array | undefined => {
  const text = raw.startsWith("base64:") ? raw.slice(7) : raw
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined
  const bytes = Buffer.from(text, "base64")
  return bytes.length === 32 ? new Uint8Array(bytes) : undefined
}

/** `true`/`1`: one proxy; `N`: N; `false`/`0`/empty: none. */
export const parseTrustProxy = (s: string): false | number | undefined => {
  if (["", "false", "0", "no", "off"].includes(s)) return false
  if (["true", "yes", "on"].includes(s)) return 1
  return /^[1-9][0-9]?$/.test(s) && Number(s) <= 32 ? Number(s) : undefined
}

/** `true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off`/empty. */
export const parseBoolean = (s: string): boolean | undefined => {
  if (["", "false", "0", "no", "off"].includes(s)) return false
  if (["true", "1", "yes", "on"].includes(s)) return true
  return undefined
}

export const trailingSlashless = (s: string) => s.replace(/\/+$/, "")

/**
 * A PostgreSQL URL: one host ([D126]). Neither driver reads a multi-host URL (`pg` and `Bun.SQL`
 * both fail with `Invalid URL`) and `Bun.SQL` ignores `target_session_attrs` (it connected to a
 * replica): both are refused at start-up, pointing to a proxy that follows the primary.
 */
export const databaseUrlProblem = (name: string, url: string): string | undefined => {
  if (!/^postgres(ql)?:\/\//.test(url)) return `${name}: must be a postgres:// or postgresql:// URL`
  const authority = url.replace(/^postgres(ql)?:\/\//, "").split(/[/?#]/)[0]!
  const hosts = authority.slice(authority.lastIndexOf("@") + 1)
  const proxy = "use one host: a proxy that follows the primary (HAProxy, PgBouncer) or the managed service's endpoint (docs/operations.md)"
  if (hosts.includes(",")) return `${name}: multi-host URLs are not supported; ${proxy}`
  if (/[?&](target_session_attrs|targetServerType)=/i.test(url)) return `${name}: target_session_attrs is not supported; ${proxy}`
  return undefined
}

export const databaseUrlOf = (name: string) =>
  optionalString(name).pipe(
    Config.mapOrFail((value) =>
      Option.match(value, {
        onNone: () => Either.right(Option.none<Redacted.Redacted<string>>()),
        onSome: (s) => {
          const problem = databaseUrlProblem(name, s)
          return problem === undefined ? Either.right(Option.some(Redacted.make(s))) : Either.left(ConfigError.InvalidData([], problem))
        }
      })
    )
  )

/** A flag: `true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off` (any case), else one line naming it. */
export const booleanFlag = (name: string, fallback: boolean) =>
  Config.string(name).pipe(
    Config.withDefault(String(fallback)),
    Config.map((s) => s.trim().toLowerCase()),
    Config.validate({ message: `${name}: must be true or false`, validation: (s) => parseBoolean(s) !== undefined }),
    Config.map((s) => parseBoolean(s)!)
  )
