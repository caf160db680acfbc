/** The console's lists: the shared table and paged table, "Nothing here." for no rows. */
import { useTranslation } from "react-i18next"
import { PagedTable, type PagedTableProps, Table, type TableProps } from "../shared/lists.tsx"

export const ConsoleTable = <A,>(props: Omit<TableProps<A>, "empty">) => {
  const { t } = useTranslation()
  return <Table rows={props.rows} columns={props.columns} rowKey={props.rowKey} caption={props.caption} empty={<p>{t("console.empty")}</p>} />
}

export const ConsolePagedTable = <A,>(props: Omit<PagedTableProps<A>, "empty" | "emptyTable">) => {
  const { t } = useTranslation()
  return (
    <PagedTable
      query={props.query}
      onPage={props.onPage}
      columns={props.columns}
      rowKey={props.rowKey}
      caption={props.caption}
      emptyTable={<p>{t("console.empty")}</p>}
    />
  )
}
