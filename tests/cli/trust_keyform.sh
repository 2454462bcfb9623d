#!/usr/bin/env bash
# `ota trust add-key --public-key` and `ota-verify trust` against keys that
# are another encoding of a key already in the root (a revoked key coming
# back under a new kid) and keys anyone can sign for: the same P-256 key in
# the hybrid (0x06/0x07) and compressed point forms (key_noncanonical), an
# Ed25519 small-order point (key_point_invalid), RSA with e = 1
# (key_too_weak), an Ed448 key as EdDSA (alg_key_mismatch). Nothing is
# staged or published by a refused edit. Keys are made with openssl(1).
set -uo pipefail
OTA=${OTA:?path of ota}
OTA_VERIFY=${OTA_VERIFY:?path of ota-verify}
command -v openssl >/dev/null || { echo "SKIP: openssl missing"; exit 0; }
work=$(mktemp -d /tmp/ota-trust-keyform-XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# refused NAME CODE CMD...: exit status 1 and CODE on stderr
refused() {
  local name=$1 code=$2; shift 2
  "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ "$rc" -eq 1 ] && grep -q "$code" "$work/stderr"; then pass "$name: $code"; else
    bad "$name: rc=$rc (want 1 and $code)"; sed 's/^/  | /' "$work/stderr"; fi
}
ok() {
  local name=$1; shift
  if "$@" >"$work/stdout" 2>"$work/stderr"; then pass "$name"; else
    bad "$name: rc=$?"; sed 's/^/  | /' "$work/stderr"; fi
}
# pem_of_der DER PEM
pem_of_der() {
  { echo "-----BEGIN PUBLIC KEY-----"; base64 -w 64 "$1"; echo "-----END PUBLIC KEY-----"; } >"$2"
}
D="$work/trust"
T=2020-01-01T00:00:00Z
ok "init" "$OTA" trust init --domain acme.example --dir "$D" --root-keys 1 --threshold 1
R="$D/keys/root-1.pem"
ok "add-principal" "$OTA" trust add-principal --dir "$D" --id ci-runner --role runner \
  --repo '*' --lane '*' --provider-target oci_local --sign "$R"

# the key, revoked
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/runner.pem" 2>/dev/null
openssl pkey -in "$work/runner.pem" -pubout -out "$work/pub.pem" 2>/dev/null
ok "add-key (uncompressed point)" "$OTA" trust add-key --dir "$D" --principal ci-runner \
  --public-key "$work/pub.pem" --valid-from $T --sign "$R"
kid=$(sed -n 's/^key \([0-9a-f]\{64\}\) for ci-runner.*/\1/p' "$work/stdout")
[ ${#kid} -eq 64 ] && pass "kid printed" || bad "no kid"
ok "revoke-key" "$OTA" trust revoke-key --dir "$D" --kid "$kid" --revoked-at 2021-01-01T00:00:00Z \
  --sign "$R"
before=$(ls "$D/versions" | wc -l)

# the same key in other point forms: other kids, refused
for form in hybrid compressed; do
  openssl ec -pubin -in "$work/pub.pem" -conv_form $form -pubout -out "$work/pub-$form.pem" 2>/dev/null
  refused "add-key ($form point)" key_noncanonical "$OTA" trust add-key --dir "$D" \
    --principal ci-runner --public-key "$work/pub-$form.pem" --valid-from $T --sign "$R"
done
# the same key under its kid again
refused "add-key (same key again)" trust_duplicate_key "$OTA" trust add-key --dir "$D" \
  --principal ci-runner --public-key "$work/pub.pem" --valid-from $T --sign "$R"

# Ed25519 small-order points: the identity and y = p + 1; RSA e = 1
printf '%s\n' "-----BEGIN PUBLIC KEY-----" \
  "MCowBQYDK2VwAyEAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" \
  "-----END PUBLIC KEY-----" >"$work/ed-identity.pem"
printf '%s\n' "-----BEGIN PUBLIC KEY-----" \
  "MCowBQYDK2VwAyEA7v///////////////////////////////////////38=" \
  "-----END PUBLIC KEY-----" >"$work/ed-p-plus-1.pem"
for k in ed-identity ed-p-plus-1; do
  refused "add-key ($k)" key_point_invalid "$OTA" trust add-key --dir "$D" --principal ci-runner \
    --public-key "$work/$k.pem" --alg EdDSA --valid-from $T --sign "$R"
done
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/rsa.pem" 2>/dev/null
n=$(openssl rsa -in "$work/rsa.pem" -noout -modulus 2>/dev/null | sed 's/^Modulus=//')
cat >"$work/e1.cnf" <<EOF
asn1=SEQUENCE:spki
[spki]
alg=SEQUENCE:algid
key=BITWRAP,SEQUENCE:rsakey
[algid]
oid=OID:rsaEncryption
null=NULL
[rsakey]
n=INTEGER:0x$n
e=INTEGER:1
EOF
openssl asn1parse -genconf "$work/e1.cnf" -noout -out "$work/e1.der" >/dev/null 2>&1
pem_of_der "$work/e1.der" "$work/rsa-e1.pem"
refused "add-key (RSA e=1)" key_too_weak "$OTA" trust add-key --dir "$D" --principal ci-runner \
  --public-key "$work/rsa-e1.pem" --alg PS256 --valid-from $T --sign "$R"
openssl pkey -in "$work/rsa.pem" -pubout -out "$work/rsa-pub.pem" 2>/dev/null
ok "add-key (RSA e=65537)" "$OTA" trust add-key --dir "$D" --principal ci-runner \
  --public-key "$work/rsa-pub.pem" --alg PS256 --valid-from $T --sign "$R"
before=$((before + 1))

# Ed448 is not EdDSA in a trust root
openssl genpkey -algorithm ED448 -out "$work/ed448.pem" 2>/dev/null
openssl pkey -in "$work/ed448.pem" -pubout -out "$work/ed448-pub.pem" 2>/dev/null
refused "add-key (Ed448 as EdDSA)" alg_key_mismatch "$OTA" trust add-key --dir "$D" \
  --principal ci-runner --public-key "$work/ed448-pub.pem" --alg EdDSA --valid-from $T --sign "$R"

after=$(ls "$D/versions" | wc -l)
[ "$after" -eq "$before" ] && pass "refused edits published nothing" || bad "versions $before -> $after"
[ ! -f "$D/staged.json" ] && pass "refused edits staged nothing" || bad "staged.json left behind"
chain=()
for i in $(seq 2 "$after"); do chain+=("$D/versions/$i.root.json"); done
ok "ota-verify trust accepts the chain" "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "${chain[@]}"
"$OTA" trust show --dir "$D" >"$work/show" 2>&1
[ "$(grep -c '^  key ' "$work/show")" -eq 2 ] && pass "two principal keys (the revoked one, RSA)" ||
  { bad "principal keys"; cat "$work/show"; }

[ "$fails" -eq 0 ] && echo "trust_keyform: ok" || { echo "trust_keyform: $fails failure(s)"; exit 1; }
