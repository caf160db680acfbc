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
          <p>
            <Link href="/sign-up" role="button">
              {t("nav.signUp")}
            </Link>{" "}
            <Link href="/plans" role="button" className="secondary">
              {t("nav.plans")}
            </Link>
          </p>
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
      <p>
        <Link href="/devices" role="button">
          {t("home.addDevice")}
        </Link>{" "}
        <Link href="/support" role="button" className="secondary">
          {t("nav.support")}
        </Link>
      </p>
    </>
  )
}
