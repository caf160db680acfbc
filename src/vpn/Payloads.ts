import * as Schema from "effect/Schema"
import { Body, integer, label, oneOf, string } from "../platform/Fields.ts"
import { isIP } from "../platform/Ip.ts"
import { parseSubnet } from "./Configs.ts"
import { AgentStatus, PLATFORMS, ServerRecord } from "./Domain.ts"

/** The bodies the VPN endpoints take, and the admin's view of a server (moved out of Api.ts, which keeps the endpoints). */
// ---- payload fields ----------------------------------------------------------------------

const ipAddress = (field: string) =>
  string(field, { max: 45 })
    .pipe(Schema.filter((s) => isIP(s) !== 0, { message: () => `The ${label(field)} field must be a valid IP address.` }))
    .annotations({ jsonSchema: { type: "string", minLength: 2, maxLength: 45, pattern: "^[0-9a-fA-F:.]+$", examples: ["203.0.113.10"] } })

const subnet = string("subnet", { max: 18 })
  .pipe(
    Schema.filter((s) => parseSubnet(s) !== undefined, {
      message: () => "The subnet field must be an IPv4 network in CIDR notation between /8 and /30."
    })
  )
  .annotations({ jsonSchema: { type: "string", pattern: "^\\s*\\d{1,3}(\\.\\d{1,3}){3}/([89]|[12]\\d|30)\\s*$", examples: ["10.66.0.0/16"] } })

/** [D90]: an IPv6 network in CIDR notation, /48 to /112 (peers take the same host number in it). */
const subnet6 = string("subnet6", { max: 43 })
  .pipe(
    Schema.filter(
      (s) => {
        const match = /^([0-9a-fA-F:]+)\/(\d{1,3})$/.exec(s.trim())
        return match !== null && isIP(match[1]!) === 6 && Number(match[2]) >= 48 && Number(match[2]) <= 112
      },
      { message: () => "The subnet6 field must be an IPv6 network in CIDR notation between /48 and /112." }
    )
  )
  .annotations({ jsonSchema: { type: "string", pattern: "^\\s*[0-9a-fA-F:]+/(4[89]|[5-9]\\d|10\\d|11[0-2])\\s*$", examples: ["fd00:66::/64"] } })

/** [D92]: a server as admins see it. */
export const AdminServerResponse = Schema.Struct({
  ...ServerRecord.fields,
  last_seen_at: Schema.NullOr(Schema.DateFromString),
  peers: Schema.Int,
  plan_ids: Schema.Array(Schema.Int),
  /** [D105]: the node agent's push stream, applied revision and lag */
  agent: Schema.Struct({ ...AgentStatus.fields, last_seen_at: Schema.NullOr(Schema.DateFromString) }).annotations({ identifier: "NodeAgentStatus" })
}).annotations({ identifier: "AdminVpnServer" })

const dns = string("dns", { max: 255 })
  .pipe(
    Schema.filter((s) => s.split(",").every((part) => isIP(part.trim()) !== 0), {
      message: () => "The dns field must be a comma-separated list of IP addresses."
    })
  )
  .annotations({
    jsonSchema: { type: "string", minLength: 1, maxLength: 255, pattern: "^\\s*[0-9a-fA-F:.]+(\\s*,\\s*[0-9a-fA-F:.]+)*\\s*$", examples: ["1.1.1.1, 1.0.0.1"] }
  })

/** A WireGuard key: base64 of 32 bytes. */
const publicKey = string("public_key", { max: 44 }).pipe(
  Schema.filter((s) => /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(s), {
    message: () => "The public key field must be a base64 WireGuard key."
  })
)

const caCert = string("ca_cert", { max: 20_000 })
  .pipe(
    Schema.filter((s) => s.includes("-----BEGIN CERTIFICATE-----") && !/<\/?ca>/i.test(s), {
      message: () => "The ca cert field must be a PEM certificate."
    })
  )
  .annotations({
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

/** [D90]: a device's name (1-64) and platform. */
const deviceName = string("name", { max: 64 })
export const CreateDevicePayload = Body({ name: deviceName, platform: oneOf("platform", PLATFORMS) })
export const RenameDevicePayload = Body({ name: deviceName })
