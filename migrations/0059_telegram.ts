import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D125] Telegram.
 * - `telegram_links`: the chat linked to a user. One chat per user (the key), one user per chat
 *   (unique `telegram_id`: a private chat's id is its Telegram user's id, which the Login Widget and
 *   the Mini App name). Gone with the user.
 * - `telegram_link_codes`: the one-time codes of `t.me/<bot>?start=<code>` links, stored as SHA-256
 *   hashes, 10 minutes each.
 * - `telegram_sign_ins`: the replay store of sign-in with Telegram: one row per signed data set (by
 *   the hash Telegram gave it), kept until the data set is stale anyway.
 * - `user_settings.telegram_notifications`: null until the user sets it (then: on while linked).
 * - `outbox.in_flight_at`: set while a message of an at-most-once channel (Telegram) is being sent;
 *   a row claimed again with it set was cut off mid-send, and is given up rather than sent twice.
 * - `outbox_pace`: the next free sending slot of a rate-limited channel, shared by every instance
 *   (Telegram: 25 messages a second in all).
 * - `audit_log.actor_kind` gains `telegram` (a sign-in with Telegram).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table telegram_links (
      user_id integer primary key references users (id) on delete cascade,
      telegram_id text not null unique check (telegram_id ~ '^-?[0-9]{1,20}$'),
      username text,
      linked_at timestamptz not null
    );

    create table telegram_link_codes (
      code_hash text primary key,
      user_id integer not null references users (id) on delete cascade,
      expires_at timestamptz not null,
      created_at timestamptz not null
    );
    create index telegram_link_codes_user on telegram_link_codes (user_id);
    create index telegram_link_codes_expiry on telegram_link_codes (expires_at);

    create table telegram_sign_ins (
      digest text primary key,
      user_id integer references users (id) on delete cascade,
      expires_at timestamptz not null
    );
    create index telegram_sign_ins_expiry on telegram_sign_ins (expires_at);

    alter table user_settings add column telegram_notifications boolean;

    alter table outbox add column in_flight_at timestamptz;

    create table outbox_pace (
      channel text primary key,
      next_at timestamptz not null
    );

    alter table audit_log drop constraint if exists audit_log_actor_kind_check;
    alter table audit_log add constraint audit_log_actor_kind_check
      check (actor_kind in ('token', 'api_key', 'password', 'none', 'telegram'));
  `)
})
