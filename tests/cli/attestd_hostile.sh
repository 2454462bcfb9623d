#!/usr/bin/env bash
# ota-attestd against hostile clients, over loopback with raw sockets:
# --max-connections-per-address (one address cannot take every slot), and
# requests whose framing a proxy in front could read otherwise than the
# endpoint does. Each case is bounded in count and time.
set -uo pipefail
OTA=${OTA:?path of ota}
ATTESTD=${OTA_ATTESTD:-${OTA_BINARY_DIR:?}/cli/ota-attestd}
work=$(mktemp -d /tmp/ota-attestd-hostile-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL python3 missing"; exit 1; }

T="$work/trust"
"$OTA" trust init --domain hostile.example --dir "$T" >/dev/null 2>&1 &&
"$OTA" trust add-principal --dir "$T" --id verifier:endpoint --role verifier \
  --provider-target '*' --sign "$T/keys/root-1.pem" >/dev/null 2>&1 &&
"$OTA" trust add-key --dir "$T" --principal verifier:endpoint \
  --generate "$work/verifier-FIXTURE.pem" --sign "$T/keys/root-1.pem" >/dev/null 2>&1 ||
  { echo "FAIL cannot make the trust root"; exit 1; }

start() { # start NAME [options]: an endpoint on an ephemeral port, $PORT
  local name=$1; shift
  rm -f "$work/port"
  "$ATTESTD" --db "$work/$name.db" --trust "$T/root.json" --key "$work/verifier-FIXTURE.pem" \
    --port 0 --port-file "$work/port" "$@" 2>"$work/$name.log" &
  pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  PORT=$(cat "$work/port" 2>/dev/null)
  [ -n "$PORT" ] || { bad "$name: no port file"; cat "$work/$name.log"; exit 1; }
}
stop() {
  kill -TERM "$pid"; wait "$pid"; local rc=$?; pid=
  [ $rc -eq 0 ] && pass "$1: SIGTERM, exit 0" || bad "$1: SIGTERM, exit $rc"
}

cat >"$work/raw.py" <<'EOF'
import socket, sys, time
port = int(sys.argv[1]); mode = sys.argv[2]

def read_to_close(s):
    """Everything s receives until the peer closes, resets or times out."""
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    return out

def ask(src, data=b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", wait=3):
    """Sends data from address src; the answer's status line, "closed" or "none"."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(wait)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    out = b""
    try:
        s.sendall(data)
        while b"\r\n" not in out:
            d = s.recv(4096)
            if not d:
                break
            out += d
    except socket.timeout:
        return "none"
    except OSError:
        return "closed"
    finally:
        s.close()
    return out.split(b"\r\n")[0].decode() if out else "closed"

if mode == "per-address":
    # two idle connections from 127.0.0.1 take its two slots
    held = []
    for _ in range(2):
        c = socket.create_connection(("127.0.0.1", port))
        held.append(c)
    time.sleep(0.3)
    print("third", ask("127.0.0.1"))
    print("other", ask("127.0.0.2"))
    held.pop().close()
    time.sleep(0.3)
    print("freed", ask("127.0.0.1"))
    for c in held:
        c.close()
elif mode == "framing":
    import json
    H = b"Host: x\r\n"
    J = b"POST /v1/challenges HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    C = b"POST /v1/attestations HTTP/1.1\r\nHost: x\r\nContent-Type: application/cose\r\n"
    big = b"".join(b"10000\r\n" + b" " * 65536 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
    cases = [
        ("te-identity", J + b"Transfer-Encoding: identity\r\n\r\n{}"),
        ("te-gzip-chunked", J + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        ("te-chunked-gzip", J + b"Transfer-Encoding: chunked, gzip\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        ("name-space", J + b"Content-Length : 2\r\n\r\n{}"),
        ("name-tab", J + b"Content-Length\t: 2\r\n\r\n{}"),
        ("body-empty", J + b"Content-Length: 0\r\n\r\n"),
        ("host-none", b"GET /healthz HTTP/1.1\r\n\r\n"),
        ("host-twice", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("host-none-1.0", b"GET /healthz HTTP/1.0\r\n\r\n"),
        # held before, kept as regressions
        ("cl-twice", J + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
        ("cl-and-te", J + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        ("cl-negative", J + b"Content-Length: -1\r\n\r\n{}"),
        ("cl-list", J + b"Content-Length: 2, 2\r\n\r\n{}"),
        ("cl-over-cap", C + b"Content-Length: 300000\r\n\r\n"),
        ("expect-over-cap", C + b"Expect: 100-continue\r\nContent-Length: 100000000\r\n\r\n"),
        ("chunked-over-cap", C + b"Transfer-Encoding: chunked\r\n\r\n" + big),
        ("chunk-size-bad", J + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        ("chunk-size-neg", J + b"Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n"),
        ("cl-huge", J + b"Content-Length: 99999999999999999999999\r\n\r\n{}"),
        ("chunk-size-huge", J + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
        ("url-huge", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n" + H + b"\r\n"),
        ("version-2", b"GET /healthz HTTP/2.0\r\n" + H + b"\r\n"),
        ("version-none", b"GET /healthz\r\n\r\n"),
        ("headers-many", b"GET /healthz HTTP/1.1\r\n" + H + b"".join(b"X-%d: a\r\n" % i for i in range(3000)) + b"\r\n"),
        ("header-huge", b"GET /healthz HTTP/1.1\r\n" + H + b"X-a: " + b"a" * 100000 + b"\r\n\r\n"),
        # the 8 KiB pool: a head of 7,000 bytes is served, one of 9,000 is not
        ("head-7000", b"GET /healthz HTTP/1.1\r\n" + H + b"X-a: " + b"a" * 6959 + b"\r\n\r\n"),
        ("head-9000", b"GET /healthz HTTP/1.1\r\n" + H + b"X-a: " + b"a" * 8959 + b"\r\n\r\n"),
        # a path that decodes to bytes that are not UTF-8: still a JSON answer
        ("path-ff", b"GET /%ff%fe HTTP/1.1\r\n" + H + b"\r\n"),
    ]
    for name, data in cases:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        out = b""
        try:
            s.sendall(data)
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
                if b"\r\n\r\n" in out and b"100 Continue" not in out.split(b"\r\n")[0]:
                    head, body = out.split(b"\r\n\r\n", 1)
                    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                         if l.lower().startswith(b"content-length:")]
                    if n and len(body) >= n[0]:
                        break
        except OSError:
            pass
        s.close()
        if not out:
            print(name, "none")
            continue
        status = out.split(b"\r\n")[0].split(b" ")[1].decode()
        cont = "continue" if out.startswith(b"HTTP/1.1 100") else "-"
        if cont == "continue":
            out = out.split(b"\r\n\r\n", 1)[1]
            status = out.split(b"\r\n")[0].split(b" ")[1].decode() if out else "none"
        code = where = "-"
        try:
            o = json.loads(out.split(b"\r\n\r\n", 1)[1])
            code, where = o["code"], o["where"]
        except Exception:
            pass
        print(name, status, code, where, cont)
elif mode == "endless":
    # a chunked body without end, fed while the answer is awaited: the
    # endpoint must stop reading it soon after the cap, not at the request
    # deadline (30 s) or after the 1 GiB this sends at most
    import threading
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"POST /v1/attestations HTTP/1.1\r\nHost: x\r\nContent-Type: application/cose\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    sent = [0]
    def feed():
        chunk = b"1000\r\n" + b"A" * 4096 + b"\r\n"
        try:
            while sent[0] < (1 << 30):
                s.sendall(chunk)
                sent[0] += 4096
        except OSError:
            pass
    threading.Thread(target=feed, daemon=True).start()
    t0 = time.time()
    out = read_to_close(s)
    took = time.time() - t0
    print("endless", "cut" if took < 10 and sent[0] < (64 << 20) else "read", len(out))
elif mode == "holders":
    # every slot taken by keep-alive clients that each send a request every
    # 3 s (each restarts the request deadline): a newcomer must still be
    # served, because idle connections give their slots up when the slots
    # run short
    n = int(sys.argv[3])
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    held = []
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", port), timeout=3)
        held.append(c)
    served = None
    t0 = time.time()
    while time.time() - t0 < 12 and served is None:
        for c in list(held):
            try:
                c.sendall(req)
                c.recv(4096)
            except OSError:
                held.remove(c)
        time.sleep(1)
        r = ask("127.0.0.1", wait=2)
        if r.startswith("HTTP/1.1 200"):
            served = time.time() - t0
    print("newcomer", "served" if served is not None else "locked-out")
    for c in held:
        c.close()
elif mode == "methods":
    # one connection each; "status allow-header body-bytes code"
    import json
    for name, line in [("get-healthz", b"GET /healthz"), ("head-healthz", b"HEAD /healthz"),
                       ("head-trust-root", b"HEAD /v1/trust-root"),
                       ("put-healthz", b"PUT /healthz"), ("brew-metrics", b"BREW /metrics"),
                       ("get-attestations", b"GET /v1/attestations"),
                       ("delete-challenges", b"DELETE /v1/challenges"),
                       ("head-attestations", b"HEAD /v1/attestations"),
                       ("get-unknown", b"GET /v2/nope"), ("brew-unknown", b"BREW /v2/nope")]:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(line + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        out = read_to_close(s)
        s.close()
        head, _, body = out.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        allow = [l.split(b":", 1)[1].strip().decode() for l in lines[1:]
                 if l.lower().startswith(b"allow:")]
        code = "-"
        try:
            code = json.loads(body)["code"]
        except Exception:
            pass
        print(name, lines[0].split(b" ")[1].decode(), "'%s'" % (allow[0].replace(" ", "") if allow else ""),
              len(body), code)
EOF

py() { timeout 60 python3 "$work/raw.py" "$PORT" "$@" >"$work/out" 2>&1; }

# --- --max-connections-per-address ---------------------------------------
"$ATTESTD" --db "$work/u.db" --trust "$T/root.json" --key "$work/verifier-FIXTURE.pem" \
  --max-connections-per-address 0 >/dev/null 2>&1
[ $? -eq 2 ] && pass "--max-connections-per-address 0: usage" || bad "--max-connections-per-address 0 accepted"

start perip --max-connections-per-address 2 --timeout 10
py per-address
# one more connection from a full address is closed as accepted, without an answer
grep -q '^third closed$' "$work/out" && pass "a third connection from 127.0.0.1 closed unanswered" \
  || { bad "per-address limit not applied"; cat "$work/out"; }
grep -q '^other HTTP/1.1 200' "$work/out" && pass "another address (127.0.0.2) still served" \
  || { bad "another address refused"; cat "$work/out"; }
grep -q '^freed HTTP/1.1 200' "$work/out" && pass "a slot of 127.0.0.1 freed by a close is usable again" \
  || { bad "slot not freed"; cat "$work/out"; }
stop perip

# --- keep-alive clients holding every slot -------------------------------
start holders --max-connections 16 --timeout 30
py holders 16
grep -q '^newcomer served' "$work/out" && pass "16 keep-alive holders of 16 slots: a newcomer is served (idle slots shed)" \
  || { bad "a newcomer was locked out by keep-alive holders"; cat "$work/out"; }
curl -s "http://127.0.0.1:$PORT/metrics" | grep -q '^ota_attestd_idle_connections_shed_total [1-9]' \
  && pass "holders: idle connections shed, counted" || bad "holders: no idle_connections_shed_total"
stop holders

# --- request framing -----------------------------------------------------
start framing
py framing
expect() { # expect CASE "STATUS CODE WHERE CONTINUE" WHY
  local got; got=$(awk -v c="$1" '$1==c{$1=""; sub(/^ /,""); print}' "$work/out")
  [ "$got" = "$2" ] && pass "$1: $2 ($3)" || bad "$1: got '$got', want '$2' ($3)"
}
# a transfer coding other than chunked left MHD reading to the peer's close
expect te-identity "400 http_bad_request transfer-encoding -" "RFC 9112 6.1"
expect te-gzip-chunked "400 http_bad_request transfer-encoding -" "RFC 9112 6.1"
expect te-chunked-gzip "400 http_bad_request transfer-encoding -" "RFC 9112 6.1"
# whitespace before the colon: not Content-Length to MHD, maybe to a proxy
expect name-space "400 http_bad_request header -" "RFC 9112 5.1"
expect name-tab "400 http_bad_request header -" "RFC 9112 5.1"
# no body: a JSON syntax error at its start (was jansson's "wrong arguments", line -1)
expect body-empty "400 json_syntax line 1, column 0 -" "empty JSON body"
# RFC 9112 3.2: HTTP/1.1 needs one Host; HTTP/1.0 may have none
expect host-none "400 http_bad_request host -" "HTTP/1.1 without Host"
expect host-twice "400 http_bad_request host -" "two Host"
expect host-none-1.0 "200 - - -" "HTTP/1.0 without Host"
expect cl-twice "400 http_bad_request content-length -" "one Content-Length"
expect cl-and-te "400 http_bad_request transfer-encoding -" "framed twice"
# MHD refuses these itself, with its HTML body and the connection closed
expect cl-negative "400 - - -" "libmicrohttpd"
expect cl-list "400 - - -" "libmicrohttpd"
expect chunk-size-bad "400 - - -" "libmicrohttpd"
expect chunk-size-neg "400 - - -" "libmicrohttpd"
expect cl-huge "413 - - -" "libmicrohttpd"
expect chunk-size-huge "413 - - -" "libmicrohttpd: over 64 bits"
expect url-huge "414 - - -" "libmicrohttpd"
expect version-2 "505 - - -" "libmicrohttpd"
expect version-none "400 - - -" "libmicrohttpd: HTTP/0.9"
expect headers-many "431 - - -" "8 KiB connection memory pool"
expect header-huge "431 - - -" "8 KiB connection memory pool"
expect head-7000 "200 - - -" "a 7,000-byte head within the 8 KiB pool"
expect head-9000 "431 - - -" "a 9,000-byte head over the 8 KiB pool"
expect path-ff "404 http_not_found /?? -" "the path's invalid UTF-8 shown as ?"
grep -q '"path":"/??"' "$work/framing.log" || bad "path-ff: no refused log line for /%ff%fe"
expect cl-over-cap "413 http_body_too_large body -" "before reading"
# no 100 Continue: the body is refused before the client sends it
expect expect-over-cap "413 http_body_too_large body -" "no 100 Continue"
expect chunked-over-cap "413 http_body_too_large body -" "discarded as it arrives"
# past one more cap's worth of discarded body, the connection is closed
py endless
grep -q '^endless cut 0$' "$work/out" && pass "an endless chunked body is cut after twice the cap, unanswered" \
  || { bad "endless chunked body not cut"; cat "$work/out"; }
curl -s "http://127.0.0.1:$PORT/metrics" >"$work/metrics"
grep -q '^ota_attestd_challenges_issued_total 0$' "$work/metrics" && pass "framing: nothing issued" \
  || bad "framing: a challenge was issued"
stop framing

# --- methods -------------------------------------------------------------
start methods
py methods
m() { # m CASE "STATUS 'ALLOW' CODE" WHY  (Allow without spaces; body length checked apart)
  local got; got=$(awk -v c="$1" '$1==c{print $2, $3, $5}' "$work/out")
  [ "$got" = "$2" ] && pass "$1: $2 ($3)" || { bad "$1: got '$got', want '$2' ($3)"; grep "^$1 " "$work/out"; }
}
m get-healthz "200 '' -" "GET"
m head-healthz "200 '' -" "HEAD is GET without a body"
m head-trust-root "200 '' -" "HEAD is GET without a body"
m put-healthz "405 'GET,HEAD' http_method_not_allowed" "405 names the methods in Allow"
m brew-metrics "405 'GET,HEAD' http_method_not_allowed" "unknown method"
m get-attestations "405 'POST' http_method_not_allowed" "POST route"
m delete-challenges "405 'POST' http_method_not_allowed" "POST route"
m head-attestations "405 'POST' -" "HEAD of a POST route"
m get-unknown "404 '' http_not_found" "unknown path"
m brew-unknown "404 '' http_not_found" "unknown path and method"
n=$(awk '$1=="head-healthz"||$1=="head-trust-root"||$1=="head-attestations"{s+=$4} END{print s+0}' "$work/out")
[ "$n" -eq 0 ] && pass "HEAD answers carry no body" || bad "HEAD answers carry $n body bytes"
stop methods

# --- batches: --max-batch-items --------------------------------------------
for v in 0 4097 x; do
  timeout 10 "$ATTESTD" --db "$work/never.db" --trust "$T/root.json" \
    --key "$work/verifier-FIXTURE.pem" --port 0 --max-batch-items "$v" >/dev/null 2>"$work/err"
  rc=$?
  [ "$rc" -eq 2 ] && grep -q 'max-batch-items\|numeric' "$work/err" &&
    pass "--max-batch-items $v refused (exit 2)" || bad "--max-batch-items $v: exit $rc $(cat "$work/err")"
done
start batch --max-batch-items 1
post() { # post BYTES(printf) -> "STATUS CODE-or-accepted/refused"
  printf "$1" | curl -s -o "$work/ans" -w '%{http_code}' -H 'Content-Type: application/cbor-seq' \
    --data-binary @- "http://127.0.0.1:$PORT/v1/attestations"
}
st=$(post '\x01\x02')
[ "$st" = 503 ] && grep -q '"code":"http_unavailable"' "$work/ans" &&
  pass "2 items over --max-batch-items 1: 503 http_unavailable" || bad "2 items: $st $(cat "$work/ans")"
st=$(post '\x01')
[ "$st" = 200 ] && grep -q '"accepted":0,"ok":true,"refused":1' "$work/ans" &&
  grep -q '"code":"cose_tag_missing"' "$work/ans" &&
  pass "1 item within the cap: 200, the item refused on its own" || bad "1 item: $st $(cat "$work/ans")"
st=$(post '\x01\x5f')
[ "$st" = 400 ] && grep -q '"code":"attestation_batch_malformed"' "$work/ans" &&
  pass "an indefinite-length item: 400 attestation_batch_malformed" || bad "indefinite: $st $(cat "$work/ans")"
stop batch

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
