import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../Api.ts"
import { AuditLog } from "../audit/AuditLog.ts"
import { CurrentUser } from "../http/Auth.ts"
import { makePage } from "../http/Envelope.ts"
import { AppConfig } from "../platform/Config.ts"
import { orNotFound, type ValidationError } from "../platform/Errors.ts"
import { Access } from "./Access.ts"
import { DeviceActivity } from "./DeviceActivity.ts"
import { Devices } from "./Devices.ts"
import { type ClientFile, Downloads, qrPng } from "./Downloads.ts"
import type { NodeSyncBody } from "./NodeApi.ts"
import { streamedNodeList } from "./NodeListStream.ts"
import { CurrentNode, NodeAuthenticationLive } from "./NodeAuth.ts"
import { Servers } from "./Servers.ts"
import { Usage } from "./Usage.ts"
import { VpnAccounts } from "./VpnAccounts.ts"
import { nodeMetrics } from "./NodeMetrics.ts"
import { LINK_REQUESTS_PER_MINUTE, SubscriptionFeed } from "./SubscriptionFeed.ts"
import { SubscriptionLinks } from "./SubscriptionLinks.ts"
import { Metrics } from "../platform/Metrics.ts"
import { enforceRateLimit, RateLimiter } from "../platform/RateLimiter.ts"
import { noStore } from "../http/Caching.ts"
import { DeviceId, ServerId, ServiceId, UserId } from "../platform/Ids.ts"

/** Responses that carry a token, a key or a config file are never cached ([D11]). */
/** [D52]/[D53]: the file as an attachment, written straight out (no envelope, never cached) */
const download = (file: ClientFile) =>
  HttpServerResponse.text(file.text, {
    contentType: "text/plain; charset=utf-8",
    headers: { "content-disposition": `attachment; filename="${file.filename}"`, "cache-control": "no-store" }
  })

