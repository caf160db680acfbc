import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { isIP } from "node:net"
import { AdminAuthentication, Authentication } from "../http/Auth.ts"
import { Confirmation, Ok, OkMessage, OkPage } from "../http/Envelope.ts"
import {
  BusinessRuleViolationResponse,
  errorEnvelope,
  ForbiddenResponse,
  NotFoundResponse,
  ValidationErrorResponse
} from "../http/Errors.ts"
import { Body, IdParam, integer, label, oneOf, string } from "../platform/Fields.ts"
import { BandwidthSummary, BandwidthUsage, HistoryEntry, MAX_BYTES, parsePeriod } from "./Bandwidth.ts"
import { parseSubnet } from "./Configs.ts"
import { BandwidthExceeded, PlanExcludesServer, ServerNotConfigured, ServiceSuspended, SubnetFull } from "./Errors.ts"
import { VpnCredentials } from "./Credentials.ts"
import { Device as DeviceFields, DeviceWithCredentials, PLATFORMS } from "./Devices.ts"
import { NodeAuthentication } from "./NodeAuth.ts"
import { NodePeer as NodePeerFields } from "./Peers.ts"
import { PageParam } from "../platform/Page.ts"
import { CreatedServer, Server as ServerFields, ServerRecord } from "./Servers.ts"
import { UsageRecorded } from "./Usage.ts"
import { Accepted } from "./UsageReports.ts"

// ---- resources ---------------------------------------------------------------------------

/** The spec's VPN server, exactly its fields ([D50]). */
export const Server = ServerFields.annotations({ identifier: "VpnServer" })

export const NodePeer = NodePeerFields.annotations({ identifier: "NodePeer" })

/** [D92]: a peer that left the server since the cursor. */
export const RemovedPeer = Schema.Struct({ public_key: Schema.String, removed: Schema.Literal(true) })
  .annotations({ identifier: "RemovedNodePeer" })

/** [D92]: `{success: true, data: [...], meta: {revision}}`; the handler returns `{data, meta}`. */
const NodeSyncBody = Schema.Struct({
  data: Schema.Array(Schema.Union(NodePeer, RemovedPeer)),
  meta: Schema.Struct({
    revision: Schema.Number.annotations({ description: "An opaque cursor that only grows: send it back as `since`." })
  })
})
const NodeSyncResponse = Schema.transform(
  Schema.Struct({ success: Schema.Literal(true), ...NodeSyncBody.fields }),
  Schema.typeSchema(NodeSyncBody),
  {
    strict: true,
    decode: ({ data, meta }) => ({ data, meta }),
    encode: ({ data, meta }) => ({ success: true as const, data, meta })
  }
).annotations({ identifier: "NodePeerList" })

const Credentials = VpnCredentials.annotations({ identifier: "VpnCredentials" })

export const Device = DeviceFields.annotations({ identifier: "Device" })
const NewDevice = DeviceWithCredentials.annotations({ identifier: "DeviceWithCredentials" })

// ---- payload fields ----------------------------------------------------------------------

const ipAddress = (field: string) =>
  string(field, { max: 45 }).pipe(
    Schema.filter((s) => isIP(s) !== 0, { message: () => `The ${label(field)} field must be a valid IP address.` })
  ).annotations({ jsonSchema: { type: "string", minLength: 2, maxLength: 45, pattern: "^[0-9a-fA-F:.]+$", examples: ["203.0.113.10"] } })

const subnet = string("subnet", { max: 18 }).pipe(
  Schema.filter((s) => parseSubnet(s) !== undefined, {
    message: () => "The subnet field must be an IPv4 network in CIDR notation between /8 and /30."
  })
).annotations({ jsonSchema: { type: "string", pattern: "^\\s*\\d{1,3}(\\.\\d{1,3}){3}/([89]|[12]\\d|30)\\s*$", examples: ["10.66.0.0/16"] } })

/** [D90]: an IPv6 network in CIDR notation, /48 to /112 (peers take the same host number in it). */
const subnet6 = string("subnet6", { max: 43 }).pipe(
  Schema.filter((s) => {
    const match = /^([0-9a-fA-F:]+)\/(\d{1,3})$/.exec(s.trim())
    return match !== null && isIP(match[1]!) === 6 && Number(match[2]) >= 48 && Number(match[2]) <= 112
  }, { message: () => "The subnet6 field must be an IPv6 network in CIDR notation between /48 and /112." })
).annotations({ jsonSchema: { type: "string", pattern: "^\\s*[0-9a-fA-F:]+/(4[89]|[5-9]\\d|10\\d|11[0-2])\\s*$", examples: ["fd00:66::/64"] } })

