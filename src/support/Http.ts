import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const SupportHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "support", (handlers) => handlers),
  HttpApiBuilder.group(Api, "supportAdmin", (handlers) => handlers)
)
