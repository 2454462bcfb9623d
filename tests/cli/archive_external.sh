#!/usr/bin/env bash
# External-provider archives end to end through the real binaries, no root:
#   `ota trust` makes a root with a runner, an issuer (provider target
#   oci_local) and a verifier principal; `ota-attestd` runs on 127.0.0.1 (an
#   ephemeral port, its own store); the "provider" asks a challenge per record
#   (`ota attest challenge`), signs the attestation with the issuer key
#   (`ota attest sign --claims`, the record's identity as `body`) and submits
#   it (`ota attest submit`), in the lane order the
#   archive verifier walks (capability; per segment initial and terminal
#   application; a transition between the two segments, chained by prior on
#   the endpoint); the harness writes the receipt in the runner's shape;
#   `ota archive build --attestd-db` takes the acceptances from the endpoint's
#   store; `ota-verify archive --trust PINNED` reconciles it.
# Lanes are the issuer's own: another issuer of the same provider target
# (provider:squat) that takes the lane's boundary name first does not stop
# the provider's chain, and cannot follow the provider's head from its own
# lane (attestation_prior_unknown).
# Failures, each by its error name (jq on ota-verify --json):
#   - a record the endpoint refused (attestation_prior_fork), put into the
#     receipt anyway: no acceptance is stored for it, `ota archive build`
#     names it on stderr and leaves it out, `ota-verify` refuses the archive
#     (archive_acceptance_missing at that attestation);
#   - a stored acceptance with a flipped signature byte (a copy of the
#     store): signature_invalid, and its attestation archive_acceptance_missing;
#   - another attestation's acceptance stored in its place: archive_duplicate;
#   - building never writes to the store (meta and bytes unchanged); a
#     sqlite file that is not an attestd store and a missing path are
#     refused (database_error, not_found), nothing created.
# The archive and the receipt validate against docs/schemas. ota-attestd is
# stopped with SIGTERM (exit 0, "stopped" logged), also when a check fails.
set -euo pipefail
. "${OTA_SOURCE_DIR:?}/tests/tools/contract.sh"
: "${OTA:?}" "${OTA_VERIFY:?}"
ATTESTD=${OTA_ATTESTD:-${OTA_BINARY_DIR:?}/cli/ota-attestd}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$ATTESTD" ] || fail "ota-attestd not built at $ATTESTD"
command -v jq >/dev/null || fail "jq missing (scripts/install-deps.sh)"
command -v python3 >/dev/null || fail "python3 missing (scripts/install-deps.sh)"

tmp=$(mktemp -d /tmp/ota-archive-ext-XXXXXX)
pid=
# SIGTERM, then wait (bounded: 10 s, then SIGKILL so the test never hangs)
stop_attestd() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  local rc=0
  wait "$pid" || rc=$?
  pid=
  return "$rc"
}
cleanup() {
  local rc=$?
  stop_attestd || true
  [ "$rc" -ne 0 ] && [ -s "$tmp/attestd.log" ] && sed 's/^/  attestd | /' "$tmp/attestd.log" >&2
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- trust root: runner, issuer (oci_local), verifier ----
t=$tmp/trust
"$OTA" trust init --domain external.test --dir "$t" --root-keys 1 --threshold 1 >/dev/null
"$OTA" trust add-principal --dir "$t" --id ci-runner --role runner --repo '*' --lane '*' \
  --provider-target oci_local --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-key --dir "$t" --principal ci-runner --generate "$tmp/runner.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-principal --dir "$t" --id provider:ext --role issuer --repo '*' --lane '*' \
  --provider-target oci_local --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-key --dir "$t" --principal provider:ext --generate "$tmp/issuer.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-principal --dir "$t" --id verifier:attestd --role verifier --repo '*' --lane '*' \
  --provider-target '*' --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-key --dir "$t" --principal verifier:attestd --generate "$tmp/verifier.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null
# another issuer for the same provider target, with a key of its own
"$OTA" trust add-principal --dir "$t" --id provider:squat --role issuer --repo '*' --lane '*' \
  --provider-target oci_local --sign "$t/keys/root-1.pem" >/dev/null
"$OTA" trust add-key --dir "$t" --principal provider:squat --generate "$tmp/squat.pem" \
  --sign "$t/keys/root-1.pem" >/dev/null
ROOT_ID=$("$OTA" trust show "$t/root.json" --json | jq -r .identity)
case "$ROOT_ID" in sha256:*) ;; *) fail "no trust root identity" ;; esac
PINNED=$t/versions/1.root.json
[ -f "$PINNED" ] || fail "no versions/1.root.json"

