import { useQuery } from "@tanstack/react-query"
import { type ReactNode, useMemo, useState } from "react"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { call } from "../shared/api.ts"
import { BarChart } from "../shared/chart.tsx"
import { formatDate, formatDateTime, formatMoney } from "../shared/format.ts"
import { ActionButton, Field, FormError, Loaded, Pager, type PageMeta, Select, Status, Submit, useForm } from "../shared/ui.tsx"

/** A plain table of rows (the console's lists). */
const Table = <A,>(props: {
  readonly rows: ReadonlyArray<A>
  readonly columns: ReadonlyArray<readonly [string, (row: A) => ReactNode]>
  readonly rowKey: (row: A) => string | number
  readonly caption?: string
}) => {
  const { t } = useTranslation()
  if (props.rows.length === 0) return <p>{t("console.empty")}</p>
  return (
    <div className="table">
      <table>
        {props.caption !== undefined && <caption>{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map(([label]) => (
              <th key={label} scope="col">
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map(([label, cell]) => (
                <td key={label}>{cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

const Paged = <A,>(props: {
  readonly query: {
    readonly data: { readonly data: ReadonlyArray<A>; readonly meta: PageMeta } | undefined
    readonly error: unknown
    readonly isPending: boolean
  }
  readonly onPage: (page: number) => void
  readonly children: (rows: ReadonlyArray<A>) => ReactNode
}) => (
  <Loaded query={props.query}>
    {(result) => (
      <>
        {props.children(result.data)}
        <Pager meta={result.meta} onPage={props.onPage} />
      </>
    )}
  </Loaded>
)

const COLORS = ["#0172ad", "#c2410c", "#15803d", "#7e22ce"]

/** Users, active services, the last 30 days' revenue per currency, the nodes and their agents. */
export const Dashboard = () => {
  const { t } = useTranslation()
  const users = useQuery({ queryKey: ["admin", "users", "", 1], queryFn: () => call("accountsAdmin", "listUsers", { urlParams: { page: 1 } }) })
  const revenue = useQuery({ queryKey: ["admin", "revenue"], queryFn: () => call("billingConsole", "revenue") })
  const paid = useQuery({ queryKey: ["admin", "invoices", "paid"], queryFn: () => call("billingConsole", "listInvoices", { urlParams: { status: "paid" } }) })
  const servers = useQuery({ queryKey: ["admin", "servers", 1], queryFn: () => call("vpnAdmin", "listServers", { urlParams: { page: 1 } }) })
  const chart = useMemo(() => {
    const rows = revenue.data ?? []
    const days: Array<string> = []
    for (let i = 29; i >= 0; i--) days.push(new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10))
    const currencies = [...new Set(rows.map((r) => r.currency))]
    return {
      labels: days.map((d) => d.slice(5)),
      series: currencies.map((currency, n) => ({
        label: currency,
        color: COLORS[n % COLORS.length]!,
        values: days.map((day) => Number(rows.find((r) => r.day === day && r.currency === currency)?.amount ?? 0))
      })),
      totals: currencies.map((currency) => [currency, rows.filter((r) => r.currency === currency).reduce((sum, r) => sum + Number(r.amount), 0)] as const)
    }
  }, [revenue.data])
  return (
    <>
      <h1>{t("console.dashboard")}</h1>
      <div className="grid">
        <article>
          <header>{t("console.users")}</header>
          <p className="stat">{users.data?.meta.total ?? "…"}</p>
        </article>
        <article>
          <header>{t("console.paidInvoices")}</header>
          <p className="stat">{paid.data?.meta.total ?? "…"}</p>
        </article>
        <article>
          <header>{t("console.revenue30")}</header>
          {chart.totals.length === 0 ? (
            <p className="stat">0</p>
          ) : (
            chart.totals.map(([currency, total]) => (
              <p key={currency} className="stat">
                {formatMoney(total, currency)}
              </p>
            ))
          )}
        </article>
      </div>
      <article>
        <header>{t("console.revenue30")}</header>
        {chart.series.length === 0 ? (
          <p>{t("console.noRevenue")}</p>
        ) : (
          <BarChart title={t("console.revenue30")} labels={chart.labels} series={chart.series} format={(v) => v.toFixed(2)} />
        )}
      </article>
      <h2>{t("console.nodes")}</h2>
      <Loaded query={servers}>{(result) => <ServerTable rows={result.data} />}</Loaded>
    </>
  )
}

type AdminServer = Awaited<ReturnType<typeof listServers>>["data"][number]
const listServers = (page: number) => call("vpnAdmin", "listServers", { urlParams: { page } })

const ServerTable = ({ rows }: { readonly rows: ReadonlyArray<AdminServer> }) => {
  const { t } = useTranslation()
  return (
    <Table
      rows={rows}
      rowKey={(s) => s.id}
      columns={[
        [t("console.server"), (s) => `${s.name} (${s.city}, ${s.country})`],
        [t("console.protocol"), (s) => s.protocol],
        [t("console.status"), (s) => <Status value={s.status} />],
        [
          t("console.agent"),
          (s) => <span className={s.agent.connected ? "online" : "offline"}>{s.agent.connected ? t("devices.online") : t("devices.offline")}</span>
        ],
        [t("console.lag"), (s) => (s.agent.lag === null ? "—" : String(s.agent.lag))],
        [t("console.lastSeen"), (s) => formatDateTime(s.agent.last_seen_at ?? s.last_seen_at)],
        [t("console.peers"), (s) => String(s.peers)]
      ]}
    />
  )
}

export const Servers = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const servers = useQuery({ queryKey: ["admin", "servers", page], queryFn: () => listServers(page) })
  return (
    <>
      <h1>{t("console.servers")}</h1>
      <Paged query={servers} onPage={setPage}>
        {(rows) => <ServerTable rows={rows} />}
      </Paged>
    </>
  )
}

/** Search by e-mail; each user's page has the rest. */
export const Users = () => {
  const { t } = useTranslation()
  const [email, setEmail] = useState("")
  const [search, setSearch] = useState("")
  const [page, setPage] = useState(1)
  const users = useQuery({
    queryKey: ["admin", "users", search, page],
    queryFn: () => call("accountsAdmin", "listUsers", { urlParams: { email: search === "" ? undefined : search, page } })
  })
  return (
    <>
      <h1>{t("console.users")}</h1>
      <form
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          setSearch(email)
          setPage(1)
        }}
      >
        <Field name="email" type="search" label={t("console.searchEmail")} value={email} onChange={setEmail} />
        <button type="submit">{t("console.search")}</button>
      </form>
      <Paged query={users} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
            rowKey={(u) => u.id}
            columns={[
              [t("auth.email"), (u) => <Link href={`/users/${u.id}`}>{u.email}</Link>],
              [t("auth.name"), (u) => u.name],
              [t("console.role"), (u) => u.role],
              [t("console.status"), (u) => <Status value={u.status === 1 ? "active" : "disabled"} />],
              [t("console.joined"), (u) => formatDate(u.created_at)]
            ]}
          />
        )}
      </Paged>
    </>
  )
}

/** One user: enable or disable, devices, balance credit, invoices with refunds. */
export const UserDetail = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  // the list filtered to this user: the API has no single-user read for admins
  const users = useQuery({ queryKey: ["admin", "user", id], queryFn: () => findUser(id) })
  const devices = useQuery({ queryKey: ["admin", "devices", id], queryFn: () => call("vpnAdmin", "userDevices", { path: { user: id } }) })
  const invoices = useQuery({
    queryKey: ["admin", "invoices", "user", id, page],
    queryFn: () => call("billingConsole", "listInvoices", { urlParams: { user_id: id, page } })
  })
  const credit = useForm({
    initial: { amount: "", currency: "USD", reason: "" },
    // the wire takes the decimal string ("5.00"); the client's type is the server's decoded cents
    submit: (v) =>
      call("balanceAdmin", "adjustBalance", { path: { user: id }, payload: { amount: v.amount as unknown as number, currency: v.currency, reason: v.reason } }),
    onDone: () => credit.reset()
  })
  return (
    <Loaded query={users}>
      {(user) =>
        user === undefined ? (
          <p>{t("notFound.title")}</p>
        ) : (
          <>
            <h1>
              {user.name} <small>{user.email}</small>
            </h1>
            <p>
              <Status value={user.status === 1 ? "active" : "disabled"} /> · {user.role} · {t("console.joined")} {formatDate(user.created_at)}
            </p>
            <ActionButton
              className="secondary"
              action={() => call("accountsAdmin", "updateUser", { path: { user: id }, payload: { status: user.status === 1 ? 0 : 1 } })}
              invalidate={[["admin", "user", id]]}
            >
              {user.status === 1 ? t("console.disable") : t("console.enable")}
            </ActionButton>
            <h2>{t("console.invoices")}</h2>
            <Paged query={invoices} onPage={setPage}>
              {(rows) => <InvoiceTable rows={rows} />}
            </Paged>
            <h2>{t("nav.devices")}</h2>
            <Loaded query={devices}>
              {(list) => (
                <>
                  <Table
                    rows={list}
                    rowKey={(d) => d.id}
                    columns={[
                      [t("devices.name"), (d) => d.name],
                      [t("devices.platform"), (d) => d.platform],
                      [t("devices.presence"), (d) => (d.online ? t("devices.online") : t("devices.offline"))],
                      // [D122]: the link's last fetches, a sign of a shared link
                      [
                        t("console.linkFetches"),
                        (d) =>
                          d.subscription_fetches.length === 0
                            ? "—"
                            : t("console.linkFetchesSummary", {
                                count: d.subscription_fetches.length,
                                last: formatDateTime(d.subscription_fetches[0]!.at)
                              })
                      ]
                    ]}
                  />
                  {list
                    .filter((d) => d.subscription_fetches.length > 0)
                    .map((d) => (
                      <details key={d.id}>
                        <summary>{t("console.linkFetchesOf", { name: d.name })}</summary>
                        <Table
                          rows={d.subscription_fetches.map((f, i) => ({ ...f, i }))}
                          rowKey={(f) => f.i}
                          columns={[
                            [t("devices.fetchedAt"), (f) => formatDateTime(f.at)],
                            [t("devices.address"), (f) => f.address ?? "—"],
                            [t("devices.userAgent"), (f) => f.user_agent ?? "—"]
                          ]}
                        />
                      </details>
                    ))}
                </>
              )}
            </Loaded>
            <article>
              <header>
                <h2>{t("console.credit")}</h2>
              </header>
              <form onSubmit={credit.onSubmit} noValidate>
                <div className="grid">
                  <Field
                    name="amount"
                    inputMode="decimal"
                    label={t("console.amount")}
                    value={credit.values.amount}
                    onChange={credit.set("amount")}
                    error={credit.fieldError("amount")}
                  />
                  <Field
                    name="currency"
                    label={t("console.currency")}
                    value={credit.values.currency}
                    onChange={credit.set("currency")}
                    error={credit.fieldError("currency")}
                  />
                </div>
                <Field
                  name="reason"
                  label={t("console.reason")}
                  value={credit.values.reason}
                  onChange={credit.set("reason")}
                  error={credit.fieldError("reason")}
                />
                <FormError message={credit.formError} />
                {credit.done && <p role="status">{t("common.saved")}</p>}
                <Submit pending={credit.pending}>{t("console.creditButton")}</Submit>
              </form>
            </article>
          </>
        )
      }
    </Loaded>
  )
}

const findUser = async (id: number) => {
  for (let page = 1; page <= 1000; page++) {
    const result = await call("accountsAdmin", "listUsers", { urlParams: { page } })
    const found = result.data.find((u) => u.id === id)
    if (found !== undefined || page >= result.meta.last_page) return found
  }
  return undefined
}

type AdminInvoice = Awaited<ReturnType<typeof listInvoices>>["data"][number]
const listInvoices = (status: string, page: number) =>
  call("billingConsole", "listInvoices", { urlParams: { status: status === "" ? undefined : (status as "paid"), page } })

const InvoiceTable = ({ rows }: { readonly rows: ReadonlyArray<AdminInvoice> }) => {
  const { t } = useTranslation()
  const [refunding, setRefunding] = useState<string | undefined>(undefined)
  return (
    <>
      <Table
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
    <article>
      <header>
        <h2>{t("console.refundTitle")}</h2>
      </header>
      <form onSubmit={form.onSubmit} noValidate>
        <div className="grid">
          <Field
            name="amount"
            inputMode="decimal"
            label={t("console.amount")}
            hint={t("console.amountHint")}
            value={form.values.amount}
            onChange={form.set("amount")}
            error={form.fieldError("amount")}
          />
          <Select
            name="to"
            label={t("console.refundTo")}
            value={form.values.to}
            onChange={form.set("to")}
            options={[
              ["balance", t("console.toBalance")],
              ["gateway", t("console.toGateway")]
            ]}
            error={form.fieldError("to")}
          />
        </div>
        <Field name="reason" label={t("console.reason")} value={form.values.reason} onChange={form.set("reason")} error={form.fieldError("reason")} />
        <FormError message={form.formError} />
        <Submit pending={form.pending}>{t("console.refundButton")}</Submit>
      </form>
    </article>
  )
}

export const Invoices = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const [status, setStatus] = useState("")
  const invoices = useQuery({ queryKey: ["admin", "invoices", status, page], queryFn: () => listInvoices(status, page) })
  return (
    <>
      <h1>{t("console.invoices")}</h1>
      <Select
        name="status"
        label={t("invoices.filter")}
        value={status}
        onChange={(v) => {
          setStatus(v)
          setPage(1)
        }}
        options={["", "pending", "paid", "cancelled"].map((s) => [s, s === "" ? t("invoices.all") : t(`status.${s}`)] as const)}
      />
      <Paged query={invoices} onPage={setPage}>
        {(rows) => <InvoiceTable rows={rows} />}
      </Paged>
    </>
  )
}

/** Plans with their cycles; new plans, cycles and promo codes. */
export const Plans = () => {
  const { t } = useTranslation()
  const plans = useQuery({ queryKey: ["plans"], queryFn: () => call("catalog", "listPlans") })
  const plan = useForm({
    initial: { name: "", description: "", bandwidth_limit_gb: "100" },
    submit: (v) =>
      call("catalogAdmin", "createPlan", {
        payload: {
          name: v.name,
          description: v.description,
          bandwidth_limit_gb: Number(v.bandwidth_limit_gb),
          speed_limit_mbps: null,
          trial_days: 0,
          is_active: true
        } as never
      }),
    onDone: () => plan.reset(),
    invalidate: [["plans"]]
  })
  const promo = useForm({
    initial: { code: "", type: "percentage", value: "10" },
    submit: (v) => call("catalogAdmin", "createPromo", { payload: { code: v.code, type: v.type, value: Number(v.value) } as never }),
    onDone: () => promo.reset()
  })
  return (
    <>
      <h1>{t("console.plans")}</h1>
      <Loaded query={plans}>
        {(list) => (
          <>
            {list.map((p) => (
              <PlanCycles key={p.id} plan={p.id} name={p.name} />
            ))}
          </>
        )}
      </Loaded>
      <article>
        <header>
          <h2>{t("console.newPlan")}</h2>
        </header>
        <form onSubmit={plan.onSubmit} noValidate>
          <Field name="name" label={t("auth.name")} value={plan.values.name} onChange={plan.set("name")} error={plan.fieldError("name")} />
          <Field
            name="description"
            label={t("console.description")}
            value={plan.values.description}
            onChange={plan.set("description")}
            error={plan.fieldError("description")}
          />
          <Field
            name="bandwidth_limit_gb"
            inputMode="numeric"
            label={t("console.bandwidthGb")}
            value={plan.values.bandwidth_limit_gb}
            onChange={plan.set("bandwidth_limit_gb")}
            error={plan.fieldError("bandwidth_limit_gb")}
          />
          <FormError message={plan.formError} />
          <Submit pending={plan.pending}>{t("console.create")}</Submit>
        </form>
      </article>
      <article>
        <header>
          <h2>{t("console.newPromo")}</h2>
        </header>
        <form onSubmit={promo.onSubmit} noValidate>
          <div className="grid">
            <Field name="code" label={t("checkout.promo")} value={promo.values.code} onChange={promo.set("code")} error={promo.fieldError("code")} />
            <Select
              name="type"
              label={t("console.promoType")}
              value={promo.values.type}
              onChange={promo.set("type")}
              options={[
                ["percentage", "%"],
                ["fixed", t("console.fixed")]
              ]}
              error={promo.fieldError("type")}
            />
            <Field
              name="value"
              inputMode="decimal"
              label={t("console.value")}
              value={promo.values.value}
              onChange={promo.set("value")}
              error={promo.fieldError("value")}
            />
          </div>
          <FormError message={promo.formError} />
          {promo.done && <p role="status">{t("common.saved")}</p>}
          <Submit pending={promo.pending}>{t("console.create")}</Submit>
        </form>
      </article>
    </>
  )
}

const PlanCycles = ({ plan, name }: { readonly plan: number; readonly name: string }) => {
  const { t } = useTranslation()
  const cycles = useQuery({ queryKey: ["cycles", plan], queryFn: () => call("catalog", "listCycles", { path: { plan } }) })
  const form = useForm({
    initial: { name: "", duration_days: "30", price: "", currency: "USD" },
    submit: (v) =>
      call("catalogAdmin", "createCycle", {
        path: { plan },
        payload: { name: v.name, duration_days: Number(v.duration_days), price: v.price, currency: v.currency } as never
      }),
    onDone: () => form.reset(),
    invalidate: [["cycles", plan]]
  })
  return (
    <article>
      <header>
        <h2>{name}</h2>
      </header>
      <Loaded query={cycles}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(c) => c.id}
            columns={[
              [t("change.cycle"), (c) => c.name],
              [t("console.days"), (c) => String(c.duration_days)],
              [t("service.price"), (c) => formatMoney(c.price, c.currency)]
            ]}
          />
        )}
      </Loaded>
      <details>
        <summary>{t("console.newCycle")}</summary>
        <form onSubmit={form.onSubmit} noValidate>
          <div className="grid">
            <Field name="name" label={t("auth.name")} value={form.values.name} onChange={form.set("name")} error={form.fieldError("name")} />
            <Field
              name="duration_days"
              inputMode="numeric"
              label={t("console.days")}
              value={form.values.duration_days}
              onChange={form.set("duration_days")}
              error={form.fieldError("duration_days")}
            />
            <Field
              name="price"
              inputMode="decimal"
              label={t("service.price")}
              value={form.values.price}
              onChange={form.set("price")}
              error={form.fieldError("price")}
            />
            <Field
              name="currency"
              label={t("console.currency")}
              value={form.values.currency}
              onChange={form.set("currency")}
              error={form.fieldError("currency")}
            />
          </div>
          <FormError message={form.formError} />
          <Submit pending={form.pending}>{t("console.create")}</Submit>
        </form>
      </details>
    </article>
  )
}

