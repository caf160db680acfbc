import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { call } from "../shared/api.ts"
import { formatDate, formatMoney } from "../shared/format.ts"
import { ActionButton, Field, Form, Select, useForm } from "../shared/forms.tsx"
import { Paged, StatusFilter, usePaged } from "../shared/lists.tsx"
import { Panel, Status } from "../shared/ui.tsx"
import { ConsoleTable } from "./table.tsx"

type AdminInvoice = Awaited<ReturnType<typeof listInvoices>>["data"][number]
const listInvoices = (page: number, status: string) =>
  call("billingConsole", "listInvoices", { urlParams: { status: status === "" ? undefined : (status as "paid"), page } })

/** Invoices with their owner; a paid one can be refunded ([D110]), a pending one marked paid. */
export const InvoiceTable = ({ rows }: { readonly rows: ReadonlyArray<AdminInvoice> }) => {
  const { t } = useTranslation()
  const [refunding, setRefunding] = useState<string | undefined>(undefined)
  return (
    <>
      <ConsoleTable
        rows={rows}
        rowKey={(i) => i.uuid}
        columns={[
          [t("invoices.invoice"), (i) => `#${i.id}`],
          [t("console.user"), (i) => (i.user_id === null ? "—" : <Link href={`/users/${i.user_id}`}>{i.user_id}</Link>)],
          [t("invoices.amount"), (i) => formatMoney(i.amount, i.currency)],
          [t("invoices.refunded"), (i) => (Number(i.refunded_amount) > 0 ? formatMoney(i.refunded_amount, i.currency) : "—")],
          [t("invoices.status"), (i) => <Status value={i.status} />],
          [t("invoices.date"), (i) => formatDate(i.created_at)],
          [
            t("devices.actions"),
            (i) =>
              i.status === "paid" && Number(i.refunded_amount) < Number(i.amount) ? (
                <button type="button" className="outline" onClick={() => setRefunding(i.uuid)}>
                  {t("console.refund", { id: i.id })}
                </button>
              ) : i.status === "pending" ? (
                <ActionButton className="outline" action={() => call("billingAdmin", "markPaid", { path: { invoice: i.uuid } })} invalidate={[["admin"]]}>
                  {t("console.markPaid")}
                </ActionButton>
              ) : null
          ]
        ]}
      />
      {refunding !== undefined && <Refund uuid={refunding} onDone={() => setRefunding(undefined)} />}
    </>
  )
}

/** [D110]: a credit note to the balance or back through the gateway. */
const Refund = ({ uuid, onDone }: { readonly uuid: string; readonly onDone: () => void }) => {
  const { t } = useTranslation()
  const form = useForm({
    initial: { amount: "", to: "balance", reason: "" },
    submit: (v) =>
      call("refundsAdmin", "refundInvoice", {
        path: { invoice: uuid },
        // the wire takes the decimal string; none refunds all that is left
        payload: { to: v.to as "balance" | "gateway", reason: v.reason, ...(v.amount === "" ? {} : { amount: v.amount as unknown as number }) }
      }),
    onDone,
    invalidate: [["admin"]]
  })
  return (
    <Panel title={t("console.refundTitle")}>
      <Form form={form} submit={t("console.refundButton")}>
        <div className="grid">
          <Field {...form.field("amount")} inputMode="decimal" label={t("console.amount")} hint={t("console.amountHint")} />
          <Select
            {...form.field("to")}
            label={t("console.refundTo")}
            options={[
              ["balance", t("console.toBalance")],
              ["gateway", t("console.toGateway")]
            ]}
          />
        </div>
        <Field {...form.field("reason")} label={t("console.reason")} />
      </Form>
    </Panel>
  )
}

export const Invoices = () => {
  const { t } = useTranslation()
  const invoices = usePaged(["admin", "invoices"], listInvoices, "")
  return (
    <>
      <h1>{t("console.invoices")}</h1>
      <StatusFilter value={invoices.filter} onChange={invoices.setFilter} statuses={["", "pending", "paid", "cancelled"]} />
      <Paged query={invoices.query} onPage={invoices.setPage}>
        {(rows) => <InvoiceTable rows={rows} />}
      </Paged>
    </>
  )
}
