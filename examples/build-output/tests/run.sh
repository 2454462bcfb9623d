#!/bin/sh
# The test suite: every tests/cases/NAME.in through build/bin/stats, compared
# with NAME.out (exit status in NAME.status when not 0); then a function
# coverage report in coverage/, checked against coverage/baseline.txt.
# Writes only below coverage/ (the lane's one writable path).
set -u
bin=build/bin/stats
[ -x "$bin" ] || { echo "tests: $bin missing: run the build lane first" >&2; exit 2; }
cov=coverage
trace=$cov/trace.txt
: >"$trace"
: >"$cov/results.txt"
pass=0 failed=0
for in in tests/cases/*.in; do
	name=$(basename "$in" .in)
	want_status=0
	[ -f "tests/cases/$name.status" ] && want_status=$(cat "tests/cases/$name.status")
	got=$(STATS_COV=$trace "$bin" <"$in" 2>/dev/null)
	status=$?
	if [ "$status" -eq "$want_status" ] && [ "$got" = "$(cat "tests/cases/$name.out")" ]; then
		pass=$((pass + 1)); echo "ok $name" >>"$cov/results.txt"
	else
		failed=$((failed + 1)); echo "FAIL $name (status $status, want $want_status)" >>"$cov/results.txt"
		echo "--- got:"; echo "$got"
	fi
done
# function coverage
grep -o '^function [a-z_]*' src/stats.awk | cut -d' ' -f2 | grep -vx cov | sort >"$cov/defined.txt"
sort -u "$trace" >"$cov/hit.txt"
total=$(wc -l <"$cov/defined.txt")
hit=$(grep -cxFf "$cov/hit.txt" "$cov/defined.txt" || true)
: >"$cov/functions.txt"
while read -r f; do
	if grep -qxF "$f" "$cov/hit.txt"; then echo "hit $f"; else echo "MISS $f"; fi
done <"$cov/defined.txt" >"$cov/functions.txt"
pct=$((hit * 100 / total))
min=$(sed -n 's/^min_function_percent=//p' "$cov/baseline.txt")
echo "tests $pass passed, $failed failed; functions $hit/$total ($pct%), baseline $min%" | tee "$cov/summary.txt"
[ "$failed" -eq 0 ] || exit 1
[ "$pct" -ge "$min" ] || { echo "coverage $pct% below the baseline $min%" >&2; exit 1; }
