import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { type Page, PageLinks, PageMeta } from "../platform/Page.ts"

export { makePage, type Page, PageLinks, PageMeta } from "../platform/Page.ts"

/**
 * The envelope of [D10], declared in the schemas so that handlers return plain data and the
 * OpenAPI document shows the wrapper. Each wrapper carries its own identifier and status
 * (re-annotating later would drop the identifier).
 */

const innerIdentifier = <A, I, R>(schema: Schema.Schema<A, I, R>): string | undefined => {
  const id = SchemaAST.getJSONIdentifier(Schema.typeSchema(schema).ast)
  return id._tag === "Some" ? id.value : undefined
}

const annotate = <A>(identifier: string | undefined, status: number | undefined): Schema.Annotations.Schema<A> =>
  ({
    ...(identifier ? { identifier } : {}),
    ...HttpApiSchema.annotations({ status })
  }) as Schema.Annotations.Schema<A>

/** `{success: true, data}`: the handler returns the data. */
export const Ok = <A, I, R>(data: Schema.Schema<A, I, R>, options?: { readonly identifier?: string; readonly status?: number }) => {
  const inner = innerIdentifier(data)
  return Schema.transform(Schema.Struct({ success: Schema.Literal(true), data }), Schema.typeSchema(data), {
    strict: true,
    decode: (body) => body.data,
    encode: (value) => ({ success: true as const, data: value })
  }).annotations(annotate(options?.identifier ?? (inner ? `${inner}Response` : undefined), options?.status))
}

/** `{success: true, message, data}`: the handler returns `{message, data}`. */
export const OkMessage = <A, I, R>(data: Schema.Schema<A, I, R>, options: { readonly identifier: string; readonly status?: number }) =>
  Schema.transform(
    Schema.Struct({ success: Schema.Literal(true), message: Schema.String, data }),
    Schema.Struct({ message: Schema.String, data: Schema.typeSchema(data) }),
    {
      strict: true,
      decode: (body) => ({ message: body.message, data: body.data }),
      encode: (value) => ({ success: true as const, message: value.message, data: value.data })
    }
  ).annotations(annotate(options.identifier, options.status))

/** A confirmation: `{success: true, message, data: {}}`; the handler returns the message. */
export const Confirmation = (identifier: string, status?: number) =>
  Schema.transform(
    Schema.Struct({
      success: Schema.Literal(true),
      message: Schema.String,
      data: Schema.Struct({})
    }),
    Schema.String,
    {
      strict: true,
      decode: (body) => body.message,
      encode: (message) => ({ success: true as const, message, data: {} })
    }
  ).annotations(annotate(identifier, status))

/** A paginated list: `{success: true, data: [...], meta, links}`; the handler returns a `Page`. */
export const OkPage = <A, I, R>(item: Schema.Schema<A, I, R>, identifier: string) =>
  Schema.transform(
    Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(item), meta: PageMeta, links: PageLinks }),
    Schema.Struct({
      data: Schema.Array(Schema.typeSchema(item)),
      meta: Schema.typeSchema(PageMeta),
      links: Schema.typeSchema(PageLinks)
    }),
    {
      strict: true,
      decode: ({ data, links, meta }) => ({ data, meta, links }),
      encode: ({ data, links, meta }) => ({ success: true as const, data, meta, links })
    }
  ).annotations(annotate(identifier, undefined))

/**
 * The wire form of `Ok(schema)` and `OkPage(item)` built directly, for the hot reads (issue 8):
 * encoding through the envelope's transform checked every field of the response twice a request
 * (a fifth of the read: docs/benchmarks.md, "Figures behind the code"). The body must be of the schema's encoded
 * type, so the compiler holds the handler to the declared contract; the route keeps declaring
 * the schema (OpenAPI), and test/http/envelope.test.ts checks both forms give the same JSON.
 */
export const okResponse = <A, I, R>(_schema: Schema.Schema<A, I, R>, data: I): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson({ success: true, data })

/** `okResponse` for `OkPage(item)`. */
export const pageResponse = <A, I, R>(_item: Schema.Schema<A, I, R>, page: Page<I>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson({ success: true, data: page.data, meta: page.meta, links: page.links })
