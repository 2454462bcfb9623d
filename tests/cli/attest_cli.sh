#!/usr/bin/env bash
# ota-attestd + ota attest end to end over loopback: a trust root made with
# `ota trust`, challenges, signed submissions, a chain of records, refusals
# with their stable names and exit codes, HTTP caps, metrics, a clean
# SIGTERM shutdown, and usage / environment exit codes.
set -uo pipefail
OTA=${OTA:?path of ota}
ATTESTD=${OTA_ATTESTD:-${OTA_BINARY_DIR:?}/cli/ota-attestd}
work=$(mktemp -d /tmp/ota-attest-cli-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
run() { # run EXPECTED_RC CMD...
  local want=$1; shift
  "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then pass "rc=$rc: ${*:2:3}"; else
    bad "rc=$rc (want $want): $*"; sed 's/^/  | /' "$work/stderr" "$work/stdout"; fi
}
expect_err() { grep -q "$1" "$work/stderr" && pass "stderr names $1" || { bad "stderr lacks $1"; sed 's/^/  | /' "$work/stderr"; }; }
[ -x "$ATTESTD" ] || { echo "FAIL ota-attestd not built at $ATTESTD"; exit 1; }
command -v jq >/dev/null || { echo "FAIL jq missing (scripts/install-deps.sh)"; exit 1; }

# ---- a trust root: issuer, verifier, and a runner (not an issuer) ----
T="$work/trust"
run 0 "$OTA" trust init --domain attest.example --dir "$T"
run 0 "$OTA" trust add-principal --dir "$T" --id issuer:acme --role issuer --provider-target oci_remote --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-key --dir "$T" --principal issuer:acme --generate "$work/issuer-FIXTURE.pem" --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-principal --dir "$T" --id verifier:endpoint --role verifier --provider-target '*' --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-key --dir "$T" --principal verifier:endpoint --generate "$work/verifier-FIXTURE.pem" --sign "$T/keys/root-1.pem"
# a verifier trusted for another provider target only
run 0 "$OTA" trust add-principal --dir "$T" --id verifier:narrow --role verifier --provider-target oci_local --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-key --dir "$T" --principal verifier:narrow --generate "$work/narrow-FIXTURE.pem" --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-principal --dir "$T" --id runner:ci --role runner --provider-target '*' --sign "$T/keys/root-1.pem"
run 0 "$OTA" trust add-key --dir "$T" --principal runner:ci --generate "$work/runner-FIXTURE.pem" --sign "$T/keys/root-1.pem"
ROOT_ID=$("$OTA" trust show "$T/root.json" --json | jq -r .identity)
case "$ROOT_ID" in sha256:*) pass "root identity $ROOT_ID" ;; *) bad "no root identity" ;; esac

# ---- the endpoint refuses to start without a verifier key of the root ----
run 2 "$ATTESTD"
run 1 "$ATTESTD" --db "$work/x.db" --trust "$T/root.json" --key "$work/runner-FIXTURE.pem" --port 0
expect_err trust_role_mismatch

# ---- start ----
"$ATTESTD" --db "$work/attestd.db" --trust "$T/root.json" --key "$work/verifier-FIXTURE.pem" \
  --port 0 --port-file "$work/port" --max-body 65536 --log-requests 2>"$work/attestd.log" &
pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
PORT=$(cat "$work/port" 2>/dev/null)
[ -n "$PORT" ] && pass "listening on $PORT" || { bad "no port file"; cat "$work/attestd.log"; exit 1; }
U="http://127.0.0.1:$PORT"
grep -q '"event":"listening"' "$work/attestd.log" && grep -q '"addr":"127.0.0.1"' "$work/attestd.log" \
  && pass "JSON log line, loopback" || bad "no listening log line"

# challenge -> claims JSON for `ota attest submit --claims`
claims() { # claims OUT TXN BOUNDARY [PRIOR]
  run 0 "$OTA" attest challenge --url "$U" --txn "$2" --issuer issuer:acme --scope oci_remote --json
  cp "$work/stdout" "$work/ch.json"
  jq -n --slurpfile c "$work/ch.json" --arg tr "$ROOT_ID" --arg txn "$2" --arg b "$3" --arg p "${4:-}" \
    '{iss: "issuer:acme", eat_nonce: $c[0].nonce, kind: (if $p == "" then "initial_application" else "transition" end),
      txn: $txn, trust_root: $tr, provider: "oci_remote", boundary: $b,
      platform: {os: "linux", architecture: "amd64"}} + (if $p == "" then {} else {prior: $p} end)' >"$1"
}

