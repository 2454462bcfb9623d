#!/usr/bin/env bash
# ota validate / tasks / workflows / policy show / run|up --dry-run, end to end.
set -u
OTA=${OTA:?}
SRC=${OTA_SOURCE_DIR:?}
EX=$SRC/vectors/ota-examples
PV=$SRC/vectors/policy
fails=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

check() { # description, then a command that must succeed
	local d=$1
	shift
	if "$@"; then echo "ok   $d"; else echo "FAIL $d"; fails=$((fails + 1)); fi
}
rc_of() { "$@" >"$T/out" 2>"$T/err"; echo $?; }

# every upstream example validates (text and JSON)
n=0
while IFS= read -r f; do
	n=$((n + 1))
	r=$(rc_of "$OTA" validate -f "$f" --json)
	if [ "$r" != 0 ] || [ "$(jq -r .ok "$T/out")" != true ]; then
		echo "FAIL validate $f: $(cat "$T/err")"
		fails=$((fails + 1))
	fi
done < <(find "$EX" -name 'ota*.yaml' | sort)
check "validated $n upstream examples" test "$n" -ge 80

# invalid contract: exit 1, stable code, file:line:col
printf 'version: 1\nproject: {name: x}\ntasks:\n  a: {run: x}\n  a: {run: y}\n' >"$T/dup.yaml"
check "duplicate key exits 1" test "$(rc_of "$OTA" validate -f "$T/dup.yaml" --json)" = 1
check "duplicate key code" test "$(jq -r .code "$T/out")" = yaml_duplicate_key
check "duplicate key position" grep -q "dup.yaml:5:3" "$T/err"
printf 'version: 1\nproject: {name: x}\ntasks:\n  a:\n    run: x\n    runtime_boundary: {filesystem: {writable_paths: [../up]}}\n' >"$T/esc.yaml"
check "path escape exits 1" test "$(rc_of "$OTA" validate -f "$T/esc.yaml")" = 1
check "path escape named" grep -q "policy_path_escape: .*esc.yaml:6:" "$T/err"
check "missing file exits 2" test "$(rc_of "$OTA" validate -f "$T/none.yaml")" = 2
check "unknown option exits 2" test "$(rc_of "$OTA" validate --bogus)" = 2

# discovery JSON exposes the canonical compiled policy
check "tasks --json" test "$(rc_of "$OTA" tasks -f "$PV/base.yaml" --json)" = 0
check "tasks carry canonical policy" test "$(jq '[.tasks[] | .canonical_policy.identity | test("^sha256:[0-9a-f]{64}$")] | all' "$T/out")" = true
check "tasks list all three" test "$(jq '.tasks | length' "$T/out")" = 3
SAFE=$EX/reference/safe-agent-execution/ota.yaml
check "closure-wide agent posture" test "$("$OTA" tasks -f "$SAFE" --json | jq -c '[.tasks[] | [.name, .effective_safe_for_agent]]')" = '[["verify",true],["publish",false]]'
check "workflows --json" test "$(rc_of "$OTA" workflows -f "$PV/base.yaml" --json)" = 0
check "workflow default" test "$(jq -r .default "$T/out")" = ci
check "workflow segments in phase order" test "$(jq -r '[.workflows[0].canonical_policy.segments[].phase] | join(",")' "$T/out")" = "setup,run,hook"

# identity: reformatting keeps it, platform changes it
id() { "$OTA" policy show "$@" --no-org-policy --json | jq -r .canonical_policy_identity; }
a=$(id test -f "$PV/base.yaml")
b=$(id test -f "$PV/reformatted.yaml")
c=$(id test -f "$PV/platform-arm64.yaml")
check "reformatted contract: same canonical identity" test "$a" = "$b"
check "platform change: new identity" test "$a" != "$c"
check "golden identity" test "$a" = "$(jq -r '."task:test"' "$PV/expected.json")"

