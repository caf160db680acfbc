// prom-client's own files (`Prometheus.ts`), typed by the package's declarations of its index.
declare module "prom-client/lib/counter" {
  const Counter: typeof import("prom-client").Counter
  export default Counter
}
declare module "prom-client/lib/gauge" {
  const Gauge: typeof import("prom-client").Gauge
  export default Gauge
}
declare module "prom-client/lib/histogram" {
  const Histogram: typeof import("prom-client").Histogram
  export default Histogram
}
declare module "prom-client/lib/registry" {
  const Registry: typeof import("prom-client").Registry
  export default Registry
}
