#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, fuzz preset) and runs each for N seconds
# (default 10) over its seed corpus fuzz/seeds/<target>/. A crash fails the run.
# Targets run FUZZ_JOBS at a time (default: the CPU count, at most 4), so the
# wall time stays near N x targets / jobs as targets are added.
# Long runs: scripts/fuzz-smoke.sh 3600, or scripts/long-tests.sh fuzz (with the
# long race and kill -9 loops).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -gt 4 ] && [ -z "${FUZZ_JOBS:-}" ] && jobs=4
[ "$jobs" -ge 1 ] || jobs=1
cmake --preset fuzz -G Ninja >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
shopt -s nullglob
targets=(build/fuzz/fuzz/fuzz_*)
if [ "${#targets[@]}" -eq 0 ]; then echo "no fuzz targets built" >&2; exit 1; fi

run_one() {
  local t=$1 name corpus seeds=()
  name=$(basename "$t")
  corpus="build/fuzz/corpus/$name"
  mkdir -p "$corpus"
  [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
  "$t" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=0 \
       -artifact_prefix="build/fuzz/$name-" "$corpus" "${seeds[@]}" >"build/fuzz/$name.log" 2>&1
}

declare -A pid_of=()
failed=()
reap() { # waits for one running target; records it when it failed
  local done_pid='' rc=0 name
  wait -n -p done_pid || rc=$?
  for name in "${!pid_of[@]}"; do
    if [ "${pid_of[$name]}" = "$done_pid" ]; then
      [ "$rc" -eq 0 ] || failed+=("$name")
      unset "pid_of[$name]"
    fi
  done
}
for t in "${targets[@]}"; do
  while [ "${#pid_of[@]}" -ge "$jobs" ]; do reap; done
  name=$(basename "$t")
  echo "fuzz $name for ${secs}s"
  run_one "$t" &
  pid_of[$name]=$!
done
while [ "${#pid_of[@]}" -gt 0 ]; do reap; done
if [ "${#failed[@]}" -gt 0 ]; then
  for name in "${failed[@]}"; do
    tail -n 40 "build/fuzz/$name.log"; echo "fuzz target $name failed" >&2
  done
  exit 1
fi
