#!/usr/bin/env bash
# ota doctor: real probes (runtime --version, root, namespaces), a simulated
# missing runtime (--runtime-binary and OTA_OCI_RUNTIME_BINARY pointing at a
# binary that does not exist), an unprivileged run, lanes whose network
# policy oci_local cannot enforce, broad network effects without a boundary,
# capability drift against a recorded descriptor, a missing image, and an
# orphaned lease left by a SIGKILLed runner (found, then gone after
# `ota cleanup`). Exit 0 ready, 1 problems, 2 usage.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
tmp=$(mktemp -d /tmp/ota-doctor-XXXXXX)
root=/run/ota/test-doctor-$$
kid=
cleanup() {
  [ -n "$kid" ] && kill -9 "$kid" 2>/dev/null || true
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
rc_of() { set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e; echo "$rc"; }
export OTA_CACHE=${OTA_CACHE:-/var/cache/ota}
img=$tmp/images
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:doctor >/dev/null 2>&1
d=(--image-store "$img" --lease-db "$tmp/leases.db" --runtime-root "$root" --descriptor "$tmp/desc.json")
arch=$(ota_arch)

# ---- usage ----
[ "$(rc_of "$OTA" doctor --bogus)" -eq 2 ] || fail "unknown option not a usage error"
[ "$(rc_of "$OTA" doctor --runtime podman)" -eq 2 ] || fail "unknown runtime not a usage error"

# ---- the machine alone (no ota.yaml here), descriptor recorded ----
mkdir -p "$tmp/empty" && cd "$tmp/empty"
[ "$(rc_of "$OTA" doctor "${d[@]}" --record-descriptor --json)" -eq 0 ] || fail "machine: $(cat "$tmp/out" "$tmp/err")"
jq -e '.kind == "ota.doctor_report/v1" and .ready and .problems == 0
  and .machine.root and .machine.runtime.available and (.machine.runtime.version | test("^runc version"))
  and .machine.namespaces.ok and .machine.namespaces.netns_loopback_only and .machine.enforcing_target_available
  and .descriptor.recorded_now != null and .descriptor.drift == []
  and ([.findings[].code] | index("no_contract") != null)' "$tmp/out" >/dev/null || fail "machine report: $(cat "$tmp/out")"
jq -e '.kind == "ota.capability_descriptor/v1" and .target == "oci_local"' "$tmp/desc.json" >/dev/null ||
  fail "recorded descriptor"
[ "$(jq -r .ota_version "$tmp/out")" = "$("$OTA" version | awk '{print $2}')" ] || fail "ota_version"
# the pids controller runc needs for the default process-count limit, as
# this machine has it (judged here from the same files, independently)
if grep -qE '^[0-9]+:([^:]*,)?pids(,[^:]*)?:' /proc/self/cgroup ||
   { grep -q '^0::' /proc/self/cgroup && grep -qw pids /sys/fs/cgroup/cgroup.controllers 2>/dev/null; }; then
  want_pids=true
else
  want_pids=false
fi
jq -e --argjson w "$want_pids" '.machine.pids_controller == $w
  and (([.findings[].code] | index("pids_controller_missing") != null) == ($w | not))' "$tmp/out" >/dev/null ||
  fail "pids controller: want $want_pids: $(jq -c '[.machine.pids_controller, [.findings[].code]]' "$tmp/out")"
# under crun (no cgroups here) no limit can be applied: said, not a problem
OTA_OCI_RUNTIME=crun "$OTA" doctor --json >"$tmp/crun.json" 2>/dev/null || true
jq -e '[.findings[] | select(.code == "resource_limits_unavailable") | .severity] == ["info"]' "$tmp/crun.json" >/dev/null ||
  fail "crun limits finding: $(jq -c '[.findings[].code]' "$tmp/crun.json")"

# ---- a contract ----
w=$tmp/repo
mkdir -p "$w/out" && cd "$w"
{
  contract_head doctor-test bb:doctor
  cat <<YAML
agent:
  safe_tasks: [ok, slow]
tasks:
  ok:
    context: box
    run: "echo ok > out/ok"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  slow:
    context: box
    run: "sleep 60"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out]}
      network: {default: deny}
    safe_for_agent: true