# ---- the endpoint ----
"$ATTESTD" --db "$tmp/attestd.db" --trust "$t/root.json" --key "$tmp/verifier.pem" \
  --listen 127.0.0.1 --port 0 --port-file "$tmp/port" 2>"$tmp/attestd.log" &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "ota-attestd did not start"
U="http://127.0.0.1:$(cat "$tmp/port")"

# ---- the contract: two tasks (check depends on build), so two segments ----
w=$tmp/w
mkdir -p "$w"
{
  contract_head archive-external bb:1
  cat <<'YAML'
tasks:
  build:
    context: box
    run: "echo built > out/b.txt"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
  check:
    context: box
    run: "echo checked > reports/c.txt"
    depends_on: [build]
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
agent:
  safe_tasks: [build, check]
YAML
} >"$w/ota.yaml"
# policy and admission as the runner derives them (the archive verifier
# re-derives both from the embedded bytes with native platform linux/amd64)
NATIVE=linux/amd64
( cd "$w" && "$OTA" policy show check --json --no-org-policy ) >"$tmp/policy.json"
( cd "$w" && "$OTA" run check --dry-run --agent --json --no-org-policy ) >"$tmp/admission.json"
jq -e '.ok == true and (.effective_policy.segments | length) == 2' "$tmp/policy.json" >/dev/null \
  || fail "policy show: $(head -c 400 "$tmp/policy.json")"
jq -e '.ok == true and .sandbox_admission.decision == "admitted"' "$tmp/admission.json" >/dev/null \
  || fail "dry-run admission"
CANON=$(jq -r .canonical_policy_identity "$tmp/policy.json")
EFF=$(jq -r .effective_policy_identity "$tmp/policy.json")

TXN=txn-ext-$$
ISS=provider:ext
KEY=$tmp/issuer.pem
LANE=lane:$TXN
NOW() { date +%s; }
# identity of a JSON value: sha256 over its JCS bytes (ASCII, integers only here)
jid() { printf 'sha256:%s' "$(jq -cSj . "$1" | sha256sum | cut -d' ' -f1)"; }
fid() { printf 'sha256:%s' "$(sha256sum "$1" | cut -d' ' -f1)"; }

# sign_att KIND BOUNDARY PRIOR RECORD SEGMENT CANON EFF: a challenge from the
# endpoint (A.ch.json) and the attestation signed by the issuer key over the
# claims (A.cose), A=$tmp/aN; the body is the record's identity
n_att=0
sign_att() {
  n_att=$((n_att + 1))
  local a=$tmp/${PFX:-a}$n_att
  "$OTA" attest challenge --url "$U" --txn "$TXN" --issuer "$ISS" --scope oci_local --json >"$a.ch.json" \
    || fail "challenge for $1"
  local iat
  iat=$(NOW)
  jq -n --slurpfile ch "$a.ch.json" --arg iss "$ISS" --arg kind "$1" --arg txn "$TXN" \
    --arg tr "$ROOT_ID" --arg adapter "$ADAPTER" --arg b "$2" --arg prior "$3" --arg body "$4" \
    --arg seg "$5" --arg canon "$6" --arg eff "$7" --argjson iat "$iat" \
    '{iss: $iss, iat: $iat, exp: ($iat + 120), eat_nonce: $ch[0].nonce, kind: $kind, txn: $txn,
      trust_root: $tr, provider: "oci_local", adapter: $adapter,
      platform: {os: "linux", architecture: "amd64"}, policy: {canonical: $canon, effective: $eff},
      boundary: $b, body: $body}
     + (if $seg == "" then {} else {segment: $seg} end)
     + (if $prior == "" then {} else {prior: $prior} end)' >"$a.claims.json"
  "$OTA" attest sign --key "$KEY" --claims "$a.claims.json" --out "$a.cose" \
    || fail "attest sign $1"
  A=$a
}
# attest (same arguments): signed, submitted and accepted; its acceptance in
# A.acc, its runner-shaped entry appended to $tmp/atts.jsonl, ATT = its identity
attest() {
  sign_att "$@"
  local a=$A
  "$OTA" attest submit --url "$U" "$a.cose" --json --out "$a.acc" >"$a.sub.json" 2>"$a.err" \
    || fail "$1 not accepted: $(cat "$a.err")"
  ATT=$(fid "$a.cose")
  jq -e --arg id "$ATT" '.ok == true and .result == "accepted" and .attestation == $id' "$a.sub.json" >/dev/null \
    || fail "submit answer for $1: $(cat "$a.sub.json")"
  jq -e --slurpfile ch "$a.ch.json" '.challenge == $ch[0].challenge
    and .challenge_record.nonce == $ch[0].nonce' "$a.sub.json" >/dev/null || fail "challenge of $1"
  jq .challenge_record "$a.sub.json" >"$a.chrec.json"
  entry "$1" "$2" "$3" "$4" "$a" "$a.chrec.json" "$(jq -r .accepted_at "$a.sub.json")" >>"$tmp/atts.jsonl"
}
# the receipt's attestation entry: the challenge as the endpoint gave it
# (nonce in base64url), consumed at the acceptance time
entry() { # entry KIND BOUNDARY PRIOR RECORD A CHALLENGE.json CONSUMED_AT
  jq -cn --arg kind "$1" --arg b "$2" --arg prior "$3" --arg rec "$4" --arg id "$(fid "$5.cose")" \
    --arg cose "$(base64 -w0 "$5.cose")" --slurpfile ch "$6" --argjson at "$7" \
    '{kind: $kind, identity: $id, record_identity: $rec, boundary: $b, cose_sign1: $cose,
      prior: (if $prior == "" then null else $prior end),
      challenge: ($ch[0] | {nonce, txn, issuer, scope, epoch, issued_at, expires_at}
                 + {consumed_at: $at})}'
}
rec() { # rec NAME JSON: writes $tmp/NAME.json, echoes its identity
  printf '%s' "$2" >"$tmp/$1.json"
  jid "$tmp/$1.json"
}

