#!/usr/bin/env bash
# ota-attestd under slow clients: MHD's --timeout is an idle timeout, so a
# client that sends a byte now and then kept its connection forever, and
# --max-connections such clients locked every other client out for as long
# as they kept dribbling (headers or a body). --request-timeout is a deadline
# for the whole request (and for writing its answer): past it the connection
# is shut down (http_request_timeout in the log and in /metrics) and a slot
# is free again. Also: a legitimate keep-alive client whose requests come
# within the deadline of each other is never cut, and pipelined requests are
# answered in order, one answer each.
set -uo pipefail
OTA=${OTA:?path of ota}
ATTESTD=${OTA_ATTESTD:-${OTA_BINARY_DIR:?}/cli/ota-attestd}
work=$(mktemp -d /tmp/ota-attestd-deadline-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL python3 missing"; exit 1; }
command -v jq >/dev/null || { echo "FAIL jq missing"; exit 1; }

T="$work/trust"
"$OTA" trust init --domain deadline.example --dir "$T" >/dev/null 2>&1 &&
"$OTA" trust add-principal --dir "$T" --id verifier:endpoint --role verifier \
  --provider-target '*' --sign "$T/keys/root-1.pem" >/dev/null 2>&1 &&
"$OTA" trust add-key --dir "$T" --principal verifier:endpoint \
  --generate "$work/verifier-FIXTURE.pem" --sign "$T/keys/root-1.pem" >/dev/null 2>&1 ||
  { echo "FAIL cannot make the trust root"; exit 1; }

# --request-timeout is a number like the others
"$ATTESTD" --db "$work/u.db" --trust "$T/root.json" --key "$work/verifier-FIXTURE.pem" \
  --request-timeout 0 >/dev/null 2>&1
[ $? -eq 2 ] && pass "--request-timeout 0: usage" || bad "--request-timeout 0 accepted"

# two slots, idle timeout 5 s (longer than any gap below), deadline 2 s
"$ATTESTD" --db "$work/d.db" --trust "$T/root.json" --key "$work/verifier-FIXTURE.pem" \
  --port 0 --port-file "$work/port" --max-connections 2 --timeout 5 --request-timeout 2 \
  2>"$work/log" &
pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
PORT=$(cat "$work/port" 2>/dev/null)
[ -n "$PORT" ] && pass "listening on $PORT" || { bad "no port file"; cat "$work/log"; exit 1; }

cat >"$work/slow.py" <<'EOF'
import socket, sys, threading, time
port = int(sys.argv[1]); mode = sys.argv[2]
results = {}

def dribble(name, head, unit, seconds):
    """Sends head, then unit every 0.4 s for seconds; records when it was cut."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.4)
        try:
            s.sendall(unit)
        except OSError:
            results[name] = "cut %.1f" % (time.monotonic() - t0); return
    s.settimeout(0.5)
    try:
        d = s.recv(100)
        results[name] = "cut %.1f" % (time.monotonic() - t0) if d == b"" else "answered"
    except OSError:
        results[name] = "alive"

def legit(deadline):
    """Retries GET /metrics until one answer comes; seconds it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=0.5)
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if c.recv(12).startswith(b"HTTP/1.1 200"):
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.2)
    return None

if mode in ("headers", "body"):
    if mode == "headers":
        head, unit = b"GET /v1/trust-root HTTP/1.1\r\nHost: x\r\n", b"X-a: b\r\n"
    else:
        head = (b"POST /v1/challenges HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
        unit = b" "
    ts = [threading.Thread(target=dribble, args=("slow%d" % i, head, unit, 8)) for i in range(2)]
    [t.start() for t in ts]
    time.sleep(0.3)
    took = legit(7)
    [t.join() for t in ts]
    print("legit", "none" if took is None else "%.1f" % took)
    for k in sorted(results):
        print(k, results[k])
elif mode == "keepalive":
    # one connection, a request every 1.2 s for 6 s (> the 2 s deadline in total)
    c = socket.create_connection(("127.0.0.1", port), timeout=3)
    ok = 0
    for i in range(5):
        c.sendall(b"GET /v1/trust-root HTTP/1.1\r\nHost: x\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += c.recv(4096)
        head, rest = buf.split(b"\r\n\r\n", 1)
        n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0]
        while len(rest) < n:
            rest += c.recv(65536)
        ok += head.startswith(b"HTTP/1.1 200")
        time.sleep(1.2)
    print("keepalive", ok)
elif mode == "pipeline":
    c = socket.create_connection(("127.0.0.1", port), timeout=3)
    c.sendall(b"GET /v1/trust-root HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        data += d
    statuses = []
    while data:  # responses one after another, each framed by its Content-Length
        head, data = data.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        statuses.append(lines[0].split(b" ")[1].decode())
        n = [int(l.split(b":")[1]) for l in lines if l.lower().startswith(b"content-length:")][0]
        data = data[n:]
    print("statuses", " ".join(statuses))
EOF

py() { timeout 30 python3 "$work/slow.py" "$PORT" "$@" >"$work/out" 2>&1; }

for mode in headers body; do
  py "$mode"
  legit=$(awk '$1=="legit"{print $2}' "$work/out")
  # the slots free up at the deadline (2 s, watched every 0.25 s), not after 8 s of dribbling
  if [ -n "$legit" ] && [ "$legit" != none ] && awk -v t="$legit" 'BEGIN{exit !(t < 4.5)}'; then
    pass "$mode dribble: a legitimate client answered after ${legit}s"
  else bad "$mode dribble: legitimate client locked out ($legit)"; cat "$work/out"; fi
  n=$(grep -c '^slow[01] cut' "$work/out")
  [ "$n" -eq 2 ] && pass "$mode dribble: both slow connections cut" || { bad "$mode dribble: slow connections survived"; cat "$work/out"; }
done
grep -q '"event":"request_timeout"' "$work/log" && grep -q '"code":"http_request_timeout"' "$work/log" \
  && pass "log names http_request_timeout" || { bad "no http_request_timeout log line"; cat "$work/log"; }

curl -s "http://127.0.0.1:$PORT/metrics" >"$work/metrics"
to=$(awk '$1=="ota_attestd_request_timeouts_total"{print $2}' "$work/metrics")
shed=$(awk '$1=="ota_attestd_idle_connections_shed_total"{print $2}' "$work/metrics")
# with both slots taken (--max-connections 2), a client still dribbling its
# head is idle (no request begun) and gives its slot up after a second
# (idle_connections_shed); one dribbling a body past its head is cut at the
# request deadline: four cut connections in all, at least the two bodies
# by the deadline
[ -n "$to" ] && [ -n "$shed" ] && [ "$to" -ge 2 ] && [ $((to + shed)) -ge 4 ] \
  && pass "metrics: $to request timeouts, $shed idle connections shed" \
  || { bad "metrics request timeouts: '$to', shed '$shed'"; cat "$work/metrics"; }
# the dribbled POST /v1/challenges bodies were never judged: nothing issued
grep -q '^ota_attestd_challenges_issued_total 0$' "$work/metrics" && pass "no challenge issued for a cut body" || bad "a cut body issued a challenge"

py keepalive
grep -q '^keepalive 5$' "$work/out" && pass "keep-alive client, 5 requests over 6 s, never cut" || { bad "keep-alive client cut"; cat "$work/out"; }

py pipeline
grep -q '^statuses 200 404 200$' "$work/out" && pass "pipelined requests answered in order, one answer each" || { bad "pipelining"; cat "$work/out"; }

kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
[ $rc -eq 0 ] && pass "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
