#!/usr/bin/env bash
# ota run --agent on oci_local, end to end through the CLI: upstream's
# enforced-oci-sandbox example unchanged (debian:bookworm-slim when the image
# store has it, else a busybox image), exit status propagation, a protected
# file under attack (host-side hash oracle), refusals before anything is
# prepared, SIGINT/SIGTERM finalized in process, SIGKILL finalized by
# `ota cleanup`; no container left behind.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-run-XXXXXX)
root=/run/ota/test-cli-$$
kids=()
cleanup() {
  for k in "${kids[@]}"; do kill -9 "$k" 2>/dev/null || true; done
  "$OTA" cleanup --lease-db "$tmp/leases.db" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OTA_CACHE=$tmp/cache
common=(--agent --runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state")
arch=$(case "$(uname -m)" in x86_64) echo amd64;; aarch64) echo arm64;; *) uname -m;; esac)
no_containers() {
  local n
  n=$(runc --root "$root" list -q 2>/dev/null | grep -c . || true)
  [ "$n" -eq 0 ] || fail "$n container(s) left under $root"
}

# ---- upstream's example, unchanged ----
ex=$tmp/example
mkdir -p "$ex/reports" "$ex/.github/workflows"
cp "$OTA_SOURCE_DIR/../shared/vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml" "$ex/" 2>/dev/null ||
  { echo "SKIP: shared/vectors not beside the checkout"; exit 0; }
store=/var/cache/ota/images
if ! "$OTA" image resolve debian:bookworm-slim --store "$store" --platform "linux/$arch" >/dev/null 2>&1; then
  echo "note: debian:bookworm-slim not in $store (scripts/make-test-rootfs.sh debian-image $store); using busybox"
  store=$tmp/images
  bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$store" debian:bookworm-slim
fi
[ "$arch" = amd64 ] || { echo "SKIP: the example declares linux/amd64"; exit 0; }
sum_before=$(sha256sum "$ex/ota.yaml")
( cd "$ex" && "$OTA" run verify "${common[@]}" --image-store "$store" --receipt "$tmp/r1.json" ) \
  || fail "example run exit $?"
[ "$(cat "$ex/reports/result.txt")" = verified ] || fail "example output"
[ "$(sha256sum "$ex/ota.yaml")" = "$sum_before" ] || fail "ota.yaml changed"
jq -e '.sandbox_policy.status == "enforced_through_completion" and .execution_started == true
  and .sandbox_policy.provider_target == "oci_local"
  and ([.evidence[].kind] | index("ota.platform_check/v1") != null and index("ota.applied_policy/v1") != null)
  and ([.evidence[] | select(.phase == "terminal") | .cleanup.confirmed] == [true])' "$tmp/r1.json" >/dev/null \
  || fail "receipt: $(jq -c .sandbox_policy "$tmp/r1.json")"
no_containers

# ---- our own contract on a busybox image ----
img=$tmp/bb-images
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:1
w=$tmp/work
mkdir -p "$w/reports"
cat >"$w/ota.yaml" <<YAML
version: 1
project:
  name: oci-run-test
execution:
  supported: [container]
  default_context: box
  lifecycle: ephemeral
  backends:
    container:
      image: bb:1
      platform: linux/$arch
      engines: [docker]
  contexts:
    box:
      backend: container
      lifecycle: ephemeral
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
agent:
  safe_tasks: [fail, attack, slow, open]
YAML
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

# refusals before anything is prepared: network allow, a foreign platform
set +e
"$OTA" run open "${common[@]}" --image-store "$img" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "network allow: exit $rc"
grep -q "oci_policy_unsupported\|refused" "$tmp/err" || fail "network allow: $(cat "$tmp/err")"
[ ! -d "$tmp/state/bundles" ] || [ -z "$(ls "$tmp/state/bundles")" ] || fail "bundle left"
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
"$OTA" cleanup --lease-db "$tmp/leases.db" --json | jq -e '(.finalized | length) == 1 and .finalized[0].confirmed
  and .finalized[0].state == "enforcement_unknown_after_interruption"' >/dev/null || fail "cleanup after SIGKILL"
no_containers
terms=$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --all --json | jq -r '[.[].terminal] | map(select(. == null)) | length')
[ "$terms" -eq 0 ] || fail "$terms lease(s) not finalized"
echo "oci_run: ok"
