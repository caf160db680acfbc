import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { AdminAuthentication, Authentication } from "../http/Middleware.ts"
import { Confirmation, Ok, OkMessage, OkPage } from "../http/Envelope.ts"
import { BusinessRuleViolationResponse, errorEnvelope, NotFoundResponse, ValidationErrorResponse } from "../http/Errors.ts"
import { Body, IdParam, integer, string } from "../platform/Fields.ts"
import { BandwidthSummary, BandwidthUsage, HistoryEntry, MAX_BYTES, parsePeriod } from "./Bandwidth.ts"
import { BandwidthExceeded, PlanExcludesServer, ServerNotConfigured, ServiceSuspended, SubnetFull } from "./Errors.ts"
import { PageParam } from "../platform/Page.ts"
import {
  AdminDevice,
  CreatedServer,
  Device,
  DeviceDetail,
  DeviceSeen,
  DeviceWithCredentials,
  Server,
  SubscriptionFetch,
  UsageRecorded,
  VpnCredentials
} from "./Domain.ts"
import { AdminServerResponse, CreateServerPayload, UpdateServerPayload, CreateDevicePayload, RenameDevicePayload } from "./Payloads.ts"

// ---- resources ---------------------------------------------------------------------------

/** The spec's VPN server, exactly its fields ([D50]). */
export const ServerResponse = Server.annotations({ identifier: "VpnServer" })

const Credentials = VpnCredentials.annotations({ identifier: "VpnCredentials" })

export const DeviceResponse = Device.annotations({ identifier: "Device" })
/** [D107]: a device with its last handshake, whether it is online and its bytes this period; [D122] its link */
const SeenDevice = DeviceSeen.annotations({ identifier: "DeviceWithActivity" })
const DetailedDevice = DeviceDetail.annotations({ identifier: "DeviceDetail" })
/** [D122]: one answered fetch of a device's subscription link */
const Fetch = SubscriptionFetch.annotations({ identifier: "SubscriptionFetch" })
const NewDevice = DeviceWithCredentials.annotations({ identifier: "DeviceWithCredentials" })

