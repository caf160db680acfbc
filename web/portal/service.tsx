import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link, useLocation } from "wouter"
import { ApiError, call } from "../shared/api.ts"
import { formatDate, formatMoney } from "../shared/format.ts"
import { ActionButton, FormError, Select } from "../shared/forms.tsx"
import { Table } from "../shared/lists.tsx"
import { Loaded, Panel, Status } from "../shared/ui.tsx"
import { GraceBanner } from "./billing.tsx"

const CURRENT = ["service", "current"] as const

/** The current service: expiry, auto-renew, cancel and resume ([D111]), plan change with its quote ([D108]). */
export const Service = () => {
  const { t } = useTranslation()
  const current = useQuery({
    queryKey: CURRENT,
    queryFn: () => call("services", "currentService").catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e)))
  })
  const history = useQuery({ queryKey: ["services"], queryFn: () => call("services", "listServices") })
  return (
    <>
      <h1>{t("service.title")}</h1>
      <Loaded query={current}>
        {(service) =>
          service === null ? (
            <p>
              {t("service.none")} <Link href="/plans">{t("service.choosePlan")}</Link>
            </p>
          ) : (
            <>
              <GraceBanner service={service} />
              <article>
                <header>
                  <strong>{service.plan.name}</strong> · {service.cycle.name} <Status value={service.status} />
                </header>
                <dl>
                  <dt>{t("service.started")}</dt>
                  <dd>{formatDate(service.starts_at)}</dd>
                  <dt>{t("service.expiresAt")}</dt>
                  <dd>{formatDate(service.expires_at)}</dd>
                  <dt>{t("service.price")}</dt>
                  <dd>{formatMoney(service.cycle.price, service.cycle.currency)}</dd>
                  {service.cancel_at !== null && (
                    <>
                      <dt>{t("service.cancelAt")}</dt>
                      <dd>{formatDate(service.cancel_at)}</dd>
                    </>
                  )}
                  {service.scheduled_change !== null && (
                    <>
                      <dt>{t("service.scheduled")}</dt>
                      <dd>
                        {service.scheduled_change.plan.name} · {formatDate(service.scheduled_change.effective_at)}{" "}
                        <ActionButton
                          className="secondary outline"
                          action={() => call("subscriptions", "removeChange", { path: { service: service.id } })}
                          invalidate={[CURRENT]}
                        >
                          {t("service.undoChange")}
                        </ActionButton>
                      </dd>
                    </>
                  )}
                </dl>
                <AutoRenew id={service.id} value={service.auto_renew} />
                <footer className="actions">
                  {service.cancel_at === null ? (
                    <ActionButton
                      className="secondary"
                      confirm={t("service.cancelConfirm")}
                      action={() => call("subscriptions", "cancelService", { path: { service: service.id }, payload: { at: "period_end" } })}
                      invalidate={[CURRENT]}
                    >
                      {t("service.cancel")}
                    </ActionButton>
                  ) : (
                    <ActionButton action={() => call("subscriptions", "resumeService", { path: { service: service.id } })} invalidate={[CURRENT]}>
                      {t("service.resume")}
                    </ActionButton>
                  )}
                </footer>
              </article>
              <ChangePlan service={service.id} />
            </>
          )
        }
      </Loaded>
      <h2>{t("service.history")}</h2>
      <Loaded query={history}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(s) => s.id}
            columns={[
              [
                t("service.plan"),
                (s) => (
                  <>
                    {s.plan.name} · {s.cycle.name}
                  </>
                )
              ],
              [t("service.status"), (s) => <Status value={s.status} />],
              [t("service.started"), (s) => formatDate(s.starts_at)],
              [t("service.expiresAt"), (s) => formatDate(s.expires_at)]
            ]}
          />
        )}
      </Loaded>
    </>
  )
}

const AutoRenew = ({ id, value }: { readonly id: number; readonly value: boolean }) => {
  const { t } = useTranslation()
  const mutation = useMutation({
    mutationFn: (autoRenew: boolean) => call("services", "setAutoRenew", { path: { service: id }, payload: { auto_renew: autoRenew } })
  })
  const [checked, setChecked] = useState(value)
  return (
    <label>
      <input
        type="checkbox"
        role="switch"
        checked={checked}
        onChange={(e) => {
          setChecked(e.target.checked)
          mutation.mutate(e.target.checked)
        }}
      />
      {t("service.autoRenew")}
    </label>
  )
}

/** Pick a plan and cycle, see what the change costs, confirm. */
const ChangePlan = ({ service }: { readonly service: number }) => {
  const { t } = useTranslation()
  const [, navigate] = useLocation()
  const plans = useQuery({ queryKey: ["plans"], queryFn: () => call("catalog", "listPlans") })
  const [plan, setPlan] = useState("")
  const cycles = useQuery({
    queryKey: ["cycles", Number(plan)],
    queryFn: () => call("catalog", "listCycles", { path: { plan: Number(plan) } }),
    enabled: plan !== ""
  })
  const [cycle, setCycle] = useState("")
  const quote = useQuery({
    queryKey: ["quote", service, plan, cycle],
    queryFn: () => call("subscriptions", "changeQuote", { path: { service }, urlParams: { plan_id: Number(plan), cycle_id: Number(cycle) } }),
    enabled: plan !== "" && cycle !== ""
  })
  const change = useMutation({
    mutationFn: () => call("subscriptions", "changePlan", { path: { service }, payload: { plan_id: Number(plan), cycle_id: Number(cycle) } }),
    onSuccess: (answer) => {
      const invoice = answer as { uuid?: string }
      if (typeof invoice.uuid === "string") navigate(`/invoices/${invoice.uuid}`)
      else navigate("/service")
    }
  })
  const quoteError = quote.error instanceof ApiError ? (Object.values(quote.error.errors)[0]?.[0] ?? quote.error.message) : undefined
  return (
    <Panel title={t("change.title")}>
      <div className="grid">
        <Select
          name="plan"
          label={t("change.plan")}
          value={plan}
          onChange={(v) => {
            setPlan(v)
            setCycle("")
          }}
          options={[["", t("change.pick")], ...(plans.data ?? []).map((p) => [String(p.id), p.name] as const)]}
        />
        <Select
          name="cycle"
          label={t("change.cycle")}
          value={cycle}
          onChange={setCycle}
          options={[["", t("change.pick")], ...(cycles.data ?? []).map((c) => [String(c.id), `${c.name} · ${formatMoney(c.price, c.currency)}`] as const)]}
        />
      </div>
      <FormError message={quoteError} />
      {quote.data && (
        <>
          <p>
            {t(quote.data.kind === "upgrade" ? "change.upgrade" : "change.downgrade")}:{" "}
            {t("change.credit", { amount: formatMoney(quote.data.credit, quote.data.currency) })},{" "}
            {t("change.due", { amount: formatMoney(quote.data.amount_due, quote.data.currency) })}
            {quote.data.effective_at !== null && <>, {t("change.effective", { date: formatDate(quote.data.effective_at) })}</>}
          </p>
          <FormError message={change.error instanceof ApiError ? change.error.message : undefined} />
          <button type="button" aria-busy={change.isPending} onClick={() => change.mutate()}>
            {t("change.confirm")}
          </button>
        </>
      )}
    </Panel>
  )
}
