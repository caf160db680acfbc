import { HttpApiGroup } from "@effect/platform"

/** The caller's invoices and orders; the payment webhook ([D35]-[D40]). */
export class BillingApi extends HttpApiGroup.make("billing") {}

/** `/v1/admin/users/{user}/invoices`, `/v1/admin/invoices/{invoice}/mark-paid` ([D70]). */
export class BillingAdminApi extends HttpApiGroup.make("billingAdmin") {}

/** HTML page outside `/v1`: `/pay/{uuid}` of the manual gateway ([D26], [D37]). */
export class BillingPagesApi extends HttpApiGroup.make("billingPages") {}
