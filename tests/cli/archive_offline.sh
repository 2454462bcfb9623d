#!/usr/bin/env bash
# Archives end to end through the CLIs, and ota-verify offline for real:
#   ota trust init -> runner principal and key -> ota run (archive written under
#   .ota/archives, path printed) -> ota-verify archive --trust root.json;
#   ota-verify links neither libcurl nor libmicrohttpd (ldd and readelf), and
#   verifying inside a network namespace without interfaces (unshare -n) under
#   strace opens no AF_INET/AF_INET6 socket; --json names each failed check;
#   --require-status; --ledger; `ota archive build` from a receipt file.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- linkage (no root needed) ----
ldd "$OTA_VERIFY" >/tmp/ota-verify-ldd.$$ 2>&1 || true
if grep -Eq 'libcurl|libmicrohttpd' /tmp/ota-verify-ldd.$$; then
  rm -f /tmp/ota-verify-ldd.$$; fail "ota-verify links: $(grep -E 'libcurl|libmicrohttpd' /tmp/ota-verify-ldd.$$)"
fi
rm -f /tmp/ota-verify-ldd.$$
needed=$(readelf -d "$OTA_VERIFY" | awk '/NEEDED/ {print $5}')
echo "ota-verify NEEDED: $(echo $needed | tr -d '[]')"
echo "$needed" | grep -Eq 'curl|microhttpd' && fail "ota-verify NEEDED lists curl/microhttpd"
if nm -D "$OTA_VERIFY" 2>/dev/null | grep -Eq ' U (curl_|MHD_)'; then fail "ota-verify imports curl/MHD symbols"; fi
# the ota CLI does link them (sanity: the check above can see a NEEDED entry)
readelf -d "$OTA" | grep -q NEEDED || fail "readelf sees no NEEDED entries"

command -v runc >/dev/null || { echo "SKIP: runc missing (linkage checked)"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (linkage checked)"; exit 0; }
command -v strace >/dev/null || fail "strace is missing (scripts/install-deps.sh)"

tmp=$(mktemp -d /tmp/ota-archive-XXXXXX)
root=/run/ota/test-archive-$$
cleanup() {
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
export OTA_CACHE=$tmp/cache
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$tmp/img" bb:1 >/dev/null

# ---- the demo: trust root, runner principal and key, run, archive, verify ----
t=$tmp/trust
"$OTA" trust init --domain archive.test --dir "$t" --root-keys 1 --threshold 1 >/dev/null
runner_principal "$t" ci-runner "$t/keys/runner.pem" --repo '*' --lane '*' \
  --provider-target oci_local
w=$tmp/w
mkdir -p "$w/reports"
{
  contract_head archive-offline bb:1
  cat <<YAML
tasks:
  verify:
    context: box
    run: "echo verified > reports/result.txt"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [verify]
YAML
} >"$w/ota.yaml"
common=(--agent --runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state"
        --image-store "$tmp/img")
( cd "$w" && "$OTA" run verify "${common[@]}" --key "$t/keys/runner.pem" \
    --nonce-db "$tmp/nonces.db" --trust "$t" \
    --receipt "$tmp/receipt.json" ) 2>"$tmp/err" || fail "run: $(cat "$tmp/err")"
a=$(sed -n 's/^ota: archive //p' "$tmp/err")
[ -n "$a" ] && [ -f "$a" ] || fail "no archive path printed: $(cat "$tmp/err")"
case "$a" in "$w/.ota/archives/"*.json) ;; *) fail "archive not under .ota/archives: $a" ;; esac
jq -e '.kind == "ota.archive/v1" and (.attestations | length) == 3 and (.trust_chain | length) == 3' "$a" >/dev/null \
  || fail "archive shape"
# the archive and its signed receipt validate against docs/schemas/archive.schema.json
python3 - "$a" "$OTA_SOURCE_DIR/docs/schemas/archive.schema.json" <<'PY' || fail "schema"
import base64, json, sys
import jsonschema
doc = json.load(open(sys.argv[1]))
schema = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.validate(doc, schema)
def head(b, i):
    ib = b[i]; mt, ai = ib >> 5, ib & 31; i += 1
    if ai < 24: return mt, ai, i
    n = 1 << (ai - 24)
    return mt, int.from_bytes(b[i:i + n], 'big'), i + n
m = base64.b64decode(doc['receipt']['cose_sign1'])
mt, v, i = head(m, 0); assert mt == 6 and v == 18
mt, v, i = head(m, i); assert mt == 4 and v == 4
mt, n, i = head(m, i); i += n                 # protected
mt, n, i = head(m, i); assert mt == 5 and n == 0  # unprotected {}
mt, n, i = head(m, i); assert mt == 2
receipt = json.loads(m[i:i + n])
jsonschema.validate(receipt, {"$defs": schema["$defs"], "$ref": "#/$defs/receipt"})
print("schema ok:", sys.argv[1])
PY
"$OTA_VERIFY" archive "$a" --trust "$t/root.json" >/dev/null || fail "verify with the latest root pinned"
"$OTA_VERIFY" archive "$a" --trust "$t/versions/1.root.json" --require-status enforced_through_completion \
  >/dev/null || fail "verify with version 1 pinned"

