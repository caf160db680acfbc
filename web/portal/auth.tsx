import { useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link, useLocation, useSearch } from "wouter"
import { call } from "../shared/api.ts"
import { SESSION_KEY, signIn, signUp } from "../shared/session.ts"
import { ActionButton, Field, FormError, Submit, useForm } from "../shared/forms.tsx"
import { safeNext, TelegramSignInButton } from "./telegram.tsx"

export const SignIn = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const [, navigate] = useLocation()
  const next = safeNext(new URLSearchParams(useSearch()).get("next"))
  const [needsCode, setNeedsCode] = useState(false)
  const form = useForm({
    initial: { email: "", password: "", otp: "" },
    submit: (v) => signIn({ email: v.email, password: v.password, otp: v.otp === "" ? undefined : v.otp }),
    onDone: (user) => {
      client.setQueryData(SESSION_KEY, user)
      // the console is another app: a page load
      if (next === "/admin" || next.startsWith("/admin/")) window.location.assign(next)
      else navigate(next)
    }
  })
  // [D97]: the second factor is asked for when the API says it is needed
  const otpError = form.fieldError("otp")
  if (otpError !== undefined && !needsCode) setNeedsCode(true)
  return (
    <article className="narrow">
      <h1>{t("auth.signInTitle")}</h1>
      <form onSubmit={form.onSubmit} noValidate>
        <Field
          name="email"
          type="email"
          label={t("auth.email")}
          autoComplete="username"
          value={form.values.email}
          onChange={form.set("email")}
          error={form.fieldError("email")}
          required
        />
        <Field
          name="password"
          type="password"
          label={t("auth.password")}
          autoComplete="current-password"
          value={form.values.password}
          onChange={form.set("password")}
          error={form.fieldError("password")}
          required
        />
        {needsCode && (
          <Field
            name="otp"
            label={t("auth.otp")}
            inputMode="numeric"
            autoComplete="one-time-code"
            value={form.values.otp}
            onChange={form.set("otp")}
            error={otpError}
            hint={t("auth.otpHint")}
          />
        )}
        <FormError message={form.formError} />
        <Submit pending={form.pending}>{t("auth.signIn")}</Submit>
      </form>
      <TelegramSignInButton next={next} />
      <p>
        <Link href="/forgot-password">{t("auth.forgot")}</Link> · <Link href="/sign-up">{t("auth.noAccount")}</Link>
      </p>
    </article>
  )
}

export const SignUp = () => {
  const { t } = useTranslation()
  const client = useQueryClient()
  const [, navigate] = useLocation()
  const form = useForm({
    initial: { name: "", email: "", password: "", password_confirmation: "" },
    submit: (v) => signUp(v),
    onDone: (user) => {
      client.setQueryData(SESSION_KEY, user)
      navigate("/verify")
    }
  })
  return (
    <article className="narrow">
      <h1>{t("auth.signUpTitle")}</h1>
      <form onSubmit={form.onSubmit} noValidate>
        <Field
          name="name"
          label={t("auth.name")}
          autoComplete="name"
          value={form.values.name}
          onChange={form.set("name")}
          error={form.fieldError("name")}
          required
        />
        <Field
          name="email"
          type="email"
          label={t("auth.email")}
          autoComplete="email"
          value={form.values.email}
          onChange={form.set("email")}
          error={form.fieldError("email")}
          required
        />
        <Field
          name="password"
          type="password"
          label={t("auth.password")}
          autoComplete="new-password"
          value={form.values.password}
          onChange={form.set("password")}
          error={form.fieldError("password")}
          required
        />
        <Field
          name="password_confirmation"
          type="password"
          label={t("auth.confirmPassword")}
          autoComplete="new-password"
          value={form.values.password_confirmation}
          onChange={form.set("password_confirmation")}
          error={form.fieldError("password_confirmation")}
          required
        />
        <FormError message={form.formError} />
        <Submit pending={form.pending}>{t("auth.createAccount")}</Submit>
      </form>
      <p>
        <Link href="/sign-in">{t("auth.haveAccount")}</Link>
      </p>
    </article>
  )
}

/** After sign-up: the link is in the mail ([D26]); a new one on request. */
export const VerifyNotice = () => {
  const { t } = useTranslation()
  const [sent, setSent] = useState(false)
  return (
    <article className="narrow">
      <h1>{t("verify.title")}</h1>
      <p>{t("verify.text")}</p>
      {sent ? (
        <p role="status">{t("verify.sent")}</p>
      ) : (
        <ActionButton className="secondary" action={() => call("accounts", "resendVerification")} onDone={() => setSent(true)}>
          {t("verify.resend")}
        </ActionButton>
      )}
      <p>
        <Link href="/plans">{t("verify.toPlans")}</Link>
      </p>
    </article>
  )
}

export const ForgotPassword = () => {
  const { t } = useTranslation()
  const form = useForm({
    initial: { email: "" },
    submit: (v) => call("accounts", "forgotPassword", { payload: { email: v.email } })
  })
  return (
    <article className="narrow">
      <h1>{t("forgot.title")}</h1>
      {form.done ? (
        <p role="status">{t("forgot.sent")}</p>
      ) : (
        <form onSubmit={form.onSubmit} noValidate>
          <p>{t("forgot.text")}</p>
          <Field
            name="email"
            type="email"
            label={t("auth.email")}
            autoComplete="email"
            value={form.values.email}
            onChange={form.set("email")}
            error={form.fieldError("email")}
            required
          />
          <FormError message={form.formError} />
          <Submit pending={form.pending}>{t("forgot.send")}</Submit>
        </form>
      )}
      <p>
        <Link href="/sign-in">{t("auth.signIn")}</Link>
      </p>
    </article>
  )
}
