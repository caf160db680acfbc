import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D96]: the durable outbox of the outbox room. A row is written in the transaction of what caused
 * it (so it exists iff its cause committed); `dedupe_key` is unique, so an occasion is written at
 * most once. `payload` is sealed with the application key (mail bodies carry tokens); `kind`,
 * `recipient` and `subject` stay readable for the admins' list. A sender claims due rows (`SKIP
 * LOCKED`, a lease in `next_attempt_at`), so two instances never send one row at once; rows sharing
 * an `ordering_key` go out one after another ([D101]).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table outbox (
      id serial primary key,
      channel text not null default 'mail',
      kind text not null,
      dedupe_key text not null unique,
      ordering_key text,
      recipient text not null,
      subject text not null default '',
      payload text not null,
      status text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
      attempts integer not null default 0,
      last_error text,
      created_at timestamptz not null,
      next_attempt_at timestamptz not null,
      sent_at timestamptz,
      updated_at timestamptz not null
    );
    create index outbox_due on outbox (next_attempt_at, id) where status = 'pending';
    create index outbox_ordering on outbox (ordering_key, id) where status = 'pending' and ordering_key is not null;
    create index outbox_status on outbox (status, id);
    create index outbox_sent_at on outbox (sent_at) where status = 'sent';
  `)
})
