import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const CatalogHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "catalog", (handlers) => handlers),
  HttpApiBuilder.group(Api, "catalogAdmin", (handlers) => handlers)
)
