#!/usr/bin/env bash
# ota trust / ota-verify trust end to end: init, principals, keys, revocation,
# a 2-of-3 threshold reached by separate `ota trust sign` calls, rotation,
# rollback across restarts via --state, key file modes, and that no private
# key material ever reaches stdout or stderr.
set -uo pipefail
OTA=${OTA:?path of ota}
OTA_VERIFY=${OTA_VERIFY:?path of ota-verify}
work=$(mktemp -d /tmp/ota-trust-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
out="$work/out.log"   # every stdout/stderr of every command, checked at the end
: >"$out"
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# run EXPECTED_RC CMD...: runs, logs output, checks the exit code
run() {
  local want=$1; shift
  "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  cat "$work/stdout" "$work/stderr" >>"$out"
  if [ "$rc" -eq "$want" ]; then pass "rc=$rc: ${*:2:3}"; else
    bad "rc=$rc (want $want): $*"; sed 's/^/  | /' "$work/stderr"; fi
}
mode() { stat -c %a "$1"; }
D="$work/acme"

# ---- init ----
run 0 "$OTA" trust init --domain acme.example --dir "$D" --root-keys 3 --threshold 2 --alg ES256
[ -f "$D/root.json" ] && [ -f "$D/versions/1.root.json" ] && pass "root.json written" || bad "no root.json"
for i in 1 2 3; do
  [ "$(mode "$D/keys/root-$i.pem")" = 600 ] && pass "root-$i.pem is 0600" || bad "root-$i.pem mode $(mode "$D/keys/root-$i.pem")"
done
[ "$(mode "$D/keys")" = 700 ] && pass "keys/ is 0700" || bad "keys/ mode $(mode "$D/keys")"
grep -q "kid" "$work/stdout" && pass "init prints kids" || bad "init prints no kids"
run 0 "$OTA_VERIFY" trust --pinned "$D/root.json"
grep -q "trusted acme.example version 1" "$work/stdout" && pass "v1 self-signed 3-of-3" || bad "v1 not trusted"
run 1 "$OTA" trust init --domain acme.example --dir "$D" --root-keys 1
grep -q already_exists "$work/stderr" && pass "init refuses an existing domain" || bad "init overwrote"

# ---- edits are staged; 2-of-3 by separate holders ----
run 0 "$OTA" trust add-principal --dir "$D" --id runner-1 --role runner --repo 'acme/*' --lane ci --provider-target oci_local
run 0 "$OTA" trust add-key --dir "$D" --principal runner-1 --generate "$work/runner1.pem" --valid-until 2099-01-01T00:00:00Z
[ "$(mode "$work/runner1.pem")" = 600 ] && pass "generated principal key is 0600" || bad "runner1.pem mode"
kid=$(sed -n 's/^key \([0-9a-f]\{64\}\) for runner-1.*/\1/p' "$work/stdout")
[ ${#kid} -eq 64 ] && pass "add-key prints the kid" || bad "no kid printed"
[ -f "$D/staged.json" ] && [ ! -f "$D/versions/2.root.json" ] && pass "version 2 staged, not published" || bad "staging"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-1.pem"
grep -q "1 of 2 from version 1" "$work/stdout" && pass "one holder: 1 of 2" || bad "count after first signature"
[ ! -f "$D/versions/2.root.json" ] && pass "1-of-3 does not publish" || bad "published below threshold"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/staged.json"
grep -q trust_threshold_old "$work/stderr" && pass "ota-verify refuses the half-signed version" || bad "half-signed accepted"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-1.pem"
grep -q "1 of 2 from version 1" "$work/stdout" && pass "the same holder twice still counts once" || bad "double count"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-3.pem"
grep -q "published acme.example version 2" "$work/stdout" && pass "second holder publishes version 2" || bad "not published"
[ ! -f "$D/staged.json" ] && [ -f "$D/versions/2.root.json" ] && pass "staged.json promoted" || bad "promotion"
run 0 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/2.root.json"
grep -q "version 2" "$work/stdout" && pass "chain 1..2 trusted" || bad "chain 1..2"
run 2 "$OTA" trust sign --dir "$D" --key "$D/keys/root-2.pem"
grep -q not_found "$work/stderr" && pass "sign with nothing staged refused" || bad "sign without staged"

# a key that is not a root key cannot sign
run 0 "$OTA" trust revoke-key --dir "$D" --kid "$kid" --revoked-at 2030-01-01T00:00:00Z
run 1 "$OTA" trust sign --dir "$D" --key "$work/runner1.pem"
grep -q trust_signer_not_root "$work/stderr" && pass "principal key cannot sign the root" || bad "non-root signer"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-2.pem"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-3.pem"
[ -f "$D/versions/3.root.json" ] && pass "revocation published as version 3" || bad "v3"
run 0 "$OTA" trust show --dir "$D" --json --now 2031-01-01T00:00:00Z
st=$(jq -r '.principals[0].keys[0].status' "$work/stdout")
[ "$st" = revoked ] && pass "show --json: key revoked after revoked_at" || bad "status $st"
run 0 "$OTA" trust show --dir "$D" --now 2029-01-01T00:00:00Z
grep -q " valid revoked_at" "$work/stdout" && pass "show: still valid before revoked_at" || bad "show text"

# ---- rotation: new root keys and threshold, signed by old and new holders ----
run 0 "$OTA" trust rotate --dir "$D" --root-keys 3 --threshold 2 --sign "$D/keys/root-1.pem"
for i in 1 2 3; do
  [ "$(mode "$D/keys/root-v4-$i.pem")" = 600 ] && pass "root-v4-$i.pem is 0600" || bad "root-v4-$i.pem mode"
done
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-v4-1.pem"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-v4-2.pem"
[ ! -f "$D/versions/4.root.json" ] && pass "new threshold alone is not enough" || bad "published without old threshold"
run 0 "$OTA" trust sign --dir "$D" --key "$D/keys/root-2.pem"
[ -f "$D/versions/4.root.json" ] && pass "rotation published with both thresholds" || bad "rotation"
run 0 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D"/versions/{2,3,4}.root.json --json
[ "$(jq -r .trusted.version "$work/stdout")" = 4 ] && pass "chain 1..4 trusted (--json)" || bad "chain 1..4"
# the old holders alone cannot make version 5
run 1 "$OTA" trust add-principal --dir "$D" --id prov --role issuer --repo '*' --lane '*' --provider-target oci_local --sign "$D/keys/root-1.pem"
grep -q trust_signer_not_root "$work/stderr" && [ ! -f "$D/staged.json" ] && pass "edit signed by a retired key refused, nothing staged" || bad "old key accepted"
run 0 "$OTA" trust add-principal --dir "$D" --id prov --role issuer --repo '*' --lane '*' --provider-target oci_local
run 1 "$OTA" trust sign --dir "$D" --key "$D/keys/root-3.pem"
grep -q trust_signer_not_root "$work/stderr" && pass "retired root key cannot sign version 5" || bad "retired key signed"

# ---- file-mode signing (a snapshot passed from holder to holder) ----
cp "$D/staged.json" "$work/v5.json"
run 0 "$OTA" trust sign --key "$D/keys/root-v4-1.pem" --prev "$D/root.json" "$work/v5.json"
run 0 "$OTA" trust sign --key "$D/keys/root-v4-3.pem" "$work/v5.json"
run 0 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D"/versions/{2,3,4}.root.json "$work/v5.json"
grep -q "version 5" "$work/stdout" && pass "file-signed version 5 trusted" || bad "v5"

# ---- rollback across restarts (--state), freeze, usage ----
S="$work/state.json"
# a --state that is not there is refused (a mistyped path forgets every
# version accepted before), not started afresh: exit 2, nothing written
run 2 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D"/versions/{2,3,4}.root.json --state "$S"
grep -q "trust_state_missing: $S" "$work/stderr" && [ ! -e "$S" ] && pass "missing --state refused, not created" \
  || bad "missing --state: $(cat "$work/stderr")"
run 0 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D"/versions/{2,3,4}.root.json --state "$S" --state-init
[ "$(mode "$S")" = 600 ] && pass "state written 0600" || bad "state mode"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/2.root.json" --state "$S"
grep -q trust_rollback "$work/stderr" && pass "rollback to version 2 refused after restart" || bad "rollback"
# --state-init on an existing state takes it as it is (never a fresh one)
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/2.root.json" --state "$S" --state-init
grep -q trust_rollback "$work/stderr" && pass "--state-init keeps an existing state" || bad "--state-init reset the state"
# the rollback a mistyped --state would have let through
run 2 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/2.root.json" --state "$work/stat.json"
grep -q trust_state_missing "$work/stderr" && [ ! -e "$work/stat.json" ] && pass "a mistyped --state is no fresh state" \
  || bad "mistyped --state: $(cat "$work/stderr")"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/3.root.json"
grep -q trust_version_skip "$work/stderr" && pass "version skip refused" || bad "skip"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D"/versions/{2,3,4}.root.json --at 2099-01-01T00:00:00Z
grep -q trust_expired "$work/stderr" && pass "freeze: expired latest refused" || bad "freeze"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$D/versions/1.root.json" --json --at 2099-01-01T00:00:00Z
[ "$(jq -r .code "$work/stdout")" = trust_expired ] && pass "--json error code" || bad "json error"
run 2 "$OTA_VERIFY" trust "$D/root.json"
run 2 "$OTA_VERIFY" trust --pinned "$work/missing.json"
head -c $((8 * 1024 * 1024 + 1)) /dev/zero >"$work/huge.json"
run 1 "$OTA_VERIFY" trust --pinned "$D/versions/1.root.json" "$work/huge.json"
grep -q trust_snapshot_too_large "$work/stderr" && pass "oversized file refused before parsing" || bad "oversize"
# --json: one document for every outcome, usage and unreadable input too
json_fail() { # CODE EXIT ARGS... (ota-verify trust ARGS --json)
  local code=$1 want=$2; shift 2
  run "$want" "$OTA_VERIFY" trust "$@" --json
  if jq -e --arg c "$code" '.ok == false and .code == $c and (.where | type) == "string" and (.message | type) == "string"' \
      "$work/stdout" >/dev/null && [ "$(jq -s length "$work/stdout")" = 1 ]; then
    pass "--json $code: $*"; else bad "--json $code: $*: $(cat "$work/stdout")"; fi
}
V1="$D/versions/1.root.json"
json_fail usage 2 "$D/root.json"
json_fail usage 2 --pinned "$V1" --frobnicate
json_fail usage 2 --pinned
json_fail usage 2 "$D/versions/2.root.json" --pinned
json_fail usage 2 --pinned --at 1800000000 "$V1"
json_fail usage 2 --pinned "$V1" --at -5
json_fail usage 2 --pinned "$V1" --at soon
json_fail usage 2 --pinned "$V1" --state --at 1800000000
# a gate's own options are not overridden by a later copy
json_fail usage 2 --pinned "$V1" "$D/versions/2.root.json" --pinned "$D/versions/2.root.json"
json_fail usage 2 --pinned "$V1" --at 1800000000 --at 2099-01-01T00:00:00Z
json_fail usage 2 --pinned "$V1" --state "$work/s1.json" --state "$work/s2.json"
[ ! -e "$work/s1.json" ] && [ ! -e "$work/s2.json" ] && pass "a usage error wrote no state" || bad "usage error wrote state"
json_fail io_error 2 --pinned "$work/missing.json"
# inputs that are not regular files, or empty: exit 2 as every unusable
# input (not_regular_file was exit 1 here while archive exited 2)
mkfifo "$work/fifo"
json_fail not_regular_file 2 --pinned "$work/fifo"
json_fail not_regular_file 2 --pinned /dev/null
json_fail not_regular_file 2 --pinned "$V1" "$work/fifo"
json_fail io_error 2 --pinned "$D/versions"
: >"$work/empty.json"
json_fail io_error 2 --pinned "$work/empty.json"
json_fail not_regular_file 2 --pinned "$V1" --state "$work/fifo" --state-init
json_fail io_error 2 --pinned "$V1" --state "$D/versions" --state-init
json_fail trust_state_missing 2 --pinned "$V1" --state "$work/none/state.json"
ln -s "$work/nowhere.json" "$work/dangling.json"
json_fail trust_state_missing 2 --pinned "$V1" --state "$work/dangling.json"
json_fail trust_state_missing 2 --pinned "$V1" --state ""
json_fail usage 2 --pinned "$V1" --state-init
json_fail usage 2 --pinned "$V1" --state "$work/s3.json" --state-init --state-init
[ ! -e "$work/s3.json" ] && [ ! -e "$work/nowhere.json" ] && pass "no state made by a refusal" || bad "a refusal made a state"
json_fail usage 2 --pinned "$V1" --at 1800000000x
json_fail usage 2 --pinned "$V1" --at "2026-01-01T00:00:00Z "
json_fail io_error 2 --pinned "$V1" "$work/missing.json"
json_fail trust_snapshot_too_large 1 --pinned "$V1" "$work/huge.json"
# the pinned snapshot over the cap is the gate's input: exit 2 as in archive --trust
json_fail too_large 2 --pinned "$work/huge.json"
json_fail trust_version_skip 1 --pinned "$V1" "$D/versions/3.root.json"
# every chain/snapshot error names the file it came from, in the text line
# and in --json's where (an empty or bad chain file was "line 1, column 0",
# or "chain[1]: ...", naming no file)
where_is() { # EXPECTED-WHERE-PREFIX CODE EXIT ARGS... (ota-verify trust ARGS)
  local pre=$1 code=$2 want=$3; shift 3
  run "$want" "$OTA_VERIFY" trust "$@"
  grep -qF -- "ota-verify trust: $code: $pre" "$work/stderr" && pass "text names $pre" \
    || bad "text does not name $pre: $(cat "$work/stderr")"
  run "$want" "$OTA_VERIFY" trust "$@" --json
  jq -e --arg c "$code" --arg p "$pre" '.code == $c and (.where | startswith($p))' "$work/stdout" >/dev/null \
    && pass "--json where names $pre" || bad "--json where does not name $pre: $(cat "$work/stdout")"
}
printf '{"signed": ' >"$work/bad.json"
echo '{}' >"$work/obj.json"
where_is "$work/empty.json: line 1, column 0" json_syntax 1 --pinned "$V1" "$work/empty.json"
where_is "$work/bad.json: line 1" json_syntax 1 --pinned "$V1" "$D/versions/2.root.json" "$work/bad.json"
where_is "$work/bad.json: line 1" json_syntax 1 --pinned "$work/bad.json"
where_is "$work/obj.json: /signed" trust_snapshot_malformed 1 --pinned "$V1" "$work/obj.json"
where_is "$work/obj.json: /signed" trust_snapshot_malformed 1 --pinned "$work/obj.json"
where_is "$D/versions/3.root.json: " trust_version_skip 1 --pinned "$V1" "$D/versions/3.root.json"
where_is "$D/versions/2.root.json: expires" trust_expired 1 --pinned "$V1" "$D/versions/2.root.json" --at 2099-01-01T00:00:00Z
where_is "$V1: expires" trust_expired 1 --pinned "$V1" --at 2099-01-01T00:00:00Z
where_is "$work/huge.json" trust_snapshot_too_large 1 --pinned "$V1" "$work/huge.json"
run 0 "$OTA_VERIFY" trust --pinned "$V1" "$D/versions/2.root.json" --json
jq -e '.ok == true and .trusted.version == 2' "$work/stdout" >/dev/null && pass "--json success shape" || bad "--json success: $(cat "$work/stdout")"
run 0 "$OTA_VERIFY" trust --help
grep -q "usage: ota-verify trust" "$work/stdout" && pass "--help" || bad "--help"
run 2 "$OTA" trust frobnicate
run 2 "$OTA" trust add-key --dir "$D"

# ---- two holders signing at the same moment: DIR/.lock keeps both signatures ----
P="$work/par"
run 0 "$OTA" trust init --domain par.example --dir "$P" --root-keys 3 --threshold 2
run 0 "$OTA" trust add-principal --dir "$P" --id r --role runner --lane ci
"$OTA" trust sign --dir "$P" --key "$P/keys/root-1.pem" >"$work/p1" 2>&1 &
"$OTA" trust sign --dir "$P" --key "$P/keys/root-3.pem" >"$work/p2" 2>&1 &
wait
cat "$work/p1" "$work/p2" >>"$out"
[ -f "$P/versions/2.root.json" ] && [ ! -f "$P/staged.json" ] && pass "concurrent signers both counted" || bad "a concurrent signature was lost"

# ---- no private key material on stdout/stderr, ever ----
leak=0
grep -q "PRIVATE KEY" "$out" && leak=1
for k in "$D"/keys/*.pem "$P"/keys/*.pem "$work/runner1.pem"; do
  body=$(sed -n 2p "$k")
  if grep -qF -- "$body" "$out"; then leak=1; echo "  key $k leaked"; fi
done
[ "$leak" -eq 0 ] && pass "no private key material in any output" || bad "private key material printed"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
