import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query"
import { useEffect, useState } from "react"
import { useTranslation } from "react-i18next"
import { useLocation } from "wouter"
import { ApiError, call } from "../shared/api.ts"
import { formatDateTime } from "../shared/format.ts"
import { ActionButton, Field, Form, FormError, Select, useForm } from "../shared/forms.tsx"
import { isLocale, type Locale, LOCALE_NAMES, LOCALES } from "../shared/i18n.ts"
import { Table } from "../shared/lists.tsx"
import { chooseLocale, SESSION_KEY } from "../shared/session.ts"
import { Loaded, Panel } from "../shared/ui.tsx"
import { TelegramAccount } from "./telegram.tsx"

/** Profile, language, password, settings, Telegram ([D125]), two-factor, API keys, sessions, account deletion. */
export const Account = () => {
  const { t } = useTranslation()
  return (
    <>
      <h1>{t("account.title")}</h1>
      <Profile />
      <Language />
      <Password />
      <Settings />
      <TelegramAccount />
      <TwoFactor />
      <ApiKeys />
      <Sessions />
      <DeleteAccount />
    </>
  )
}

const Profile = () => {
  const profile = useQuery({ queryKey: ["profile"], queryFn: () => call("accounts", "profile") })
  return <Loaded query={profile}>{(p) => <ProfileForm name={p.name} email={p.email} />}</Loaded>
}

const ProfileForm = ({ name, email }: { readonly name: string; readonly email: string }) => {
  const { t } = useTranslation()
  const form = useForm({
    initial: { name, email },
    submit: (v) => call("accounts", "updateProfile", { payload: { name: v.name, ...(v.email === email ? {} : { email: v.email }) } }),
    invalidate: [["profile"], SESSION_KEY]
  })
  return (
    <Panel title={t("account.profile")}>
      <Form form={form} submit={t("common.save")} saved>
        <Field {...form.field("name")} label={t("auth.name")} />
        <Field {...form.field("email")} type="email" label={t("auth.email")} />
      </Form>
    </Panel>
  )
}

/** [D120]: the account's language (mails, PDFs, pages) and this app's. */
const Language = () => {
  const { t, i18n } = useTranslation()
  const [value, setValue] = useState<Locale>(isLocale(i18n.language) ? i18n.language : "en")
  const client = useQueryClient()
  const save = useMutation({ mutationFn: (locale: Locale) => chooseLocale(client, locale) })
  return (
    <Panel title={t("account.language")}>
      <Select
        name="locale"
        label={t("common.language")}
        value={value}
        onChange={(v) => {
          if (!isLocale(v)) return
          setValue(v)
          save.mutate(v)
        }}
        options={LOCALES.map((l) => [l, LOCALE_NAMES[l]] as const)}
        error={save.error instanceof ApiError ? (save.error.field("locale") ?? save.error.message) : undefined}
      />
    </Panel>
  )
}

const Password = () => {
  const { t } = useTranslation()
  const form = useForm({
    initial: { current_password: "", password: "", password_confirmation: "" },
    submit: (v) => call("accounts", "changePassword", { payload: v }),
    onDone: () => form.reset()
  })
  return (
    <Panel title={t("account.password")}>
      <Form form={form} submit={t("account.changePassword")} saved>
        <Field {...form.field("current_password")} type="password" autoComplete="current-password" label={t("account.currentPassword")} />
        <Field {...form.field("password")} type="password" autoComplete="new-password" label={t("account.newPassword")} />
        <Field {...form.field("password_confirmation")} type="password" autoComplete="new-password" label={t("auth.confirmPassword")} />
      </Form>
    </Panel>
  )
}

const Settings = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const settings = useQuery({ queryKey: ["settings"], queryFn: () => call("accounts", "settings") })
  const save = useMutation({
    mutationFn: (value: boolean) => call("accounts", "updateSettings", { payload: { email_notifications: value } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ["settings"] })
  })
  return (
    <Panel title={t("account.settings")}>
      <Loaded query={settings}>
        {(s) => (
          <label>
            <input type="checkbox" role="switch" checked={s.email_notifications} onChange={(e) => save.mutate(e.target.checked)} />
            {t("account.emailNotifications")}
          </label>
        )}
      </Loaded>
    </Panel>
  )
}

