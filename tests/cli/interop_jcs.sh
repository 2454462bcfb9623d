#!/usr/bin/env bash
# RFC 8785 (JCS) golden vectors against an independent implementation: the
# npm package `canonicalize` over JavaScript's JSON.parse must produce every
# vectors/jcs/<case>/output.json byte for byte (tests/interop/jcs_check.js).
# The same vectors are checked against common/json.c and a Python
# canonicaliser by tests/unit/jcs_test.c.
# Env: OTA_SOURCE_DIR, OTA_BINARY_DIR. Needs node and npm (npm ci once per
# build tree, shared with interop_cose.sh).
set -uo pipefail
SRC=${OTA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${OTA_BINARY_DIR:-$SRC/build}
# shellcheck source=../interop/npm_setup.sh
. "$SRC/tests/interop/npm_setup.sh"
interop_node_setup || exit 1
node "$NODE_DIR/jcs_check.js" "$SRC/vectors/jcs"
