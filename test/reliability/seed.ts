import { sha256Hex } from "../../src/platform/Crypto.ts"
import type { TestApp } from "../support/app.ts"

/** A small world for the suites: a user with a service, an admin, a server with a node token. */
export const seedFuzzData = async (app: TestApp) => {
  const user = await app.createUser({ email: "fuzz-user@example.com" })
  const admin = await app.createUser({ email: "fuzz-admin@example.com", role: "admin" })
  const node = "node_" + "n".repeat(40)
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', 'Basic plan', 100, 0), ('Unlimited', 'No cap', 0, 7)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '9.99', 'USD'), (1, 'Yearly', 365, '99.00', 'USD'), (2, 'Monthly', 30, '14.99', 'USD')`
  await app.sql`insert into promo_codes (code, type, value, max_uses) values ('SAVE10', 'percentage', 10, 100)`
  await app.sql`insert into servers (name, country, city, protocol, ip, port, public_key, node_token_hash, ca_cert)
    values ('Amsterdam 1', 'NL', 'Amsterdam', 'wireguard', '198.51.100.10', 51820, 'x1QmZ3bBR6dHqQ4k3rHcA1FqJ1cB0wzZ2yQy8V8h0mE=', ${sha256Hex(node)}, null),
           ('Paris 1', 'FR', 'Paris', 'openvpn', '198.51.100.11', 1194, null, ${sha256Hex("other-node-token-xxxxxxxxxxxxxxxxxxxxxxx")}, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----')`
  await app.sql`insert into server_plans (server_id, plan_id) values (1, 1), (2, 1)`
  const now = app.clock.get()
  const expires = new Date(now.getTime() + 30 * 86_400_000)
  await app.sql`insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at) values (${user.id}, 1, 1, 'active', ${now}, ${expires})`
  await app.sql`insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, due_date, paid_at, transaction_id)
    values (${user.id}, 1, 1, 1, '9.99', 'USD', 'pending', ${expires}, null, null),
           (${user.id}, 1, 1, 1, '9.99', 'USD', 'paid', ${expires}, ${now}, 'tx-seed')`
  await app.sql`insert into tickets (user_id, subject) values (${user.id}, 'Help')`
  await app.sql`insert into ticket_replies (ticket_id, author_id, message) values (1, ${user.id}, 'It does not connect')`
  await app.sql`insert into faq_entries (question, answer, position) values ('What is a VPN?', 'A tunnel.', 1)`
  return { user: user.token, admin: admin.token, node, userId: user.id, adminId: admin.id }
}
