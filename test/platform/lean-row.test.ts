import { describe, expect, test } from "bun:test"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { leanRow } from "../../src/platform/LeanRow.ts"

// Issue 27: a lean row schema accepts what the struct of the same fields accepts and refuses
// what it refuses (the full node list's statements decode thousands of rows through it).
const Row = leanRow("Row", { id: "int", key: "string", at: "date", held: "boolean", v6: "string?", n: "int?" })
const Struct = Schema.Struct({
  id: Schema.Int,
  key: Schema.String,
  at: Schema.DateFromSelf,
  held: Schema.Boolean,
  v6: Schema.NullOr(Schema.String),
  n: Schema.NullOr(Schema.Int)
})
const good = { id: 1, key: "k", at: new Date(0), held: false, v6: null, n: 3 }

describe("leanRow (issue 27)", () => {
  test("the same rows pass and fail as through the struct", () => {
    const cases: ReadonlyArray<unknown> = [
      good,
      { ...good, v6: "fd00::1", n: null },
      { ...good, extra: "passed through" },
      { ...good, id: 1.5 },
      { ...good, id: "1" },
      { ...good, id: 2 ** 53 },
      { ...good, key: null },
      { ...good, at: "1970-01-01" },
      { ...good, held: 0 },
      { ...good, v6: 6 },
      { ...good, n: "3" },
      { id: 1 },
      null,
      "row"
    ]
    for (const row of cases) {
      expect([row, Either.isRight(Schema.decodeUnknownEither(Row)(row))]).toEqual([row, Either.isRight(Schema.decodeUnknownEither(Struct)(row))])
    }
    expect(Schema.decodeUnknownSync(Schema.Array(Row))([good])).toEqual([good])
  })
})
