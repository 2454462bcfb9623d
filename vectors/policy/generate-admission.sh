#!/usr/bin/env bash
# Regenerates vectors/policy/admission-oci_local.json: for every task and
# workflow lane of every upstream example contract (vectors/ota-examples,
# files ota*.yaml), the oci_local dry-run admission of the built CLI, both as
# a human run with --sandbox-target oci_local and as an agent run (automatic
# resolution): exit status, decision, refusal kind and the sorted set of
# refused controls. No org policy is read. The vectors pin linux/amd64, so
# run it on an amd64 host.
#   vectors/policy/generate-admission.sh BUILD_DIR
set -euo pipefail
b=${1:?build dir with cli/ota}
ota=$b/cli/ota
d=$(cd "$(dirname "$0")" && pwd)
ex=$(cd "$d/../ota-examples" && pwd)
case $(uname -m) in x86_64 | amd64) ;; *)
	echo "generate-admission.sh: the vectors pin linux/amd64; this host is $(uname -m)" >&2
	exit 2
	;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/all.jsonl"
entry() { # file key exit-status dry-run-json
	jq -c --arg f "$1" --arg k "$2" --argjson x "$3" '
		.sandbox_admission as $a
		| {file: $f, key: $k, value: ({decision: $a.decision, exit: $x}
			+ (if $a.kind == null then {} else {kind: $a.kind} end)
			+ ([$a.refusals[].control] | unique
			   | if length == 0 then {} else {refused_controls: .} end))}' "$4" >>"$tmp/all.jsonl"
}
while IFS= read -r f; do
	rel=${f#"$ex"/}
	for kind in task workflow; do
		if [ $kind = task ]; then
			"$ota" tasks -f "$f" --json >"$tmp/lanes.json" || true
			jq -r '.tasks[].name' "$tmp/lanes.json" >"$tmp/names"
		else
			"$ota" workflows -f "$f" --json >"$tmp/lanes.json" || true
			jq -r '.workflows[].name' "$tmp/lanes.json" >"$tmp/names"
		fi
		while IFS= read -r n; do
			if [ $kind = task ]; then sel=(run "$n"); else sel=(up --workflow "$n"); fi
			for mode in "--agent" "--sandbox-target oci_local"; do
				# shellcheck disable=SC2086
				x=0
				"$ota" "${sel[@]}" $mode --dry-run --no-org-policy --json -f "$f" \
					>"$tmp/out.json" 2>/dev/null || x=$?
				entry "$rel" "$kind:$n $mode" "$x" "$tmp/out.json"
			done
		done <"$tmp/names"
	done
done < <(find "$ex" -name 'ota*.yaml' | LC_ALL=C sort)
python3 - "$tmp/all.jsonl" "$d/admission-oci_local.json" <<'PY'
import json, sys
out = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    out.setdefault(e["file"], {})[e["key"]] = e["value"]
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
PY
echo "vectors/policy/admission-oci_local.json regenerated"
