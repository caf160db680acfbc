import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as AST from "effect/SchemaAST"
import type { FieldErrors } from "../platform/Errors.ts"
import { label, requiredMessage } from "../platform/Fields.ts"

/**
 * The `errors` map of [D12] from a decode failure, read from the schema, not from formatted
 * text: a field schema names its rule with a `message` annotation (`src/platform/Fields.ts`
 * writes Laravel's wording there) or fails with its own message (a filter or a transformation
 * that returns one); where none does, the kind of schema that failed says what was expected.
 */

interface Leaf {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** The message a schema's own annotation gives this issue, as the formatter would pick it. */
const annotated = (issue: ParseResult.ParseIssue): string | undefined => {
  if (issue._tag === "Pointer" || issue._tag === "Unexpected") return undefined
  const annotation = AST.getMessageAnnotation(issue.ast)
  if (annotation._tag === "None") return undefined
  const result = annotation.value(issue)
  if (Effect.isEffect(result)) return undefined
  const { message, override } = typeof result === "string" ? { message: result, override: false } : result
  if (typeof message !== "string") return undefined
  // a refinement's or a transformation's message names its own rule, not its input's type
  const inner =
    !override &&
    (issue._tag === "Composite" ||
      (issue._tag === "Refinement" && issue.kind === "From") ||
      (issue._tag === "Transformation" && issue.kind !== "Transformation"))
  if (!inner) return message
  return issue._tag === "Refinement" || issue._tag === "Transformation" ? annotated(issue.issue) : undefined
}

/** An optional or nullable field is a union with `undefined`/`null`: that member is not the rule. */
const isAlternative = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" && (issue.ast._tag === "UndefinedKeyword" || (issue.ast._tag === "Literal" && issue.ast.literal === null))

/** What a schema without a message expected, in Laravel's words. */
const expectation = (field: string, ast: AST.AST): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return `The ${label(field)} field must be a string.`
    case "NumberKeyword":
      return `The ${label(field)} field must be a number.`
    case "BooleanKeyword":
      return `The ${label(field)} field must be true or false.`
    case "TupleType":
      return `The ${label(field)} field must be an array.`
    default:
      return `The ${label(field)} field is invalid.`
  }
}

const leaves = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>): ReadonlyArray<Leaf> => {
  const field = path.length === 0 ? "body" : String(path[0])
  if (issue._tag === "Missing") return [{ path, message: requiredMessage(field) }]
  const own = annotated(issue)
  if (own !== undefined) return [{ path, message: own }]
  switch (issue._tag) {
    case "Pointer":
      return leaves(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])])
    case "Composite": {
      const list = Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]
      const named = AST.isUnion(issue.ast) ? list.filter((member) => !isAlternative(member)) : list
      return (named.length > 0 ? named : list).flatMap((member) => leaves(member, path))
    }
    case "Refinement":
    case "Transformation":
      return leaves(issue.issue, path)
    case "Type":
      // a transformation or a filter of the schema may fail with its own message
      return [{ path, message: issue.message ?? (path.length === 0 ? "The body must be a JSON object." : expectation(field, issue.ast)) }]
    case "Unexpected":
    case "Forbidden":
      return [{ path, message: `The ${label(field)} field is invalid.` }]
  }
}

/** Each offending field (dotted when nested) with its messages, in the order found. */
export const fieldErrors = (issue: ParseResult.ParseIssue): FieldErrors => {
  const errors: Record<string, Array<string>> = {}
  for (const leaf of leaves(issue, [])) {
    const key = leaf.path.length === 0 ? "body" : leaf.path.map(String).join(".")
    const list = (errors[key] ??= [])
    if (!list.includes(leaf.message)) list.push(leaf.message)
  }
  return errors
}
