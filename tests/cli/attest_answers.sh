#!/usr/bin/env bash
# `ota attest challenge` / `ota attest submit` against a fake endpoint (a
# python3 HTTP server answering whatever $work/answer holds): the client
# judges the answer before printing or writing any of it
# (ota_attest_client_answer). A 2xx {"ok": true} without the members the
# command uses printed "(null) (null)" and exited 0 before; now exit 3,
# attestation_response_invalid. A refusal's where/message holding control
# characters never reaches the terminal.
set -uo pipefail
OTA=${OTA:?path of ota}
work=$(mktemp -d /tmp/ota-attest-answers-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL python3 missing (scripts/install-deps.sh)"; exit 1; }

cat >"$work/fake.py" <<'PY'
import http.server, sys
answer = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', '0')))
        with open(answer, 'rb') as f:
            status, body = f.read().split(b'\n', 1)
        self.send_response(int(status))
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
printf '201\n{}' >"$work/answer"
python3 "$work/fake.py" "$work/answer" >"$work/port" &
pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$work/port")"

ID=sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881
NONCE=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8
# answer STATUS BODY, then the command; checks its exit code and output
check() { # check NAME WANT_RC STATUS BODY -- CMD...
  local name=$1 want=$2 status=$3 body=$4; shift 5
  printf '%s\n%s' "$status" "$body" >"$work/answer"
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then pass "$name: rc=$rc"; else
    bad "$name: rc=$rc (want $want)"; sed 's/^/  | /' "$work/err" "$work/out"; fi
}
chal=("$OTA" attest challenge --url "$URL" --txn t --issuer issuer:acme --scope oci_remote)
printf 'not COSE' >"$work/att.cose"
sub=("$OTA" attest submit --url "$URL" --out "$work/acc.cose" "$work/att.cose")

check "challenge answer as the endpoint gives it" 0 201 \
  "{\"ok\":true,\"challenge\":\"$ID\",\"nonce\":\"$NONCE\",\"txn\":\"t\"}" -- "${chal[@]}"
[ "$(cat "$work/out")" = "$ID $NONCE" ] && pass "challenge printed" || bad "printed: $(cat "$work/out")"

for body in '{"ok":true}' "{\"ok\":true,\"challenge\":\"$ID\"}" \
  "{\"ok\":true,\"challenge\":\"$ID\",\"nonce\":\"AAEC\"}" \
  "{\"ok\":true,\"challenge\":\"x\",\"nonce\":\"$NONCE\"}"; do
  check "challenge $body" 3 201 "$body" -- "${chal[@]}"
  grep -q attestation_response_invalid "$work/err" && pass "  named" || bad "  stderr: $(cat "$work/err")"
  grep -q "(null)" "$work/out" "$work/err" && bad "  printed (null)" || pass "  no (null)"
done

check "submission accepted" 0 201 "{\"ok\":true,\"attestation\":\"$ID\",\"acceptance\":\"0oRDoQEm\"}" -- "${sub[@]}"
[ "$(od -An -tx1 "$work/acc.cose" | tr -d ' \n')" = "d28443a10126" ] && pass "acceptance written" || bad "acceptance bytes"
rm -f "$work/acc.cose"
check "submission without acceptance" 3 201 "{\"ok\":true,\"attestation\":\"$ID\"}" -- "${sub[@]}"
[ -e "$work/acc.cose" ] && bad "  wrote an acceptance" || pass "  nothing written"
check "submission with a non-base64 acceptance" 3 201 \
  "{\"ok\":true,\"attestation\":\"$ID\",\"acceptance\":\"not base64!\"}" -- "${sub[@]}"
[ -e "$work/acc.cose" ] && bad "  wrote an acceptance" || pass "  nothing written"

# a refusal: its code; where and message only as plain text
check "refusal" 1 403 '{"ok":false,"code":"nonce_replayed","where":"eat_nonce","message":"consumed at 1"}' -- "${sub[@]}"
grep -q "nonce_replayed" "$work/err" && grep -q "consumed at 1" "$work/err" && pass "  named, with its message" || bad "  stderr: $(cat "$work/err")"
check "refusal with escapes" 1 403 \
  '{"ok":false,"code":"nonce_replayed","where":"\u001b]0;x\u0007","message":"\u001b[2J"}' -- "${sub[@]}"
grep -q "nonce_replayed" "$work/err" && pass "  named" || bad "  stderr: $(cat "$work/err")"
if LC_ALL=C grep -q "$(printf '\033')" "$work/err" "$work/out"; then bad "  an escape reached the output"; else pass "  no escape in the output"; fi
check "unknown code" 3 400 '{"ok":false,"code":"no_such_code"}' -- "${sub[@]}"
check "not JSON" 3 502 '<html>bad gateway</html>' -- "${chal[@]}"

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
