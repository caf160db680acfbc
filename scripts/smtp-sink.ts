import { SMTPServer } from "smtp-server"

/**
 * A local SMTP server that accepts every mail and prints one line per mail (recipient only), for
 * scripts/check-prometheus.sh: the API's outbox sends to it until the script stops it (the fault).
 * Usage: bun run scripts/smtp-sink.ts PORT (listens on 127.0.0.1 only).
 */
const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0) throw new Error("usage: smtp-sink.ts PORT")
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  onData(stream, session, callback) {
    stream.on("data", () => {})
    stream.on("end", () => {
      console.log(`smtp-sink: mail to ${session.envelope.rcptTo.map((r) => r.address).join(",")}`)
      callback()
    })
  }
})
// a client that drops its connection (the API's pooled mail connection when it stops: ECONNRESET)
// is the connection's end, not the sink's: without a listener the error would be thrown
server.on("error", () => {})
server.listen(port, "127.0.0.1", () => console.log(`smtp-sink: listening on 127.0.0.1:${port}`))
