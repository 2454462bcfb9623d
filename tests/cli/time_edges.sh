#!/usr/bin/env bash
# Time edges through the real binaries, no root:
#   - ota-verify trust --at: the RFC 3339 and integer forms taken (offsets,
#     lower case, the leap second 23:59:60 UTC of a month's last day) and
#     refused as usage (a 60th second elsewhere, fractions, junk, empty,
#     before 1970, 16 digits); the latest snapshot expired exactly at its
#     expires (--at expires - 1 passes, --at expires is trust_expired);
#   - ota-attestd --max-skew: 0..30 only (ota-verify archive allows 30 s of
#     skew around iat; a wider one signed acceptances whose archives never
#     verify); --challenge-ttl: 1..3600 only (the store's range);
#   - ota-attestd refuses an attestation whose iat is more than the skew
#     before its challenge was issued (attestation_before_challenge; it
#     accepted any iat within --max-age, and ota-verify archive then called
#     the archive not fresh), and accepts one exactly 30 s before;
#   - ota attest sign refuses an iat or exp above 2^62 - 1 by its name (an
#     iat of INT64_MAX overflowed the default exp = iat + 120).
set -uo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}"
ATTESTD=${OTA_ATTESTD:-${OTA_BINARY_DIR:?}/cli/ota-attestd}
command -v jq >/dev/null || { echo "FAIL jq missing (scripts/install-deps.sh)"; exit 1; }
work=$(mktemp -d /tmp/ota-time-edges-XXXXXX)
pid=
stop_attestd() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  pid=
}
trap 'stop_attestd; rm -rf "$work"' EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# run WANT_RC CMD...: stdout in $work/stdout, stderr in $work/stderr
run() {
  local want=$1; shift
  "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then pass "rc=$rc: $*"; else
    bad "rc=$rc (want $want): $*"; sed 's/^/  | /' "$work/stderr" "$work/stdout" | head -5; fi
}

# ---- a trust root: an issuer (oci_remote) and a verifier ----
t=$work/trust
"$OTA" trust init --domain edges.test --dir "$t" --root-keys 1 --threshold 1 >/dev/null || exit 1
"$OTA" trust add-principal --dir "$t" --id provider:ext --role issuer --repo '*' --lane '*' \
  --provider-target oci_remote --sign "$t/keys/root-1.pem" >/dev/null || exit 1
"$OTA" trust add-key --dir "$t" --principal provider:ext --generate "$work/issuer.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null || exit 1
"$OTA" trust add-principal --dir "$t" --id verifier:attestd --role verifier --repo '*' --lane '*' \
  --provider-target '*' --sign "$t/keys/root-1.pem" >/dev/null || exit 1
"$OTA" trust add-key --dir "$t" --principal verifier:attestd --generate "$work/verifier.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null || exit 1
P=$t/versions/1.root.json
EXP=$(jq -r .signed.expires "$P")
case "$EXP" in ''|*[!0-9]*) echo "FAIL no expires in $P"; exit 1 ;; esac

# ---- ota-verify trust --at ----
for at in 2016-12-31T23:59:60Z 2017-01-01T00:59:60+01:00 2024-02-29T23:59:60Z \
          2026-01-01t00:00:00z 2026-01-01T00:00:00-00:00 2025-12-31T23:30:00-00:30 \
          1970-01-01T00:00:00Z 0 1767225600; do
  run 0 "$OTA_VERIFY" trust --pinned "$P" --at "$at"
done
for at in 2026-01-01T12:00:60Z 2016-12-31T23:59:60+01:00 2026-06-29T23:59:60Z \
          2026-01-01T00:00:00.5Z 2026-01-01T00:00:00 "2026-01-01T00:00:00Z " \
          "2026-01-01 00:00:00Z" 2026-01-01T00:00:00Zjunk 2026-01-01T24:00:00Z \
          1969-12-31T23:59:59Z 0000-01-01T00:00:00Z 1970-01-01T00:30:00+01:00 \
          1000000000000000 1767225600s "" "+1767225600"; do
  run 2 "$OTA_VERIFY" trust --pinned "$P" --at "$at" --json
  jq -e '.ok == false and .code == "usage"' "$work/stdout" >/dev/null \
    && pass "--at '$at' is usage" || bad "--at '$at': $(head -c 300 "$work/stdout")"
done
# expired exactly at expires
run 0 "$OTA_VERIFY" trust --pinned "$P" --at "$((EXP - 1))"
run 1 "$OTA_VERIFY" trust --pinned "$P" --at "$EXP" --json
jq -e '.code == "trust_expired"' "$work/stdout" >/dev/null \
  && pass "--at expires: trust_expired" || bad "--at expires: $(head -c 300 "$work/stdout")"

# ---- ota-attestd --max-skew ----
for s in 31 -1 100 1e1 ""; do
  # bounded: a --max-skew taken would start the endpoint (timeout: 124)
  run 2 timeout 10 "$ATTESTD" --db "$work/never.db" --trust "$t/root.json" \
    --key "$work/verifier.pem" --listen 127.0.0.1 --port 0 --max-skew "$s"
  grep -q 'max-skew' "$work/stderr" && pass "--max-skew '$s' named" || bad "--max-skew '$s': $(cat "$work/stderr")"
