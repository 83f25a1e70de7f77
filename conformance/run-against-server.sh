#!/usr/bin/env bash
# Runs the conformance suite against a separate server process, the way it runs against any
# deployment: a fresh database (on the PostgreSQL server TEST_POSTGRES_URL names, or with
# SERVICE_DATABASE=sqlite a fresh SQLite file), a throw-away CA for the
# suite's webhook receiver (scripts/make-test-ca.sh), `npm start` in the background (sandbox mode,
# trusting that CA through NODE_EXTRA_CA_CERTS, private webhook targets allowed, a retry schedule of
# seconds), lender accounts and keys made with the operator CLI, then `npm run conformance` with
# their keys and settings as options. The server is stopped, the database dropped and the CA removed on the
# way out, whether the suite passed or not.
#
#   TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:55432/postgres conformance/run-against-server.sh
#   SERVICE_DATABASE=sqlite conformance/run-against-server.sh
#
# Optional: CONFORMANCE_PORT (default: a free port), READY_TIMEOUT_SECONDS (default 60),
# SERVICE_MODE=production (a production deployment: civ_live_ keys, lender accounts on the
# production plan, a fresh ENCRYPTION_KEY), CONFORMANCE_BIN (the suite's installed command, e.g.
# the civ-conformance of its npm tarball, instead of `npm run conformance` from this tree).
set -euo pipefail
cd "$(dirname "$0")/.."

DATABASE_KIND=${SERVICE_DATABASE:-postgres}
case "$DATABASE_KIND" in
postgres) : "${TEST_POSTGRES_URL:?set TEST_POSTGRES_URL to a PostgreSQL server URL, e.g. postgres://postgres@127.0.0.1:55432/postgres, or SERVICE_DATABASE=sqlite}" ;;
sqlite) ;;
*)
  echo "SERVICE_DATABASE must be postgres or sqlite, not $DATABASE_KIND" >&2
  exit 2
  ;;
esac
# 2 s, so the `processing` state of a `test-` scenario lasts a second: with 0.5 s a loaded CI machine
# now and then polled past it (the suite's own polling is the conformance issue's to make robust).
SANDBOX_DELAY_MS=${SANDBOX_DELAY_MS:-2000}
# Webhooks (D14, D22): attempts 0, 1 and 2 s after the first, a 2 s receiver timeout, so the retry,
# failure and timeout tests take seconds. The suite is told the same values below.
RETRY_SCHEDULE=0,1,2
WEBHOOK_TIMEOUT_MS=2000
READY_TIMEOUT_SECONDS=${READY_TIMEOUT_SECONDS:-60}
MODE=${SERVICE_MODE:-sandbox}
case "$MODE" in sandbox | production) ;; *)
  echo "SERVICE_MODE must be sandbox or production, not $MODE" >&2
  exit 2
  ;;
esac
# A production deployment refuses private webhook targets (SSRF, D16), so the suite's local receiver
# is out of its reach there: the webhook tests then skip, saying so.
PRIVATE_TARGETS=$([ "$MODE" = production ] && echo 0 || echo 1)
ENCRYPTION_KEY=${ENCRYPTION_KEY:-$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')}

# ---------------------------------------------------------------- small helpers (node, so no curl or jq is needed)

# `json_field FIELD` prints FIELD of the JSON document on stdin.
json_field() {
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[process.argv[1]]));' "$1"
}

# `sql STATEMENT` runs one statement on the server's maintenance database.
sql() {
  node -e 'const pg = require("pg"); const c = new pg.Client({ connectionString: process.argv[1] });
    c.connect().then(() => c.query(process.argv[2])).finally(() => c.end()).catch((e) => { console.error(e.message); process.exit(1); });' \
    "$TEST_POSTGRES_URL" "$1"
}

free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# `answers_200 URL` succeeds when URL answers 200.
answers_200() {
  node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1));' "$1"
}

# `admin ARGS...` runs the operator CLI against the server's database and prints its JSON.
admin() {
  DATABASE_URL="$DATABASE_URL" SERVICE_MODE="$MODE" ENCRYPTION_KEY="$ENCRYPTION_KEY" LOG_LEVEL=warn npm run -s admin -- "$@" --json
}

# ---------------------------------------------------------------- database, server, clean-up

PORT=${CONFORMANCE_PORT:-$(free_port)}
BASE_URL="http://127.0.0.1:$PORT"
LOG_FILE=$(mktemp /tmp/civ-conformance-server.XXXXXX.log)
CA_DIR=$(mktemp -d /tmp/civ-conformance-ca.XXXXXX)
if [ "$DATABASE_KIND" = sqlite ]; then
  DB_DIR=$(mktemp -d /tmp/civ-conformance-db.XXXXXX)
  DB_NAME="$DB_DIR/service.sqlite"
  DATABASE_URL="sqlite:$DB_NAME"
else
  DB_DIR=""
  DB_NAME="conformance_ci_$(date +%s)_$$"
  DATABASE_URL=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString());' "$TEST_POSTGRES_URL" "$DB_NAME")
fi
SERVER_PID=""

