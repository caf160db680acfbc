import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link, useLocation } from "wouter"
import { ApiError, call } from "../shared/api.ts"
import { formatMoney } from "../shared/format.ts"
import { Field, FormError, Select, Submit, useForm } from "../shared/forms.tsx"
import { useSession } from "../shared/session.ts"
import { Loaded } from "../shared/ui.tsx"

type Plan = Awaited<ReturnType<typeof listPlans>>[number]
const listPlans = () => call("catalog", "listPlans")

const PlanCard = ({ plan }: { readonly plan: Plan }) => {
  const { t } = useTranslation()
  const session = useSession()
  const cycles = useQuery({ queryKey: ["cycles", plan.id], queryFn: () => call("catalog", "listCycles", { path: { plan: plan.id } }) })
  return (
    <article className="plan">
      <header>
        <h2>{plan.name}</h2>
      </header>
      <p>{plan.description}</p>
      <ul>
        <li>{plan.bandwidth_limit_gb === 0 ? t("plans.unlimitedData") : t("plans.data", { gb: plan.bandwidth_limit_gb })}</li>
        <li>{plan.speed_limit_mbps === null ? t("plans.fullSpeed") : t("plans.speed", { mbps: plan.speed_limit_mbps })}</li>
        <li>{t("plans.devices", { count: plan.device_limit })}</li>
        {plan.trial_days > 0 && <li>{t("plans.trial", { days: plan.trial_days })}</li>}
      </ul>
      <Loaded query={cycles}>
        {(list) => (
          <ul className="cycles">
            {list.map((cycle) => (
              <li key={cycle.id}>
                <span>
                  {cycle.name}: <strong>{formatMoney(cycle.price, cycle.currency)}</strong>
                </span>{" "}
                <Link
                  href={session.data ? `/checkout/${plan.id}/${cycle.id}` : `/sign-in?next=${encodeURIComponent(`/checkout/${plan.id}/${cycle.id}`)}`}
                  role="button"
                  className="outline"
                  aria-label={t("plans.chooseCycle", { plan: plan.name, cycle: cycle.name })}
                >
                  {t("plans.choose")}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </Loaded>
    </article>
  )
}

export const Plans = () => {
  const { t } = useTranslation()
  const plans = useQuery({ queryKey: ["plans"], queryFn: listPlans })
  return (
    <>
      <h1>{t("plans.title")}</h1>
      <Loaded query={plans}>
        {(list) => (
          <div className="grid plans">
            {list.map((plan) => (
              <PlanCard key={plan.id} plan={plan} />
            ))}
          </div>
        )}
      </Loaded>
    </>
  )
}

/** Plan, cycle, promo code and gateway ([D112]); placing the order makes the invoice to pay. */
export const Checkout = ({ plan, cycle }: { readonly plan: number; readonly cycle: number }) => {
  const { t } = useTranslation()
  const [, navigate] = useLocation()
  const planQuery = useQuery({ queryKey: ["plan", plan], queryFn: () => call("catalog", "getPlan", { path: { plan } }) })
  const cycleQuery = useQuery({ queryKey: ["cycle", cycle], queryFn: () => call("catalog", "getCycle", { path: { cycle } }) })
  const gateways = useQuery({ queryKey: ["gateways"], queryFn: () => call("billingGateways", "listPaymentGateways") })
  const [code, setCode] = useState("")
  const promo = useMutation({
    mutationFn: () => call("catalog", "validatePromo", { payload: { code, plan_id: plan, cycle_id: cycle } })
  })
  const [gateway, setGateway] = useState("")
  const [saveCard, setSaveCard] = useState(false)
  const order = useForm({
    initial: {},
    submit: () =>
      call("billing", "placeOrder", {
        payload: {
          plan_id: plan,
          cycle_id: cycle,
          promo_code: promo.isSuccess ? code : null,
          gateway: gateway === "" ? null : gateway,
          // [D124]: Stripe keeps the card for off-session renewals
          ...(saveCard && (gateway !== "" ? gateway : gateways.data?.[0]?.name) === "stripe" ? { save_card: true } : {})
        }
      }),
    onDone: (invoice) => navigate(`/invoices/${invoice.uuid}`),
    invalidate: [["invoices"]]
  })
  const promoError = promo.error instanceof ApiError ? (promo.error.field("code") ?? promo.error.message) : undefined
  const chosenGateway = gateway !== "" ? gateway : (gateways.data?.[0]?.name ?? "")
  return (
    <article className="narrow">
      <h1>{t("checkout.title")}</h1>
      <Loaded query={planQuery}>
        {(p) => (
          <Loaded query={cycleQuery}>
            {(c) => (
              <>
                <p>
                  <strong>{p.name}</strong> · {c.name} ·{" "}
                  {promo.data ? (
                    <>
                      <s>{formatMoney(promo.data.original_price, promo.data.currency)}</s>{" "}
                      <strong>{formatMoney(promo.data.discounted_price, promo.data.currency)}</strong>
                    </>
                  ) : (
                    <strong>{formatMoney(c.price, c.currency)}</strong>
                  )}
                </p>
                <form
                  onSubmit={(e) => {
                    e.preventDefault()
                    promo.mutate()
                  }}
                  noValidate
                >
                  <Field name="code" label={t("checkout.promo")} value={code} onChange={setCode} error={promoError} />
                  <button type="submit" className="secondary" aria-busy={promo.isPending}>
                    {t("checkout.apply")}
                  </button>
                  {promo.isSuccess && <p role="status">{t("checkout.promoApplied", { code: promo.data.code })}</p>}
                </form>
                <form onSubmit={order.onSubmit} noValidate>
                  {gateways.data && gateways.data.length > 0 && (
                    <Select
                      name="gateway"
                      label={t("checkout.gateway")}
                      value={chosenGateway}
                      onChange={setGateway}
                      options={gateways.data.map((g) => [g.name, g.display_name] as const)}
                      error={order.fieldError("gateway")}
                    />
                  )}
                  {chosenGateway === "stripe" && (
                    <label>
                      <input type="checkbox" name="save_card" checked={saveCard} onChange={(e) => setSaveCard(e.target.checked)} />
                      {t("checkout.saveCard")}
                    </label>
                  )}
                  <FormError message={order.formError ?? order.fieldError("promo_code") ?? order.fieldError("plan_id")} />
                  <Submit pending={order.pending}>{t("checkout.placeOrder")}</Submit>
                </form>
              </>
            )}
          </Loaded>
        )}
      </Loaded>
    </article>
  )
}
