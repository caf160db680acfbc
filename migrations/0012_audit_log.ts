import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D100] The audit room's append-only log: every admin write and every security event of [D99].
 * No foreign keys: a row outlives the user it names. A trigger refuses UPDATE and DELETE, so
 * not even a bug of the application can rewrite history (TRUNCATE, an operator's act, is not
 * refused).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table audit_log (
      id bigint generated always as identity primary key,
      created_at timestamptz not null,
      actor_id integer,
      actor_kind text not null check (actor_kind in ('token', 'api_key', 'password', 'none')),
      action text not null,
      resource text,
      subject_id integer,
      ip text,
      user_agent text
    );
    create index audit_log_subject on audit_log (subject_id, id desc) where subject_id is not null;
    create index audit_log_actor on audit_log (actor_id, id desc);
    create index audit_log_created on audit_log (created_at desc, id desc);

    create function audit_log_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_log is append-only';
    end
    $$;
    create trigger audit_log_append_only before update or delete on audit_log
      for each row execute function audit_log_append_only();
  `)
})
