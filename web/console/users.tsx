import { useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { call } from "../shared/api.ts"
import { formatDate, formatDateTime } from "../shared/format.ts"
import { ActionButton, Field, Form, useForm } from "../shared/forms.tsx"
import { Paged, usePaged } from "../shared/lists.tsx"
import { Loaded, Panel, Status } from "../shared/ui.tsx"
import { InvoiceTable } from "./invoices.tsx"
import { ConsolePagedTable, ConsoleTable } from "./table.tsx"

/** Search by e-mail; each user's page has the rest. */
export const Users = () => {
  const { t } = useTranslation()
  const [email, setEmail] = useState("")
  const users = usePaged(
    ["admin", "users"],
    (page, search) => call("accountsAdmin", "listUsers", { urlParams: { email: search === "" ? undefined : search, page } }),
    ""
  )
  return (
    <>
      <h1>{t("console.users")}</h1>
      <form
        role="search"
        onSubmit={(e) => {
          e.preventDefault()
          users.setFilter(email)
        }}
      >
        <Field name="email" type="search" label={t("console.searchEmail")} value={email} onChange={setEmail} />
        <button type="submit">{t("console.search")}</button>
      </form>
      <ConsolePagedTable
        query={users.query}
        onPage={users.setPage}
        rowKey={(u) => u.id}
        columns={[
          [t("auth.email"), (u) => <Link href={`/users/${u.id}`}>{u.email}</Link>],
          [t("auth.name"), (u) => u.name],
          [t("console.role"), (u) => u.role],
          [t("console.status"), (u) => <Status value={u.status === 1 ? "active" : "disabled"} />],
          [t("console.joined"), (u) => formatDate(u.created_at)]
        ]}
      />
    </>
  )
}

/** One user: enable or disable, devices, balance credit, invoices with refunds. */
export const UserDetail = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  // the list filtered to this user: the API has no single-user read for admins
  const users = useQuery({ queryKey: ["admin", "user", id], queryFn: () => findUser(id) })
  const devices = useDevices(id)
  const invoices = usePaged(["admin", "invoices", "user", id], (page) => call("billingConsole", "listInvoices", { urlParams: { user_id: id, page } }))
  return (
    <Loaded query={users}>
      {(user) =>
        user === undefined ? (
          <p>{t("notFound.title")}</p>
        ) : (
          <>
            <h1>
              {user.name} <small>{user.email}</small>
            </h1>
            <p>
              <Status value={user.status === 1 ? "active" : "disabled"} /> · {user.role} · {t("console.joined")} {formatDate(user.created_at)}
            </p>
            <ActionButton
              className="secondary"
              action={() => call("accountsAdmin", "updateUser", { path: { user: id }, payload: { status: user.status === 1 ? 0 : 1 } })}
              invalidate={[["admin", "user", id]]}
            >
              {user.status === 1 ? t("console.disable") : t("console.enable")}
            </ActionButton>
            <h2>{t("console.invoices")}</h2>
            <Paged query={invoices.query} onPage={invoices.setPage}>
              {(rows) => <InvoiceTable rows={rows} />}
            </Paged>
            <h2>{t("nav.devices")}</h2>
            <UserDevices devices={devices} />
            <Credit id={id} />
          </>
        )
      }
    </Loaded>
  )
}

const useDevices = (id: number) => useQuery({ queryKey: ["admin", "devices", id], queryFn: () => call("vpnAdmin", "userDevices", { path: { user: id } }) })

/** The user's devices, and who fetched each one's subscription link ([D122]: a sign of a shared link). */
const UserDevices = ({ devices }: { readonly devices: ReturnType<typeof useDevices> }) => {
  const { t } = useTranslation()
  return (
    <Loaded query={devices}>
      {(list) => (
        <>
          <ConsoleTable
            rows={list}
            rowKey={(d) => d.id}
            columns={[
              [t("devices.name"), (d) => d.name],
              [t("devices.platform"), (d) => d.platform],
              [t("devices.presence"), (d) => (d.online ? t("devices.online") : t("devices.offline"))],
              [
                t("console.linkFetches"),
                (d) =>
                  d.subscription_fetches.length === 0
                    ? "—"
                    : t("console.linkFetchesSummary", {
                        count: d.subscription_fetches.length,
                        last: formatDateTime(d.subscription_fetches[0]!.at)
                      })
              ]
            ]}
          />
          {list
            .filter((d) => d.subscription_fetches.length > 0)
            .map((d) => (
              <details key={d.id}>
                <summary>{t("console.linkFetchesOf", { name: d.name })}</summary>
                <ConsoleTable
                  rows={d.subscription_fetches.map((f, i) => ({ ...f, i }))}
                  rowKey={(f) => f.i}
                  columns={[
                    [t("devices.fetchedAt"), (f) => formatDateTime(f.at)],
                    [t("devices.address"), (f) => f.address ?? "—"],
                    [t("devices.userAgent"), (f) => f.user_agent ?? "—"]
                  ]}
                />
              </details>
            ))}
        </>
      )}
    </Loaded>
  )
}

/** A credit (or debit) of the user's balance in one currency, with its reason ([D109]). */
const Credit = ({ id }: { readonly id: number }) => {
  const { t } = useTranslation()
  const credit = useForm({
    initial: { amount: "", currency: "USD", reason: "" },
    // the wire takes the decimal string ("5.00"); the client's type is the server's decoded cents
    submit: (v) =>
      call("balanceAdmin", "adjustBalance", { path: { user: id }, payload: { amount: v.amount as unknown as number, currency: v.currency, reason: v.reason } }),
    onDone: () => credit.reset()
  })
  return (
    <Panel title={t("console.credit")}>
      <Form form={credit} submit={t("console.creditButton")} saved>
        <div className="grid">
          <Field {...credit.field("amount")} inputMode="decimal" label={t("console.amount")} />
          <Field {...credit.field("currency")} label={t("console.currency")} />
        </div>
        <Field {...credit.field("reason")} label={t("console.reason")} />
      </Form>
    </Panel>
  )
}

const findUser = async (id: number) => {
  for (let page = 1; page <= 1000; page++) {
    const result = await call("accountsAdmin", "listUsers", { urlParams: { page } })
    const found = result.data.find((u) => u.id === id)
    if (found !== undefined || page >= result.meta.last_page) return found
  }
  return undefined
}
