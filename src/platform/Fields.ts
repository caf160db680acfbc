import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * Field schemas whose failures read as Laravel's messages ([D12]), so a decode error maps
 * straight to the `errors` map. Each takes the field's wire name (snake_case).
 */

/** `plan_id` -> `plan id`, as Laravel writes attribute names. */
export const label = (field: string) => field.replace(/_/g, " ")

export const requiredMessage = (field: string) => `The ${label(field)} field is required.`

/**
 * A field checked by hand, so that a union (a nullable integer, a number-or-string amount) fails
 * with one message instead of one per member; `toWire` is what a typed client sends for a value
 * (an amount's cents go back as the decimal string).
 */
export const checkedField = <A, I>(
  target: Schema.Schema<A, I>,
  parse: (input: unknown) => Either.Either<A, string>,
  jsonSchema: object,
  toWire: (value: A) => unknown = (value) => value
) =>
  Schema.transformOrFail(Schema.Unknown, Schema.typeSchema(target), {
    strict: true,
    decode: (input, _, ast) =>
      Either.match(parse(input), {
        onLeft: (message) => ParseResult.fail(new ParseResult.Type(ast, input, message)),
        onRight: ParseResult.succeed
      }),
    encode: (value) => ParseResult.succeed(toWire(value))
  }).annotations({ jsonSchema })

const MAX_INT4 = 2_147_483_647

/** A path id: a positive integer in range; a path that does not decode is a 404, never a 422 ([D11]). */
export const IdParam = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, MAX_INT4)).annotations({
  jsonSchema: { type: "integer", minimum: 1, maximum: MAX_INT4 }
})

/** A path uuid (invoices), else 404 like any path that does not decode. */
export const UuidParam = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i),
  Schema.transform(Schema.String, { strict: true, decode: (s) => s.toLowerCase(), encode: (s) => s })
).annotations({ jsonSchema: { type: "string", format: "uuid" } })

export const string = (field: string, options: { readonly min?: number; readonly max?: number } = {}) => {
  const min = options.min ?? 1
  const max = options.max ?? 255
  return Schema.String.annotations({ message: () => `The ${label(field)} field must be a string.` })
    .pipe(
      Schema.filter((s) => !s.includes("\u0000"), { message: nulMessage(field) }),
      Schema.filter((s) => s.trim().length > 0 || min === 0, { message: () => requiredMessage(field) }),
      Schema.filter((s) => [...s].length >= min, {
        message: () => `The ${label(field)} field must be at least ${min} characters.`
      }),
      Schema.filter((s) => [...s].length <= max, {
        message: () => `The ${label(field)} field must not be greater than ${max} characters.`
      })
    )
    .annotations({ jsonSchema: stringRules(min, max) })
}

/** What the filters above refuse, as JSON Schema says it (the OpenAPI document's request rules). */
const stringRules = (min: number, max: number) => ({
  type: "string",
  ...(min > 0 ? { minLength: min, pattern: "\\S" } : {}),
  maxLength: max
})

/** PostgreSQL text cannot hold U+0000: refused as invalid input, not a database error. */
const nulMessage = (field: string) => () => `The ${label(field)} field must not contain null characters.`

