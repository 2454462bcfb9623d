#!/usr/bin/env bash
# Regenerates vectors/trust/: fixture keys (keys/*FIXTURE*.pem, test use only)
# and data-driven chain cases chains/<case>/{case.json, *.json}, each keyed by
# the stable error name it must produce (or "ok"). Uses the built CLI:
#   OTA=build/x/cli/ota vectors/trust/generate.sh
# ECDSA signatures are randomized, so a rerun changes bytes, never outcomes.
set -euo pipefail
OTA=${OTA:?path of the ota CLI}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/ota-trust-vec-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
T0=1700000000      # 2023-11-14: issued_at of the fixtures
EXP=2000000000     # 2033-05-18: expires of the fixtures
AT=1800000000      # 2027-01-15: verifier's time of most cases

W="$tmp/acme" W2="$tmp/other"
q() { "$OTA" trust "$@" >/dev/null; }
# ---- domain acme.example: v1 init, v2 principal + key, v3 revocation, v4 rotation
q init --domain acme.example --dir "$W" --root-keys 3 --threshold 2 --now $T0 --expires $EXP
q add-principal --dir "$W" --id runner-1 --role runner --repo 'acme/*' --lane ci \
  --provider-target oci_local --now $((T0 + 10)) --expires $EXP
q add-key --dir "$W" --principal runner-1 --generate "$tmp/runner-1.pem" --valid-from $T0 \
  --sign "$W/keys/root-1.pem" --sign "$W/keys/root-2.pem" --now $((T0 + 10)) --expires $EXP
rkid=$(jq -r '.signed.principals[0].keys[0].kid' "$W/root.json")
q revoke-key --dir "$W" --kid "$rkid" --revoked-at 1750000000 \
  --sign "$W/keys/root-2.pem" --sign "$W/keys/root-3.pem" --now $((T0 + 20)) --expires $EXP
q rotate --dir "$W" --root-keys 3 --threshold 2 --sign "$W/keys/root-1.pem" \
  --sign "$W/keys/root-3.pem" --now $((T0 + 30)) --expires $EXP
q sign --dir "$W" --key "$W/keys/root-v4-1.pem"
q sign --dir "$W" --key "$W/keys/root-v4-2.pem"
V="$W/versions"
[ -f "$V/4.root.json" ] || { echo "chain generation failed" >&2; exit 1; }
# ---- domain other.example: v2 expires early (2025), v3 valid
q init --domain other.example --dir "$W2" --root-keys 1 --now $T0 --expires $EXP
q add-principal --dir "$W2" --id prov --role issuer --repo '*' --lane '*' \
  --provider-target oci_local --sign "$W2/keys/root-1.pem" --now $((T0 + 10)) --expires 1750000000
q add-principal --dir "$W2" --id prov2 --role issuer --repo '*' --lane '*' \
  --provider-target oci_local --sign "$W2/keys/root-1.pem" --now $((T0 + 20)) --expires $EXP
V2="$W2/versions"

