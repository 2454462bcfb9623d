#!/usr/bin/env bash
# ota-verify archive as a merge gate runs it, on vectors/archive/a.json (no
# runtime; a few parts need root): archives that share its challenges are
# a.json's receipt signed again with its FIXTURE runner key (ota cose sign),
# each a new receipt identity.
#   --ledger: many processes at once making (--ledger-init) one new ledger,
#   every archive with the same nonces: exactly one passes, the others are
#   archive_ledger_replay (never a second pass, never database_error, no
#   temporary file left); the same archive at once passes everywhere; a
#   ledger that is not there (a mistyped path, a missing directory, a
#   symlink to nothing), a zero-byte file or an empty database is
#   archive_ledger_missing (exit 2) and never made without --ledger-init; a
#   directory, FIFO or device is not_regular_file (exit 2); a corrupt or
#   foreign file is database_error (exit 3); a full disk under the COMMIT
#   (tmpfs, root) fails the verification and records nothing.
#   --json: one document of the report's shape even for usage errors and
#   unreadable inputs; a refused archive carries no status.
#   Options: --require-status takes the five statuses only, a repeated
#   option is a usage error.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
v=$OTA_SOURCE_DIR/vectors/archive
A=$v/a.json
P=$v/a.json.root.json
tmp=$(mktemp -d /tmp/ota-archive-ledger-XXXXXX)
# the checked-out FIXTURE key is 0644: a private key file is used only at 0600
K=$tmp/runner.FIXTURE.pem
install -m 600 "$v/a.json.runner.FIXTURE.pem" "$K"
mnt=
cleanup() {
  [ -z "$mnt" ] || umount "$mnt" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- archives with a.json's challenges, each its own receipt ----
jq -r .receipt.cose_sign1 "$A" | base64 -d >"$tmp/r.cose"
"$OTA_VERIFY" cose --key "$K" --json "$tmp/r.cose" | jq -r .payload | base64 -d >"$tmp/r.payload"
N=16
for i in $(seq 1 $N); do
  "$OTA" cose sign --key "$K" --payload "$tmp/r.payload" --kid-from-key --out "$tmp/$i.cose" >/dev/null
  jq --arg c "$(base64 -w0 "$tmp/$i.cose")" --arg id "sha256:$(sha256sum "$tmp/$i.cose" | cut -d' ' -f1)" \
    '.receipt = {identity: $id, cose_sign1: $c}' "$A" >"$tmp/$i.json"
done
"$OTA_VERIFY" archive "$tmp/1.json" --trust "$P" >/dev/null || fail "a re-signed archive does not verify"
[ "$(sha256sum <"$tmp/1.json")" != "$(sha256sum <"$tmp/2.json")" ] || fail "the re-signed archives are equal"

# ---- many at once on one new ledger: one passes, the rest are replays ----
rounds=${OTA_LEDGER_ROUNDS:-12}
for r in $(seq 1 "$rounds"); do
  L=$tmp/race-$r.db
  for i in $(seq 1 $N); do
    ( rc=0; "$OTA_VERIFY" archive "$tmp/$i.json" --trust "$P" --ledger "$L" --ledger-init >/dev/null 2>"$tmp/race-$r.$i.err" || rc=$?
      echo "$rc" >"$tmp/race-$r.$i.rc" ) &
  done
  wait
  codes=$(cat "$tmp"/race-"$r".*.rc | sort | uniq -c | tr -s ' \n' ' ')
  [ "$(cat "$tmp"/race-"$r".*.rc | grep -c '^0$')" -eq 1 ] && [ "$(cat "$tmp"/race-"$r".*.rc | grep -c '^1$')" -eq $((N - 1)) ] \
    || fail "round $r: exit codes$codes $(cat "$tmp"/race-"$r".*.err | grep -v archive_ledger_replay | head -3)"
  # the one that passed is the one recorded
  won=$(grep -l '^0$' "$tmp"/race-"$r".*.rc | sed 's/.*\.\([0-9]*\)\.rc$/\1/')
  "$OTA_VERIFY" archive "$tmp/$won.json" --trust "$P" --ledger "$L" >/dev/null || fail "round $r: the winner again"
done
# the losers of the initialisation left nothing beside the ledgers
leftover=$(find "$tmp" -maxdepth 1 -name '*.init-*' | head -3)
[ -z "$leftover" ] || fail "temporary ledgers left: $leftover"
# the same archive in many processes at once: it is the same archive every time
L=$tmp/same.db
for i in $(seq 1 8); do
  ( rc=0; "$OTA_VERIFY" archive "$A" --trust "$P" --ledger "$L" --ledger-init >/dev/null 2>&1 || rc=$?; echo "$rc" >"$tmp/same.$i.rc" ) &
done
wait
[ "$(cat "$tmp"/same.*.rc | sort -u)" = 0 ] || fail "the same archive at once: $(cat "$tmp"/same.*.rc | tr '\n' ' ')"
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(DISTINCT archive) FROM used_challenges").fetchone()[0])' "$L")" = 1 ] \
  || fail "the same archive at once: not one archive recorded"

