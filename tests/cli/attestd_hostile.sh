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

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
