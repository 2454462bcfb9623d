#!/bin/sh
# Boundary self-check, run from inside the sandbox: every write outside the
# declared carve-outs must fail, writes inside them must work, and no
# external network destination may be reachable. Writes build/boundary.txt
# (one PASS/FAIL line per probe) and exits 1 if any probe failed.
# Probes never damage content even if a write were allowed: they open for
# append without writing, or create new files only.
set -u
report=build/boundary.txt
: >"$report" || { echo "boundary: cannot write $report" >&2; exit 1; }
failed=0
note() { echo "$1 $2" >>"$report"; [ "$1" = PASS ] || failed=1; }

deny_append() { # existing file: opening it for writing must fail
	if ( : >>"$1" ) 2>/dev/null; then note FAIL "write-allowed $1"; else note PASS "write-denied $1"; fi
}
deny_create() { # new file: creating it must fail
	if ( : >"$1" ) 2>/dev/null; then note FAIL "create-allowed $1"; rm -f "$1" 2>/dev/null
	else note PASS "create-denied $1"; fi
}
allow_create() {
	if ( echo probe >"$1" ) 2>/dev/null && [ "$(cat "$1")" = probe ]; then
		note PASS "create-allowed $1"; rm -f "$1"
	else note FAIL "create-denied $1"; fi
}

deny_append ota.yaml                   # protected
deny_append coverage/baseline.txt      # protected under the writable coverage/
deny_append src/stats.awk              # read-only repo root
deny_append VERSION
deny_create boundary-probe             # new file at the repo root
deny_create src/boundary-probe
if mkdir src/probe-dir 2>/dev/null; then note FAIL "mkdir-allowed src/probe-dir"; else note PASS "mkdir-denied src/probe-dir"; fi
if mv coverage/baseline.txt coverage/moved 2>/dev/null; then note FAIL "rename-allowed coverage/baseline.txt"
else note PASS "rename-denied coverage/baseline.txt"; fi
# a symlink from a carve-out to protected content does not make it writable
ln -sf ../ota.yaml build/alias-probe 2>/dev/null
deny_append build/alias-probe
rm -f build/alias-probe
allow_create build/boundary-probe      # carve-outs
allow_create coverage/boundary-probe

# network: only loopback exists; external destinations are unreachable
ifaces=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev | tr '\n' ' ')
if [ "$ifaces" = "lo " ]; then note PASS "interfaces lo-only"; else note FAIL "interfaces $ifaces"; fi
targets="192.0.2.1 80"
[ -f .ota-probe/target ] && targets="$targets
$(cat .ota-probe/target)"
echo "$targets" | while read -r host port; do
	if nc -w 2 "$host" "$port" </dev/null >/dev/null 2>&1; then echo "FAIL connect-allowed $host:$port"
	else echo "PASS connect-denied $host:$port"; fi
done >>"$report"
grep -q '^FAIL' "$report" && failed=1
cat "$report"
exit "$failed"
