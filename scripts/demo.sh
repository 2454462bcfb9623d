#!/usr/bin/env bash
# The main job (README "Run the demo"): installs what it needs, builds the
# release preset, then shows the evidence flow on the embedded defaults.
# Idempotent: every run works in a fresh directory under .ota/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release -G Ninja >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
bin=build/release/cli
OTA=$bin/ota
VERIFY=$bin/ota-verify

demo=.ota/demo/$(date -u +%Y%m%dT%H%M%SZ)-$$
mkdir -p "$demo"
echo "demo directory: $demo"

step() { printf '\n== %s ==\n' "$*"; }

step "1. make a runner key (ES256; private key file is 0600 and never printed)"
"$OTA" cose keygen --alg ES256 --out "$demo/runner.key.pem" --pub "$demo/runner.pub.pem"
stat -c '%a %n' "$demo/runner.key.pem"

step "2. sign a demo attestation as COSE_Sign1 (tagged, kid = SHA-256 of the SPKI)"
cat >"$demo/attestation.json" <<JSON
{"kind":"ota.demo_attestation/v1","provider":"oci_local","segment":"verify","enforced":["filesystem.repo_root_mode","network.default"],"iat":$(date +%s)}
JSON
"$OTA" cose sign --key "$demo/runner.key.pem" --payload "$demo/attestation.json" \
  --kid-from-key --out "$demo/attestation.cose"
echo "signed: $demo/attestation.cose ($(stat -c %s "$demo/attestation.cose") bytes)"

step "3. verify it offline with ota-verify"
"$VERIFY" cose --key "$demo/runner.pub.pem" --json "$demo/attestation.cose"

step "4. a tampered copy (one payload byte changed) is refused"
cp "$demo/attestation.cose" "$demo/tampered.cose"
python3 - "$demo/tampered.cose" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = b.find(b'oci_local')
b[i] ^= 0x01  # 'o' -> 'n'
open(p, 'wb').write(bytes(b))
PY
set +e
"$VERIFY" cose --key "$demo/runner.pub.pem" --json "$demo/tampered.cose"
rc=$?
set -e
if [ "$rc" -ne 1 ]; then
  echo "demo: FAILED: tampered copy was not refused (exit $rc)" >&2
  exit 1
fi
echo "tampered copy refused (exit 1), as it must be"
printf '\ndemo finished: evidence in %s\n' "$demo"
