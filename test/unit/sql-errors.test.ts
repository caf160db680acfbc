import { expect, test } from "bun:test"
import { SqlError } from "@effect/sql/SqlError"
import {
  isConnectionLoss,
  isDeadlock,
  isLossWithoutEffect,
  isReadOnlyTransaction,
  isSerializationFailure,
  isTransientConflict,
  isUniqueViolation,
  isUnstorableInput,
  sqlState,
  sqlStateOf
} from "../../src/platform/SqlErrors.ts"

// Issue 35: the named predicates of `platform/SqlErrors.ts`, the one reader of SQLSTATEs.
const failed = (code?: string) => new SqlError({ cause: code === undefined ? new Error("gone") : Object.assign(new Error("x"), { code }) })

test("each predicate names its SQLSTATE, and only a SqlError's", () => {
  expect(isUniqueViolation(failed("23505"))).toBe(true)
  expect(isUniqueViolation(failed("23503"))).toBe(false)
  expect(isUniqueViolation({ cause: { code: "23505" } })).toBe(false)
  expect(isSerializationFailure(failed("40001"))).toBe(true)
  expect(isDeadlock(failed("40P01"))).toBe(true)
  expect(isTransientConflict(failed("40001")) && isTransientConflict(failed("40P01"))).toBe(true)
  expect(isTransientConflict(failed("23505"))).toBe(false)
  expect(isReadOnlyTransaction(failed("25006"))).toBe(true)
  expect(isUnstorableInput(failed("22P05"))).toBe(true)
  expect(isUnstorableInput(failed("23505"))).toBe(false)
})

test("a SQLSTATE is told from a driver's or a socket's own code", () => {
  expect(sqlState(failed("40P01"))).toBe("40P01")
  expect(sqlState(failed("ECONNRESET"))).toBeUndefined()
  expect(sqlStateOf({ code: "EPIPE" })).toBeUndefined()
  expect(sqlStateOf({ code: "XX000" })).toBe("XX000")
  expect(sqlStateOf(null)).toBeUndefined()
})

test("connection losses: the ones that never reached the database are told apart", () => {
  for (const code of ["08006", "57P01", "53300", "25006", "ECONNRESET", "EPIPE", "ERR_POSTGRES_CONNECTION_CLOSED"]) {
    expect(isConnectionLoss(failed(code))).toBe(true)
  }
  expect(isConnectionLoss(failed())).toBe(true)
  expect(isConnectionLoss(failed("23505"))).toBe(false)
  for (const code of ["57P03", "53300", "25006", "ECONNREFUSED", "ERR_POSTGRES_CONNECTION_REFUSED"]) {
    expect(isLossWithoutEffect(failed(code))).toBe(true)
  }
  expect(isLossWithoutEffect(failed("08006"))).toBe(false)
  expect(isLossWithoutEffect(failed("ECONNRESET"))).toBe(false)
})
