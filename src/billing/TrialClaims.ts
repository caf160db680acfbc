import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { sha256Hex } from "../platform/Crypto.ts"
import { AppClock } from "../platform/Clock.ts"
import { memoryTrialClaims } from "./BillingMemory.ts"

/**
 * [D35] (rev. 2): a free trial is given once per e-mail address ever. The claim outlives the
 * account: it is kept as a hash of the lower-cased address, not as a reference to the user.
 */
export class TrialClaims extends Effect.Service<TrialClaims>()("billing/TrialClaims", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const claim = SqlSchema.findOne({
      Request: Schema.Struct({ hash: Schema.String, now: Schema.DateFromSelf }),
      Result: Schema.Struct({ email_hash: Schema.String }),
      execute: ({ hash, now }) => sql`
        insert into trial_claims (email_hash, claimed_at) values (${hash}, ${now})
        on conflict (email_hash) do nothing returning email_hash`
    })
    return {
      /** true the first time for an address (in the order's transaction), false ever after */
      claim: (email: string) =>
        Effect.flatMap(clock.now, (now) => claim({ hash: sha256Hex(email.trim().toLowerCase()), now })).pipe(
          Effect.map((row) => row._tag === "Some"),
          Effect.orDie
        )
    } as const
  })
}) {
  /** issue 35: the claimed addresses in memory */
  static readonly Test: Layer.Layer<TrialClaims> = Layer.sync(TrialClaims, () => TrialClaims.make(memoryTrialClaims()))
}
