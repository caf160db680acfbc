import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { CurrentUser } from "../../http/Auth.ts"
import { InvoiceDocuments } from "./InvoiceDocuments.ts"

const BillingDocumentsHandlers = HttpApiBuilder.group(Api, "billingDocuments", (handlers) =>
  Effect.gen(function* () {
    const documents = yield* InvoiceDocuments
    return handlers.handle("invoicePdf", ({ path }) =>
      Effect.gen(function* () {
        const user = yield* CurrentUser
        const pdf = yield* documents.pdfOf(user.userId, path.invoice)
        return HttpServerResponse.uint8Array(pdf.bytes, {
          contentType: "application/pdf",
          headers: { "content-disposition": `attachment; filename="${pdf.filename}"`, "cache-control": "no-store" }
        })
      })
    )
  })
)

export const BillingDocumentsHttpLive = BillingDocumentsHandlers.pipe(Layer.provide(InvoiceDocuments.Default))