# ---- the provider's records, signed and accepted in lane order ----
: >"$tmp/atts.jsonl"
: >"$tmp/evidence.names"
ev() { echo "$1" >>"$tmp/evidence.names"; }
CAP=$(rec cap '{"kind":"ota.capability_descriptor/v1","provider":"oci_local","runtime":"runc","adapter_version":"0.1.0"}')
ADAPTER=$CAP
ev cap
# submit_as ISSUER KEY KIND BOUNDARY PRIOR RECORD SEGMENT CANON EFF: signed
# by that issuer and submitted; exit status and answer (A.sub.json) kept,
# outside the aN files the receipt is built from
submit_as() {
  local iss=$ISS key=$KEY n=$n_att rc=0
  ISS=$1 KEY=$2 PFX=other
  shift 2
  sign_att "$@"
  ISS=$iss KEY=$key PFX= n_att=$n
  "$OTA" attest submit --url "$U" "$A.cose" --json >"$A.sub.json" 2>"$A.err" || rc=$?
  return "$rc"
}
# provider:squat takes the lane's name (txn, boundary) first: its own lane
submit_as provider:squat "$tmp/squat.pem" capability "$LANE" "" "$CAP" "" "$CANON" "$EFF" \
  || fail "the squatter's own first record: $(cat "$A.sub.json" "$A.err")"
SQUAT=$(fid "$A.cose")
attest capability "$LANE" "" "$CAP" "" "$CANON" "$EFF"
LANE_PRIOR=$ATT
# nor can it follow the provider's head from its lane (unknown, not a fork)
set +e
submit_as provider:squat "$tmp/squat.pem" capability "$LANE" "$LANE_PRIOR" "$CAP" "" "$CANON" "$EFF"
rc=$?
set -e
[ "$rc" -eq 1 ] && jq -e '.code == "attestation_prior_unknown"' "$A.sub.json" >/dev/null \
  || fail "the squatter following the provider: exit $rc $(cat "$A.sub.json" "$A.err")"
# its own lane goes on from its own head
submit_as provider:squat "$tmp/squat.pem" capability "$LANE" "$SQUAT" "$CAP" "" "$CANON" "$EFF" \
  || fail "the squatter's second record: $(cat "$A.sub.json" "$A.err")"
