#!/usr/bin/env bash
# Overlays meet (never widen, never demote, order-free), dry-run and real
# runs share one admission decision, and the contract reader refuses what
# would let names or modes lie. Reproductions of the audit's cases, through
# the CLI. Needs neither root nor an OCI runtime: every real run here is
# refused at admission, before anything is prepared.
set -u
OTA=${OTA:?}
fails=0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
check() { # description, then a command that must succeed
	local d=$1
	shift
	if "$@"; then echo "ok   $d"; else echo "FAIL $d"; fails=$((fails + 1)); fi
}
rc_of() { "$@" >"$T/out" 2>"$T/err"; echo $?; }

EXEC='execution:
  supported: [container]
  lifecycle: ephemeral
  backends: {container: {image: "debian:bookworm-slim", platform: linux/amd64}}'
AMD64=false
case $(uname -m) in x86_64 | amd64) AMD64=true ;; esac

# ---- t8: org read_only + a user writable list: nothing writable, either way ----
mkdir -p "$T/t8/.ota"
cat >"$T/t8/ota.yaml" <<EOF
version: 1
project: {name: t8}
$EXEC
tasks:
  build:
    run: make
    safe_for_agent: true
    runtime_boundary:
      network: {default: deny}
EOF
printf 'policies:\n  sandbox:\n    filesystem: {repo_root_mode: read_only}\n' >"$T/t8/.ota/org-policy.yaml"
printf 'policies:\n  sandbox:\n    filesystem: {writable_paths: [src]}\n' >"$T/t8/user.yaml"
w() { "$OTA" policy show build -f "$T/t8/ota.yaml" "$@" --json | jq -c '.effective_policy.segments[0].runtime_boundary.filesystem.writable_paths'; }
check "org read_only alone: nothing writable" test "$(w)" = '[]'
check "org read_only + user [src]: still nothing writable" test "$(w --overlay "$T/t8/user.yaml")" = '[]'
check "user [src] alone narrows to src" test "$(w --no-org-policy --overlay "$T/t8/user.yaml")" = '["src"]'
# the same, as two overlay files in both orders (the org policy's nonce moves its identity)
for n in 0 1 2 3 4 5; do
	printf 'metadata: {nonce: %s}\npolicies:\n  sandbox:\n    filesystem: {repo_root_mode: read_only}\n' "$n" >"$T/t8/ro$n.yaml"
	a=$("$OTA" policy show build -f "$T/t8/ota.yaml" --no-org-policy --overlay "$T/t8/ro$n.yaml" --overlay "$T/t8/user.yaml" --json | jq -c '[.effective_policy_identity, .effective_policy.segments[0].runtime_boundary.filesystem.writable_paths]')
	b=$("$OTA" policy show build -f "$T/t8/ota.yaml" --no-org-policy --overlay "$T/t8/user.yaml" --overlay "$T/t8/ro$n.yaml" --json | jq -c '[.effective_policy_identity, .effective_policy.segments[0].runtime_boundary.filesystem.writable_paths]')
	check "read_only #$n + [src]: same effective policy in both orders, nothing writable" test "$a" = "$b" -a "$(echo "$a" | jq -c '.[1]')" = '[]'
done

# ---- t7: deny + an added destination: deny without exceptions, either way ----
cat >"$T/t7.yaml" <<EOF
version: 1
project: {name: t7}
$EXEC
tasks:
  build:
    run: make
    runtime_boundary:
      filesystem: {repo_root_mode: read_only}
EOF
printf 'policies:\n  sandbox:\n    network:\n      outbound_targets: [{kind: host, value: exfil.example.net}]\n' >"$T/d.yaml"
for n in 0 1 2 3 4 5; do
	printf 'metadata: {nonce: %s}\npolicies:\n  sandbox:\n    network: {default: deny}\n' "$n" >"$T/c$n.yaml"
	for order in "$T/c$n.yaml $T/d.yaml" "$T/d.yaml $T/c$n.yaml"; do
		set -- $order
		net=$("$OTA" policy show build -f "$T/t7.yaml" --no-org-policy --overlay "$1" --overlay "$2" --json | jq -c '.effective_policy.segments[0].runtime_boundary.network | [.default, .scope, (.outbound_targets | length)]')
		check "deny #$n + destination ($(basename "$1") first): deny, no exception" test "$net" = '["deny","none",0]'
	done
done

# ---- t1: an advisory_only constraint cannot demote an authoritative destination ----
cat >"$T/t1.yaml" <<EOF
version: 1
project: {name: t1}
$EXEC
tasks:
  fetch:
    run: curl https://api.example.com/x
    safe_for_agent: true
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out]}
      network:
        outbound_targets:
          - kind: host
            value: api.example.com
