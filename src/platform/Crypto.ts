import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { AppConfig } from "./Config.ts"

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** `length` characters of [A-Za-z0-9], uniformly drawn from the CSPRNG. */
export const randomToken = (length = 40): string => {
  let out = ""
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]
  return out
}

export const sha256Hex = (value: string): string => createHash("sha256").update(value).digest("hex")

/** Equal-length comparison in constant time; different lengths are unequal at once. */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const MAX_INT4 = 2_147_483_647

/**
 * A bearer secret shaped `<row id><separator><secret>` (`shape`: group 1 the id, group 2 the
 * secret): the id and the row `live(id)` finds when its `secret_hash` is the secret's SHA-256,
 * compared in constant time; none, without a query, for a malformed value or an id past int4.
 * The access tokens' and the API keys' check ([D4]: looked up on every request, never cached).
 */
export const matchSecret = <R extends { readonly secret_hash: string }, E, Ctx>(
  shape: RegExp,
  value: string,
  live: (id: number) => Effect.Effect<Option.Option<R>, E, Ctx>
): Effect.Effect<Option.Option<readonly [number, R]>, E, Ctx> => {
  const match = shape.exec(value)
  const id = match ? Number(match[1]) : Number.NaN
  if (!match || !(id <= MAX_INT4)) return Effect.succeed(Option.none())
  return Effect.map(live(id), (found) =>
    Option.isSome(found) && constantTimeEqual(found.value.secret_hash, sha256Hex(match[2]!)) ? Option.some([id, found.value] as const) : Option.none()
  )
}

export const hmacSha256Hex = (key: string | Uint8Array, message: string): string => createHmac("sha256", key).update(message).digest("hex")

/** The generated application key's file inside `DATA_DIR` (embedded mode without `APP_KEY`). */
export const APP_KEY_FILE = "app.key"

/**
 * The application key of [D1]: encrypts stored secrets (AES-256-GCM, a fresh nonce each)
 * and signs URLs. In embedded mode without APP_KEY it is generated once into DATA_DIR.
 */
export class AppKey extends Context.Tag("AppKey")<
  AppKey,
  {
    readonly encrypt: (plain: string) => string
    readonly decrypt: (sealed: string) => string
    readonly sign: (message: string) => string
  }
>() {
  static readonly make = (key: Uint8Array) => {
    const encrypt = (plain: string) => {
      const nonce = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, nonce)
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()])
      return `v1:${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64")}`
    }
    const decrypt = (sealed: string) => {
      if (!sealed.startsWith("v1:")) throw new Error("unknown sealed format")
      const raw = Buffer.from(sealed.slice(3), "base64")
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
    }
    return AppKey.of({ encrypt, decrypt, sign: (message) => hmacSha256Hex(key, message) })
  }

  static readonly Live = Layer.effect(
    AppKey,
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (Option.isSome(config.appKey)) return AppKey.make(Redacted.value(config.appKey.value))
      // embedded mode only (Config requires APP_KEY with DATABASE_URL)
      return yield* Effect.sync(() => {
        const dir = resolve(config.dataDir)
        const file = join(dir, APP_KEY_FILE)
        if (!existsSync(file)) {
          mkdirSync(dir, { recursive: true, mode: 0o700 })
          writeFileSync(file, randomBytes(32).toString("base64"), { mode: 0o600 })
        }
        const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64")
        if (key.length !== 32) throw new Error(`${file}: expected 32 base64-encoded bytes`)
        return AppKey.make(new Uint8Array(key))
      })
    })
  )

  static readonly Test = Layer.sync(AppKey, () => AppKey.make(new Uint8Array(32).fill(7)))
}
