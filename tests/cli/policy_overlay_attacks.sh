#!/usr/bin/env bash
# Restriction overlays only narrow (third adversarial audit, docs/policy.md
# sections 4-6): overlays that try to widen through path aliasing, ordering,
# null or empty lists, writable carve-outs inside protected paths, duplicate
# keys, anchors, merge keys, tags, other spellings of field names or values,
# and a second YAML document; each refusal by its stable name, each
# accepted spelling by the effective boundary it gives; and the effective
# policy identity moves whenever the effective boundary does, and only then
# for the same overlay bytes. No root, no runtime: `ota policy show` only.
set -u
OTA=${OTA:?}
command -v jq >/dev/null || { echo "FAIL jq missing"; exit 1; }
fails=0
T=$(mktemp -d /tmp/ota-overlay-attacks-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

cat >"$T/ota.yaml" <<'EOF'
version: 1
project: {name: p}
execution:
  supported: [container]
  lifecycle: ephemeral
  backends: {container: {image: "debian:bookworm-slim", platform: linux/amd64}}
tasks:
  build:
    run: make
    safe_for_agent: true
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, .github]}
      network: {default: deny}
EOF
# [root mode, writable, protected, network default] of build's effective segment
eff() { "$OTA" policy show build -f "$T/ota.yaml" --no-org-policy "$@" --json 2>"$T/err" |
	jq -c '.effective_policy.segments[0].runtime_boundary | [.filesystem.repo_root_mode, .filesystem.writable_paths, .filesystem.protected_paths, .network.default]'; }
ident() { "$OTA" policy show build -f "$T/ota.yaml" --no-org-policy "$@" --json 2>/dev/null | jq -r .effective_policy_identity; }
BASE='["read_only",["out"],[".github","ota.yaml"],"deny"]'
# refused NAME YAML CODE: the overlay is refused (exit 1) with CODE
refused() {
	printf '%s\n' "$2" >"$T/o.yaml"
	"$OTA" policy show build -f "$T/ota.yaml" --no-org-policy --overlay "$T/o.yaml" --json >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -q "$3" "$T/err" "$T/out"; then pass "$1: $3"; else
		bad "$1: rc=$rc, want $3"; sed 's/^/  | /' "$T/err"; fi
}
# check_control CONTROL: the last refusal's JSON names the control it concerns
check_control() {
	local got
	got=$(jq -r '.control' "$T/out" 2>/dev/null)
	[ "$got" = "$1" ] && pass "  names control $1" || bad "  control '$got', want $1"
}
# gives NAME YAML WANT: the overlay is taken and the effective boundary is WANT
gives() {
	printf '%s\n' "$2" >"$T/o.yaml"
	local got
	got=$(eff --overlay "$T/o.yaml")
	[ "$got" = "$3" ] && pass "$1: $got" || { bad "$1: $got, want $3"; sed 's/^/  | /' "$T/err"; }
}

[ "$(eff)" = "$BASE" ] && pass "canonical $BASE" || bad "canonical $(eff)"

