#!/usr/bin/env bash
# COSE_Sign1 interop with independent implementations (npm: @auth0/cose,
# cose-js; cbor-x + node:crypto for what neither library offers), both ways:
#   A. messages signed by `ota cose sign` verify with them (ES256, ES384,
#      ES512, EdDSA; tagged; with and without kid; with external AAD; keys
#      made by node and by `ota cose keygen`);
#   B. messages they sign verify with `ota-verify cose` (tagged, external
#      AAD, untagged only with --allow-untagged, --json payload);
#   and every tampered message (signature, payload, protected header), wrong
#   AAD or wrong key is refused by both sides.
# Env: OTA, OTA_VERIFY (CLI paths), OTA_SOURCE_DIR, OTA_BINARY_DIR.
# Needs node and npm; runs `npm ci` once per build tree (tests/interop/
# npm_setup.sh: cached under $OTA_BINARY_DIR/interop-node).
# The node side runs as two batches (node starts twice), ours as plain CLI
# calls. docs/interop.md explains what each library covers.
set -uo pipefail

SRC=${OTA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${OTA_BINARY_DIR:-$SRC/build}
: "${OTA:?set OTA to the ota CLI}" "${OTA_VERIFY:?set OTA_VERIFY to the ota-verify CLI}"

command -v python3 >/dev/null || { echo "interop_cose: python3 is required" >&2; exit 1; }
# shellcheck source=../interop/npm_setup.sh
. "$SRC/tests/interop/npm_setup.sh"
interop_node_setup || exit 1

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect_rc WANT DESCRIPTION CMD...: runs CMD (output to $T/out) and checks its exit code.
expect_rc() {
	local want=$1 what=$2
	shift 2
	"$@" >"$T/out" 2>&1
	local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else bad "$what: exit $rc, want $want: $(head -c 400 "$T/out")"; fi
}

# run_batch FILE: the node side runs every "WANT_RC CMD ARGS" line of FILE.
run_batch() {
	node "$NODE_DIR/cose_interop.js" batch "$1" >"$T/batch.out" 2>&1
	local rc=$? p f
	grep '^FAIL' "$T/batch.out" >&2
	read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$T/batch.out")
	if [ -z "${p:-}" ]; then
		bad "node batch $1 did not finish (exit $rc): $(tail -c 600 "$T/batch.out")"
		return
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || bad "node batch $1 exited $rc"
}

first_byte() { od -An -tx1 -N1 "$1" | tr -d ' \n'; }

# ota-verify --json must say valid with the exact payload bytes.
json_payload_is() {
	python3 - "$1" "$2" <<'PY'
import base64, json, sys
doc = json.load(open(sys.argv[1]))
want = open(sys.argv[2], 'rb').read()
ok = doc.get('valid') is True and base64.b64decode(doc.get('payload', '')) == want
sys.exit(0 if ok else 1)
PY
}

# Does `ota cose sign` take --external-aad? (the issue's CLI does not require it)
SIGN_AAD=0
sign_help=$("$OTA" cose sign --help 2>&1)
case $sign_help in *--external-aad*) SIGN_AAD=1 ;; esac

AAD=0badc0ffee0011aa
ALGS=(ES256 ES384 ES512 EdDSA)
is_ec() { [ "$1" != EdDSA ]; }
verifiers() { if is_ec "$1"; then echo auth0 cose-js; else echo auth0; fi; }
signers() { if is_ec "$1"; then echo auth0 raw cose-js; else echo auth0 raw; fi; }
aad_signer() { if is_ec "$1"; then echo cose-js; else echo raw; fi; }

# ---- 1. node: keys, their messages, their tampered messages ----
B1=$T/batch1
: >"$B1"
for alg in "${ALGS[@]}"; do
	d=$T/$alg
	mkdir -p "$d"
	head -c 1000 /dev/urandom >"$d/payload"
	{
		echo "0 keygen $alg $d/key.pem $d/pub.pem"
		echo "0 keygen $alg $d/other.pem $d/other.pub.pem"
		for lib in $(signers "$alg"); do
			m=$d/$lib.cose
			echo "0 sign --lib $lib --alg $alg --key $d/key.pem --payload $d/payload --out $m"
			echo "0 verify --lib auth0 --alg $alg --key $d/pub.pem --msg $m --expect-payload $d/payload"
			for what in sig payload protected; do
				echo "0 tamper --msg $m --out $d/${lib}_$what.cose --what $what"
				echo "1 verify --lib auth0 --alg $alg --key $d/pub.pem --msg $d/${lib}_$what.cose"
			done
		done
		l=$(aad_signer "$alg")
		echo "0 sign --lib $l --alg $alg --key $d/key.pem --payload $d/payload --aad $AAD --out $d/them_aad.cose"
		echo "0 verify --lib auth0 --alg $alg --key $d/pub.pem --msg $d/them_aad.cose --aad $AAD --expect-payload $d/payload"
		echo "1 verify --lib auth0 --alg $alg --key $d/pub.pem --msg $d/them_aad.cose"
		echo "0 sign --lib auth0 --alg $alg --key $d/key.pem --payload $d/payload --untagged --out $d/untagged.cose"
	} >>"$B1"
done
run_batch "$B1"