const VpnLive = HttpApiBuilder.group(Api, "vpn", (handlers) =>
  Effect.gen(function* () {
    const access = yield* Access
    const downloads = yield* Downloads
    const devices = yield* Devices
    const activity = yield* DeviceActivity
    const usage = yield* Usage
    const accounts = yield* VpnAccounts
    const audit = yield* AuditLog
    const caller = Effect.map(CurrentUser, (user) => user.userId)
    /** a security event of the caller's ([D99]) */
    const vpnAccessRevoked = Effect.flatMap(CurrentUser, (user) =>
      audit.record({ action: "vpn_access_revoked", actorId: user.userId, actorKind: user.kind, resource: `user:${user.userId}`, subjectId: user.userId })
    )

    return (
      handlers
        .handle("listServers", () => Effect.flatMap(caller, access.serversOf))
        .handle("getServer", ({ path }) =>
          Effect.flatMap(caller, (userId) => Effect.map(access.locate(userId, ServerId.make(path.server)), (found) => found.server))
        )
        .handle("wireguard", ({ path }) => Effect.flatMap(caller, (userId) => Effect.map(downloads.wireguard(userId, ServerId.make(path.server)), download)))
        .handle("openvpn", ({ path }) => Effect.flatMap(caller, (userId) => Effect.map(downloads.openvpn(userId, ServerId.make(path.server)), download)))
        .handle("vpnCredentials", () => Effect.flatMap(caller, devices.defaultCredentials).pipe(Effect.zipLeft(noStore)))
        .handle("rotateVpnCredentials", () =>
          Effect.flatMap(caller, (userId) =>
            Effect.map(devices.rotateDefaultCredentials(userId), (data) => ({ message: "VPN credentials rotated.", data }))
          ).pipe(Effect.zipLeft(noStore))
        )
        // [D122]: each device's link is a credential ([D11]: never cached)
        .handle("listDevices", () => Effect.flatMap(caller, activity.list).pipe(Effect.zipLeft(noStore)))
        .handle("getDevice", ({ path }) =>
          Effect.flatMap(caller, (userId) => activity.detail(userId, DeviceId.make(path.device))).pipe(Effect.zipLeft(noStore))
        )
        .handle("rotateSubscription", ({ path }) =>
          Effect.flatMap(caller, (userId) => activity.rotateLink(userId, DeviceId.make(path.device))).pipe(Effect.zipLeft(noStore))
        )
        .handle("subscriptionFetches", ({ path }) => Effect.flatMap(caller, (userId) => activity.fetchesOf(userId, DeviceId.make(path.device))))
        .handle("createDevice", ({ payload }) => Effect.flatMap(caller, (userId) => devices.create(userId, payload)).pipe(Effect.zipLeft(noStore)))
        .handle("renameDevice", ({ path, payload }) => Effect.flatMap(caller, (userId) => devices.rename(userId, DeviceId.make(path.device), payload.name)))
        .handle("deleteDevice", ({ path }) =>
          Effect.flatMap(caller, (userId) => devices.remove(userId, DeviceId.make(path.device))).pipe(Effect.as("Device deleted."))
        )
        .handle("rotateDevice", ({ path }) =>
          Effect.flatMap(caller, (userId) =>
            Effect.map(devices.rotate(userId, DeviceId.make(path.device)), (data) => ({ message: "Device credentials rotated.", data }))
          ).pipe(Effect.zipLeft(noStore))
        )
        .handle("deviceWireguard", ({ path }) =>
          Effect.flatMap(caller, (userId) => Effect.map(downloads.wireguard(userId, ServerId.make(path.server), DeviceId.make(path.device)), download))
        )
        .handle("deviceWireguardQr", ({ path }) =>
          Effect.flatMap(caller, (userId) =>
            downloads.wireguard(userId, ServerId.make(path.server), DeviceId.make(path.device)).pipe(
              Effect.flatMap((file) => qrPng(file.text)),
              Effect.map((png) => HttpServerResponse.uint8Array(png, { contentType: "image/png", headers: { "cache-control": "no-store" } }))
            )
          )
        )
        .handle("deviceOpenvpn", ({ path }) =>
          Effect.flatMap(caller, (userId) => Effect.map(downloads.openvpn(userId, ServerId.make(path.server), DeviceId.make(path.device)), download))
        )
        .handle("revokeVpnAccess", () =>
          Effect.flatMap(caller, accounts.revokeAll).pipe(Effect.zipRight(vpnAccessRevoked), Effect.as("VPN access revoked."), Effect.zipLeft(noStore))
        )
        .handle("serviceBandwidth", ({ path }) => Effect.flatMap(caller, (userId) => usage.ofService(userId, ServiceId.make(path.service))))
        .handle("currentBandwidth", () => Effect.flatMap(caller, usage.current))
        .handle("bandwidthHistory", () => Effect.flatMap(caller, usage.historyOf))
        .handle("bandwidthSummary", () => Effect.flatMap(caller, usage.summaryOf))
    )
  })
)

const NodeLive = HttpApiBuilder.group(Api, "node", (handlers) =>
  Effect.gen(function* () {
    const access = yield* Access
    const usage = yield* Usage
    const activity = yield* DeviceActivity
    const nodeFigures = yield* nodeMetrics
    const node = Effect.map(CurrentNode, (n) => n.serverId)

    return (
      handlers
        // each poll is seen by the metrics: the node's last poll and the peers it was served ([D102])
        .handle("peers", ({ urlParams }) =>
          Effect.flatMap(
            node,
            (serverId): Effect.Effect<HttpServerResponse.HttpServerResponse | typeof NodeSyncBody.Type, ValidationError> =>
              // issue 27: the full list streamed, pages in key order; `?since=` answers as built
              urlParams.since === undefined
                ? Effect.map(access.nodeFull(serverId), ({ pages, revision }) =>
                    streamedNodeList(revision, pages, (entries) => nodeFigures.polled(serverId, entries))
                  )
                : access.nodeSync(serverId, urlParams.since).pipe(
                    Effect.tap((sync) => nodeFigures.polled(serverId, sync.peers.length)),
                    Effect.map((sync) => ({
                      data: sync.peers,
                      meta: { revision: sync.revision, ...("rotated" in sync && sync.rotated !== undefined ? { rotated: sync.rotated } : {}) }
                    }))
                  )
          )
        )
        .handle("openvpnAuth", ({ payload }) => Effect.flatMap(node, (serverId) => access.authenticate(serverId, payload.username, payload.password)))
        .handle("usage", ({ headers, payload }) => Effect.flatMap(node, (serverId) => usage.record(serverId, payload, headers["idempotency-key"])))
        .handle("counters", ({ headers, payload }) =>
          Effect.flatMap(node, (serverId) =>
            activity.checkHandshakes(payload).pipe(
              Effect.zipRight(usage.recordCounters(serverId, payload, headers["idempotency-key"])),
              // [D107]: the peers' last handshakes (a repeat changes nothing)
              Effect.tap(() => activity.recordHandshakes(serverId, payload))
            )
          )
        )
    )
  })
)