/** [D92]: a server as admins see it. */
export const AdminServer = Schema.Struct({
  ...ServerRecord.fields,
  last_seen_at: Schema.NullOr(Schema.DateFromString),
  peers: Schema.Int,
  plan_ids: Schema.Array(Schema.Int)
}).annotations({ identifier: "AdminVpnServer" })

const dns = string("dns", { max: 255 }).pipe(
  Schema.filter((s) => s.split(",").every((part) => isIP(part.trim()) !== 0), {
    message: () => "The dns field must be a comma-separated list of IP addresses."
  })
).annotations({ jsonSchema: { type: "string", minLength: 1, maxLength: 255, pattern: "^\\s*[0-9a-fA-F:.]+(\\s*,\\s*[0-9a-fA-F:.]+)*\\s*$", examples: ["1.1.1.1, 1.0.0.1"] } })

/** A WireGuard key: base64 of 32 bytes. */
const publicKey = string("public_key", { max: 44 }).pipe(
  Schema.filter((s) => /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(s), {
    message: () => "The public key field must be a base64 WireGuard key."
  })
)

const caCert = string("ca_cert", { max: 20_000 }).pipe(
  Schema.filter((s) => s.includes("-----BEGIN CERTIFICATE-----") && !/<\/?ca>/i.test(s), {
    message: () => "The ca cert field must be a PEM certificate."
  })
).annotations({
  jsonSchema: {
    type: "string",
    minLength: 27,
    maxLength: 20_000,
    pattern: "^(?![\\s\\S]*</?[cC][aA]>)[\\s\\S]*-----BEGIN CERTIFICATE-----",
    examples: ["-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"]
  }
})

const planIds = Schema.Array(integer("plan_ids", { min: 1 })).annotations({
  message: () => "The plan ids field must be an array."
})

const serverFields = {
  name: string("name"),
  country: string("country"),
  city: string("city"),
  protocol: oneOf("protocol", ["wireguard", "openvpn"]),
  ip: ipAddress("ip"),
  port: Schema.optional(integer("port", { min: 1, max: 65535 })),
  transport: Schema.optional(oneOf("transport", ["udp", "tcp"])),
  public_key: Schema.optional(publicKey),
  subnet: Schema.optional(subnet),
  subnet6: Schema.optional(Schema.NullOr(subnet6)),
  dns: Schema.optional(dns),
  ca_cert: Schema.optional(caCert),
  status: Schema.optional(oneOf("status", ["active", "maintenance", "offline"])),
  plan_ids: Schema.optional(planIds)
}

export const CreateServerPayload = Body(serverFields)
export const UpdateServerPayload = Body({
  ...serverFields,
  name: Schema.optional(serverFields.name),
  country: Schema.optional(serverFields.country),
  city: Schema.optional(serverFields.city),
  protocol: Schema.optional(serverFields.protocol),
  ip: Schema.optional(serverFields.ip)
})

const nodeReport = (fields: readonly [string, string], description: string) =>
  Schema.Array(
    Schema.Unknown.annotations({
      jsonSchema: {
        type: "object",
        properties: {
          public_key: { type: "string" },
          username: { type: "string" },
          [fields[0]]: { type: "integer", minimum: 0, maximum: MAX_BYTES },
          [fields[1]]: { type: "integer", minimum: 0, maximum: MAX_BYTES }
        },
        required: [...fields]
      }
    })
  ).annotations({ message: () => "The body must be a JSON array.", description })

/** The node's counter deltas: an array of entries, each checked by `Usage.record` (`0.rx_bytes`). */
export const UsageReport = nodeReport(["rx_bytes", "tx_bytes"], "Counter deltas per peer ([D54]).")

/** [D94]: the node's cumulative counters (what `wg show <if> dump` prints), checked by `Usage.recordCounters`. */
export const CountersReport = nodeReport(
  ["rx_total", "tx_total"],
  "Cumulative counters per peer ([D94]): the increase since the last report counts; a total below the last one is a counter reset."
)

