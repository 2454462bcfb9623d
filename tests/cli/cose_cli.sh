#!/usr/bin/env bash
# End-to-end checks of `ota cose keygen|sign|kid` and `ota-verify cose`,
# including exit codes (0 valid, 1 invalid, 2 usage or unreadable input).
set -u
OTA=${OTA:?OTA must name the ota CLI}
OTA_VERIFY=${OTA_VERIFY:?OTA_VERIFY must name the ota-verify CLI}
SRC=${OTA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d /tmp/ota-cose-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
checks=0

# expect CODE DESCRIPTION -- COMMAND...
expect() {
	local want=$1 what=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	checks=$((checks + 1))
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $what: exit $got, want $want" >&2
		sed 's/^/  stderr: /' "$T/err" >&2
		fails=$((fails + 1))
	fi
}

# stderr_has WORD DESCRIPTION: the last command's stderr names WORD
stderr_has() {
	checks=$((checks + 1))
	if ! grep -q -- "$1" "$T/err"; then
		echo "FAIL: $2: stderr lacks $1" >&2
		sed 's/^/  stderr: /' "$T/err" >&2
		fails=$((fails + 1))
	fi
}

json_field() { # json_field FIELD: value of a top-level field in $T/out
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if not isinstance(v,str) else v)' "$T/out" "$1"
}

check_eq() {
	checks=$((checks + 1))
	if [ "$1" != "$2" ]; then
		echo "FAIL: $3: got '$1', want '$2'" >&2
		fails=$((fails + 1))
	fi
}

printf 'This is the content.' >"$T/payload"

# ---- keygen ----
for alg in ES256 ES384 ES512 EdDSA; do
	expect 0 "keygen $alg" -- "$OTA" cose keygen --alg "$alg" --out "$T/$alg.pem" --pub "$T/$alg.pub"
	checks=$((checks + 1))
	mode=$(stat -c %a "$T/$alg.pem")
	[ "$mode" = 600 ] || { echo "FAIL: keygen $alg: private key mode $mode" >&2; fails=$((fails + 1)); }
	checks=$((checks + 1))
	if grep -q "PRIVATE" "$T/out" "$T/err"; then
		echo "FAIL: keygen $alg printed key material" >&2
		fails=$((fails + 1))
	fi
	kid_line=$(cat "$T/out")
	expect 0 "kid of $alg public key" -- "$OTA" cose kid --key "$T/$alg.pub"
	check_eq "kid: $(cat "$T/out")" "$kid_line" "keygen kid equals kid of the public key"
done
expect 2 "keygen refuses to overwrite" -- "$OTA" cose keygen --alg ES256 --out "$T/ES256.pem"
stderr_has already_exists "keygen overwrite"
expect 2 "keygen unknown alg" -- "$OTA" cose keygen --alg HS256 --out "$T/x.pem"
expect 2 "keygen PS256 (verification only)" -- "$OTA" cose keygen --alg PS256 --out "$T/x.pem"
expect 2 "keygen without --out" -- "$OTA" cose keygen --alg ES256

# ---- sign and verify, every alg ----
for alg in ES256 ES384 ES512 EdDSA; do
	expect 0 "sign $alg" -- "$OTA" cose sign --key "$T/$alg.pem" --payload "$T/payload" --kid-from-key --out "$T/$alg.cose"
	checks=$((checks + 1))
	[ "$(head -c1 "$T/$alg.cose" | od -An -tx1 | tr -d ' ')" = d2 ] || { echo "FAIL: $alg message not tagged 18" >&2; fails=$((fails + 1)); }
	expect 0 "verify $alg" -- "$OTA_VERIFY" cose --key "$T/$alg.pub" "$T/$alg.cose"
	expect 0 "verify $alg --json" -- "$OTA_VERIFY" cose --key "$T/$alg.pub" --json "$T/$alg.cose"
	check_eq "$(json_field valid)" true "$alg json valid"
	check_eq "$(json_field code)" ok "$alg json code"
	check_eq "$(json_field alg)" "$alg" "$alg json alg"
	check_eq "$(json_field payload)" "$(base64 -w0 <"$T/payload")" "$alg json payload"
	kid=$("$OTA" cose kid --key "$T/$alg.pub")
	check_eq "$(json_field kid)" "$kid" "$alg json kid"
done

