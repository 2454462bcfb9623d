#!/usr/bin/env bash
# ota run --agent on oci_local, end to end through the CLI: upstream's
# enforced-oci-sandbox example unchanged (debian:bookworm-slim when the image
# store has it, else a busybox image; no .github/workflows, as upstream
# ships it), signed, its archive verified by ota-verify, exit status propagation, a protected
# file under attack (host-side hash oracle), refusals before anything is
# prepared, SIGINT/SIGTERM finalized in process, SIGKILL finalized by
# `ota cleanup`; no container left behind.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-run-XXXXXX)
root=/run/ota/test-cli-$$
kids=()
cleanup() {
  for k in "${kids[@]}"; do kill -9 "$k" 2>/dev/null || true; done
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OTA_CACHE=$tmp/cache
common=(--agent --runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state")
arch=$(ota_arch)
no_containers() {
  local n
  n=$(runc --root "$root" list -q 2>/dev/null | grep -c . || true)
  [ "$n" -eq 0 ] || fail "$n container(s) left under $root"
}

# ---- upstream's example, unchanged ----
example=$OTA_SOURCE_DIR/vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml
if [ ! -f "$example" ]; then
  fail "missing upstream example vector $example"
elif [ "$arch" != amd64 ]; then
  echo "note: the upstream example declares linux/amd64; skipped on $arch"
else
  ex=$tmp/example
  # as upstream ships it: no .github/workflows, which the example protects
  # (missing under the read-only root: no mount, and its archive must still
  # reconcile)
  mkdir -p "$ex/reports"
  cp "$example" "$ex/"
  T=$tmp/trust
  runner_trust "$T" example.test
  store=/var/cache/ota/images
  if ! "$OTA" image resolve debian:bookworm-slim --store "$store" --platform "linux/$arch" >/dev/null 2>&1; then
    echo "note: debian:bookworm-slim not in $store (scripts/make-test-rootfs.sh debian-image $store); using busybox"
    store=$tmp/images
    bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$store" debian:bookworm-slim
  fi
  sum_before=$(sha256sum "$ex/ota.yaml")
  ( cd "$ex" && "$OTA" run verify "${common[@]}" --image-store "$store" --receipt "$tmp/r1.json" \
      --key "$T/keys/runner.pem" --nonce-db "$tmp/nonces.db" --trust "$T" --archive "$tmp/ex.json" ) \
    || fail "example run exit $?"
  [ ! -e "$ex/.github" ] || fail "the example's protected .github/workflows was created"
  "$OTA_VERIFY" archive "$tmp/ex.json" --trust "$T/versions/1.root.json" \
    --require-status enforced_through_completion >"$tmp/ex.verify" 2>&1 \
    || fail "the example's archive does not verify: $(cat "$tmp/ex.verify")"
  [ "$(cat "$ex/reports/result.txt")" = verified ] || fail "example output"
  [ "$(sha256sum "$ex/ota.yaml")" = "$sum_before" ] || fail "ota.yaml changed"
  jq -e '.sandbox_policy.status == "enforced_through_completion" and .execution_started == true
    and .sandbox_policy.provider_target == "oci_local"
    and ([.evidence[].kind] | index("ota.platform_check/v1") != null and index("ota.applied_policy/v1") != null)
    and ([.evidence[] | select(.phase == "terminal") | .cleanup.confirmed] == [true])' "$tmp/r1.json" >/dev/null \
    || fail "receipt: $(jq -c .sandbox_policy "$tmp/r1.json")"
  /usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
    "$OTA_SOURCE_DIR/docs/schemas/receipt.schema.json" "$tmp/r1.json" || fail "receipt schema"
  no_containers
fi

# ---- our own contract on a busybox image ----
img=$tmp/bb-images
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:1
w=$tmp/work
mkdir -p "$w/reports"
{
  contract_head oci-run-test bb:1
  cat <<YAML
tasks:
  fail:
    context: box
    run: "echo out-line; echo err-line >&2; exit 7"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  attack:
    context: box
    run: "echo PWNED >> ota.yaml; echo PWNED > x; nc -w 1 192.0.2.1 80 </dev/null; echo ok > reports/ok"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  slow:
    context: box
    run: "sleep 60"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  open:
    context: box
    run: "true"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports]}
      network: {default: allow}
    safe_for_agent: true
  build:
    context: box
    run: "echo built > reports/build.txt"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  check:
    context: box
    run: "test \"\$(cat reports/build.txt)\" = built && echo checked > reports/check.txt"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
workflows:
  default: ci
  ci:
    setup: {task: build}
    run: {task: check}
agent:
  safe_tasks: [fail, attack, slow, open, build, check]
YAML
} >"$w/ota.yaml"
cd "$w"
set +e
"$OTA" run fail "${common[@]}" --image-store "$img" >"$tmp/out" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 7 ] || fail "exit status not propagated: $rc ($(cat "$tmp/err"))"
grep -q out-line "$tmp/out" || fail "stdout not streamed"
grep -q err-line "$tmp/err" || fail "stderr not streamed"

