import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { errorEnvelope, NotFoundResponse, TooManyAttemptsResponse, UnauthenticatedResponse } from "../http/Errors.ts"
import { FORMATS } from "./Domain.ts"
import { BandwidthExceeded, PlanExcludesServer, ServerNotConfigured, ServiceSuspended, SubnetFull } from "./Errors.ts"

const linkHeader = (description: string) => ({ description, schema: { type: "string" } })

/**
 * [D122]: the link's 200 in each of its formats' types (one declared success per status is all
 * the framework writes), and the headers of its 200 and 304
 */
const linkAnswers = (operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = operation["responses"] as Record<string, Record<string, unknown>>
  const headers = {
    "Subscription-Userinfo": linkHeader(
      "`upload=<bytes>; download=<bytes>; total=<bytes, 0 unlimited>; expire=<unix seconds>` of the service's current period."
    ),
    "Profile-Update-Interval": linkHeader("`12`: hours between an app's fetches."),
    "Cache-Control": linkHeader("`private, no-cache`: apps keep it, and ask again with `If-None-Match`."),
    ETag: linkHeader("Changes whenever anything in the answer would."),
    "Content-Disposition": linkHeader('The file name, e.g. `attachment; filename="amsterdam-1.conf"`.')
  }
  const text = { schema: { type: "string" } }
  const binary = { schema: { type: "string", format: "binary" } }
  responses["200"] = {
    description: "The configuration in the format asked for.",
    content: {
      "text/plain; charset=utf-8": text,
      "application/zip": binary,
      "application/json; charset=utf-8": text,
      "application/yaml; charset=utf-8": text,
      "image/png": binary
    },
    headers
  }
  responses["304"] = { description: "Nothing changed since the `ETag` sent in `If-None-Match`.", headers }
  return operation
}

/**
 * [D122] `GET /s/<token>`, outside `/v1`: a device's configuration by its secret link, with no
 * other credential, for VPN apps that import and refresh by URL. The parameters are checked by
 * the handler, after the link and its limit (the order of [D11]).
 */
export class SubscriptionLinkApi extends HttpApiGroup.make("subscriptionLink")
  .annotate(OpenApi.Description, "A device's subscription link: its VPN configuration for apps that import and refresh by URL.")
  .add(
    HttpApiEndpoint.get("fetchSubscription", "/s/:token")
      .annotateContext(
        describe(
          "Fetch a device's configuration by its subscription link",
          "The `subscription_url` of a device (`GET /v1/devices`) needs no other credential. `?format=` chooses what it " +
            "answers (without it, the `User-Agent`: sing-box apps get `sing-box`, Clash, mihomo and Stash get `clash`, " +
            "anything else `wireguard`): `wireguard`, the wg-quick `.conf` of `?server=<id>` or of the first WireGuard " +
            "server your plan grants; `zip`, every granted server's `.conf` and `.ovpn`; `sing-box`, a sing-box 1.11+ " +
            "JSON configuration with a `urltest` over every WireGuard server; `clash`, a mihomo YAML configuration with a " +
            "`url-test` group over them; `openvpn`, the `.ovpn` of `?server=<id>` or of the first OpenVPN server; `qr`, a " +
            "PNG QR code of the link itself. Every answer carries `Subscription-Userinfo` (this period's bytes, the " +
            "quota, the expiry), `Profile-Update-Interval: 12`, `Cache-Control: private, no-cache` and an `ETag` " +
            "(`If-None-Match` answers 304). Refused as the per-server download is (401 for a disabled account, " +
            "403, 404, 423); 404 for an unknown or renewed link; 60 requests a minute per link."
        )
      )
      .annotateContext(OpenApi.annotations({ transform: linkAnswers }))
      .setPath(
        Schema.Struct({
          token: Schema.String.annotations({ jsonSchema: { type: "string", pattern: "^[A-Za-z0-9_-]{32,128}$" } })
        })
      )
      .setUrlParams(
        Schema.Struct({
          format: Schema.optional(
            Schema.String.annotations({
              description: "What to answer; without it the `User-Agent` chooses.",
              jsonSchema: { type: "string", enum: FORMATS }
            })
          ),
          server: Schema.optional(
            Schema.String.annotations({
              description: "The server of a `wireguard` or `openvpn` answer (default: the first granted by id).",
              jsonSchema: { type: "string", pattern: "^[0-9]+$" }
            })
          )
        })
      )
      .setHeaders(
        Schema.Struct({
          "if-none-match": Schema.optional(Schema.String.annotations({ description: "The `ETag` of an earlier answer: 304 while nothing changed." })),
          "user-agent": Schema.optional(Schema.String.annotations({ description: "The app: chooses the format when `?format=` is absent." }))
        })
      )
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; charset=utf-8" }))
      .addSuccess(HttpApiSchema.Empty(304))
      .addError(NotFoundResponse)
      .addError(UnauthenticatedResponse)
      .addError(TooManyAttemptsResponse)
      .addError(errorEnvelope(PlanExcludesServer))
      .addError(errorEnvelope(ServiceSuspended))
      .addError(errorEnvelope(BandwidthExceeded))
      .addError(errorEnvelope(SubnetFull))
      .addError(errorEnvelope(ServerNotConfigured))
  ) {}