# the wrong key
"$OTA" cose keygen --alg ES256 --out "$T/other.pem" --pub "$T/other.pub" >/dev/null
expect 1 "kid names a different key" -- "$OTA_VERIFY" cose --key "$T/other.pub" "$T/ES256.cose"
stderr_has cose_kid_mismatch "kid names a different key"
expect 0 "sign ES256 without kid" -- "$OTA" cose sign --key "$T/ES256.pem" --payload "$T/payload" --out "$T/nokid.cose"
expect 1 "ES256 message (no kid) with an Ed25519 key" -- "$OTA_VERIFY" cose --key "$T/EdDSA.pub" "$T/nokid.cose"
stderr_has alg_key_mismatch "alg/key mismatch"
expect 1 "ES256 message (no kid) with another P-256 key" -- "$OTA_VERIFY" cose --key "$T/other.pub" "$T/nokid.cose"
stderr_has signature_invalid "wrong P-256 key"

# tampered payload: flip the last payload byte ('.' -> '/')
python3 - "$T/ES256.cose" "$T/tampered.cose" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.index(b"content.") + len("content.") - 1
b[i] ^= 1
open(sys.argv[2], "wb").write(bytes(b))
EOF
expect 1 "tampered payload" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" "$T/tampered.cose"
stderr_has signature_invalid "tampered payload"
expect 1 "tampered payload --json" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" --json "$T/tampered.cose"
check_eq "$(json_field valid)" false "tampered json valid"
check_eq "$(json_field code)" signature_invalid "tampered json code"

# trailing byte
cp "$T/ES256.cose" "$T/trailing.cose"
printf '\0' >>"$T/trailing.cose"
expect 1 "trailing byte" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" "$T/trailing.cose"
stderr_has cose_trailing_bytes "trailing byte"

# external AAD
expect 0 "sign with AAD" -- "$OTA" cose sign --key "$T/EdDSA.pem" --payload "$T/payload" --external-aad 11aa22bb --out "$T/aad.cose"
expect 0 "verify with AAD" -- "$OTA_VERIFY" cose --key "$T/EdDSA.pub" --external-aad 11AA22BB "$T/aad.cose"
expect 1 "verify without AAD" -- "$OTA_VERIFY" cose --key "$T/EdDSA.pub" "$T/aad.cose"
expect 1 "verify with other AAD" -- "$OTA_VERIFY" cose --key "$T/EdDSA.pub" --external-aad 11aa22bc "$T/aad.cose"
expect 2 "verify with bad AAD hex" -- "$OTA_VERIFY" cose --key "$T/EdDSA.pub" --external-aad 1 "$T/aad.cose"

# detached payload
expect 0 "sign detached" -- "$OTA" cose sign --key "$T/ES384.pem" --payload "$T/payload" --detached --out "$T/det.cose"
expect 0 "verify detached" -- "$OTA_VERIFY" cose --key "$T/ES384.pub" --payload "$T/payload" "$T/det.cose"
expect 1 "verify detached without payload" -- "$OTA_VERIFY" cose --key "$T/ES384.pub" "$T/det.cose"
stderr_has cose_detached_payload_missing "detached without payload"
printf 'other' >"$T/other-payload"
expect 1 "verify detached with other payload" -- "$OTA_VERIFY" cose --key "$T/ES384.pub" --payload "$T/other-payload" "$T/det.cose"
expect 2 "verify detached with unreadable payload" -- "$OTA_VERIFY" cose --key "$T/ES384.pub" --payload "$T/nope" "$T/det.cose"

# untagged
expect 0 "sign untagged" -- "$OTA" cose sign --key "$T/ES512.pem" --payload "$T/payload" --untagged --out "$T/untagged.cose"
expect 1 "untagged refused by default" -- "$OTA_VERIFY" cose --key "$T/ES512.pub" "$T/untagged.cose"
stderr_has cose_tag_missing "untagged refused"
expect 0 "untagged allowed" -- "$OTA_VERIFY" cose --key "$T/ES512.pub" --allow-untagged "$T/untagged.cose"

# stdout signing and stdin verification
"$OTA" cose sign --key "$T/EdDSA.pem" --payload "$T/payload" >"$T/stdout.cose"
expect 0 "verify from stdin" -- bash -c "\"$OTA_VERIFY\" cose --key \"$T/EdDSA.pub\" - <\"$T/stdout.cose\""

