import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { CurrentUser } from "../http/Auth.ts"
import { Access } from "./Access.ts"
import { formatBytes } from "./Bandwidth.ts"
import { Credentials, type VpnCredential } from "./Credentials.ts"
import { type ClientFile, Downloads } from "./Downloads.ts"
import { CurrentNode, NodeAuthenticationLive } from "./NodeAuth.ts"
import { Servers } from "./Servers.ts"
import { Usage } from "./Usage.ts"
import { VpnAccounts } from "./VpnAccounts.ts"

/** Responses that carry a token, a key or a config file are never cached ([D11]). */
const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store"))
)

/** [D52]/[D53]: the file as an attachment, written straight out (no envelope, never cached) */
const download = (file: ClientFile) =>
  HttpServerResponse.text(file.text, {
    contentType: "text/plain; charset=utf-8",
    headers: { "content-disposition": `attachment; filename="${file.filename}"`, "cache-control": "no-store" }
  })

const credentialsBody = (c: VpnCredential) => ({
  username: c.username,
  password: c.secret,
  secret: c.secret,
  rotated_at: c.rotatedAt
})

const VpnLive = HttpApiBuilder.group(Api, "vpn", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const downloads = yield* Downloads
    const credentials = yield* Credentials
    const usage = yield* Usage
    const accounts = yield* VpnAccounts
    const caller = Effect.map(CurrentUser, (user) => user.userId)

    return handlers
      .handle("listServers", () => Effect.flatMap(caller, access.serversOf))
      .handle("getServer", ({ path }) =>
        Effect.flatMap(caller, (userId) => Effect.map(access.locate(userId, path.server), (found) => found.server)))
      .handle("wireguard", ({ path }) =>
        Effect.flatMap(caller, (userId) => Effect.map(downloads.wireguard(userId, path.server), download)))
      .handle("openvpn", ({ path }) =>
        Effect.flatMap(caller, (userId) => Effect.map(downloads.openvpn(userId, path.server), download)))
      .handle("vpnCredentials", () =>
        Effect.flatMap(caller, (userId) => Effect.map(credentials.get(userId), credentialsBody)).pipe(Effect.zipLeft(noStore)))
      .handle("rotateVpnCredentials", () =>
        Effect.flatMap(caller, (userId) =>
          Effect.map(credentials.rotate(userId), (c) => ({ message: "VPN credentials rotated.", data: credentialsBody(c) }))
        ).pipe(Effect.zipLeft(noStore)))
      .handle("revokeVpnAccess", () =>
        Effect.flatMap(caller, accounts.revokeAll).pipe(Effect.as("VPN access revoked."), Effect.zipLeft(noStore)))
      .handle("serviceBandwidth", ({ path }) => Effect.flatMap(caller, (userId) => usage.ofService(userId, path.service)))
      .handle("currentBandwidth", () => Effect.flatMap(caller, usage.current))
      .handle("bandwidthHistory", () => Effect.flatMap(caller, usage.historyOf))
      .handle("bandwidthSummary", () => Effect.flatMap(caller, usage.summaryOf))
  }))

const NodeLive = HttpApiBuilder.group(Api, "node", (handlers) =>
  Effect.gen(function*() {
    const access = yield* Access
    const usage = yield* Usage
    const node = Effect.map(CurrentNode, (n) => n.serverId)

    return handlers
      .handle("peers", () => Effect.flatMap(node, access.nodePeers))
      .handle("openvpnAuth", ({ payload }) =>
        Effect.flatMap(node, (serverId) => access.authenticate(serverId, payload.username, payload.password)))
      .handle("usage", ({ payload }) => Effect.flatMap(node, (serverId) => usage.report(serverId, payload)))
  }))

const AdminLive = HttpApiBuilder.group(Api, "vpnAdmin", (handlers) =>
  Effect.gen(function*() {
    const servers = yield* Servers
    const usage = yield* Usage

    return handlers
      .handle("createServer", ({ payload }) =>
        Effect.map(servers.create(payload), (created) => ({
          ...created.server,
          node_token: created.nodeToken,
          ...Option.match(created.privateKey, { onNone: () => ({}), onSome: (private_key) => ({ private_key }) })
        })).pipe(Effect.zipLeft(noStore)))
      .handle("updateServer", ({ path, payload }) => servers.update(path.server, payload))
      .handle("recordUsage", ({ path, payload }) =>
        Effect.map(usage.addToService(path.service, payload.bytes, payload.period), (r) => ({
          service_id: r.serviceId,
          period: r.period,
          used_bytes: r.usedBytes,
          used_formatted: formatBytes(r.usedBytes)
        })))
  }))

const Services = Layer.mergeAll(Downloads.Default, VpnAccounts.Default, Access.Default, Credentials.Default, Usage.Default, Servers.Default)

export const VpnHttpLive = Layer.mergeAll(
  VpnLive,
  NodeLive.pipe(Layer.provide(NodeAuthenticationLive)),
  AdminLive
).pipe(Layer.provide(Services))