claims "$work/c1.json" txn-1 b1
[ "$(jq -r .nonce "$work/ch.json" | tr -d '\n' | wc -c)" -eq 43 ] && pass "32-byte nonce (base64url)" || bad "nonce length"
[ "$(jq '.expires_at - .issued_at' "$work/ch.json")" -eq 300 ] && pass "300 s expiry" || bad "expiry"
run 0 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c1.json" --json --out "$work/acc1.cose"
R1=$(jq -r .attestation "$work/stdout")
[ "$(jq -r .result "$work/stdout")" = accepted ] && [ -s "$work/acc1.cose" ] && pass "accepted $R1" || bad "not accepted"
# the same claims signed again carry the same nonce: a replay
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c1.json"
expect_err nonce_replayed
# the same COSE bytes, from a file
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/c1.json" --out "$work/a1.cose"
run 1 "$OTA" attest submit --url "$U" "$work/a1.cose"
expect_err nonce_replayed

# a second record for the boundary must name the first
claims "$work/c2.json" txn-1 b1
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c2.json"
expect_err attestation_prior_missing
jq --arg p "$R1" '. + {prior: $p, kind: "transition"}' "$work/c2.json" >"$work/c2p.json"
run 0 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c2p.json"
grep -q '^accepted sha256:' "$work/stdout" && pass "chained record accepted" || bad "chained record"
# a fork from R1 (no longer the head)
claims "$work/c3.json" txn-1 b1 "$R1"
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c3.json"
expect_err attestation_prior_fork
# wrong txn, wrong key (the runner's), stale iat
claims "$work/c4.json" txn-1 b2
jq '. + {txn: "txn-other"}' "$work/c4.json" >"$work/c4t.json"
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c4t.json"
expect_err attestation_txn_mismatch
jq '. + {iss: "runner:ci"}' "$work/c4.json" >"$work/c4r.json"
run 1 "$OTA" attest submit --url "$U" --key "$work/runner-FIXTURE.pem" --claims "$work/c4r.json"
expect_err trust_role_mismatch
NOW=$(date +%s)
jq --argjson i $((NOW - 3600)) '. + {iat: $i, exp: ($i + 60)}' "$work/c4.json" >"$work/c4s.json"
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c4s.json"
expect_err attestation_stale
# challenges only for issuers
run 1 "$OTA" attest challenge --url "$U" --txn t --issuer runner:ci --scope oci_remote
expect_err attestation_issuer_role
run 2 "$OTA" attest challenge --url "$U" --txn t
run 2 "$OTA" attest submit --url "$U"

# ---- --trust: the client checks the acceptance before believing or writing it ----
claims "$work/c5.json" txn-1 b5
run 0 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c5.json" \
  --trust "$T/root.json" --out "$work/acc5.cose" --json
cp "$work/stdout" "$work/answer5.json"
[ -s "$work/acc5.cose" ] && pass "acceptance checked against the pinned root and written" || bad "acc5 not written"
# another trust root (its verifier keys are not the endpoint's): refused, nothing written
run 0 "$OTA" trust init --domain other.example --dir "$work/other"
claims "$work/c6.json" txn-1 b6
run 1 "$OTA" attest submit --url "$U" --key "$work/issuer-FIXTURE.pem" --claims "$work/c6.json" \
  --trust "$work/other/root.json" --out "$work/acc6.cose"
