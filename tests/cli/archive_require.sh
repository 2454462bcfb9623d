#!/usr/bin/env bash
# A merge gate's requirements on the run itself, end to end (root, runc).
# Two real `ota run build` archives of one repository: one narrowed by an
# org-policy overlay, one run without it (what a developer who leaves the
# org policy out produces: it verifies on its own). `ota-verify archive`
# The report's identities.lane and .restriction_overlays give the values;
#   --require-lane build | task:build passes, lint and workflow:build are
#     archive_lane_not_required;
#   --require-overlay ID (the overlay's identity, as `ota policy show
#     --json` gives it) passes on the narrowed run and is
#     archive_overlay_not_applied on the other;
#   --require-effective ID (`ota policy show build --overlay F --json`,
#     .effective_policy_identity) passes on the narrowed run only
#     (archive_effective_not_required on the other, which
#     --require-effective of its own policy passes);
# every failure named in --json, exit 1; malformed or repeated
# requirements are usage (exit 2, one JSON document). Every --json document
# validates against docs/schemas/verify-archive.schema.json.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
vtmp=$(mktemp -d /tmp/ota-archive-req-v-XXXXXX)
trap 'rm -rf "$vtmp"' EXIT
# without root too: the committed vectors' reports (passes and refusals) and
# the refusals before any check validate against the report's schema
for f in "$OTA_SOURCE_DIR"/vectors/archive/*.json; do
  case $f in *.root.json) continue ;; esac
  "$OTA_VERIFY" archive "$f" --trust "$f.root.json" --json >"$vtmp/$(basename "$f")" 2>/dev/null || true
done
"$OTA_VERIFY" archive "$vtmp/none.json" --trust "$f.root.json" --json >"$vtmp/io.json" 2>/dev/null || true
"$OTA_VERIFY" archive "$f" --trust "$f.root.json" --bogus --json >"$vtmp/usage.json" 2>/dev/null || true
schema_check verify-archive.schema.json "$vtmp"/*.json
[ "$(jq -s 'map(select(.ok)) | length' "$vtmp"/*.json)" -ge 1 ] || fail "no passing vector"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
world_rm=("$vtmp")
runner_world req

w=$tmp/repo
mkdir -p "$w/reports/keep"
{
  contract_head req-test bb:1
  echo "tasks:"
  reports_task build "echo built > reports/out.txt"
  reports_task lint "echo linted > reports/lint.txt"
  reports_task failing "echo failing > reports/failing.txt; exit 3"
  cat <<YAML
agent:
  safe_tasks: [build, lint, failing]
YAML
} >"$w/ota.yaml"
# the org policy: reports/keep stays read-only inside the writable reports
printf 'policies: {sandbox: {filesystem: {protected_paths: [reports/keep]}}}\n' >"$tmp/org.yaml"

run() { # run NAME [--overlay F]: ota run build, archive at $tmp/NAME.json
  local name=$1
  shift
  ( cd "$w" && "$OTA" run build --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
      --state-dir "$tmp/state" --image-store "$img" --key "$T/keys/runner.pem" \
      --nonce-db "$tmp/nonces.db" --trust "$T" --archive "$tmp/$name.json" "$@" \
      >/dev/null 2>"$tmp/$name.err" ) || fail "run $name: $(cat "$tmp/$name.err")"
}

run narrowed --overlay "$tmp/org.yaml"
run plain
show() { ( cd "$w" && "$OTA" policy show build "$@" --json ); }
ov=$(show --overlay "$tmp/org.yaml" | jq -r '.effective_policy.restriction_overlay_identities[0]')
eff_n=$(show --overlay "$tmp/org.yaml" | jq -r '.effective_policy_identity')
eff_p=$(show | jq -r '.effective_policy_identity')
case "$ov" in sha256:*) ;; *) fail "overlay identity: $ov" ;; esac
[ "$eff_n" != "$eff_p" ] || fail "the overlay did not change the effective policy"

N=$tmp/narrowed.json P=$tmp/plain.json
# the report names what the requirements take
verify_gate 0 "$N" ".ok == true and .identities.effective == \"$eff_n\" and .identities.lane == \"task:build\" and .identities.restriction_overlays == [\"$ov\"]"
verify_gate 0 "$P" ".ok == true and .identities.effective == \"$eff_p\" and .identities.restriction_overlays == []"
cp "$tmp/out" "$tmp/ok.json"

# the task's success (--require-success): a failing task's boundary held
# (enforced_through_completion), its exit status 3 is no success
verify_gate 0 "$N" --require-success '.ok == true and .checks.exit_status == 0'
( cd "$w" && "$OTA" run failing --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
    --state-dir "$tmp/state" --image-store "$img" --key "$T/keys/runner.pem" \
    --nonce-db "$tmp/nonces.db" --trust "$T" --archive "$tmp/failing.json" >/dev/null 2>&1 ) &&
  fail "the failing task's run exited 0"
verify_gate 0 "$tmp/failing.json" --require-status enforced_through_completion \
  '.ok == true and .checks.exit_status == 3'
verify_gate 1 "$tmp/failing.json" --require-status enforced_through_completion --require-success \
  '.code == "archive_task_failed" and [.failures[].code] == ["archive_task_failed"]'
verify_gate 2 "$N" --require-success --require-success '.code == "usage"'

# the lane
verify_gate 0 "$N" --require-lane build '.ok == true'
verify_gate 0 "$N" --require-lane task:build '.ok == true'
verify_gate 1 "$N" --require-lane lint '.code == "archive_lane_not_required"'
verify_gate 1 "$N" --require-lane workflow:build '.code == "archive_lane_not_required"'

# the org policy's overlay
verify_gate 0 "$N" --require-overlay "$ov" '.ok == true'
verify_gate 1 "$P" --require-overlay "$ov" \
  '.code == "archive_overlay_not_applied" and (.failures | map(.code) == ["archive_overlay_not_applied"])'
verify_gate 1 "$N" --require-overlay "$ov" --require-overlay "$eff_p" '.code == "archive_overlay_not_applied"'

# the whole effective policy
verify_gate 0 "$N" --require-effective "$eff_n" --require-overlay "$ov" --require-lane build '.ok == true'
verify_gate 1 "$P" --require-effective "$eff_n" '.code == "archive_effective_not_required"'
verify_gate 0 "$P" --require-effective "$eff_p" '.ok == true'
# every unmet requirement is named
verify_gate 1 "$P" --require-effective "$eff_n" --require-overlay "$ov" --require-lane lint \
  '(.failures | map(.code) | sort) == ["archive_effective_not_required", "archive_lane_not_required", "archive_overlay_not_applied"]'

# malformed or repeated: usage, exit 2, one JSON document
verify_gate 2 "$N" --require-lane '' '.code == "usage"'
verify_gate 2 "$N" --require-lane task: '.code == "usage"'
verify_gate 2 "$N" --require-lane build --require-lane lint '.code == "usage"'
verify_gate 2 "$N" --require-overlay org.yaml '.code == "usage"'
verify_gate 2 "$N" --require-overlay "${ov^^}" '.code == "usage"'
verify_gate 2 "$N" --require-effective "$eff_n" --require-effective "$eff_p" '.code == "usage"'
verify_gate 2 "$N" --require-effective sha256:00 '.code == "usage"'
verify_gate 2 "$N" --require-overlay '.code == "usage"'
# the schema is not vacuous: a success that names a failure, or without its
# identities, is invalid
jq '.failures = [{"code": "archive_lane_not_required", "where": "x", "message": "y"}]' "$tmp/ok.json" >"$tmp/bad1.json"
jq 'del(.identities.lane)' "$tmp/ok.json" >"$tmp/bad2.json"
for b in bad1 bad2; do
  ! (schema_check verify-archive.schema.json "$tmp/$b.json") 2>/dev/null || fail "$b.json passes the schema"
done
echo "PASS"
