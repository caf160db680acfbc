import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query"
import { useEffect, useState } from "react"
import { useTranslation } from "react-i18next"
import { useLocation } from "wouter"
import { ApiError, call } from "../shared/api.ts"
import { formatDateTime } from "../shared/format.ts"
import { isLocale, type Locale, LOCALE_NAMES, LOCALES } from "../shared/i18n.ts"
import { chooseLocale, SESSION_KEY } from "../shared/session.ts"
import { ActionButton, Field, FormError, Select, Submit, useForm } from "../shared/forms.tsx"
import { Loaded } from "../shared/ui.tsx"
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
    <article>
      <header>
        <h2>{t("account.profile")}</h2>
      </header>
      <form onSubmit={form.onSubmit} noValidate>
        <Field name="name" label={t("auth.name")} value={form.values.name} onChange={form.set("name")} error={form.fieldError("name")} />
        <Field name="email" type="email" label={t("auth.email")} value={form.values.email} onChange={form.set("email")} error={form.fieldError("email")} />
        <FormError message={form.formError} />
        {form.done && <p role="status">{t("common.saved")}</p>}
        <Submit pending={form.pending}>{t("common.save")}</Submit>
      </form>
    </article>
  )
}

/** [D120]: the account's language (mails, PDFs, pages) and this app's. */
const Language = () => {
  const { t, i18n } = useTranslation()
  const [value, setValue] = useState<Locale>(isLocale(i18n.language) ? i18n.language : "en")
  const client = useQueryClient()
  const save = useMutation({ mutationFn: (locale: Locale) => chooseLocale(client, locale) })
  return (
    <article>
      <header>
        <h2>{t("account.language")}</h2>
      </header>
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
    </article>
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
    <article>
      <header>
        <h2>{t("account.password")}</h2>
      </header>
      <form onSubmit={form.onSubmit} noValidate>
        <Field
          name="current_password"
          type="password"
          autoComplete="current-password"
          label={t("account.currentPassword")}
          value={form.values.current_password}
          onChange={form.set("current_password")}
          error={form.fieldError("current_password")}
        />
        <Field
          name="password"
          type="password"
          autoComplete="new-password"
          label={t("account.newPassword")}
          value={form.values.password}
          onChange={form.set("password")}
          error={form.fieldError("password")}
        />
        <Field
          name="password_confirmation"
          type="password"
          autoComplete="new-password"
          label={t("auth.confirmPassword")}
          value={form.values.password_confirmation}
          onChange={form.set("password_confirmation")}
          error={form.fieldError("password_confirmation")}
        />
        <FormError message={form.formError} />
        {form.done && <p role="status">{t("common.saved")}</p>}
        <Submit pending={form.pending}>{t("account.changePassword")}</Submit>
      </form>
    </article>
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
    <article>
      <header>
        <h2>{t("account.settings")}</h2>
      </header>
      <Loaded query={settings}>
        {(s) => (
          <label>
            <input type="checkbox" role="switch" checked={s.email_notifications} onChange={(e) => save.mutate(e.target.checked)} />
            {t("account.emailNotifications")}
          </label>
        )}
      </Loaded>
    </article>
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
    <article>
      <header>
        <h2>{t("account.twoFactor")}</h2>
      </header>
      <Loaded query={user}>
        {(u) =>
          u.two_factor ? (
            <form onSubmit={disable.onSubmit} noValidate>
              <p>{t("account.twoFactorOn")}</p>
              {confirm.result !== undefined && (
                <div role="status">
                  <p>{t("account.recoveryCodes")}</p>
                  <pre>{(confirm.result.data as { recovery_codes?: ReadonlyArray<string> }).recovery_codes?.join("\n")}</pre>
                </div>
              )}
              <Field
                name="password"
                type="password"
                autoComplete="current-password"
                label={t("auth.password")}
                value={disable.values.password}
                onChange={disable.set("password")}
                error={disable.fieldError("password")}
              />
              <Field
                name="code"
                label={t("auth.otp")}
                inputMode="numeric"
                value={disable.values.code}
                onChange={disable.set("code")}
                error={disable.fieldError("code")}
              />
              <FormError message={disable.formError} />
              <Submit pending={disable.pending}>{t("account.twoFactorDisable")}</Submit>
            </form>
          ) : setup.data === undefined ? (
            <>
              <p>{t("account.twoFactorOff")}</p>
              <button type="button" aria-busy={setup.isPending} onClick={() => setup.mutate()}>
                {t("account.twoFactorSetUp")}
              </button>
            </>
          ) : (
            <form onSubmit={confirm.onSubmit} noValidate>
              <p>{t("account.twoFactorScan")}</p>
              {qr !== undefined && <img src={qr} alt={t("account.twoFactorQrAlt")} width={220} height={220} />}
              <p>
                <small>
                  {t("account.twoFactorSecret")}: <code>{setup.data.secret}</code>
                </small>
              </p>
              <Field
                name="code"
                label={t("auth.otp")}
                inputMode="numeric"
                autoComplete="one-time-code"
                value={confirm.values.code}
                onChange={confirm.set("code")}
                error={confirm.fieldError("code")}
              />
              <FormError message={confirm.formError} />
              <Submit pending={confirm.pending}>{t("account.twoFactorConfirm")}</Submit>
            </form>
          )
        }
      </Loaded>
    </article>
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
    <article>
      <header>
        <h2>{t("account.apiKeys")}</h2>
      </header>
      <Loaded query={keys}>
        {(list) =>
          list.length === 0 ? (
            <p>{t("account.noApiKeys")}</p>
          ) : (
            <div className="table">
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("account.keyName")}</th>
                    <th scope="col">{t("account.scopes")}</th>
                    <th scope="col">{t("account.lastUsed")}</th>
                    <th scope="col">
                      <span className="visually-hidden">{t("devices.actions")}</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((key) => (
                    <tr key={key.id}>
                      <td>{key.name}</td>
                      <td>{key.scopes.join(", ")}</td>
                      <td>{formatDateTime(key.last_used_at)}</td>
                      <td>
                        <ActionButton
                          className="secondary outline"
                          action={() => call("accounts", "revokeApiKey", { path: { key: key.id } })}
                          invalidate={[["api-keys"]]}
                        >
                          {t("account.revoke")}
                        </ActionButton>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loaded>
      {form.result !== undefined && (
        <p role="status">
          {t("account.keyCreated")} <code>{form.result.key}</code>
        </p>
      )}
      <form onSubmit={form.onSubmit} noValidate>
        <div className="grid">
          <Field name="name" label={t("account.keyName")} value={form.values.name} onChange={form.set("name")} error={form.fieldError("name")} />
          <Select
            name="scope"
            label={t("account.scopes")}
            value={form.values.scope}
            onChange={form.set("scope")}
            options={SCOPES.map((s) => [s, t(`account.scope.${s}`)] as const)}
            error={form.fieldError("scopes")}
          />
        </div>
        <FormError message={form.formError} />
        <Submit pending={form.pending}>{t("account.createKey")}</Submit>
      </form>
    </article>
  )
}

const Sessions = () => {
  const { t } = useTranslation()
  const sessions = useQuery({ queryKey: ["sessions"], queryFn: () => call("accounts", "listSessions") })
  return (
    <article>
      <header>
        <h2>{t("account.sessions")}</h2>
      </header>
      <Loaded query={sessions}>
        {(list) => (
          <div className="table">
            <table>
              <thead>
                <tr>
                  <th scope="col">{t("account.device")}</th>
                  <th scope="col">{t("account.address")}</th>
                  <th scope="col">{t("account.lastUsed")}</th>
                  <th scope="col">
                    <span className="visually-hidden">{t("devices.actions")}</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((s) => (
                  <tr key={s.id}>
                    <td>
                      {s.user_agent ?? "—"}
                      {s.current && (
                        <>
                          {" "}
                          · <strong>{t("account.thisSession")}</strong>
                        </>
                      )}
                    </td>
                    <td>{s.ip ?? "—"}</td>
                    <td>{formatDateTime(s.last_used_at)}</td>
                    <td>
                      {!s.current && (
                        <ActionButton
                          className="secondary outline"
                          action={() => call("accounts", "revokeSession", { path: { session: s.id } })}
                          invalidate={[["sessions"]]}
                        >
                          {t("account.revoke")}
                        </ActionButton>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Loaded>
    </article>
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
    <article>
      <header>
        <h2>{t("account.delete")}</h2>
      </header>
      <form onSubmit={form.onSubmit} noValidate>
        <p>{t("account.deleteText")}</p>
        <Field
          name="password"
          type="password"
          autoComplete="current-password"
          label={t("auth.password")}
          value={form.values.password}
          onChange={form.set("password")}
          error={form.fieldError("password")}
        />
        <FormError message={form.formError} />
        <button type="submit" className="contrast" aria-busy={form.pending}>
          {t("account.deleteButton")}
        </button>
      </form>
    </article>
  )
}
