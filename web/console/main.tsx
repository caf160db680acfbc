/**
 * The operator console ([D118], [D121]) at `/admin/`: the same sign-in as the portal, shown only
 * to admins (a 403 page for anyone else; the API checks every admin call anyway).
 */
import "@picocss/pico/css/pico.min.css"
import "../shared/style.css"
import type { ReactNode } from "react"
import { useTranslation } from "react-i18next"
import { Route, Router, Switch } from "wouter"
import { applyLocale } from "../shared/i18n.ts"
import { useSession } from "../shared/session.ts"
import { AppShell, mount, NavLinks, NotFound, SignOutButton } from "../shared/shell.tsx"
import { Dashboard, Servers } from "./dashboard.tsx"
import { Invoices } from "./invoices.tsx"
import { Audit, Outbox, Webhooks } from "./operations.tsx"
import { Plans } from "./plans.tsx"
import { Tickets } from "./tickets.tsx"
import { UserDetail, Users } from "./users.tsx"

const Shell = ({ children }: { readonly children: ReactNode }) => {
  const { t } = useTranslation()
  const user = useSession().data
  const links = (
    <>
      {user?.role === "admin" && (
        <NavLinks
          links={[
            ["/users", t("console.users")],
            ["/plans", t("console.plans")],
            ["/servers", t("console.servers")],
            ["/invoices", t("console.invoices")],
            ["/tickets", t("console.tickets")],
            ["/audit", t("console.audit")],
            ["/webhooks", t("console.webhooks")],
            ["/outbox", t("console.outbox")]
          ]}
        />
      )}
      {user && <SignOutButton then={() => window.location.assign("/sign-in?next=%2Fadmin%2F")} />}
    </>
  )
  return (
    <AppShell brand={t("console.name")} links={links} onLocale={applyLocale}>
      {children}
    </AppShell>
  )
}

/** Admins only: signed out goes to the portal's sign-in, anyone else sees 403. */
const AdminOnly = ({ children }: { readonly children: ReactNode }) => {
  const { t } = useTranslation()
  const session = useSession()
  if (session.isPending) return <p aria-busy="true">{t("common.loading")}</p>
  if (!session.data) {
    return (
      <article className="narrow">
        <h1>{t("console.signInTitle")}</h1>
        <p>{t("console.signInText")}</p>
        <a href="/sign-in?next=%2Fadmin%2F" role="button">
          {t("auth.signIn")}
        </a>
      </article>
    )
  }
  if (session.data.role !== "admin") {
    return (
      <article className="narrow">
        <h1>{t("console.forbiddenTitle")}</h1>
        <p>{t("console.forbiddenText")}</p>
        <a href="/">{t("console.toPortal")}</a>
      </article>
    )
  }
  return <>{children}</>
}

const Console = () => {
  const { t } = useTranslation()
  return (
    <Router base="/admin">
      <Shell>
        <AdminOnly>
          <Switch>
            <Route path="/" component={Dashboard} />
            <Route path="/users" component={Users} />
            <Route path="/users/:id">{(p) => <UserDetail id={Number(p.id)} />}</Route>
            <Route path="/plans" component={Plans} />
            <Route path="/servers" component={Servers} />
            <Route path="/invoices" component={Invoices} />
            <Route path="/tickets" component={Tickets} />
            <Route path="/audit" component={Audit} />
            <Route path="/webhooks" component={Webhooks} />
            <Route path="/outbox" component={Outbox} />
            <Route>
              <NotFound home={t("console.dashboard")} />
            </Route>
          </Switch>
        </AdminOnly>
      </Shell>
    </Router>
  )
}

mount(<Console />)