PCHECK=$(rec pcheck '{"kind":"ota.platform_check/v1","declared":{"os":"linux","architecture":"amd64","variant":""},"ok":true}')
: >"$tmp/segments.jsonl"
: >"$tmp/transitions.jsonl"
PREV_TERM=
for j in 0 1; do
  SID=$(jq -r ".effective_policy.segments[$j].id" "$tmp/policy.json")
  SCANON=$(jq -r ".canonical_policy.segments[$j].identity" "$tmp/policy.json")
  SEFF=$(jq -r ".effective_policy.segments[$j].identity" "$tmp/policy.json")
  WP=$(jq -r ".effective_policy.segments[$j].runtime_boundary.filesystem.writable_paths[0]" "$tmp/policy.json")
  PP=$(jq -r ".effective_policy.segments[$j].runtime_boundary.filesystem.protected_paths[0]" "$tmp/policy.json")
  CONT=ota-ext-$$-$j
  if [ -n "$PREV_TERM" ]; then
    TR=$(rec "tr$j" "$(jq -cn --arg txn "$TXN" --arg from "$PREV_TERM" --arg to "$SID" --argjson at "$(NOW)" \
      '{kind: "ota.application/v1", phase: "transition", provider: "oci_local", txn: $txn,
        from: $from, to_segment: $to, previous_removed: true, at: $at}')")
    ev "tr$j"
    echo "\"$TR\"" >>"$tmp/transitions.jsonl"
    attest transition "$LANE" "$LANE_PRIOR" "$TR" "$SID" "$CANON" "$EFF"
    LANE_PRIOR=$ATT
  fi
  # the controls as oci_local renders (OCI config) and inspects them
  CONFIG=$(jq -cn --arg c "$CONT" --arg wd "/workspace/$WP" --arg pd "/workspace/$PP" \
    '{ociVersion: "1.0.2", process: {args: ["sh"]}, root: {readonly: true}, hostname: $c,
      mounts: [{destination: "/workspace", type: "bind", options: ["rbind", "rro"]},
               {destination: $wd, type: "bind", options: ["bind", "rw"]},
               {destination: $pd, type: "bind", options: ["bind", "ro"]}],
      linux: {namespaces: [{type: "pid"}, {type: "network"}]}}')
  printf '%s' "$CONFIG" >"$tmp/cfg$j.json"
  CFG=$(jid "$tmp/cfg$j.json")
  REND=$(rec "rend$j" "$(jq -cn --arg sid "$SID" --arg cfg "$CFG" --argjson config "$CONFIG" \
    '{kind: "ota.rendered_policy/v1", provider: "oci_local", runtime: "runc", segment: $sid,
      config_identity: $cfg, config: $config}')")
  APPL=$(rec "appl$j" "$(jq -cn --arg cfg "$CFG" --arg c "$CONT" --arg wd "/workspace/$WP" --arg pd "/workspace/$PP" \
    '{kind: "ota.applied_policy/v1", rendered_policy: $cfg, container_id: $c, ok: true,
      mounts: {mounts: [{path: "/workspace", ro: true}, {path: $wd, ro: false}, {path: $pd, ro: true}]},
      network: {loopback_only: true},
      resources: {pids_limit: null, pids_cgroup: null, memory_limit_bytes: null, memory_cgroup: null},
      canaries: ([{check: "status", target: "self", ok: true, no_new_privs: "1", seccomp: "2"},
                  {check: "loopback", target: "127.0.0.1", ok: true, errno: ""}]
                 + ([ "mount", "unshare_user", "unshare_mnt", "ptrace", "io_uring_setup", "af_vsock",
                      "raw_socket", "packet_socket", "chmod_setid", "fchmodat2_setid", "open_setid",
                      "mknod_setid"] | map({check: "syscall", target: ., ok: true, errno: "EPERM"}))
                 + [{check: "deny", target: "/workspace", ok: true, errno: "EROFS"},
                    {check: "deny", target: $pd, ok: true, errno: "EROFS"},
                    {check: "allow", target: $wd, ok: true, errno: ""}]
                 + ([["tcp", "192.0.2.1:80"], ["tcp", "[2001:db8::1]:80"], ["udp", "192.0.2.1:53"],
                     ["udp", "[2001:db8::1]:53"], ["tcp", "10.255.255.53:53"], ["udp", "10.255.255.53:53"]]
                    | map({check: .[0], target: .[1], ok: true, errno: "ENETUNREACH"}))
                 + (["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                     "/run/podman/podman.sock", "/run/runc", "/run/crun", "/run/ota",
                     "/var/run/crio/crio.sock"] | map({check: "absent", target: ., ok: true, errno: "ENOENT"})))}')")
  INIT=$(rec "init$j" "$(jq -cn --arg txn "$TXN" --arg sid "$SID" --arg c "$CONT" --arg r "$REND" \
    --arg a "$APPL" --argjson at "$(NOW)" \
    '{kind: "ota.application/v1", phase: "initial", provider: "oci_local", txn: $txn, segment: $sid,
      lease: $c, rendered_policy: $r, applied_policy: $a, at: $at}')")
  attest initial_application "$CONT" "" "$INIT" "$SID" "$SCANON" "$SEFF"
  IATT=$ATT
  TERM=$(rec "term$j" "$(jq -cn --arg txn "$TXN" --arg sid "$SID" --arg c "$CONT" --arg p "$INIT" \
    --arg pp "$PP" --argjson at "$(NOW)" \
    '{kind: "ota.application/v1", phase: "terminal", provider: "oci_local", txn: $txn, segment: $sid,
      container_id: $c, state: "enforced_through_completion", started: true, timed_out: false,
      interrupted: false, exit_status: 0, prior: $p, at: $at,
      terminal_inspection: {runtime_status: "stopped", stopped: true, protected_unchanged: true,
        protected: [{path: $pp, before: "f0", after: "f0", unchanged: true}]},
      cleanup: {confirmed: true}}')")
  attest terminal_application "$CONT" "$IATT" "$TERM" "$SID" "$SCANON" "$SEFF"
  TATT=$ATT
  for r in pcheck "rend$j" "appl$j" "init$j" "term$j"; do ev "$r"; done
  jq -cn --arg id "$SID" --arg c "$SCANON" --arg e "$SEFF" --arg pc "$PCHECK" --arg ia "$IATT" \
    --arg ta "$TATT" --arg cont "$CONT" --arg r "$REND" --arg a "$APPL" --arg i "$INIT" --arg tm "$TERM" \
    '{id: $id, canonical_policy_identity: $c, effective_policy_identity: $e, platform_check_identity: $pc,
      initial_attestation_identity: $ia, terminal_attestation_identity: $ta,
      status: "enforced_through_completion", container_id: $cont, exit_status: 0, timed_out: false,
      rendered_policy_identity: $r, applied_policy_identity: $a, initial_application_identity: $i,
      terminal_application_identity: $tm, boundary_lease_identity: $cont,
      boundary_identity: ("container:runc:" + $cont)}' >>"$tmp/segments.jsonl"
  PREV_TERM=$TERM
