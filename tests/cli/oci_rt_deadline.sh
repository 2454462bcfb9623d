#!/usr/bin/env bash
# ota run with a runtime that blocks: its `run --detach` hangs (a child
# blocked opening a FIFO nobody writes, as runc's init did on an image's
# /etc/passwd). Each runtime command has a deadline: with
# --runtime-timeout 2 the run fails with oci_runtime_timeout (exit 1), the
# blocked processes are killed, the receipt says not_started (never
# enforced_through_completion) and the lease is finalized. SIGTERM while
# it blocks (default deadlines: 60 s for run) ends it at once with exit
# 130 (oci_interrupted). On the old code both runs hung until the guard
# (timeout 45) killed them. A fake `runc` first on PATH; no root needed.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
tmp=$(mktemp -d /tmp/ota-rt-deadline-XXXXXX)
trap 'while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$tmp/pids" 2>/dev/null || true
  rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$tmp/bin" "$tmp/rootfs" "$tmp/rt" "$tmp/repo"
chmod 700 "$tmp/rt"
mkfifo "$tmp/fifo"
: >"$tmp/pids"
cat >"$tmp/bin/runc" <<SH
#!/bin/sh
echo "\$*" >>'$tmp/rt.log'
case "\$3" in
  run) cat '$tmp/fifo' >/dev/null & echo \$! >>'$tmp/pids'; wait; exit 0;;
  state) echo 'container does not exist' >&2; exit 1;;
  --version) echo 'runc version fake'; exit 0;;
esac
exit 0
SH
chmod 755 "$tmp/bin/runc"
w=$tmp/repo
{
  contract_head deadline-test bb:1
  cat <<YAML
tasks:
  build:
    context: box
    run: "true"
    runtime_boundary:
      filesystem:
        repo_root_mode: read_only
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [build]
YAML
} >"$w/ota.yaml"
common=(build --agent --sandbox-target oci_local --runtime runc --rootfs "$tmp/rootfs"
  --runtime-root "$tmp/rt" --lease-db "$tmp/leases.db" --state-dir "$tmp/state" --no-archive)
# all the blocked children gone (killed with the runtime's process group)
blocked_gone() {
  local p
  while read -r p; do
    for _ in $(seq 50); do
      [ ! -e "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] && break
      sleep 0.1
    done
    [ ! -e "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] \
      || fail "$1: the blocked runtime child $p still runs"
  done <"$tmp/pids"
}

# the deadline
set +e
start=$(date +%s)
( cd "$w" && PATH="$tmp/bin:$PATH" timeout 45 "$OTA" run "${common[@]}" --runtime-timeout 2 \
    --receipt "$tmp/r1.json" >/dev/null 2>"$tmp/err1" )
rc=$?
took=$(( $(date +%s) - start ))
set -e
[ "$rc" -eq 1 ] || fail "deadline: exit $rc (124: hung), $(cat "$tmp/err1")"
[ "$took" -lt 30 ] || fail "deadline: took $took s"
grep -q oci_runtime_timeout "$tmp/err1" || fail "deadline: no error name: $(cat "$tmp/err1")"
jq -e '.sandbox_policy.status == "not_started"' "$tmp/r1.json" >/dev/null \
  || fail "deadline: receipt status $(jq -c .sandbox_policy.status "$tmp/r1.json")"
blocked_gone deadline
[ "$(grep -c ' run ' "$tmp/rt.log")" -eq 1 ] || fail "deadline: run not asked once"
grep -q ' state ' "$tmp/rt.log" || fail "deadline: no cleanup"
"$OTA" cleanup --lease-db "$tmp/leases.db" --list --json >"$tmp/l1.json"
jq -e 'length == 0' "$tmp/l1.json" >/dev/null || fail "deadline: open lease $(cat "$tmp/l1.json")"
"$OTA" cleanup --lease-db "$tmp/leases.db" --list --all --json >"$tmp/all1.json"
jq -e 'length == 1 and .[0].terminal == "not_started" and .[0].detail == "oci_runtime_timeout"' \
  "$tmp/all1.json" >/dev/null || fail "deadline: lease $(cat "$tmp/all1.json")"

# SIGTERM while run --detach blocks (its own deadline is 60 s)
: >"$tmp/pids"
: >"$tmp/rt.log"
start=$(date +%s)
( cd "$w" && PATH="$tmp/bin:$PATH" exec timeout -s KILL 45 "$OTA" run "${common[@]}" \
    --receipt "$tmp/r2.json" >/dev/null 2>"$tmp/err2" ) &
job=$!
for _ in $(seq 100); do [ -s "$tmp/pids" ] && break; sleep 0.1; done
[ -s "$tmp/pids" ] || fail "sigterm: the runtime never blocked"
# to ota itself (timeout forwards TERM to its child as well)
pkill -TERM -P "$job" -x ota 2>/dev/null || kill -TERM "$job"
set +e
wait "$job"
rc=$?
set -e
took=$(( $(date +%s) - start ))
[ "$rc" -eq 130 ] || fail "sigterm: exit $rc (137: hung), $(cat "$tmp/err2")"
[ "$took" -lt 30 ] || fail "sigterm: took $took s"
grep -q oci_interrupted "$tmp/err2" || fail "sigterm: no error name: $(cat "$tmp/err2")"
jq -e '.sandbox_policy.status == "not_started"' "$tmp/r2.json" >/dev/null \
  || fail "sigterm: receipt status $(jq -c .sandbox_policy.status "$tmp/r2.json")"
blocked_gone sigterm
grep -q ' state ' "$tmp/rt.log" || fail "sigterm: no cleanup attempted"
"$OTA" cleanup --lease-db "$tmp/leases.db" --list --json >"$tmp/l2.json"
jq -e 'length == 0' "$tmp/l2.json" >/dev/null || fail "sigterm: open lease $(cat "$tmp/l2.json")"

# out of range
set +e
( cd "$w" && "$OTA" run "${common[@]}" --runtime-timeout 0 ) >/dev/null 2>&1
[ $? -eq 2 ] || fail "--runtime-timeout 0 is not usage"
( cd "$w" && "$OTA" run "${common[@]}" --runtime-timeout 3601 ) >/dev/null 2>&1
[ $? -eq 2 ] || fail "--runtime-timeout 3601 is not usage"
"$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-timeout x >/dev/null 2>&1
[ $? -eq 2 ] || fail "cleanup --runtime-timeout x is not usage"
set -e
# accepted (and ignored) by the dry run, as the other runner options
( cd "$w" && "$OTA" run "${common[@]}" --runtime-timeout 5 --dry-run >/dev/null ) \
  || fail "the dry run refuses --runtime-timeout"
echo ok
