#!/usr/bin/env bash
# Forgeries by a holder of the runner key that ota-verify must still refuse:
# provider output re-signed (attestations and receipt, every signature and
# digest good) that widens a control beyond the single flips of the tamper
# suite (contradictory ro/rw options, a second mount on /workspace, an
# undeclared writable carve-out, the repository bound writable elsewhere, a
# writable mount only the inspection shows, a host device filesystem, the
# host network namespace joined, a writable root filesystem), a terminal
# record whose own facts deny the enforced status it claims (no inspection,
# protected_unchanged null, interrupted, container running, a protected path
# changed, an unknown state, exit status 2^32 / "137" / null), resource
# limits read back that are not the rendered linux.resources (one not
# rendered, a devices rule beside them, out of range, from no cgroup, no
# resources, a string), records of
# another provider or runtime or timed backwards, a lane cut
# short with no segment that stopped it, one nonce answering two challenge
# records, and a receipt signed after --at; without the key, the receipt
# re-wrapped (an unprotected label, s negated) under another identity. A
# control re-signs without an edit and must reconcile. Cases:
# tests/tools/archive_forge.py.
set -euo pipefail
: "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
V=$OTA_SOURCE_DIR/vectors/archive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$OTA_SOURCE_DIR/tests/tools/archive_forge.py" "$OTA_VERIFY" "$V/a.json" \
  "$V/a.json.root.json" "$V/a.json.runner.FIXTURE.pem" "$tmp"