/** The ticket queue; a ticket with its replies and the staff reply form. */
export const Tickets = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const [status, setStatus] = useState("open")
  const [open, setOpen] = useState<number | undefined>(undefined)
  const tickets = useQuery({
    queryKey: ["admin", "tickets", status, page],
    queryFn: () => call("supportConsole", "listTickets", { urlParams: { status: status === "" ? undefined : (status as "open"), page } })
  })
  return (
    <>
      <h1>{t("console.tickets")}</h1>
      <Select
        name="status"
        label={t("invoices.filter")}
        value={status}
        onChange={(v) => {
          setStatus(v)
          setPage(1)
        }}
        options={[
          ["open", t("status.open")],
          ["closed", t("status.closed")],
          ["", t("invoices.all")]
        ]}
      />
      <Paged query={tickets} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
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
        )}
      </Paged>
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
          <form onSubmit={form.onSubmit} noValidate>
            <Field
              name="message"
              multiline
              label={t("console.staffReply")}
              value={form.values.message}
              onChange={form.set("message")}
              error={form.fieldError("message")}
            />
            <FormError message={form.formError} />
            <Submit pending={form.pending}>{t("support.send")}</Submit>
          </form>
        </article>
      )}
    </Loaded>
  )
}

export const Audit = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const audit = useQuery({ queryKey: ["admin", "audit", page], queryFn: () => call("auditAdmin", "search", { urlParams: { page } }) })
  return (
    <>
      <h1>{t("console.audit")}</h1>
      <Paged query={audit} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
            rowKey={(e) => e.id}
            columns={[
              [t("console.when"), (e) => formatDateTime(e.created_at)],
              [t("console.actor"), (e) => `${e.actor_id ?? "—"} (${e.actor_kind})`],
              [t("console.action"), (e) => e.action],
              [t("console.resource"), (e) => e.resource ?? "—"],
              [t("account.address"), (e) => e.ip ?? "—"]
            ]}
          />
        )}
      </Paged>
    </>
  )
}

