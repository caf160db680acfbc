/** The runtime's limit: `Bun.serve` routes over `Bun.SQL`, nothing in between. */
import * as peer from "./common.ts"

const server = Bun.serve({
  port: peer.env.port,
  hostname: "127.0.0.1",
  routes: {
    "/v1/status": { GET: () => peer.status() },
    "/v1/plans": { GET: () => peer.plans() },
    "/v1/services/current": { GET: (req) => peer.currentService(req.headers.get("authorization")) },
    "/v1/invoices": {
      GET: (req) => peer.invoices(req.headers.get("authorization"), new URL(req.url).searchParams.get("page"))
    },
    "/v1/servers/:server/wireguard": {
      GET: (req) => peer.wireguard(req.headers.get("authorization"), req.params.server)
    },
    "/v1/auth/login": { POST: async (req) => peer.login(await req.json().catch(() => null)) }
  },
  fetch: () => peer.notFound()
})
console.log(`raw Bun.serve + ${peer.driver} on ${server.port}`)
