import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AppClock } from "../platform/Clock.ts"

export interface FaqEntryRow {
  readonly id: number
  readonly question: string
  readonly answer: string
  readonly position: number
  readonly is_public: boolean
}

/** FAQ entries ([D60]): a position and `is_public`; the public list is ordered by position. */
export class Faq extends Context.Tag("Faq")<Faq, {
  readonly publicEntries: Effect.Effect<ReadonlyArray<FaqEntryRow>>
  readonly create: (input: {
    readonly question: string
    readonly answer: string
    readonly position: number
    readonly isPublic: boolean
  }) => Effect.Effect<FaqEntryRow>
}>() {
  static readonly Live = Layer.effect(
    Faq,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      return {
        publicEntries: sql<FaqEntryRow>`
          select id, question, answer, position, is_public from faq_entries
          where is_public order by position, id`.pipe(Effect.orDie),
        create: (input) =>
          Effect.gen(function*() {
            const now = yield* clock.now
            const [row] = yield* sql<FaqEntryRow>`
              insert into faq_entries (question, answer, position, is_public, created_at)
              values (${input.question}, ${input.answer}, ${input.position}, ${input.isPublic}, ${now})
              returning id, question, answer, position, is_public`
            return row!
          }).pipe(Effect.orDie)
      }
    })
  )
}
