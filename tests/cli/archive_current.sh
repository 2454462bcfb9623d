#!/usr/bin/env bash
# A revoked runner key against a gate that knows the current chain, end to
# end (root, runc). The domain T (v1 init, v2 ci-runner, v3 its key):
#   legit   a run signed and bound to v3;
# then the key's holder keeps a copy of the published v1..v3 (no root key),
# T revokes the key (v4), and the holder signs a new run bound to the old v3:
#   forged  passes a gate pinned at v1 that does not know v4 (the archive's
#           own chain is valid: what --current is for), and is
#           trust_key_revoked with --current T/versions;
#   legit   still passes with --current (signed before the revocation);
# a fork F of T at v3 (another v4, signed with the same root key):
#   forkarch  a run bound to F's v4: trust_equivocation with --current
#           T/versions (the archive's v4 is not the domain's);
# --current that is no directory, or holds no snapshot of the chain, is usage.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
need_runner current

w=$tmp/repo
mkdir -p "$w/reports"
{
  contract_head current-test bb:1
  echo "tasks:"
  reports_task build "echo built > reports/out.txt"
  cat <<YAML
agent:
  safe_tasks: [build]
YAML
} >"$w/ota.yaml"
run() { # run TRUST NAME: ota run build signed with T's runner key, bound to TRUST
  ( cd "$w" && "$OTA" run build --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
      --state-dir "$tmp/state" --image-store "$img" --key "$T/keys/runner.pem" \
      --nonce-db "$tmp/nonces.db" --trust "$1" --archive "$tmp/$2.json" >/dev/null 2>"$tmp/$2.err" ) ||
    fail "run $2: $(cat "$tmp/$2.err")"
}

run "$T" legit
cp -a "$T" "$tmp/F"
cp -a "$T" "$tmp/old"
rm -f "$tmp/old/keys/root-1.pem" # the key's holder has no root key
"$OTA" trust add-principal --dir "$tmp/F" --id other --role runner --repo '*' --lane '*' \
  --provider-target oci_local --sign "$tmp/F/keys/root-1.pem" >/dev/null
sleep 1.1
kid=$("$OTA" trust show --dir "$T" --json | jq -r '.principals[] | select(.id == "ci-runner") | .keys[0].kid')
"$OTA" trust revoke-key --dir "$T" --kid "$kid" --sign "$T/keys/root-1.pem" >/dev/null
[ -f "$T/versions/4.root.json" ] || fail "no v4 after the revocation"
sleep 1.1
run "$tmp/old" forged
run "$tmp/F" forkarch

verify_gate 0 "$tmp/forged.json" '.ok'
verify_gate 1 "$tmp/forged.json" --current "$T/versions" \
  '(.ok | not) and ([.failures[].code] | index("trust_key_revoked") != null)'
verify_gate 0 "$tmp/legit.json" --current "$T/versions" '.ok'
verify_gate 0 "$tmp/forkarch.json" '.ok'
verify_gate 1 "$tmp/forkarch.json" --current "$T/versions" \
  '(.ok | not) and ([.failures[].code] | index("trust_equivocation") != null)'
# a current chain that is the archive's own (F's) changes nothing
verify_gate 0 "$tmp/forkarch.json" --current "$tmp/F/versions" '.ok'
verify_gate 2 "$tmp/legit.json" --current "$tmp/none" '.code == "io_error"'
mkdir "$tmp/empty"
verify_gate 2 "$tmp/legit.json" --current "$tmp/empty" '.code == "io_error"'
echo "archive_current: all checks passed"