# ---- aliasing ----
refused "writable out/../.github" 'policies: {sandbox: {filesystem: {writable_paths: [out/../.github]}}}' policy_path_escape
refused "writable ../x" 'policies: {sandbox: {filesystem: {writable_paths: [../x]}}}' policy_path_escape
refused "writable /tmp" 'policies: {sandbox: {filesystem: {writable_paths: [/tmp]}}}' policy_path_absolute
refused "writable c:/x" 'policies: {sandbox: {filesystem: {writable_paths: ["c:/x"]}}}' policy_path_absolute
refused "writable ~/x" 'policies: {sandbox: {filesystem: {writable_paths: ["~/x"]}}}' policy_path_absolute
refused "writable out\\..\\.github" 'policies: {sandbox: {filesystem: {writable_paths: ["out\\..\\.github"]}}}' policy_path_invalid
refused "writable ." 'policies: {sandbox: {filesystem: {writable_paths: ["."]}}}' policy_path_invalid
refused "writable ./" 'policies: {sandbox: {filesystem: {writable_paths: ["./"]}}}' policy_path_invalid
refused "writable with a NUL" 'policies: {sandbox: {filesystem: {writable_paths: ["out\0x"]}}}' yaml_control_character
refused "writable with a newline" 'policies: {sandbox: {filesystem: {writable_paths: ["out\nx"]}}}' yaml_control_character
gives "writable ./out//sub/ (one spelling of out/sub)" 'policies: {sandbox: {filesystem: {writable_paths: ["./out//sub/"]}}}' '["read_only",["out/sub"],[".github","ota.yaml"],"deny"]'
gives "writable OUT (another name, case-sensitive): nothing writable" 'policies: {sandbox: {filesystem: {writable_paths: [OUT]}}}' '["read_only",[],[".github","ota.yaml"],"deny"]'
gives "writable o\\u0075t (the same bytes as out)" 'policies: {sandbox: {filesystem: {writable_paths: ["o\u0075t"]}}}' "$BASE"
# NFD "e" + U+0301 and NFC U+00E9 are two names (bytes): neither reaches out
gives "writable NFD vs NFC names: nothing writable" 'policies: {sandbox: {filesystem: {writable_paths: ["caf\u0065\u0301", "caf\u00e9"]}}}' '["read_only",[],[".github","ota.yaml"],"deny"]'

# ---- carve-outs inside protection, empty and null lists ----
gives "writable .github/workflows (inside protected, outside out)" 'policies: {sandbox: {filesystem: {writable_paths: [.github/workflows]}}}' '["read_only",[],[".github","ota.yaml"],"deny"]'
gives "protect out/keys under writable out: protection added" 'policies: {sandbox: {filesystem: {protected_paths: [out/keys]}}}' '["read_only",["out"],[".github","ota.yaml","out/keys"],"deny"]'
gives "writable [] removes every write" 'policies: {sandbox: {filesystem: {writable_paths: []}}}' '["read_only",[],[".github","ota.yaml"],"deny"]'
gives "writable null is neutral, never all" 'policies: {sandbox: {filesystem: {writable_paths: null}}}' "$BASE"
gives "writable ~ is neutral, never all" 'policies: {sandbox: {filesystem: {writable_paths: ~}}}' "$BASE"
gives "protected [] removes no protection" 'policies: {sandbox: {filesystem: {protected_paths: []}}}' "$BASE"
gives "filesystem null is neutral" 'policies: {sandbox: {filesystem: null}}' "$BASE"
gives "network null is neutral" 'policies: {sandbox: {network: null}}' "$BASE"
gives "network default null keeps deny" 'policies: {sandbox: {network: {default: null}}}' "$BASE"
refused "root writable over read_only" 'policies: {sandbox: {filesystem: {repo_root_mode: writable}}}' policy_overlay_widens
check_control filesystem.repo_root_mode
refused "network allow over deny" 'policies: {sandbox: {network: {default: allow}}}' policy_overlay_widens
check_control network.default

