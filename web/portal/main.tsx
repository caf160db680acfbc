/**
 * The customer portal ([D118], [D121]) at `/`: a single-page app over the public API, signed in
 * with the cookie session of [D119].
 */
import "@picocss/pico/css/pico.min.css"
import "../shared/style.css"
import { useQueryClient } from "@tanstack/react-query"
import { type ReactNode, useEffect } from "react"
import { useTranslation } from "react-i18next"
import { Redirect, Route, Switch, useLocation } from "wouter"
import type { Locale } from "../shared/i18n.ts"
import { chooseLocale, SESSION_KEY, sessionLocale, type User, useSession } from "../shared/session.ts"
import { AppShell, mount, NavLinks, NotFound, SignOutButton } from "../shared/shell.tsx"
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

/** The user's language ([D120]) once signed in; the switch changes it for the account too. */
const useUserLocale = (user: User | null | undefined) => {
  const client = useQueryClient()
  useEffect(() => sessionLocale(client, user), [client, user])
}

const Shell = ({ children }: { readonly children: ReactNode }) => {
  const { t } = useTranslation()
  const session = useSession()
  const user = session.data
  const client = useQueryClient()
  const [, navigate] = useLocation()
  useUserLocale(user)
  // [D120]: the account's language follows the switch (mails, PDFs, pages)
  const changeLocale = (locale: Locale) => void chooseLocale(client, locale).catch(() => undefined)
  const links = user ? (
    <>
      <NavLinks
        links={[
          ["/plans", t("nav.plans")],
          ["/service", t("nav.service")],
          ["/devices", t("nav.devices")],
          ["/usage", t("nav.usage")],
          ["/invoices", t("nav.invoices")],
          ["/balance", t("nav.balance")],
          ["/support", t("nav.support")],
          ["/account", t("nav.account")]
        ]}
      />
      <SignOutButton
        then={(c) => {
          c.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] })
          navigate("/sign-in")
        }}
      />
    </>
  ) : (
    <NavLinks
      links={[
        ["/plans", t("nav.plans")],
        ["/faq", t("nav.faq")],
        ["/sign-in", t("nav.signIn")],
        ["/sign-up", t("nav.signUp")]
      ]}
    />
  )
  return (
    <AppShell brand={t("app.name")} links={links} onLocale={changeLocale} footer={t("app.footer")}>
      {children}
    </AppShell>
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

const guarded = (page: ReactNode) => <Private>{page}</Private>

const App = () => {
  const { t } = useTranslation()
  return (
    <Shell>
      <Switch>
        <Route path="/" component={Home} />
        <Route path="/sign-in" component={SignIn} />
        <Route path={TELEGRAM_ROUTE} component={TelegramSignIn} />
        <Route path="/sign-up" component={SignUp} />
        <Route path="/forgot-password" component={ForgotPassword} />
        <Route path="/plans" component={Plans} />
        <Route path="/faq" component={Faq} />
        <Route path="/verify">{guarded(<VerifyNotice />)}</Route>
        <Route path="/checkout/:plan/:cycle">{(p) => guarded(<Checkout plan={Number(p.plan)} cycle={Number(p.cycle)} />)}</Route>
        <Route path="/service">{guarded(<Service />)}</Route>
        <Route path="/devices">{guarded(<Devices />)}</Route>
        <Route path="/usage">{guarded(<Usage />)}</Route>
        <Route path="/invoices">{guarded(<Invoices />)}</Route>
        <Route path="/invoices/:uuid">{(p) => guarded(<InvoiceDetail uuid={p.uuid} />)}</Route>
        <Route path="/balance">{guarded(<Balance />)}</Route>
        <Route path="/support">{guarded(<Tickets />)}</Route>
        <Route path="/support/:id">{(p) => guarded(<Ticket id={Number(p.id)} />)}</Route>
        <Route path="/account">{guarded(<Account />)}</Route>
        <Route>
          <NotFound home={t("notFound.home")} />
        </Route>
      </Switch>
    </Shell>
  )
}

mount(<App />)
