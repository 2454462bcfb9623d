#!/bin/sh
# Hermeticity checks: the suite runs with external networking denied. Prints
# one "PASS|FAIL what" line per check. Destinations: a TEST-NET address,
# a public resolver, and the host's own address when the harness wrote it
# to .ota-probe/target ("ADDR PORT", a listener the harness watches).
ifaces=$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev | tr '\n' ' ')
if [ "$ifaces" = "lo " ]; then echo "PASS interfaces-lo-only"; else echo "FAIL interfaces:$ifaces"; fi
if awk 'NR > 1 && $2 == "00000000" { found = 1 } END { exit !found }' /proc/net/route; then
	echo "FAIL default-route-present"
else
	echo "PASS no-default-route"
fi
targets="192.0.2.1 80
1.1.1.1 53"
[ -f .ota-probe/target ] && targets="$targets
$(cat .ota-probe/target)"
echo "$targets" | while read -r host port; do
	[ -n "$host" ] || continue
	if nc -w 2 "$host" "$port" </dev/null >/dev/null 2>&1; then echo "FAIL connect-allowed:$host:$port"
	else echo "PASS connect-denied:$host:$port"; fi
done
if wget -q -T 2 -O /dev/null http://fixtures.example.org/ 2>/dev/null; then
	echo "FAIL http-fetch-allowed"
else
	echo "PASS http-fetch-denied"
fi
# loopback is the sandbox's own and works (a test server on 127.0.0.1)
port=18080
( echo hello | nc -l -p "$port" >/dev/null 2>&1 & )
sleep 1
if [ "$(nc -w 2 127.0.0.1 "$port" </dev/null 2>/dev/null)" = hello ]; then
	echo "PASS loopback-works"
else
	echo "FAIL loopback-broken"
fi
