#!/usr/bin/env bash
# The full test suite (README "Run the tests"). Installs what it needs, then:
#   1. builds and runs the suite under AddressSanitizer + UBSan,
#   2. builds the threaded tests (ctest label "threads") with ThreadSanitizer
#      and runs them: a data race fails the run,
#   3. builds the libFuzzer targets with clang and runs each briefly on its seeds,
#   4. builds the dev preset and runs the whole ctest suite (its summary ends the output).
# Warnings are errors when CI=true. Idempotent: build trees are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Test images for oci_local, built offline and cached (idempotent): the
# upstream enforced-oci-sandbox example runs on debian:bookworm-slim.
./scripts/make-test-rootfs.sh debian-image /var/cache/ota/images debian:bookworm-slim
jobs=$(nproc)

echo "== asan-ubsan =="
cmake --preset asan-ubsan -G Ninja >/dev/null
cmake --build --preset asan-ubsan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan-ubsan -j "$jobs" -LE 'slow|install' --output-on-failure >build/asan-ubsan.log 2>&1 || {
  tail -n 80 build/asan-ubsan.log; echo "asan-ubsan suite failed" >&2; exit 1; }
tail -n 3 build/asan-ubsan.log

echo "== tsan (threaded tests) =="
cmake --preset tsan -G Ninja >/dev/null
mapfile -t tsan_tests < <(ctest --preset tsan -N | awk '$1 == "Test" && $2 ~ /^#/ {print $3}')
if [ "${#tsan_tests[@]}" -eq 0 ]; then echo "no threaded tests found" >&2; exit 1; fi
cmake --build --preset tsan -j "$jobs" --target "${tsan_tests[@]}"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --preset tsan -j "$jobs" --output-on-failure >build/tsan.log 2>&1 || {
  tail -n 80 build/tsan.log; echo "tsan suite failed" >&2; exit 1; }
tail -n 3 build/tsan.log

echo "== fuzz smoke =="
./scripts/fuzz-smoke.sh "${FUZZ_SECONDS:-10}"

echo "== dev suite =="
cmake --preset dev -G Ninja >/dev/null
cmake --build --preset dev -j "$jobs"
ctest --preset dev -j "$jobs"
