#!/usr/bin/env bash
# ota cleanup finalizes an orphaned lease: a container whose runner died
# (here: a lease row with a dead runner pid and a container created by runc
# directly) is killed, deleted, confirmed gone, and the lease gets its
# terminal state. A lease of a live runner is left alone.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
command -v runc >/dev/null && command -v sqlite3 >/dev/null || { echo "SKIP: runc/sqlite3 missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-cleanup-XXXXXX)
root=/run/ota/test-cleanup-$$
id=ota-cleanup-test-$$
trap 'runc --root "$root" delete --force "$id" >/dev/null 2>&1 || true; rm -rf "$tmp" "$root"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db=$tmp/leases.db

# empty database: nothing to do
"$OTA" cleanup --lease-db "$db" --json >"$tmp/empty.json"
jq -e '.ok == true and (.finalized | length) == 0' "$tmp/empty.json" >/dev/null || fail "empty: $(cat "$tmp/empty.json")"

# an orphan: container running, its runner gone
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox "$tmp/bundle/rootfs"
( cd "$tmp/bundle" && runc spec )
jq '.process.terminal=false | .process.args=["sleep","300"] | .root.path="'"$tmp/bundle/rootfs"'"' \
  "$tmp/bundle/config.json" >"$tmp/c.json" && mv "$tmp/c.json" "$tmp/bundle/config.json"
mkdir -p "$root"
runc --root "$root" run -d --bundle "$tmp/bundle" "$id" </dev/null >/dev/null 2>&1
pid=$(runc --root "$root" state "$id" | jq .pid)
[ "$(runc --root "$root" state "$id" | jq -r .status)" = running ] || fail "container not running"
# schema owned by provider-oci: create it through ota (list opens the db)
"$OTA" cleanup --lease-db "$db" --list >/dev/null
sqlite3 "$db" "INSERT INTO oci_lease (id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,
  runner_pid, runner_start, phase, container_pid, created_at)
  VALUES ('$id', 't', 'runc', '$(command -v runc)', '$root', '$tmp/nonexistent-bundle', NULL,
  999999999, '1', 'started', $pid, 0);
  INSERT INTO oci_lease (id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,
  runner_pid, runner_start, phase, container_pid, created_at)
  VALUES ('live-$id', 't', 'runc', '$(command -v runc)', '$root', '$tmp/x', NULL,
  $$, '$(awk '{print $22}' /proc/$$/stat)', 'started', 0, 0);"

"$OTA" cleanup --lease-db "$db" --list | grep -q "^$id" || fail "orphan not listed"
"$OTA" cose keygen --alg ES256 --out "$tmp/runner.pem" --pub "$tmp/runner.pub" >/dev/null
"$OTA" cleanup --lease-db "$db" --key "$tmp/runner.pem" --nonce-db "$tmp/nonces.db" \
  --evidence "$tmp/evidence.json" --json >"$tmp/rep.json"
cmp -s <(jq -S .finalized "$tmp/rep.json") <(jq -S .finalized "$tmp/evidence.json") || fail "evidence file differs"
/usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
  "$OTA_SOURCE_DIR/docs/schemas/cleanup-report.schema.json" "$tmp/rep.json" || fail "cleanup report schema"
# the cleanup record is signed (kind cleanup), against a consumed single-use challenge
jq -r '.finalized[0].attestation.cose_sign1' "$tmp/rep.json" | base64 -d >"$tmp/cleanup.cose"
"${OTA_VERIFY:?}" cose --key "$tmp/runner.pub" --json "$tmp/cleanup.cose" >"$tmp/cv.json" || fail "cleanup record does not verify"
jq -r .payload "$tmp/cv.json" | base64 -d | grep -q 'cleanup' || fail "payload is not a cleanup attestation"
jq -e --arg id "$id" '.finalized[0].attestation.kind == "cleanup" and .finalized[0].attestation.boundary == $id
   and (.finalized[0].attestation.challenge.consumed_at > 0)' "$tmp/rep.json" >/dev/null \
  || fail "attestation: $(jq -c .finalized[0].attestation "$tmp/rep.json")"
python3 - "$tmp/cleanup.cose" "$tmp/bad.cose" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[-5] ^= 1
open(sys.argv[2], 'wb').write(bytes(b))
PY
set +e; "$OTA_VERIFY" cose --key "$tmp/runner.pub" "$tmp/bad.cose" >/dev/null 2>&1; vrc=$?; set -e
[ "$vrc" -eq 1 ] || fail "tampered cleanup record not refused ($vrc)"
jq -e --arg id "$id" '.ok == true and (.finalized | length) == 1 and .finalized[0].container_id == $id
   and .finalized[0].state == "enforcement_unknown_after_interruption"
   and .finalized[0].confirmed == true and .finalized[0].cleanup.runtime_forgot == true
   and .skipped_live == 1' "$tmp/rep.json" >/dev/null || fail "report: $(cat "$tmp/rep.json")"
# host-side oracle: the runtime no longer knows the id, the init pid is gone
if runc --root "$root" state "$id" >/dev/null 2>&1; then fail "runtime still knows $id"; fi
# gone, or a zombie not yet reaped by its new parent (it runs nothing, holds no namespace)
if kill -0 "$pid" 2>/dev/null && ! awk '{ exit !($3 == "Z" || $3 == "X") }' "/proc/$pid/stat" 2>/dev/null; then
  fail "container init $pid still running"
fi
[ "$(runc --root "$root" list -q | grep -c "^$id$" || true)" -eq 0 ] || fail "runc list shows $id"
term=$(sqlite3 "$db" "SELECT terminal FROM oci_lease WHERE id = '$id'")
[ "$term" = enforcement_unknown_after_interruption ] || fail "lease terminal '$term'"
live=$(sqlite3 "$db" "SELECT coalesce(terminal, 'open') FROM oci_lease WHERE id = 'live-$id'")
[ "$live" = open ] || fail "live runner's lease was finalized"
# idempotent: nothing left to finalize for dead runners
"$OTA" cleanup --lease-db "$db" --json | jq -e '(.finalized | length) == 0' >/dev/null || fail "second cleanup"
echo "oci_cleanup: ok"
