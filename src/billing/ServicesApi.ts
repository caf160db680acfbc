import { HttpApiGroup } from "@effect/platform"

/** The caller's services ([D34]): list, current, one, auto-renew. */
export class ServicesApi extends HttpApiGroup.make("services") {}

/** `/v1/admin/users/{user}/services`, `/v1/admin/services/{service}` ([D70]). */
export class ServicesAdminApi extends HttpApiGroup.make("servicesAdmin") {}
