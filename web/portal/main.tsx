/**
 * The customer portal ([D118], [D121]) at `/`: a single-page app over the public API, signed in
 * with the cookie session of [D119].
 */
import "@picocss/pico/css/pico.min.css"
import "../shared/style.css"
import { QueryClientProvider, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, StrictMode, useEffect } from "react"
import { createRoot } from "react-dom/client"
import { useTranslation } from "react-i18next"
import { Link, Redirect, Route, Switch, useLocation } from "wouter"
import { initI18n, isLocale, type Locale } from "../shared/i18n.ts"
import { chooseLocale, makeQueryClient, sessionLocale, SESSION_KEY, signOut, type User, useSession } from "../shared/session.ts"
import { LanguageSwitch } from "../shared/shell.tsx"
import { Account } from "./account.tsx"
import { ForgotPassword, SignIn, SignUp, VerifyNotice } from "./auth.tsx"
import { Balance, InvoiceDetail, Invoices } from "./billing.tsx"
import { Devices } from "./devices.tsx"
import { Home } from "./home.tsx"
import { Checkout, Plans } from "./plans.tsx"
import { Service } from "./service.tsx"
import { Faq, Ticket, Tickets } from "./support.tsx"
import { captureTelegramLaunch, TELEGRAM_ROUTE, TelegramSignIn } from "./telegram.tsx"
import { Usage } from "./usage.tsx"

// [D125]: what Telegram put after `#` (a Mini App's initData, its login page's answer), before the router reads the address
captureTelegramLaunch()
initI18n()
const queryClient = makeQueryClient()

/** The user's language ([D120]) once signed in; the switch changes it for the account too. */
const useUserLocale = (user: User | null | undefined) => {
  const client = useQueryClient()
  useEffect(() => sessionLocale(client, user), [client, user])
}

const Shell = ({ children }: { readonly children: ReactNode }) => {
  const { t, i18n } = useTranslation()
  const session = useSession()
  const user = session.data
  const client = useQueryClient()
  const [, navigate] = useLocation()
  useUserLocale(user)
  // [D120]: the account's language follows the switch (mails, PDFs, pages)
  const changeLocale = (locale: Locale) => void chooseLocale(client, locale).catch(() => undefined)
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
                {t("app.name")}
              </Link>
            </li>
          </ul>
          <ul className="nav-links">
            {user ? (
              <>
                <li>
                  <Link href="/plans">{t("nav.plans")}</Link>
                </li>
                <li>
                  <Link href="/service">{t("nav.service")}</Link>
                </li>
                <li>
                  <Link href="/devices">{t("nav.devices")}</Link>
                </li>
                <li>
                  <Link href="/usage">{t("nav.usage")}</Link>
                </li>
                <li>
                  <Link href="/invoices">{t("nav.invoices")}</Link>
                </li>
                <li>
                  <Link href="/balance">{t("nav.balance")}</Link>
                </li>
                <li>
                  <Link href="/support">{t("nav.support")}</Link>
                </li>
                <li>
                  <Link href="/account">{t("nav.account")}</Link>
                </li>
                <li>
                  <button
                    type="button"
                    className="secondary outline"
                    onClick={async () => {
                      await signOut().catch(() => undefined)
                      client.setQueryData(SESSION_KEY, null)
                      client.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] })
                      navigate("/sign-in")
                    }}
                  >
                    {t("nav.signOut")}
                  </button>
                </li>
              </>
            ) : (
              <>
                <li>
                  <Link href="/plans">{t("nav.plans")}</Link>
                </li>
                <li>
                  <Link href="/faq">{t("nav.faq")}</Link>
                </li>
                <li>
                  <Link href="/sign-in">{t("nav.signIn")}</Link>
                </li>
                <li>
                  <Link href="/sign-up">{t("nav.signUp")}</Link>
                </li>
              </>
            )}
            <li>
              <LanguageSwitch value={isLocale(i18n.language) ? i18n.language : "en"} onChange={changeLocale} />
            </li>
          </ul>
        </nav>
      </header>
      <main id="main" className="container">
        {children}
      </main>
      <footer className="container">
        <small>{t("app.footer")}</small>
      </footer>
    </>
  )
}

/** A page for signed-in people; others go to the sign-in page and come back. */
const Private = ({ children }: { readonly children: ReactNode }) => {
  const session = useSession()
  const [location] = useLocation()
  if (session.isPending) return null
  if (!session.data) return <Redirect to={`/sign-in?next=${encodeURIComponent(location)}`} />
  return <>{children}</>
}

const NotFound = () => {
  const { t } = useTranslation()
  return (
    <article>
      <h1>{t("notFound.title")}</h1>
      <p>{t("notFound.text")}</p>
      <Link href="/">{t("notFound.home")}</Link>
    </article>
  )
}

const App = () => (
  <Shell>
    <Switch>
      <Route path="/">
        <Home />
      </Route>
      <Route path="/sign-in">
        <SignIn />
      </Route>
      <Route path={TELEGRAM_ROUTE}>
        <TelegramSignIn />
      </Route>
      <Route path="/sign-up">
        <SignUp />
      </Route>
      <Route path="/forgot-password">
        <ForgotPassword />
      </Route>
      <Route path="/plans">
        <Plans />
      </Route>
      <Route path="/faq">
        <Faq />
      </Route>
      <Route path="/verify">
        <Private>
          <VerifyNotice />
        </Private>
      </Route>
      <Route path="/checkout/:plan/:cycle">
        {(p) => (
          <Private>
            <Checkout plan={Number(p.plan)} cycle={Number(p.cycle)} />
          </Private>
        )}
      </Route>
      <Route path="/service">
        <Private>
          <Service />
        </Private>
      </Route>
      <Route path="/devices">
        <Private>
          <Devices />
        </Private>
      </Route>
      <Route path="/usage">
        <Private>
          <Usage />
        </Private>
      </Route>
      <Route path="/invoices">
        <Private>
          <Invoices />
        </Private>
      </Route>
      <Route path="/invoices/:uuid">
        {(p) => (
          <Private>
            <InvoiceDetail uuid={p.uuid} />
          </Private>
        )}
      </Route>
      <Route path="/balance">
        <Private>
          <Balance />
        </Private>
      </Route>
      <Route path="/support">
        <Private>
          <Tickets />
        </Private>
      </Route>
      <Route path="/support/:id">
        {(p) => (
          <Private>
            <Ticket id={Number(p.id)} />
          </Private>
        )}
      </Route>
      <Route path="/account">
        <Private>
          <Account />
        </Private>
      </Route>
      <Route>
        <NotFound />
      </Route>
    </Switch>
  </Shell>
)

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>
)
