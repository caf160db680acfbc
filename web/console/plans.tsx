import { useQuery } from "@tanstack/react-query"
import { useTranslation } from "react-i18next"
import { call } from "../shared/api.ts"
import { formatMoney } from "../shared/format.ts"
import { Field, Form, Select, useForm } from "../shared/forms.tsx"
import { Loaded, Panel } from "../shared/ui.tsx"
import { ConsoleTable } from "./table.tsx"

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
      <Panel title={t("console.newPlan")}>
        <Form form={plan} submit={t("console.create")}>
          <Field {...plan.field("name")} label={t("auth.name")} />
          <Field {...plan.field("description")} label={t("console.description")} />
          <Field {...plan.field("bandwidth_limit_gb")} inputMode="numeric" label={t("console.bandwidthGb")} />
        </Form>
      </Panel>
      <Panel title={t("console.newPromo")}>
        <Form form={promo} submit={t("console.create")} saved>
          <div className="grid">
            <Field {...promo.field("code")} label={t("checkout.promo")} />
            <Select
              {...promo.field("type")}
              label={t("console.promoType")}
              options={[
                ["percentage", "%"],
                ["fixed", t("console.fixed")]
              ]}
            />
            <Field {...promo.field("value")} inputMode="decimal" label={t("console.value")} />
          </div>
        </Form>
      </Panel>
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
    <Panel title={name}>
      <Loaded query={cycles}>
        {(list) => (
          <ConsoleTable
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
        <Form form={form} submit={t("console.create")}>
          <div className="grid">
            <Field {...form.field("name")} label={t("auth.name")} />
            <Field {...form.field("duration_days")} inputMode="numeric" label={t("console.days")} />
            <Field {...form.field("price")} inputMode="decimal" label={t("service.price")} />
            <Field {...form.field("currency")} label={t("console.currency")} />
          </div>
        </Form>
      </details>
    </Panel>
  )
}