YAML
} >ota.yaml
[ "$(rc_of "$OTA" doctor "${d[@]}")" -eq 0 ] || fail "ready contract: $(cat "$tmp/out")"
grep -q '^ready$' "$tmp/out" || fail "human output: $(cat "$tmp/out")"
[ "$(rc_of "$OTA" doctor "${d[@]}" --json)" -eq 0 ] || fail "ready contract json"
jq -e '[.lanes[] | .enforceable_here] == [true, true] and ([.lanes[].canonical_policy_identity | startswith("sha256:")] | all)' \
  "$tmp/out" >/dev/null || fail "lanes: $(jq -c .lanes "$tmp/out")"

# ---- simulated missing runtime: option and environment ----
[ "$(rc_of "$OTA" doctor "${d[@]}" --runtime-binary "$tmp/no/such/runc" --json)" -eq 1 ] || fail "missing runtime: exit"
jq -e '.ready == false and .machine.runtime.available == false and .machine.enforcing_target_available == false
  and ([.findings[] | select(.code == "runtime_missing")] | length) == 1
  and ([.findings[] | select(.code == "no_enforcing_target") | .lane] | sort) == ["task:ok", "task:slow"]
  and ([.lanes[].enforceable_here] == [false, false])
  and ([.findings[] | select(.code == "capability_drift" and .severity == "problem") | .control]
       | index("network.external_connectivity.deny") != null)' "$tmp/out" >/dev/null ||
  fail "missing runtime report: $(jq -c .findings "$tmp/out")"
set +e
OTA_OCI_RUNTIME_BINARY=$tmp/no/such/runc "$OTA" doctor "${d[@]}" >"$tmp/out" 2>&1; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "env missing runtime: exit $rc"
grep -q 'runtime_missing' "$tmp/out" && grep -q '^not ready' "$tmp/out" || fail "env missing runtime: $(cat "$tmp/out")"
# a runtime that exists but does not run is missing too
printf '#!/bin/sh\nexit 1\n' >"$tmp/broken-runc" && chmod +x "$tmp/broken-runc"
[ "$(rc_of "$OTA" doctor "${d[@]}" --runtime-binary "$tmp/broken-runc")" -eq 1 ] || fail "broken runtime"

# ---- unprivileged: not root, namespaces unavailable ----
if command -v setpriv >/dev/null && setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$OTA" 2>/dev/null; then
  set +e
  (cd /tmp && setpriv --reuid 65534 --regid 65534 --clear-groups "$OTA" doctor --json --lease-db "$tmp/none.db" \
     --descriptor "$tmp/none.json" --runtime-root /tmp/ota-doctor-unpriv-$$) >"$tmp/out" 2>"$tmp/err"; rc=$?
  set -e
  rm -rf /tmp/ota-doctor-unpriv-$$
  [ "$rc" -eq 1 ] || fail "unprivileged: exit $rc $(cat "$tmp/err")"
  jq -e '.machine.root == false and ([.findings[].code] | index("not_root") != null)
    and .machine.enforcing_target_available == false' "$tmp/out" >/dev/null || fail "unprivileged: $(cat "$tmp/out")"
else
  echo "note: $OTA not reachable by uid 65534; unprivileged case skipped"
fi

# ---- capability drift: the recorded descriptor claimed more / less ----
jq '.controls["network.target_allowlist"] = "enforced"' "$tmp/desc.json" >"$tmp/desc-more.json"
[ "$(rc_of "$OTA" doctor "${d[@]}" --descriptor "$tmp/desc-more.json" --json)" -eq 1 ] || fail "drift: exit"
jq -e '[.findings[] | select(.code == "capability_drift") | {control, recorded, live, severity}]
  == [{"control": "network.target_allowlist", "recorded": "enforced", "live": "unsupported", "severity": "problem"}]' \
  "$tmp/out" >/dev/null || fail "drift narrowed: $(jq -c .findings "$tmp/out")"
