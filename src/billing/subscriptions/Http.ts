import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { CurrentUser } from "../../http/Auth.ts"
import { renderDetail } from "../../services/Api.ts"
import { Cancellations } from "../Cancellations.ts"

const SubscriptionsHandlers = HttpApiBuilder.group(Api, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const cancellations = yield* Cancellations
    return handlers
      .handle("cancelService", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(cancellations.cancel(user.userId, path.service, payload.at), (v) => renderDetail(v.service, v.schedule))))
      .handle("resumeService", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(cancellations.resume(user.userId, path.service), (v) => renderDetail(v.service, v.schedule))))
  }))

export const SubscriptionsHttpLive = SubscriptionsHandlers.pipe(Layer.provide(Cancellations.Default))