rm -rf "$here/chains" "$here/parse" "$here/lookup" "$here/keys"
mkdir -p "$here/chains" "$here/parse" "$here/keys"
for f in "$W"/keys/*.pem "$W2"/keys/*.pem "$tmp/runner-1.pem"; do
  case "$f" in "$W2"/*) dom=other ;; *) dom=acme ;; esac
  name=$(basename "$f" .pem)
  { echo "FIXTURE test key ($dom.example $name), public in this repository: never trust it."
    cat "$f"; } >"$here/keys/$dom-$name-FIXTURE.pem"
done

# case NAME EXPECT AT LATEST FILE...  (files: pinned first)
case_() {
  local name=$1 expect=$2 at=$3 latest=$4; shift 4
  local d="$here/chains/$name" i=0 files=()
  mkdir -p "$d"
  for f in "$@"; do
    i=$((i + 1)); cp "$f" "$d/$i.json"; files+=("\"$i.json\"")
  done
  local lv=""
  [ "$latest" != - ] && lv=", \"latest_version\": $latest"
  printf '{"expect": "%s", "at": %s, "files": [%s]%s}\n' "$expect" "$at" \
    "$(IFS=,; echo "${files[*]}")" "$lv" >"$d/case.json"
}
# parse_case NAME EXPECT FILE: one snapshot for ota_trust_root_parse alone
# (structure refusals inside principals are only reached once a chain has
# checked the signatures, so they are tested on the parser directly).
parse_case() {
  local d="$here/parse/$1"
  mkdir -p "$d"
  cp "$3" "$d/1.json"
  printf '{"mode": "parse", "expect": "%s", "at": 0, "files": ["1.json"]}\n' "$2" >"$d/case.json"
}
# edit IN OUT JQ [SIGNER-KEY PREV]...: jq over the document, then, when signers
# are given, signatures cleared and made again with `ota trust sign`.
edit() {
  local in=$1 out=$2 prog=$3; shift 3
  if [ $# -gt 0 ]; then prog="$prog | .signatures = []"; fi
  jq "$prog" "$in" >"$out"
  while [ $# -gt 0 ]; do q sign --key "$1" --prev "$2" "$out"; shift 2; done
}

case_ ok_pinned_only ok $AT 1 "$V/1.root.json"
case_ ok_chain_with_rotation ok $AT 4 "$V"/{1,2,3,4}.root.json
case_ ok_same_version_again ok $AT 2 "$V"/{1,2,2}.root.json
case_ ok_expired_intermediate ok $AT 3 "$V2"/{1,2,3}.root.json
case_ freeze_expired_latest trust_expired $AT - "$V2"/{1,2}.root.json
case_ freeze_after_expiry trust_expired 2000000000 - "$V"/{1,2,3,4}.root.json
case_ version_skip trust_version_skip $AT - "$V"/{1,3}.root.json
case_ rollback trust_rollback $AT - "$V"/{1,2,3,2}.root.json
case_ other_domain trust_domain_mismatch $AT - "$V/1.root.json" "$V2/2.root.json"

edit "$V/1.root.json" "$tmp/unsigned.json" '.signatures = []'
case_ unsigned_pinned trust_threshold_new $AT - "$tmp/unsigned.json"
edit "$V/1.root.json" "$tmp/one.json" '.signatures = [.signatures[0]]'
case_ pinned_below_threshold trust_threshold_new $AT - "$tmp/one.json"

jq --slurpfile v3 "$V/3.root.json" \
  '.signatures |= map(select(.keyid as $k | ($v3[0].signed.root.keys | map(.kid) | index($k)) == null))' \
  "$V/4.root.json" >"$tmp/no_old.json"
case_ rotation_missing_old_threshold trust_threshold_old $AT - "$V"/{1,2,3}.root.json "$tmp/no_old.json"
jq --slurpfile v3 "$V/3.root.json" \
  '.signatures |= map(select(.keyid as $k | ($v3[0].signed.root.keys | map(.kid) | index($k)) != null))' \
  "$V/4.root.json" >"$tmp/no_new.json"
case_ rotation_missing_new_threshold trust_threshold_new $AT - "$V"/{1,2,3}.root.json "$tmp/no_new.json"

edit "$V/2.root.json" "$tmp/dupsig.json" '.signatures += [.signatures[0]]'
case_ duplicate_signature trust_duplicate_signature $AT - "$V/1.root.json" "$tmp/dupsig.json"
edit "$V/2.root.json" "$tmp/dupkey.json" '.signed.root.keys += [.signed.root.keys[0]]'
case_ duplicate_root_key trust_duplicate_key $AT - "$V/1.root.json" "$tmp/dupkey.json"
# the same key under a second entry in another encoding (compressed point)
jq -r '.signed.root.keys[0].public_key' "$V/1.root.json" >"$tmp/pub.pem"
openssl ec -pubin -in "$tmp/pub.pem" -conv_form compressed -pubout -out "$tmp/pubc.pem" 2>/dev/null
edit "$V/2.root.json" "$tmp/compressed.json" \
  ".signed.root.keys += [.signed.root.keys[0] | .public_key = $(jq -Rs . "$tmp/pubc.pem")]"
case_ same_key_other_encoding trust_key_noncanonical $AT - "$V/1.root.json" "$tmp/compressed.json"

R1="$W/keys/root-1.pem" R2="$W/keys/root-2.pem"
edit "$V/2.root.json" "$tmp/v2b.json" '.signed.issued_at += 1' "$R1" "$V/1.root.json" "$R2" "$V/1.root.json"
case_ equivocation trust_equivocation $AT - "$V"/{1,2}.root.json "$tmp/v2b.json"
edit "$V/2.root.json" "$tmp/v2m.json" \
  '.signed.prev = "sha256:0000000000000000000000000000000000000000000000000000000000000000"' \
  "$R1" "$V/1.root.json" "$R2" "$V/1.root.json"
case_ mix_and_match_prev trust_prev_mismatch $AT - "$V/1.root.json" "$tmp/v2m.json"
edit "$V/2.root.json" "$tmp/absurd.json" '.signed.version = 1000000001'
case_ absurd_version trust_version_absurd $AT - "$V/1.root.json" "$tmp/absurd.json"
edit "$V/4.root.json" "$tmp/unrevoked.json" 'del(.signed.principals[0].keys[0].revoked_at)' \
  "$R1" "$V/3.root.json" "$R2" "$V/3.root.json" \
  "$W/keys/root-v4-1.pem" "$V/3.root.json" "$W/keys/root-v4-2.pem" "$V/3.root.json"
case_ revocation_dropped trust_revocation_dropped $AT - "$V"/{1,2,3}.root.json "$tmp/unrevoked.json"
edit "$V/4.root.json" "$tmp/later.json" '.signed.principals[0].keys[0].revoked_at += 1' \
  "$R1" "$V/3.root.json" "$R2" "$V/3.root.json" \
  "$W/keys/root-v4-1.pem" "$V/3.root.json" "$W/keys/root-v4-2.pem" "$V/3.root.json"
case_ revocation_moved_later trust_revocation_dropped $AT - "$V"/{1,2,3}.root.json "$tmp/later.json"
edit "$V/2.root.json" "$tmp/kid.json" \
  '.signed.principals[0].keys[0].kid = "00000000000000000000000000000000000000000000000000000000000000ff"'
parse_case kid_not_spki_hash trust_kid_mismatch "$tmp/kid.json"
edit "$V/2.root.json" "$tmp/member.json" '.signed.extra = 1'
case_ unknown_member trust_snapshot_malformed $AT - "$V/1.root.json" "$tmp/member.json"
edit "$V/2.root.json" "$tmp/dupprin.json" '.signed.principals += [.signed.principals[0] | .keys = []]'
parse_case duplicate_principal trust_duplicate_principal "$tmp/dupprin.json"
# unsigned principal edits reach the chain as a missing threshold
case_ unsigned_principal_edit trust_threshold_old $AT - "$V/1.root.json" "$tmp/dupprin.json"
parse_case duplicate_signature trust_duplicate_signature "$tmp/dupsig.json"
parse_case duplicate_root_key trust_duplicate_key "$tmp/dupkey.json"
parse_case same_key_other_encoding trust_key_noncanonical "$tmp/compressed.json"
parse_case absurd_version trust_version_absurd "$tmp/absurd.json"
parse_case unknown_member trust_snapshot_malformed "$tmp/member.json"
edit "$V/2.root.json" "$tmp/dupprinkey.json" \
  '.signed.principals += [{"id": "other", "role": "issuer", "scopes": {"repos": [], "lanes": [], "provider_targets": []}, "keys": [.signed.principals[0].keys[0]]}]'
parse_case same_key_two_principals trust_duplicate_key "$tmp/dupprinkey.json"
edit "$V/2.root.json" "$tmp/pattern.json" '.signed.principals[0].scopes.repos = ["acme/*/x"]'
parse_case star_inside_pattern trust_snapshot_malformed "$tmp/pattern.json"
edit "$V/2.root.json" "$tmp/role.json" '.signed.principals[0].role = "admin"'
parse_case unknown_role trust_snapshot_malformed "$tmp/role.json"
edit "$V/2.root.json" "$tmp/float.json" '.signed.expires = 2000000000.5'
parse_case float_time trust_snapshot_malformed "$tmp/float.json"
priv=$(grep -v FIXTURE "$W/keys/root-1.pem" | jq -Rs .)
edit "$V/2.root.json" "$tmp/priv.json" ".signed.root.keys[0].public_key = $priv"
parse_case private_key_in_root trust_snapshot_malformed "$tmp/priv.json"
edit "$V/2.root.json" "$tmp/v1prev.json" '.signed.version = 1'
parse_case version_one_with_prev trust_snapshot_malformed "$tmp/v1prev.json"
edit "$V/2.root.json" "$tmp/alg.json" '.signed.principals[0].keys[0].alg = "ES384"'
parse_case alg_not_the_keys alg_key_mismatch "$tmp/alg.json"