# sign refusals
expect 2 "sign with a public key" -- "$OTA" cose sign --key "$T/ES256.pub" --payload "$T/payload" --out "$T/x.cose"
stderr_has key_private_required "sign with a public key"
expect 2 "sign with mismatched --alg" -- "$OTA" cose sign --key "$T/ES256.pem" --alg EdDSA --payload "$T/payload" --out "$T/x.cose"
expect 2 "sign with unknown --alg" -- "$OTA" cose sign --key "$T/ES256.pem" --alg RS256 --payload "$T/payload" --out "$T/x.cose"
expect 2 "sign without payload" -- "$OTA" cose sign --key "$T/ES256.pem"
expect 2 "sign with missing payload file" -- "$OTA" cose sign --key "$T/ES256.pem" --payload "$T/nope"

# usage and unreadable input
expect 2 "verify without --key" -- "$OTA_VERIFY" cose "$T/ES256.cose"
expect 2 "verify without MSG" -- "$OTA_VERIFY" cose --key "$T/ES256.pub"
expect 2 "verify with unknown option" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" --frobnicate "$T/ES256.cose"
expect 2 "verify unreadable message" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" "$T/missing.cose"
expect 2 "verify unreadable key" -- "$OTA_VERIFY" cose --key "$T/missing.pub" "$T/ES256.cose"
printf 'not a key' >"$T/garbage.pem"
expect 2 "verify with garbage key" -- "$OTA_VERIFY" cose --key "$T/garbage.pem" "$T/ES256.cose"
stderr_has key_format "garbage key"
expect 2 "unknown ota cose verb" -- "$OTA" cose frobnicate

# --json: one document for every outcome, usage and unreadable input too
# json_fail CODE EXIT DESCRIPTION -- ARGS... (ota-verify cose ARGS --json)
json_fail() {
	local code=$1 want=$2 what=$3
	shift 4
	expect "$want" "$what (--json)" -- "$OTA_VERIFY" cose "$@" --json
	checks=$((checks + 1))
	if ! jq -e --arg c "$code" '.ok == false and .valid == false and .code == $c and
		(.where | type) == "string" and (.message | type) == "string" and (has("payload") | not)' \
		"$T/out" >/dev/null || [ "$(jq -s length "$T/out")" != 1 ]; then
		echo "FAIL: $what: not one JSON document naming $code: $(cat "$T/out")" >&2
		fails=$((fails + 1))
	fi
}
json_fail usage 2 "no --key" -- "$T/ES256.cose"
json_fail usage 2 "no MSG" -- --key "$T/ES256.pub"
json_fail usage 2 "unknown option" -- --key "$T/ES256.pub" --frobnicate "$T/ES256.cose"
json_fail usage 2 "two messages" -- --key "$T/ES256.pub" "$T/ES256.cose" "$T/ES384.cose"
json_fail usage 2 "--key without its value" -- "$T/ES256.cose" --key
json_fail usage 2 "--key followed by an option" -- --key --allow-untagged "$T/ES256.cose"
json_fail usage 2 "--external-aad followed by an option" -- --key "$T/EdDSA.pub" --external-aad --allow-untagged "$T/aad.cose"
json_fail usage 2 "--payload followed by an option" -- --key "$T/ES384.pub" --payload --allow-untagged "$T/det.cose"
json_fail usage 2 "--key twice" -- --key "$T/ES256.pub" --key "$T/other.pub" "$T/ES256.cose"
json_fail usage 2 "--external-aad twice" -- --key "$T/EdDSA.pub" --external-aad 11AA22BB --external-aad 11aa22bc "$T/aad.cose"
json_fail usage 2 "--payload twice" -- --key "$T/ES384.pub" --payload "$T/payload" --payload "$T/other-payload" "$T/det.cose"
json_fail io_error 2 "unreadable message" -- --key "$T/ES256.pub" "$T/missing.cose"
json_fail io_error 2 "unreadable key" -- --key "$T/missing.pub" "$T/ES256.cose"
# a key, message or payload that is a FIFO or device: exit 2 as an
# unreadable one (a FIFO or device --key exited 1, like an invalid message)
mkfifo "$T/fifo"
json_fail not_regular_file 2 "FIFO key" -- --key "$T/fifo" "$T/ES256.cose"
json_fail not_regular_file 2 "device key" -- --key /dev/null "$T/ES256.cose"
json_fail not_regular_file 2 "FIFO message" -- --key "$T/ES256.pub" "$T/fifo"
json_fail not_regular_file 2 "FIFO payload" -- --key "$T/ES384.pub" --payload "$T/fifo" "$T/det.cose"
json_fail io_error 2 "directory key" -- --key "$T" "$T/ES256.cose"
json_fail io_error 2 "directory message" -- --key "$T/ES256.pub" "$T"
json_fail io_error 2 "unreadable payload" -- --key "$T/ES384.pub" --payload "$T/nope" "$T/det.cose"
json_fail key_format 2 "garbage key" -- --key "$T/garbage.pem" "$T/ES256.cose"
json_fail bad_hex 2 "bad AAD hex" -- --key "$T/EdDSA.pub" --external-aad 1 "$T/aad.cose"
json_fail signature_invalid 1 "tampered payload" -- --key "$T/ES256.pub" "$T/tampered.cose"
expect 0 "a valid message (--json)" -- "$OTA_VERIFY" cose --key "$T/ES256.pub" --json "$T/ES256.cose"
check_eq "$(jq -c '[.ok, .valid, .code]' "$T/out")" '[true,true,"ok"]' "valid --json: ok, valid, code"
# "-" is standard input, for --payload as for MSG
expect 0 "--payload - reads standard input" -- bash -c "\"\$0\" cose --key \"\$1\" --payload - --json \"\$2\" <\"\$3\"" \
	"$OTA_VERIFY" "$T/ES384.pub" "$T/det.cose" "$T/payload"
