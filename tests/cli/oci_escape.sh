#!/usr/bin/env bash
# Hostile tasks through `ota run` (root) with runc and crun, host-side
# oracles: (1) set-user-ID / set-group-ID files a task tries to leave in a
# carve-out (the task is uid 0 of the host: such a file would be a root
# binary for any local user; the canary's filter denies every way); (2) a
# fork bomb that fills the pid space (a pids cgroup around the runner
# stands in for the host's pid_max, so `runc kill` cannot start): the
# timeout still kills the container through the init's pidfd, the removal
# is confirmed and nothing is left running; (3) the runner's signing key
# (or nonce database) inside the repository, where the task would read it
# (it used to copy it into a carve-out): refused before anything runs.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}" "${OTA_BINARY_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
probe=$OTA_BINARY_DIR/tests/oci-task-probe
[ -x "$probe" ] || { echo "SKIP: $probe not built"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-escape-XXXXXX)
cg=/sys/fs/cgroup/pids/ota-test-escape-$$
runtimes=(runc)
command -v crun >/dev/null && runtimes+=(crun)
cleanup() {
  if [ -d "$cg" ]; then
    # anything still in the test's pids cgroup (a bomb the timeout missed)
    while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$cg/cgroup.procs"
    sleep 0.5
  fi
  for rt in "${runtimes[@]}"; do
    "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime "$rt" --runtime-root "/run/ota/test-escape-$$-$rt" \
      --state-dir "$tmp/state" >/dev/null 2>&1 || true
    "$rt" --root "/run/ota/test-escape-$$-$rt" list -q 2>/dev/null \
      | xargs -r -n1 "$rt" --root "/run/ota/test-escape-$$-$rt" delete -f >/dev/null 2>&1 || true
    rm -rf "/run/ota/test-escape-$$-$rt"
  done
  [ -d "$cg" ] && { find "$cg" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "$cg" 2>/dev/null; }
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OTA_CACHE=$tmp/cache
img=$tmp/img
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:1 >/dev/null
w=$tmp/repo
mkdir -p "$w/out/setid" "$w/.git"
echo "[core]" >"$w/.git/config"
cp "$probe" "$w/out/probe"
cp "$(command -v busybox)" "$w/out/bb"
{
  contract_head oci-escape bb:1
  cat <<'YAML'
tasks:
  setid:
    context: box
    run: "/workspace/out/probe setid /workspace/out/setid; chmod u+s out/bb; chmod g+s out/bb; install -m 4755 out/bb out/bb2; true"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, .git]}
      network: {default: deny}
    safe_for_agent: true
  bomb:
    context: box
    run: "/workspace/out/probe forkbomb"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, .git]}
      network: {default: deny}
    safe_for_agent: true
  steal:
    context: box
    run: "cat /workspace/*.pem > out/stolen; true"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, .git]}
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [setid, bomb, steal]
YAML
} >"$w/ota.yaml"
cd "$w"

# ---- (3) the runner's signing key or nonce database in the repository ----
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$w/runner-FIXTURE.pem" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/runner-FIXTURE.pem" 2>/dev/null
base=(--agent --runtime-root "/run/ota/test-escape-$$-runc" --lease-db "$tmp/leases.db"
  --state-dir "$tmp/state" --image-store "$img")
for args in "--key $w/runner-FIXTURE.pem --nonce-db $tmp/nonces.db" \
            "--key $tmp/runner-FIXTURE.pem --nonce-db $w/out/nonces.db"; do
  set +e
  # shellcheck disable=SC2086
  "$OTA" run steal "${base[@]}" $args >"$tmp/out" 2>&1; rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "runner file in the repository ($args): exit $rc: $(cat "$tmp/out")"
  grep -q "oci_runtime_socket" "$tmp/out" || fail "runner file in the repository: $(cat "$tmp/out")"
  [ ! -e "$w/out/stolen" ] || fail "the task ran and read the key ($args)"
done
rm -f "$w/runner-FIXTURE.pem" "$w/out/nonces.db"*
"$OTA" run steal "${base[@]}" --key "$tmp/runner-FIXTURE.pem" --nonce-db "$tmp/nonces.db" \
  >"$tmp/out" 2>&1 || fail "key outside the repository: $(cat "$tmp/out")"
rm -f "$w/out/stolen"

for rt in "${runtimes[@]}"; do
  root=/run/ota/test-escape-$$-$rt
  common=(--agent --runtime "$rt" --runtime-root "$root" --lease-db "$tmp/leases.db"
    --state-dir "$tmp/state" --image-store "$img")
  no_containers() {
    local n
    n=$("$rt" --root "$root" list -q 2>/dev/null | grep -c . || true)
    [ "$n" -eq 0 ] || fail "$rt: $n container(s) left under $root"
  }

  # ---- (1) set-id files ----
  "$OTA" run setid "${common[@]}" --receipt "$tmp/setid-$rt.json" >"$tmp/out" 2>&1 \
    || fail "$rt: setid run: $(cat "$tmp/out")"
  left=$(find "$w" -perm /6000)
  [ -z "$left" ] || fail "$rt: set-id files left on the host: $left"
  grep -q "fchmodat2 denied EPERM" "$tmp/out" || fail "$rt: probe did not run: $(cat "$tmp/out")"
  grep -q "chmod_plain made" "$tmp/out" || fail "$rt: a plain chmod was denied"
  jq -e '.sandbox_policy.status == "enforced_through_completion"
    and ([.evidence[] | select(.kind == "ota.applied_policy/v1") | .canaries[]
          | select(.target | endswith("_setid")) | .ok] == [true, true, true, true])' \
    "$tmp/setid-$rt.json" >/dev/null || fail "$rt: setid receipt"
  no_containers

  # ---- (2) a fork bomb that fills the pid space ----
  if [ ! -d /sys/fs/cgroup/pids ]; then
    echo "note: no cgroup v1 pids hierarchy; fork bomb section skipped"
    continue
  fi
  mkdir -p "$cg"
  echo 400 >"$cg/pids.max"
  set +e
  ( echo "$BASHPID" >"$cg/cgroup.procs"
    exec timeout -s KILL 120 "$OTA" run bomb "${common[@]}" --timeout 3 --receipt "$tmp/bomb-$rt.json" ) \
    >"$tmp/out" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 137 ] || fail "$rt: fork bomb run exit $rc: $(tail -3 "$tmp/out")
