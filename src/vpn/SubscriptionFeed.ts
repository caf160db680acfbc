import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import type { Subscription } from "../services/Domain.ts"
import { matchesEtag } from "../platform/Etag.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, orNotFound, Unauthenticated, ValidationError } from "../platform/Errors.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import { limitBytes } from "./Bandwidth.ts"
import { Access } from "./Access.ts"
import { type DeviceConfig, Downloads, qrPng } from "./Downloads.ts"
import type { BandwidthExceeded, PlanExcludesServer, ServerNotConfigured, ServiceSuspended, SubnetFull } from "./Errors.ts"
import { ServerNotConfigured as NotConfigured } from "./Errors.ts"
import type { ServerRow } from "./Servers.ts"
import {
  distinctNames,
  subscriptionEtag,
  fileName,
  type Format,
  FORMATS,
  formatFor,
  mihomoYaml,
  singBoxJson,
  type Tunnel,
  userinfo,
  zipOf
} from "./SubscriptionFormats.ts"
import { type LinkedDevice, SubscriptionLinks } from "./SubscriptionLinks.ts"
import { Usage } from "./Usage.ts"
import { ServerId } from "../platform/Ids.ts"

/** [D122]: how often apps should fetch the link again, in hours */
export const PROFILE_UPDATE_INTERVAL = "12"
/** [D122]: the requests a link allows a minute */
export const LINK_REQUESTS_PER_MINUTE = 60

const MAX_INT4 = 2_147_483_647

/** What the link answers: a status, the bytes (none for a 304) and the headers of [D122]. */
export interface LinkAnswer {
  readonly status: 200 | 304
  readonly body: Uint8Array
  readonly headers: Readonly<Record<string, string>>
}

/** The request's parts the answer depends on besides the token. */
export interface LinkRequest {
  readonly format: string | undefined
  readonly server: string | undefined
  readonly userAgent: string | undefined
  readonly ifNoneMatch: string | undefined
}

type Refused = NotFound | PlanExcludesServer | ServiceSuspended | BandwidthExceeded | ServerNotConfigured | SubnetFull

/** one format's body before the headers every answer carries */
interface Rendered {
  readonly service: Subscription
  readonly contentType: string
  readonly disposition: string
  readonly body: Uint8Array
}

const attachment = (filename: string) => `attachment; filename="${filename}"`
const utf8 = (text: string) => new TextEncoder().encode(text)

/**
 * [D122] `GET /s/<token>`: the device's configuration in the format asked for (or the one its
 * app reads), refused exactly as the per-server download would refuse it ([D52], [D53], [D91],
 * [D104]), with the headers apps read, an ETag, and each answered fetch in the device's log.
 */