expect_err trust_
[ ! -e "$work/acc6.cose" ] && pass "an acceptance the pinned root does not vouch for is not written" || bad "acc6 written"
# an endpoint (or anything on the path) that answers every submission with an
# earlier, genuine acceptance: believed without --trust, refused with it
python3 - "$work/answer5.json" "$work/replay.port" <<'PY' &
import http.server, socketserver, sys
body = open(sys.argv[1], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', '0')))
        self.send_response(201)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = socketserver.TCPServer(('127.0.0.1', 0), H)
open(sys.argv[2], 'w').write(str(s.server_address[1]))
s.timeout = 20
for _ in range(4):
    s.handle_request()
PY
rpid=$!
for _ in $(seq 50); do [ -s "$work/replay.port" ] && break; sleep 0.1; done
RU="http://127.0.0.1:$(cat "$work/replay.port")"
claims "$work/c7.json" txn-1 b7
run 0 "$OTA" attest submit --url "$RU" --key "$work/issuer-FIXTURE.pem" --claims "$work/c7.json"
run 3 "$OTA" attest submit --url "$RU" --key "$work/issuer-FIXTURE.pem" --claims "$work/c7.json" \
  --trust "$T/root.json" --out "$work/acc7.cose"
expect_err attestation_response_invalid
[ ! -e "$work/acc7.cose" ] && pass "a replayed acceptance is not written" || bad "acc7 written"
kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
run 2 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/c7.json" --out "$work/x.cose" --trust "$T/root.json"

# ---- CLAIMS.json is strict: body (deterministic CBOR) and cti are carried, nothing unknown ----
openssl pkey -in "$work/issuer-FIXTURE.pem" -pubout -out "$work/issuer.pub" 2>/dev/null
payload_hex() { "$OTA_VERIFY" cose --key "$work/issuer.pub" --json "$1" | jq -r .payload | base64 -d | od -v -An -tx1 | tr -d ' \n'; }
Z=$(printf 'sha256:%064d' 0)
jq --arg z "$Z" '. + {body: $z, cti: "AAECAw"}' "$work/c1.json" >"$work/cb.json"
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/cb.json" --out "$work/cb.cose"
h=$(payload_hex "$work/cb.cose")
case "$h" in *64626f64797847$(printf '%s' "$Z" | od -v -An -tx1 | tr -d ' \n')*) pass "body: CBOR text of the identity" ;; *) bad "body not carried: $h" ;; esac
case "$h" in *074400010203*) pass "cti carried" ;; *) bad "cti not carried: $h" ;; esac
jq '. + {body: {b: [1, true, null], a: "x"}}' "$work/c1.json" >"$work/cm.json"
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/cm.json" --out "$work/cm.cose"
case "$(payload_hex "$work/cm.cose")" in *64626f6479a26161617861628301f5f6*) pass "body map in deterministic order" ;; *) bad "body map" ;; esac
jq '. + {colour: "red"}' "$work/c1.json" >"$work/cu.json"
run 1 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/cu.json" --out "$work/cu.cose"
expect_err attestation_claim_unknown
[ ! -e "$work/cu.cose" ] && pass "nothing written for refused claims" || bad "wrote cu.cose"
jq '. + {body: {x: 1.5}}' "$work/c1.json" >"$work/cf.json"
run 1 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/cf.json" --out "$work/cf.cose"
expect_err attestation_claim_type
jq '. + {iat: "yesterday"}' "$work/c1.json" >"$work/ci.json"
run 1 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/ci.json" --out "$work/ci.cose"
expect_err attestation_claim_type
jq '. + {policy: {canonical: "x", colour: "y"}}' "$work/c1.json" >"$work/cp.json"
run 1 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/cp.json" --out "$work/cp.cose"
expect_err attestation_claim_unknown

# ---- raw HTTP ----
code() { curl -s -o "$work/body" -w '%{http_code}' "$@"; }
[ "$(code "$U/healthz")" = 200 ] && jq -e '.ok == true' "$work/body" >/dev/null && pass "/healthz" || bad "/healthz"
[ "$(code "$U/nope")" = 404 ] && [ "$(jq -r .code "$work/body")" = http_not_found ] && pass "404 JSON" || bad "404"
[ "$(code -X DELETE "$U/v1/challenges")" = 405 ] && pass "405" || bad "405"
[ "$(code -X POST -H 'Content-Type: text/plain' --data-binary x "$U/v1/attestations")" = 415 ] \
  && [ "$(jq -r .code "$work/body")" = http_content_type ] && pass "415" || bad "415"
head -c 100000 /dev/urandom >"$work/big"
[ "$(code -X POST -H 'Content-Type: application/cose' --data-binary @"$work/big" "$U/v1/attestations")" = 413 ] \
  && [ "$(jq -r .code "$work/body")" = http_body_too_large ] && pass "413 over --max-body" || bad "413"
