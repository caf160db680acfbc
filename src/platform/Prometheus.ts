/// <reference path="./prom-client-files.d.ts" />
import type * as PromClient from "prom-client"
import CounterClass from "prom-client/lib/counter"
import GaugeClass from "prom-client/lib/gauge"
import HistogramClass from "prom-client/lib/histogram"
import RegistryClass from "prom-client/lib/registry"

/**
 * The four prom-client classes this app records with, taken from the package's own files rather
 * than its index: the index also loads the default process metrics (and `@opentelemetry/api` with
 * them), Summary's t-digest, the Pushgateway's HTTP client and the cluster aggregator, none of
 * which this app uses: about 7 MB resident at idle (issue 27; docs/decisions.md, "Idle memory").
 * The classes are the same ones, typed by the package's own declarations.
 */
export const Counter: typeof PromClient.Counter = CounterClass
export type Counter<T extends string = string> = PromClient.Counter<T>
export const Gauge: typeof PromClient.Gauge = GaugeClass
export type Gauge<T extends string = string> = PromClient.Gauge<T>
export const Histogram: typeof PromClient.Histogram = HistogramClass
export type Histogram<T extends string = string> = PromClient.Histogram<T>
export const Registry: typeof PromClient.Registry = RegistryClass
export type Registry = PromClient.Registry