/** [D94]: a retry under the same key (same node, within 24 h) answers the first answer and adds nothing. */
const IdempotencyKey = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.annotations({
    description: "1-255 visible ASCII characters naming this report; retry a report with its key until it is answered."
  }))
})

/** [D90]: a device's name (1-64) and platform. */
const deviceName = string("name", { max: 64 })
export const CreateDevicePayload = Body({ name: deviceName, platform: oneOf("platform", PLATFORMS) })
export const RenameDevicePayload = Body({ name: deviceName })

// ---- groups ------------------------------------------------------------------------------

const serverPath = Schema.Struct({ server: IdParam })

const download = <const Name extends string>(name: Name, path: `/${string}`) =>
  HttpApiEndpoint.get(name, path)
    .setPath(serverPath)
    .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; charset=utf-8" }))
    .addError(NotFoundResponse)
    .addError(errorEnvelope(PlanExcludesServer))
    .addError(errorEnvelope(ServiceSuspended))
    .addError(errorEnvelope(BandwidthExceeded))

const devicePath = Schema.Struct({ device: IdParam })
const deviceServerPath = Schema.Struct({ device: IdParam, server: IdParam })

const deviceDownload = <const Name extends string>(name: Name, path: `/${string}`) =>
  HttpApiEndpoint.get(name, path)
    .setPath(deviceServerPath)
    .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; charset=utf-8" }))
    .addError(NotFoundResponse)
    .addError(errorEnvelope(PlanExcludesServer))
    .addError(errorEnvelope(ServiceSuspended))
    .addError(errorEnvelope(BandwidthExceeded))

