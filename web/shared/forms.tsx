/**
 * Forms of both apps: labelled fields that show the API's message for their field ([D121]), a
 * form that submits through a mutation with the API's other messages beside its button, and a
 * button running one call. Pico CSS styles the semantic elements (a static stylesheet: nothing
 * injects styles at run time, [D118]'s CSP).
 */
import { type QueryKey, useMutation, useQueryClient } from "@tanstack/react-query"
import { type FormEvent, type ReactNode, useId, useState } from "react"
import { useTranslation } from "react-i18next"
import { ApiError, errorMessage } from "./api.ts"

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

/** The label, the control (by `control`) and the API's message for the field beside it. */
const Labelled = (props: {
  readonly label: string
  readonly error: string | undefined
  readonly hint?: string | undefined
  readonly control: (aria: { readonly id: string; readonly "aria-invalid"?: true; readonly "aria-describedby"?: string }) => ReactNode
}) => {
  const id = useId()
  const errorId = `${id}-error`
  const invalid = props.error === undefined ? {} : ({ "aria-invalid": true, "aria-describedby": errorId } as const)
  // the message stays outside the label: the control's name is the label alone
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.control({ id, ...invalid })}
      {props.error !== undefined && (
        <small id={errorId} className="field-error">
          {props.error}
        </small>
      )}
      {props.error === undefined && props.hint !== undefined && <small>{props.hint}</small>}
    </div>
  )
}

/** A visible label, the control, and the API's message for this field beside it. */
export const Field = (props: FieldProps) => (
  <Labelled
    label={props.label}
    error={props.error}
    hint={props.hint}
    control={(aria) => {
      const common = { ...aria, name: props.name, value: props.value, required: props.required } as const
      return props.multiline === true ? (
        <textarea {...common} rows={5} onChange={(e) => props.onChange(e.target.value)} />
      ) : (
        <input
          {...common}
          type={props.type ?? "text"}
          autoComplete={props.autoComplete}
          inputMode={props.inputMode}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )
    }}
  />
)

export interface SelectProps {
  readonly name: string
  readonly label: string
  readonly value: string
  readonly onChange: (value: string) => void
  readonly options: ReadonlyArray<readonly [value: string, label: string]>
  readonly error?: string | undefined
}

export const Select = (props: SelectProps) => (
  <Labelled
    label={props.label}
    error={props.error}
    control={(aria) => (
      <select {...aria} name={props.name} value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {props.options.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    )}
  />
)

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
  const set = (name: keyof V) => (value: string) => setValues((v) => ({ ...v, [name]: value }))
  /** the API's first message for a field */
  const fieldError = (name: string) => error?.field(name)
  return {
    values,
    set,
    reset: () => setValues(options.initial),
    fieldError,
    /** a field's name, value, change and the API's message for it: `<Field {...form.field("email")} label=… />` */
    field: <K extends keyof V & string>(name: K) => ({ name, value: values[name], onChange: set(name), error: fieldError(name) }),
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

/** What {@link Form} reads of a {@link useForm}. */
export interface FormState {
  readonly onSubmit: (e: FormEvent) => void
  readonly formError: string | undefined
  readonly pending: boolean
  readonly done: boolean
}

/**
 * A form of {@link useForm}: its fields, the API's message that no field carries, "Saved" after
 * success when asked for, and the submit button.
 */
export const Form = (props: { readonly form: FormState; readonly submit: ReactNode; readonly saved?: boolean; readonly children: ReactNode }) => {
  const { t } = useTranslation()
  return (
    <form onSubmit={props.form.onSubmit} noValidate>
      {props.children}
      <FormError message={props.form.formError} />
      {props.saved === true && props.form.done && <p role="status">{t("common.saved")}</p>}
      <Submit pending={props.form.pending}>{props.submit}</Submit>
    </form>
  )
}

/** A button running one API call, with its error shown next to it. */
export const ActionButton = <R,>(props: {
  readonly action: () => Promise<R>
  readonly children: ReactNode
  readonly invalidate?: ReadonlyArray<QueryKey>
  readonly className?: string
  readonly confirm?: string
  readonly onDone?: (result: R) => void
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
          {errorMessage(mutation.error)}
        </small>
      )}
    </>
  )
}
