import { useQuery } from "@tanstack/react-query"
import { useMemo } from "react"
import { useTranslation } from "react-i18next"
import { call } from "../shared/api.ts"
import { BarChart } from "../shared/chart.tsx"
import { formatDateTime, formatMoney } from "../shared/format.ts"
import { type Column, usePaged } from "../shared/lists.tsx"
import { Loaded, Status } from "../shared/ui.tsx"
import { ConsolePagedTable, ConsoleTable } from "./table.tsx"

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

/** The nodes' columns: each with its agent ([D121]). */
const useServerColumns = (): ReadonlyArray<Column<AdminServer>> => {
  const { t } = useTranslation()
  return [
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
  ]
}

const ServerTable = ({ rows }: { readonly rows: ReadonlyArray<AdminServer> }) => {
  const columns = useServerColumns()
  return <ConsoleTable rows={rows} rowKey={(s) => s.id} columns={columns} />
}

export const Servers = () => {
  const { t } = useTranslation()
  const servers = usePaged(["admin", "servers"], listServers)
  const columns = useServerColumns()
  return (
    <>
      <h1>{t("console.servers")}</h1>
      <ConsolePagedTable query={servers.query} onPage={servers.setPage} rowKey={(s) => s.id} columns={columns} />
    </>
  )
}
