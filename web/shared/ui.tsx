/**
 * The few building blocks both apps share: labelled fields that show the API's message for
 * their field ([D121]), forms that submit through a mutation, pagers, notes. Pico CSS styles the
 * semantic elements (a static stylesheet: nothing injects styles at run time, [D118]'s CSP).
 */
import { type QueryKey, useMutation, useQueryClient } from "@tanstack/react-query"
import { type FormEvent, type ReactNode, useId, useState } from "react"
import { useTranslation } from "react-i18next"
import { ApiError } from "./api.ts"
import { LOCALES, type Locale, LOCALE_NAMES } from "./i18n.ts"

export interface FieldProps {
  readonly name: string
  readonly label: string
  readonly value: string
  readonly onChange: (value: string) => void
  readonly error?: string | undefined
  readonly type?: string
  readonly autoComplete?: string
  readonly required?: boolean
  readonly multiline?: boolean
  readonly hint?: string
  readonly inputMode?: "numeric" | "text" | "email" | "decimal"
}

/** A visible label, the control, and the API's message for this field beside it. */
export const Field = (props: FieldProps) => {
  const id = useId()
  const errorId = `${id}-error`
  const common = {
    id,
    name: props.name,
    value: props.value,
    required: props.required,
    "aria-invalid": props.error === undefined ? undefined : true,
    "aria-describedby": props.error === undefined ? undefined : errorId
  } as const
  // the message stays outside the label: the control's name is the label alone
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.multiline === true ? (
        <textarea {...common} rows={5} onChange={(e) => props.onChange(e.target.value)} />
      ) : (
        <input
          {...common}
          type={props.type ?? "text"}
          autoComplete={props.autoComplete}
          inputMode={props.inputMode}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
      {props.error !== undefined && (
        <small id={errorId} className="field-error">
          {props.error}
        </small>
      )}
      {props.error === undefined && props.hint !== undefined && <small>{props.hint}</small>}
    </div>
  )
}

export interface SelectProps {
  readonly name: string
  readonly label: string
  readonly value: string
  readonly onChange: (value: string) => void
  readonly options: ReadonlyArray<readonly [value: string, label: string]>
  readonly error?: string | undefined
}

export const Select = (props: SelectProps) => {
  const id = useId()
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        aria-invalid={props.error === undefined ? undefined : true}
        aria-describedby={props.error === undefined ? undefined : `${id}-error`}
        onChange={(e) => props.onChange(e.target.value)}
      >
        {props.options.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      {props.error !== undefined && (
        <small id={`${id}-error`} className="field-error">
          {props.error}
        </small>
      )}
    </div>
  )
}

/** Field values of a form and the API's answer to its submission. */
export const useForm = <V extends Record<string, string>, R>(options: {
  readonly initial: V
  readonly submit: (values: V) => Promise<R>
  readonly onDone?: (result: R, values: V) => void
  /** queries to refetch after success */
  readonly invalidate?: ReadonlyArray<QueryKey>
}) => {
  const [values, setValues] = useState<V>(options.initial)
  const client = useQueryClient()
  const mutation = useMutation({
    mutationFn: () => options.submit(values),
    onSuccess: async (result) => {
      for (const key of options.invalidate ?? []) await client.invalidateQueries({ queryKey: key })
      options.onDone?.(result, values)
    }
  })
  const error = mutation.error instanceof ApiError ? mutation.error : undefined
  return {
    values,
    set: (name: keyof V) => (value: string) => setValues((v) => ({ ...v, [name]: value })),
    reset: () => setValues(options.initial),
    /** the API's first message for a field */
    fieldError: (name: string) => error?.field(name),
    /** the answer's message when no field carries it */
    formError:
      mutation.error === null ? undefined : error === undefined ? String(mutation.error) : Object.keys(error.errors).length === 0 ? error.message : undefined,
    pending: mutation.isPending,
    done: mutation.isSuccess,
    result: mutation.data,
    onSubmit: (e: FormEvent) => {
      e.preventDefault()
      mutation.mutate()
    },
    mutation
  }
}

export const FormError = ({ message }: { readonly message: string | undefined }) =>
  message === undefined ? null : (
    <p role="alert" className="form-error">
      {message}
    </p>
  )

export const Submit = ({ pending, children }: { readonly pending: boolean; readonly children: ReactNode }) => (
  <button type="submit" aria-busy={pending} disabled={pending}>
    {children}
  </button>
)

/** A button running one API call, with its error shown next to it. */
export const ActionButton = (props: {
  readonly action: () => Promise<unknown>
  readonly children: ReactNode
  readonly invalidate?: ReadonlyArray<QueryKey>
  readonly className?: string
  readonly confirm?: string
  readonly onDone?: (result: unknown) => void
}) => {
  const client = useQueryClient()
  const mutation = useMutation({
    mutationFn: props.action,
    onSuccess: async (result) => {
      for (const key of props.invalidate ?? []) await client.invalidateQueries({ queryKey: key })
      props.onDone?.(result)
    }
  })
  return (
    <>
      <button
        type="button"
        className={props.className}
        aria-busy={mutation.isPending}
        disabled={mutation.isPending}
        onClick={() => {
          if (props.confirm !== undefined && !window.confirm(props.confirm)) return
          mutation.mutate()
        }}
      >
        {props.children}
      </button>
      {mutation.error !== null && (
        <small role="alert" className="form-error">
          {mutation.error instanceof ApiError ? mutation.error.message : String(mutation.error)}
        </small>
      )}
    </>
  )
}

export interface PageMeta {
  readonly current_page: number
  readonly last_page: number
  readonly total: number
}

/** Previous / next for a paginated list ([D36]); hidden on a single page. */
export const Pager = ({ meta, onPage }: { readonly meta: PageMeta | undefined; readonly onPage: (page: number) => void }) => {
  const { t } = useTranslation()
  if (meta === undefined || meta.last_page <= 1) return null
  return (
    <nav aria-label={t("common.pages")} className="pager">
      <button type="button" className="secondary" disabled={meta.current_page <= 1} onClick={() => onPage(meta.current_page - 1)}>
        {t("common.previous")}
      </button>
      <span>{t("common.pageOf", { page: meta.current_page, last: meta.last_page })}</span>
      <button type="button" className="secondary" disabled={meta.current_page >= meta.last_page} onClick={() => onPage(meta.current_page + 1)}>
        {t("common.next")}
      </button>
    </nav>
  )
}

/** A query's states: busy, its error, or its data. */
export const Loaded = <A,>(props: {
  readonly query: { readonly data: A | undefined; readonly error: unknown; readonly isPending: boolean }
  readonly children: (data: A) => ReactNode
}) => {
  const { t } = useTranslation()
  if (props.query.isPending) return <p aria-busy="true">{t("common.loading")}</p>
  if (props.query.error !== null && props.query.error !== undefined) {
    const e = props.query.error
    return (
      <p role="alert" className="form-error">
        {e instanceof ApiError ? e.message : String(e)}
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

export const Status = ({ value }: { readonly value: string }) => {
  const { t } = useTranslation()
  return <mark className={`status status-${value}`}>{t(`status.${value}`, { defaultValue: value })}</mark>
}