# ---- 2. ours: verify theirs, sign ours ----
for alg in "${ALGS[@]}"; do
	d=$T/$alg
	[ -s "$d/pub.pem" ] || { bad "$alg: node made no key"; continue; }
	# B. them -> ours
	for lib in $(signers "$alg"); do
		m=$d/$lib.cose
		expect_rc 0 "$alg: $lib -> ours" "$OTA_VERIFY" cose --key "$d/pub.pem" "$m"
		"$OTA_VERIFY" cose --key "$d/pub.pem" --json "$m" >"$d/$lib.json" 2>/dev/null
		json_payload_is "$d/$lib.json" "$d/payload" && ok ||
			bad "$alg: $lib -> ours --json: not valid or payload differs: $(head -c 300 "$d/$lib.json")"
		expect_rc 1 "$alg: $lib -> ours with the wrong key" "$OTA_VERIFY" cose \
			--key "$d/other.pub.pem" "$m"
		expect_rc 1 "$alg: $lib -> ours with an AAD it did not sign" "$OTA_VERIFY" cose \
			--key "$d/pub.pem" --external-aad "$AAD" "$m"
		for what in sig payload protected; do
			expect_rc 1 "$alg: $lib with $what tampered -> ours" "$OTA_VERIFY" cose \
				--key "$d/pub.pem" "$d/${lib}_$what.cose"
		done
	done
	expect_rc 0 "$alg: $(aad_signer "$alg")+aad -> ours" "$OTA_VERIFY" cose --key "$d/pub.pem" \
		--external-aad "$AAD" "$d/them_aad.cose"
	expect_rc 1 "$alg: $(aad_signer "$alg")+aad -> ours without the aad" "$OTA_VERIFY" cose \
		--key "$d/pub.pem" "$d/them_aad.cose"
	[ "$(first_byte "$d/untagged.cose")" = 84 ] && ok || bad "$alg: untagged message does not start with 0x84"
	expect_rc 1 "$alg: untagged -> ours (tag required)" "$OTA_VERIFY" cose --key "$d/pub.pem" \
		"$d/untagged.cose"
	expect_rc 0 "$alg: untagged -> ours --allow-untagged" "$OTA_VERIFY" cose --key "$d/pub.pem" \
		--allow-untagged "$d/untagged.cose"

	# A. ours, to be checked by them in step 3
	expect_rc 0 "$alg: ota cose sign" "$OTA" cose sign --key "$d/key.pem" --alg "$alg" \
		--payload "$d/payload" --out "$d/ours.cose"
	[ "$(first_byte "$d/ours.cose")" = d2 ] && ok || bad "$alg: our message is not tagged 18"
	expect_rc 0 "$alg: ota cose sign --kid-from-key" "$OTA" cose sign --key "$d/key.pem" \
		--alg "$alg" --payload "$d/payload" --kid-from-key --out "$d/ours_kid.cose"
	expect_rc 0 "$alg: ota cose keygen" "$OTA" cose keygen --alg "$alg" --out "$d/okey.pem" \
		--pub "$d/okey.pub.pem"
	expect_rc 0 "$alg: ota cose sign with an ota key" "$OTA" cose sign --key "$d/okey.pem" \
		--alg "$alg" --payload "$d/payload" --kid-from-key --out "$d/ours_okey.cose"
	if [ "$SIGN_AAD" = 1 ]; then
		expect_rc 0 "$alg: ota cose sign --external-aad" "$OTA" cose sign --key "$d/key.pem" \
			--alg "$alg" --payload "$d/payload" --external-aad "$AAD" --out "$d/ours_aad.cose"
		expect_rc 0 "$alg: ours+aad -> ours" "$OTA_VERIFY" cose --key "$d/pub.pem" \
			--external-aad "$AAD" "$d/ours_aad.cose"
	fi
done

# ---- 3. node: verify ours, tamper ours ----
B2=$T/batch2
: >"$B2"
for alg in "${ALGS[@]}"; do
	d=$T/$alg
	{
		for lib in $(verifiers "$alg"); do
			echo "0 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours.cose --expect-payload $d/payload"
			echo "0 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours_kid.cose --expect-payload $d/payload"
			echo "0 verify --lib $lib --alg $alg --key $d/okey.pub.pem --msg $d/ours_okey.cose --expect-payload $d/payload"
			echo "1 verify --lib $lib --alg $alg --key $d/other.pub.pem --msg $d/ours.cose"
			echo "1 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours.cose --aad $AAD"
			if [ "$SIGN_AAD" = 1 ]; then
				echo "0 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours_aad.cose --aad $AAD --expect-payload $d/payload"
				echo "1 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours_aad.cose"
			fi
		done
		for what in sig payload protected; do
			echo "0 tamper --msg $d/ours.cose --out $d/ours_$what.cose --what $what"
			for lib in $(verifiers "$alg"); do
				echo "1 verify --lib $lib --alg $alg --key $d/pub.pem --msg $d/ours_$what.cose"
			done
		done
	} >>"$B2"
done
run_batch "$B2"

# ---- 4. ours refuses our tampered messages ----
for alg in "${ALGS[@]}"; do
	for what in sig payload protected; do
		expect_rc 1 "$alg: ours with $what tampered -> ours" "$OTA_VERIFY" cose \
			--key "$T/$alg/pub.pem" "$T/$alg/ours_$what.cose"
	done
done

if [ "$SIGN_AAD" != 1 ]; then
	echo "note: ota cose sign has no --external-aad; external AAD is covered in direction B only"
fi
echo "interop_cose: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
