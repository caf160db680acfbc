import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const VpnHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "vpn", (handlers) => handlers),
  HttpApiBuilder.group(Api, "node", (handlers) => handlers),
  HttpApiBuilder.group(Api, "vpnAdmin", (handlers) => handlers)
)