# ---- YAML: duplicate keys, anchors, merge keys, tags, documents ----
refused "filesystem twice" $'policies:\n  sandbox:\n    filesystem: {writable_paths: []}\n    filesystem: {writable_paths: [out]}' yaml_duplicate_key
refused "writable_paths twice, one quoted" 'policies: {sandbox: {filesystem: {writable_paths: [], "writable_paths": [out]}}}' yaml_duplicate_key
refused "writable_paths twice, one escaped" 'policies: {sandbox: {filesystem: {writable_paths: [], "writable\u005fpaths": [out]}}}' yaml_duplicate_key
refused "merge key <<" $'metadata: {a: &a {repo_root_mode: writable}}\npolicies:\n  sandbox:\n    filesystem: {<<: *a}' yaml_merge_key_refused
refused "quoted \"<<\" is just an unknown key" 'policies: {sandbox: {filesystem: {"<<": {writable_paths: [out]}}}}' contract_unknown_key
refused "an alias of a widening value" $'metadata: {w: &w writable}\npolicies:\n  sandbox:\n    filesystem: {repo_root_mode: *w}' policy_overlay_widens
refused "!!null on a list" 'policies: {sandbox: {filesystem: {writable_paths: !!null ""}}}' contract_type
refused "!!str null on a list" 'policies: {sandbox: {filesystem: {writable_paths: !!str null}}}' contract_type
gives "a local tag changes nothing" 'policies: {sandbox: {filesystem: {writable_paths: !custom [out/sub]}}}' '["read_only",["out/sub"],[".github","ota.yaml"],"deny"]'
refused "a second document" $'policies: {sandbox: {network: {default: deny}}}\n---\npolicies: {sandbox: {network: {default: allow}}}' yaml_multiple_documents

# ---- other spellings ----
refused "READ_ONLY" 'policies: {sandbox: {filesystem: {repo_root_mode: READ_ONLY}}}' contract_bad_value
refused "Allow" 'policies: {sandbox: {network: {default: Allow}}}' contract_bad_value
refused "writable (not a field)" 'policies: {sandbox: {filesystem: {writable: [out]}}}' contract_unknown_key
refused "writablePaths (camelCase)" 'policies: {sandbox: {filesystem: {writablePaths: [out]}}}' contract_unknown_key
refused "an unknown sandbox family" 'policies: {sandbox: {filesystem: {}, process: {privileged: true}}}' contract_unknown_key

# ---- ordering: narrow then re-widen, in both orders ----
printf 'policies: {sandbox: {filesystem: {writable_paths: [out/sub]}}}\n' >"$T/narrow.yaml"
printf 'policies: {sandbox: {filesystem: {writable_paths: [out]}}}\n' >"$T/wide.yaml"
printf 'policies: {sandbox: {filesystem: {writable_paths: [".//out/sub/"]}}}\n' >"$T/narrow2.yaml"
a=$(eff --overlay "$T/narrow.yaml" --overlay "$T/wide.yaml")
b=$(eff --overlay "$T/wide.yaml" --overlay "$T/narrow.yaml")
[ "$a" = "$b" ] && [ "$a" = '["read_only",["out/sub"],[".github","ota.yaml"],"deny"]' ] &&
	pass "narrow then [out]: still out/sub, either order" || bad "ordering: $a / $b"
ia=$(ident --overlay "$T/narrow.yaml" --overlay "$T/wide.yaml")
ib=$(ident --overlay "$T/wide.yaml" --overlay "$T/narrow.yaml")
[ -n "$ia" ] && [ "$ia" = "$ib" ] && pass "same effective identity in both orders" || bad "identity depends on order"

# ---- the effective identity moves with the effective policy ----
i0=$(ident)
iw=$(ident --overlay "$T/wide.yaml")
in=$(ident --overlay "$T/narrow.yaml")
in2=$(ident --overlay "$T/narrow2.yaml")
printf 'policies: {sandbox: {filesystem: {writable_paths: []}}}\n' >"$T/none.yaml"
ie=$(ident --overlay "$T/none.yaml")
[ "$(printf '%s\n' "$i0" "$iw" "$in" "$ie" | sort -u | wc -l)" -eq 4 ] &&
	pass "identity differs: no overlay, [out], [out/sub], []" || bad "identities collide: $i0 $iw $in $ie"
[ "$in" != "$in2" ] && pass "another authority text (./out//sub/) is another overlay identity" || bad "authority text not bound"
# reformatting one overlay file keeps every identity
printf 'policies:\n  sandbox:\n    filesystem:\n      writable_paths:\n        - out/sub   # comment\n' >"$T/narrow_block.yaml"
[ "$(ident --overlay "$T/narrow_block.yaml")" = "$in" ] && pass "the same overlay reformatted: same identity" || bad "formatting moved the identity"

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