/** Servers, config downloads, VPN credentials, bandwidth ([D50]-[D55]). */
export class VpnApi extends HttpApiGroup.make("vpn")
  .annotate(OpenApi.Description, "VPN servers, configs, devices and bandwidth.")
  .add(HttpApiEndpoint.get("listServers", "/servers")
      .annotateContext(describe("List your VPN servers", "The servers your current plan grants (empty without a current service).")).addSuccess(Ok(Schema.Array(Server), { identifier: "VpnServerList" })))
  .add(
    HttpApiEndpoint.get("getServer", "/servers/:server")
      .annotateContext(describe("Get a VPN server", "One server; a server your plan does not include is 403."))
      .setPath(serverPath)
      .addSuccess(Ok(Server, { identifier: "VpnServerResponse" }))
      .addError(NotFoundResponse)
      .addError(errorEnvelope(PlanExcludesServer))
  )
  .add(
    download("wireguard", "/servers/:server/wireguard")
      .annotateContext(describe("Download a WireGuard config", "A `.conf` for your account's default device on this server (made on first download). 423 while the service is suspended or over its bandwidth quota; 403 if your plan does not include the server."))
      .addError(errorEnvelope(SubnetFull))
      .addError(errorEnvelope(ServerNotConfigured))
  )
  .add(download("openvpn", "/servers/:server/openvpn")
      .annotateContext(describe("Download an OpenVPN profile", "An `.ovpn` profile for this server; sign in with the credentials of `GET /v1/account/vpn-credentials`. Same 403/404/423 rules as WireGuard.")))
  .add(
    HttpApiEndpoint.get("vpnCredentials", "/account/vpn-credentials")
      .annotateContext(describe("Get your OpenVPN credentials", "The username and password OpenVPN asks for (not your account password)."))
      .addSuccess(Ok(Credentials, { identifier: "VpnCredentialsResponse" }))
  )
  .add(
    HttpApiEndpoint.post("rotateVpnCredentials", "/account/vpn-credentials/rotate")
      .annotateContext(describe("Renew your OpenVPN password", "A new OpenVPN password; the old one stops working at once."))
      .addSuccess(OkMessage(Credentials, { identifier: "VpnCredentialsRotated" }))
  )
  .add(HttpApiEndpoint.post("revokeVpnAccess", "/account/vpn/revoke-all")
      .annotateContext(describe("Revoke all VPN access", "Every device key and the OpenVPN password are replaced at once; every device must download its config again.")).addSuccess(Confirmation("VpnAccessRevoked")))
  .add(HttpApiEndpoint.get("listDevices", "/devices")
      .annotateContext(describe("List your devices", "Your devices (each with its own WireGuard key), with their addresses per server.")).addSuccess(Ok(Schema.Array(Device), { identifier: "DeviceList" })))
  .add(
    HttpApiEndpoint.post("createDevice", "/devices")
      .annotateContext(describe("Add a device", "A new device with its own key pair, within your plan's device limit (422 beyond it)."))
      .setPayload(CreateDevicePayload)
      .addSuccess(Ok(NewDevice, { identifier: "DeviceCreated", status: 201 }))
      .addError(BusinessRuleViolationResponse)
  )
  .add(
    HttpApiEndpoint.put("renameDevice", "/devices/:device")
      .annotateContext(describe("Rename a device", "Changes the device's name. Another user's device is 404."))
      .setPath(devicePath)
      .setPayload(RenameDevicePayload)
      .addSuccess(Ok(Device, { identifier: "DeviceRenamed" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.del("deleteDevice", "/devices/:device")
      .annotateContext(describe("Delete a device", "The device leaves every server at once."))
      .setPath(devicePath)
      .addSuccess(Confirmation("DeviceDeleted"))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("rotateDevice", "/devices/:device/rotate")
      .annotateContext(describe("Rotate a device's key", "A new key pair; the old key stops working at once, download the config again."))
      .setPath(devicePath)
      .addSuccess(OkMessage(NewDevice, { identifier: "DeviceRotated" }))
      .addError(NotFoundResponse)
  )
  .add(
    deviceDownload("deviceWireguard", "/devices/:device/wireguard/:server")
      .annotateContext(describe("Download a device's WireGuard config", "The `.conf` of this device for this server."))
      .addError(errorEnvelope(SubnetFull))
      .addError(errorEnvelope(ServerNotConfigured))
  )
  .add(
    HttpApiEndpoint.get("deviceWireguardQr", "/devices/:device/wireguard/:server/qr")
      .annotateContext(describe("Get a device's WireGuard config as a QR code", "A PNG QR code of the same config, for the mobile apps."))
      .setPath(deviceServerPath)
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "image/png" }))
      .addError(NotFoundResponse)
      .addError(errorEnvelope(PlanExcludesServer))
      .addError(errorEnvelope(ServiceSuspended))
      .addError(errorEnvelope(BandwidthExceeded))
      .addError(errorEnvelope(SubnetFull))
      .addError(errorEnvelope(ServerNotConfigured))
  )
  .add(deviceDownload("deviceOpenvpn", "/devices/:device/openvpn/:server")
      .annotateContext(describe("Download an OpenVPN profile for a device", "The `.ovpn` profile for this server.")))
  .add(
    HttpApiEndpoint.get("serviceBandwidth", "/services/:service/bandwidth")
      .annotateContext(describe("Get a service's bandwidth", "Used bytes, limit and percentage of one of your services in its current quota period."))
      .setPath(Schema.Struct({ service: IdParam }))
      .addSuccess(Ok(BandwidthUsage, { identifier: "ServiceBandwidthResponse" }))
  )
  .add(HttpApiEndpoint.get("currentBandwidth", "/bandwidth/current")
      .annotateContext(describe("Get your current bandwidth", "Used bytes, limit, percentage and reset date of your current service (404 without one).")).addSuccess(Ok(BandwidthUsage, { identifier: "CurrentBandwidthResponse" })))
  .add(HttpApiEndpoint.get("bandwidthHistory", "/bandwidth/history")
      .annotateContext(describe("Get your bandwidth history", "Your current service's usage by period, newest first, at most 12 entries.")).addSuccess(Ok(Schema.Array(HistoryEntry), { identifier: "BandwidthHistoryResponse" })))
  .add(HttpApiEndpoint.get("bandwidthSummary", "/bandwidth/summary")
      .annotateContext(describe("Get your bandwidth summary", "Totals over your current service's periods.")).addSuccess(Ok(BandwidthSummary, { identifier: "BandwidthSummaryResponse" })))
  .middlewareEndpoints(Authentication)
{}