# ---- ledgers that are not one: database_error, exit 3, one JSON document ----
head -c 8192 /dev/urandom >"$tmp/corrupt.db"
sqlite3 "$tmp/foreign.db" "CREATE TABLE leases(id TEXT PRIMARY KEY);" 2>/dev/null \
  || python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("CREATE TABLE leases(id TEXT PRIMARY KEY)")' "$tmp/foreign.db"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version=2"); c.execute("CREATE TABLE used_challenges(nonce BLOB PRIMARY KEY, challenge TEXT NOT NULL, archive TEXT NOT NULL)"); c.commit()' "$tmp/v2.db"
for db in corrupt.db foreign.db v2.db; do
  rc=0
  "$OTA_VERIFY" archive "$A" --trust "$P" --ledger "$tmp/$db" --json >"$tmp/db.out" 2>/dev/null || rc=$?
  [ "$rc" -eq 3 ] && jq -e '.ok == false and .status == null and .failures[0].code == "database_error"' "$tmp/db.out" >/dev/null \
    || fail "ledger $db: exit $rc $(cat "$tmp/db.out")"
done
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM sqlite_master").fetchone()[0])' "$tmp/foreign.db")" = 2 ] \
  || fail "a table was added to a foreign sqlite file"

# ---- --json: one document, whatever went wrong ----
json_fail() { # CODE EXIT ARGS...
  local code=$1 want=$2 rc=0
  shift 2
  "$OTA_VERIFY" archive "$@" --json >"$tmp/j.out" 2>"$tmp/j.err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$*: exit $rc, want $want: $(cat "$tmp/j.err")"
  jq -e --arg c "$code" '.ok == false and .status == null and .code == $c and .failures[0].code == $c' \
    "$tmp/j.out" >/dev/null || fail "$*: not one JSON document naming $code: $(cat "$tmp/j.out")"
  [ "$(jq -s length "$tmp/j.out")" -eq 1 ] || fail "$*: more than one document"
}
json_fail usage 2 "$A" --trust "$P" --frobnicate
json_fail usage 2 "$A" --trust "$P" --at soon
json_fail usage 2 "$A" --trust "$P" --max-age 0
json_fail usage 2 "$A" --trust "$P" --ledger
json_fail usage 2 "$A" "$A" --trust "$P"
json_fail usage 2 --trust "$P"
json_fail usage 2 "$A"
# a gate's own options are not overridden by a later copy
json_fail usage 2 "$A" --trust "$P" --require-status refused --require-status enforced_through_completion
json_fail usage 2 "$A" --trust "$v/b.json.root.json" --trust "$P"
json_fail usage 2 "$A" --trust "$P" --at 1800000000 --at 1800000001
json_fail usage 2 "$A" --trust "$P" --ledger "$tmp/x.db" --ledger "$tmp/y.db"
json_fail usage 2 "$A" --trust "$P" --ledger-init
json_fail usage 2 "$A" --trust "$P" --ledger "$tmp/x.db" --ledger-init --ledger-init
json_fail usage 2 "$A" --trust "$P" --ledger "" --ledger-init
json_fail usage 2 "$A" --trust "$P" --max-age " 60"
json_fail usage 2 "$A" --trust "$P" --max-age +60
json_fail usage 2 "$A" --trust "$P" --max-age 60s
json_fail usage 2 "$A" --trust "$P" --at 1800000000x
# --require-status: the five statuses, exactly
for s in Enforced_through_completion "enforced_through_completion " enforced ok ""; do
  json_fail usage 2 "$A" --trust "$P" --require-status "$s"
