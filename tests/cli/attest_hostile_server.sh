#!/usr/bin/env bash
# `ota attest challenge` / `ota attest submit` against a hostile endpoint (a
# python3 HTTP server on 127.0.0.1 doing whatever $work/mode says): the
# client follows no redirect (to another host, another protocol, or to a
# real endpoint's success), stops reading an answer at 1 MiB (a body of
# 16 GiB announced, an endless chunked body, endless header lines), never
# exits 0 on any of it, and prints no terminal control (C1 controls,
# bidirectional overrides) of the answer raw, with --json or in a refusal.
set -uo pipefail
OTA=${OTA:?path of ota}
work=$(mktemp -d /tmp/ota-attest-hostile-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL python3 missing (scripts/install-deps.sh)"; exit 1; }

cat >"$work/hostile.py" <<'PY'
import http.server, socketserver, sys
mode_file = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        mode, _, arg = open(mode_file).read().strip().partition(" ")
        try:
            if mode == "redirect":  # redirect LOCATION [BODY]
                loc, _, body = arg.partition(" ")
                body = (body or "{}").encode()
                self.send_response(307)
                self.send_header("Location", loc)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif mode == "huge":  # 16 GiB announced, 1 GiB sent at most
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(1 << 34))
                self.end_headers()
                self.wfile.write(b'{"ok":true,"x":"')
                for _ in range(1 << 14):
                    self.wfile.write(b"a" * 65536)
            elif mode == "chunked":  # chunks without end (1 GiB at most)
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for _ in range(1 << 14):
                    self.wfile.write(b"10000\r\n" + b"a" * 65536 + b"\r\n")
            elif mode == "headers":  # header lines without end (1 GiB at most)
                self.wfile.write(b"HTTP/1.1 201 Created\r\n")
                for i in range(1 << 20):
                    self.wfile.write(b"X-%d: %s\r\n" % (i, b"a" * 1000))
            elif mode == "answer":  # answer STATUS BODY
                status, body = arg.split(" ", 1)
                body = body.encode()
                self.send_response(int(status))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        except OSError:
            pass  # the client hung up: what is wanted
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
serve() { # serve NAME: a hostile server reading $work/NAME.mode, its port in $work/NAME.port
  python3 "$work/hostile.py" "$work/$1.mode" >"$work/$1.port" &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$work/$1.port" ] && break; sleep 0.1; done
  [ -s "$work/$1.port" ] || { echo "FAIL server $1 did not start"; exit 1; }
}
ID=sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881
NONCE=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8
CHAL_OK="{\"ok\":true,\"challenge\":\"$ID\",\"nonce\":\"$NONCE\"}"
SUB_OK="{\"ok\":true,\"attestation\":\"$ID\",\"acceptance\":\"0oRDoQEm\"}"
echo "answer 201 $CHAL_OK" >"$work/good.mode"
serve good   # a well-behaved endpoint, the redirects' target
serve evil
GOOD="http://127.0.0.1:$(cat "$work/good.port")"
URL="http://127.0.0.1:$(cat "$work/evil.port")"
printf 'not COSE' >"$work/att.cose"

run() { # run NAME WANT_RC MODE -- CMD...: exit code and time (bounded by timeout 90)
  local name=$1 want=$2 mode=$3; shift 4
  printf '%s' "$mode" >"$work/evil.mode"
  local t0=$SECONDS
  timeout 90 "$@" >"$work/out" 2>"$work/err"
  local rc=$? took=$((SECONDS - t0))
  if [ "$rc" -eq "$want" ] && [ "$took" -lt 10 ]; then pass "$name: rc=$rc in ${took}s"; else
    bad "$name: rc=$rc in ${took}s (want $want, under 10 s)"; sed 's/^/  | /' "$work/err" | head -5; fi
}
chal=("$OTA" attest challenge --url "$URL" --txn t --issuer issuer:acme --scope oci_remote)
sub=("$OTA" attest submit --url "$URL" --out "$work/acc.cose" "$work/att.cose")

# the good server is what the commands would accept
printf '%s' "answer 201 $CHAL_OK" >"$work/good.mode"
"$OTA" attest challenge --url "$GOOD" --txn t --issuer issuer:acme --scope oci_remote >/dev/null 2>&1 &&
  pass "the target answers a challenge the client accepts" || bad "the target's challenge refused"