check_eq "$(jq -r .detached "$T/out")" true "--payload - verifies the detached payload"

# the data-driven vectors through the CLI: a sample of each class
for c in ok_eddsa ok_ps256 ok_high_s ok_noncanonical_label_order ok_unknown_unprotected_labels \
	alg_unprotected crit_unknown duplicate_label_across signature_der key_point_invalid key_too_weak; do
	d="$SRC/vectors/cose/$c"
	xxd -r -p "$d/input.cbor.hex" >"$T/$c.cose" 2>/dev/null || python3 -c 'import sys; open(sys.argv[2],"wb").write(bytes.fromhex(open(sys.argv[1]).read().strip()))' "$d/input.cbor.hex" "$T/$c.cose"
	key=$(ls "$d"/key.FIXTURE.* | head -1)
	want=$(cat "$d/expect")
	if [ "$want" = ok ]; then
		expect 0 "vector $c" -- "$OTA_VERIFY" cose --key "$key" --json "$T/$c.cose"
	else
		expect 1 "vector $c" -- "$OTA_VERIFY" cose --key "$key" --json "$T/$c.cose"
		check_eq "$(json_field code)" "${want#error=}" "vector $c code"
	fi
done

# a JWK Set: the kid selects exactly one key; no other key is tried
python3 - "$T" <<'EOF'
import base64, json, os, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
t = sys.argv[1]
def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def jwk(path, kid):
    k = serialization.load_pem_public_key(open(path, "rb").read())
    if isinstance(k, ed25519.Ed25519PublicKey):
        raw = k.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64u(raw), "kid": kid}
    n = k.public_numbers()
    return {"kty": "EC", "crv": "P-256", "x": b64u(n.x.to_bytes(32, "big")),
            "y": b64u(n.y.to_bytes(32, "big")), "kid": kid}
ks = {"keys": [jwk(os.path.join(t, "ES256.pub"), "first"), jwk(os.path.join(t, "EdDSA.pub"), "second")]}
open(os.path.join(t, "set.jwks"), "w").write(json.dumps(ks))
ks["keys"].append(jwk(os.path.join(t, "EdDSA.pub"), "third"))
open(os.path.join(t, "dup.jwks"), "w").write(json.dumps(ks))
EOF
expect 0 "sign for JWK Set" -- "$OTA" cose sign --key "$T/EdDSA.pem" --payload "$T/payload" --kid-from-key --out "$T/set.cose"
expect 0 "JWK Set selects by our kid" -- "$OTA_VERIFY" cose --key "$T/set.jwks" "$T/set.cose"
expect 1 "JWK Set: kid selects two keys" -- "$OTA_VERIFY" cose --key "$T/dup.jwks" "$T/set.cose"
stderr_has cose_kid_ambiguous "ambiguous kid"
expect 1 "JWK Set: message without kid" -- "$OTA_VERIFY" cose --key "$T/set.jwks" "$T/nokid.cose"
stderr_has cose_kid_missing "JWK Set without kid"
expect 1 "JWK Set: kid of a key outside the set" -- "$OTA_VERIFY" cose --key "$T/set.jwks" "$T/ES384.cose"
stderr_has cose_kid_unknown "kid outside the set"

echo "cose_cli: $checks checks, $fails failures"
[ "$fails" -eq 0 ]