done
[ ! -e "$tmp/x.db" ] || fail "a usage error opened the ledger"
json_fail archive_status_not_required 1 "$A" --trust "$P" --require-status refused
"$OTA_VERIFY" archive "$A" --trust "$P" --require-status enforced_through_completion --json >"$tmp/ok.out" \
  && jq -e '.ok == true and .status == "enforced_through_completion"' "$tmp/ok.out" >/dev/null || fail "required status"
# unreadable inputs are exit 2, an archive over the cap is refused
json_fail io_error 2 "$tmp/none.json" --trust "$P"
json_fail io_error 2 "$A" --trust "$tmp/none.json"
json_fail io_error 2 "$A" --trust "$v"
json_fail not_regular_file 2 "$A" --trust /dev/null
mkfifo "$tmp/fifo"
json_fail not_regular_file 2 "$A" --trust "$tmp/fifo"
json_fail not_regular_file 2 "$tmp/fifo" --trust "$P"
json_fail io_error 2 "$v" --trust "$P"
: >"$tmp/empty.json"
json_fail io_error 2 "$A" --trust "$tmp/empty.json"

# ---- a ledger that is not there is refused, not started (exit 2) ----
L=$tmp/gate.db
json_fail archive_ledger_missing 2 "$A" --trust "$P" --ledger "$L"
[ ! -e "$L" ] || fail "a missing ledger was made without --ledger-init"
"$OTA_VERIFY" archive "$tmp/1.json" --trust "$P" --ledger "$L" --ledger-init >/dev/null || fail "--ledger-init"
# the replay a mistyped ledger path let through (it made a fresh ledger, exit 0)
json_fail archive_ledger_replay 1 "$tmp/2.json" --trust "$P" --ledger "$L"
json_fail archive_ledger_missing 2 "$tmp/2.json" --trust "$P" --ledger "$tmp/gate.bd"
json_fail archive_ledger_missing 2 "$tmp/2.json" --trust "$P" --ledger "$tmp/nodir/gate.db"
# --ledger-init on an existing ledger takes it as it is
json_fail archive_ledger_replay 1 "$tmp/2.json" --trust "$P" --ledger "$L" --ledger-init
# the ledger is looked at before anything is read
json_fail archive_ledger_missing 2 "$tmp/none.json" --trust "$P" --ledger "$tmp/gate.bd"
# a symlink to a ledger is followed (the path is the operator's); one to
# nothing is missing, and --ledger-init makes nothing through it
ln -s "$L" "$tmp/link.db"
json_fail archive_ledger_replay 1 "$tmp/2.json" --trust "$P" --ledger "$tmp/link.db"
ln -s "$tmp/target.db" "$tmp/dangling.db"
json_fail archive_ledger_missing 2 "$A" --trust "$P" --ledger "$tmp/dangling.db" --ledger-init
[ ! -e "$tmp/target.db" ] || fail "a ledger was made through a symlink"
# a zero-byte file is no ledger (a touched or truncated path), with or without --ledger-init
: >"$tmp/zero.db"
json_fail archive_ledger_missing 2 "$A" --trust "$P" --ledger "$tmp/zero.db"
json_fail archive_ledger_missing 2 "$A" --trust "$P" --ledger "$tmp/zero.db" --ledger-init
[ ! -s "$tmp/zero.db" ] || fail "a zero-byte ledger was written"
# nor is a sqlite database with nothing in it
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE x(a)"); c.execute("DROP TABLE x"); c.commit()' "$tmp/blank.db"
[ -s "$tmp/blank.db" ] || fail "blank.db is empty"
json_fail archive_ledger_missing 2 "$A" --trust "$P" --ledger "$tmp/blank.db" --ledger-init
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM sqlite_master").fetchone()[0])' "$tmp/blank.db")" = 0 ] \
  || fail "a table was added to an empty database"