head -c 300 /dev/urandom >"$work/junk"
st=$(code -X POST -H 'Content-Type: application/cose' --data-binary @"$work/junk" "$U/v1/attestations")
[ "$st" -ge 400 ] && [ "$st" -lt 500 ] && pass "garbage COSE refused ($st $(jq -r .code "$work/body"))" || bad "garbage COSE $st"
[ "$(code "$U/v1/trust-root")" = 200 ] && cmp -s "$work/body" "$T/root.json" && pass "trust root served" || bad "trust root"
[ "$(code "$U/v1/acceptances/$R1?txn=txn-1&boundary=b1")" = 200 ] && pass "stored acceptance" || bad "acceptance lookup"
[ "$(code "$U/v1/acceptances/$R1?txn=txn-1&boundary=b9")" = 404 ] && [ "$(jq -r .code "$work/body")" = not_found ] \
  && pass "acceptance found by its lane only" || bad "acceptance of another lane"
[ "$(code "$U/v1/acceptances/$R1")" = 400 ] && [ "$(jq -r .code "$work/body")" = http_bad_request ] \
  && pass "acceptance lookup without a lane: 400" || bad "acceptance lookup without a lane"
code "$U/metrics" >/dev/null
grep -q '^ota_attestd_attestations_accepted_total 4$' "$work/body" && pass "metrics count 4 acceptances (c1, c2p, c5, c6)" || { bad "metrics"; cat "$work/body"; }

# ---- a lost answer: ota attest submit looks the acceptance up ----
# a proxy in front of the endpoint; MODE after: the POST reaches the
# endpoint, its answer is dropped (the connection closed unanswered);
# before: the first POST is dropped unsent, the next ones go through;
# always: every POST dropped unsent. GETs go through.
cat >"$work/proxy.py" <<'PY'
import http.server, socketserver, sys, urllib.request, urllib.error
up, mode, portfile = sys.argv[1], sys.argv[2], sys.argv[3]
posts = [0]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def relay(self, req):
        try:
            r = urllib.request.urlopen(req, timeout=10)
            st, body, ct = r.status, r.read(), r.headers.get('Content-Type', '')
        except urllib.error.HTTPError as e:
            st, body, ct = e.code, e.read(), e.headers.get('Content-Type', '')
        return st, body, ct
    def answer(self, st, body, ct):
        self.send_response(st)
        self.send_header('Content-Type', ct)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer(*self.relay(urllib.request.Request(up + self.path)))
    def do_POST(self):
        data = self.rfile.read(int(self.headers.get('Content-Length', '0')))
        posts[0] += 1
        self.close_connection = True
        if mode == 'always' or (mode == 'before' and posts[0] == 1):
            return
        res = self.relay(urllib.request.Request(up + self.path, data=data, method='POST',
                         headers={'Content-Type': self.headers.get('Content-Type', '')}))
        if mode == 'after':
            return
        self.answer(*res)
    def log_message(self, *a):
        pass
s = socketserver.TCPServer(('127.0.0.1', 0), H)
open(portfile, 'w').write(str(s.server_address[1]))
s.timeout = 30
for _ in range(8):
    s.handle_request()