# overlays: order-independent, bound into the effective identity, no widening
e1=$("$OTA" policy show test -f "$PV/base.yaml" --no-org-policy --overlay "$PV/org-narrow.yaml" --overlay "$PV/overlay-deny.yaml" --json | jq -r .effective_policy_identity)
e2=$("$OTA" policy show test -f "$PV/base.yaml" --no-org-policy --overlay "$PV/overlay-deny.yaml" --overlay "$PV/org-narrow.yaml" --json | jq -r .effective_policy_identity)
e0=$("$OTA" policy show test -f "$PV/base.yaml" --no-org-policy --json | jq -r .effective_policy_identity)
check "overlay order does not matter" test "$e1" = "$e2"
check "overlays change the effective identity" test "$e1" != "$e0"
check "widening overlay exits 1" test "$(rc_of "$OTA" policy show test -f "$PV/base.yaml" --overlay "$PV/overlay-widen.yaml" --json)" = 1
check "widening overlay code" test "$(jq -r .code "$T/out")" = policy_overlay_widens
# org policy found beside the contract
mkdir -p "$T/repo/.ota"
cp "$PV/base.yaml" "$T/repo/ota.yaml"
cp "$PV/org-narrow.yaml" "$T/repo/.ota/org-policy.yaml"
check "org policy picked up" test "$("$OTA" policy show test -f "$T/repo/ota.yaml" --json | jq '.effective_policy.restriction_overlay_identities | length')" = 1
check "org policy narrows writable" test "$("$OTA" policy show test -f "$T/repo/ota.yaml" --json | jq -r '.effective_policy.segments[0].runtime_boundary.filesystem.writable_paths | join(",")')" = "build,out/reports"

# --native-platform: the identity a run on another machine has, for a gate's
# --require-effective computed elsewhere; only where the contract leaves the
# platform to the host (a native lane), never over a declared one
printf 'version: 1\nproject: {name: np}\nexecution:\n  supported: [native]\ntasks:\n  build:\n    run: make\n' >"$T/np.yaml"
ni() { "$OTA" policy show "$@" --no-org-policy --json | jq -r .effective_policy_identity; }
n_amd=$(ni build -f "$T/np.yaml" --native-platform linux/amd64)
n_arm=$(ni build -f "$T/np.yaml" --native-platform linux/arm64)
n_x86=$(ni build -f "$T/np.yaml" --native-platform linux/x86_64)
check "native lane: another native platform, another identity" test "$n_amd" != "$n_arm"
check "native lane: x86_64 is amd64" test "$n_amd" = "$n_x86"
check "native lane: the platform is the one given" test "$("$OTA" policy show build -f "$T/np.yaml" --no-org-policy --native-platform linux/arm64 --json | jq -r '.effective_policy.target_platform.architecture')" = arm64
check "declared platform: --native-platform changes nothing" test "$(ni test -f "$PV/base.yaml" --native-platform linux/arm64)" = "$e0"
check "bad --native-platform exits 2" test "$(rc_of "$OTA" policy show build -f "$T/np.yaml" --native-platform bogus --json)" = 2
check "bad --native-platform code" test "$(jq -r .code "$T/out")" = policy_platform_invalid
check "--native-platform twice exits 2" test "$(rc_of "$OTA" policy show build -f "$T/np.yaml" --native-platform linux/amd64 --native-platform linux/arm64)" = 2
check "--native-platform is policy show's only" test "$(rc_of "$OTA" validate -f "$T/np.yaml" --native-platform linux/amd64)" = 2

# a task as a workflow selects it
check "policy show TASK --workflow W" test "$("$OTA" policy show test --workflow ci -f "$PV/base.yaml" --json | jq -r '.selected_segment.effective.id')" = task:test
check "task outside the workflow closure exits 1" test "$(rc_of "$OTA" policy show nope --workflow ci -f "$PV/base.yaml" --json)" = 1

# dry-run admission
OCI=$EX/reference/enforced-oci-sandbox/ota.yaml
if [ "$(uname -m)" != x86_64 ]; then
	# the example declares linux/amd64 and oci_local never emulates
	check "foreign platform refused" test "$(rc_of "$OTA" run verify --agent --dry-run --json -f "$OCI")" = 1
	check "refused on execution.target_platform" test "$(jq -r '[.sandbox_admission.refusals[].control] | join(",")' "$T/out")" = execution.target_platform
	echo "$fails failure(s)"
	[ "$fails" = 0 ]
	exit
