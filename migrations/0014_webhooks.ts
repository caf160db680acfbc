import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D101]: the webhooks room's tables. An endpoint keeps its signing secret sealed with the
 * application key (we must sign with it, so it cannot be hashed) and its events as a JSON array.
 * A delivery is one event for one endpoint: its `event_id` is the body's `id`, stable across retries
 * and redeliveries; its body (sealed: it may carry a customer's e-mail) is kept so a redelivery sends
 * the same bytes' content. Each try is an attempt with its status code and latency. The sending
 * itself goes through the outbox of [D96] (channel `webhook`, ordered per endpoint).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table webhook_endpoints (
      id serial primary key,
      url text not null,
      description text,
      events jsonb not null,
      secret text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create table webhook_deliveries (
      id serial primary key,
      endpoint_id integer not null references webhook_endpoints (id) on delete cascade,
      event_id uuid not null,
      type text not null,
      body text not null,
      status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
      created_at timestamptz not null,
      delivered_at timestamptz
    );
    create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id);
    create table webhook_attempts (
      id serial primary key,
      delivery_id integer not null references webhook_deliveries (id) on delete cascade,
      attempted_at timestamptz not null,
      status_code integer,
      latency_ms integer not null,
      error text
    );
    create index webhook_attempts_delivery on webhook_attempts (delivery_id, id);
  `)
})