export { AdminServerResponse, CreateServerPayload, UpdateServerPayload, CreateDevicePayload, RenameDevicePayload }

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
  .add(
    HttpApiEndpoint.get("listServers", "/servers")
      .annotateContext(describe("List your VPN servers", "The servers your current plan grants (empty without a current service)."))
      .addSuccess(Ok(Schema.Array(ServerResponse), { identifier: "VpnServerList" }))
  )
  .add(
    HttpApiEndpoint.get("getServer", "/servers/:server")
      .annotateContext(describe("Get a VPN server", "One server; a server your plan does not include is 403."))
      .setPath(serverPath)
      .addSuccess(Ok(ServerResponse, { identifier: "VpnServerResponse" }))
      .addError(NotFoundResponse)
      .addError(errorEnvelope(PlanExcludesServer))
  )
  .add(
    download("wireguard", "/servers/:server/wireguard")
      .annotateContext(
        describe(
          "Download a WireGuard config",
          "A `.conf` for your account's default device on this server (made on first download). 423 while the service is suspended or over its bandwidth quota; 403 if your plan does not include the server."
        )
      )
      .addError(errorEnvelope(SubnetFull))
      .addError(errorEnvelope(ServerNotConfigured))
  )
  .add(
    download("openvpn", "/servers/:server/openvpn").annotateContext(
      describe(
        "Download an OpenVPN profile",
        "An `.ovpn` profile for this server; sign in with the credentials of `GET /v1/account/vpn-credentials`. Same 403/404/423 rules as WireGuard."
      )
    )
  )
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
  .add(
    HttpApiEndpoint.post("revokeVpnAccess", "/account/vpn/revoke-all")
      .annotateContext(
        describe("Revoke all VPN access", "Every device key and the OpenVPN password are replaced at once; every device must download its config again.")
      )
      .addSuccess(Confirmation("VpnAccessRevoked"))
  )
  .add(
    HttpApiEndpoint.get("listDevices", "/devices")
      .annotateContext(describe("List your devices", "Your devices (each with its own WireGuard key), with their addresses per server."))
      .addSuccess(Ok(Schema.Array(SeenDevice), { identifier: "DeviceList" }))
  )
  .add(
    HttpApiEndpoint.get("getDevice", "/devices/:device")
      .annotateContext(
        describe("One of your devices", "The device with its last handshake, whether it is online and its bytes this period, per server [D107].")
      )
      .setPath(devicePath)
      .addSuccess(Ok(DetailedDevice, { identifier: "DeviceDetailResponse" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("rotateSubscription", "/devices/:device/subscription/rotate")
      .annotateContext(
        describe(
          "Renew a device's subscription link",
          "A new `subscription_url` for the device; the old link answers 404 at once. The device's keys stay as they are."
        )
      )
      .setPath(devicePath)
      .addSuccess(Ok(DetailedDevice, { identifier: "SubscriptionRotated" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.get("subscriptionFetches", "/devices/:device/subscription/fetches")
      .annotateContext(
        describe(
          "A device's subscription link fetches",
          "The last 50 answered fetches of the device's link, newest first: when, from which address, with which app. An address you do not know is a sign the link was shared: renew it."
        )
      )
      .setPath(devicePath)
      .addSuccess(Ok(Schema.Array(Fetch), { identifier: "SubscriptionFetchList" }))
      .addError(NotFoundResponse)
  )
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
      .addSuccess(Ok(DeviceResponse, { identifier: "DeviceRenamed" }))
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
  .add(
    deviceDownload("deviceOpenvpn", "/devices/:device/openvpn/:server").annotateContext(
      describe("Download an OpenVPN profile for a device", "The `.ovpn` profile for this server.")
    )
  )
  .add(
    HttpApiEndpoint.get("serviceBandwidth", "/services/:service/bandwidth")
      .annotateContext(describe("Get a service's bandwidth", "Used bytes, limit and percentage of one of your services in its current quota period."))
      .setPath(Schema.Struct({ service: IdParam }))
      .addSuccess(Ok(BandwidthUsage, { identifier: "ServiceBandwidthResponse" }))
  )
  .add(
    HttpApiEndpoint.get("currentBandwidth", "/bandwidth/current")
      .annotateContext(describe("Get your current bandwidth", "Used bytes, limit, percentage and reset date of your current service (404 without one)."))
      .addSuccess(Ok(BandwidthUsage, { identifier: "CurrentBandwidthResponse" }))
  )
  .add(
    HttpApiEndpoint.get("bandwidthHistory", "/bandwidth/history")
      .annotateContext(describe("Get your bandwidth history", "Your current service's usage by period, newest first, at most 12 entries."))
      .addSuccess(Ok(Schema.Array(HistoryEntry), { identifier: "BandwidthHistoryResponse" }))
  )
  .add(
    HttpApiEndpoint.get("bandwidthSummary", "/bandwidth/summary")
      .annotateContext(describe("Get your bandwidth summary", "Totals over your current service's periods."))
      .addSuccess(Ok(BandwidthSummary, { identifier: "BandwidthSummaryResponse" }))
  )
  .middlewareEndpoints(Authentication) {}

/** `/v1/admin/servers...` and usage recording ([D70]). */
export class VpnAdminApi extends HttpApiGroup.make("vpnAdmin")
  .annotate(OpenApi.Description, "VPN servers and usage, for admins.")
  .add(
    HttpApiEndpoint.get("listServers", "/admin/servers")
      .annotateContext(describe("List VPN servers (admin)", "Every server with its plans, peers and last contact, 15 a page."))
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(AdminServerResponse, "AdminVpnServerPage"))
  )
  .add(
    HttpApiEndpoint.get("getServer", "/admin/servers/:server")
      .annotateContext(describe("Get a VPN server (admin)", "One server with its plans, peer count and last contact."))
      .setPath(serverPath)
      .addSuccess(Ok(AdminServerResponse, { identifier: "AdminVpnServerResponse" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.get("userDevices", "/admin/users/:user/devices")
      .annotateContext(
        describe(
          "A user's devices (admin)",
          "The user's devices with their last handshake, whether they are online, their bytes this period [D107] and the last 50 fetches of each device's subscription link [D122]."
        )
      )
      .setPath(Schema.Struct({ user: IdParam }))
      .addSuccess(Ok(Schema.Array(AdminDevice.annotations({ identifier: "AdminDevice" })), { identifier: "AdminUserDeviceList" }))
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
      .addSuccess(Ok(ServerResponse, { identifier: "AdminVpnServerUpdated" }))
      .addError(NotFoundResponse)
  )
  .add(
    HttpApiEndpoint.post("recordUsage", "/admin/services/:service/usage")
      .annotateContext(
        describe("Add usage to a service (admin)", "Adds bytes to a service's usage in a period (the current one by default); quota notices follow.")
      )
      .setPath(Schema.Struct({ service: IdParam }))
      .setPayload(
        Body({
          bytes: integer("bytes", { min: 0, max: MAX_BYTES }),
          period: Schema.optional(
            string("period", { max: 7 })
              .pipe(Schema.filter((s) => parsePeriod(s) !== undefined, { message: () => "The period field must match the format Y-m." }))
              .annotations({ jsonSchema: { type: "string", pattern: "^\\s*\\d{4}-(0[1-9]|1[0-2])\\s*$", examples: ["2026-11"] } })
          )
        })
      )
      .addSuccess(Ok(UsageRecorded.annotations({ identifier: "VpnUsageRecorded" }), { identifier: "AdminVpnUsageRecorded", status: 201 }))
      .addError(NotFoundResponse)
      .addError(ValidationErrorResponse)
  )
  .middlewareEndpoints(AdminAuthentication) {}

// [D122]: the subscription link's group lives in `SubscriptionApi.ts`
export { SubscriptionLinkApi } from "./SubscriptionApi.ts"