# directories, FIFOs, devices: not_regular_file, never opened
mkdir "$tmp/dir.db"
for db in "$tmp/dir.db" "$tmp/fifo" /dev/null; do
  json_fail not_regular_file 2 "$A" --trust "$P" --ledger "$db"
  json_fail not_regular_file 2 "$A" --trust "$P" --ledger "$db" --ledger-init
done
# --ledger-init where the directory does not exist: io_error, nothing made
json_fail io_error 2 "$A" --trust "$P" --ledger "$tmp/nodir/gate.db" --ledger-init
# names sqlite would take as no file at all are files here
( cd "$tmp" && "$OTA_VERIFY" archive "$tmp/1.json" --trust "$P" --ledger :memory: --ledger-init >/dev/null ) \
  || fail "--ledger :memory: --ledger-init"
[ -s "$tmp/:memory:" ] || fail "--ledger :memory: made no file"
( cd "$tmp" && "$OTA_VERIFY" archive "$tmp/2.json" --trust "$P" --ledger :memory: >/dev/null 2>&1 ) \
  && fail "--ledger :memory: forgot the archive before"
truncate -s 300M "$tmp/big.json"
json_fail archive_too_large 1 "$tmp/big.json" --trust "$P"
rm -f "$tmp/big.json"
# a refused archive carries no status, though its evidence would give one
jq '.challenges[0].txn = "another"' "$A" >"$tmp/bad.json"
json_fail archive_challenge_identity 1 "$tmp/bad.json" --trust "$P"
# without --json: nothing on standard output unless it reconciles
rc=0
out=$("$OTA_VERIFY" archive "$tmp/bad.json" --trust "$P" 2>/dev/null) || rc=$?
[ "$rc" -eq 1 ] && [ -z "$out" ] || fail "refusal printed on stdout: $out"

# ---- a full disk under the COMMIT (root: a small tmpfs) ----
if [ "$(id -u)" -eq 0 ] && command -v sqlite3 >/dev/null && mkdir "$tmp/mnt" && mount -t tmpfs -o size=256k tmpfs "$tmp/mnt" 2>/dev/null; then
  mnt=$tmp/mnt
  L=$mnt/ledger.db
  sqlite3 "$L" "PRAGMA journal_mode=WAL; PRAGMA user_version=1; CREATE TABLE used_challenges(nonce BLOB PRIMARY KEY, challenge TEXT NOT NULL, archive TEXT NOT NULL);" >/dev/null
  dd if=/dev/zero of="$mnt/fill" bs=4096 count=1000 2>/dev/null || true
  # room for the -shm file (32 KiB), none for the WAL
  truncate -s $(( $(stat -c %s "$mnt/fill") - 8 * 4096 )) "$mnt/fill"
  rc=0
  "$OTA_VERIFY" archive "$tmp/1.json" --trust "$P" --ledger "$L" --json >"$tmp/full.out" 2>/dev/null || rc=$?
  [ "$rc" -eq 3 ] && jq -e '.ok == false and .failures[0].code == "database_error"' "$tmp/full.out" >/dev/null \
    || fail "a COMMIT on a full disk: exit $rc $(cat "$tmp/full.out")"
  rm -f "$mnt/fill"
  [ "$(sqlite3 "$L" 'SELECT count(*) FROM used_challenges')" = 0 ] || fail "a failed COMMIT recorded"
  "$OTA_VERIFY" archive "$tmp/2.json" --trust "$P" --ledger "$L" >/dev/null || fail "after the disk had room"
  rc=0
  "$OTA_VERIFY" archive "$tmp/1.json" --trust "$P" --ledger "$L" >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || fail "the replay after a full disk: exit $rc"
else
  echo "SKIP: full-disk ledger (needs root, sqlite3 and a tmpfs mount)"
fi
echo "archive_ledger: ok"
