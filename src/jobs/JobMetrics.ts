import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Prometheus from "../platform/Prometheus.ts"
import { Metrics } from "../platform/Metrics.ts"

/** What one run of the jobs did, as the metrics show it (rows per step). */
export interface JobsRun {
  readonly skipped: boolean
  readonly seconds: number
  readonly rows: Readonly<Record<string, number>>
}

/** The jobs' figures in the app's metrics registry ([D102]): runs by outcome, the last run's time and length, rows by step. */
export const jobMetrics = Metrics.ofRoom(({ now, registry }) => {
  const registers = [registry]
  const jobRuns = new Prometheus.Counter({
    name: "vpn_api_jobs_runs_total",
    help: "Runs of the scheduled jobs: done, skipped (another instance held the lock) or failed.",
    labelNames: ["outcome"] as const,
    registers
  })
  const jobLastRun = new Prometheus.Gauge({
    name: "vpn_api_jobs_last_run_timestamp_seconds",
    help: "When the last run of the jobs ended (Unix time).",
    registers
  })
  const jobDuration = new Prometheus.Gauge({
    name: "vpn_api_jobs_last_run_duration_seconds",
    help: "How long the last run of the jobs took.",
    registers
  })
  const jobRows = new Prometheus.Counter({
    name: "vpn_api_jobs_rows_total",
    help: "Rows the jobs changed, by step.",
    labelNames: ["step"] as const,
    registers
  })
  return {
    ran: (run: JobsRun) =>
      Effect.sync(() => {
        jobRuns.inc({ outcome: run.skipped ? "skipped" : "done" })
        jobLastRun.set(now() / 1000)
        jobDuration.set(run.seconds)
        for (const [step, rows] of Object.entries(run.rows)) jobRows.inc({ step }, rows)
      }),
    failed: (seconds: number) =>
      Effect.sync(() => {
        jobRuns.inc({ outcome: "failed" })
        jobLastRun.set(now() / 1000)
        jobDuration.set(seconds)
      })
  } as const
})

/** The jobs' figures in /metrics from the app's start, before any run (the alert rules read them). */
export const JobMetricsLive = Layer.effectDiscard(jobMetrics)
