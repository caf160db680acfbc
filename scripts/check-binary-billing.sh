#!/usr/bin/env bash
# [D112] [D113] inside the compiled binary: the `stripe` package makes a Checkout Session (against
# the LOCAL STAND-IN of Stripe's API, test/support/stripe-stand-in.ts), its webhook verifies a
# Stripe signature, and an invoice PDF is drawn (pdf-lib's fonts are compiled in; nothing is read
# from node_modules at run time). Usage: scripts/check-binary-billing.sh dist/vpn-api
set -euo pipefail
BIN=$(realpath "${1:-dist/vpn-api}")
cd "$(dirname "$0")/.."
DATA=$(mktemp -d) PORT=$((20000 + RANDOM % 20000)) LOG=$(mktemp) STAND_IN_LOG=$(mktemp)
KEY=sk_test_binary WHSEC=whsec_binary
STRIPE_SECRET_KEY=$KEY node_modules/.bin/bun run test/support/stripe-stand-in-serve.ts >"$STAND_IN_LOG" 2>&1 &
STAND_IN=$!
trap 'kill -TERM ${PID:-} $STAND_IN 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DATA" "$LOG" "$STAND_IN_LOG"' EXIT
for _ in $(seq 1 60); do grep -q '^http' "$STAND_IN_LOG" && break; sleep 0.25; done
STRIPE_URL=$(grep -m1 "^http" "$STAND_IN_LOG")
DATA_DIR=$DATA "$BIN" seed-demo >/dev/null
(cd / && exec env DATA_DIR="$DATA" PORT=$PORT STRIPE_SECRET_KEY=$KEY STRIPE_WEBHOOK_SECRET=$WHSEC STRIPE_API_URL="$STRIPE_URL" \
  COMPANY_NAME="Binary Check Ltd" "$BIN" >"$LOG" 2>&1) &
PID=$!
API=http://127.0.0.1:$PORT
for _ in $(seq 1 120); do curl -fsS "$API/v1/status" >/dev/null 2>&1 && break; sleep 0.5; done
json() { node -pe "JSON.parse(require('fs').readFileSync(0, 'utf8'))$1"; }
fail() { echo "check-binary-billing: $*"; echo "--- binary log"; cat "$LOG"; exit 1; }

curl -fsS "$API/v1/payment-gateways" | grep -q '"name":"stripe"' || fail "stripe is not listed"
TOKEN=$(curl -fsS -X POST "$API/v1/auth/register" -H 'content-type: application/json' \
  -d '{"name":"Binary Payer","email":"binary-payer@example.com","password":"bin-Passw0rd-2026","password_confirmation":"bin-Passw0rd-2026"}' | json '.data.token')
PLAN=$(curl -fsS "$API/v1/plans" | json '.data[0].id')
CYCLE=$(curl -fsS "$API/v1/plans/$PLAN/cycles" | json '.data[0].id')
INVOICE=$(curl -fsS -X POST "$API/v1/orders" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d "{\"plan_id\":$PLAN,\"cycle_id\":$CYCLE,\"gateway\":\"stripe\"}" | json '.data.uuid')
URL=$(curl -fsS "$API/v1/invoices/$INVOICE/payment-url" -H "authorization: Bearer $TOKEN" | json '.data.url') || fail "no payment URL"
case "$URL" in "$STRIPE_URL"/c/pay/*) echo "  checkout session: $URL" ;; *) fail "payment URL $URL" ;; esac

# a Stripe-signed event (t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">, as the package signs) for a session of another amount:
# 200 and the 0.01 credited to the balance ([D123] rev. 4: an underpayment is never lost), proving verification ran
BODY="{\"id\":\"evt_binary_1\",\"object\":\"event\",\"type\":\"checkout.session.completed\",\"data\":{\"object\":{\"id\":\"cs_x\",\"object\":\"checkout.session\",\"payment_status\":\"paid\",\"amount_total\":1,\"currency\":\"usd\",\"client_reference_id\":\"$INVOICE\",\"metadata\":{\"invoice_uuid\":\"$INVOICE\"},\"payment_intent\":\"pi_x\"}}}"
SIG=$(BODY="$BODY" node -e 'const t=Math.floor(Date.now()/1000);const h=require("crypto").createHmac("sha256",process.argv[1]).update(t+"."+process.env.BODY).digest("hex");process.stdout.write("t="+t+",v1="+h)' "$WHSEC")
CODE=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$API/v1/webhooks/payments/stripe" -H 'content-type: application/json' -H "stripe-signature: $SIG" -d "$BODY")
[ "$CODE" = 200 ] || fail "signed webhook answered $CODE, not 200"
BALANCE=$(curl -fsS "$API/v1/account/balance" -H "authorization: Bearer $TOKEN" | json '.data[0].amount')
[ "$BALANCE" = 0.01 ] || fail "the underpayment was not credited (balance $BALANCE)"
CODE=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$API/v1/webhooks/payments/stripe" -H 'content-type: application/json' -H "stripe-signature: t=1,v1=00" -d "$BODY")
[ "$CODE" = 401 ] || fail "badly signed webhook answered $CODE, not 401"
echo "  stripe webhook: signed underpayment 200 (credited 0.01), unsigned 401"

PDF=$(mktemp)
curl -fsS "$API/v1/invoices/$INVOICE/pdf" -H "authorization: Bearer $TOKEN" -o "$PDF" || fail "no PDF"
head -c 5 "$PDF" | grep -q '%PDF-' || fail "not a PDF"
if command -v pdftotext >/dev/null; then
  TEXT=$(pdftotext "$PDF" -)
  for v in "Binary Check Ltd" "Binary Payer" "$INVOICE"; do echo "$TEXT" | grep -qF "$v" || fail "PDF lacks $v"; done
  echo "  invoice PDF: $(wc -c <"$PDF") bytes, text holds the seller, the buyer and the uuid"
else
  echo "  invoice PDF: $(wc -c <"$PDF") bytes (pdftotext missing: text not checked)"
fi
rm -f "$PDF"
echo "binary billing check: ok"
