import { useState } from "react"
import { useTranslation } from "react-i18next"
import { call } from "../shared/api.ts"
import { formatDateTime } from "../shared/format.ts"
import { Field, Form, useForm } from "../shared/forms.tsx"
import { usePaged } from "../shared/lists.tsx"
import { Panel, Status } from "../shared/ui.tsx"
import { ConsolePagedTable } from "./table.tsx"

/** The audit log, newest first. */
export const Audit = () => {
  const { t } = useTranslation()
  const audit = usePaged(["admin", "audit"], (page) => call("auditAdmin", "search", { urlParams: { page } }))
  return (
    <>
      <h1>{t("console.audit")}</h1>
      <ConsolePagedTable
        query={audit.query}
        onPage={audit.setPage}
        rowKey={(e) => e.id}
        columns={[
          [t("console.when"), (e) => formatDateTime(e.created_at)],
          [t("console.actor"), (e) => `${e.actor_id ?? "—"} (${e.actor_kind})`],
          [t("console.action"), (e) => e.action],
          [t("console.resource"), (e) => e.resource ?? "—"],
          [t("account.address"), (e) => e.ip ?? "—"]
        ]}
      />
    </>
  )
}

/** Webhook endpoints (the secret shown once at creation) and each one's deliveries. */
export const Webhooks = () => {
  const { t } = useTranslation()
  const [open, setOpen] = useState<number | undefined>(undefined)
  const hooks = usePaged(["admin", "webhooks"], (page) => call("webhooksAdmin", "listWebhooks", { urlParams: { page } }))
  const form = useForm({
    initial: { url: "", events: "invoice.paid" },
    submit: (v) => call("webhooksAdmin", "createWebhook", { payload: { url: v.url, events: v.events.split(",").map((e) => e.trim()) } as never }),
    onDone: () => form.reset(),
    invalidate: [["admin", "webhooks"]]
  })
  return (
    <>
      <h1>{t("console.webhooks")}</h1>
      <ConsolePagedTable
        query={hooks.query}
        onPage={hooks.setPage}
        rowKey={(w) => w.id}
        columns={[
          [
            "URL",
            (w) => (
              <button type="button" className="outline" onClick={() => setOpen(w.id)}>
                {w.url}
              </button>
            )
          ],
          [t("console.events"), (w) => w.events.join(", ")],
          [t("console.description"), (w) => w.description ?? "—"]
        ]}
      />
      {form.result !== undefined && (
        <p role="status">
          {t("console.webhookSecret")} <code>{form.result.secret}</code>
        </p>
      )}
      <Panel title={t("console.newWebhook")}>
        <Form form={form} submit={t("console.create")}>
          <Field {...form.field("url")} type="url" label="URL" />
          <Field {...form.field("events")} label={t("console.events")} />
        </Form>
      </Panel>
      {open !== undefined && <Deliveries id={open} />}
    </>
  )
}

const Deliveries = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const deliveries = usePaged(["admin", "deliveries", id], (page) => call("webhooksAdmin", "listWebhookDeliveries", { path: { id }, urlParams: { page } }))
  return (
    <Panel title={t("console.deliveries")}>
      <ConsolePagedTable
        query={deliveries.query}
        onPage={deliveries.setPage}
        rowKey={(d) => d.id}
        columns={[
          [t("console.events"), (d) => d.type],
          [t("console.status"), (d) => <Status value={d.status} />],
          [t("console.attempts"), (d) => String(d.attempts.length)],
          [t("console.when"), (d) => formatDateTime(d.created_at)]
        ]}
      />
    </Panel>
  )
}

/** The mails and messages sent, or waiting, and their attempts. */
export const Outbox = () => {
  const { t } = useTranslation()
  const outbox = usePaged(["admin", "outbox"], (page) => call("outboxAdmin", "listOutbox", { urlParams: { page } }))
  return (
    <>
      <h1>{t("console.outbox")}</h1>
      <ConsolePagedTable
        query={outbox.query}
        onPage={outbox.setPage}
        rowKey={(m) => m.id}
        columns={[
          [t("console.when"), (m) => formatDateTime(m.created_at)],
          [t("console.kind"), (m) => m.kind],
          [t("console.recipient"), (m) => m.recipient],
          [t("support.subject"), (m) => m.subject],
          [t("console.status"), (m) => <Status value={m.status} />],
          [t("console.attempts"), (m) => String(m.attempts)]
        ]}
      />
    </>
  )
}
