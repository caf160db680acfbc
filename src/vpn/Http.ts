import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { Services as Subscriptions } from "../services/Services.ts"
import { CurrentUser } from "../http/Auth.ts"
import { Forbidden, NotFound, ServiceUnavailable, ValidationError } from "../http/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { randomToken, sha256Hex } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { Access } from "./Access.ts"
import { checkUsageReport } from "./Api.ts"
import * as Bandwidth from "./Bandwidth.ts"
import { formatSubnet, openvpnProfile, parseSubnet, slug, wireguardConfig } from "./Configs.ts"
import { Credentials, type VpnCredential } from "./Credentials.ts"
import { CurrentNode, NodeAuthenticationLive } from "./NodeAuth.ts"
import { Peers } from "./Peers.ts"
import { type Protocol, type ServerFields, Servers, toServer } from "./Servers.ts"
import { Usage } from "./Usage.ts"

/** Responses that carry a token, a key or a config file are never cached ([D11]). */
const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store"))
)

const download = (body: string, filename: string) =>
  HttpServerResponse.text(body, {
    contentType: "text/plain; charset=utf-8",
    headers: { "content-disposition": `attachment; filename="${filename}"`, "cache-control": "no-store" }
  })

const credentialsBody = (c: VpnCredential) => ({
  username: c.username,
  password: c.secret,
  secret: c.secret,
  rotated_at: c.rotatedAt
})

export const SUBNET_FULL = "No free address is left on this server."
export const NOT_CONFIGURED = "This server is not configured yet."
const INVALID_PLAN_IDS = "The selected plan ids is invalid."

const DEFAULT_PORT: Record<Protocol, number> = { wireguard: 51820, openvpn: 1194 }
const DEFAULT_SUBNET = "10.66.0.0/16"
const DEFAULT_DNS = "1.1.1.1, 1.0.0.1"

const VpnLive = HttpApiBuilder.group(Api, "vpn", (handlers) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const servers = yield* Servers
    const access = yield* Access
    const peers = yield* Peers
    const credentials = yield* Credentials
    const usage = yield* Usage
    const clock = yield* AppClock

    const currentService = (userId: number) =>
      subscriptions.current(userId).pipe(Effect.flatMap((s) => Option.isSome(s) ? Effect.succeed(s.value) : Effect.fail(new NotFound())))

    const bandwidthOf = (service: { readonly id: number; readonly plan: { readonly bandwidthLimitGb: number } }) =>
      Effect.gen(function*() {
        const now = yield* clock.now
        const used = yield* usage.month(service.id, Bandwidth.periodStart(now))
        return Bandwidth.usage({ usedBytes: used, bandwidthLimitGb: service.plan.bandwidthLimitGb, now })
      })

    return handlers
      .handle("listServers", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const current = yield* subscriptions.current(user.userId)
          if (Option.isNone(current)) return []
          return (yield* servers.grantedToPlan(current.value.plan.id)).map(toServer)
        }))
      .handle("getServer", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const { server } = yield* access.locate(user.userId, path.server)
          return toServer(server)
        }))
      .handle("wireguard", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const { server } = yield* access.reach(user.userId, path.server, "wireguard")
          if (server.public_key === null) return yield* Effect.fail(new ServiceUnavailable({ message: NOT_CONFIGURED }))
          const peer = yield* peers.ensure(user.userId, server).pipe(
            Effect.catchTag("SubnetFull", () => Effect.fail(new ServiceUnavailable({ message: SUBNET_FULL })))
          )
          return download(
            wireguardConfig({
              privateKey: peer.privateKey,
              address: peer.address,
              dns: server.dns,
              serverPublicKey: server.public_key,
              serverIp: server.ip,
              port: server.port
            }),
            `${slug(server.name)}.conf`
          )
        }))
      .handle("openvpn", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const { server } = yield* access.reach(user.userId, path.server, "openvpn")
          return download(
            openvpnProfile({ transport: server.transport, serverIp: server.ip, port: server.port, caCert: server.ca_cert ?? "" }),
            `${slug(server.name)}.ovpn`
          )
        }))
      .handle("vpnCredentials", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          yield* noStore
          return credentialsBody(yield* credentials.get(user.userId))
        }))
      .handle("rotateVpnCredentials", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          yield* noStore
          const rotated = yield* credentials.rotate(user.userId)
          return { message: "VPN credentials rotated.", data: credentialsBody(rotated) }
        }))
      .handle("serviceBandwidth", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const service = yield* subscriptions.findOwned(user.userId, path.service)
          if (Option.isNone(service)) return yield* Effect.fail(new NotFound())
          return yield* bandwidthOf(service.value)
        }))
      .handle("currentBandwidth", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          return yield* bandwidthOf(yield* currentService(user.userId))
        }))
      .handle("bandwidthHistory", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const service = yield* currentService(user.userId)
          const months = yield* usage.history(service.id)
          return months.slice(0, 12).map((m) => Bandwidth.historyEntry(Bandwidth.periodLabel(m.period), m.usedBytes))
        }))
      .handle("bandwidthSummary", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const service = yield* currentService(user.userId)
          const months = yield* usage.history(service.id)
          const period = Bandwidth.periodStart(yield* clock.now)
          const total = months.reduce((sum, m) => sum + m.usedBytes, 0)
          return Bandwidth.summary(total, months.find((m) => m.period === period)?.usedBytes ?? 0)
        }))
  }))