jq '.controls["secret.binding"] = "unsupported" | .controls["process.isolation"] = "advisory"' "$tmp/desc.json" >"$tmp/desc-less.json"
[ "$(rc_of "$OTA" doctor "${d[@]}" --descriptor "$tmp/desc-less.json" --json)" -eq 0 ] || fail "widened drift is a warning"
jq -e '[.findings[] | select(.code == "capability_drift") | .severity] == ["warning"] and .warnings >= 1' \
  "$tmp/out" >/dev/null || fail "drift widened: $(jq -c .findings "$tmp/out")"
echo '{"kind": "ota.capability_descriptor/v1", "target": "oci_local", "controls": {"bogus": "enforced"}}' >"$tmp/desc-bad.json"
[ "$(rc_of "$OTA" doctor "${d[@]}" --descriptor "$tmp/desc-bad.json" --json)" -eq 1 ] || fail "bad descriptor"
jq -e '[.findings[].code] | index("descriptor_unreadable") != null' "$tmp/out" >/dev/null || fail "bad descriptor finding"
[ "$(rc_of "$OTA" doctor "${d[@]}" --descriptor "$tmp/missing.json")" -eq 1 ] || fail "explicit missing descriptor"

# ---- lanes: network not enforced, broad network effects, missing image ----
cat >>ota.yaml <<YAML
  egress:
    context: box
    run: "wget -q -O out/x https://example.org/"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out]}
      network:
        default: deny
        outbound_targets:
          - {kind: domain, value: example.org, destination_shape: single_purpose_host}
    effects: {network: true}
    safe_for_agent: true
  curl:
    run: "curl https://example.org/"
    effects: {network: true}
  plain:
    run: "true"
  other-image:
    context: other
    run: "true"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out]}
      network: {default: deny}
YAML
sed -i 's/^  contexts:/  contexts:\n    other:\n      backend: container\n      lifecycle: ephemeral\n      container: {image: "absent:1", platform: linux\/'"$arch"'}/' ota.yaml
"$OTA" validate >/dev/null || fail "test contract invalid: $("$OTA" validate 2>&1)"
[ "$(rc_of "$OTA" doctor "${d[@]}" --json)" -eq 1 ] || fail "lanes: exit $(cat "$tmp/out" "$tmp/err")"
jq -e '
  ([.findings[] | select(.code == "network_not_enforced") | .lane] == ["task:egress"])
  and ([.findings[] | select(.code == "network_not_enforced") | .controls[]] == ["network.target_allowlist"])
  and ([.findings[] | select(.code == "network_effects_unbounded") | .lane] == ["task:curl"])
  and ([.findings[] | select(.code == "network_unbounded") | .lane] == ["task:plain"])
  and ([.findings[] | select(.code == "image_unavailable") | .image] == ["absent:1"])
  and ([.lanes[] | select(.name == "ok") | .enforceable_here] == [true])
  and ([.lanes[] | select(.name == "curl") | .authoritative] == [false])' "$tmp/out" >/dev/null ||
  fail "lane findings: $(jq -c '[.findings[] | {code, lane}]' "$tmp/out")"