done
[ "$(wc -l <"$tmp/atts.jsonl")" -eq 6 ] || fail "expected 6 accepted attestations"

# ---- the receipt, in the runner's shape ----
receipt() { # receipt ATTS.jsonl SEGMENTS.jsonl EVIDENCE.names > R.json
  local n
  : >"$tmp/evidence.jsonl"
  while read -r n; do jq -c . "$tmp/$n.json" >>"$tmp/evidence.jsonl"; done <"$3"
  jq -n --arg txn "$TXN" --slurpfile atts "$1" --slurpfile segs "$2" \
    --slurpfile ev "$tmp/evidence.jsonl" --slurpfile tr "$tmp/transitions.jsonl" \
    --slurpfile pol "$tmp/policy.json" --slurpfile adm "$tmp/admission.json" --arg adapter "$ADAPTER" \
    '($pol[0].effective_policy.segments[0].runtime_boundary) as $rb
     | ($adm[0].sandbox_admission) as $sa
     | {kind: "ota.receipt/v1", txn: $txn, execution_started: true, all_segments_ran: true, exit_status: 0,
        sandbox_policy: {
          canonical_identity: $pol[0].canonical_policy_identity,
          restriction_overlay_identities: $pol[0].effective_policy.restriction_overlay_identities,
          effective_identity: $pol[0].effective_policy_identity,
          target_platform: $pol[0].effective_policy.target_platform,
          provider_target: "oci_local", provider_adapter_identity: $adapter,
          capability_identity: $sa.provider_evaluation.capability_identity,
          status: "enforced_through_completion", segments: $segs, transition_identities: $tr,
          runtime_controls: ([$segs[].id] as $ids | [
            {id: "filesystem.repo_root", required: $rb.filesystem.repo_root_mode, application: "enforced", segments: $ids},
            {id: "filesystem.writable_paths", required: "declared_only", application: "enforced", segments: $ids},
            {id: "filesystem.protected_paths", required: "read_only", application: "enforced", segments: $ids},
            {id: "network.default", required: $rb.network.default, application: "enforced", segments: $ids}]),
          application_obligations: $sa.application_obligations,
          attestation: {issuer_identity: "ci-runner", challenge_identity: null,
                        verification: "runner_owned_cose_sign1"}},
        evidence: $ev, attestations: $atts, sandbox_admission: $sa}'
}
receipt "$tmp/atts.jsonl" "$tmp/segments.jsonl" "$tmp/evidence.names" >"$tmp/receipt.json"
python3 - "$tmp/receipt.json" "${OTA_SOURCE_DIR:?}/docs/schemas/receipt.schema.json" <<'PY' || fail "receipt schema"
import json, sys
import jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
PY