fi
check "agent run auto-resolves oci_local" test "$(rc_of "$OTA" run verify --agent --dry-run --json -f "$OCI")" = 0
check "admitted decision" test "$(jq -r .sandbox_admission.decision "$T/out")" = admitted
check "automatic resolution" test "$(jq -r .sandbox_admission.resolution "$T/out")" = automatic
check "execution not started" test "$(jq -r .execution_started "$T/out")" = false
check "no provider name in canonical policy" test "$(jq '.sandbox_admission.canonical_policy | tostring | contains("oci_local")' "$T/out")" = false
check "runner options accepted by the dry run" test "$(rc_of "$OTA" run verify --agent --dry-run --runtime crun --timeout 5 --no-archive --json -f "$OCI")" = 0
check "up --workflow admitted" test "$(rc_of "$OTA" up --workflow verify --agent --dry-run --sandbox-target oci_local --json -f "$OCI")" = 0
check "human run not agent-safe" test "$("$OTA" run verify --dry-run --sandbox-target oci_local --json -f "$OCI" | jq -r .sandbox_admission.agent_safe)" = false
RB=$EX/reference/runtime-boundary/ota.yaml
check "native targeted-egress lane refused" test "$(rc_of "$OTA" run verify --agent --dry-run --sandbox-target oci_local --json -f "$RB")" = 1
check "refusal controls" test "$(jq -r '[.sandbox_admission.refusals[].control] | sort | join(",")' "$T/out")" = "execution.backend,execution.lifecycle,execution.target_platform,network.target_allowlist"
check "refusal shape" test "$(jq '[.sandbox_admission.refusals[] | has("segment_id") and has("control") and has("required") and has("capability") and has("reason")] | all' "$T/out")" = true
check "obligation kept apart" test "$(jq -r '.sandbox_admission.application_obligations[0].evidence' "$T/out")" = not_proved
SA=$EX/reference/safe-agent-execution/ota.yaml
check "unsafe task refused in agent mode" test "$(rc_of "$OTA" run publish --agent --dry-run --json -f "$SA")" = 1
check "agent refusal before sandbox" test "$(jq -r .sandbox_admission.kind "$T/out")" = agent_unsafe_closure

# a real run refused before the runner starts says why on stdout with --json,
# as the dry run does (it printed nothing there: contract, overlay and policy
# errors went to stderr only), and an unknown --sandbox-target gets the dry
# run's decision (it was oci_policy_unsupported, with no JSON)
mkdir -p "$T/rr"
cp "$PV/base.yaml" "$T/rr/ota.yaml"
check "real run, widening overlay exits 1" test "$(rc_of "$OTA" run test --agent --no-archive --no-org-policy --overlay "$PV/overlay-widen.yaml" --json -f "$T/rr/ota.yaml")" = 1
check "real run, widening overlay named on stdout" test "$(jq -r '[.ok, .code, .command, .task, .execution_started] | map(tostring) | join(",")' "$T/out")" = "false,policy_overlay_widens,run,test,false"
cp "$T/out" "$T/f.json"
printf 'version: 1\nproject: {name: x}\ntasks:\n  a:\n    run: x\n    runtime_boundary: {filesystem: {writable_paths: [../up]}}\n' >"$T/rr/esc.yaml"
check "real run, invalid contract exits 1" test "$(rc_of "$OTA" run a --agent --no-archive --json -f "$T/rr/esc.yaml")" = 1
check "real run, invalid contract named on stdout" test "$(jq -r '.code' "$T/out")" = policy_path_escape
check "up, unknown workflow exits 1" test "$(rc_of "$OTA" up --workflow nope --agent --no-archive --no-org-policy --json -f "$T/rr/ota.yaml")" = 1
check "up, unknown workflow named on stdout" test "$(jq -r '[.ok, .command, .workflow, (.code | length > 0)] | map(tostring) | join(",")' "$T/out")" = "false,up,nope,true"
for cmd in "run verify --agent --dry-run" "run verify --agent"; do
	# shellcheck disable=SC2086
	rc_of "$OTA" $cmd --sandbox-target bogus --no-archive --json -f "$OCI" >/dev/null
	check "$cmd --sandbox-target bogus: sandbox_target_unknown" test "$(jq -r .sandbox_admission.kind "$T/out")" = sandbox_target_unknown
done
check "real run refusal names command and task" test "$(jq -r '[.command, .task, .dry_run, .execution_started] | map(tostring) | join(",")' "$T/out")" = "run,verify,false,false"

# JSON outputs against docs/schemas (when python3-jsonschema is installed)
if python3 -c 'import jsonschema' 2>/dev/null; then
	"$OTA" run verify --agent --dry-run --json -f "$RB" >"$T/a.json" 2>/dev/null
	"$OTA" run verify --agent --dry-run --json -f "$OCI" >"$T/b.json" 2>/dev/null
	"$OTA" policy show test -f "$PV/base.yaml" --overlay "$PV/org-narrow.yaml" --json >"$T/c.json"
	"$OTA" tasks -f "$PV/base.yaml" --json >"$T/d.json"
	"$OTA" validate -f "$T/dup.yaml" --json >"$T/e.json" 2>/dev/null
	check "outputs match their JSON Schemas" python3 - "$SRC/docs/schemas" "$T" <<'PY'
