import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import nodemailer from "nodemailer"
import { AppConfig } from "./Config.ts"

export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
}

/**
 * Outgoing e-mail through nodemailer: SMTP when `SMTP_URL` is set, else a transport that
 * writes the whole mail to the log (a development aid [D1]).
 */
export class Mailer extends Context.Tag("Mailer")<Mailer, {
  readonly send: (mail: Mail) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    Mailer,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const smtp = Option.map(config.smtpUrl, (url) => nodemailer.createTransport(Redacted.value(url)))
      const logTransport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" })
      const send = (mail: Mail) =>
        Option.match(smtp, {
          onSome: (transport) =>
            Effect.tryPromise(() => transport.sendMail({ from: config.mailFrom, ...mail })).pipe(
              Effect.tapError((e) => Effect.logError("mail not sent", { to: mail.to, subject: mail.subject, error: String(e) })),
              Effect.asVoid,
              Effect.ignore
            ),
          onNone: () =>
            Effect.tryPromise(() => logTransport.sendMail({ from: config.mailFrom, ...mail })).pipe(
              // the headers nodemailer built, then the text as written: the wire form's
              // quoted-printable (`token=3D...`, soft line breaks) would garble links for a person
              Effect.flatMap((info) =>
                Effect.logInfo(`mail (no SMTP_URL, logged)\n${
                  String(info.message).split("\n\n")[0]!.split("\n").filter((h) => !/^Content-Transfer-Encoding:/i.test(h)).join("\n")
                }\n\n${mail.text}`)
              ),
              Effect.ignore
            )
        })
      return { send }
    })
  )

  /** Captures every mail in `outbox`, newest last. */
  static readonly Test = () => {
    const outbox: Array<Mail> = []
    return {
      outbox,
      layer: Layer.succeed(Mailer, { send: (mail: Mail) => Effect.sync(() => void outbox.push(mail)) })
    }
  }
}

/** Sends after the response: the caller does not wait, so timing tells nothing ([D23]). */
export const sendLater = (mail: Mail) =>
  Effect.flatMap(Mailer, (mailer) => Effect.forkDaemon(mailer.send(mail))).pipe(Effect.asVoid)
