#!/usr/bin/env bash
# ota cleanup finalizes an orphaned lease: a container whose runner died
# (here: a lease row with a dead runner pid and a container created by runc
# directly) is killed, deleted, confirmed gone, its bundle removed, and the
# lease gets its terminal state. A lease of a live runner is left alone.
# Lease rows are data, not instructions: forged rows (an id "../x", a bundle
# outside STATE/bundles, a script or /bin/sh as the runtime binary, another
# runtime root holding a live container) run nothing, remove nothing, stay
# open and make cleanup exit 1 with oci_lease_untrusted, while a real orphan
# in the same database is still finalized; the next run's orphan sweep
# leaves them alone too. An unusable --key is refused before any lease is
# acted upon.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null && command -v sqlite3 >/dev/null || { echo "SKIP: runc/sqlite3 missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-cleanup-XXXXXX)
root=/run/ota/test-cleanup-$$
root2=/run/ota/test-cleanup2-$$
state=$tmp/state
# container ids in the one form the runner makes: ota- and 24 lowercase hex digits
hex24() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
id=ota-$(hex24) id2=ota-$(hex24) id3=ota-$(hex24) fid=ota-$(hex24)
trap 'for c in "$id" "$id2" "$id3"; do runc --root "$root" delete --force "$c" >/dev/null 2>&1 || true; done
  runc --root "$root2" delete --force "$fid" >/dev/null 2>&1 || true
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root" "$root2"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db=$tmp/leases.db
runc_bin=$(command -v runc)
# plant ID RUNTIME BIN ROOT BUNDLE [CONTAINER_PID]: a dead runner's open lease
plant() {
  sqlite3 "$db" "INSERT INTO oci_lease (id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,
    runner_pid, runner_start, phase, container_pid, created_at)
    VALUES ('$1', 't', '$2', '$3', '$4', '$5', NULL, 999999999, '1', 'started', ${6:-0}, 0);"
}
cl=(--lease-db "$db" --runtime-root "$root" --state-dir "$state")

# empty database: nothing to do
"$OTA" cleanup "${cl[@]}" --json >"$tmp/empty.json"
jq -e '.ok == true and (.finalized | length) == 0 and .untrusted == []' "$tmp/empty.json" >/dev/null || fail "empty: $(cat "$tmp/empty.json")"

# an orphan: container running, its runner gone
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox "$tmp/bundle/rootfs"
( cd "$tmp/bundle" && runc spec )
jq '.process.terminal=false | .process.args=["sleep","300"] | .root.path="'"$tmp/bundle/rootfs"'"' \
  "$tmp/bundle/config.json" >"$tmp/c.json" && mv "$tmp/c.json" "$tmp/bundle/config.json"
mkdir -p "$root" "$root2" "$state/bundles"
runc --root "$root" run -d --bundle "$tmp/bundle" "$id" </dev/null >/dev/null 2>&1
pid=$(runc --root "$root" state "$id" | jq .pid)
[ "$(runc --root "$root" state "$id" | jq -r .status)" = running ] || fail "container not running"
# its bundle, as the runner leaves it: STATE/bundles/ID
mkdir "$state/bundles/$id" && echo '{}' >"$state/bundles/$id/config.json"
# schema owned by provider-oci: create it through ota (list opens the db)
"$OTA" cleanup --lease-db "$db" --list >/dev/null
plant "$id" runc "$runc_bin" "$root" "$state/bundles/$id" "$pid"
sqlite3 "$db" "INSERT INTO oci_lease (id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,
  runner_pid, runner_start, phase, container_pid, created_at)
  VALUES ('live-$id', 't', 'runc', '$runc_bin', '$root', '$tmp/x', NULL,
  $$, '$(awk '{print $22}' /proc/$$/stat)', 'started', 0, 0);"

"$OTA" cleanup --lease-db "$db" --list | grep -q "^$id" || fail "orphan not listed"
"$OTA" cose keygen --alg ES256 --out "$tmp/runner.pem" --pub "$tmp/runner.pub" >/dev/null
# an unusable key (readable by others) is refused before anything is acted
# upon: the orphan is not finalized without its signed record
cp "$tmp/runner.pem" "$tmp/open.pem" && chmod 644 "$tmp/open.pem"
set +e
"$OTA" cleanup "${cl[@]}" --key "$tmp/open.pem" --nonce-db "$tmp/nonces.db" --json >"$tmp/badkey.json"
brc=$?
set -e
[ "$brc" -eq 2 ] && jq -e '.ok == false and .error.code == "key_permissions_unsafe"' "$tmp/badkey.json" >/dev/null \
  || fail "cleanup with an unusable key: exit $brc $(cat "$tmp/badkey.json")"
/usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
  "$OTA_SOURCE_DIR/docs/schemas/cleanup-report.schema.json" "$tmp/badkey.json" || fail "refused cleanup report schema"
