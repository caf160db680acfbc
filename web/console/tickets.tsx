import { useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { call } from "../shared/api.ts"
import { formatDateTime } from "../shared/format.ts"
import { Field, Form, useForm } from "../shared/forms.tsx"
import { StatusFilter, usePaged } from "../shared/lists.tsx"
import { Loaded, Status } from "../shared/ui.tsx"
import { ConsolePagedTable } from "./table.tsx"

/** The ticket queue; a ticket with its replies and the staff reply form. */
export const Tickets = () => {
  const { t } = useTranslation()
  const [open, setOpen] = useState<number | undefined>(undefined)
  const tickets = usePaged(
    ["admin", "tickets"],
    (page, status) => call("supportConsole", "listTickets", { urlParams: { status: status === "" ? undefined : (status as "open"), page } }),
    "open"
  )
  return (
    <>
      <h1>{t("console.tickets")}</h1>
      <StatusFilter value={tickets.filter} onChange={tickets.setFilter} statuses={["open", "closed", ""]} />
      <ConsolePagedTable
        query={tickets.query}
        onPage={tickets.setPage}
        rowKey={(tk) => tk.id}
        columns={[
          [
            t("support.subject"),
            (tk) => (
              <button type="button" className="outline" onClick={() => setOpen(tk.id)}>
                {tk.subject}
              </button>
            )
          ],
          [t("console.user"), (tk) => <Link href={`/users/${tk.user_id}`}>{tk.user_id}</Link>],
          [t("support.status"), (tk) => <Status value={tk.status} />],
          [t("support.lastReply"), (tk) => formatDateTime(tk.last_reply_at)]
        ]}
      />
      {open !== undefined && <StaffTicket id={open} />}
    </>
  )
}

const StaffTicket = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const ticket = useQuery({ queryKey: ["admin", "ticket", id], queryFn: () => call("supportConsole", "getTicket", { path: { ticket: id } }) })
  const form = useForm({
    initial: { message: "" },
    submit: (v) => call("supportAdmin", "staffReply", { path: { ticket: id }, payload: v }),
    onDone: () => form.reset(),
    invalidate: [
      ["admin", "ticket", id],
      ["admin", "tickets"]
    ]
  })
  return (
    <Loaded query={ticket}>
      {(tk) => (
        <article>
          <header>
            <h2>{tk.subject}</h2>
          </header>
          <ol className="replies">
            {tk.replies.map((r) => (
              <li key={r.id} className={r.is_admin ? "staff" : "mine"}>
                <p>
                  <small>
                    {r.is_admin ? t("support.staff") : t("console.customer")} · {formatDateTime(r.created_at)}
                  </small>
                </p>
                <p>{r.message}</p>
              </li>
            ))}
          </ol>
          <Form form={form} submit={t("support.send")}>
            <Field {...form.field("message")} multiline label={t("console.staffReply")} />
          </Form>
        </article>
      )}
    </Loaded>
  )
}