# npm start runs the server as a grandchild: signal the whole process group setsid gave it, wait
# for the group to drain (SIGTERM lets the server finish in-flight requests), then kill what is left.
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
  local waited=0
  while kill -0 -- "-$SERVER_PID" 2>/dev/null && [ "$waited" -lt 150 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

clean_up() {
  local status=$?
  stop_server
  if [ "$status" -ne 0 ] && [ -s "$LOG_FILE" ]; then
    echo "--- server output (last 100 lines)" >&2
    tail -n 100 "$LOG_FILE" >&2
  fi
  if [ -n "$DB_DIR" ]; then
    rm -rf "$DB_DIR"
  else
    sql "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" || echo "could not drop database $DB_NAME" >&2
  fi
  rm -f "$LOG_FILE"
  rm -rf "$CA_DIR"
  exit "$status"
}
trap clean_up EXIT
# A signal ends the script through exit, so the EXIT trap cleans up then too.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

echo "database $DB_NAME, $MODE server on $BASE_URL, webhook CA in $CA_DIR"
[ -n "$DB_DIR" ] || sql "CREATE DATABASE $DB_NAME"
# The CA the suite's receiver gets its certificate from, and the server trusts (D16).
bash scripts/make-test-ca.sh "$CA_DIR"

# A production deployment has its providers' credentials (one without any refuses every creation,
# P32). The suite connects no platform against a deployment, so these are never presented.
PROVIDERS=()
[ "$MODE" = production ] && PROVIDERS=(GOOGLE_CLIENT_ID=conformance-client GOOGLE_CLIENT_SECRET=conformance-secret
  STRIPE_CLIENT_ID=ca_conformance STRIPE_SECRET_KEY=sk_test_conformance)
# A sandbox's month of ongoing monitoring in seconds, so the suite sees its schedule (P33);
# production refuses the setting: a real creator's month is a calendar month.
[ "$MODE" = sandbox ] && PROVIDERS=(SANDBOX_REFRESH_INTERVAL_MS=4000)

# setsid: the server gets its own process group, so stopping it stops npm and node together.
setsid env "${PROVIDERS[@]}" PORT="$PORT" HOST=127.0.0.1 DATABASE_URL="$DATABASE_URL" SERVICE_MODE="$MODE" ENCRYPTION_KEY="$ENCRYPTION_KEY" \
  SANDBOX_COMPLETE_DELAY_MS="$SANDBOX_DELAY_MS" LOG_LEVEL=warn \
  NODE_EXTRA_CA_CERTS="$CA_DIR/ca.pem" WEBHOOK_ALLOW_PRIVATE_TARGETS="$PRIVATE_TARGETS" \
  WEBHOOK_RETRY_SCHEDULE="$RETRY_SCHEDULE" WEBHOOK_TIMEOUT_MS="$WEBHOOK_TIMEOUT_MS" \
  npm start >"$LOG_FILE" 2>&1 &
SERVER_PID=$!

deadline=$((SECONDS + READY_TIMEOUT_SECONDS))
until answers_200 "$BASE_URL/readyz"; do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "the server exited before it was ready" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "the server was not ready after $READY_TIMEOUT_SECONDS s" >&2
    exit 1
  fi
  sleep 0.5
done

# ---------------------------------------------------------------- accounts and keys (operator CLI, D23)

# In production the accounts are on the production plan (300 requests a minute, section 8), as a
# lender's would be; the sandbox's quota is the same for every plan.
plan=$([ "$MODE" = production ] && echo production || echo pilot)
lender_a=$(admin lender create --name "Conformance Lender A" --plan "$plan" | json_field id)
lender_b=$(admin lender create --name "Conformance Lender B" --plan "$plan" | json_field id)
lender_c=$(admin lender create --name "Conformance Lender C" --plan "$plan" | json_field id)
lender_d=$(admin lender create --name "Conformance Lender D" --plan "$plan" | json_field id)
lender_key=$(admin key create --lender "$lender_a" --role lender | json_field api_key)
other_lender_key=$(admin key create --lender "$lender_b" --role lender | json_field api_key)
third_lender_key=$(admin key create --lender "$lender_c" --role lender | json_field api_key)
fourth_lender_key=$(admin key create --lender "$lender_d" --role lender | json_field api_key)
gdpr_key=$(admin key create --lender "$lender_a" --role gdpr_admin | json_field api_key)
pilot=$(admin key create --lender "$lender_a" --role lender)
admin key limit --key-id "$(json_field id <<<"$pilot")" --rate-limit 60 --burst 10 >/dev/null
revoked=$(admin key create --lender "$lender_a" --role lender)
admin key revoke --key-id "$(json_field id <<<"$revoked")" >/dev/null
return_origin=https://lender-app.conformance.example
admin lender set --id "$lender_a" --return-origins "$return_origin" >/dev/null

# ---------------------------------------------------------------- the suite, as against any deployment

# Extra arguments go to the suite, e.g. --junit out/junit.xml --matrix out/matrix.
if [ -n "${CONFORMANCE_BIN:-}" ]; then suite=("$CONFORMANCE_BIN"); else suite=(npm run -s conformance --); fi
"${suite[@]}" \
  --base-url "$BASE_URL" \
  --key "$lender_key" \
  --other-lender-key "$other_lender_key" \
  --third-lender-key "$third_lender_key" \
  --fourth-lender-key "$fourth_lender_key" \
  --gdpr-key "$gdpr_key" \
  --pilot-key "$(json_field api_key <<<"$pilot")" \
  --revoked-key "$(json_field api_key <<<"$revoked")" \
  --return-origin "$return_origin" \
  --sandbox-delay-ms "$SANDBOX_DELAY_MS" \
  --ca-dir "$CA_DIR" \
  --retry-schedule "$RETRY_SCHEDULE" \
  --webhook-timeout-ms "$WEBHOOK_TIMEOUT_MS" \
  --private-targets-allowed "$PRIVATE_TARGETS" \
  "$@"