yaml_sum=$(sha256sum ota.yaml)
"$OTA" run attack "${common[@]}" --image-store "$img" --json >"$tmp/attack.json" 2>/dev/null || true
[ "$(sha256sum ota.yaml)" = "$yaml_sum" ] || fail "protected ota.yaml changed"
[ ! -e x ] || fail "read-only repo root was written"
[ "$(cat reports/ok)" = ok ] || fail "carve-out not writable"
jq -e '.sandbox_policy.status == "enforced_through_completion"' "$tmp/attack.json" >/dev/null || fail "attack receipt"

# evidence that cannot be written: a task that exited 0 exits 3
# (archive_not_written), a failing task keeps its own status
set +e
"$OTA" run build "${common[@]}" --image-store "$img" --archive /proc/ota-no-dir/a.json >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 3 ] || fail "archive not written, task ok: exit $rc ($(cat "$tmp/err"))"
grep -q archive_not_written "$tmp/err" || fail "archive not written: $(cat "$tmp/err")"
set +e
"$OTA" run fail "${common[@]}" --image-store "$img" --archive /proc/ota-no-dir/a.json >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 7 ] || fail "archive not written, task failed: exit $rc"
no_containers

# refusals before anything is prepared: network allow, a foreign platform
set +e
"$OTA" run open "${common[@]}" --image-store "$img" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "network allow: exit $rc"
grep -q "oci_policy_unsupported\|refused" "$tmp/err" || fail "network allow: $(cat "$tmp/err")"
[ ! -d "$tmp/state/bundles" ] || [ -z "$(ls "$tmp/state/bundles")" ] || fail "bundle left"
no_containers

# a checkout another run holds (flock(1) holds the lock on the repository
# directory while ota runs): refused before anything is prepared
set +e
flock -x . "$OTA" run build "${common[@]}" --image-store "$img" --json >"$tmp/busy.json" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -ne 0 ] && jq -e '.ok == false and .code == "oci_checkout_busy" and .execution_started == false' \
  "$tmp/busy.json" >/dev/null || fail "busy checkout: exit $rc $(cat "$tmp/busy.json" "$tmp/err")"
no_containers

# ---- a workflow: two segments, a transition, every record signed ----
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/runner-FIXTURE.pem" 2>/dev/null
openssl pkey -in "$tmp/runner-FIXTURE.pem" -pubout -out "$tmp/runner-FIXTURE.pub"
"$OTA" up --workflow ci "${common[@]}" --image-store "$img" --key "$tmp/runner-FIXTURE.pem" \
  --nonce-db "$tmp/nonces.db" --receipt "$tmp/wf.json" >/dev/null 2>&1 || fail "workflow run"
[ "$(cat reports/check.txt)" = checked ] || fail "segments did not run in order"
jq -e '.sandbox_policy.status == "enforced_through_completion"
  and (.sandbox_policy.segments | map(.id)) == ["task:build", "task:check"]
  and (.sandbox_policy.transition_identities | length) == 1
  and ([.attestations[].kind] == ["capability", "initial_application", "terminal_application",
        "transition", "initial_application", "terminal_application"])
  and ([.evidence[] | select(.phase == "transition")][0].previous_removed == true)' "$tmp/wf.json" >/dev/null \
  || fail "workflow receipt: $(jq -c '{s: .sandbox_policy.status, a: [.attestations[].kind]}' "$tmp/wf.json")"
# the chain: terminal names its initial, the transition names the capability
jq -e '(.attestations[2].prior == .attestations[1].identity) and (.attestations[3].prior == .attestations[0].identity)
  and (.attestations[5].prior == .attestations[4].identity)' "$tmp/wf.json" >/dev/null || fail "prior chain"
if [ -n "${OTA_VERIFY:-}" ] && [ -x "$OTA_VERIFY" ]; then
  for i in 0 1 2 3 4 5; do
    jq -r ".attestations[$i].cose_sign1" "$tmp/wf.json" | base64 -d >"$tmp/a$i.cose"
    "$OTA_VERIFY" cose --key "$tmp/runner-FIXTURE.pub" "$tmp/a$i.cose" >/dev/null || fail "attestation $i does not verify"
  done
fi
no_containers