const NodeLive = HttpApiBuilder.group(Api, "node", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const subscriptions = yield* Subscriptions
    const access = yield* Access
    const peers = yield* Peers
    const credentials = yield* Credentials
    const usage = yield* Usage
    const clock = yield* AppClock

    return handlers
      .handle("peers", () =>
        Effect.gen(function*() {
          const node = yield* CurrentNode
          const list = yield* peers.ofServer(node.serverId)
          const allowed = yield* access.connectableUsers(node.serverId, list.map((p) => p.userId))
          return list.map((p) => ({ public_key: p.publicKey, allowed_ips: `${p.address}/32`, enabled: allowed.has(p.userId) }))
        }))
      .handle("openvpnAuth", ({ payload }) =>
        Effect.gen(function*() {
          const node = yield* CurrentNode
          const userId = yield* credentials.verify(payload.username, payload.password)
          if (Option.isNone(userId)) return yield* Effect.fail(new Forbidden())
          yield* access.connectable(userId.value, node.serverId).pipe(Effect.mapError(() => new Forbidden()))
          return { username: payload.username, allowed: true as const }
        }))
      .handle("usage", ({ payload }) =>
        Effect.gen(function*() {
          const node = yield* CurrentNode
          const report = checkUsageReport(payload)
          if (Object.keys(report.errors).length > 0) return yield* Effect.fail(new ValidationError({ errors: report.errors }))
          const period = Bandwidth.periodStart(yield* clock.now)
          // all or nothing: a node that retries a failed report does not count it twice
          const accepted = yield* sql.withTransaction(Effect.gen(function*() {
            // first resolve every entry to its service (reads only), summing per service; then
            // write the sums in service-id order, so concurrent reports that name the same
            // services in other orders take their row locks in one order and never deadlock
            const sums = new Map<number, { rx: number; tx: number }>()
            const services = new Map<number, Option.Option<number>>()
            let counted = 0
            for (const entry of report.entries) {
              const owner = entry.public_key !== undefined
                ? yield* peers.ownerOf(node.serverId, entry.public_key)
                : yield* credentials.userOf(entry.username ?? "")
              if (Option.isNone(owner)) continue
              let serviceId = services.get(owner.value)
              if (serviceId === undefined) {
                serviceId = Option.map(yield* subscriptions.current(owner.value), (s) => s.id)
                services.set(owner.value, serviceId)
              }
              if (Option.isNone(serviceId)) continue
              const sum = sums.get(serviceId.value) ?? { rx: 0, tx: 0 }
              sums.set(serviceId.value, { rx: sum.rx + entry.rx_bytes, tx: sum.tx + entry.tx_bytes })
              counted++
            }
            for (const [serviceId, sum] of [...sums.entries()].sort(([a], [b]) => a - b)) {
              yield* usage.add(serviceId, period, sum.rx, sum.tx)
            }
            return counted
          })).pipe(Effect.orDie)
          return { accepted }
        }))
  }))