PY
proxy() { # proxy MODE: starts it, PU its URL, ppid its pid
  rm -f "$work/proxy.port"
  python3 "$work/proxy.py" "$U" "$1" "$work/proxy.port" &
  ppid=$!
  for _ in $(seq 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
  PU="http://127.0.0.1:$(cat "$work/proxy.port")"
}
claims "$work/l1.json" txn-lost b1
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/l1.json" --out "$work/l1.cose"
L1=sha256:$(sha256sum "$work/l1.cose" | cut -d' ' -f1)
proxy after
run 0 "$OTA" attest submit --url "$PU" "$work/l1.cose" --trust "$T/root.json" --out "$work/l1.acc" --json
jq -e --arg id "$L1" '.ok and .recovered == true and .attestation == $id' "$work/stdout" >/dev/null \
  && pass "answer lost after the commit: the stored acceptance, checked and written" \
  || { bad "lost answer not recovered"; cat "$work/stdout" "$work/stderr"; }
code "$U/v1/acceptances/$L1?txn=txn-lost&boundary=b1" >/dev/null
[ "$(jq -r .acceptance "$work/body" | base64 -d | sha256sum)" = "$(sha256sum <"$work/l1.acc")" ] \
  && pass "the written acceptance is the stored one" || bad "written acceptance differs"
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
claims "$work/l2.json" txn-lost b2
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/l2.json" --out "$work/l2.cose"
proxy before
run 0 "$OTA" attest submit --url "$PU" "$work/l2.cose" --json
jq -e '.ok and .result == "accepted" and (.recovered | not) and (.challenge | startswith("sha256:"))' \
  "$work/stdout" >/dev/null && pass "lost before the commit: sent again, accepted once" \
  || { bad "lost request not sent again"; cat "$work/stdout" "$work/stderr"; }
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
claims "$work/l3.json" txn-lost b3
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/l3.json" --out "$work/l3.cose"
proxy always
run 3 "$OTA" attest submit --url "$PU" "$work/l3.cose"
expect_err http_transport
grep -q "the stored acceptance" "$work/stderr" && pass "nothing stored, nothing accepted: the transport error" \
  || bad "no lookup mentioned"
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
# the same bytes straight to the endpoint: still live, accepted now
run 0 "$OTA" attest submit --url "$U" "$work/l3.cose"

# ---- several files: one batch (application/cbor-seq), one result each ----
for i in 1 2 3; do
  claims "$work/m$i.json" txn-many "b$i"
  run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/m$i.json" --out "$work/m$i.cose"
done
M1=sha256:$(sha256sum "$work/m1.cose" | cut -d' ' -f1)
mkdir -p "$work/accs"
run 2 "$OTA" attest submit --url "$U" "$work/m1.cose" --out-dir "$work/accs"
run 2 "$OTA" attest submit --url "$U" "$work/m1.cose" "$work/m2.cose" --out-dir "$work/no-such-dir"
[ -z "$(ls "$work/accs")" ] && pass "--out-dir refused before anything is sent" || bad "--out-dir wrote"
# a --trust chain that does not verify: refused before anything is sent
# (the two files are accepted just below)
echo '{}' >"$work/not-a-root.json"
run 1 "$OTA" attest submit --url "$U" "$work/m1.cose" "$work/m2.cose" --trust "$work/not-a-root.json"
[ ! -s "$work/stdout" ] && pass "a bad --trust: nothing sent, nothing printed" || bad "bad --trust sent"
run 0 "$OTA" attest submit --url "$U" "$work/m1.cose" "$work/m2.cose" --trust "$T/root.json" --json \
  --out-dir "$work/accs"
jq -e --arg id "$M1" --arg f "$work/m1.cose" '.ok and .accepted == 2 and .refused == 0 and
    (.results | length) == 2 and .results[0].attestation == $id and .results[0].file == $f and
    ([.results[] | .result] == ["accepted", "accepted"])' "$work/stdout" >/dev/null \
  && pass "two files: one batch, both accepted and checked against the trust root" \
  || { bad "batch of two"; cat "$work/stdout" "$work/stderr"; }
af="$work/accs/sha256-${M1#sha256:}.acceptance.cose"
[ "$(ls "$work/accs" | wc -l)" -eq 2 ] && [ "$(jq -r '.results[0].acceptance_file' "$work/stdout")" = "$(basename "$af")" ] &&
  [ "$(jq -r '.results[0].acceptance' "$work/stdout" | base64 -d | sha256sum)" = "$(sha256sum <"$af")" ] \
  && pass "--out-dir: each acceptance written, named by its attestation" \
  || { bad "--out-dir files"; ls -l "$work/accs"; }
printf '\x83\x01\x02\x03' >"$work/garbage.cose"
run 1 "$OTA" attest submit --url "$U" "$work/m2.cose" "$work/m3.cose" "$work/garbage.cose"
[ "$(cut -d' ' -f1,2 "$work/stdout" | tr '\n' ' ')" = "refused nonce_replayed accepted sha256:$(sha256sum "$work/m3.cose" | cut -d' ' -f1) refused cose_tag_missing " ] \
  && pass "one line per file in order: a replay, an acceptance, garbage; exit 1" \
  || { bad "mixed batch lines"; cat "$work/stdout" "$work/stderr"; }
grep -q "garbage.cose" "$work/stderr" && pass "the refusals name their files" || bad "refusal without its file"
# three items of 40 KiB (byte strings: whole CBOR items, no COSE): over
# this endpoint's 64 KiB --max-body together, so the batch is halved until
# each fits, and each item is refused on its own (sent as one batch, all
# three would be http_body_too_large)
for i in 1 2 3; do
  { printf '\x59\xa0\x00'; head -c 40960 /dev/zero; } >"$work/big$i.cose"
done
run 1 "$OTA" attest submit --url "$U" "$work/big1.cose" "$work/big2.cose" "$work/big3.cose"
[ "$(cut -d' ' -f1,2 "$work/stdout" | sort | uniq -c | awk '{print $1, $2, $3}')" = "3 refused cose_tag_missing" ] \
  && pass "files over the body cap together: smaller batches, each file refused on its own" \
  || { bad "big batch split"; cat "$work/stdout" "$work/stderr"; }
run 2 "$OTA" attest submit --url "$U" "$work/m2.cose" "$work/m3.cose" --out "$work/x.acc"
# a lost answer of a batch: each item looked up, the rest sent once more
for i in 4 5; do
  claims "$work/m$i.json" txn-many "b$i"
  run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/m$i.json" --out "$work/m$i.cose"
done
proxy after
run 0 "$OTA" attest submit --url "$PU" "$work/m4.cose" "$work/m5.cose" --trust "$T/root.json" --json
jq -e '.ok and .accepted == 2 and ([.results[] | .recovered] == [true, true])' "$work/stdout" >/dev/null \
  && pass "batch answer lost after the commit: both stored acceptances, checked" \
  || { bad "lost batch answer not recovered"; cat "$work/stdout" "$work/stderr"; }
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null
for i in 6 7; do
  claims "$work/m$i.json" txn-many "b$i"
  run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/m$i.json" --out "$work/m$i.cose"
done
proxy before
run 0 "$OTA" attest submit --url "$PU" "$work/m6.cose" "$work/m7.cose" --json
jq -e '.ok and .accepted == 2 and ([.results[] | .recovered] == [null, null]) and
    ([.results[] | .challenge | startswith("sha256:")] == [true, true])' "$work/stdout" >/dev/null \
  && pass "batch lost before the commit: sent again, both accepted once" \
  || { bad "lost batch not sent again"; cat "$work/stdout" "$work/stderr"; }
kill "$ppid" 2>/dev/null; wait "$ppid" 2>/dev/null

# ---- SIGTERM: clean shutdown, exit 0 ----
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] && pass "SIGTERM -> exit 0" || bad "exit $rc after SIGTERM"
grep -q '"event":"stopped"' "$work/attestd.log" && pass "stopped logged" || bad "no stopped log"
# the endpoint is gone: an environment error
run 3 "$OTA" attest challenge --url "$U" --txn t --issuer issuer:acme --scope oci_remote
expect_err http_transport

