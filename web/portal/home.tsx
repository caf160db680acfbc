import { useQuery } from "@tanstack/react-query"
import { useTranslation } from "react-i18next"
import { Link } from "wouter"
import { ApiError, call } from "../shared/api.ts"
import { formatDate } from "../shared/format.ts"
import { useSession } from "../shared/session.ts"
import { Status } from "../shared/ui.tsx"
import { GraceBanner } from "./billing.tsx"
import { Gauge } from "./usage.tsx"

/** Signed out: what the service is and its plans; signed in: the service, usage and next steps. */
export const Home = () => {
  const { t } = useTranslation()
  const session = useSession()
  if (session.isPending) return null
  if (!session.data) {
    return (
      <>
        <section className="hero">
          <h1>{t("home.title")}</h1>
          <p>{t("home.lead")}</p>
          <ButtonLinks first={["/sign-up", t("nav.signUp")]} second={["/plans", t("nav.plans")]} />
        </section>
      </>
    )
  }
  return <Overview name={session.data.name} />
}

const Overview = ({ name }: { readonly name: string }) => {
  const { t } = useTranslation()
  const current = useQuery({
    queryKey: ["service", "current"],
    queryFn: () => call("services", "currentService").catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e)))
  })
  const bandwidth = useQuery({ queryKey: ["bandwidth", "current"], queryFn: () => call("vpn", "currentBandwidth") })
  return (
    <>
      <h1>{t("home.hello", { name })}</h1>
      <GraceBanner service={current.data} />
      <div className="grid">
        <article>
          <header>{t("nav.service")}</header>
          {current.data === null && (
            <p>
              {t("service.none")} <Link href="/plans">{t("service.choosePlan")}</Link>
            </p>
          )}
          {current.data && (
            <>
              <p>
                <strong>{current.data.plan.name}</strong> <Status value={current.data.status} />
              </p>
              {current.data.status !== "grace" && <p>{t("service.expires", { date: formatDate(current.data.expires_at) })}</p>}
              <Link href="/service">{t("home.manage")}</Link>
            </>
          )}
        </article>
        <article>
          <header>{t("nav.usage")}</header>
          {bandwidth.data && <Gauge usage={bandwidth.data} />}
          <Link href="/usage">{t("home.details")}</Link>
        </article>
      </div>
      <ButtonLinks first={["/devices", t("home.addDevice")]} second={["/support", t("nav.support")]} />
    </>
  )
}

/** Two links shown as buttons, the second one secondary. */
const ButtonLinks = (props: { readonly first: readonly [href: string, label: string]; readonly second: readonly [href: string, label: string] }) => (
  <p>
    <Link href={props.first[0]} role="button">
      {props.first[1]}
    </Link>{" "}
    <Link href={props.second[0]} role="button" className="secondary">
      {props.second[1]}
    </Link>
  </p>
)