[ "$(runc --root "$root" state "$id" | jq -r .status)" = running ] || fail "an unusable key still killed the orphan"
[ "$(sqlite3 "$db" "SELECT coalesce(terminal, 'open') FROM oci_lease WHERE id = '$id'")" = open ] \
  || fail "an unusable key still finalized the lease"
"$OTA" cleanup "${cl[@]}" --key "$tmp/runner.pem" --nonce-db "$tmp/nonces.db" \
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
   and .finalized[0].cleanup.pidns_proved == true and .finalized[0].cleanup.pidns_killed == true
   and .finalized[0].bundle_removed == true and .untrusted == []
   and .skipped_live == 1' "$tmp/rep.json" >/dev/null || fail "report: $(cat "$tmp/rep.json")"
[ ! -e "$state/bundles/$id" ] || fail "bundle STATE/bundles/$id not removed (--state-dir)"
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
"$OTA" cleanup "${cl[@]}" --json | jq -e '(.finalized | length) == 0' >/dev/null || fail "second cleanup"

# ---- forged lease rows, and a real orphan in the same database ----
printf '#!/bin/sh\necho "$*" >>"%s"\n' "$tmp/evil-ran" >"$tmp/evil.sh"
chmod 755 "$tmp/evil.sh"
keep() { mkdir -p "$1" && echo precious >"$1/keep"; }
kept() { [ "$(cat "$1/keep" 2>/dev/null)" = precious ]; }
fb=ota-$(hex24) fc=ota-$(hex24) fd=ota-$(hex24)
keep "$state/x"; keep "$tmp/victim"
for f in "$fc" "$fd" "$fid"; do keep "$state/bundles/$f"; done
# a live container under another runtime root, which the forged row names
runc --root "$root2" run -d --bundle "$tmp/bundle" "$fid" </dev/null >/dev/null 2>&1
fpid=$(runc --root "$root2" state "$fid" | jq .pid)
plant '../x' runc "$runc_bin" "$root" "$state/bundles/../x"         # an id that is a path
plant "$fb" runc "$runc_bin" "$root" "$tmp/victim"                   # a bundle outside STATE/bundles
plant "$fc" runc "$tmp/evil.sh" "$root" "$state/bundles/$fc"         # a script as the runtime
plant "$fd" runc /bin/sh "$root" "$state/bundles/$fd"                # /bin/sh as the runtime
plant "$fid" runc "$runc_bin" "$root2" "$state/bundles/$fid" "$fpid" # another runtime root
forged="'../x', '$fb', '$fc', '$fd', '$fid'"
# the real orphan
runc --root "$root" run -d --bundle "$tmp/bundle" "$id3" </dev/null >/dev/null 2>&1
pid3=$(runc --root "$root" state "$id3" | jq .pid)
mkdir "$state/bundles/$id3" && echo '{}' >"$state/bundles/$id3/config.json"
plant "$id3" runc "$runc_bin" "$root" "$state/bundles/$id3" "$pid3"
# nothing of the forged rows was run, removed or closed
untouched() {
  [ ! -e "$tmp/evil-ran" ] || fail "$1: the forged runtime binary ran: $(cat "$tmp/evil-ran")"
  kept "$state/x" || fail "$1: STATE/x removed through id ../x"
  kept "$tmp/victim" || fail "$1: a bundle outside STATE/bundles was removed"
  for f in "$fc" "$fd" "$fid"; do kept "$state/bundles/$f" || fail "$1: bundle of forged $f removed"; done
  [ "$(runc --root "$root2" state "$fid" | jq -r .status)" = running ] ||
    fail "$1: the container under another runtime root was killed"
  [ "$(sqlite3 "$db" "SELECT count(*) FROM oci_lease WHERE terminal IS NULL AND id IN ($forged)")" -eq 5 ] ||
    fail "$1: a forged lease was closed"
}
set +e
"$OTA" cleanup "${cl[@]}" --key "$tmp/runner.pem" --nonce-db "$tmp/nonces.db" \
  --evidence "$tmp/forged-ev.json" --json >"$tmp/forged.json"; frc=$?
set -e
[ "$frc" -eq 1 ] || fail "forged rows: exit $frc, want 1"
untouched "ota cleanup"
/usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
  "$OTA_SOURCE_DIR/docs/schemas/cleanup-report.schema.json" "$tmp/forged.json" || fail "forged: cleanup report schema"
jq -e --arg b "$fb" --arg c "$fc" --arg d "$fd" --arg f "$fid" '.ok == false and .error.code == "oci_lease_untrusted"
   and (.untrusted | length) == 5
   and all(.untrusted[]; .error == "oci_lease_untrusted" and .lease_closed == false)
   and ([.untrusted[] | {key: .container_id, value: .where}] | from_entries)
       == {"../x": "id", ($b): "bundle", ($c): "runtime_bin", ($d): "runtime_bin", ($f): "runtime_root"}' \
  "$tmp/forged.json" >/dev/null || fail "forged: report $(cat "$tmp/forged.json")"
