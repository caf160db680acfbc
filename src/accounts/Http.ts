import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { Api } from "../Api.ts"

export const AccountsHttpLive = Layer.mergeAll(
  HttpApiBuilder.group(Api, "accounts", (handlers) => handlers),
  HttpApiBuilder.group(Api, "accountsAdmin", (handlers) => handlers),
  HttpApiBuilder.group(Api, "accountsPages", (handlers) => handlers)
)