# ---- lookup vectors: one snapshot, cases for ota_trust_lookup ----
W3="$tmp/lookup" L="$here/lookup"
mkdir -p "$L"
q init --domain lookup.example --dir "$W3" --root-keys 1 --now $T0 --expires $EXP
q add-principal --dir "$W3" --id runner-1 --role runner --repo 'acme/*' --lane ci \
  --provider-target oci_local --now $T0 --expires $EXP
q add-principal --dir "$W3" --id prov --role issuer --repo '*' --lane '*' \
  --provider-target remote_vm --now $T0 --expires $EXP
kid_of() { "$OTA" trust add-key "$@" --now $T0 --expires $EXP | sed -n 's/^key \([0-9a-f]\{64\}\) .*/\1/p'; }
A=$(kid_of --dir "$W3" --principal runner-1 --generate "$tmp/lk-a.pem" --valid-from 1700000000 --valid-until 1900000000)
B=$(kid_of --dir "$W3" --principal runner-1 --generate "$tmp/lk-b.pem" --alg EdDSA --valid-from 1700000000)
C=$(kid_of --dir "$W3" --principal prov --generate "$tmp/lk-c.pem" --alg ES384 --valid-from 1700000000)
q revoke-key --dir "$W3" --kid "$B" --revoked-at 1750000000 --sign "$W3/keys/root-1.pem" --now $T0 --expires $EXP
RK=$(jq -r '.signed.root.keys[0].kid' "$W3/root.json")
cp "$W3/root.json" "$L/root.json"
for k in a b c; do
  { echo "FIXTURE test key (lookup.example principal key $k), public in this repository: never trust it."
    cat "$tmp/lk-$k.pem"; } >"$here/keys/lookup-$k-FIXTURE.pem"
