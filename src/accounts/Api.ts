import { HttpApiGroup } from "@effect/platform"

/** Authentication, the caller's user and account ([D20]-[D26]). Issue 3 fills this in. */
export class AccountsApi extends HttpApiGroup.make("accounts") {}

/** `/v1/admin/users...` ([D70]). */
export class AccountsAdminApi extends HttpApiGroup.make("accountsAdmin") {}

/** HTML pages outside `/v1` ([D26]): verify-email, reset-password. */
export class AccountsPagesApi extends HttpApiGroup.make("accountsPages") {}
