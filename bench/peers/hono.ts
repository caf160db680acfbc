/** Hono on Bun over `Bun.SQL`: what a team picking a small router would write. */
import { Hono } from "hono"
import * as peer from "./common.ts"

const app = new Hono()
app.get("/v1/status", () => peer.status())
app.get("/v1/plans", () => peer.plans())
app.get("/v1/services/current", (c) => peer.currentService(c.req.header("authorization") ?? null))
app.get("/v1/invoices", (c) => peer.invoices(c.req.header("authorization") ?? null, c.req.query("page") ?? null))
app.get("/v1/servers/:server/wireguard", (c) => peer.wireguard(c.req.header("authorization") ?? null, c.req.param("server")))
app.post("/v1/auth/login", async (c) => peer.login(await c.req.json().catch(() => null)))
app.notFound(() => peer.notFound())

const server = Bun.serve({ port: peer.env.port, hostname: "127.0.0.1", fetch: app.fetch })
console.log(`hono on ${server.port}`)