# ---- an endpoint whose verifier is trusted for another provider target ----
# it accepts nothing for oci_remote (ota-verify would not take its
# acceptances): 403 trust_scope_mismatch where its principal, nothing consumed
"$ATTESTD" --db "$work/narrow.db" --trust "$T/root.json" --key "$work/narrow-FIXTURE.pem" \
  --port 0 --port-file "$work/port2" 2>"$work/narrow.log" &
pid=$!
for _ in $(seq 100); do [ -s "$work/port2" ] && break; sleep 0.05; done
U="http://127.0.0.1:$(cat "$work/port2" 2>/dev/null)"
claims "$work/n1.json" txn-n b1
run 0 "$OTA" attest sign --key "$work/issuer-FIXTURE.pem" --claims "$work/n1.json" --out "$work/n1.cose"
for i in 1 2; do # the same bytes twice: not a replay, nothing was consumed
  run 1 "$OTA" attest submit --url "$U" "$work/n1.cose" --json
  [ "$(jq -r '.code + " " + .where' "$work/stdout")" = "trust_scope_mismatch verifier:narrow" ] \
    && pass "narrow verifier refuses ($i)" || { bad "narrow verifier ($i)"; cat "$work/stdout"; }
done
grep -q "this endpoint's verifier key" "$work/stdout" && pass "the refusal says it is the endpoint's key" \
  || bad "refusal does not say it is the endpoint's key"
kill -TERM "$pid"
wait "$pid"
pid=

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all attest CLI checks passed"
