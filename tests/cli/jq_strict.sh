#!/usr/bin/env bash
# The jq every tests/cli/*.sh runs is tests/cli/bin/jq: under -e it must
# fail on input that holds no JSON value (jq 1.6 alone exits 0 there), or a
# `jq -e` check on the output of a command that printed nothing passes.
set -u
fail=0
check() { # name expected-status command...
	local name=$1 want=$2; shift 2
	"$@" >/dev/null 2>&1
	local rc=$?
	if [ "$rc" != "$want" ]; then echo "FAIL $name: status $rc, want $want"; fail=1; else echo "ok $name"; fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty.json"
echo '{"a":1}' >"$tmp/a.json"
check "wrapper first on PATH" 0 test "$(command -v jq)" = "$OTA_SOURCE_DIR/tests/cli/bin/jq"
check "-e on an empty file" 4 jq -e '.a' "$tmp/empty.json"
check "-e on empty stdin" 4 sh -c 'printf "" | jq -e .'
check "-re on an empty file" 4 jq -re '.a' "$tmp/empty.json"
check "--exit-status on an empty file" 4 jq --exit-status . "$tmp/empty.json"
check "-e true" 0 jq -e '.a == 1' "$tmp/a.json"
check "-e false" 1 jq -e '.a == 2' "$tmp/a.json"
check "no -e on an empty file" 0 jq . "$tmp/empty.json"
[ "$(jq -r .a "$tmp/a.json")" = 1 ] || { echo "FAIL output passes through"; fail=1; }
[ "$(jq -re .a "$tmp/a.json")" = 1 ] || { echo "FAIL -e output passes through"; fail=1; }
if [ "$fail" = 0 ]; then echo "jq_strict: ok"; else echo "jq_strict: FAILED"; fi
exit "$fail"
