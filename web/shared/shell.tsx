/**
 * What the portal and the console share around their pages: the start (language of [D120], the
 * query client, the page in `#root`), the skip link, the header with its navigation and the
 * language switch, the main landmark, the sign-out button and the not-found page.
 */
import { type QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query"
import { type ReactNode, StrictMode, useId } from "react"
import { createRoot } from "react-dom/client"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { initI18n, isLocale, LOCALE_NAMES, LOCALES, type Locale } from "./i18n.ts"
import { makeQueryClient, SESSION_KEY, signOut } from "./session.ts"

/** Starts an app: the language ([D120]), the query client, and `app` rendered in `#root`. */
export const mount = (app: ReactNode) => {
  initI18n()
  const client = makeQueryClient()
  createRoot(document.getElementById("root")!).render(
    <StrictMode>
      <QueryClientProvider client={client}>{app}</QueryClientProvider>
    </StrictMode>
  )
}

export const LanguageSwitch = ({ value, onChange }: { readonly value: Locale; readonly onChange: (locale: Locale) => void }) => {
  const { t } = useTranslation()
  const id = useId()
  return (
    <span className="language">
      <label htmlFor={id} className="visually-hidden">
        {t("common.language")}
      </label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value as Locale)}>
        {LOCALES.map((locale) => (
          <option key={locale} value={locale} lang={locale}>
            {LOCALE_NAMES[locale]}
          </option>
        ))}
      </select>
    </span>
  )
}

/** The header's links, each an item of its list. */
export const NavLinks = ({ links }: { readonly links: ReadonlyArray<readonly [href: string, label: string]> }) => (
  <>
    {links.map(([href, label]) => (
      <li key={href}>
        <Link href={href}>{label}</Link>
      </li>
    ))}
  </>
)

/** Ends the session (the cookie, [D119]), forgets the user, then `then`. */
export const SignOutButton = ({ then }: { readonly then: (client: QueryClient) => void }) => {
  const { t } = useTranslation()
  const client = useQueryClient()
  return (
    <li>
      <button
        type="button"
        className="secondary outline"
        onClick={async () => {
          await signOut().catch(() => undefined)
          client.setQueryData(SESSION_KEY, null)
          then(client)
        }}
      >
        {t("nav.signOut")}
      </button>
    </li>
  )
}

/** The skip link, the header (the brand, `links`, the language switch), the page, and the footer when there is one. */
export const AppShell = (props: {
  readonly brand: string
  readonly links: ReactNode
  readonly onLocale: (locale: Locale) => void
  readonly footer?: string
  readonly children: ReactNode
}) => {
  const { t, i18n } = useTranslation()
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
                {props.brand}
              </Link>
            </li>
          </ul>
          <ul className="nav-links">
            {props.links}
            <li>
              <LanguageSwitch value={isLocale(i18n.language) ? i18n.language : "en"} onChange={props.onLocale} />
            </li>
          </ul>
        </nav>
      </header>
      <main id="main" className="container">
        {props.children}
      </main>
      {props.footer !== undefined && (
        <footer className="container">
          <small>{props.footer}</small>
        </footer>
      )}
    </>
  )
}

/** The app's own not-found page, with a link home. */
export const NotFound = ({ home }: { readonly home: string }) => {
  const { t } = useTranslation()
  return (
    <article>
      <h1>{t("notFound.title")}</h1>
      <p>{t("notFound.text")}</p>
      <Link href="/">{home}</Link>
    </article>
  )
}
