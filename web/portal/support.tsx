import { useQuery } from "@tanstack/react-query"
import { useTranslation } from "react-i18next"
import { Link, useLocation } from "wouter"
import { call } from "../shared/api.ts"
import { formatDateTime } from "../shared/format.ts"
import { ActionButton, Field, Form, useForm } from "../shared/forms.tsx"
import { Table } from "../shared/lists.tsx"
import { Loaded, Panel, Status } from "../shared/ui.tsx"

const TICKETS = ["tickets"] as const

export const Tickets = () => {
  const { t } = useTranslation()
  const [, navigate] = useLocation()
  const tickets = useQuery({ queryKey: TICKETS, queryFn: () => call("support", "listTickets") })
  const form = useForm({
    initial: { subject: "", message: "" },
    submit: (v) => call("support", "createTicket", { payload: v }),
    onDone: (ticket) => navigate(`/support/${ticket.id}`),
    invalidate: [TICKETS]
  })
  return (
    <>
      <h1>{t("support.title")}</h1>
      <p>
        <Link href="/faq">{t("support.faqLink")}</Link>
      </p>
      <Loaded query={tickets}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(ticket) => ticket.id}
            empty={<p>{t("support.none")}</p>}
            columns={[
              [t("support.subject"), (ticket) => <Link href={`/support/${ticket.id}`}>{ticket.subject}</Link>],
              [t("support.status"), (ticket) => <Status value={ticket.status} />],
              [t("support.lastReply"), (ticket) => formatDateTime(ticket.last_reply_at)]
            ]}
          />
        )}
      </Loaded>
      <Panel title={t("support.new")}>
        <Form form={form} submit={t("support.send")}>
          <Field {...form.field("subject")} label={t("support.subject")} required />
          <Field {...form.field("message")} label={t("support.message")} multiline required />
        </Form>
      </Panel>
    </>
  )
}

export const Ticket = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const key = ["ticket", id] as const
  const ticket = useQuery({ queryKey: key, queryFn: () => call("support", "getTicket", { path: { ticket: id } }) })
  const form = useForm({
    initial: { message: "" },
    submit: (v) => call("support", "replyTicket", { path: { ticket: id }, payload: v }),
    onDone: () => form.reset(),
    invalidate: [key, TICKETS]
  })
  return (
    <Loaded query={ticket}>
      {(tk) => (
        <>
          <h1>
            {tk.subject} <Status value={tk.status} />
          </h1>
          <ol className="replies">
            {tk.replies.map((reply) => (
              <li key={reply.id} className={reply.is_admin ? "staff" : "mine"}>
                <article>
                  <header>
                    <small>
                      {reply.is_admin ? t("support.staff") : t("support.you")} · {formatDateTime(reply.created_at)}
                    </small>
                  </header>
                  <p>{reply.message}</p>
                </article>
              </li>
            ))}
          </ol>
          <Form form={form} submit={t("support.send")}>
            <Field {...form.field("message")} label={t("support.reply")} multiline required />
          </Form>
          {tk.status !== "closed" && (
            <ActionButton className="secondary outline" action={() => call("support", "closeTicket", { path: { ticket: id } })} invalidate={[key, TICKETS]}>
              {t("support.close")}
            </ActionButton>
          )}
          <p>
            <Link href="/support">{t("support.back")}</Link>
          </p>
        </>
      )}
    </Loaded>
  )
}

export const Faq = () => {
  const { t } = useTranslation()
  const faq = useQuery({ queryKey: ["faq"], queryFn: () => call("support", "listFaq") })
  return (
    <>
      <h1>{t("support.faq")}</h1>
      <Loaded query={faq}>
        {(list) => (
          <>
            {list.map((entry) => (
              <details key={entry.id}>
                <summary>{entry.question}</summary>
                <p>{entry.answer}</p>
              </details>
            ))}
          </>
        )}
      </Loaded>
    </>
  )
}