# the real orphan was finalized all the same
jq -e --arg id "$id3" '(.finalized | length) == 1 and .finalized[0].container_id == $id
   and .finalized[0].confirmed and .finalized[0].lease_closed and .finalized[0].bundle_removed' \
  "$tmp/forged.json" >/dev/null || fail "real orphan beside forged rows: $(jq -c .finalized "$tmp/forged.json")"
# planted rows do not suppress the evidence of the removal that happened:
# its record is signed and the evidence file written, with ok false
jq -e '.finalized[0].attestation.kind == "cleanup"' "$tmp/forged.json" >/dev/null ||
  fail "real orphan beside forged rows: record not signed"
jq -r '.finalized[0].attestation.cose_sign1' "$tmp/forged.json" | base64 -d >"$tmp/cleanup3.cose"
"$OTA_VERIFY" cose --key "$tmp/runner.pub" "$tmp/cleanup3.cose" >/dev/null ||
  fail "real orphan beside forged rows: record does not verify"
jq -e --arg id "$id3" '.ok == false and .finalized[0].container_id == $id and (.untrusted | length) == 5' \
  "$tmp/forged-ev.json" >/dev/null || fail "forged: evidence file $(cat "$tmp/forged-ev.json" 2>&1)"
if runc --root "$root" state "$id3" >/dev/null 2>&1; then fail "runtime still knows $id3"; fi
[ ! -e "$state/bundles/$id3" ] || fail "bundle of $id3 not removed"
[ "$(sqlite3 "$db" "SELECT terminal FROM oci_lease WHERE id = '$id3'")" = enforcement_unknown_after_interruption ] ||
  fail "lease $id3 not finalized"
# text output: exit 1, the error name on stderr, each forged row named
set +e
"$OTA" cleanup "${cl[@]}" >"$tmp/forged.out" 2>"$tmp/forged.err"; frc=$?
set -e
[ "$frc" -eq 1 ] || fail "forged rows (text): exit $frc"
grep -q '^ota: oci_lease_untrusted: ' "$tmp/forged.err" || fail "forged (text): $(cat "$tmp/forged.err")"
[ "$(grep -c "$(printf '\tuntrusted\toci_lease_untrusted: ')" "$tmp/forged.out")" -eq 5 ] ||
  fail "forged (text): $(cat "$tmp/forged.out")"
untouched "ota cleanup (text)"
# without the options the runs used, even a real lease is not this configuration's
id4=ota-$(hex24)
plant "$id4" runc "$runc_bin" "$root" "$state/bundles/$id4"
set +e
"$OTA" cleanup --lease-db "$db" --state-dir "$state" --json >"$tmp/noroot.json"; frc=$?
set -e
[ "$frc" -eq 1 ] && jq -e --arg id "$id4" '[.untrusted[] | select(.container_id == $id) | .where] == ["runtime_root"]' \
  "$tmp/noroot.json" >/dev/null || fail "default runtime root: exit $frc $(cat "$tmp/noroot.json")"
set +e
"$OTA" cleanup --lease-db "$db" --runtime-root "$root" --json >"$tmp/nostate.json"; frc=$?
set -e
[ "$frc" -eq 1 ] && jq -e --arg id "$id4" '[.untrusted[] | select(.container_id == $id) | .where] == ["bundle"]' \
  "$tmp/nostate.json" >/dev/null || fail "default state dir: exit $frc $(cat "$tmp/nostate.json")"
"$OTA" cleanup "${cl[@]}" --json >/dev/null 2>&1 || true
[ "$(sqlite3 "$db" "SELECT terminal FROM oci_lease WHERE id = '$id4'")" = enforcement_unknown_after_interruption ] ||
  fail "lease $id4 not finalized with the runs' options"
untouched "default options"

# ---- an orphan finalized by the next `ota run` (not `ota cleanup`) gets its signed record too;
# its orphan sweep leaves the forged rows as they are ----
runc --root "$root" run -d --bundle "$tmp/bundle" "$id2" </dev/null >/dev/null 2>&1
pid2=$(runc --root "$root" state "$id2" | jq .pid)
plant "$id2" runc "$runc_bin" "$root" "$state/bundles/$id2" "$pid2"
sqlite3 "$db" "UPDATE oci_lease SET txn = 't2' WHERE id = '$id2'"
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
( cd "$w" && "$OTA" run check --agent --runtime-root "$root" --lease-db "$db" --state-dir "$state" \
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
untouched "ota run's orphan sweep"
[ "$(ls "$w/.ota/cleanup")" = "$id2.json" ] || fail "cleanup records of forged rows: $(ls "$w/.ota/cleanup")"
# the forged rows go (the test's own teardown), the container under root2 by hand
runc --root "$root2" delete --force "$fid" >/dev/null 2>&1
sqlite3 "$db" "DELETE FROM oci_lease WHERE id IN ($forged)"
"$OTA" cleanup "${cl[@]}" --json | jq -e '.ok and .untrusted == []' >/dev/null || fail "final cleanup"
echo "oci_cleanup: ok"