build() { # build RECEIPT DB OUT: ota archive build from the endpoint's store
  "$OTA" archive build --receipt "$1" --contract "$w/ota.yaml" --task check --agent \
    --native-platform "$NATIVE" --trust "$t" --key "$tmp/runner.pem" --attestd-db "$2" -o "$3"
}
verify() { # verify ARCHIVE OUT.json: exit status of ota-verify archive --json
  local rc=0
  "$OTA_VERIFY" archive "$1" --trust "$PINNED" --json >"$2" || rc=$?
  return "$rc"
}

# ---- the archive: acceptances from the live endpoint's store ----
build "$tmp/receipt.json" "$tmp/attestd.db" "$tmp/A.json" 2>"$tmp/build.err" \
  || fail "archive build: $(cat "$tmp/build.err")"
grep -q "^ota: archive $tmp/A.json\$" "$tmp/build.err" || fail "no archive path printed: $(cat "$tmp/build.err")"
jq -e '.kind == "ota.archive/v1" and (.attestations | length) == 6 and (.acceptances | length) == 6
       and (.challenges | length) == 6' "$tmp/A.json" >/dev/null || fail "archive shape"
# each acceptance is the one the endpoint answered for the attestation, byte for byte
for i in $(seq 1 6); do
  jq -e --arg b "$(base64 -w0 "$tmp/a$i.acc")" '[.acceptances[].cose_sign1] | index($b) != null' \
    "$tmp/A.json" >/dev/null || fail "acceptance $i is not the endpoint's answer"
done
python3 - "$tmp/A.json" "$OTA_SOURCE_DIR/docs/schemas/archive.schema.json" <<'PY' || fail "archive schema"
import json, sys
import jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))
PY
verify "$tmp/A.json" "$tmp/v.json" || fail "ota-verify archive: $(cat "$tmp/v.json")"
# 6 attestations + 6 acceptances + the receipt
jq -e '.ok == true and .status == "enforced_through_completion" and .failures == []
       and .checks.attestations == 6 and .checks.acceptances == 6 and .checks.segments == 2
       and .checks.all_segments_ran == true and .checks.exit_status == 0
       and .identities.runner == "ci-runner" and .signatures_verified == 13' "$tmp/v.json" >/dev/null \
  || fail "verify JSON: $(cat "$tmp/v.json")"
"$OTA_VERIFY" archive "$tmp/A.json" --trust "$PINNED" --require-status enforced_through_completion \
  >"$tmp/v.txt" || fail "--require-status"
grep -q '^ok: archive reconciles: status enforced_through_completion, 13 signatures verified$' "$tmp/v.txt" \
  || fail "verify text: $(cat "$tmp/v.txt")"
# the same acceptances as files (what `ota attest submit --out` wrote) build an equal archive
accs=()
for i in $(seq 1 6); do accs+=(--acceptance "$tmp/a$i.acc"); done
"$OTA" archive build --receipt "$tmp/receipt.json" --contract "$w/ota.yaml" --task check --agent \
  --native-platform "$NATIVE" --trust "$t" --key "$tmp/runner.pem" "${accs[@]}" -o "$tmp/files.json" \
  2>/dev/null || fail "archive build --acceptance"
verify "$tmp/files.json" "$tmp/vf.json" || fail "archive from acceptance files: $(cat "$tmp/vf.json")"
jq -e --slurpfile a "$tmp/A.json" '.acceptances == $a[0].acceptances and .attestations == $a[0].attestations
  and .challenges == $a[0].challenges and .evidence == $a[0].evidence' "$tmp/files.json" >/dev/null \
  || fail "acceptance files and the store give different archives"
# without the store the same receipt has no acceptances: every issuer record is refused
"$OTA" archive build --receipt "$tmp/receipt.json" --contract "$w/ota.yaml" --task check --agent \
  --native-platform "$NATIVE" --trust "$t" --key "$tmp/runner.pem" -o "$tmp/noacc.json" 2>/dev/null \
  || fail "archive build without --attestd-db"
