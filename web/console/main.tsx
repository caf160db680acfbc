/**
 * The operator console ([D118], [D121]) at `/admin/`: the same sign-in as the portal, shown only
 * to admins (a 403 page for anyone else; the API checks every admin call anyway).
 */
import "@picocss/pico/css/pico.min.css"
import "../shared/style.css"
import { QueryClientProvider, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { useTranslation } from "react-i18next"
import { Link, Route, Router, Switch } from "wouter"
import { applyLocale, initI18n, isLocale } from "../shared/i18n.ts"
import { makeQueryClient, SESSION_KEY, signOut, useSession } from "../shared/session.ts"
import { LanguageSwitch } from "../shared/ui.tsx"
import { Audit, Dashboard, Invoices, Outbox, Plans, Servers, Tickets, UserDetail, Users, Webhooks } from "./pages.tsx"

initI18n()
const queryClient = makeQueryClient()

const Shell = ({ children }: { readonly children: ReactNode }) => {
  const { t, i18n } = useTranslation()
  const session = useSession()
  const client = useQueryClient()
  const user = session.data
  return (
    <>
      <a className="skip" href="#main">
        {t("nav.skip")}
      </a>
      <header className="container">
        <nav aria-label={t("nav.main")}>
          <ul>
            <li>
              <Link href="/" className="brand">
                {t("console.name")}
              </Link>
            </li>
          </ul>
          <ul className="nav-links">
            {user?.role === "admin" && (
              <>
                <li>
                  <Link href="/users">{t("console.users")}</Link>
                </li>
                <li>
                  <Link href="/plans">{t("console.plans")}</Link>
                </li>
                <li>
                  <Link href="/servers">{t("console.servers")}</Link>
                </li>
                <li>
                  <Link href="/invoices">{t("console.invoices")}</Link>
                </li>
                <li>
                  <Link href="/tickets">{t("console.tickets")}</Link>
                </li>
                <li>
                  <Link href="/audit">{t("console.audit")}</Link>
                </li>
                <li>
                  <Link href="/webhooks">{t("console.webhooks")}</Link>
                </li>
                <li>
                  <Link href="/outbox">{t("console.outbox")}</Link>
                </li>
              </>
            )}
            {user && (
              <li>
                <button
                  type="button"
                  className="secondary outline"
                  onClick={async () => {
                    await signOut().catch(() => undefined)
                    client.setQueryData(SESSION_KEY, null)
                    window.location.assign("/sign-in?next=%2Fadmin%2F")
                  }}
                >
                  {t("nav.signOut")}
                </button>
              </li>
            )}
            <li>
              <LanguageSwitch value={isLocale(i18n.language) ? i18n.language : "en"} onChange={applyLocale} />
            </li>
          </ul>
        </nav>
      </header>
      <main id="main" className="container">
        {children}
      </main>
    </>
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

const NotFound = () => {
  const { t } = useTranslation()
  return (
    <article>
      <h1>{t("notFound.title")}</h1>
      <p>{t("notFound.text")}</p>
      <Link href="/">{t("console.dashboard")}</Link>
    </article>
  )
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router base="/admin">
        <Shell>
          <AdminOnly>
            <Switch>
              <Route path="/">
                <Dashboard />
              </Route>
              <Route path="/users">
                <Users />
              </Route>
              <Route path="/users/:id">{(p) => <UserDetail id={Number(p.id)} />}</Route>
              <Route path="/plans">
                <Plans />
              </Route>
              <Route path="/servers">
                <Servers />
              </Route>
              <Route path="/invoices">
                <Invoices />
              </Route>
              <Route path="/tickets">
                <Tickets />
              </Route>
              <Route path="/audit">
                <Audit />
              </Route>
              <Route path="/webhooks">
                <Webhooks />
              </Route>
              <Route path="/outbox">
                <Outbox />
              </Route>
              <Route>
                <NotFound />
              </Route>
            </Switch>
          </AdminOnly>
        </Shell>
      </Router>
    </QueryClientProvider>
  </StrictMode>
)
