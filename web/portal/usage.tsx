import { useQuery } from "@tanstack/react-query"
import { useMemo } from "react"
import { useTranslation } from "react-i18next"
import { ApiError, call } from "../shared/api.ts"
import type { SuccessOf } from "../shared/api-types.ts"
import { BarChart } from "../shared/chart.tsx"
import { formatBytes, formatDate, formatNumber } from "../shared/format.ts"
import { Loaded } from "../shared/ui.tsx"

type Usage = SuccessOf<"vpn", "currentBandwidth">

/** The period's use against the plan's limit ([D95]). */
export const Gauge = ({ usage }: { readonly usage: Usage }) => {
  const { t } = useTranslation()
  const percentage = usage.percentage ?? 0
  return (
    <div className="gauge">
      <p>
        <strong>{formatBytes(usage.used_bytes)}</strong>{" "}
        {usage.unlimited ? t("usage.ofUnlimited") : t("usage.of", { limit: formatBytes(usage.limit_bytes ?? 0) })}
      </p>
      {!usage.unlimited && (
        <meter min={0} max={100} low={80} high={95} optimum={0} value={percentage} aria-label={t("usage.used")}>
          {formatNumber(percentage, 1)}%
        </meter>
      )}
      <small>
        {usage.unlimited ? null : `${formatNumber(percentage, 1)}% · `}
        {t("usage.resets", { date: formatDate(usage.reset_date) })}
        {usage.throttled && <> · {t("usage.throttled")}</>}
      </small>
    </div>
  )
}

/** Bandwidth: the gauge and the monthly history as a chart. */
export const Usage = () => {
  const { t } = useTranslation()
  const notFound = (e: unknown) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e))
  const current = useQuery({ queryKey: ["bandwidth", "current"], queryFn: () => call("vpn", "currentBandwidth").catch(notFound) })
  const history = useQuery({ queryKey: ["bandwidth", "history"], queryFn: () => call("vpn", "bandwidthHistory").catch(notFound) })
  const summary = useQuery({ queryKey: ["bandwidth", "summary"], queryFn: () => call("vpn", "bandwidthSummary") })
  const months = useMemo(() => [...(history.data ?? [])].reverse(), [history.data])
  const labels = useMemo(() => months.map((m) => m.period), [months])
  const series = useMemo(() => [{ label: t("usage.used"), values: months.map((m) => m.used_bytes), color: "#0172ad" }], [months, t])
  return (
    <>
      <h1>{t("usage.title")}</h1>
      <article>
        <header>{t("usage.thisPeriod")}</header>
        <Loaded query={current}>{(usage) => (usage === null ? <p>{t("service.none")}</p> : <Gauge usage={usage} />)}</Loaded>
      </article>
      <article>
        <header>{t("usage.history")}</header>
        {months.length === 0 ? <p>{t("usage.noHistory")}</p> : <BarChart title={t("usage.history")} labels={labels} series={series} format={formatBytes} />}
      </article>
      {summary.data && <p>{t("usage.total", { total: formatBytes(summary.data.total_used_bytes) })}</p>}
    </>
  )
}
