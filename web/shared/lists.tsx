/**
 * Lists of both apps: a table of rows by its columns, a paginated list with its pager ([D36]) and
 * the page and filter state behind it, and the status filter of the invoice and ticket lists.
 */
import { type QueryKey, useQuery } from "@tanstack/react-query"
import { type ReactNode, useState } from "react"
import { useTranslation } from "react-i18next"
import { Select } from "./forms.tsx"
import { Loaded } from "./ui.tsx"

/** A column: its header (unique in its table), the cell of a row, and whether the header is for screen readers only. */
export type Column<A> = readonly [label: string, cell: (row: A) => ReactNode, options?: { readonly hiddenLabel?: boolean }]

export interface TableProps<A> {
  readonly rows: ReadonlyArray<A>
  readonly columns: ReadonlyArray<Column<A>>
  readonly rowKey: (row: A) => string | number
  readonly caption?: string | undefined
  /** shown instead of the table when there are no rows (else an empty table) */
  readonly empty?: ReactNode
}

/** A table of rows, scrolling sideways on a narrow screen. */
export const Table = <A,>(props: TableProps<A>) => {
  if (props.rows.length === 0 && props.empty !== undefined) return <>{props.empty}</>
  return (
    <div className="table">
      <table>
        {props.caption !== undefined && <caption>{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map(([label, , options]) => (
              <th key={label} scope="col">
                {options?.hiddenLabel === true ? <span className="visually-hidden">{label}</span> : label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map(([label, cell]) => (
                <td key={label}>{cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export interface PageMeta {
  readonly current_page: number
  readonly last_page: number
  readonly total: number
}

/** Previous / next for a paginated list ([D36]); hidden on a single page. */
export const Pager = ({ meta, onPage }: { readonly meta: PageMeta | undefined; readonly onPage: (page: number) => void }) => {
  const { t } = useTranslation()
  if (meta === undefined || meta.last_page <= 1) return null
  return (
    <nav aria-label={t("common.pages")} className="pager">
      <button type="button" className="secondary" disabled={meta.current_page <= 1} onClick={() => onPage(meta.current_page - 1)}>
        {t("common.previous")}
      </button>
      <span>{t("common.pageOf", { page: meta.current_page, last: meta.last_page })}</span>
      <button type="button" className="secondary" disabled={meta.current_page >= meta.last_page} onClick={() => onPage(meta.current_page + 1)}>
        {t("common.next")}
      </button>
    </nav>
  )
}

export interface PagedQuery<A> {
  readonly data: { readonly data: ReadonlyArray<A>; readonly meta: PageMeta } | undefined
  readonly error: unknown
  readonly isPending: boolean
}

/** A page of a list and the pager; `empty`, when given, stands alone for a page without rows. */
export const Paged = <A,>(props: {
  readonly query: PagedQuery<A>
  readonly onPage: (page: number) => void
  readonly empty?: ReactNode
  readonly children: (rows: ReadonlyArray<A>) => ReactNode
}) => (
  <Loaded query={props.query}>
    {(result) =>
      result.data.length === 0 && props.empty !== undefined ? (
        props.empty
      ) : (
        <>
          {props.children(result.data)}
          <Pager meta={result.meta} onPage={props.onPage} />
        </>
      )
    }
  </Loaded>
)

export interface PagedTableProps<A> extends Omit<TableProps<A>, "rows" | "empty"> {
  readonly query: PagedQuery<A>
  readonly onPage: (page: number) => void
  /** shown alone for a page without rows */
  readonly empty?: ReactNode
  /** the table of a page without rows (`Table`'s `empty`) */
  readonly emptyTable?: ReactNode
}

/** A page of a list as a table, and the pager. */
export const PagedTable = <A,>(props: PagedTableProps<A>) => (
  <Paged query={props.query} onPage={props.onPage} empty={props.empty}>
    {(rows) => <Table rows={rows} columns={props.columns} rowKey={props.rowKey} caption={props.caption} empty={props.emptyTable} />}
  </Paged>
)

/**
 * A list's page, and its filter when it has one (`initialFilter`): a new filter starts at page 1.
 * The query's key is `key`, then the filter, then the page.
 */
export const usePaged = <R,>(key: QueryKey, fetch: (page: number, filter: string) => Promise<R>, initialFilter?: string) => {
  const [page, setPage] = useState(1)
  const [filter, setFilter] = useState(initialFilter ?? "")
  const query = useQuery({ queryKey: initialFilter === undefined ? [...key, page] : [...key, filter, page], queryFn: () => fetch(page, filter) })
  return {
    query,
    page,
    setPage,
    filter,
    setFilter: (value: string) => {
      setFilter(value)
      setPage(1)
    }
  }
}

/** The status filter of a list: "" is all. */
export const StatusFilter = (props: { readonly value: string; readonly onChange: (value: string) => void; readonly statuses: ReadonlyArray<string> }) => {
  const { t } = useTranslation()
  return (
    <Select
      name="status"
      label={t("invoices.filter")}
      value={props.value}
      onChange={props.onChange}
      options={props.statuses.map((s) => [s, s === "" ? t("invoices.all") : t(`status.${s}`)] as const)}
    />
  )
}
