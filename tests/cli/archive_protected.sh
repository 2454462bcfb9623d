#!/usr/bin/env bash
# Protected paths that have no mount of their own, end to end (root, runc).
# oci_local mounts a protected path read-only only when it exists; one missing
# under a read-only parent cannot be created and gets no mount
# (docs/oci-local.md). Upstream's enforced-oci-sandbox example protects
# .github/workflows, which its repository does not have: such a run said
# enforced_through_completion, and `ota-verify archive` refused its archive
# (archive_control_mismatch, "protected_paths ... is not read-only as rendered
# and applied"). Here a run protects ota.yaml (present, read-only root),
# .github/workflows (absent) and reports/keep.txt (present, inside the
# writable carve-out reports): its archive must reconcile, and forgeries
# re-signed with the runner key (tests/tools/archive_forge.py protected) must
# not: a protected path under a writable parent without its read-only mount,
# or a mount rendered but not applied (or the reverse), is
# archive_control_mismatch; ota.yaml without its own mount under the
# read-only root still reconciles (it is read-only through the root).
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
python3 -c 'import cryptography' 2>/dev/null || { echo "SKIP: python3-cryptography missing"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
runner_world prot

w=$tmp/repo
mkdir -p "$w/reports/cfg"
echo keep >"$w/reports/keep.txt"
echo '{"keep":true}' >"$w/reports/cfg/keep.json"
{
  contract_head prot-test bb:1
  cat <<YAML
tasks:
  build:
    context: box
    run: "echo built > reports/out.txt; mkdir -p .github/workflows 2>/dev/null; echo x > reports/keep.txt 2>/dev/null; mv reports/cfg reports/cfg2 2>/dev/null; true"
    runtime_boundary:
      filesystem:
        repo_root_mode: read_only
        writable_paths: [reports]
        protected_paths: [ota.yaml, .github/workflows, reports/keep.txt, reports/cfg/keep.json]
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [build]
YAML
} >"$w/ota.yaml"
( cd "$w" && "$OTA" run build --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
    --state-dir "$tmp/state" --image-store "$img" --key "$T/keys/runner.pem" \
    --nonce-db "$tmp/nonces.db" --trust "$T" --archive "$tmp/a.json" \
    --receipt "$tmp/r.json" >/dev/null 2>"$tmp/err" ) || fail "run: $(cat "$tmp/err")"
[ "$(cat "$w/reports/out.txt")" = built ] || fail "task output"
[ "$(cat "$w/reports/keep.txt")" = keep ] || fail "protected reports/keep.txt was written"
[ ! -e "$w/.github" ] || fail "the absent protected path was created"
[ -f "$w/reports/cfg/keep.json" ] && [ ! -e "$w/reports/cfg2" ] || fail "the pin reports/cfg was renamed"
jq -e '.sandbox_policy.status == "enforced_through_completion"' "$tmp/r.json" >/dev/null \
  || fail "receipt status: $(jq -c .sandbox_policy.status "$tmp/r.json")"
# the case under test: the rendered config has no mount for the absent path,
# and read-only mounts for the two present ones
jq -e '[.evidence[] | select(.kind == "ota.rendered_policy/v1") | .config.mounts[].destination]
  | (index("/workspace/.github/workflows") == null) and (index("/workspace/ota.yaml") != null)
    and (index("/workspace/reports/keep.txt") != null) and (index("/workspace/reports/cfg") != null)' \
  "$tmp/a.json" >/dev/null \
  || fail "rendered mounts: $(jq -c '[.evidence[] | select(.kind == "ota.rendered_policy/v1") | .config.mounts[].destination]' "$tmp/a.json")"

set +e
"$OTA_VERIFY" archive "$tmp/a.json" --trust "$PIN" --json >"$tmp/out" 2>"$tmp/verr"
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "ota-verify archive exit $rc: $(jq -c .failures "$tmp/out" 2>/dev/null || cat "$tmp/verr")"
jq -e '.ok == true and .status == "enforced_through_completion"' "$tmp/out" >/dev/null \
  || fail "verify document: $(cat "$tmp/out")"

mkdir "$tmp/forge"
python3 "$OTA_SOURCE_DIR/tests/tools/archive_forge.py" "$OTA_VERIFY" "$tmp/a.json" "$PIN" \
  "$T/keys/runner.pem" "$tmp/forge" protected >"$tmp/forge.out" 2>&1 \
  || { cat "$tmp/forge.out"; fail "forgeries"; }
grep -q '^9 passed, 0 failed$' "$tmp/forge.out" || { cat "$tmp/forge.out"; fail "forge count"; }
cat "$tmp/forge.out"
echo "archive_protected: ok"