const EMAIL = /^[^\s@"<>(),;:\\[\]]+@[^\s@"<>(),;:\\[\]]+\.[^\s@"<>(),;:\\[\]]+$/

/**
 * The local part is a dot-atom (issue 34): no dot first, last or twice in a row
 * (`.user@example.com` was accepted).
 */
const dotAtom = (local: string) => !local.startsWith(".") && !local.endsWith(".") && !local.includes("..")

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
const TOP_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/

/**
 * The domain of an address follows host-name rules ([D117]): dot-separated labels of 1-63
 * letters, digits or hyphens, none starting or ending with a hyphen, no empty label (so no
 * leading, doubled or trailing dot: `example.test.` is the same mailbox as `example.test`), and a
 * last label of at least two letters or an `xn--` one. Lower-cased already.
 */
const hostName = (domain: string): boolean => {
  if (domain.length > 253) return false
  const labels = domain.split(".")
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && TOP_LABEL.test(labels[labels.length - 1]!)
}

/**
 * Trimmed and lower-cased before it is checked and stored ([D13]). ASCII only (rev. 2): a
 * look-alike (Cyrillic, fullwidth, decomposed accents, invisible characters) is refused, an
 * internationalised domain comes in its `xn--` form. Checked before lower-casing, which would
 * turn some non-ASCII letters (the Kelvin sign) into ASCII ones.
 */
export const email = (field = "email") =>
  Schema.String.annotations({ message: () => `The ${label(field)} field must be a string.` })
    .pipe(
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is "any non-ASCII character"
      Schema.filter((s) => !/[^\x00-\x7f]/.test(s), { message: () => `The ${label(field)} field must be a valid email address.` }),
      Schema.transform(Schema.String, { strict: true, decode: (s) => s.trim().toLowerCase(), encode: (s) => s }),
      Schema.filter((s) => !s.includes("\u0000"), { message: nulMessage(field) }),
      Schema.filter((s) => s.length > 0, { message: () => requiredMessage(field) }),
      Schema.filter((s) => s.length <= 255, {
        message: () => `The ${label(field)} field must not be greater than 255 characters.`
      }),
      Schema.filter((s) => EMAIL.test(s) && /^[\x21-\x7e]+$/.test(s) && dotAtom(s.slice(0, s.lastIndexOf("@"))) && hostName(s.slice(s.lastIndexOf("@") + 1)), {
        message: () => `The ${label(field)} field must be a valid email address.`
      })
    )
    .annotations({ jsonSchema: { type: "string", maxLength: 255, pattern: EMAIL_PATTERN, examples: ["user@example.com"] } })

/** The rules above as one JSON Schema pattern (the OpenAPI document's, issue 28): trimmed, ASCII. */
const EMAIL_ATOM = "[\\x21\\x23-\\x27\\x2a\\x2b\\x2d\\x2f-\\x39\\x3d\\x3f\\x41-\\x5a\\x5e-\\x7e]+"
const EMAIL_PATTERN =
  `^\\s*${EMAIL_ATOM}(?:\\.${EMAIL_ATOM})*@` + "(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+(?:[A-Za-z]{2,63}|[Xx][Nn]--[A-Za-z0-9-]{1,59})\\s*$"

export const integer = (field: string, options: { readonly min?: number; readonly max?: number } = {}) => {
  const min = options.min ?? 0
  const max = options.max ?? MAX_INT4
  return Schema.Number.annotations({ message: () => `The ${label(field)} field must be an integer.` })
    .pipe(
      Schema.filter((n) => Number.isInteger(n), { message: () => `The ${label(field)} field must be an integer.` }),
      Schema.filter((n) => n >= min, { message: () => `The ${label(field)} field must be at least ${min}.` }),
      Schema.filter((n) => n <= max, { message: () => `The ${label(field)} field must not be greater than ${max}.` })
    )
    .annotations({ jsonSchema: { type: "integer", minimum: min, maximum: max } })
}

export const boolean = (field: string) => Schema.Boolean.annotations({ message: () => `The ${label(field)} field must be true or false.` })

/**
 * A refinement of a string, not a union of literals: a union's message annotation is dropped
 * when the decode error is flattened, which turned this message into `The x field is invalid.`
 */
export const oneOf = <const L extends ReadonlyArray<string>>(field: string, values: L) => {
  const message = () => `The selected ${label(field)} is invalid.`
  return Schema.String.annotations({ message }).pipe(Schema.filter((s): s is L[number] => values.includes(s), { message, jsonSchema: { enum: values } }))
}

/** A struct that reports every bad field at once ([D12]) and drops unknown ones. */
export const Body = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct(fields).annotations({ parseOptions: { errors: "all", onExcessProperty: "ignore" } })

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** An ISO 8601 date or timestamp string ("2026-02-01", "2026-02-01T00:00:00Z"), as a Date. */
export const timestamp = (field: string) => {
  const message = `The ${label(field)} field must be a valid date.`
  return Schema.String.annotations({ message: () => message })
    .pipe(
      Schema.filter((s) => TIMESTAMP.test(s.trim()) && !Number.isNaN(new Date(s.trim()).getTime()), { message: () => message }),
      Schema.transform(Schema.DateFromSelf, { strict: true, decode: (s) => new Date(s.trim()), encode: (d) => d.toISOString() })
    )
    .annotations({ jsonSchema: { type: "string", format: "date-time", examples: ["2026-12-31T23:59:59Z"] } })
}
