import { useQueryClient } from "@tanstack/react-query"
import { useState } from "react"
import { useTranslation } from "react-i18next"
import { Link, useLocation, useSearch } from "wouter"
import { call } from "../shared/api.ts"
import { ActionButton, Field, Form, useForm } from "../shared/forms.tsx"
import { SESSION_KEY, signIn, signUp } from "../shared/session.ts"
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
  if (form.fieldError("otp") !== undefined && !needsCode) setNeedsCode(true)
  return (
    <article className="narrow">
      <h1>{t("auth.signInTitle")}</h1>
      <Form form={form} submit={t("auth.signIn")}>
        <Field {...form.field("email")} type="email" label={t("auth.email")} autoComplete="username" required />
        <Field {...form.field("password")} type="password" label={t("auth.password")} autoComplete="current-password" required />
        {needsCode && <Field {...form.field("otp")} label={t("auth.otp")} inputMode="numeric" autoComplete="one-time-code" hint={t("auth.otpHint")} />}
      </Form>
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
      <Form form={form} submit={t("auth.createAccount")}>
        <Field {...form.field("name")} label={t("auth.name")} autoComplete="name" required />
        <Field {...form.field("email")} type="email" label={t("auth.email")} autoComplete="email" required />
        <Field {...form.field("password")} type="password" label={t("auth.password")} autoComplete="new-password" required />
        <Field {...form.field("password_confirmation")} type="password" label={t("auth.confirmPassword")} autoComplete="new-password" required />
      </Form>
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
        <Form form={form} submit={t("forgot.send")}>
          <p>{t("forgot.text")}</p>
          <Field {...form.field("email")} type="email" label={t("auth.email")} autoComplete="email" required />
        </Form>
      )}
      <p>
        <Link href="/sign-in">{t("auth.signIn")}</Link>
      </p>
    </article>
  )
}