# ---- interruption ----
wait_started() {
  for _ in $(seq 1 200); do
    "$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq -e 'map(select(.phase == "started")) | length == 1' >/dev/null && return 0
    sleep 0.05
  done
  fail "run never started"
}
for sig in INT TERM; do
  "$OTA" run slow "${common[@]}" --image-store "$img" >/dev/null 2>&1 &
  pid=$!; kids+=("$pid")
  wait_started
  kill -s "$sig" "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  [ "$rc" -eq 130 ] || fail "SIG$sig: exit $rc"
  open=$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq length)
  [ "$open" -eq 0 ] || fail "SIG$sig: $open lease(s) open"
  no_containers
done
"$OTA" run slow "${common[@]}" --image-store "$img" >/dev/null 2>&1 &
pid=$!; kids+=("$pid")
wait_started
kill -9 "$pid"
set +e; wait "$pid"; set -e
[ "$(runc --root "$root" list -q | grep -c . || true)" -eq 1 ] || fail "expected the orphan to survive SIGKILL"
"$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" --json | jq -e '(.finalized | length) == 1 and .finalized[0].confirmed
  and .finalized[0].state == "enforcement_unknown_after_interruption"' >/dev/null || fail "cleanup after SIGKILL"
no_containers
# ---- the rootfs: extension: a prepared root filesystem named by the contract ----
# (inside the image store this run uses: a contract names no other directory,
# tests/cli/oci_hostwrite.sh)
rf=$tmp/rf-work
mkdir -p "$rf/reports" "$tmp/rstore"
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox "$tmp/rstore/prepared-rootfs"
cat >"$rf/ota.yaml" <<YAML
version: 1
project:
  name: oci-rootfs-test
execution:
  supported: [container]
  lifecycle: ephemeral
  backends:
    container:
      platform: linux/$arch
      rootfs: $tmp/rstore/prepared-rootfs
tasks:
  hello:
    run: "echo from-prepared-rootfs > reports/out; test -x /bin/busybox"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
YAML
"$OTA" policy show hello -f "$rf/ota.yaml" --json | jq -e --arg r "$tmp/rstore/prepared-rootfs" \
  '[.. | objects | select(.kind? == "ota.sandbox_policy_segment/v1") | .execution.rootfs] | index($r) != null' >/dev/null \
  || fail "container.rootfs not in the canonical segment"
( cd "$rf" && "$OTA" run hello "${common[@]}" --image-store "$tmp/rstore" --receipt "$tmp/rf.json" ) \
  || fail "rootfs run exit $?"
[ "$(cat "$rf/reports/out")" = from-prepared-rootfs ] || fail "rootfs run output"
jq -e --arg r "$(realpath "$tmp/rstore/prepared-rootfs")" '.sandbox_policy.status == "enforced_through_completion"
  and ([.evidence[] | select(.kind == "ota.platform_check/v1") | select(.rootfs_source == "contract") | .rootfs] | index($r) != null)' "$tmp/rf.json" >/dev/null \
  || fail "rootfs receipt: $(jq -c '[.sandbox_policy.status, [.evidence[] | select(.kind == "ota.platform_check/v1")]]' "$tmp/rf.json")"
no_containers
# ---- chaos: SIGKILL of the runner at assorted points, then one cleanup ----
for d in 0 0.005 0.01 0.02 0.03 0.05 0.08 0.12 0.2 0.3; do
  "$OTA" run slow "${common[@]}" --image-store "$img" >/dev/null 2>&1 &
  pid=$!
  sleep "$d"
  kill -9 "$pid" 2>/dev/null || true
  set +e; wait "$pid" 2>/dev/null; set -e
done
sleep 0.3
# runc killed while creating leaves its (empty) cgroup directories: every
# one named for a leased id is gone after the cleanup, in every hierarchy
chaos_ids=$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --all --json | jq -r '.[].id')
cg_of() { for c in $chaos_ids; do find /sys/fs/cgroup -mindepth 1 -maxdepth 8 -type d -name "$c" 2>/dev/null; done; }
cg_before=$(cg_of | wc -l)
"$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" --json >"$tmp/chaos.json" || fail "chaos cleanup: $(cat "$tmp/chaos.json")"
jq -e '.finalized | all(.confirmed)' "$tmp/chaos.json" >/dev/null || fail "chaos: unconfirmed cleanup"
cg_left=$(cg_of)
[ -z "$cg_left" ] || fail "chaos: cgroup directories left ($cg_before before the cleanup): $cg_left"
echo "chaos: $cg_before cgroup directories of killed runs removed"
no_containers
[ -z "$(ls -A "$tmp/state/bundles" 2>/dev/null)" ] || fail "chaos: bundles left: $(ls "$tmp/state/bundles")"
if pgrep -f -- "--root $root" >/dev/null; then fail "chaos: runtime processes left"; fi
terms=$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --all --json | jq -r '[.[].terminal] | map(select(. == null)) | length')
[ "$terms" -eq 0 ] || fail "$terms lease(s) not finalized"
echo "oci_run: ok"
