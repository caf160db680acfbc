import { makeTestApp } from "/work/wt-sec/test/support/app.ts"
import { loadOperations } from "/work/wt-sec/test/reliability/openapi.ts"
const app = await makeTestApp()
const { operations } = await loadOperations(app)
for (const op of operations) if (op.kind === "admin") console.log(op.method, op.path, JSON.stringify(op.body ? Object.keys((op.body as any).properties ?? {}) : null), JSON.stringify((op.body as any)?.required ?? null))
await app.dispose()
