#!/usr/bin/env bash
# Real outputs validate against the JSON Schemas in docs/schemas: ota-verify
# cose --json (valid and refused), the signed receipts inside the committed
# archive vectors, an empty ota cleanup report; and every schema is itself a
# valid Draft 2020-12 schema. (policy, doctor, archive and trust outputs are
# checked by their own tests.)
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
v() { /usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" "$OTA_SOURCE_DIR/docs/schemas/$1" "${@:2}"; }
# COSE verification answers
"$OTA" cose keygen --alg ES256 --out "$tmp/k.pem" --pub "$tmp/k.pub" >/dev/null
printf 'hello' >"$tmp/p"
"$OTA" cose sign --key "$tmp/k.pem" --payload "$tmp/p" --kid-from-key --out "$tmp/m.cose"
"$OTA_VERIFY" cose --key "$tmp/k.pub" --json "$tmp/m.cose" >"$tmp/ok.json"
printf '\x00' | dd of="$tmp/m.cose" bs=1 seek=20 conv=notrunc status=none
set +e; "$OTA_VERIFY" cose --key "$tmp/k.pub" --json "$tmp/m.cose" >"$tmp/bad.json"; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "tampered message exit $rc"
set +e; "$OTA_VERIFY" cose --key "$tmp/k.pub" --frobnicate --json "$tmp/m.cose" >"$tmp/usage.json" 2>/dev/null; rc=$?
"$OTA_VERIFY" cose --key "$tmp/none.pub" --json "$tmp/m.cose" >"$tmp/io.json" 2>/dev/null; rc2=$?; set -e
[ "$rc" -eq 2 ] && [ "$rc2" -eq 2 ] || fail "usage/unreadable exit $rc/$rc2"
v cose-verify.schema.json "$tmp/ok.json" "$tmp/bad.json" "$tmp/usage.json" "$tmp/io.json" || fail "cose-verify schema"
jq -e '.ok == false and .code == "usage"' "$tmp/usage.json" >/dev/null || fail "usage shape"
jq -e '.valid == false and .code != "ok" and (has("payload") | not)' "$tmp/bad.json" >/dev/null || fail "refusal shape"
# the signed receipts of the archive vectors
n=0
for a in "$OTA_SOURCE_DIR"/vectors/archive/[abd].json; do
  openssl pkey -in "$a.runner.FIXTURE.pem" -pubout -out "$tmp/r.pub" 2>/dev/null
  jq -r .receipt.cose_sign1 "$a" | base64 -d >"$tmp/r.cose"
  "$OTA_VERIFY" cose --key "$tmp/r.pub" --json "$tmp/r.cose" | jq -r .payload | base64 -d >"$tmp/receipt-$n.json"
  n=$((n + 1))
done
[ "$n" -eq 3 ] || fail "expected 3 archive vectors, found $n"
v receipt.schema.json "$tmp"/receipt-*.json || fail "receipt schema"
# a receipt with an edited status is refused by the schema too (it cannot be
# trusted anyway: ota-verify archive derives the status itself)
jq '.sandbox_policy.status = "enforced_mostly"' "$tmp/receipt-0.json" >"$tmp/edited.json"
if v receipt.schema.json "$tmp/edited.json" 2>/dev/null; then fail "schema accepted an unknown status"; fi
# what the runner writes for a lane that did not end enforced: every control
# not_proved, a repo_root or network control whose required value is
# unspecified (null) (the schema allowed neither)
jq '.sandbox_policy.status = "enforcement_lost" | .sandbox_policy.runtime_controls |= map(.application = "not_proved") | .sandbox_policy.runtime_controls[0].required = null' \
  "$tmp/receipt-0.json" >"$tmp/lost.json"
v receipt.schema.json "$tmp/lost.json" || fail "receipt schema refused a not_proved control"
jq '.sandbox_policy.runtime_controls[0].application = "mostly"' "$tmp/receipt-0.json" >"$tmp/edited.json"
if v receipt.schema.json "$tmp/edited.json" 2>/dev/null; then fail "schema accepted an unknown application"; fi
# an empty cleanup report
"$OTA" cleanup --lease-db "$tmp/leases.db" --json >"$tmp/cleanup.json"
v cleanup-report.schema.json "$tmp/cleanup.json" || fail "cleanup schema"
echo "schemas: ok"
