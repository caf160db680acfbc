import type { TestApp } from "../support/app.ts"
import { typedClient } from "../support/typed.ts"

/** Catalogue set-up through the admin API ([D70]), as an operator would do it. */
export const catalogAdmin = async (app: TestApp) => {
  const admin = await app.createUser({ role: "admin" })
  const token = admin.token

  const createPlan = async (body: Record<string, unknown> = {}) => {
    const res = await app.post("/v1/admin/plans", {
      token,
      body: {
        name: "Basic",
        description: "A plan",
        bandwidth_limit_gb: 100,
        speed_limit_mbps: null,
        trial_days: 0,
        is_active: true,
        ...body
      }
    })
    if (res.status !== 201) throw new Error(`createPlan: ${res.status} ${res.text}`)
    return res.body.data as { id: number; name: string; is_active: boolean }
  }

  const createCycle = async (planId: number, body: Record<string, unknown> = {}) => {
    const res = await app.post(`/v1/admin/plans/${planId}/cycles`, {
      token,
      body: { name: "Monthly", duration_days: 30, price: "9.99", currency: "USD", ...body }
    })
    if (res.status !== 201) throw new Error(`createCycle: ${res.status} ${res.text}`)
    return res.body.data as { id: number; name: string; price: string; currency: string }
  }

  const createPromo = async (body: Record<string, unknown>) => {
    const res = await app.post("/v1/admin/promos", { token, body })
    if (res.status !== 201) throw new Error(`createPromo: ${res.status} ${res.text}`)
    return res.body.data as { id: number; code: string }
  }

  /** the admin through the typed client of the contract */
  const client = await typedClient(app, { token })

  return { admin, token, client, createPlan, createCycle, createPromo }
}

/** a fresh client address, so each test gets its own promo-validation window */
let counter = 0
export const freshAddress = () => {
  counter += 1
  return { "x-forwarded-for": `10.${Math.floor(counter / 250)}.${counter % 250}.${Math.floor(Math.random() * 250) + 1}` }
}