/** The node API of [D54], behind node tokens. */
export class NodeApi extends HttpApiGroup.make("node")
  .annotate(OpenApi.Description, "The routes the VPN servers' node agents call (node token).")
  .add(
    HttpApiEndpoint.get("peers", "/node/peers")
      .annotateContext(describe("List this server's peers (node agent)", "The peers and credentials the calling server must serve, with `meta.revision`; with `?since=<revision>` only what changed after it. Node token only."))
      .setUrlParams(Schema.Struct({
        since: Schema.optional(Schema.String.annotations({ description: "A `meta.revision` of an earlier answer: only what changed after it." }))
      }))
      .addSuccess(NodeSyncResponse)
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("openvpnAuth", "/node/openvpn/auth")
      .annotateContext(describe("Check an OpenVPN login (node agent)", "200 when the username and password may connect through this OpenVPN server, 403 otherwise. Node token of an OpenVPN server only."))
      .setPayload(Body({ username: string("username"), password: string("password", { max: 255 }) }))
      .addSuccess(Ok(Schema.Struct({
        username: Schema.String,
        allowed: Schema.Literal(true),
        /** [D103]: the speed to shape the session to (Mbps, both ways); null: none */
        speed_limit_mbps: Schema.NullOr(Schema.Int)
      }), { identifier: "NodeOpenVpnAuthResponse" }))
      .addError(ForbiddenResponse)
  )
  .add(
    HttpApiEndpoint.post("usage", "/node/usage")
      .annotateContext(describe("Report usage deltas (node agent)", "Adds byte deltas of this server's peers to their services' usage; `data.accepted` counts the entries counted. Send an `Idempotency-Key` so a retried report counts once."))
      .setHeaders(IdempotencyKey)
      .setPayload(UsageReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeUsageResponse" }))
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("counters", "/node/counters")
      .annotateContext(describe("Report interface counters (node agent)", "Reports WireGuard's cumulative counters; the server derives the deltas exactly once. Send an `Idempotency-Key` so a retried report counts once."))
      .setHeaders(IdempotencyKey)
      .setPayload(CountersReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeCountersResponse" }))
      .addError(ValidationErrorResponse)
  )
  .middlewareEndpoints(NodeAuthentication)
{}

/** `/v1/admin/servers...` and usage recording ([D70]). */
export class VpnAdminApi extends HttpApiGroup.make("vpnAdmin")
  .annotate(OpenApi.Description, "VPN servers and usage, for admins.")
  .add(
    HttpApiEndpoint.get("listServers", "/admin/servers")
      .annotateContext(describe("List VPN servers (admin)", "Every server with its plans, peers and last contact, 15 a page."))
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(AdminServer, "AdminVpnServerPage"))
  )
  .add(
    HttpApiEndpoint.get("getServer", "/admin/servers/:server")
      .annotateContext(describe("Get a VPN server (admin)", "One server with its plans, peer count and last contact."))
      .setPath(serverPath)
      .addSuccess(Ok(AdminServer, { identifier: "AdminVpnServerResponse" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("createServer", "/admin/servers")
      .annotateContext(describe("Add a VPN server (admin)", "A WireGuard or OpenVPN server and the plans that grant it; answers its node token once."))
      .setPayload(CreateServerPayload)
      .addSuccess(Ok(CreatedServer.annotations({ identifier: "VpnServerCreated" }), { identifier: "AdminVpnServerCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.put("updateServer", "/admin/servers/:server")
      .annotateContext(describe("Update a VPN server (admin)", "Changes the fields present."))
      .setPath(serverPath)
      .setPayload(UpdateServerPayload)
      .addSuccess(Ok(Server, { identifier: "AdminVpnServerUpdated" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("recordUsage", "/admin/services/:service/usage")
      .annotateContext(describe("Add usage to a service (admin)", "Adds bytes to a service's usage in a period (the current one by default); quota notices follow."))
      .setPath(Schema.Struct({ service: IdParam }))
      .setPayload(Body({
        bytes: integer("bytes", { min: 0, max: MAX_BYTES }),
        period: Schema.optional(string("period", { max: 7 }).pipe(
          Schema.filter((s) => parsePeriod(s) !== undefined, { message: () => "The period field must match the format Y-m." })
        ).annotations({ jsonSchema: { type: "string", pattern: "^\\s*\\d{4}-(0[1-9]|1[0-2])\\s*$", examples: ["2026-11"] } }))
      }))
      .addSuccess(Ok(UsageRecorded.annotations({ identifier: "VpnUsageRecorded" }), { identifier: "AdminVpnUsageRecorded", status: 201 }))
      .addError(NotFoundResponse)
      .addError(ValidationErrorResponse)
  )
  .middlewareEndpoints(AdminAuthentication)
{}
