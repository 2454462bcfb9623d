#!/usr/bin/env bash
# CI for the example repositories: scripts/examples.sh against the built
# CLIs, every check must pass (root and runc needed: CI is root; elsewhere
# the test says SKIP). About 10 s.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
out=$(mktemp -d /tmp/ota-examples-evidence-XXXXXX)
trap 'rm -rf "$out"' EXIT
export OTA_CACHE=${OTA_CACHE:-/var/cache/ota}
OTA=$OTA OTA_VERIFY=$OTA_VERIFY bash "$OTA_SOURCE_DIR/scripts/examples.sh" --out "$out"
# the script must have checked something real in both repositories
for ex in build-output offline-tests; do
  n=$(grep -c '^PASS' "$out/$ex/checks.txt")
  [ "$n" -ge 25 ] || { echo "FAIL: only $n checks passed for $ex" >&2; exit 1; }
  ! grep -q '^FAIL' "$out/$ex/checks.txt" || { echo "FAIL: $ex" >&2; exit 1; }
done
echo "examples: ok"