import json, sys, jsonschema
d, t = sys.argv[1], sys.argv[2]
for schema, out in [("policy-dry-run", "a"), ("policy-dry-run", "b"), ("policy-show", "c"),
                    ("policy-lanes", "d"), ("policy-error", "e"), ("policy-error", "f")]:
    jsonschema.validate(json.load(open(f"{t}/{out}.json")), json.load(open(f"{d}/{schema}.schema.json")))
PY
else
	echo "skip JSON Schema checks (python3-jsonschema not installed)"
fi

# an option of another command is a usage error (exit 2), never silently
# ignored (ota tasks --overlay /nonexistent exited 0); with --json the usage
# error is one policy-error document (code usage, where = the argument)
usage_json() { # want_where, then the ota arguments
	local w=$1
	shift
	# jq -e exits 0 on an empty input: the document must be there
	[ "$(rc_of "$OTA" "$@" --json)" = 2 ] && [ -s "$T/out" ] &&
		jq -e --arg w "$w" '.ok == false and .code == "usage" and .where == $w
			and (.command | type) == "string" and (.path | type) == "string"' "$T/out" >/dev/null
}
check "tasks --overlay is usage" usage_json --overlay tasks -f "$PV/base.yaml" --overlay /nonexistent
check "workflows --workflow is usage" usage_json --workflow workflows -f "$PV/base.yaml" --workflow x
check "tasks with a stray argument is usage" usage_json stray tasks -f "$PV/base.yaml" stray
check "validate --agent is usage" usage_json --agent validate -f "$PV/base.yaml" --agent
check "validate --descriptor is usage" usage_json --descriptor validate -f "$PV/base.yaml" --descriptor x
check "policy show --dry-run is usage" usage_json --dry-run policy show build -f "$PV/base.yaml" --dry-run
check "policy show without a lane is usage" usage_json "policy show" policy show -f "$PV/base.yaml"
check "policy frob is usage" usage_json frob policy frob
check "an unknown option is usage" usage_json --frob validate -f "$PV/base.yaml" --frob
# (--json first: appended after --overlay it would be taken for the overlay's path,
# an io_error whose empty --json output the check used to accept)
usage_json_first() { # want_where, command, then its arguments
	local w=$1 c=$2
	shift 2
	[ "$(rc_of "$OTA" "$c" --json "$@")" = 2 ] && [ -s "$T/out" ] &&
		jq -e --arg w "$w" '.ok == false and .code == "usage" and .where == $w' "$T/out" >/dev/null
}
check "--overlay without its value is usage" usage_json_first --overlay validate -f "$PV/base.yaml" --overlay
# the real run's usage errors print the same document (they printed nothing on stdout)
check "real run without a lane is usage" usage_json run run --agent -f "$PV/base.yaml"
check "real run without --agent or a target is usage" usage_json run run build -f "$PV/base.yaml"
check "real run --descriptor is usage" usage_json run run build --agent --descriptor x -f "$PV/base.yaml"
check "real run, a bad --timeout is usage" usage_json run run build --agent --timeout x -f "$PV/base.yaml"
check "up without --workflow is usage" usage_json up up --agent -f "$PV/base.yaml"
check "usage without --json prints nothing on stdout" \
	test "$(rc_of "$OTA" tasks -f "$PV/base.yaml" --overlay x)" = 2 -a ! -s "$T/out"
check "validate still takes --overlay and --no-org-policy" \
	test "$(rc_of "$OTA" validate -f "$PV/base.yaml" --no-org-policy --json)" = 0
if python3 -c 'import jsonschema' 2>/dev/null; then
	rc_of "$OTA" tasks -f "$PV/base.yaml" --overlay x --json >/dev/null
	check "the usage document matches policy-error.schema.json" python3 -c '
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' \
		"$T/out" "$SRC/docs/schemas/policy-error.schema.json"
fi

# the text dry run names the target when the admission carries no message
# (an explicit --sandbox-target printed "admitted: " and nothing else)
rc_of "$OTA" run build --sandbox-target oci_local --dry-run -f "$PV/base.yaml" >/dev/null
check "text dry run with an explicit target names it" grep -qx 'admitted: oci_local (explicit)' "$T/out"

echo "$fails failure(s)"
[ "$fails" = 0 ]