/** [D97]: set up with an authenticator app (QR code of the `otpauth://` URL), confirm, or turn off. */
const TwoFactor = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const user = useQuery({ queryKey: ["user"], queryFn: () => call("accounts", "user") })
  const setup = useMutation({ mutationFn: () => call("accounts", "setUpTwoFactor") })
  const [qr, setQr] = useState<string | undefined>(undefined)
  useEffect(() => {
    if (setup.data === undefined) return
    // the QR library the API uses, loaded only when someone sets up two-factor sign-in
    void import("qrcode/lib/browser.js").then((QRCode) => QRCode.toDataURL(setup.data.otpauth_url, { margin: 1, width: 220 })).then(setQr)
  }, [setup.data])
  const confirm = useForm({
    initial: { code: "" },
    submit: (v) => call("accounts", "confirmTwoFactor", { payload: v }),
    invalidate: [["user"]]
  })
  const disable = useForm({
    initial: { password: "", code: "" },
    submit: (v) => call("accounts", "disableTwoFactor", { payload: v }),
    onDone: () => {
      setup.reset()
      void client.invalidateQueries({ queryKey: ["user"] })
    }
  })
  return (
    <Panel title={t("account.twoFactor")}>
      <Loaded query={user}>
        {(u) =>
          u.two_factor ? (
            <Form form={disable} submit={t("account.twoFactorDisable")}>
              <p>{t("account.twoFactorOn")}</p>
              {confirm.result !== undefined && (
                <div role="status">
                  <p>{t("account.recoveryCodes")}</p>
                  <pre>{(confirm.result.data as { recovery_codes?: ReadonlyArray<string> }).recovery_codes?.join("\n")}</pre>
                </div>
              )}
              <Field {...disable.field("password")} type="password" autoComplete="current-password" label={t("auth.password")} />
              <Field {...disable.field("code")} label={t("auth.otp")} inputMode="numeric" />
            </Form>
          ) : setup.data === undefined ? (
            <>
              <p>{t("account.twoFactorOff")}</p>
              <button type="button" aria-busy={setup.isPending} onClick={() => setup.mutate()}>
                {t("account.twoFactorSetUp")}
              </button>
            </>
          ) : (
            <Form form={confirm} submit={t("account.twoFactorConfirm")}>
              <p>{t("account.twoFactorScan")}</p>
              {qr !== undefined && <img src={qr} alt={t("account.twoFactorQrAlt")} width={220} height={220} />}
              <p>
                <small>
                  {t("account.twoFactorSecret")}: <code>{setup.data.secret}</code>
                </small>
              </p>
              <Field {...confirm.field("code")} label={t("auth.otp")} inputMode="numeric" autoComplete="one-time-code" />
            </Form>
          )
        }
      </Loaded>
    </Panel>
  )
}

const SCOPES = ["read", "write"] as const

/** [D98]: keys for scripts; the secret is shown once. */
const ApiKeys = () => {
  const { t } = useTranslation()
  const keys = useQuery({ queryKey: ["api-keys"], queryFn: () => call("accounts", "listApiKeys") })
  const form = useForm({
    initial: { name: "", scope: "read" },
    submit: (v) => call("accounts", "createApiKey", { payload: { name: v.name, scopes: v.scope === "write" ? ["read", "write"] : ["read"] } }),
    invalidate: [["api-keys"]]
  })
  return (
    <Panel title={t("account.apiKeys")}>
      <Loaded query={keys}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(key) => key.id}
            empty={<p>{t("account.noApiKeys")}</p>}
            columns={[
              [t("account.keyName"), (key) => key.name],
              [t("account.scopes"), (key) => key.scopes.join(", ")],
              [t("account.lastUsed"), (key) => formatDateTime(key.last_used_at)],
              [
                t("devices.actions"),
                (key) => (
                  <ActionButton
                    className="secondary outline"
                    action={() => call("accounts", "revokeApiKey", { path: { key: key.id } })}
                    invalidate={[["api-keys"]]}
                  >
                    {t("account.revoke")}
                  </ActionButton>
                ),
                { hiddenLabel: true }
              ]
            ]}
          />
        )}
      </Loaded>
      {form.result !== undefined && (
        <p role="status">
          {t("account.keyCreated")} <code>{form.result.key}</code>
        </p>
      )}
      <Form form={form} submit={t("account.createKey")}>
        <div className="grid">
          <Field {...form.field("name")} label={t("account.keyName")} />
          <Select
            {...form.field("scope")}
            label={t("account.scopes")}
            options={SCOPES.map((s) => [s, t(`account.scope.${s}`)] as const)}
            error={form.fieldError("scopes")}
          />
        </div>
      </Form>
    </Panel>
  )
}

const Sessions = () => {
  const { t } = useTranslation()
  const sessions = useQuery({ queryKey: ["sessions"], queryFn: () => call("accounts", "listSessions") })
  return (
    <Panel title={t("account.sessions")}>
      <Loaded query={sessions}>
        {(list) => (
          <Table
            rows={list}
            rowKey={(s) => s.id}
            columns={[
              [
                t("account.device"),
                (s) => (
                  <>
                    {s.user_agent ?? "—"}
                    {s.current && (
                      <>
                        {" "}
                        · <strong>{t("account.thisSession")}</strong>
                      </>
                    )}
                  </>
                )
              ],
              [t("account.address"), (s) => s.ip ?? "—"],
              [t("account.lastUsed"), (s) => formatDateTime(s.last_used_at)],
              [
                t("devices.actions"),
                (s) =>
                  !s.current && (
                    <ActionButton
                      className="secondary outline"
                      action={() => call("accounts", "revokeSession", { path: { session: s.id } })}
                      invalidate={[["sessions"]]}
                    >
                      {t("account.revoke")}
                    </ActionButton>
                  ),
                { hiddenLabel: true }
              ]
            ]}
          />
        )}
      </Loaded>
    </Panel>
  )
}

const DeleteAccount = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const [, navigate] = useLocation()
  const form = useForm({
    initial: { password: "" },
    submit: (v) => call("accounts", "deleteAccount", { payload: v }),
    onDone: () => {
      client.setQueryData(SESSION_KEY, null)
      navigate("/")
    }
  })
  return (
    <Panel title={t("account.delete")}>
      <form onSubmit={form.onSubmit} noValidate>
        <p>{t("account.deleteText")}</p>
        <Field {...form.field("password")} type="password" autoComplete="current-password" label={t("auth.password")} />
        <FormError message={form.formError} />
        <button type="submit" className="contrast" aria-busy={form.pending}>
          {t("account.deleteButton")}
        </button>
      </form>
    </Panel>
  )
}
