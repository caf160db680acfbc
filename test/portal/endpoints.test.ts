import { expect, test } from "bun:test"
import { endpointsSource, TARGET } from "../../scripts/portal-endpoints.ts"

// [D118]: the portal's table of endpoints is the contract's; regenerate with `bun run scripts/portal-endpoints.ts`
test("web/shared/endpoints.ts is generated from the current src/Api.ts", async () => {
  expect(await Bun.file(TARGET).text()).toBe(endpointsSource())
})
