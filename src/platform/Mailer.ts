import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { Transporter } from "nodemailer"
import type SMTPTransport from "nodemailer/lib/smtp-transport"
import type StreamTransport from "nodemailer/lib/stream-transport"
import { AppConfig } from "./Config.ts"

export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  /** an HTML alternative of `text` (notifications of [D96]) */
  readonly html?: string | undefined
}

/** SMTP refused or could not be reached: the outbox retries ([D96]). */
export class MailNotSent extends Data.TaggedError("MailNotSent")<{ readonly reason: string }> {}

interface Transports {
  readonly smtp: Option.Option<Transporter<SMTPTransport.SentMessageInfo, SMTPTransport.Options>>
  readonly log: Transporter<StreamTransport.SentMessageInfo, StreamTransport.Options>
}

const makeTransports = (smtpUrl: Option.Option<Redacted.Redacted<string>>): Promise<Transports> =>
  import("nodemailer").then(({ default: nodemailer }) => ({
    smtp: Option.map(smtpUrl, (url) => nodemailer.createTransport(Redacted.value(url))),
    log: nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" })
  }))

/**
 * Outgoing e-mail through nodemailer: SMTP when `SMTP_URL` is set, else a transport that
 * writes the whole mail to the log (a development aid [D1]).
 */
export class Mailer extends Context.Tag("Mailer")<
  Mailer,
  {
    /** fails when the mail did not leave (the outbox keeps it and retries) */
    readonly send: (mail: Mail) => Effect.Effect<void, MailNotSent>
  }
>() {
  static readonly Live = Layer.effect(
    Mailer,
    Effect.gen(function* () {
      const config = yield* AppConfig
      // nodemailer (about 16 MB resident) is loaded at the first mail a process sends, not at
      // start-up (issue 27; docs/decisions.md, "Idle memory"); both transports are made once then
      let loading: Promise<Transports> | undefined
      const transports = Effect.promise(() => (loading ??= makeTransports(config.smtpUrl)))
      const send = (mail: Mail) =>
        Effect.flatMap(transports, ({ smtp, log }) =>
          Option.match(smtp, {
            onSome: (transport) =>
              Effect.tryPromise({
                try: () => transport.sendMail({ from: config.mailFrom, ...mail }),
                catch: (e) => new MailNotSent({ reason: e instanceof Error ? e.message : String(e) })
              }).pipe(Effect.asVoid),
            onNone: () =>
              Effect.tryPromise(() => log.sendMail({ from: config.mailFrom, to: mail.to, subject: mail.subject, text: mail.text })).pipe(
                // the headers nodemailer built, then the text as written: the wire form's
                // quoted-printable (`token=3D...`, soft line breaks) would garble links for a person
                Effect.flatMap((info) =>
                  Effect.logInfo(
                    `mail (no SMTP_URL, logged)\n${String(info.message)
                      .split("\n\n")[0]!
                      .split("\n")
                      .filter((h) => !/^Content-Transfer-Encoding:/i.test(h))
                      .join("\n")}\n\n${mail.text}`
                  )
                ),
                Effect.ignore
              )
          })
        )
      return { send }
    })
  )

  /**
   * Captures every mail in `outbox`, newest last. `controls.down = true` makes every send fail
   * as an unreachable SMTP server would (the outbox's retries, [D96]).
   */
  static readonly Test = () => {
    const outbox: Array<Mail> = []
    const controls = { down: false }
    return {
      outbox,
      controls,
      layer: Layer.succeed(Mailer, {
        send: (mail: Mail) =>
          controls.down ? Effect.fail(new MailNotSent({ reason: "connect ECONNREFUSED (test mailer down)" })) : Effect.sync(() => void outbox.push(mail))
      })
    }
  }
}
