import { useMutation, useQuery } from "@tanstack/react-query"
import type { ReactNode } from "react"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { ApiError, call, urlOf } from "../shared/api.ts"
import type { SuccessOf } from "../shared/api-types.ts"
import { formatDate, formatDateTime, formatMoney } from "../shared/format.ts"
import { ActionButton, FormError } from "../shared/forms.tsx"
import { PagedTable, StatusFilter, usePaged } from "../shared/lists.tsx"
import { Loaded, Status } from "../shared/ui.tsx"

type Service = SuccessOf<"services", "currentService">

const STATUSES = ["", "pending", "paid", "cancelled", "refunded"] as const

/** Invoices, 15 a page ([D36]), by status. */
export const Invoices = () => {
  const { t } = useTranslation()
  const invoices = usePaged(
    ["invoices"],
    (page, status) =>
      call("billing", "listInvoices", { urlParams: { page, status: status === "" ? undefined : (status as "pending" | "paid" | "cancelled") } }),
    ""
  )
  return (
    <>
      <h1>{t("invoices.title")}</h1>
      <StatusFilter value={invoices.filter} onChange={invoices.setFilter} statuses={STATUSES} />
      <PagedTable
        query={invoices.query}
        onPage={invoices.setPage}
        empty={<p>{t("invoices.none")}</p>}
        rowKey={(invoice) => invoice.uuid}
        columns={[
          [t("invoices.date"), (invoice) => formatDate(invoice.created_at)],
          [t("invoices.amount"), (invoice) => formatMoney(invoice.amount, invoice.currency)],
          [t("invoices.status"), (invoice) => <Status value={invoice.status} />],
          [t("invoices.invoice"), (invoice) => <Link href={`/invoices/${invoice.uuid}`}>{t("invoices.open", { id: invoice.id })}</Link>],
          [t("invoices.payColumn"), (invoice) => invoice.status === "pending" && <PayButton uuid={invoice.uuid}>{t("invoices.pay")}</PayButton>]
        ]}
      />
    </>
  )
}

/** The pay flow of an invoice: its gateway's payment page ([D112], [D123]), where the browser goes. */
const paymentUrl = (uuid: string) => call("billing", "paymentUrl", { path: { invoice: uuid } })
const goPay = (answer: { readonly url: string }) => window.location.assign(answer.url)
const usePay = (uuid: string) => useMutation({ mutationFn: () => paymentUrl(uuid), onSuccess: goPay })

/** A pending invoice's pay button, with the API's message when it cannot be paid. */
export const PayButton = ({ uuid, children }: { readonly uuid: string; readonly children: ReactNode }) => (
  <ActionButton action={() => paymentUrl(uuid)} onDone={goPay}>
    {children}
  </ActionButton>
)

/** One invoice: its lines, pay (the gateway's page), its PDF ([D113]), cancel while pending. */
export const InvoiceDetail = ({ uuid }: { readonly uuid: string }) => {
  const { t } = useTranslation()
  const invoice = useQuery({ queryKey: ["invoice", uuid], queryFn: () => call("billing", "getInvoice", { path: { invoice: uuid } }) })
  const pay = usePay(uuid)
  return (
    <Loaded query={invoice}>
      {(inv) => (
        <article>
          <header>
            <h1>{t("invoices.detailTitle", { id: inv.id })}</h1>
            <Status value={inv.status} />
          </header>
          <dl>
            <dt>{t("invoices.item")}</dt>
            <dd>
              {inv.plan.name} · {inv.cycle.name}
            </dd>
            <dt>{t("invoices.amount")}</dt>
            <dd>
              <strong>{formatMoney(inv.amount, inv.currency)}</strong>
            </dd>
            {inv.promo_code !== null && (
              <>
                <dt>{t("invoices.discount")}</dt>
                <dd>
                  {formatMoney(inv.discount, inv.currency)} ({inv.promo_code})
                </dd>
              </>
            )}
            {Number(inv.balance_applied) > 0 && (
              <>
                <dt>{t("invoices.balanceApplied")}</dt>
                <dd>{formatMoney(inv.balance_applied, inv.currency)}</dd>
              </>
            )}
            {Number(inv.refunded_amount) > 0 && (
              <>
                <dt>{t("invoices.refunded")}</dt>
                <dd>{formatMoney(inv.refunded_amount, inv.currency)}</dd>
              </>
            )}
            <dt>{t("invoices.date")}</dt>
            <dd>{formatDateTime(inv.created_at)}</dd>
            <dt>{t("invoices.paidAt")}</dt>
            <dd>{formatDateTime(inv.paid_at)}</dd>
            <dt>{t("invoices.gateway")}</dt>
            <dd>{inv.gateway}</dd>
          </dl>
          <footer className="actions">
            {inv.status === "pending" && (
              <>
                <button type="button" aria-busy={pay.isPending} onClick={() => pay.mutate()}>
                  {t("invoices.pay")}
                </button>
                <ActionButton
                  className="secondary outline"
                  action={() => call("billing", "cancelInvoice", { path: { invoice: uuid } })}
                  invalidate={[["invoice", uuid], ["invoices"]]}
                >
                  {t("invoices.cancel")}
                </ActionButton>
              </>
            )}
            <a href={urlOf("billingDocuments", "invoicePdf", { path: { invoice: uuid } })} role="button" className="secondary" download>
              {t("invoices.pdf")}
            </a>
          </footer>
          <FormError message={pay.error instanceof ApiError ? pay.error.message : undefined} />
        </article>
      )}
    </Loaded>
  )
}

