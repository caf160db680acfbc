import * as Schema from "effect/Schema"

/** Pagination of the spec ([D36]): `meta` and `links` around a page of rows. */

export const PageMeta = Schema.Struct({
  current_page: Schema.Int,
  last_page: Schema.Int,
  per_page: Schema.Int,
  total: Schema.Int
})

export const PageLinks = Schema.Struct({
  first: Schema.String,
  last: Schema.String,
  prev: Schema.NullOr(Schema.String),
  next: Schema.NullOr(Schema.String)
})

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly meta: typeof PageMeta.Type
  readonly links: typeof PageLinks.Type
}

/** Builds `meta` and `links` of the spec: `{base}?status=paid&page=2` (filters before `page`). */
export const makePage = <A>(options: {
  readonly rows: ReadonlyArray<A>
  readonly total: number
  readonly page: number
  readonly perPage: number
  readonly baseUrl: string
  readonly query?: ReadonlyArray<readonly [string, string | undefined]>
}): Page<A> => {
  const lastPage = Math.max(1, Math.ceil(options.total / options.perPage))
  const prefix = (options.query ?? [])
    .filter((entry): entry is readonly [string, string] => entry[1] !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}&`)
    .join("")
  const url = (n: number) => `${options.baseUrl}?${prefix}page=${n}`
  return {
    data: options.rows,
    meta: { current_page: options.page, last_page: lastPage, per_page: options.perPage, total: options.total },
    links: {
      first: url(1),
      last: url(lastPage),
      prev: options.page > 1 ? url(Math.min(options.page - 1, lastPage)) : null,
      next: options.page < lastPage ? url(options.page + 1) : null
    }
  }
}

/** `page`: an integer of at least 1 ([D36]). */
export const PageParam = Schema.String.pipe(
  Schema.filter((s) => /^-?[0-9]+$/.test(s), { message: () => "The page field must be an integer." }),
  Schema.filter((s) => Number(s) >= 1, { message: () => "The page field must be at least 1." }),
  Schema.filter((s) => Number(s) <= 2_147_483_647, { message: () => "The page field must not be greater than 2147483647." }),
  Schema.transform(Schema.Number, { strict: true, decode: Number, encode: String })
).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: 2_147_483_647 } })