verify "$tmp/noacc.json" "$tmp/noacc.out" && fail "an archive without acceptances verified"
jq -e '.ok == false and ([.failures[] | select(.code == "archive_acceptance_missing")] | length) == 6' \
  "$tmp/noacc.out" >/dev/null || fail "no acceptances: $(cat "$tmp/noacc.out")"

# ---- an attestation the endpoint never accepted ----
# the provider signs a second terminal record for segment 1 (same prior); the
# endpoint refuses it (the head of that boundary is the first terminal), and a
# harness that puts it into the receipt anyway gets an archive that cannot verify
TERM2=$(rec term1b "$(jq -c '.at += 1' "$tmp/term1.json")")
sign_att terminal_application "ota-ext-$$-1" "$IATT" "$TERM2" "$SID" "$SCANON" "$SEFF"
REFUSED=$A
set +e
"$OTA" attest submit --url "$U" "$REFUSED.cose" --json >"$REFUSED.sub.json" 2>"$REFUSED.err"; rc=$?
set -e
[ "$rc" -eq 1 ] && jq -e '.code == "attestation_prior_fork"' "$REFUSED.sub.json" >/dev/null \
  || fail "the forked terminal: exit $rc $(cat "$REFUSED.sub.json" "$REFUSED.err")"
RID=$(fid "$REFUSED.cose")
# receipt: the refused record in place of the accepted terminal of segment 1
head -n 5 "$tmp/atts.jsonl" >"$tmp/atts2.jsonl"
entry terminal_application "ota-ext-$$-1" "$IATT" "$TERM2" "$REFUSED" "$REFUSED.ch.json" \
  "$(jq .issued_at "$REFUSED.ch.json")" >>"$tmp/atts2.jsonl"
jq -c --arg ta "$RID" --arg tm "$TERM2" 'if .id == "task:check" then .terminal_attestation_identity = $ta
  | .terminal_application_identity = $tm else . end' "$tmp/segments.jsonl" >"$tmp/segments2.jsonl"
sed 's/^term1$/term1b/' "$tmp/evidence.names" >"$tmp/evidence2.names"
receipt "$tmp/atts2.jsonl" "$tmp/segments2.jsonl" "$tmp/evidence2.names" >"$tmp/receipt2.json"
build "$tmp/receipt2.json" "$tmp/attestd.db" "$tmp/B.json" 2>"$tmp/build2.err" \
  || fail "archive build B: $(cat "$tmp/build2.err")"
# the build names the attestation it found no acceptance for, and leaves it out
grep -q "^ota: archive: attestations\[5\] $RID: no acceptance stored in " "$tmp/build2.err" \
  || fail "archive build: no word about $RID: $(cat "$tmp/build2.err")"
jq -e '(.acceptances | length) == 5' "$tmp/B.json" >/dev/null || fail "B: acceptances"
verify "$tmp/B.json" "$tmp/vb.out" && fail "an archive with an unaccepted attestation verified"
jq -e '.ok == false and .failures[0].code == "archive_acceptance_missing"
       and .failures[0].where == "attestations[5]"' "$tmp/vb.out" >/dev/null \
  || fail "unaccepted attestation: $(cat "$tmp/vb.out")"

# ---- SIGTERM: the endpoint stops cleanly ----
rc=0
stop_attestd || rc=$?
[ "$rc" -eq 0 ] || fail "ota-attestd exit $rc after SIGTERM"
grep -q '"event":"stopped"' "$tmp/attestd.log" || fail "no stopped log line"
# the stopped endpoint's store still builds the same archive contents
build "$tmp/receipt.json" "$tmp/attestd.db" "$tmp/A2.json" 2>/dev/null || fail "build after stop"
verify "$tmp/A2.json" "$tmp/v2.json" || fail "A2: $(cat "$tmp/v2.json")"

