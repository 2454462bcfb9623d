#!/usr/bin/env bash
# ota cleanup finalizes an orphaned lease: a container whose runner died
# (here: a lease row with a dead runner pid and a container created by runc
# directly) is killed, deleted, confirmed gone, and the lease gets its
# terminal state. A lease of a live runner is left alone.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null && command -v sqlite3 >/dev/null || { echo "SKIP: runc/sqlite3 missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-cleanup-XXXXXX)
root=/run/ota/test-cleanup-$$
id=ota-cleanup-test-$$
trap 'for c in "$id" ota-cleanup-run-$$; do runc --root "$root" delete --force "$c" >/dev/null 2>&1 || true; done
  "$OTA" cleanup --lease-db "$tmp/leases.db" >/dev/null 2>&1 || true; rm -rf "$tmp" "$root"' EXIT
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

# ---- an orphan finalized by the next `ota run` (not `ota cleanup`) gets its signed record too ----
id2=ota-cleanup-run-$$
runc --root "$root" run -d --bundle "$tmp/bundle" "$id2" </dev/null >/dev/null 2>&1
pid2=$(runc --root "$root" state "$id2" | jq .pid)
sqlite3 "$db" "INSERT INTO oci_lease (id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,
  runner_pid, runner_start, phase, container_pid, created_at)
  VALUES ('$id2', 't2', 'runc', '$(command -v runc)', '$root', '$tmp/nonexistent-bundle', NULL,
  999999999, '1', 'started', $pid2, 0);"
OTA_CACHE=$tmp/cache bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$tmp/img" bb:1 >/dev/null
w=$tmp/w
mkdir -p "$w/reports"
{
  contract_head cleanup-by-run bb:1
  cat <<YAML
tasks:
  check:
    context: box
    run: "echo ok > reports/ok.txt"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [check]
YAML
} >"$w/ota.yaml"
( cd "$w" && "$OTA" run check --agent --runtime-root "$root" --lease-db "$db" --state-dir "$tmp/state" \
    --image-store "$tmp/img" --key "$tmp/runner.pem" --nonce-db "$tmp/nonces.db" --no-archive ) \
  >/dev/null 2>"$tmp/run.err" || fail "ota run: $(cat "$tmp/run.err")"
ev=$w/.ota/cleanup/$id2.json
grep -q "cleanup evidence $ev" "$tmp/run.err" || fail "no cleanup evidence path printed: $(cat "$tmp/run.err")"
/usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
  "$OTA_SOURCE_DIR/docs/schemas/cleanup-report.schema.json" "$ev" || fail "run's cleanup evidence schema"
jq -e --arg id "$id2" '.ok == true and (.finalized | length) == 1 and .finalized[0].container_id == $id
   and .finalized[0].confirmed == true and .finalized[0].txn == "t2"
   and .finalized[0].attestation.kind == "cleanup" and .finalized[0].attestation.boundary == $id' "$ev" >/dev/null \
  || fail "run's cleanup evidence: $(cat "$ev")"
jq -r '.finalized[0].attestation.cose_sign1' "$ev" | base64 -d >"$tmp/cleanup2.cose"
"$OTA_VERIFY" cose --key "$tmp/runner.pub" "$tmp/cleanup2.cose" >/dev/null || fail "run's cleanup record does not verify"
if runc --root "$root" state "$id2" >/dev/null 2>&1; then fail "runtime still knows $id2"; fi
[ "$(sqlite3 "$db" "SELECT terminal FROM oci_lease WHERE id = '$id2'")" = enforcement_unknown_after_interruption ] \
  || fail "lease $id2 not finalized"
[ -s "$w/reports/ok.txt" ] || fail "the run itself did not run"
echo "oci_cleanup: ok"