EOF
cat >"$T/demote.yaml" <<'EOF'
policies:
  sandbox:
    network:
      outbound_targets:
        - kind: host
          value: api.example.com
          destination_constraint:
            kind: downstream_host_allowlist
            values: [api.example.com]
            source_posture: non_authoritative
            enforcement: advisory_only
EOF
check "t1 without the overlay: refused" test "$(rc_of "$OTA" run fetch --dry-run --agent --no-org-policy -f "$T/t1.yaml")" = 1
check "t1 demoting overlay: refused" test "$(rc_of "$OTA" run fetch --dry-run --agent --no-org-policy --overlay "$T/demote.yaml" -f "$T/t1.yaml" --json)" = 1
check "t1 demoting overlay: policy_overlay_demotes" test "$(jq -r .code "$T/out")" = policy_overlay_demotes
check "t1 demoting overlay: the control is named" test "$(jq -r .control "$T/out")" = network.target_allowlist

# ---- t3: controls only an overlay adds are evaluated ----
mkdir -p "$T/t3/.ota"
printf 'version: 1\nproject: {name: t3}\nexecution:\n  supported: [native]\ntasks:\n  build:\n    run: make\n    safe_for_agent: true\n' >"$T/t3/ota.yaml"
printf 'policies:\n  sandbox:\n    filesystem: {repo_root_mode: read_only, protected_paths: [.git, ota.yaml]}\n    network: {default: deny}\n' >"$T/t3/.ota/org-policy.yaml"
check "t3 without the org policy: not_required" test "$("$OTA" run build --dry-run --agent --no-org-policy --json -f "$T/t3/ota.yaml" | jq -r .sandbox_admission.decision)" = not_required
check "t3 with the org policy: exit 1" test "$(rc_of "$OTA" run build --dry-run --agent --json -f "$T/t3/ota.yaml")" = 1
check "t3 with the org policy: evaluated and refused" test "$(jq -r '[.sandbox_admission.decision, ([.sandbox_admission.refusals[].control] | index("execution.backend") != null)] | @tsv' "$T/out")" = "refused	true"

# ---- t2: what the runner cannot apply, the dry run refuses; the real run the same way ----
cat >"$T/t2.yaml" <<EOF
version: 1
project: {name: t2}
$EXEC
tasks:
  net:
    run: curl https://example.com
    safe_for_agent: true
    runtime_boundary:
      filesystem: {repo_root_mode: read_only}
      network: {default: allow}
  nonet:
    run: curl https://example.com
    safe_for_agent: true
    runtime_boundary:
      filesystem: {repo_root_mode: read_only}
EOF
for lane in net nonet; do
	check "t2 $lane: dry run refused" test "$(rc_of "$OTA" run $lane --dry-run --agent --no-org-policy --json -f "$T/t2.yaml")" = 1
	check "t2 $lane: refused on network.default" test "$(jq -r '[.sandbox_admission.refusals[].control] | index("network.default") != null' "$T/out")" = true
	check "t2 $lane: real run refused at admission" test "$(rc_of "$OTA" run $lane --agent --no-org-policy --no-archive --lease-db "$T/lease.db" -f "$T/t2.yaml")" = 1
	check "t2 $lane: real run prepared nothing" grep -q "ota: refused:" "$T/err"
done

# a plain agent admission (not_required) is the same decision in both runs; this
# build executes lanes only inside oci_local, so the real run refuses, saying so
printf 'version: 1\nproject: {name: plain}\ntasks:\n  plain: {run: x, safe_for_agent: true}\n' >"$T/plain.yaml"
check "plain lane: dry run not_required" test "$("$OTA" run plain --dry-run --agent --no-org-policy --json -f "$T/plain.yaml" | jq -r .sandbox_admission.decision)" = not_required
check "plain lane: real run refused before anything" test "$(rc_of "$OTA" run plain --agent --no-org-policy --no-archive --lease-db "$T/lease.db" -f "$T/plain.yaml")" = 1
check "plain lane: the refusal names the decision" grep -q "admission decision not_required" "$T/err"

# ---- t10: a native-mode task is refused by oci_local, never re-moded ----
cat >"$T/t10.yaml" <<'EOF'
version: 1
project: {name: t10}
execution:
  supported: [container, native]
  preferred: container
  lifecycle: ephemeral
  default_context: box
  backends: {container: {image: "debian:bookworm-slim", platform: linux/amd64}}
  contexts:
    box: {backend: container, lifecycle: ephemeral}
tasks:
  dev:
    safe_for_agent: true
    execution:
      default_mode: native
      modes:
        native:
          run: ./install-on-host.sh
    runtime_boundary:
      filesystem: {repo_root_mode: read_only}
      network: {default: deny}