done
# --challenge-ttl: 1..3600, the store's range (7200 started the endpoint,
# and then every challenge request without a ttl was refused, nonce_ttl)
for s in 3601 7200 0; do
  run 2 timeout 10 "$ATTESTD" --db "$work/never.db" --trust "$t/root.json" \
    --key "$work/verifier.pem" --listen 127.0.0.1 --port 0 --challenge-ttl "$s"
  grep -q 'challenge-ttl' "$work/stderr" && pass "--challenge-ttl '$s' named" \
    || bad "--challenge-ttl '$s': $(cat "$work/stderr")"
done
[ -e "$work/never.db" ] && bad "a refused start created its store" || pass "no store created"

# ---- the endpoint: iat before the challenge ----
"$ATTESTD" --db "$work/attestd.db" --trust "$t/root.json" --key "$work/verifier.pem" \
  --listen 127.0.0.1 --port 0 --port-file "$work/port" --max-skew 30 2>"$work/attestd.log" &
pid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[ -s "$work/port" ] || { echo "FAIL ota-attestd did not start"; cat "$work/attestd.log"; exit 1; }
U="http://127.0.0.1:$(cat "$work/port")"
ROOT_ID=$("$OTA" trust show "$t/root.json" --json | jq -r .identity)
n=0
# submit_iat OFFSET WANT: a challenge, an attestation with iat = the
# challenge's issued_at + OFFSET, submitted; WANT is "accepted" or a code
submit_iat() {
  n=$((n + 1))
  local a=$work/a$n
  "$OTA" attest challenge --url "$U" --txn "txn-$n" --issuer provider:ext --scope oci_remote \
    --json >"$a.ch.json" || { bad "challenge $n"; return; }
  local iat=$(( $(jq -r .issued_at "$a.ch.json") + $1 ))
  jq -n --slurpfile ch "$a.ch.json" --arg tr "$ROOT_ID" --argjson iat "$iat" --arg txn "txn-$n" \
    '{iss: "provider:ext", iat: $iat, exp: ($iat + 300), eat_nonce: $ch[0].nonce,
      kind: "initial_application", txn: $txn, trust_root: $tr, provider: "oci_remote",
      adapter: "a/1", platform: {os: "linux", architecture: "amd64"}, boundary: "b1"}' \
    >"$a.claims.json"
  "$OTA" attest sign --key "$work/issuer.pem" --claims "$a.claims.json" --out "$a.cose" \
    || { bad "sign $n"; return; }
  "$OTA" attest submit --url "$U" "$a.cose" --json --out "$a.acc" >"$a.sub.json" 2>"$a.err"
  if [ "$2" = accepted ]; then
    jq -e '.ok == true and .result == "accepted"' "$a.sub.json" >/dev/null \
      && pass "iat issued$1: accepted" || bad "iat issued$1: $(head -c 300 "$a.sub.json") $(cat "$a.err")"
  else
    jq -e --arg c "$2" '.ok == false and .code == $c' "$a.sub.json" >/dev/null \
      && pass "iat issued$1: $2" || bad "iat issued$1, want $2: $(head -c 300 "$a.sub.json") $(cat "$a.err")"
  fi
}
submit_iat -100 attestation_before_challenge
submit_iat -31 attestation_before_challenge
submit_iat -30 accepted
submit_iat 0 accepted
stop_attestd

# ---- ota attest sign: iat/exp beyond 2^62 - 1 (the decoder's bound) ----
# An iat of INT64_MAX without exp overflowed iat + 120 (the default exp;
# UBSan: signed integer overflow) and the refusal named exp, which the
# claims did not hold; now iat itself is refused, and so is any time the
# endpoint's decoder would refuse.
claims() { # claims IAT [EXP] (written as text: jq would round them to doubles)
  printf '{"iss": "provider:ext", "iat": %s,%s "eat_nonce": "%s", "kind": "initial_application", "txn": "t1", "trust_root": "%s", "provider": "oci_remote", "boundary": "b1"}\n' \
    "$1" "${2:+ \"exp\": $2,}" AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8 "$ROOT_ID" >"$work/c.json"
}
for iat in 9223372036854775807 4611686018427387904; do
  claims "$iat"
  run 1 "$OTA" attest sign --key "$work/issuer.pem" --claims "$work/c.json" --out "$work/c.cose"
  grep -q 'attestation_claim_type: iat' "$work/stderr" && pass "iat $iat named" \
    || bad "iat $iat: $(cat "$work/stderr")"
  grep -q 'runtime error' "$work/stderr" && bad "iat $iat: $(cat "$work/stderr")"
  [ -e "$work/c.cose" ] && bad "iat $iat: written"
done
claims 1800000000 4611686018427387904
run 1 "$OTA" attest sign --key "$work/issuer.pem" --claims "$work/c.json" --out "$work/c.cose"
grep -q 'attestation_claim_type: exp' "$work/stderr" && pass "exp 2^62 named" \
  || bad "exp 2^62: $(cat "$work/stderr")"
claims 4611686018427387000 4611686018427387903
run 0 "$OTA" attest sign --key "$work/issuer.pem" --claims "$work/c.json" --out "$work/c.cose"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
