import { HttpApiGroup } from "@effect/platform"

/** Servers, config downloads, VPN credentials, bandwidth ([D50]-[D55]). Issue 5 fills this in. */
export class VpnApi extends HttpApiGroup.make("vpn") {}

/** The node API of [D54], behind node tokens. */
export class NodeApi extends HttpApiGroup.make("node") {}

/** `/v1/admin/servers...` and usage recording ([D70]). */
export class VpnAdminApi extends HttpApiGroup.make("vpnAdmin") {}
