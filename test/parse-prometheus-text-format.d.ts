/** The parser of the Prometheus text format the metrics tests read `/metrics` with (it ships no types). */
declare module "parse-prometheus-text-format" {
  export interface PrometheusSample {
    readonly value?: string
    readonly labels?: Readonly<Record<string, string>>
    readonly buckets?: Readonly<Record<string, string>>
    readonly count?: string
    readonly sum?: string
  }
  export interface PrometheusFamily {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<PrometheusSample>
  }
  const parsePrometheusTextFormat: (text: string) => Array<PrometheusFamily>
  export default parsePrometheusTextFormat
}
