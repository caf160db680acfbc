import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/** The VPN room's own failures ([D51]-[D54]), each with its status and message. */

const message = (fallback: string) => Schema.optionalWith(Schema.String, { default: () => fallback })

/** [D51]: the current service's plan does not grant the server (or there is no current service). */
export class PlanExcludesServer extends Schema.TaggedError<PlanExcludesServer>()(
  "PlanExcludesServer",
  {
    message: message("Your plan does not include this server.")
  },
  HttpApiSchema.annotations({ status: 403 })
) {}

/** [D52]: the current service grants the server but is suspended. */
export class ServiceSuspended extends Schema.TaggedError<ServiceSuspended>()(
  "ServiceSuspended",
  {
    message: message("Service suspended.")
  },
  HttpApiSchema.annotations({ status: 423 })
) {}

/** [D52]: this month's usage has reached the plan's limit. */
export class BandwidthExceeded extends Schema.TaggedError<BandwidthExceeded>()(
  "BandwidthExceeded",
  {
    message: message("Bandwidth limit exceeded.")
  },
  HttpApiSchema.annotations({ status: 423 })
) {}

/** Every address of the server's subnet is taken: an operator must widen it ([D52]). */
export class SubnetFull extends Schema.TaggedError<SubnetFull>()(
  "SubnetFull",
  {
    message: message("No free address is left on this server.")
  },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** A WireGuard server without its public key cannot be configured against. */
export class ServerNotConfigured extends Schema.TaggedError<ServerNotConfigured>()(
  "ServerNotConfigured",
  {
    message: message("This server is not configured yet.")
  },
  HttpApiSchema.annotations({ status: 503 })
) {}