export class SubscriptionFeed extends Effect.Service<SubscriptionFeed>()("vpn/SubscriptionFeed", {
  effect: Effect.gen(function* () {
    const links = yield* SubscriptionLinks
    const access = yield* Access
    const downloads = yield* Downloads
    const usage = yield* Usage
    const clock = yield* AppClock

    /** 422 for a format this link does not serve, or a `server` that is not an id */
    const checked = (request: LinkRequest) =>
      Effect.gen(function* () {
        const errors: Record<string, Array<string>> = {}
        const format = request.format ?? formatFor(request.userAgent)
        if (!(FORMATS as ReadonlyArray<string>).includes(format)) errors["format"] = ["The selected format is invalid."]
        if (request.server !== undefined && !/^[0-9]{1,20}$/.test(request.server)) errors["server"] = ["The server field must be an integer."]
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        return { format: format as Format, server: request.server === undefined ? undefined : ServerId.make(Number(request.server)) }
      })

    /** the configs of these servers; one that cannot be written now (no key, a full subnet) is left out */
    const configsOf = (link: LinkedDevice, servers: ReadonlyArray<ServerRow>) =>
      Effect.forEach(servers, (server) => Effect.either(downloads.render(server, Effect.succeed({ id: link.deviceId, userId: link.userId })))).pipe(
        Effect.flatMap((results) => {
          const configs = results.flatMap((r) => (Either.isRight(r) ? [r.right] : []))
          return configs.length === 0 ? Effect.fail(new NotConfigured()) : Effect.succeed(configs)
        })
      )

    /** one server's file, as its download: `?server=` (404/403/423 as there) or the first granted */
    const oneFile = (link: LinkedDevice, protocol: "wireguard" | "openvpn", serverId: ServerId | undefined) =>
      Effect.gen(function* () {
        if (serverId !== undefined && serverId > MAX_INT4) return yield* Effect.fail(new NotFound())
        const { server, service } =
          serverId !== undefined
            ? yield* access.reach(link.userId, serverId, protocol)
            : yield* Effect.map(access.grantedFor(link.userId, [protocol]), (g) => ({ server: g.servers[0]!, service: g.service }))
        const config: DeviceConfig = yield* downloads.render(server, Effect.succeed({ id: link.deviceId, userId: link.userId }))
        return {
          service,
          contentType: "text/plain; charset=utf-8",
          disposition: attachment(config.file.filename),
          body: utf8(config.file.text)
        } satisfies Rendered
      })

    const tunnelsOf = (configs: ReadonlyArray<DeviceConfig>): ReadonlyArray<Tunnel> =>
      distinctNames(
        configs.flatMap((c) => (c.wireguard === undefined ? [] : [{ id: c.server.id, name: c.server.name, config: c.wireguard }])),
        (t) => t.name,
        (name, id) => `${name} #${id}`
      ).map(([t, name]) => ({ name, config: t.config }))

    const render = (link: LinkedDevice, format: Format, serverId: ServerId | undefined): Effect.Effect<Rendered, Refused> => {
      const device = fileName(link.name)
      switch (format) {
        case "wireguard":
        case "openvpn":
          return oneFile(link, format, serverId)
        case "zip":
          return Effect.gen(function* () {
            const { servers, service } = yield* access.grantedFor(link.userId, ["wireguard", "openvpn"])
            const configs = yield* configsOf(link, servers)
            const entries = distinctNames(
              configs.map((c) => ({ id: c.server.id, name: c.server.name, config: c })),
              (e) => `${fileName(e.name)}${e.config.server.protocol === "openvpn" ? ".ovpn" : ".conf"}`,
              (taken, id) => taken.replace(/(\.ovpn|\.conf)$/, `-${id}$1`)
            ).map(([e, name]) => ({ name, text: e.config.file.text }))
            return { service, contentType: "application/zip", disposition: attachment(`${device}.zip`), body: zipOf(entries) }
          })
        case "sing-box":
        case "clash":
          return Effect.gen(function* () {
            const { servers, service } = yield* access.grantedFor(link.userId, ["wireguard"])
            const tunnels = tunnelsOf(yield* configsOf(link, servers))
            return format === "sing-box"
              ? { service, contentType: "application/json; charset=utf-8", disposition: attachment(`${device}.json`), body: utf8(singBoxJson(tunnels)) }
              : { service, contentType: "application/yaml; charset=utf-8", disposition: attachment(`${device}.yaml`), body: utf8(mihomoYaml(tunnels)) }
          })
        case "qr":
          return Effect.gen(function* () {
            const { service } = yield* access.grantedFor(link.userId, ["wireguard", "openvpn"])
            return { service, contentType: "image/png", disposition: `inline; filename="${device}.png"`, body: yield* qrPng(link.url) }
          })
      }
    }

    return {
      /** the device a token names: 404 `Resource not found.` for an unknown, rotated or deleted link */
      find: (token: string) => Effect.flatMap(links.find(token), orNotFound),
      /**
       * The answer to one fetch of the link (its rate limit counted before): 422 for bad
       * parameters, 401 for a disabled user (as that user's download is), then the download's
       * 404/403/423; a 200 or a 304 is recorded in the device's fetch log.
       */
      answer: (link: LinkedDevice, request: LinkRequest) =>
        Effect.gen(function* () {
          const { format, server } = yield* checked(request)
          if (link.held) return yield* Effect.fail(new Unauthenticated())
          const rendered = yield* render(link, format, server)
          const split = yield* usage.currentSplit(rendered.service)
          const info = userinfo({
            ...split,
            total: limitBytes(rendered.service.plan.bandwidthLimitGb) ?? 0,
            expiresAt: rendered.service.expiresAt
          })
          const etag = subscriptionEtag([rendered.contentType, rendered.disposition, info, rendered.body])
          const headers = {
            "content-type": rendered.contentType,
            "content-disposition": rendered.disposition,
            "cache-control": "private, no-cache",
            "profile-update-interval": PROFILE_UPDATE_INTERVAL,
            "subscription-userinfo": info,
            etag
          }
          const origin = yield* FiberRef.get(requestOrigin)
          yield* links.record({ deviceId: link.deviceId, at: yield* clock.now, address: origin.ip, userAgent: origin.userAgent })
          const answer: LinkAnswer = matchesEtag(request.ifNoneMatch, etag)
            ? { status: 304, body: new Uint8Array(0), headers }
            : { status: 200, body: rendered.body, headers }
          return answer
        })
    } as const
  }),
  dependencies: [SubscriptionLinks.Default, Access.Default, Downloads.Default, Usage.Default]
}) {}
