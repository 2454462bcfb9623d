#!/usr/bin/env bash
# Runs the two example repositories (examples/build-output,
# examples/offline-tests) end to end and checks every step; exits non-zero
# on any failed check.
#
#   scripts/examples.sh [--out DIR] [NAME...]
#
# For each example, in a fresh copy under a temporary directory: ota validate,
# ota doctor (real probes; recorded descriptor, no drift), discovery JSON with
# the canonical policy (ota tasks/workflows --json), dry-run admission, real
# oci_local execution with every record signed by a runner principal of a
# local trust root, the writable path written, protected and read-only paths
# refused (probes inside, hashes on the host), external network denied
# (probes inside, the applied-policy evidence, a host listener that must see
# no connection), refused lanes with their supported alternatives, the
# signed records verified with ota-verify cose (and a tampered one refused),
# the archive written by ota run verified with `ota-verify archive` (pinned
# trust root, required status, ledger replay, tampered variants refused; a
# TODO instead when this ota-verify has no archive command), and the exact
# ota version in the evidence; every JSON output against its JSON Schema in
# docs/schemas (python3-jsonschema), and the same lanes again on crun.
# Evidence and a checks.txt per example go to DIR (default
# build/examples-evidence).
#
# Needs root, runc, busybox-static and umoci (scripts/install-deps.sh).
# Uses $OTA / $OTA_VERIFY when set, else the release build (built if missing).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/build/examples-evidence
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(build-output offline-tests)