const AdminLive = HttpApiBuilder.group(Api, "vpnAdmin", (handlers) =>
  Effect.gen(function*() {
    const servers = yield* Servers
    const subscriptions = yield* Subscriptions
    const usage = yield* Usage
    const keys = yield* KeyGen
    const clock = yield* AppClock

    const checkPlans = (planIds: ReadonlyArray<number> | undefined) =>
      Effect.gen(function*() {
        if (planIds === undefined) return
        const found = yield* servers.existingPlans(planIds)
        if (found.length !== new Set(planIds).size) return yield* Effect.fail(ValidationError.field("plan_ids", INVALID_PLAN_IDS))
      })

    const normalSubnet = (s: string) => formatSubnet(parseSubnet(s)!)

    return handlers
      .handle("createServer", ({ payload }) =>
        Effect.gen(function*() {
          yield* checkPlans(payload.plan_ids)
          // a WireGuard server without a key gets one; its private half is shown once
          const generated = payload.protocol === "wireguard" && payload.public_key === undefined ? yield* keys.x25519 : undefined
          const fields: ServerFields = {
            name: payload.name,
            country: payload.country,
            city: payload.city,
            protocol: payload.protocol,
            ip: payload.ip,
            port: payload.port ?? DEFAULT_PORT[payload.protocol],
            transport: payload.transport ?? "udp",
            public_key: payload.public_key ?? generated?.publicKey ?? null,
            subnet: normalSubnet(payload.subnet ?? DEFAULT_SUBNET),
            dns: payload.dns ?? DEFAULT_DNS,
            ca_cert: payload.ca_cert ?? null,
            status: payload.status ?? "active"
          }
          const token = `node_${randomToken(40)}`
          const server = yield* servers.create(fields, payload.plan_ids ?? [], sha256Hex(token))
          yield* noStore
          return {
            ...toServer(server),
            node_token: token,
            ...(generated ? { private_key: generated.privateKey } : {})
          }
        }))
      .handle("updateServer", ({ path, payload }) =>
        Effect.gen(function*() {
          const found = yield* servers.find(path.server)
          if (Option.isNone(found)) return yield* Effect.fail(new NotFound())
          const s = found.value
          yield* checkPlans(payload.plan_ids)
          const protocol = payload.protocol ?? s.protocol
          const fields: ServerFields = {
            name: payload.name ?? s.name,
            country: payload.country ?? s.country,
            city: payload.city ?? s.city,
            protocol,
            ip: payload.ip ?? s.ip,
            port: payload.port ?? (protocol !== s.protocol && s.port === DEFAULT_PORT[s.protocol] ? DEFAULT_PORT[protocol] : s.port),
            transport: payload.transport ?? s.transport,
            public_key: payload.public_key ?? s.public_key,
            subnet: payload.subnet !== undefined ? normalSubnet(payload.subnet) : s.subnet,
            dns: payload.dns ?? s.dns,
            ca_cert: payload.ca_cert ?? s.ca_cert,
            status: payload.status ?? s.status
          }
          return toServer(yield* servers.update(s.id, fields, payload.plan_ids))
        }))
      .handle("recordUsage", ({ path, payload }) =>
        Effect.gen(function*() {
          const service = yield* subscriptions.findById(path.service)
          if (Option.isNone(service)) return yield* Effect.fail(new NotFound())
          const period = payload.period !== undefined
            ? Bandwidth.parsePeriod(payload.period)!
            : Bandwidth.periodStart(yield* clock.now)
          const used = yield* usage.add(service.value.id, period, payload.bytes, 0)
          return {
            service_id: service.value.id,
            period: Bandwidth.periodLabel(period),
            used_bytes: used,
            used_formatted: Bandwidth.formatBytes(used)
          }
        }))
  }))

const Services = Layer.mergeAll(Access.Live, Peers.Live, Credentials.Live).pipe(
  Layer.provideMerge(Layer.mergeAll(Servers.Live, Usage.Live)),
  Layer.provideMerge(Subscriptions.Live)
)

export const VpnHttpLive = Layer.mergeAll(
  VpnLive,
  NodeLive.pipe(Layer.provide(NodeAuthenticationLive)),
  AdminLive
).pipe(Layer.provide(Services))
