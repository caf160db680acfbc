import { useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { call, urlOf } from "../shared/api.ts"
import type { SuccessOf } from "../shared/api-types.ts"
import { formatBytes, formatDateTime } from "../shared/format.ts"
import { ActionButton, Field, Form, Select, useForm } from "../shared/forms.tsx"
import { Table } from "../shared/lists.tsx"
import { CopyText, Loaded, Panel } from "../shared/ui.tsx"

const DEVICES = ["devices"] as const
const PLATFORMS = ["ios", "android", "windows", "macos", "linux", "router", "other"] as const
type Credentials = SuccessOf<"vpn", "createDevice">

/** Devices ([D90], [D107]): presence and usage, QR code, config downloads, the subscription link ([D122]), rotate and delete. */
export const Devices = () => {
  const { t } = useTranslation()
  const devices = useQuery({ queryKey: DEVICES, queryFn: () => call("vpn", "listDevices") })
  const [open, setOpen] = useState<number | undefined>(undefined)
  const [created, setCreated] = useState<Credentials | undefined>(undefined)
  const form = useForm({
    initial: { name: "", platform: "ios" },
    submit: (v) => call("vpn", "createDevice", { payload: { name: v.name, platform: v.platform as (typeof PLATFORMS)[number] } }),
    onDone: (device) => {
      setCreated(device)
      setOpen(device.id)
      form.reset()
    },
    invalidate: [DEVICES]
  })
  return (
    <>
      <h1>{t("devices.title")}</h1>
      <Loaded query={devices}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(device) => device.id}
            empty={<p>{t("devices.none")}</p>}
            columns={[
              [t("devices.name"), (device) => device.name],
              [t("devices.platform"), (device) => t(`platform.${device.platform}`)],
              [
                t("devices.presence"),
                (device) => (
                  <>
                    <span className={device.online ? "online" : "offline"}>{device.online ? t("devices.online") : t("devices.offline")}</span>
                    {device.last_handshake_at !== null && <small> · {formatDateTime(device.last_handshake_at)}</small>}
                  </>
                )
              ],
              [t("devices.usage"), (device) => formatBytes(device.period_bytes)],
              [
                t("devices.actions"),
                (device) => (
                  <button
                    type="button"
                    className="outline"
                    aria-expanded={open === device.id}
                    onClick={() => setOpen(open === device.id ? undefined : device.id)}
                  >
                    {t("devices.setUp", { name: device.name })}
                  </button>
                ),
                { hiddenLabel: true }
              ]
            ]}
          />
        )}
      </Loaded>
      {created !== undefined && (
        <article role="status">
          <p>{t("devices.created", { name: created.name })}</p>
          <p>
            {t("devices.openvpnCredentials")}: <code>{created.openvpn.username}</code> / <code>{created.openvpn.password}</code>
          </p>
        </article>
      )}
      {open !== undefined && <DevicePanel id={open} onGone={() => setOpen(undefined)} />}
      <Panel title={t("devices.add")}>
        <Form form={form} submit={t("devices.addButton")}>
          <div className="grid">
            <Field {...form.field("name")} label={t("devices.name")} required />
            <Select {...form.field("platform")} label={t("devices.platform")} options={PLATFORMS.map((p) => [p, t(`platform.${p}`)] as const)} />
          </div>
        </Form>
      </Panel>
    </>
  )
}

