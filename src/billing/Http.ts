import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const BillingHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "billing", (handlers) => handlers),
  HttpApiBuilder.group(Api, "billingAdmin", (handlers) => handlers),
  HttpApiBuilder.group(Api, "billingPages", (handlers) => handlers)
)