const ADMIN_SERVERS_PER_PAGE = 15

const AdminLive = HttpApiBuilder.group(Api, "vpnAdmin", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const servers = yield* Servers
    const usage = yield* Usage
    const activity = yield* DeviceActivity

    return handlers
      .handle("listServers", ({ urlParams }) => {
        const page = urlParams.page ?? 1
        return Effect.map(servers.adminPage(page, ADMIN_SERVERS_PER_PAGE), ({ rows, total }) =>
          makePage({ rows, total, page, perPage: ADMIN_SERVERS_PER_PAGE, baseUrl: `${config.publicUrl}/v1/admin/servers` })
        )
      })
      .handle("getServer", ({ path }) => Effect.flatMap(servers.adminOne(ServerId.make(path.server)), orNotFound))
      .handle("userDevices", ({ path }) => activity.ofUser(UserId.make(path.user)))
      .handle("createServer", ({ payload }) => servers.create(payload).pipe(Effect.zipLeft(noStore)))
      .handle("updateServer", ({ path, payload }) => servers.update(ServerId.make(path.server), payload))
      .handle("recordUsage", ({ path, payload }) => usage.addToService(ServiceId.make(path.service), payload.bytes, payload.period))
  })
)

/**
 * [D122] `GET /s/<token>`: the link's device (404), its own limit of 60 a minute (429, with the
 * limits' headers), then the answer the feed makes (its headers, a 304 without a body).
 */
const SubscriptionLinkLive = HttpApiBuilder.group(Api, "subscriptionLink", (handlers) =>
  Effect.gen(function* () {
    const feed = yield* SubscriptionFeed
    const limiter = yield* RateLimiter
    const metrics = yield* Metrics
    return handlers.handle("fetchSubscription", ({ headers, path, urlParams }) =>
      Effect.gen(function* () {
        const link = yield* feed.find(path.token)
        yield* enforceRateLimit(LINK_REQUESTS_PER_MINUTE, [`subscription:${link.hash}`]).pipe(
          Effect.provideService(RateLimiter, limiter),
          Effect.tapErrorTag("TooManyAttempts", () => Effect.sync(() => metrics.rateLimitRefused("subscription-link")))
        )
        const answer = yield* feed.answer(link, {
          format: urlParams.format,
          server: urlParams.server,
          userAgent: headers["user-agent"],
          ifNoneMatch: headers["if-none-match"]
        })
        const { "content-type": contentType, ...rest } = answer.headers
        return answer.status === 304
          ? HttpServerResponse.empty({ status: 304, headers: answer.headers })
          : HttpServerResponse.uint8Array(answer.body, { contentType, headers: rest })
      })
    )
  })
)

/** The VPN room's services, for its handlers and for other rooms (accounts calls `VpnAccounts`). */
export const VpnServicesLive = Layer.mergeAll(
  Downloads.Default,
  Devices.Default,
  DeviceActivity.Default,
  VpnAccounts.Default,
  Access.Default,
  Usage.Default,
  Servers.Default,
  SubscriptionLinks.Default,
  SubscriptionFeed.Default
)

export const VpnHttpLive = Layer.mergeAll(VpnLive, NodeLive.pipe(Layer.provide(NodeAuthenticationLive)), AdminLive, SubscriptionLinkLive)