/** The balance per currency and its ledger ([D109]). */
export const Balance = () => {
  const { t } = useTranslation()
  const balance = useQuery({ queryKey: ["balance"], queryFn: () => call("balance", "getBalance") })
  const ledger = usePaged(["ledger"], (page) => call("balance", "listBalanceTransactions", { urlParams: { page } }))
  return (
    <>
      <h1>{t("balance.title")}</h1>
      <Loaded query={balance}>
        {(list) =>
          list.length === 0 ? (
            <p>{t("balance.empty")}</p>
          ) : (
            <ul className="balances">
              {list.map((b) => (
                <li key={b.currency}>
                  <strong>{formatMoney(b.amount, b.currency)}</strong>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <SavedCards />
      <h2>{t("balance.ledger")}</h2>
      <PagedTable
        query={ledger.query}
        onPage={ledger.setPage}
        empty={<p>{t("balance.noTransactions")}</p>}
        rowKey={(row) => row.id}
        columns={[
          [t("invoices.date"), (row) => formatDate(row.created_at)],
          [
            t("balance.reason"),
            (row) => (
              <>
                {row.reason}
                {row.invoice_uuid !== null && (
                  <>
                    {" "}
                    · <Link href={`/invoices/${row.invoice_uuid}`}>{t("invoices.invoice")}</Link>
                  </>
                )}
              </>
            )
          ],
          [t("invoices.amount"), (row) => formatMoney(row.amount, row.currency)]
        ]}
      />
    </>
  )
}

const BRANDS: Record<string, string> = {
  visa: "Visa",
  mastercard: "Mastercard",
  amex: "American Express",
  discover: "Discover",
  diners: "Diners Club",
  jcb: "JCB",
  unionpay: "UnionPay"
}
const brandName = (brand: string) => BRANDS[brand] ?? brand.charAt(0).toUpperCase() + brand.slice(1)

/** [D124]: the cards kept for renewals (brand, last four digits, expiry), each forgotten on request. */
export const SavedCards = () => {
  const { t } = useTranslation()
  const cards = useQuery({ queryKey: ["payment-methods"], queryFn: () => call("paymentMethods", "listPaymentMethods") })
  return (
    <section aria-labelledby="saved-cards">
      <h2 id="saved-cards">{t("cards.title")}</h2>
      <Loaded query={cards}>
        {(list) =>
          list.length === 0 ? (
            <p>{t("cards.none")}</p>
          ) : (
            <>
              <p>{t("cards.renewals")}</p>
              <ul className="cards">
                {list.map((card) => (
                  <li key={card.id}>
                    <span>
                      <strong>{t("cards.card", { brand: brandName(card.brand), last4: card.last4 })}</strong> ·{" "}
                      {t("cards.expires", { month: String(card.exp_month).padStart(2, "0"), year: card.exp_year })}
                    </span>
                    <ActionButton
                      className="secondary outline"
                      confirm={t("cards.removeConfirm")}
                      action={() => call("paymentMethods", "deletePaymentMethod", { path: { method: card.id } })}
                      invalidate={[["payment-methods"]]}
                    >
                      {t("cards.remove")}
                    </ActionButton>
                  </li>
                ))}
              </ul>
            </>
          )
        }
      </Loaded>
    </section>
  )
}

/**
 * [D124]: a service in grace, plainly: until when, at what speed, and the button that pays its
 * renewal invoice by the invoice's own pay flow. The renewal is the pending invoice of the
 * service's cycle price (else the newest pending one); none: a link to the invoices.
 */
export const GraceBanner = ({ service }: { readonly service: Service | null | undefined }) => {
  const { t } = useTranslation()
  const inGrace = service?.status === "grace"
  const pending = useQuery({
    queryKey: ["invoices", "pending"],
    queryFn: () => call("billing", "listInvoices", { urlParams: { status: "pending" } }),
    enabled: inGrace
  })
  if (!inGrace || service === null || service === undefined) return null
  const list = pending.data?.data ?? []
  const renewal = list.find((i) => i.currency === service.cycle.currency && Number(i.amount) === Number(service.cycle.price)) ?? list[0]
  return (
    <article className="grace-banner" aria-labelledby="grace-title">
      <h2 id="grace-title">{t("grace.title")}</h2>
      <p>{t("grace.banner", { date: formatDate(service.grace_until), speed: service.grace_speed_mbps ?? "—" })}</p>
      <footer className="actions">
        {renewal !== undefined ? (
          <PayButton uuid={renewal.uuid}>{t("grace.pay", { amount: formatMoney(renewal.amount, renewal.currency) })}</PayButton>
        ) : (
          pending.isSuccess && <Link href="/invoices">{t("grace.invoices")}</Link>
        )}
      </footer>
    </article>
  )
}