EOF
check "t10: dry run refused" test "$(rc_of "$OTA" run dev --dry-run --agent --json -f "$T/t10.yaml")" = 1
check "t10: the segment stays native" test "$(jq -r '.sandbox_admission.canonical_policy.segments[0].execution.backend' "$T/out")" = native
check "t10: refused on execution.backend" test "$(jq -r '[.sandbox_admission.refusals[].control] | index("execution.backend") != null' "$T/out")" = true
check "t10: real run refused too" test "$(rc_of "$OTA" run dev --agent --sandbox-target oci_local --no-archive --lease-db "$T/lease.db" -f "$T/t10.yaml")" = 1

# ---- t5: a NUL in a name cannot shadow another task ----
printf 'version: 1\nproject: {name: t5}\ntasks:\n  "verify\\0":\n    run: evil\n  verify:\n    run: ok\n' >"$T/t5.yaml"
check "t5: tasks refused" test "$(rc_of "$OTA" tasks --json -f "$T/t5.yaml")" = 1
check "t5: yaml_control_character" test "$(jq -r .code "$T/out")" = yaml_control_character
check "t5: named position" grep -q "t5.yaml:4:3" "$T/err"

# ---- t4: a name over the cap is refused, not truncated ----
long=$(printf 'x%.0s' $(seq 1 300))
printf 'version: 1\nproject: {name: t4}\ntasks:\n  %s:\n    run: x\n' "$long" >"$T/t4.yaml"
check "t4: long name refused" test "$(rc_of "$OTA" validate --json -f "$T/t4.yaml")" = 1
check "t4: contract_name_too_long" test "$(jq -r .code "$T/out")" = contract_name_too_long

# ---- minor: workflow services, extends cycles, non-string scalars ----
printf 'version: 1\nproject: {name: t9}\ntasks:\n  t: {run: x}\nworkflows:\n  ci:\n    services: [db]\n    run: {task: t}\n' >"$T/t9.yaml"
check "workflow services list refused" test "$(rc_of "$OTA" validate --json -f "$T/t9.yaml")" = 1
check "workflow services: contract_type" test "$(jq -r .code "$T/out")" = contract_type
printf 'version: 1\nproject: {name: t13}\nexecution:\n  contexts:\n    a: {extends: b}\n    b: {extends: a}\n' >"$T/t13.yaml"
check "extends cycle refused" test "$(rc_of "$OTA" validate --json -f "$T/t13.yaml")" = 1
check "extends cycle: policy_cycle" test "$(jq -r .code "$T/out")" = policy_cycle
printf 'version: 1\nproject: {name: s}\ntasks:\n  a: {command: {exe: srv, args: [8080]}}\n' >"$T/int.yaml"
check "integer argument refused" test "$(rc_of "$OTA" validate --json -f "$T/int.yaml")" = 1
check "integer argument: contract_type" test "$(jq -r .code "$T/out")" = contract_type

# ---- --org-policy with --no-org-policy: one refusal for dry and real runs ----
OCI=${OTA_SOURCE_DIR:?}/vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml
check "policy show: contradictory org flags exit 2" test "$(rc_of "$OTA" policy show verify -f "$OCI" --org-policy "$T/t8/.ota/org-policy.yaml" --no-org-policy)" = 2
check "dry run: contradictory org flags exit 2" test "$(rc_of "$OTA" run verify --agent --dry-run -f "$OCI" --org-policy "$T/t8/.ota/org-policy.yaml" --no-org-policy)" = 2
check "real run: contradictory org flags exit 2" test "$(rc_of "$OTA" run verify --agent -f "$OCI" --no-org-policy --org-policy "$T/t8/.ota/org-policy.yaml" --no-archive --lease-db "$T/lease.db")" = 2
check "doctor: contradictory org flags exit 2" test "$(rc_of "$OTA" doctor -f "$OCI" --org-policy "$T/t8/.ota/org-policy.yaml" --no-org-policy)" = 2
check "real run: --descriptor (a dry-run option) exit 2" test "$(rc_of "$OTA" run verify --agent -f "$OCI" --descriptor "$OTA_SOURCE_DIR/policy/descriptors/oci_local.json" --no-archive --lease-db "$T/lease.db")" = 2
check "dry run: --descriptor accepted" test "$(rc_of "$OTA" run verify --agent --dry-run -f "$OCI" --descriptor "$OTA_SOURCE_DIR/policy/descriptors/oci_local.json")" != 2
if $AMD64; then
	check "an explicit org policy applies in dry runs" test "$("$OTA" run verify --agent --dry-run --json -f "$OCI" --org-policy "$T/t8/.ota/org-policy.yaml" | jq '.sandbox_admission.restriction_overlay_identities | length')" = 1
fi

echo "$fails failure(s)"
[ "$fails" = 0 ]
