#!/bin/sh
# The test suite: unit cases (tests/cases/NAME.ini -> NAME.env, expected exit
# status in NAME.status when not 0), then the hermeticity checks
# (tests/hermetic.sh): these tests must pass with external networking
# denied, and must prove that it was. Results: test-results/results.tap and
# test-results/summary.txt (the lane's one writable path).
set -u
out=test-results
tap=$out/results.tap
: >"$tap"
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1" >>"$tap"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1" >>"$tap"; }

for ini in tests/cases/*.ini; do
	name=$(basename "$ini" .ini)
	want=0
	[ -f "tests/cases/$name.status" ] && want=$(cat "tests/cases/$name.status")
	got=$(awk -f src/ini2env.awk "$ini" 2>/dev/null)
	status=$?
	if [ "$status" -eq "$want" ] && [ "$got" = "$(cat "tests/cases/$name.env")" ]; then
		ok "case $name"
	else
		not_ok "case $name (status $status, want $want)"
	fi
done
# round trip: the output is valid shell that sets the variables
eval "$(awk -f src/ini2env.awk tests/cases/basic.ini)"
if [ "${SERVER_HOST:-}" = example.internal ] && [ "${SERVER_GREETING:-}" = "it's here" ]; then
	ok "round trip through sh"
else
	not_ok "round trip through sh"
fi

# the fixtures are the suite's ground truth: a test must never rewrite them
if ( : >>tests/cases/basic.env ) 2>/dev/null; then
	not_ok "fixtures read-only (tests/cases/basic.env was writable)"
else
	ok "fixtures read-only"
fi

# hermeticity: each line of tests/hermetic.sh's output is one check
sh tests/hermetic.sh >"$out/hermetic.txt" 2>&1
while read -r verdict what; do
	if [ "$verdict" = PASS ]; then ok "hermetic $what"; else not_ok "hermetic $what"; fi
done <"$out/hermetic.txt"

echo "1..$n" >>"$tap"
echo "tests $((n - failed)) passed, $failed failed" | tee "$out/summary.txt"
cat "$tap"
[ "$failed" -eq 0 ]
