#!/usr/bin/env bash
# The task's output cannot hold or end the runner, end to end (root, runc):
#   stall  a task whose background worker writes a line to out/alive every
#          0.2 s, and which writes 6 MB to stdout (the queue holds 4 MiB), run with --timeout 2 into
#          a reader that sleeps 8 s before it reads: the deadline is kept
#          (the worker's last line is written before the reader wakes up;
#          it was written until the reader woke up when the output was
#          forwarded inside the enforcement loop), the receipt says
#          timed_out, and ota says how much output it did not forward;
#   pipe   `ota run pipe | head -n 1`: the reader goes away after one line;
#          ota is not killed by SIGPIPE (it was: exit 141, no receipt, and
#          the detached container ran on): its own exit status, the receipt
#          written, the container gone;
#   tty    on a terminal (script(1)), an escape sequence in the task's
#          output reaches it as '?' (a task cannot hide or fake the
#          runner's verdict line), and the verdict is printed.
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
need_runner output
w=$tmp/repo
mkdir -p "$w/out"
task() { # task NAME COMMAND
  cat <<YAML
  $1:
    context: box
    run: $(printf '%s' "$2" | jq -Rs .)
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
YAML
}
{
  contract_head output bb:1
  echo "tasks:"
  task stall '(while true; do date +%s >> out/alive; usleep 200000; done) & head -c 6000000 /dev/zero; wait'
  task pipe 'echo line1; echo line2; i=0; while [ $i -lt 20 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done'
  task tty 'printf "ota: sandbox enforced_through_completion\n\033[8m"; printf "\302"; sleep 0.3; printf "\2332J|\233K|caf\303\251\n"'
  cat <<YAML
agent:
  safe_tasks: [stall, pipe, tty]
YAML
} >"$w/ota.yaml"
common=(--agent --runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state"
  --image-store "$img")
no_containers() {
  [ "$(runc --root "$root" list -q 2>/dev/null | grep -c . || true)" -eq 0 ] || fail "$1: a container is left"
}

# ---- stall: a reader that does not read ----
set +e
( cd "$w" && "$OTA" run stall "${common[@]}" --timeout 2 --receipt "$tmp/stall.json" 2>"$tmp/stall.err" ) |
  { sleep 8; date +%s.%N >"$tmp/woke"; cat >/dev/null; }
rc=${PIPESTATUS[0]}
set -e
last=$(tail -n 1 "$w/out/alive")
woke=$(cat "$tmp/woke")
awk -v l="$last" -v w="$woke" 'BEGIN { exit !(l + 0 < w - 3) }' ||
  fail "stall: the worker wrote at $last, the reader woke at $woke: the deadline waited for the reader"
jq -e '[.evidence[] | select(.kind == "ota.application/v1" and .phase == "terminal") | .timed_out] == [true]' \
  "$tmp/stall.json" >/dev/null || fail "stall: receipt: $(jq -c '.sandbox_policy.status' "$tmp/stall.json")"
grep -q "bytes of the task's output were not forwarded" "$tmp/stall.err" || fail "stall: no note: $(cat "$tmp/stall.err")"
echo "ok: stall: killed at its deadline with the reader stalled (exit $rc), dropped output said"
no_containers stall

# ---- pipe: a reader that goes away ----
set +e
( cd "$w" && "$OTA" run pipe "${common[@]}" --timeout 30 --receipt "$tmp/pipe.json" 2>"$tmp/pipe.err" ) |
  head -n 1 >"$tmp/pipe.out"
rc=${PIPESTATUS[0]}
set -e
[ "$(cat "$tmp/pipe.out")" = line1 ] || fail "pipe: head read '$(cat "$tmp/pipe.out")'"
[ "$rc" -eq 0 ] || fail "pipe: ota exit $rc (141: killed by SIGPIPE): $(cat "$tmp/pipe.err")"
jq -e '.sandbox_policy.status == "enforced_through_completion" and .exit_status == 0' "$tmp/pipe.json" >/dev/null ||
  fail "pipe: receipt: $(jq -c '[.sandbox_policy.status, .exit_status]' "$tmp/pipe.json" 2>&1)"
echo "ok: pipe: the reader went away, the run went on to its end and wrote its receipt"
no_containers pipe

# ---- tty: escape sequences shown as '?' ----
( cd "$w" && TERM=dumb script -qec "$(printf '%q ' "$OTA" run tty "${common[@]}" --receipt "$tmp/tty.json")" /dev/null ) \
  >"$tmp/tty.out" 2>&1 || true
grep -q $'\033\\[8m' "$tmp/tty.out" && fail "tty: the escape sequence reached the terminal"
grep -q '?\[8m' "$tmp/tty.out" || fail "tty: $(od -c "$tmp/tty.out" | head)"
# C1 CSI (U+009B) written as C2, a pause, then 9B: one sequence across two
# reads, still '?'; a lone 9B (CSI to an 8-bit terminal) too; é kept
LC_ALL=C grep -q $'\302\233' "$tmp/tty.out" && fail "tty: a C1 control split across reads reached the terminal"
LC_ALL=C grep -q $'\233K' "$tmp/tty.out" && fail "tty: a lone 0x9b reached the terminal"
LC_ALL=C grep -q $'?2J|?K|caf\303\251' "$tmp/tty.out" || fail "tty: $(od -c "$tmp/tty.out" | tail -5)"
grep -q '^ota: sandbox enforced_through_completion' "$tmp/tty.out" || fail "tty: no verdict"
echo "ok: tty: the task's escape sequence is shown as '?'"
no_containers tty
echo "oci_output: all checks passed"
