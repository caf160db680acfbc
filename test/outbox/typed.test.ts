import { afterAll, beforeAll, expect, test } from "bun:test"
import { anyAddress, waitForMail } from "../accounts/helpers.ts"
import type { OutboxMessage } from "../../src/outbox/Domain.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"

// The outbox through the typed client (issue 24): a mail asked for through the API goes through
// the outbox and an admin sees it listed, never its body ([D96]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("a reset mail is listed in the admin outbox as sent; a user is refused [D96] [D70]", async () => {
  const user = await app.createUser()
  const admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  const anonymous = await typedClient(app, { headers: anyAddress() })
  expect(typeof (await ok(anonymous.accounts.forgotPassword({ payload: { email: user.email } })))).toBe("string")
  await waitForMail(app, (mail) => mail.to === user.email)

  // the send is recorded after the mail leaves: wait for the row to say so
  const deadline = Date.now() + 3000
  let row: OutboxMessage | undefined
  for (;;) {
    const page = await ok(admin.outboxAdmin.listOutbox({ urlParams: { status: "sent" } }))
    row = page.data.find((message) => message.recipient === user.email)
    if (row !== undefined || Date.now() > deadline) break
    await Bun.sleep(20)
  }
  expect(row).toMatchObject({ kind: "reset_password", subject: "Reset your password", status: "sent", attempts: 1, last_error: null })
  expect(row?.sent_at).not.toBeNull()
  expect("payload" in (row ?? {})).toBe(false)

  const pending = await ok(admin.outboxAdmin.listOutbox({ urlParams: { status: "pending" } }))
  expect(pending.data.map((message) => message.recipient)).not.toContain(user.email)

  const plain = await typedClient(app, { token: user.token })
  expect((await fails(plain.outboxAdmin.listOutbox({ urlParams: {} })))._tag).toBe("Forbidden")
})