const DevicePanel = ({ id, onGone }: { readonly id: number; readonly onGone: () => void }) => {
  const { t } = useTranslation()
  const device = useQuery({ queryKey: ["device", id], queryFn: () => call("vpn", "getDevice", { path: { device: id } }) })
  const servers = useQuery({ queryKey: ["servers"], queryFn: () => call("vpn", "listServers") })
  const [server, setServer] = useState("")
  const chosen = servers.data?.find((s) => String(s.id) === server) ?? servers.data?.find((s) => s.protocol === "wireguard") ?? servers.data?.[0]
  return (
    <Loaded query={device}>
      {(d) => (
        <article aria-labelledby={`device-${d.id}`}>
          <header>
            <h2 id={`device-${d.id}`}>{d.name}</h2>
          </header>
          <Loaded query={servers}>
            {(list) =>
              list.length === 0 ? (
                <p>{t("devices.noServers")}</p>
              ) : (
                <>
                  <Select
                    name="server"
                    label={t("devices.server")}
                    value={chosen === undefined ? "" : String(chosen.id)}
                    onChange={setServer}
                    options={list.map((s) => [String(s.id), `${s.name} (${s.city}, ${s.protocol === "wireguard" ? "WireGuard" : "OpenVPN"})`] as const)}
                  />
                  {chosen !== undefined && chosen.protocol === "wireguard" && (
                    <div className="qr">
                      <img
                        src={urlOf("vpn", "deviceWireguardQr", { path: { device: d.id, server: chosen.id } })}
                        alt={t("devices.qrAlt", { device: d.name, server: chosen.name })}
                        width={240}
                        height={240}
                      />
                      <p>{t("devices.qrHint")}</p>
                      <a href={urlOf("vpn", "deviceWireguard", { path: { device: d.id, server: chosen.id } })} download role="button">
                        {t("devices.downloadWireguard")}
                      </a>
                    </div>
                  )}
                  {chosen !== undefined && chosen.protocol === "openvpn" && (
                    <a href={urlOf("vpn", "deviceOpenvpn", { path: { device: d.id, server: chosen.id } })} download role="button">
                      {t("devices.downloadOpenvpn")}
                    </a>
                  )}
                </>
              )
            }
          </Loaded>
          <SubscriptionLink device={d} />
          <Table
            rows={d.servers}
            rowKey={(s) => s.server_id}
            caption={t("devices.perServer")}
            empty={null}
            columns={[
              [t("devices.server"), (s) => s.server_name],
              [t("devices.address"), (s) => s.address ?? "—"],
              [t("devices.lastHandshake"), (s) => formatDateTime(s.last_handshake_at)],
              [t("devices.received"), (s) => formatBytes(s.rx_bytes)],
              [t("devices.sent"), (s) => formatBytes(s.tx_bytes)]
            ]}
          />
          <footer className="actions">
            <ActionButton
              className="secondary"
              confirm={t("devices.rotateConfirm")}
              action={() => call("vpn", "rotateDevice", { path: { device: d.id } })}
              invalidate={[["device", d.id], DEVICES]}
            >
              {t("devices.rotate")}
            </ActionButton>
            <ActionButton
              className="secondary outline"
              confirm={t("devices.deleteConfirm")}
              action={() => call("vpn", "deleteDevice", { path: { device: d.id } })}
              invalidate={[DEVICES]}
              onDone={onGone}
            >
              {t("devices.delete")}
            </ActionButton>
          </footer>
        </article>
      )}
    </Loaded>
  )
}

type Device = SuccessOf<"vpn", "getDevice">

/** The path of the link's QR image: same origin as the portal (the CSP's `img-src 'self'`), whatever host PUBLIC_URL names. */
const qrPath = (subscriptionUrl: string) => {
  const url = new URL(subscriptionUrl, window.location.href)
  return `${url.pathname}?format=qr`
}

/**
 * [D122]: the device's one link for VPN apps that import and refresh by URL: copy it, show it as
 * a QR code (the link's own `?format=qr`, an image from the API), renew it, and see who fetched
 * it. The QR image is loaded when asked for: each load is a fetch of the link, which the log
 * shows.
 */
const SubscriptionLink = ({ device }: { readonly device: Device }) => {
  const { t } = useTranslation()
  const [showQr, setShowQr] = useState(false)
  const [qrFailed, setQrFailed] = useState(false)
  const fetches = useQuery({
    queryKey: ["fetches", device.id],
    queryFn: () => call("vpn", "subscriptionFetches", { path: { device: device.id } })
  })
  const headingId = `link-${device.id}`
  return (
    <section aria-labelledby={headingId} className="device-link">
      <h3 id={headingId}>{t("devices.link")}</h3>
      <p>{t("devices.linkHint")}</p>
      <CopyText name="subscription_url" label={t("devices.linkLabel", { name: device.name })} value={device.subscription_url} />
      <div className="actions">
        <button
          type="button"
          className="outline"
          aria-expanded={showQr}
          onClick={() => {
            setShowQr(!showQr)
            setQrFailed(false)
          }}
        >
          {showQr ? t("devices.linkQrHide") : t("devices.linkQrShow")}
        </button>
        <ActionButton
          className="secondary outline"
          confirm={t("devices.linkRotateConfirm")}
          action={() => call("vpn", "rotateSubscription", { path: { device: device.id } })}
          invalidate={[["device", device.id], DEVICES, ["fetches", device.id]]}
          onDone={() => setQrFailed(false)}
        >
          {t("devices.linkRotate")}
        </ActionButton>
      </div>
      {showQr && (
        <div className="qr">
          {qrFailed ? (
            <p role="alert" className="form-error">
              {t("devices.linkQrFailed")}
            </p>
          ) : (
            <img
              key={device.subscription_url}
              src={qrPath(device.subscription_url)}
              alt={t("devices.linkQrAlt", { name: device.name })}
              width={240}
              height={240}
              onLoad={() => void fetches.refetch()}
              onError={() => setQrFailed(true)}
            />
          )}
          <p>{t("devices.linkQrHint")}</p>
        </div>
      )}
      <Loaded query={fetches}>
        {(list) => (
          <Table
            rows={list.map((f, i) => ({ ...f, key: `${f.at}-${i}` }))}
            rowKey={(f) => f.key}
            caption={t("devices.fetches")}
            empty={<p>{t("devices.fetchesNone")}</p>}
            columns={[
              [t("devices.fetchedAt"), (f) => formatDateTime(f.at)],
              [t("devices.address"), (f) => f.address ?? "—"],
              [t("devices.userAgent"), (f) => f.user_agent ?? "—"]
            ]}
          />
        )}
      </Loaded>
    </section>
  )
}