terminal record: $(jq -c '[.evidence[] | select(.phase == "terminal")]' "$tmp/bomb-$rt.json" 2>&1)"
  jq -e '.sandbox_policy.status == "enforced_through_completion"
    and ([.evidence[] | select(.phase == "terminal") | [.timed_out, .cleanup.confirmed]] == [[true, true]])' \
    "$tmp/bomb-$rt.json" >/dev/null \
    || fail "$rt: fork bomb receipt: $(jq -c '[.evidence[] | select(.phase == "terminal")]' "$tmp/bomb-$rt.json")"
  for _ in $(seq 1 50); do
    [ "$(cat "$cg/pids.current")" -eq 0 ] && break
    sleep 0.1
  done
  [ "$(cat "$cg/pids.current")" -eq 0 ] || fail "$rt: $(cat "$cg/pids.current") process(es) left after the run"
  no_containers
  [ "$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq length)" -eq 0 ] \
    || fail "$rt: lease left open"

  # ---- (4) --pids-limit / --memory-limit: the container's own bound ----
  if [ "$rt" = runc ]; then
    # the same bomb under runc's pids.max of 64 (inside the 400 above):
    # rendered, read back and recorded; the timeout still ends it
    set +e
    ( echo "$BASHPID" >"$cg/cgroup.procs"
      exec timeout -s KILL 120 "$OTA" run bomb "${common[@]}" --timeout 3 --pids-limit 64 \
        --receipt "$tmp/lim-$rt.json" ) >"$tmp/out" 2>&1
    rc=$?
    set -e
    [ "$rc" -eq 137 ] || fail "$rt: limited fork bomb run exit $rc: $(tail -3 "$tmp/out")"
    jq -e '.sandbox_policy.status == "enforced_through_completion"
      and ([.evidence[] | select(.kind == "ota.rendered_policy/v1") | .config.linux.resources]
           == [{"pids": {"limit": 64}}])
      and ([.evidence[] | select(.kind == "ota.applied_policy/v1") | .resources
           | [.pids_limit, .memory_limit_bytes]] == [[64, null]])
      and ([.evidence[] | select(.phase == "terminal") | [.timed_out, .cleanup.confirmed]] == [[true, true]])' \
      "$tmp/lim-$rt.json" >/dev/null \
      || fail "$rt: limited fork bomb receipt: $(jq -c '[.sandbox_policy.status, [.evidence[] | select(.phase == "terminal")]]' "$tmp/lim-$rt.json")"
    # the default pids limit (4096 under runc) and a memory limit
    "$OTA" run setid "${common[@]}" --memory-limit 64M --receipt "$tmp/def-$rt.json" \
      >/dev/null 2>&1 || fail "$rt: run with the default limit"
    jq -e '[.evidence[] | select(.kind == "ota.applied_policy/v1") | .resources
      | [.pids_limit, .memory_limit_bytes]] == [[4096, 67108864]]' \
      "$tmp/def-$rt.json" >/dev/null || fail "$rt: the default pids limit is not 4096"
  else
    # crun (--cgroup-manager=disabled) applies no limit: an explicit one
    # is refused before anything is prepared, the default is none
    for lim in "--pids-limit 64" "--memory-limit 64M"; do
      set +e
      # shellcheck disable=SC2086
      "$OTA" run setid "${common[@]}" $lim --json >"$tmp/out" 2>"$tmp/err"
      rc=$?
      set -e
      [ "$rc" -eq 1 ] && grep -q oci_limit_unsupported "$tmp/out" "$tmp/err" \
        || fail "$rt: $lim not refused (exit $rc): $(cat "$tmp/err")"
    done
  fi
  no_containers
  [ "$("$OTA" cleanup --lease-db "$tmp/leases.db" --list --json | jq length)" -eq 0 ] \
    || fail "$rt: lease left open"
done
# out of range is usage (exit 2); the dry run accepts and ignores both
for bad in "--pids-limit 15" "--pids-limit 4194305" "--pids-limit x" "--pids-limit -1" \
           "--memory-limit 1M" "--memory-limit 4097" "--memory-limit 1025G" "--memory-limit 5X" \
           "--memory-limit -4M"; do
  set +e
  # shellcheck disable=SC2086
  "$OTA" run setid "${common[@]}" $bad >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$bad is not usage (exit $rc)"
done
"$OTA" run setid "${common[@]}" --pids-limit 0 --memory-limit 4M --dry-run >/dev/null \
  || fail "the dry run refuses --pids-limit / --memory-limit"
echo "oci_escape: ok"
