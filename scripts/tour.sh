#!/usr/bin/env bash
# The README's five-minute tour, as one script (CI runs it twice against a fresh embedded server).
# Needs a server started with PAYMENT_WEBHOOK_SECRET=tour-secret and `npm run cli -- seed-demo` done.
set -euo pipefail
API=${API:-http://localhost:3000}
RUN=$(date +%s)-$$
# a field of the JSON answer; an error answer (or a missing field) is printed whole and stops the tour
json() { node -e 'const s = require("fs").readFileSync(0, "utf8"); let v; try { v = new Function("j", "return j" + process.argv[1])(JSON.parse(s)) } catch {}; if (v === undefined) { console.error(s.trim() || "no answer"); process.exit(1) } console.log(v)' "$1"; }

# 1. register (a token comes back); a new address each run
TOKEN=$(curl -sS --fail-with-body -X POST "$API/v1/auth/register" -H 'content-type: application/json' \
  -d "{\"name\":\"Tour User\",\"email\":\"tour-$RUN@example.com\",\"password\":\"tour-Passw0rd-2026\",\"password_confirmation\":\"tour-Passw0rd-2026\"}" \
  | json '.data.token')

# 2. browse plans and the cycles of the first one
curl -sS --fail-with-body "$API/v1/plans"
PLAN=$(curl -sS --fail-with-body "$API/v1/plans" | json '.data[0].id')
CYCLE=$(curl -sS --fail-with-body "$API/v1/plans/$PLAN/cycles" | json '.data[0].id')

# 3. order it with a promo code: a pending invoice
INVOICE=$(curl -sS --fail-with-body -X POST "$API/v1/orders" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d "{\"plan_id\":$PLAN,\"cycle_id\":$CYCLE,\"promo_code\":\"WELCOME10\"}" | json '.data.uuid')

# 4. pay it through the signed webhook (what a payment provider sends)
BODY="{\"invoice_uuid\":\"$INVOICE\",\"status\":\"paid\",\"transaction_id\":\"tx-tour-$RUN\"}"
SIG=$(BODY="$BODY" node -e 'const t=Math.floor(Date.now()/1000);const h=require("crypto").createHmac("sha256","tour-secret").update(t+"."+process.env.BODY).digest("hex");process.stdout.write("t="+t+",v1="+h)')
curl -sS --fail-with-body -X POST "$API/v1/webhooks/payments/manual" -H 'content-type: application/json' -H "x-signature: $SIG" -d "$BODY"

# 5. the active service, the paid invoice, and a WireGuard config for the first server
curl -sS --fail-with-body "$API/v1/services/current" -H "authorization: Bearer $TOKEN"
curl -sS --fail-with-body "$API/v1/invoices/$INVOICE" -H "authorization: Bearer $TOKEN"
SERVER=$(curl -sS --fail-with-body "$API/v1/servers" -H "authorization: Bearer $TOKEN" | json '.data.find((s) => s.protocol === "wireguard").id')
curl -sS --fail-with-body "$API/v1/servers/$SERVER/wireguard" -H "authorization: Bearer $TOKEN"
echo "tour done"
