import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { FaqEntry } from "./Domain.ts"

const Row = Schema.typeSchema(FaqEntry)

/** FAQ entries ([D60]): a position and `is_public`; the public list is ordered by position. */
export class Faq extends Effect.Service<Faq>()("support/Faq", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const publicRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`select id, question, answer, position, is_public from faq_entries where is_public order by position, id`
    })
    const insert = SqlSchema.single({
      Request: Schema.Struct({
        question: Schema.String,
        answer: Schema.String,
        position: Schema.Int,
        isPublic: Schema.Boolean,
        now: Schema.DateFromSelf
      }),
      Result: Row,
      execute: (e) => sql`
        insert into faq_entries (question, answer, position, is_public, created_at)
        values (${e.question}, ${e.answer}, ${e.position}, ${e.isPublic}, ${e.now})
        returning id, question, answer, position, is_public`
    })
    return {
      publicEntries: Effect.orDie(publicRows(undefined)),
      create: (input: {
        readonly question: string
        readonly answer: string
        readonly position?: number | undefined
        readonly is_public?: boolean | undefined
      }) =>
        Effect.flatMap(clock.now, (now) =>
          insert({ question: input.question, answer: input.answer, position: input.position ?? 0, isPublic: input.is_public ?? true, now })
        ).pipe(Effect.orDie)
    } as const
  })
}) {}
