import { HttpApiGroup } from "@effect/platform"

/** Public catalogue: plans, cycles, promo validation ([D31]-[D33]). */
export class CatalogApi extends HttpApiGroup.make("catalog") {}

/** `/v1/admin/plans...`, `/v1/admin/promos` ([D70]). */
export class CatalogAdminApi extends HttpApiGroup.make("catalogAdmin") {}
