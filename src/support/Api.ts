import { HttpApiGroup } from "@effect/platform"

/** Tickets and the public FAQ ([D60]). Issue 6 fills this in. */
export class SupportApi extends HttpApiGroup.make("support") {}

/** `/v1/admin/tickets/{ticket}/reply`, `/v1/admin/faq` ([D70]). */
export class SupportAdminApi extends HttpApiGroup.make("supportAdmin") {}