# the report follows its JSON Schema (when python3-jsonschema is installed)
if python3 -c 'import jsonschema' 2>/dev/null; then
  python3 - "$OTA_SOURCE_DIR/docs/schemas/doctor-report.schema.json" "$tmp/out" <<'PY' || fail "doctor JSON schema"
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
PY
fi
# restricted to one lane: ready again
[ "$(rc_of "$OTA" doctor "${d[@]}" --task ok)" -eq 0 ] || fail "--task ok: $(cat "$tmp/out")"
[ "$(rc_of "$OTA" doctor "${d[@]}" --task nosuch --json)" -eq 1 ] || fail "--task nosuch"
jq -e '[.findings[].code] | index("lane_invalid") != null' "$tmp/out" >/dev/null || fail "unknown lane finding"
# an invalid contract is a problem, never "ready"
cp ota.yaml ota.yaml.good && echo "bogus_top_level_key: 1" >>ota.yaml
[ "$(rc_of "$OTA" doctor "${d[@]}" --json)" -eq 1 ] || fail "invalid contract"
jq -e '[.findings[].code] | index("contract_invalid") != null' "$tmp/out" >/dev/null || fail "contract_invalid"
mv ota.yaml.good ota.yaml

# ---- an org policy that bounds the network: the effective boundary counts ----
mkdir -p "$tmp/org/.ota" && cd "$tmp/org"
printf 'version: 1\nproject:\n  name: org\ntasks:\n  curl:\n    run: "curl https://example.org/"\n    effects: {network: true}\n' >ota.yaml
[ "$(rc_of "$OTA" doctor "${d[@]}" --no-org-policy --json)" -eq 1 ] || fail "org: unbounded"
jq -e '[.findings[] | select(.severity == "problem") | .code] == ["network_effects_unbounded"]
  and .lanes[0].authoritative == false' "$tmp/out" >/dev/null || fail "org (none): $(jq -c .findings "$tmp/out")"
printf 'policies:\n  sandbox:\n    network:\n      default: deny\n' >.ota/org-policy.yaml
[ "$(rc_of "$OTA" doctor "${d[@]}" --json)" -eq 1 ] || fail "org: overlay"
# now bounded by the overlay, hence authoritative, and a native lane no target enforces
jq -e '([.findings[] | select(.severity == "problem") | .code] == ["lane_not_enforceable"])
  and .lanes[0].authoritative == true and .lanes[0].enforceable_here == false' "$tmp/out" >/dev/null ||
  fail "org (deny): $(jq -c '.findings, .lanes' "$tmp/out")"
cd "$w"

# ---- orphaned lease: a runner killed with SIGKILL while its task runs ----
"$OTA" run slow --agent --image-store "$img" --lease-db "$tmp/leases.db" --state-dir "$tmp/state" \
  --runtime-root "$root" >/dev/null 2>&1 &
kid=$!
for _ in $(seq 1 200); do
  "$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq -e 'map(select(.phase == "started")) | length == 1' \
    >/dev/null && break
  sleep 0.05
done
# while the runner lives, its lease is open but not orphaned
[ "$(rc_of "$OTA" doctor "${d[@]}" --task ok --json)" -eq 0 ] || fail "live runner's lease reported: $(jq -c .findings "$tmp/out")"
jq -e '.leases.open == 1 and .leases.orphaned == []' "$tmp/out" >/dev/null || fail "live lease: $(jq -c .leases "$tmp/out")"
kill -9 "$kid"; wait "$kid" 2>/dev/null || true; kid=
[ "$(rc_of "$OTA" doctor "${d[@]}" --task ok --json)" -eq 1 ] || fail "orphan: exit"
lease=$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq -r '.[0].id')
jq -e --arg id "$lease" '([.findings[] | select(.code == "orphaned_lease") | .lease] == [$id])
  and (.leases.orphaned | map(.id)) == [$id]' "$tmp/out" >/dev/null || fail "orphan report: $(jq -c .leases "$tmp/out")"
"$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null
[ "$(rc_of "$OTA" doctor "${d[@]}" --task ok --json)" -eq 0 ] || fail "after cleanup: $(jq -c .findings "$tmp/out")"
jq -e '.leases.open == 0 and .leases.orphaned == []' "$tmp/out" >/dev/null || fail "after cleanup leases"
echo "doctor: ok"
