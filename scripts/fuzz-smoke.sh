#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, fuzz preset) and runs each for N seconds
# (default 10) over its seed corpus fuzz/seeds/<target>/. A crash fails the run.
# Long runs: FUZZ_SECONDS=3600 scripts/fuzz-smoke.sh, or bench/ for soak loops.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cmake --preset fuzz -G Ninja >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
shopt -s nullglob
targets=(build/fuzz/fuzz/fuzz_*)
if [ "${#targets[@]}" -eq 0 ]; then echo "no fuzz targets built" >&2; exit 1; fi
for t in "${targets[@]}"; do
  name=$(basename "$t")
  corpus="build/fuzz/corpus/$name"
  mkdir -p "$corpus"
  seeds=()
  [ -d "fuzz/seeds/$name" ] && seeds+=("fuzz/seeds/$name")
  echo "fuzz $name for ${secs}s"
  "$t" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=0 \
       -artifact_prefix="build/fuzz/$name-" "$corpus" "${seeds[@]}" >"build/fuzz/$name.log" 2>&1 || {
    tail -n 40 "build/fuzz/$name.log"; echo "fuzz target $name failed" >&2; exit 1; }
done
