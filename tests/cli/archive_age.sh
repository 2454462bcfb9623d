#!/usr/bin/env bash
# ota-verify archive --max-age: a merge gate that takes only fresh archives.
# On the committed vector a.json (signed_at 1800000000): inside the window it
# reconciles; too old, or signed in the future (more than 300 s ahead), it is
# refused as archive_stale (exit 1, named in --json); a bad value is a usage
# error (exit 2). Without --max-age the age is not judged, but an archive
# signed after the --at time (more than 300 s) is refused all the same: a
# forward-dated archive must not pass as of an earlier time.
set -euo pipefail
: "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
A=$OTA_SOURCE_DIR/vectors/archive/a.json
R=$OTA_SOURCE_DIR/vectors/archive/a.json.root.json
T=1800000000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check WANT_RC AT MAX_AGE [jq-filter]
  set +e
  "$OTA_VERIFY" archive "$A" --trust "$R" --at "$2" ${3:+--max-age "$3"} --json >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  [ "$rc" -eq "$1" ] || fail "at $2 max-age ${3:-none}: exit $rc, want $1: $(cat "$tmp/out" "$tmp/err")"
  [ -z "${4:-}" ] || jq -e "$4" "$tmp/out" >/dev/null || fail "at $2 max-age ${3:-none}: $(cat "$tmp/out")"
  echo "ok at $2 max-age ${3:-none} -> exit $rc"
}
check 0 $((T + 100)) 3600 '.ok == true and .status == "enforced_through_completion"'
check 0 $((T + 3600)) 3600 '.ok == true'
check 1 $((T + 3601)) 3600 '.ok == false and (.failures | map(.code) == ["archive_stale"])'
check 1 $((T - 301)) 3600 '.failures | map(.code) == ["archive_stale"]'
check 0 $((T - 300)) 3600 '.ok == true'
check 0 $((T + 86400 * 365)) "" '.ok == true'
check 1 $((T - 301)) "" '.failures | map(.code) == ["archive_stale"]'
check 0 $((T - 300)) "" '.ok == true'
for bad in 0 -5 abc 1x; do
  set +e
  "$OTA_VERIFY" archive "$A" --trust "$R" --max-age "$bad" >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "--max-age $bad: exit $rc, want 2"
done
echo "archive_age: ok"