# ---- offline: no network namespace interfaces, no inet socket ----
# (LeakSanitizer cannot run under ptrace: leaks are checked by the other runs)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
unshare -n strace -f -qq -e trace=socket,connect -o "$tmp/strace" \
  "$OTA_VERIFY" archive "$a" --trust "$t/versions/1.root.json" --json >"$tmp/v.json" \
  || fail "verify inside unshare -n: $(cat "$tmp/v.json")"
jq -e '.ok == true and .status == "enforced_through_completion" and .signatures_verified == 4' "$tmp/v.json" >/dev/null \
  || fail "verify JSON: $(cat "$tmp/v.json")"
if grep -Eq 'AF_INET|AF_INET6|AF_NETLINK|AF_PACKET' "$tmp/strace"; then
  fail "ota-verify opened a network socket: $(grep -E 'AF_' "$tmp/strace")"
fi
echo "sockets opened while verifying: $(grep -c 'socket(' "$tmp/strace" || true)"

# ---- failures are named; exit 1 ----
jq '.receipt.identity = "sha256:0000000000000000000000000000000000000000000000000000000000000000"' "$a" >"$tmp/bad.json"
set +e
"$OTA_VERIFY" archive "$tmp/bad.json" --trust "$t/versions/1.root.json" --json >"$tmp/bad.out"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "tampered archive: exit $rc"
jq -e '.ok == false and (.failures | map(.code) | index("archive_receipt_mismatch") != null)' "$tmp/bad.out" >/dev/null \
  || fail "failure not named: $(cat "$tmp/bad.out")"
set +e
"$OTA_VERIFY" archive "$a" --trust "$t/versions/1.root.json" --require-status refused --json >"$tmp/req.out"; rc=$?
set -e
[ "$rc" -eq 1 ] && jq -e '.failures[0].code == "archive_status_not_required"' "$tmp/req.out" >/dev/null \
  || fail "--require-status: exit $rc $(cat "$tmp/req.out")"
set +e
"$OTA_VERIFY" archive "$a" >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "missing --trust: exit $rc"

# ---- ledger: the same archive again is fine; its challenges in another archive are a replay ----
"$OTA_VERIFY" archive "$a" --trust "$t/versions/1.root.json" --ledger "$tmp/ledger.db" --ledger-init >/dev/null || fail "ledger 1"
"$OTA_VERIFY" archive "$a" --trust "$t/versions/1.root.json" --ledger "$tmp/ledger.db" >/dev/null || fail "ledger 2"

# ---- ota archive build: the same shape from a receipt file ----
"$OTA" archive build --receipt "$tmp/receipt.json" --contract "$w/ota.yaml" --task verify --agent \
  --trust "$t" --key "$t/keys/runner.pem" -o "$tmp/rebuilt.json" 2>/dev/null || fail "archive build"
"$OTA_VERIFY" archive "$tmp/rebuilt.json" --trust "$t/versions/1.root.json" >/dev/null || fail "rebuilt archive"
set +e
"$OTA_VERIFY" archive "$tmp/rebuilt.json" --trust "$t/versions/1.root.json" --ledger "$tmp/ledger.db" \
  --json >"$tmp/replay.out"; rc=$?
set -e
[ "$rc" -eq 1 ] && jq -e '.failures | map(.code) | index("archive_ledger_replay") != null' "$tmp/replay.out" >/dev/null \
  || fail "ledger replay across archives: exit $rc $(cat "$tmp/replay.out")"
# --no-archive writes none
before=$(ls "$w/.ota/archives" | wc -l)
( cd "$w" && "$OTA" run verify "${common[@]}" --no-archive ) >/dev/null 2>&1 || fail "run --no-archive"
[ "$(ls "$w/.ota/archives" | wc -l)" -eq "$before" ] || fail "--no-archive wrote an archive"
# --nonce-db, --issuer and --trust-root shape signed records: without --key
# they are usage (exit 2) before anything runs, as for ota cleanup
for opt in "--nonce-db $tmp/n2.db" "--issuer runner:x" "--trust-root sha256:00"; do
  set +e
  # shellcheck disable=SC2086
  ( cd "$w" && "$OTA" run verify "${common[@]}" $opt ) >/dev/null 2>"$tmp/uerr"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && grep -q "only with --key" "$tmp/uerr" || fail "run $opt without --key: exit $rc $(cat "$tmp/uerr")"
done
[ "$(ls "$w/.ota/archives" | wc -l)" -eq "$before" ] || fail "a refused run wrote an archive"
[ ! -e "$tmp/n2.db" ] || fail "a refused run created its nonce database"
echo "archive_offline: ok"