# --- no redirect is followed ---------------------------------------------
for loc in "$GOOD/v1/challenges" "file:///etc/passwd" "gopher://127.0.0.1:$(cat "$work/good.port")/" \
           "ftp://127.0.0.1/" "//127.0.0.2:$(cat "$work/good.port")/v1/challenges"; do
  run "challenge redirected to $loc" 3 "redirect $loc" -- "${chal[@]}"
  grep -q attestation_response_invalid "$work/err" && pass "  attestation_response_invalid" \
    || bad "  stderr: $(cat "$work/err")"
done
# a redirect whose own body looks like a success is still not one
run "challenge 307 with a success body" 3 "redirect $GOOD/v1/challenges $CHAL_OK" -- "${chal[@]}"
[ -s "$work/out" ] && bad "  printed: $(head -c 200 "$work/out")" || pass "  nothing printed"
printf '%s' "answer 201 $SUB_OK" >"$work/good.mode"
run "submit redirected to a success" 3 "redirect $GOOD/v1/attestations" -- "${sub[@]}"
[ -e "$work/acc.cose" ] && bad "  wrote an acceptance" || pass "  nothing written"

# --- answers without end --------------------------------------------------
for m in huge chunked; do
  run "challenge answer $m" 3 "$m" -- "${chal[@]}"
  grep -q "attestation_response_invalid.*answer too large" "$work/err" && pass "  answer too large" \
    || bad "  stderr: $(cat "$work/err")"
  run "submit answer $m" 3 "$m" -- "${sub[@]}"
  [ -e "$work/acc.cose" ] && bad "  wrote an acceptance" || pass "  nothing written"
done
run "challenge answer with header lines without end" 3 headers -- "${chal[@]}"
grep -q "http_transport" "$work/err" && pass "  http_transport" || bad "  stderr: $(cat "$work/err")"

# --- --json prints no control of the answer raw ---------------------------
ctl='\u001b]0;x\u0007\u009b2J\u0085\u202e\u2066'
run "challenge --json, controls in an extra member" 0 \
  "answer 201 {\"ok\":true,\"challenge\":\"$ID\",\"nonce\":\"$NONCE\",\"txn\":\"$ctl\"}" -- "${chal[@]}" --json
run "submit --json, controls in an extra member" 0 \
  "answer 201 {\"ok\":true,\"attestation\":\"$ID\",\"acceptance\":\"0oRDoQEm\",\"txn\":\"$ctl\"}" \
  -- "${sub[@]}" --json
cp "$work/out" "$work/sub.out"
for f in out sub.out; do
  # ESC, BEL, C1 (UTF-8 C2 80..C2 9F), U+202E, U+2066: none raw
  if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f]|\xc2[\x80-\x9f]|\xe2\x80\xae|\xe2\x81\xa6' "$work/$f"; then
    bad "  $f: a control reached stdout raw: $(od -c "$work/$f" | grep -m1 '302\|033\|342')"
  else pass "  $f: no control raw"; fi
  # still the answer: jq reads the member back as it was sent
  [ "$(jq -r .txn "$work/$f" | od -An -tx1 | tr -d ' \n')" = \
    "1b5d303b7807c29b324ac285e280aee281a60a" ] && pass "  $f: the member intact as JSON" \
    || bad "  $f: member changed: $(jq -c .txn "$work/$f")"
done

# a refusal's where and message with bidirectional controls are not printed
# (the code and "answer" instead), in the text and in --json
run "refusal with bidi controls" 1 \
  "answer 403 {\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"eat_\\u202enonce\",\"message\":\"a\\u2066b\"}" \
  -- "${sub[@]}" --json
grep -q "nonce_replayed" "$work/err" && pass "  named" || bad "  stderr: $(cat "$work/err")"
if LC_ALL=C grep -qP '\xe2\x80\xae|\xe2\x81\xa6' "$work/err" "$work/out"; then
  bad "  a bidirectional control reached the output: $(od -c "$work/err" | head -3)"
else pass "  no bidirectional control in the output"; fi

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
