#!/usr/bin/env bash
# The long versions of CI's bounded tests (not run by CI; hours on 2 cores):
#   1. the single-use race at 10^6 attempts (nonce_race_test,
#      OTA_RACE_SCALE=10; CI runs 100,000),
#   2. the endpoint's kill -9 loop at 2,000 kills under load (attestd_test,
#      OTA_KILL_SCALE=10; CI runs 200),
#   3. both again built with ThreadSanitizer (the tsan preset) at a tenth of
#      that, where a data race fails the run,
#   4. every libFuzzer target for LONG_FUZZ_SECONDS each (default 600; CI
#      runs 10), FUZZ_JOBS at a time (scripts/fuzz-smoke.sh).
# Usage: scripts/long-tests.sh [race|kill|tsan|fuzz]...   (default: all four)
# Installs what it needs (scripts/install-deps.sh); build trees under build/.
# Exit status: non-zero when any part fails. Figures (attempts, kills,
# acknowledgements) are printed by the tests themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(race kill tsan fuzz)
for p in "${parts[@]}"; do
  case "$p" in race | kill | tsan | fuzz) ;; *) echo "long-tests: unknown part $p" >&2; exit 2 ;; esac
done
./scripts/install-deps.sh
jobs=$(nproc)
want() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

if want race || want kill; then
  cmake --preset dev -G Ninja >/dev/null
  cmake --build --preset dev -j "$jobs" --target nonce_race_test attestd_test
fi
if want race; then
  echo "== race: 10^6 single-use attempts =="
  OTA_RACE_SCALE=10 ctest --preset dev -R '^nonce_race_test$' --output-on-failure -V | grep -E '^[0-9]+: # |tests passed|Failed'
fi
if want kill; then
  echo "== kill -9: 2,000 kills under load =="
  OTA_KILL_SCALE=10 ctest --preset dev -R '^attestd_test$' --output-on-failure -V |
    grep -E '^[0-9]+: # |tests passed|Failed'
fi
if want tsan; then
  echo "== tsan: the race and the kill loop at 10^5 attempts and 200 kills =="
  cmake --preset tsan -G Ninja >/dev/null
  cmake --build --preset tsan -j "$jobs" --target nonce_race_test attestd_test
  OTA_RACE_SCALE=1 OTA_KILL_SCALE=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --preset tsan -R '^(nonce_race_test|attestd_test)$' --output-on-failure
fi
if want fuzz; then
  echo "== fuzz: every target for ${LONG_FUZZ_SECONDS:-600} s =="
  ./scripts/fuzz-smoke.sh "${LONG_FUZZ_SECONDS:-600}"
fi
echo "long-tests: ${parts[*]}: passed"
