/**
 * Bar charts with uPlot (a small, maintained canvas chart library; its stylesheet is static, it
 * styles elements through the DOM, never with inline `<style>`: [D118]'s CSP holds). The same
 * figures are in a table for screen readers.
 */
import "uplot/dist/uPlot.min.css"
import { useEffect, useRef } from "react"
import uPlot from "uplot"

export interface BarSeries {
  readonly label: string
  readonly values: ReadonlyArray<number>
  readonly color: string
}

export const BarChart = (props: {
  readonly title: string
  readonly labels: ReadonlyArray<string>
  readonly series: ReadonlyArray<BarSeries>
  readonly format: (value: number) => string
  readonly height?: number
}) => {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = box.current
    if (element === null) return
    const width = () => Math.max(240, element.clientWidth)
    const data: uPlot.AlignedData = [props.labels.map((_, i) => i), ...props.series.map((s) => [...s.values])]
    const chart = new uPlot(
      {
        width: width(),
        height: props.height ?? 240,
        legend: { show: props.series.length > 1 },
        cursor: { drag: { x: false, y: false } },
        scales: {
          x: { time: false, range: [-0.5, props.labels.length - 0.5] },
          // bars start at zero
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] }
        },
        axes: [
          { values: (_u, ticks) => ticks.map((i) => props.labels[i] ?? ""), splits: () => props.labels.map((_, i) => i) },
          { values: (_u, ticks) => ticks.map(props.format), size: 80 }
        ],
        series: [
          {},
          ...props.series.map((s, n) => ({
            label: s.label,
            fill: s.color,
            stroke: s.color,
            paths: uPlot.paths.bars!({ size: [0.6 / props.series.length, 60], align: props.series.length === 1 ? 0 : n === 0 ? -1 : 1 }),
            points: { show: false },
            value: (_u: uPlot, v: number | null) => (v === null ? "" : props.format(v))
          }))
        ]
      },
      data,
      element
    )
    const observer = new ResizeObserver(() => chart.setSize({ width: width(), height: props.height ?? 240 }))
    observer.observe(element)
    return () => {
      observer.disconnect()
      chart.destroy()
    }
  }, [props.labels, props.series, props.format, props.height])
  return (
    <figure className="chart">
      <div ref={box} role="img" aria-label={props.title} />
      <figcaption>{props.title}</figcaption>
      <table className="visually-hidden">
        <caption>{props.title}</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            {props.series.map((s) => (
              <th key={s.label} scope="col">
                {s.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.labels.map((label, i) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              {props.series.map((s) => (
                <td key={s.label}>{props.format(s.values[i] ?? 0)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  )
}
