import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const ServicesHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "services", (handlers) => handlers),
  HttpApiBuilder.group(Api, "servicesAdmin", (handlers) => handlers)
)