export const Webhooks = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const [open, setOpen] = useState<number | undefined>(undefined)
  const hooks = useQuery({ queryKey: ["admin", "webhooks", page], queryFn: () => call("webhooksAdmin", "listWebhooks", { urlParams: { page } }) })
  const form = useForm({
    initial: { url: "", events: "invoice.paid" },
    submit: (v) => call("webhooksAdmin", "createWebhook", { payload: { url: v.url, events: v.events.split(",").map((e) => e.trim()) } as never }),
    onDone: () => form.reset(),
    invalidate: [["admin", "webhooks"]]
  })
  return (
    <>
      <h1>{t("console.webhooks")}</h1>
      <Paged query={hooks} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
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
        )}
      </Paged>
      {form.result !== undefined && (
        <p role="status">
          {t("console.webhookSecret")} <code>{form.result.secret}</code>
        </p>
      )}
      <article>
        <header>
          <h2>{t("console.newWebhook")}</h2>
        </header>
        <form onSubmit={form.onSubmit} noValidate>
          <Field name="url" type="url" label="URL" value={form.values.url} onChange={form.set("url")} error={form.fieldError("url")} />
          <Field name="events" label={t("console.events")} value={form.values.events} onChange={form.set("events")} error={form.fieldError("events")} />
          <FormError message={form.formError} />
          <Submit pending={form.pending}>{t("console.create")}</Submit>
        </form>
      </article>
      {open !== undefined && <Deliveries id={open} />}
    </>
  )
}

const Deliveries = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const deliveries = useQuery({
    queryKey: ["admin", "deliveries", id, page],
    queryFn: () => call("webhooksAdmin", "listWebhookDeliveries", { path: { id }, urlParams: { page } })
  })
  return (
    <article>
      <header>
        <h2>{t("console.deliveries")}</h2>
      </header>
      <Paged query={deliveries} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
            rowKey={(d) => d.id}
            columns={[
              [t("console.events"), (d) => d.type],
              [t("console.status"), (d) => <Status value={d.status} />],
              [t("console.attempts"), (d) => String(d.attempts.length)],
              [t("console.when"), (d) => formatDateTime(d.created_at)]
            ]}
          />
        )}
      </Paged>
    </article>
  )
}

export const Outbox = () => {
  const { t } = useTranslation()
  const [page, setPage] = useState(1)
  const outbox = useQuery({ queryKey: ["admin", "outbox", page], queryFn: () => call("outboxAdmin", "listOutbox", { urlParams: { page } }) })
  return (
    <>
      <h1>{t("console.outbox")}</h1>
      <Paged query={outbox} onPage={setPage}>
        {(rows) => (
          <Table
            rows={rows}
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
        )}
      </Paged>
    </>
  )
}
