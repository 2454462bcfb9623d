#!/usr/bin/env bash
# A runner is trusted for its trust-root scope only (lanes, provider
# targets, repositories), end to end (root, runc). The domain has
# ci-runner (every repository and lane) and lint-runner (repositories
# acme/*, lane lint, oci_local).
#   - lint-runner signs a real `ota run lint`: it verifies, also with
#     --repo acme/widgets; --repo other/x is trust_scope_mismatch (exit 1);
#     a malformed --repo is usage (exit 2);
#   - `ota run build --key lint-runner's key` is refused before anything is
#     prepared (trust_scope_mismatch on stderr, no archive, no lease);
#   - the lint archive with its lane edited to build and its receipt signed
#     again with lint-runner's key (what the key's holder could forge) is
#     trust_scope_mismatch: a key granted one lane cannot vouch for another;
#   - ci-runner's archive of build passes with any --repo.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
need_runner scope

runner_principal "$T" lint-runner "$T/keys/lint.pem" --repo 'acme/*' --lane lint \
  --provider-target oci_local

w=$tmp/repo
mkdir -p "$w/reports"
{
  contract_head scope-test bb:1
  echo "tasks:"
  reports_task build "echo built > reports/out.txt"
  reports_task lint "echo linted > reports/lint.txt"
  cat <<YAML
agent:
  safe_tasks: [build, lint]
YAML
} >"$w/ota.yaml"

run() { # run TASK KEY NAME: ota run TASK signed with KEY, archive at $tmp/NAME.json
  ( cd "$w" && "$OTA" run "$1" --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
      --state-dir "$tmp/state" --image-store "$img" --key "$2" --nonce-db "$tmp/nonces.db" \
      --trust "$T" --archive "$tmp/$3.json" >"$tmp/$3.out" 2>"$tmp/$3.err" )
}

# ---- in scope: verifies, and --repo judges the repositories ----
run lint "$T/keys/lint.pem" lint || fail "lint-runner's run of lint: $(cat "$tmp/lint.err")"
verify_gate 0 "$tmp/lint.json" '.ok and .identities.lane == "task:lint"'
verify_gate 0 "$tmp/lint.json" --repo acme/widgets '.ok'
verify_gate 1 "$tmp/lint.json" --repo other/x \
  '(.ok | not) and ([.failures[].code] == ["trust_scope_mismatch"]) and (.failures[0].message | test("repos"))'
verify_gate 1 "$tmp/lint.json" --repo acme/a/b '[.failures[].code] == ["trust_scope_mismatch"]'
verify_gate 2 "$tmp/lint.json" --repo 'a b' '.code == "usage"'
verify_gate 2 "$tmp/lint.json" --repo "$(printf 'x%.0s' $(seq 257))" '.code == "usage"'
rc=0
"$OTA_VERIFY" archive "$tmp/lint.json" --trust "$PIN" --repo '' >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--repo '': exit $rc, want 2 (usage)"

# ---- out of scope at the runner: refused before anything is prepared ----
rc=0
run build "$T/keys/lint.pem" out-of-lane || rc=$?
[ "$rc" -ne 0 ] || fail "lint-runner's key ran build"
grep -q trust_scope_mismatch "$tmp/out-of-lane.err" || fail "no trust_scope_mismatch: $(cat "$tmp/out-of-lane.err")"
grep -q lanes "$tmp/out-of-lane.err" || fail "the refusal does not name the lanes: $(cat "$tmp/out-of-lane.err")"
[ ! -e "$tmp/out-of-lane.json" ] || fail "an archive was written for a refused run"
[ ! -e "$w/reports/out.txt" ] || fail "build ran"
echo "ok: lint-runner's key is refused for build before anything is prepared"

# ---- a forgery by lint-runner's key holder: the lane edited, signed again ----
K=$T/keys/lint.pem
jq -r .receipt.cose_sign1 "$tmp/lint.json" | base64 -d >"$tmp/r.cose"
jq -r '.signed.principals[] | select(.id == "lint-runner") | .keys[0].public_key' "$T/root.json" \
  >"$tmp/lint.pub"
"$OTA_VERIFY" cose --key "$tmp/lint.pub" --json "$tmp/r.cose" | jq -r .payload | base64 -d >"$tmp/r.json"
jq -cjS '.selection.lane = "build"' "$tmp/r.json" >"$tmp/r2.json"
"$OTA" cose sign --key "$K" --payload "$tmp/r2.json" --kid-from-key --out "$tmp/r2.cose" >/dev/null
jq --arg c "$(base64 -w0 "$tmp/r2.cose")" --arg id "sha256:$(sha256sum "$tmp/r2.cose" | cut -d' ' -f1)" \
  '.receipt = {identity: $id, cose_sign1: $c} | .selection.lane = "build"' "$tmp/lint.json" >"$tmp/forged.json"
verify_gate 1 "$tmp/forged.json" --require-lane build \
  '(.ok | not) and ([.failures[].code] | index("trust_scope_mismatch") != null)'
# the same edit signed again without changing the lane still verifies: the
# refusal is the scope, not the re-signing
jq -cjS '.' "$tmp/r.json" >"$tmp/r3.json"
"$OTA" cose sign --key "$K" --payload "$tmp/r3.json" --kid-from-key --out "$tmp/r3.cose" >/dev/null
jq --arg c "$(base64 -w0 "$tmp/r3.cose")" --arg id "sha256:$(sha256sum "$tmp/r3.cose" | cut -d' ' -f1)" \
  '.receipt = {identity: $id, cose_sign1: $c}' "$tmp/lint.json" >"$tmp/resigned.json"
verify_gate 0 "$tmp/resigned.json" '.ok'

# ---- every repository and lane: ci-runner ----
run build "$T/keys/runner.pem" build || fail "ci-runner's run of build: $(cat "$tmp/build.err")"
verify_gate 0 "$tmp/build.json" --repo other/x --require-lane build '.ok'
echo "archive_scope: all checks passed"
