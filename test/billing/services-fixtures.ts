import type { TestApp } from "../support/app.ts"

/** Plans, cycles and services straight in the database (the services room's set-up). */
export const servicesFixtures = (app: TestApp) => {
  const plan = async (fields: { name?: string; bandwidth?: number; speed?: number | null; active?: boolean } = {}) => {
    const [row] = await app.sql<{ id: number }>`
      insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active)
      values (${fields.name ?? "Basic"}, '', ${fields.bandwidth ?? 100}, ${fields.speed === undefined ? 50 : fields.speed}, 0, ${fields.active ?? true})
      returning id`
    return row!.id
  }
  const cycle = async (planId: number, fields: { name?: string; days?: number; price?: string; currency?: string } = {}) => {
    const [row] = await app.sql<{ id: number }>`
      insert into billing_cycles (plan_id, name, duration_days, price, currency)
      values (${planId}, ${fields.name ?? "Monthly"}, ${fields.days ?? 30}, ${fields.price ?? "9.99"}, ${fields.currency ?? "USD"})
      returning id`
    return row!.id
  }
  const service = async (fields: {
    userId: number
    planId: number
    cycleId: number
    status?: string
    startsAt?: Date
    expiresAt: Date
    autoRenew?: boolean
    createdAt?: Date
  }) => {
    const [row] = await app.sql<{ id: number }>`
      insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
      values (${fields.userId}, ${fields.planId}, ${fields.cycleId}, ${fields.status ?? "active"},
              ${fields.startsAt ?? app.clock.get()}, ${fields.expiresAt}, ${fields.autoRenew ?? true},
              ${fields.createdAt ?? app.clock.get()})
      returning id`
    return row!.id
  }
  return { plan, cycle, service }
}

export const DAY = 86_400_000
export const days = (from: Date, n: number) => new Date(from.getTime() + n * DAY)