die() { echo "examples: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "needs root (oci_local creates containers)"
for t in runc busybox umoci jq openssl sha256sum; do
  command -v "$t" >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done
if [ -z "${OTA:-}" ] || [ -z "${OTA_VERIFY:-}" ]; then
  if [ ! -x "$src/build/release/cli/ota" ] || [ ! -x "$src/build/release/cli/ota-verify" ]; then
    (cd "$src" && cmake --preset release -G Ninja >/dev/null && cmake --build --preset release >/dev/null) ||
      die "release build failed"
  fi
  OTA=${OTA:-$src/build/release/cli/ota}
  OTA_VERIFY=${OTA_VERIFY:-$src/build/release/cli/ota-verify}
fi
OTA=$(realpath "$OTA"); OTA_VERIFY=$(realpath "$OTA_VERIFY")

work=$(mktemp -d /tmp/ota-examples-XXXXXX)
rtroot=/run/ota/examples-$$
listener=
cleanup() {
  [ -n "$listener" ] && kill "$listener" 2>/dev/null
  # once per runtime: cleanup acts only on leases of the runtime root it is given
  "$OTA" cleanup --lease-db "$work/leases.db" --state-dir "$work/state" --runtime-root "$rtroot" \
    >/dev/null 2>&1
  "$OTA" cleanup --lease-db "$work/leases.db" --state-dir "$work/state" --runtime crun \
    --runtime-root "$rtroot-crun" >/dev/null 2>&1
  rm -rf "$work" "$rtroot" "$rtroot-crun"
}
trap cleanup EXIT
mkdir -p "$out"
out=$(realpath "$out")

arch=$(case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac)
[ "$arch" = amd64 ] || die "the examples declare linux/amd64; this host is linux/$arch"

# ---- checks ----
total_fail=0
ex_fail=0
checks=/dev/null
check() { # NAME CMD...: CMD's exit status decides
  local name=$1; shift
  if "$@" >>"$evid/log.txt" 2>&1; then
    echo "PASS $name" | tee -a "$checks"
  else
    echo "FAIL $name" | tee -a "$checks"
    ex_fail=$((ex_fail + 1)); total_fail=$((total_fail + 1))
  fi
}
todo() { echo "TODO $1" | tee -a "$checks"; }
rc_is() { # WANT CMD...: CMD exits WANT (its output goes to the log)
  local want=$1; shift
  "$@"; local rc=$?
  [ "$rc" -eq "$want" ] || { echo "exit $rc, want $want: $*"; return 1; }
}
jqf() { jq -e "$1" "$2" >/dev/null; }
has_jsonschema=false
python3 -c 'import jsonschema' 2>/dev/null && has_jsonschema=true
schema_ok() { # SCHEMA-NAME FILE...: each FILE validates against docs/schemas/SCHEMA-NAME.schema.json
  local sch=$src/docs/schemas/$1.schema.json; shift
  python3 - "$sch" "$@" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    jsonschema.validate(json.load(open(f)), schema)
PY
}
schema_checks() { # the JSON outputs of this example against docs/schemas
  if ! $has_jsonschema; then
    check "JSON Schema checks need python3-jsonschema (scripts/install-deps.sh)" false
    return
  fi
  check "JSON Schema: ota validate --json" schema_ok policy-validate "$evid/validate.json"
  check "JSON Schema: ota tasks/workflows --json" schema_ok policy-lanes "$evid"/tasks.json \
    $(ls "$evid"/workflows.json 2>/dev/null)
  check "JSON Schema: dry-run admissions" schema_ok policy-dry-run "$evid"/dry-run*.json
  check "JSON Schema: ota doctor --json" schema_ok doctor-report "$evid"/doctor*.json
  [ -f "$evid/archive.json" ] && check "JSON Schema: the archive" schema_ok archive "$evid/archive.json"
  return 0
}
jqv() { jq -e --arg v "$version" "$1" "$2" >/dev/null; } # $v = the ota version

# ---- shared set-up: image, trust root, runner principal, host listener ----
store=$work/images
OTA_CACHE=${OTA_CACHE:-/var/cache/ota} bash "$src/scripts/make-test-rootfs.sh" busybox-image "$store" \
  busybox:ota-examples >/dev/null 2>&1 || die "cannot build the busybox image (make-test-rootfs.sh)"
version=$("$OTA" version | awk '{print $2}')
[ -n "$version" ] || die "ota version printed nothing"
trust=$work/trust
"$OTA" trust init --domain examples.ota.local --dir "$trust" >/dev/null
"$OTA" trust add-principal --dir "$trust" --id runner:examples --role runner \
  --repo '*' --lane '*' --provider-target oci_local >/dev/null
"$OTA" trust add-key --dir "$trust" --principal runner:examples --generate "$work/runner.pem" >/dev/null
"$OTA" trust sign --dir "$trust" --key "$trust/keys/root-1.pem" >/dev/null
trust_id=$(jq -r '.identity' <("$OTA" trust show --dir "$trust" --json))
jq -r '.signed.principals[] | select(.id == "runner:examples") | .keys[0].public_key' \
  "$trust/root.json" >"$work/runner.pub.pem"
host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
port=
if [ -n "$host_ip" ]; then
  # a host listener the sandboxes try to reach; it must never see a connection
  for _ in 1 2 3 4 5; do
    port=$((47000 + RANDOM % 2000))
    busybox nc -l -p "$port" >"$work/listener.out" 2>&1 &
    listener=$!
    sleep 0.2
    kill -0 "$listener" 2>/dev/null && break
    listener=
  done
  [ -n "$listener" ] || host_ip=
fi

common=(--agent --image-store "$store" --lease-db "$work/leases.db" --state-dir "$work/state"
        --runtime-root "$rtroot" --key "$work/runner.pem" --nonce-db "$work/nonces.db"
        --trust "$trust")
doctor_common=(--image-store "$store" --lease-db "$work/leases.db" --runtime-root "$rtroot"
               --descriptor "$work/descriptor.json")

# Fingerprint of every file outside the given carve-outs (relative paths).
fingerprint() { # DIR CARVEOUT...
  local dir=$1; shift
  local prune=()
  for c in "$@"; do prune+=(-path "./$c" -prune -o); done
  (cd "$dir" && find . "${prune[@]}" -print | LC_ALL=C sort | while read -r f; do
     if [ -f "$f" ]; then echo "$(sha256sum <"$f" | cut -c1-64) $f"; else echo "dir $f"; fi
   done)
}
fp_equal() { diff "$1" "$2"; }
fp_build_output() { fingerprint . build coverage .ota; sha256sum coverage/baseline.txt; }
no_containers() { [ "$(runc --root "$rtroot" list -q 2>/dev/null | grep -c .)" -eq 0 ]; }

# Verifies every signed record of a receipt with the runner key from the
# trust root, and that a tampered record is refused.
verify_receipt_cose() { # RECEIPT DIR
  local r=$1 d=$2 n i
  n=$(jq '.attestations | length' "$r")
  [ "$n" -gt 0 ] || { echo "no attestations"; return 1; }
  for ((i = 0; i < n; i++)); do
    jq -r ".attestations[$i].cose_sign1" "$r" | base64 -d >"$d/att$i.cose"
    "$OTA_VERIFY" cose --key "$work/runner.pub.pem" --json "$d/att$i.cose" >"$d/att$i.verify.json" ||
      { echo "attestation $i does not verify"; return 1; }
  done
  echo "$n attestations verified"
}
tampered_refused() { # COSE
  local t=$1.tampered
  cp "$1" "$t"
  local size; size=$(stat -c %s "$t")
  # flip one bit near the end of the payload (before the 64-byte signature)
  local off=$((size - 80))
  printf "$(printf '\\%03o' $(( $(od -An -tu1 -j "$off" -N1 "$t") ^ 1 )))" |
    dd of="$t" bs=1 seek="$off" conv=notrunc status=none
  rc_is 1 "$OTA_VERIFY" cose --key "$work/runner.pub.pem" "$t"
}
archive_checks() { # RUN-STDERR DRY-RUN-JSON RECEIPT LANE-ARGS...
  local runerr=$1 dry=$2 receipt=$3 a v
  shift 3
  local lane_args=("$@")
  a=$(sed -n 's/^ota: archive //p' "$runerr" | tail -n1)
  [ -n "$a" ] || a=$(ls -t .ota/archives/*.json 2>/dev/null | head -n1)
  check "archive written by ota run (${a:-none})" test -f "$a"
  [ -f "$a" ] || return
  cp "$a" "$evid/archive.json"
  a=$evid/archive.json
  v=$evid/archive.verify.json
  local pinned=$trust/versions/1.root.json
  "$OTA_VERIFY" archive "$a" --trust "$pinned" --require-status enforced_through_completion --json >"$v" 2>&1
  check "ota-verify archive --trust PINNED --require-status enforced_through_completion (exit 0)" test $? -eq 0
  check "archive verdict: ok, no failure, status derived enforced_through_completion" jqf '.ok and .failures == []
    and .status == "enforced_through_completion" and .identities.runner == "runner:examples"' "$v"
  check "archive canonical identity = dry-run's" test "$(jq -r .identities.canonical "$v")" = \
    "$(jq -r .sandbox_admission.canonical_policy_identity "$dry")"
  check "ota version $version recorded in the archive" jqv '[.evidence[] |
    select(.kind == "ota.capability_descriptor/v1") | .adapter_version == $v] | length > 0 and all' "$a"
  check "ledger: a ledger that is not there is refused, not started (exit 2)" rc_is 2 "$OTA_VERIFY" archive "$a" \
    --trust "$pinned" --ledger "$work/ledger.$name.db"
  check "ledger: first verification makes the ledger (--ledger-init) and records the challenges (exit 0)" \
    rc_is 0 "$OTA_VERIFY" archive "$a" --trust "$pinned" --ledger "$work/ledger.$name.db" --ledger-init
  check "ledger: re-verifying the same archive is idempotent (exit 0)" rc_is 0 "$OTA_VERIFY" archive "$a" \
    --trust "$pinned" --ledger "$work/ledger.$name.db"
  # a second, validly signed archive built later from the same receipt reuses its challenges
  sleep 1
  "$OTA" archive build --receipt "$receipt" --contract ota.yaml "${lane_args[@]}" --agent --trust "$trust" \
    --key "$work/runner.pem" -o "$evid/archive.second.json" >>"$evid/log.txt" 2>&1
  check "ledger: a second archive reusing the challenges verifies alone (exit 0)" rc_is 0 "$OTA_VERIFY" archive \
    "$evid/archive.second.json" --trust "$pinned"
  check "ledger: ... and is refused as a replay across archives (exit 1)" rc_is 1 "$OTA_VERIFY" archive \
    "$evid/archive.second.json" --trust "$pinned" --ledger "$work/ledger.$name.db"
  # tampering: each variant must be refused
  jq 'del(.attestations[1])' "$a" >"$evid/archive.t-drop.json"
  check "tampered archive (an attestation dropped) refused (exit 1)" rc_is 1 "$OTA_VERIFY" archive \
    "$evid/archive.t-drop.json" --trust "$pinned"
  jq --arg b "$(jq -r .contract.bytes "$a" | base64 -d | sed 's/repo_root_mode: read_only/repo_root_mode: writable/' |
    base64 -w0)" '.contract.bytes = $b' "$a" >"$evid/archive.t-contract.json"
  check "tampered archive (embedded contract made writable) refused (exit 1)" rc_is 1 "$OTA_VERIFY" archive \
    "$evid/archive.t-contract.json" --trust "$pinned"
  jq '.evidence[0].adapter_version = "9.9.9"' "$a" >"$evid/archive.t-evidence.json"
  check "tampered archive (evidence edited) refused (exit 1)" rc_is 1 "$OTA_VERIFY" archive \
    "$evid/archive.t-evidence.json" --trust "$pinned"
  if [ ! -f "$work/other-trust/root.json" ]; then
    "$OTA" trust init --domain other.ota.local --dir "$work/other-trust" >/dev/null
  fi
  check "archive against another pinned trust root refused (exit 1)" rc_is 1 "$OTA_VERIFY" archive "$a" \
    --trust "$work/other-trust/root.json"
}

# The same lane again on crun (the second supported runtime), when installed.
crun_checks() { # TASK
  if ! command -v crun >/dev/null; then
    check "crun is installed (scripts/install-deps.sh): both runtimes are exercised" false
    return
  fi
  local r=$evid/receipt.crun.json
  check "ota doctor --runtime crun: ready" rc_is 0 "$OTA" doctor "${doctor_common[@]}" --runtime crun --task "$1"
  "$OTA" run "$1" "${common[@]}" --runtime crun --runtime-root "$rtroot-crun" --receipt "$r" --no-archive \
    >"$evid/run.crun.out" 2>"$evid/run.crun.err"
  check "the same lane on crun: exit 0" test $? -eq 0
  check "crun receipt: enforced_through_completion, runtime crun witnessed" jqf '
    .sandbox_policy.status == "enforced_through_completion"
    and ([.evidence[] | select(.kind == "ota.capability_descriptor/v1") | .runtime] == ["crun"])
    and ([.evidence[] | select(.kind == "ota.applied_policy/v1") | .network.loopback_only] | all)' "$r"
  check "no crun container left" sh -c "[ \"\$(crun --root '$rtroot-crun' list -q 2>/dev/null | grep -c .)\" -eq 0 ]"
}

# ---------------------------------------------------------------- build-output
example_build_output() {
  local r
  check "ota validate" rc_is 0 "$OTA" validate --json
  "$OTA" validate --json >"$evid/validate.json"
  check "validate JSON: 3 tasks, 1 workflow" jqf '.ok and .workflows == 1' "$evid/validate.json"

  "$OTA" doctor "${doctor_common[@]}" --record-descriptor --json >"$evid/doctor.record.json"
  "$OTA" doctor "${doctor_common[@]}" --json >"$evid/doctor.json"
  check "ota doctor: ready (exit 0)" rc_is 0 "$OTA" doctor "${doctor_common[@]}"
  check "doctor probed runtime, root and namespaces for real" jqf '.ready and .machine.runtime.available
    and (.machine.runtime.version | test("runc")) and .machine.root and .machine.namespaces.ok
    and .machine.namespaces.netns_loopback_only' "$evid/doctor.json"
  check "doctor: every lane enforceable here, no drift" jqf '([.lanes[].enforceable_here] | all)
    and (.descriptor.drift == []) and ([.findings[] | select(.severity == "problem")] == [])' "$evid/doctor.json"

  "$OTA" tasks --json >"$evid/tasks.json"
  "$OTA" workflows --json >"$evid/workflows.json"
  check "discovery: every task with its canonical policy" jqf '[.tasks[] |
    (.canonical_policy.kind == "ota.sandbox_policy/v1" and (.canonical_policy.identity | startswith("sha256:")))]
    | length == 3 and all' "$evid/tasks.json"
  check "discovery: workflow ci with its canonical policy (2 segments)" jqf '.workflows[] | select(.name == "ci")
    | .canonical_policy.segments | map(.id) == ["task:build", "task:test"]' "$evid/workflows.json"

  "$OTA" up --workflow ci --agent --dry-run --json >"$evid/dry-run.json"
  check "dry-run: admitted on oci_local, nothing started" jqf '.ok and .sandbox_admission.decision == "admitted"
    and .sandbox_admission.provider_target == "oci_local" and .execution_started == false' "$evid/dry-run.json"
  check "dry-run canonical identity = discovery's" test "$(jq -r .sandbox_admission.canonical_policy_identity \
    "$evid/dry-run.json")" = "$(jq -r '.workflows[] | select(.name == "ci") | .canonical_policy.identity' \
    "$evid/workflows.json")"
  check "dry-run left no output" test ! -e build/bin/stats

  fp_build_output >"$evid/before.fp"
  r=$evid/receipt.ci.json
  "$OTA" up --workflow ci "${common[@]}" --receipt "$r" >"$evid/run.ci.out" 2>"$evid/run.ci.err"
  check "ota up --workflow ci: real run, exit 0" test $? -eq 0
  check "receipt: enforced_through_completion, 2 segments, 1 transition" jqf '.execution_started
    and .sandbox_policy.status == "enforced_through_completion" and .sandbox_policy.provider_target == "oci_local"
    and (.sandbox_policy.segments | map(.id)) == ["task:build", "task:test"]
    and (.sandbox_policy.transition_identities | length) == 1' "$r"
  check "receipt canonical identity = dry-run's" test "$(jq -r .sandbox_policy.canonical_identity "$r")" = \
    "$(jq -r .sandbox_admission.canonical_policy_identity "$evid/dry-run.json")"
  check "writable build/ written (bin, MANIFEST verifies)" sh -c 'test -x build/bin/stats &&
    cd build && sha256sum -c MANIFEST'
  check "writable coverage/ written (100% functions, 4 cases)" grep -qx \
    "tests 4 passed, 0 failed; functions 5/5 (100%), baseline 100%" coverage/summary.txt
  check "the built tool works" test "$(printf '2\n4\n' | build/bin/stats | sed -n 's/^mean //p')" = 3
  fp_build_output >"$evid/after.fp"
  check "rest of the worktree unchanged (host-side hashes)" fp_equal "$evid/before.fp" "$evid/after.fp"

  r=$evid/receipt.boundary.json
  "$OTA" run boundary-check "${common[@]}" --receipt "$r" >"$evid/run.boundary.out" 2>"$evid/run.boundary.err"
  check "boundary-check lane: exit 0 (every probe passed)" test $? -eq 0
  cp build/boundary.txt "$evid/boundary.txt" 2>/dev/null
  check "protected ota.yaml write refused" grep -qx "PASS write-denied ota.yaml" build/boundary.txt
  check "protected coverage/baseline.txt (under writable coverage/) refused" grep -qx \
    "PASS write-denied coverage/baseline.txt" build/boundary.txt
  check "read-only repo root: create refused" grep -qx "PASS create-denied boundary-probe" build/boundary.txt
  check "symlink alias to protected content refused" grep -qx "PASS write-denied build/alias-probe" build/boundary.txt
  check "carve-outs writable" grep -qx "PASS create-allowed coverage/boundary-probe" build/boundary.txt
  check "network: only lo inside" grep -qx "PASS interfaces lo-only" build/boundary.txt
  check "network: external destination denied" grep -qx "PASS connect-denied 192.0.2.1:80" build/boundary.txt
  if [ -n "$host_ip" ]; then
    check "network: the host's own address denied ($host_ip:$port)" grep -qx \
      "PASS connect-denied $host_ip:$port" build/boundary.txt
  fi
  fp_build_output >"$evid/after2.fp"
  check "protected content unchanged on the host" fp_equal "$evid/before.fp" "$evid/after2.fp"
  check "applied-policy evidence: loopback-only network namespace" jqf '[.evidence[] |
    select(.kind == "ota.applied_policy/v1") | .network.loopback_only and .network.interfaces == ["lo"]]
    | length > 0 and all' "$evid/receipt.ci.json"
  verify_receipt_cose "$evid/receipt.ci.json" "$evid" >>"$evid/log.txt" 2>&1
  check "ota-verify cose: every signed record of the ci run (runner key from the trust root)" test $? -eq 0
  check "ota-verify cose: a tampered record refused (exit 1)" tampered_refused "$evid/att0.cose"
  check "ota-verify trust: the trust-root chain from the pinned version 1" rc_is 0 "$OTA_VERIFY" trust \
    --pinned "$trust/versions/1.root.json" "$trust/versions/2.root.json"
  check "exact ota version $version in the evidence" jqv \
    '[.evidence[] | select(.kind == "ota.capability_descriptor/v1") | .adapter_version == $v] | length > 0 and all' \
    "$evid/receipt.ci.json"
  archive_checks "$evid/run.ci.err" "$evid/dry-run.json" "$evid/receipt.ci.json" --workflow ci
  schema_checks
  crun_checks boundary-check
  check "crun: boundary probes all passed" sh -c '! grep -q "^FAIL" build/boundary.txt && grep -q "^PASS write-denied ota.yaml" build/boundary.txt'
  check "no container left" no_containers
}

# --------------------------------------------------------------- offline-tests
example_offline_tests() {
  local r
  check "ota validate" rc_is 0 "$OTA" validate --json
  "$OTA" validate --json >"$evid/validate.json"

  "$OTA" doctor "${doctor_common[@]}" --json >"$evid/doctor.json"
  check "ota doctor (whole repo): problems found (exit 1)" rc_is 1 "$OTA" doctor "${doctor_common[@]}"
  check "doctor: fetch-fixtures enforced for files but not network" jqf '[.findings[] |
    select(.code == "network_not_enforced" and .lane == "task:fetch-fixtures")
    | (.controls | index("network.target_allowlist") != null)] == [true]' "$evid/doctor.json"
  check "doctor: the test lane and workflow are enforceable here" jqf '[.lanes[] |
    select(.name != "fetch-fixtures") | .enforceable_here] == [true, true]' "$evid/doctor.json"
  "$OTA" doctor "${doctor_common[@]}" --task test --workflow verify --json >"$evid/doctor.test.json"
  check "ota doctor --task test --workflow verify: ready (exit 0)" rc_is 0 "$OTA" doctor \
    "${doctor_common[@]}" --task test --workflow verify

  "$OTA" tasks --json >"$evid/tasks.json"
  check "discovery: canonical policies; fetch-fixtures keeps its outbound targets" jqf '
    (.tasks | length) == 2 and ([.tasks[].canonical_policy.identity | startswith("sha256:")] | all)
    and (.tasks[] | select(.name == "fetch-fixtures") | .canonical_policy.segments[0].runtime_boundary.network
         | .default == "deny" and (.outbound_targets | length) == 2)' "$evid/tasks.json"

  "$OTA" run test --agent --dry-run --json >"$evid/dry-run.test.json"
  check "dry-run test: admitted on oci_local" jqf '.ok and .sandbox_admission.decision == "admitted"
    and .sandbox_admission.provider_target == "oci_local"' "$evid/dry-run.test.json"
  "$OTA" run fetch-fixtures --agent --dry-run --json >"$evid/dry-run.fetch.json" 2>/dev/null
  check "dry-run fetch-fixtures: refused, no enforcing target" jqf '.ok == false and .execution_started == false
    and .sandbox_admission.kind == "sandbox_no_enforcing_target"
    and ([.sandbox_admission.refusals[].control] | index("network.target_allowlist") != null)' \
    "$evid/dry-run.fetch.json"
  "$OTA" run fetch-fixtures --agent --dry-run --sandbox-target oci_local \
    --descriptor "$src/policy/descriptors/oci_local.json" --descriptor descriptors/egress-gateway.json \
    --json >"$evid/dry-run.fetch.alternatives.json" 2>/dev/null
  check "refusal names the network controls and the supported alternative" jqf '.ok == false
    and ([.sandbox_admission.refusals[].control] | sort) == ["network.destination_constraints", "network.target_allowlist"]
    and .sandbox_admission.supported_alternatives == [{"target": "egress_gateway", "command": "--sandbox-target"}]' \
    "$evid/dry-run.fetch.alternatives.json"

  fingerprint . test-results incoming .ota >"$evid/before.fp"
  "$OTA" run fetch-fixtures "${common[@]}" --json >"$evid/run.fetch.json" 2>"$evid/run.fetch.err"
  check "real run of fetch-fixtures refused (exit 1) before anything ran" test $? -eq 1
  check "refused run: execution_started false" jqf '.execution_started == false and .ok == false' "$evid/run.fetch.json"
  check "refused run: nothing prepared" sh -c "[ ! -d '$work/state/bundles' ] || [ -z \"\$(ls '$work/state/bundles')\" ]"
  check "refused run: incoming/ untouched" test "$(ls -A incoming)" = .keep

  r=$evid/receipt.test.json
  "$OTA" run test "${common[@]}" --receipt "$r" >"$evid/run.test.out" 2>"$evid/run.test.err"
  check "ota run test: real run, exit 0" test $? -eq 0
  cp test-results/results.tap test-results/hermetic.txt "$evid/" 2>/dev/null
  check "test suite: every TAP line ok" sh -c '! grep -q "^not ok" test-results/results.tap &&
    grep -q "^1\.\.[0-9]" test-results/results.tap'
  check "writable test-results/ written" grep -q "passed, 0 failed" test-results/summary.txt
  check "protected tests/ fixtures refused inside" grep -q "^ok [0-9]* - fixtures read-only" test-results/results.tap
  check "network denied: only lo, no default route" sh -c 'grep -qx "PASS interfaces-lo-only" test-results/hermetic.txt &&
    grep -qx "PASS no-default-route" test-results/hermetic.txt'
  check "network denied: TEST-NET, public resolver and HTTP fetch refused" sh -c '
    grep -qx "PASS connect-denied:192.0.2.1:80" test-results/hermetic.txt &&
    grep -qx "PASS connect-denied:1.1.1.1:53" test-results/hermetic.txt &&
    grep -qx "PASS http-fetch-denied" test-results/hermetic.txt'
  if [ -n "$host_ip" ]; then
    check "network denied: the host's own address ($host_ip:$port)" grep -qx \
      "PASS connect-denied:$host_ip:$port" test-results/hermetic.txt
  fi
  check "loopback inside the sandbox works" grep -qx "PASS loopback-works" test-results/hermetic.txt
  fingerprint . test-results incoming .ota >"$evid/after.fp"
  check "rest of the worktree unchanged (host-side hashes)" fp_equal "$evid/before.fp" "$evid/after.fp"
  check "receipt: enforced_through_completion" jqf '.sandbox_policy.status == "enforced_through_completion"
    and .sandbox_policy.provider_target == "oci_local"' "$r"
  check "applied-policy evidence: loopback-only network namespace" jqf '[.evidence[] |
    select(.kind == "ota.applied_policy/v1") | .network.loopback_only] == [true]' "$r"
  verify_receipt_cose "$r" "$evid" >>"$evid/log.txt" 2>&1
  check "ota-verify cose: every signed record (runner key from the trust root)" test $? -eq 0
  check "ota-verify cose: a tampered record refused (exit 1)" tampered_refused "$evid/att1.cose"
  check "exact ota version $version in the evidence" jqv \
    '[.evidence[] | select(.kind == "ota.capability_descriptor/v1") | .adapter_version == $v] == [true]' "$r"
  archive_checks "$evid/run.test.err" "$evid/dry-run.test.json" "$evid/receipt.test.json" --task test
  "$OTA" workflows --json >"$evid/workflows.json"
  schema_checks
  crun_checks test
  check "crun: test suite and hermetic checks all ok" sh -c '! grep -q "^not ok" test-results/results.tap &&
    grep -qx "PASS interfaces-lo-only" test-results/hermetic.txt'
  check "no container left" no_containers
}

# ---- run ----
for name in "${names[@]}"; do
  [ -d "$src/examples/$name" ] || die "no example $name"
  evid=$out/$name
  rm -rf "$evid"; mkdir -p "$evid"
  checks=$evid/checks.txt
  : >"$checks"; : >"$evid/log.txt"
  ex_fail=0
  repo=$work/$name
  cp -a "$src/examples/$name" "$repo"
  if [ -n "$host_ip" ]; then mkdir -p "$repo/.ota-probe"; echo "$host_ip $port" >"$repo/.ota-probe/target"; fi
  echo "== $name (ota $version) =="
  (
    echo "ota version: $version"
    echo "ota-verify: $("$OTA_VERIFY" --version 2>/dev/null || echo "(no --version)")"
    echo "runc: $(runc --version | head -n1)"
    echo "kernel: $(uname -r)"
    echo "trust root: $trust_id"
  ) >"$evid/versions.txt"
  pushd "$repo" >/dev/null || die "cd $repo"
  fn=example_${name//-/_}
  "$fn"
  popd >/dev/null || true
  echo "$name: $(grep -c '^PASS' "$checks") passed, $ex_fail failed, $(grep -c '^TODO' "$checks") todo"
done
if [ -n "$listener" ]; then
  evid=$out; checks=$out/checks.txt; : >"$checks"; : >"$out/log.txt"
  check "host listener on $host_ip:$port saw no connection from any sandbox" kill -0 "$listener"
fi
echo "evidence: $out"
if [ "$total_fail" -ne 0 ]; then
  echo "examples: $total_fail check(s) FAILED" >&2
  exit 1
fi
echo "examples: all checks passed"
