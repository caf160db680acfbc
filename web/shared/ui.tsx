/**
 * The few building blocks both apps share besides forms (`forms.tsx`) and lists (`lists.tsx`):
 * a query's states, a titled panel, a text to copy, a status mark. Pico CSS styles the semantic
 * elements (a static stylesheet: nothing injects styles at run time, [D118]'s CSP).
 */
import { type ReactNode, useId, useState } from "react"
import { useTranslation } from "react-i18next"
import { errorMessage } from "./api.ts"

/** A query's states: busy, its error, or its data. */
export const Loaded = <A,>(props: {
  readonly query: { readonly data: A | undefined; readonly error: unknown; readonly isPending: boolean }
  readonly children: (data: A) => ReactNode
}) => {
  const { t } = useTranslation()
  if (props.query.isPending) return <p aria-busy="true">{t("common.loading")}</p>
  if (props.query.error !== null && props.query.error !== undefined) {
    return (
      <p role="alert" className="form-error">
        {errorMessage(props.query.error)}
      </p>
    )
  }
  return <>{props.children(props.query.data as A)}</>
}

/**
 * A text to copy (a link): shown read-only with a visible label, and a button that puts it on the
 * clipboard (or, where the browser refuses, selects it for the person to copy).
 */
export const CopyText = ({ label, value, name }: { readonly label: string; readonly value: string; readonly name: string }) => {
  const { t } = useTranslation()
  const id = useId()
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value)
      setCopied(true)
    } catch {
      const input = document.getElementById(id) as HTMLInputElement | null
      input?.focus()
      input?.select()
    }
  }
  return (
    <div className="field copy">
      <label htmlFor={id}>{label}</label>
      <div role="group">
        <input id={id} name={name} value={value} readOnly onFocus={(e) => e.target.select()} />
        <button type="button" className="secondary" onClick={() => void copy()}>
          {t("common.copy")}
        </button>
      </div>
      {copied && <small role="status">{t("common.copied")}</small>}
    </div>
  )
}

export const Status = ({ value }: { readonly value: string }) => {
  const { t } = useTranslation()
  return <mark className={`status status-${value}`}>{t(`status.${value}`, { defaultValue: value })}</mark>
}

/** A titled part of a page: an article under its `h2`. */
export const Panel = (props: { readonly title: ReactNode; readonly children: ReactNode }) => (
  <article>
    <header>
      <h2>{props.title}</h2>
    </header>
    {props.children}
  </article>
)
