#!/usr/bin/env bash
# ota(1) EXIT STATUS: an input the operator names on the command line that
# cannot be used is 2, as a missing file is; a FIFO, socket or device there
# (not_regular_file) was exit 1 in `ota` (while every ota-verify subcommand
# exits 2 for it), and a FIFO given as --key blocked the run forever in
# open(2). The repository's own files (the default ./ota.yaml,
# REPO/.ota/org-policy.yaml) are not the operator's argument: a FIFO there
# stays a refusal, 1. Nothing here reaches the OCI runtime.
set -u
OTA=${OTA:?}
SRC=${OTA_SOURCE_DIR:?}
fails=0
T=$(mktemp -d /tmp/ota-named-inputs-XXXXXX)
trap 'rm -rf "$T"' EXIT
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

R=$T/repo
cp -r "$SRC/examples/build-output" "$R"
mkfifo "$T/fifo"
# runner options that keep everything inside $T (never used: every case
# fails on its input before the runtime)
rt=(--runtime-root "$T/rt" --lease-db "$T/leases.db" --state-dir "$T/state" --no-archive)

# expect EXIT CODE DESCRIPTION -- ARGS... (ota ARGS, in the repository, 30 s at most)
expect() {
	local want=$1 code=$2 d=$3
	shift 4
	(cd "$R" && timeout 30 "$OTA" "$@") >"$T/out" 2>"$T/err"
	local rc=$?
	if [ "$rc" -eq "$want" ] && grep -q "ota: $code: " "$T/err"; then
		ok "$d: exit $rc, $code"
	else
		bad "$d: exit $rc (want $want, $code): $(head -c 300 "$T/err")"
	fi
}

for f in "$T/fifo" /dev/null; do
	expect 2 not_regular_file "run -f $f" -- run build --dry-run --agent -f "$f"
	expect 2 not_regular_file "run --overlay $f" -- run build --dry-run --agent --overlay "$f"
	expect 2 not_regular_file "run --org-policy $f" -- run build --dry-run --agent --org-policy "$f"
	expect 2 not_regular_file "run --key $f" -- run build --agent --key "$f" "${rt[@]}"
	expect 2 not_regular_file "run --trust $f" -- run build --agent --trust "$f" "${rt[@]}"
	expect 2 not_regular_file "validate -f $f" -- validate -f "$f"
	expect 2 not_regular_file "validate --overlay $f" -- validate --overlay "$f"
	expect 2 not_regular_file "policy show --overlay $f" -- policy show build --overlay "$f"
done
# the same file as a missing one: 2 (the rule the FIFO now follows)
expect 2 io_error "run -f missing" -- run build --dry-run --agent -f "$T/missing.yaml"
[ ! -e "$T/leases.db" ] && [ ! -e "$T/state" ] && [ ! -e "$T/rt" ] \
	&& ok "no lease database, state or runtime root made" \
	|| bad "a refused input left a lease database, state or runtime root"
# cleanup loads its key to sign the report after the leases are handled
for f in "$T/fifo" /dev/null; do
	expect 2 not_regular_file "cleanup --key $f" -- cleanup --key "$f" --lease-db "$T/leases.db" \
		--runtime-root "$T/rt" --state-dir "$T/state"
done
# --json: the same status
(cd "$R" && timeout 30 "$OTA" cleanup --key "$T/fifo" --lease-db "$T/leases.db" --runtime-root "$T/rt" \
	--state-dir "$T/state" --json) >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] && ok "cleanup --key FIFO --json: exit 2" || bad "cleanup --key FIFO --json: exit $rc"

# the repository's own files: a refusal, 1
mkdir -p "$R/.ota"
mkfifo "$R/.ota/org-policy.yaml"
expect 1 not_regular_file "REPO/.ota/org-policy.yaml a FIFO (run)" -- run build --dry-run --agent
expect 1 not_regular_file "REPO/.ota/org-policy.yaml a FIFO (validate)" -- validate
rm "$R/.ota/org-policy.yaml"
mv "$R/ota.yaml" "$R/ota.yaml.real"
mkfifo "$R/ota.yaml"
expect 1 not_regular_file "the default ./ota.yaml a FIFO" -- validate
# named, the same file is the operator's input: 2
expect 2 not_regular_file "-f ota.yaml a FIFO, named" -- validate -f ota.yaml
rm "$R/ota.yaml"
mv "$R/ota.yaml.real" "$R/ota.yaml"
(cd "$R" && timeout 30 "$OTA" validate) >/dev/null 2>&1 && ok "the repository validates again" \
	|| bad "the repository does not validate"


# the contract is the repository's: a symlink ota.yaml that leaves the
# repository (to a host file the privileged runner would read, report on and
# embed in its archive) is refused before anything is prepared, by every
# command that reads it; one to another file of the repository is followed
printf 'tasks: {}\n' >"$T/host.yaml"
mv "$R/ota.yaml" "$R/contract.yaml"
ln -s "$T/host.yaml" "$R/ota.yaml"
expect 1 path_symlink "./ota.yaml a symlink out of the repository (validate)" -- validate
expect 1 path_symlink "... (tasks -f)" -- tasks -f ota.yaml
expect 1 path_symlink "... (dry run)" -- run build --dry-run --agent
expect 1 path_symlink "... (real run)" -- run build --agent "${rt[@]}"
[ ! -e "$T/state" ] && [ ! -e "$T/rt" ] && [ ! -e "$T/leases.db" ] \
	&& ok "the refused real run prepared nothing" || bad "the refused real run prepared something"
(cd "$R" && timeout 30 "$OTA" doctor --json) >"$T/out" 2>"$T/err"
grep -q "path_symlink" "$T/out" && ok "doctor reports the symlinked contract" \
	|| bad "doctor: $(head -c 300 "$T/out")"
rm "$R/ota.yaml"
ln -s "../$(basename "$R")/contract.yaml" "$R/ota.yaml"
expect 1 path_symlink "./ota.yaml a symlink through .. (validate)" -- validate
rm "$R/ota.yaml"
ln -s contract.yaml "$R/ota.yaml"
(cd "$R" && timeout 30 "$OTA" validate) >/dev/null 2>&1 && ok "a symlink to a file of the repository is followed" \
	|| bad "a symlink inside the repository is refused"
rm "$R/ota.yaml"
mv "$R/contract.yaml" "$R/ota.yaml"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