done
# lk KID ALG ROLE REPO LANE TARGET AT EXPECT NOTE ("" = not checked)
cases=()
lk() { cases+=("$(jq -cn --arg kid "$1" --arg alg "$2" --arg role "$3" --arg repo "$4" \
  --arg lane "$5" --arg target "$6" --argjson at "$7" --arg expect "$8" --arg note "$9" \
  '{kid: $kid, alg: $alg, role: $role, repo: $repo, lane: $lane, provider_target: $target,
    at: $at, expect: $expect, note: $note}')"); }
lk "$A" ES256 runner acme/widgets ci oci_local 1800000000 ok "in scope, in window"
lk "$A" ES256 runner "" "" "" 1800000000 ok "no scope requested"
lk "$A" ES384 runner acme/widgets ci oci_local 1800000000 trust_alg_mismatch "alg is not the key's alg"
lk "$A" ES256 issuer acme/widgets ci oci_local 1800000000 trust_role_mismatch "runner key used as issuer"
lk "$A" ES256 runner evil/widgets ci oci_local 1800000000 trust_scope_mismatch "other organisation"
lk "$A" ES256 runner acme/a/b ci oci_local 1800000000 trust_scope_mismatch "'*' does not cross '/'"
lk "$A" ES256 runner acme/widgets release oci_local 1800000000 trust_scope_mismatch "other lane"
lk "$A" ES256 runner acme/widgets ci remote_vm 1800000000 trust_scope_mismatch "other provider target"
lk "$A" ES256 runner acme/widgets ci oci_local 1699999999 trust_key_not_yet_valid "before valid_from"
lk "$A" ES256 runner acme/widgets ci oci_local 1900000000 trust_key_expired "at valid_until"
lk "$B" EdDSA runner acme/widgets ci oci_local 1749999999 ok "before revoked_at"
lk "$B" EdDSA runner acme/widgets ci oci_local 1800000000 trust_key_revoked "revoked; a backdated iat (1740000000) is never used"
lk "$C" ES384 issuer any/repo any-lane remote_vm 1800000000 ok "issuer with '*' scopes"
lk "$C" ES384 issuer any/repo any-lane oci_local 1800000000 trust_scope_mismatch "issuer outside its provider target"
lk "$RK" ES256 runner "" "" "" 1800000000 trust_key_unknown "a root key is no principal key"
lk "0000000000000000000000000000000000000000000000000000000000000000" ES256 runner "" "" "" 1800000000 trust_key_unknown "unknown kid"
printf '%s\n' "${cases[@]}" | jq -s '{snapshot: "root.json", cases: .}' >"$L/cases.json"

echo "wrote $(ls "$here/chains" | wc -l) chain cases and $(ls "$here/parse" | wc -l) parse cases, $(jq '.cases | length' "$L/cases.json") lookup cases"
