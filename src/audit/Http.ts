import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../Api.ts"
import { AdminWrites } from "../http/AdminWrites.ts"
import { CurrentUser } from "../http/Auth.ts"
import { AuditLog } from "./AuditLog.ts"

const AuditGroupLive = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.map(AuditLog, (audit) =>
    handlers.handle("activity", ({ urlParams }) => Effect.flatMap(CurrentUser, (caller) => audit.activityOf(caller.userId, urlParams.page ?? 1)))
  )
)

const AuditAdminGroupLive = HttpApiBuilder.group(Api, "auditAdmin", (handlers) =>
  Effect.map(AuditLog, (audit) =>
    handlers.handle("search", ({ urlParams }) => {
      const { page, ...filters } = urlParams
      return audit.search(filters, page ?? 1)
    })
  )
)

/** Every handler of the audit room; its service comes from `DomainLive`. */
export const AuditHttpLive = Layer.mergeAll(AuditGroupLive, AuditAdminGroupLive)

/** The HTTP layer appends every admin write here ([D100]). */
export const AdminWritesLive = Layer.effect(
  AdminWrites,
  Effect.map(AuditLog, (audit) =>
    AdminWrites.of({
      record: (write) => audit.record({ action: write.action, actorId: write.actorId, actorKind: write.actorKind, resource: write.resource, subjectId: null })
    })
  )
)