# ---- a tampered acceptance in a copy of the store ----
store_copy() { python3 -c 'import sqlite3, sys; s = sqlite3.connect(sys.argv[1]); d = sqlite3.connect(sys.argv[2]); s.backup(d); d.close(); s.close()' "$1" "$2"; }
TID=$(jq -r '.identity' <(sed -n 3p "$tmp/atts.jsonl"))   # segment 0's terminal
store_copy "$tmp/attestd.db" "$tmp/tampered.db"
# flip the last byte (inside the signature) of its stored acceptance
python3 - "$tmp/tampered.db" "$TID" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(acc,) = db.execute("SELECT acceptance FROM acceptances WHERE record_id = ?", (sys.argv[2],)).fetchone()
acc = bytearray(acc); acc[-1] ^= 1
assert db.execute("UPDATE acceptances SET acceptance = ? WHERE record_id = ?", (bytes(acc), sys.argv[2])).rowcount == 1
db.commit()
PY
build "$tmp/receipt.json" "$tmp/tampered.db" "$tmp/C.json" 2>/dev/null || fail "build from the tampered store"
verify "$tmp/C.json" "$tmp/vc.out" && fail "a tampered acceptance verified"
jq -e '.ok == false and .failures[0].code == "signature_invalid"
       and (.failures[0].where | startswith("acceptances[]"))
       and (.failures | map(select(.code == "archive_acceptance_missing" and .where == "attestations[2]"))
            | length) == 1' "$tmp/vc.out" >/dev/null || fail "tampered acceptance: $(cat "$tmp/vc.out")"

# ---- an acceptance of another attestation in its place ----
store_copy "$tmp/attestd.db" "$tmp/swapped.db"
IID=$(jq -r '.identity' <(sed -n 2p "$tmp/atts.jsonl"))   # segment 0's initial
python3 - "$tmp/swapped.db" "$IID" "$TID" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(acc,) = db.execute("SELECT acceptance FROM acceptances WHERE record_id = ?", (sys.argv[3],)).fetchone()
assert db.execute("UPDATE acceptances SET acceptance = ? WHERE record_id = ?", (acc, sys.argv[2])).rowcount == 1
db.commit()
PY
build "$tmp/receipt.json" "$tmp/swapped.db" "$tmp/D.json" 2>/dev/null || fail "build from the swapped store"
verify "$tmp/D.json" "$tmp/vd.out" && fail "a swapped acceptance verified"
jq -e '.ok == false and .failures[0].code == "archive_duplicate" and .failures[0].where == "acceptances[]"
       and (.failures | map(select(.code == "archive_acceptance_missing" and .where == "attestations[1]"))
            | length) == 1' "$tmp/vd.out" >/dev/null || fail "swapped acceptance: $(cat "$tmp/vd.out")"

# ---- building reads the store, never writes it ----
meta() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT group_concat(k || \"=\" || v) FROM (SELECT * FROM ota_meta ORDER BY k)").fetchone()[0])' "$1"; }
before=$(meta "$tmp/attestd.db")
sum=$(sha256sum <"$tmp/attestd.db")
build "$tmp/receipt.json" "$tmp/attestd.db" "$tmp/A3.json" 2>/dev/null || fail "build A3"
[ "$(meta "$tmp/attestd.db")" = "$before" ] || fail "archive build changed the store's meta: $before -> $(meta "$tmp/attestd.db")"
[ "$(sha256sum <"$tmp/attestd.db")" = "$sum" ] || fail "archive build wrote to the store"
# a sqlite file that is not an attestd store (the verifier's ledger) is refused, untouched
"$OTA_VERIFY" archive "$tmp/A.json" --trust "$PINNED" --ledger "$tmp/ledger.db" --ledger-init >/dev/null || fail "ledger"
sum=$(sha256sum <"$tmp/ledger.db")
rc=0
build "$tmp/receipt.json" "$tmp/ledger.db" "$tmp/F.json" 2>"$tmp/f.err" || rc=$?
[ "$rc" -eq 3 ] && grep -q '^ota: database_error: .*not an ota-attestd database' "$tmp/f.err" \
  || fail "a ledger as attestd store: exit $rc $(cat "$tmp/f.err")"
[ "$(sha256sum <"$tmp/ledger.db")" = "$sum" ] && [ ! -e "$tmp/F.json" ] || fail "the ledger was written to"

# ---- a store that does not exist is refused, not created ----
rc=0
build "$tmp/receipt.json" "$tmp/missing.db" "$tmp/E.json" 2>"$tmp/e.err" || rc=$?
[ "$rc" -ne 0 ] || fail "archive build with a missing store succeeded"
[ ! -e "$tmp/missing.db" ] || fail "archive build created $tmp/missing.db"
[ ! -e "$tmp/E.json" ] || fail "archive written from a missing store"
grep -q '^ota: not_found: ' "$tmp/e.err" || fail "missing store: $(cat "$tmp/e.err")"
echo "archive_external: ok"
