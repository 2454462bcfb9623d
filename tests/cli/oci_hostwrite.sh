#!/usr/bin/env bash
# ota run (root) never writes or reads host files through the repository's
# content or a task's: the audit's t04/t06 (archive and cleanup records
# through a .ota symlink), t08 (container.rootfs naming a host directory),
# t11 (a protected path's parent swapped for a symlink), t14 (a FIFO org
# policy), end to end through the CLI with runc, with host-side oracles
# (the host directories' listings, the victim file's bytes, the runtime's
# container list).
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
tmp=$(mktemp -d /tmp/ota-hostwrite-XXXXXX)
root=/run/ota/test-hostwrite-$$
cleanup() {
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OTA_CACHE=$tmp/cache
img=$tmp/img
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:1 >/dev/null
common=(--agent --runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state"
  --image-store "$img")
no_containers() {
  local n
  n=$(runc --root "$root" list -q 2>/dev/null | grep -c . || true)
  [ "$n" -eq 0 ] || fail "$n container(s) left under $root"
  [ -z "$(ls -A "$tmp/state/bundles" 2>/dev/null)" ] || fail "bundle left: $(ls "$tmp/state/bundles")"
}
# mkrepo DIR BODY [FILESYSTEM]: a repository with out/, .git/, secrets/ and one task t
mkrepo() {
  local d=$1 body=$2
  local fs=${3:-'{repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, .git, secrets]}'}
  rm -rf "$d"; mkdir -p "$d/out" "$d/.git" "$d/secrets"
  echo "[core]" >"$d/.git/config"; echo topsecret >"$d/secrets/key"
  { contract_head hostwrite bb:1
    cat <<YAML
tasks:
  t:
    context: box
    run: $(printf '%s' "$body" | jq -Rs .)
    runtime_boundary:
      filesystem: $fs
      network: {default: deny}
    safe_for_agent: true
YAML
  } >"$d/ota.yaml"
}
# runtask DIR [ARGS...]: ota run t in DIR; sets rc, err (stderr text)
runtask() {
  local d=$1; shift
  set +e
  ( cd "$d" && timeout 120 "$OTA" run t "${common[@]}" "$@" ) >"$tmp/out.txt" 2>"$tmp/err.txt"
  rc=$?
  set -e
  err=$(cat "$tmp/err.txt")
}
outside=$tmp/outside
mkdir -p "$outside"
empty_outside() {
  [ -z "$(find "$outside" -mindepth 1 -print -quit)" ] || fail "$1: written outside: $(find "$outside" -mindepth 1)"
}

# ---- t04: .ota/archives and .ota/cleanup are symlinks to host directories ----
r=$tmp/r4
mkrepo "$r" 'echo task ran > out/ran'
mkdir -p "$r/.ota"; ln -s "$outside" "$r/.ota/archives"; ln -s "$outside" "$r/.ota/cleanup"
runtask "$r" --receipt "$tmp/r4.json"
[ "$rc" -eq 1 ] || fail "t04: exit $rc ($err)"
grep -q "path_symlink: $r/.ota/cleanup" <<<"$err" || fail "t04: error does not name the path: $err"
[ ! -e "$r/out/ran" ] && [ ! -e "$tmp/r4.json" ] || fail "t04: the run went ahead"
empty_outside t04
rm "$r/.ota/cleanup"
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "path_symlink: $r/.ota/archives" <<<"$err" || fail "t04 archives: $rc $err"
# --no-archive: the archive directory is not written, so not checked
runtask "$r" --no-archive
[ "$rc" -eq 0 ] && [ -e "$r/out/ran" ] || fail "t04 --no-archive: $rc $err"
empty_outside "t04 --no-archive"
# .ota a regular file: not a directory
rm -rf "$r/.ota"; echo x >"$r/.ota"
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "not_a_directory: $r/.ota" <<<"$err" || fail "t04 file: $rc $err"
no_containers

# ---- t06: .ota is a symlink to a writable carve-out ----
r=$tmp/r6
mkrepo "$r" 'ln -s ../../../../../../../../../..'"$outside"' out/archives'
ln -s out "$r/.ota"
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "path_symlink: $r/.ota" <<<"$err" || fail "t06: $rc $err"
[ ! -e "$r/out/archives" ] || fail "t06: the task ran"
empty_outside t06

# ---- the task plants the symlinks while it runs (.ota a carve-out) ----
r=$tmp/r6b
mkrepo "$r" 'ln -s ../../../../../../../../../..'"$outside"' .ota/archives; ln -s ../../../../../../../../../..'"$outside"' .ota/cleanup' \
  '{repo_root_mode: read_only, writable_paths: [out, .ota], protected_paths: [ota.yaml, .git, secrets]}'
mkdir -p "$r/.ota"
runtask "$r" --receipt "$tmp/r6b.json"
# the task exited 0 but its evidence was not written: exit 3 (archive_not_written)
[ "$rc" -eq 3 ] && grep -q archive_not_written <<<"$err" || fail "task-time: exit $rc ($err)"
[ -L "$r/.ota/archives" ] || fail "task-time: the task did not plant its link"
grep -q "archive not written: .*path_symlink: $r/.ota/archives" <<<"$err" || fail "task-time: $err"
jq -e '.sandbox_policy.status == "enforced_through_completion"' "$tmp/r6b.json" >/dev/null \
  || fail "task-time receipt"
empty_outside task-time

# ---- explicit --archive / --receipt: the user's paths, their last component never followed ----
r=$tmp/rx
mkrepo "$r" 'true'
echo original >"$outside/victim"
ln -s "$outside/victim" "$tmp/archive-link.json"
ln -s "$outside/victim" "$tmp/receipt-link.json"
runtask "$r" --archive "$tmp/archive-link.json" --receipt "$tmp/receipt-link.json"
[ "$rc" -eq 3 ] && grep -q archive_not_written <<<"$err" || fail "explicit: exit $rc ($err)"
grep -q "archive not written: .*path_symlink" <<<"$err" || fail "explicit archive: $err"
grep -q "cannot write receipt" <<<"$err" || fail "explicit receipt: $err"
[ "$(cat "$outside/victim")" = original ] || fail "explicit: the victim was written"
[ -L "$tmp/archive-link.json" ] && [ -L "$tmp/receipt-link.json" ] || fail "explicit: links replaced"
runtask "$r" --archive "$tmp/sub/dir/a.json" --receipt "$tmp/rx.json"
[ "$rc" -eq 0 ] && [ -s "$tmp/sub/dir/a.json" ] && [ -s "$tmp/rx.json" ] || fail "explicit paths: $rc $err"
rm -f "$outside/victim"
no_containers

# ---- t08: container.rootfs names a host directory ----
r=$tmp/r8
victim=$tmp/victimroot
mkdir -p "$victim"; echo host-private-data >"$victim/hostsecret"
before=$(find "$victim" | sort)
mkrepo "$r" 'cat /hostsecret > out/stolen'
sed -i "s#      image: bb:1#      image: bb:1\n      rootfs: $victim#" "$r/ota.yaml"
grep -q "rootfs: $victim" "$r/ota.yaml" || fail "t08: contract not edited"
runtask "$r" --receipt "$tmp/r8.json"
[ "$rc" -eq 1 ] && grep -q "oci_rootfs_unmanaged: $victim" <<<"$err" || fail "t08: $rc $err"
[ "$(find "$victim" | sort)" = "$before" ] || fail "t08: the host directory changed: $(find "$victim")"
[ ! -e "$r/out/stolen" ] || fail "t08: the task ran"
jq -e '.sandbox_policy.status == "refused"' "$tmp/r8.json" >/dev/null || fail "t08: receipt"
# through a symlink inside the image store: refused the same way
ln -s "$victim" "$img/escape"
sed -i "s#rootfs: $victim#rootfs: $img/escape#" "$r/ota.yaml"
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "oci_rootfs_unmanaged" <<<"$err" || fail "t08 store symlink: $rc $err"
rm "$img/escape"
[ "$(find "$victim" | sort)" = "$before" ] || fail "t08: the host directory changed"
# the operator's --rootfs takes a directory outside the store
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox "$tmp/prepared" >/dev/null
mkrepo "$r" 'echo from-prepared > out/stolen'
runtask "$r" --rootfs "$tmp/prepared" --receipt "$tmp/r8b.json"
[ "$rc" -eq 0 ] && [ "$(cat "$r/out/stolen")" = from-prepared ] || fail "--rootfs: $rc $err"
jq -e '[.evidence[] | select(.kind == "ota.platform_check/v1") | .rootfs_source] == ["command_line"]' \
  "$tmp/r8b.json" >/dev/null || fail "--rootfs: platform check"
no_containers

# run_watched REPO REL RECEIPT NAME: runtask REPO with a host reader of
# REPO/REL every 0.5 s during the run; the task must exit 0 and the reader
# never see "pwned" (the task's own file at the protected path)
run_watched() {
  ( for _ in 1 2 3 4 5 6; do cat "$1/$2" 2>/dev/null; sleep 0.5; done ) >"$tmp/seen" &
  local reader=$!
  runtask "$1" --receipt "$3"
  wait "$reader"
  [ "$rc" -eq 0 ] || fail "$4: $rc $err"
  ! grep -q pwned "$tmp/seen" || fail "$4: the host read the task's file at the protected path"
}
# rendered_has RECEIPT DEST: the receipt's rendered config mounts something at DEST
rendered_has() {
  jq -e --arg d "$2" '[.evidence[] | select(.kind == "ota.rendered_policy/v1")
    | .config.mounts[].destination] | index($d) != null' "$1" >/dev/null
}

# ---- t11: the task swaps a protected path's parent for a symlink ----
# Linux refuses to rename a mount point but not its parent: out/w, between
# the carve-out out and the protected out/w/.git, is a pin (a mount of
# itself), so the rename is refused (EBUSY) and nothing moves on the host.
r=$tmp/r11
mkrepo "$r" 'mv out/w out/w2 && ln -s w2 out/w && echo PWN > out/w/.git/config' \
  '{repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml, out/w/.git]}'
mkdir -p "$r/out/w/.git"; echo orig >"$r/out/w/.git/config"
runtask "$r" --receipt "$tmp/r11.json"
[ "$rc" -eq 1 ] && grep -q "can't rename 'out/w': Device or resource busy" <<<"$err" || fail "t11: $rc $err"
[ "$(cat "$r/out/w/.git/config")" = orig ] && [ ! -e "$r/out/w2" ] || fail "t11: the parent moved"
jq -e '.sandbox_policy.status == "enforced_through_completion" and .exit_status == 1
  and ([.evidence[] | select(.phase == "terminal") | .terminal_inspection.protected[]
        | select(.path == "out/w/.git") | .unchanged] == [true])' "$tmp/r11.json" >/dev/null \
  || fail "t11 receipt: $(jq -c '.evidence[] | select(.phase == "terminal") | .terminal_inspection' "$tmp/r11.json")"
no_containers

# ---- t11b: the swap kept only while the task runs, then undone ----
# (renaming a deeper parent, a protected file two levels below the
# carve-out, and the same with a carve-out below a pin, mounted after it):
# each parent between the writable mount and the protected path is a pin;
# a host reader during the run sees the original, and the receipt is honest
for fs in '{repo_root_mode: read_only, writable_paths: [work], protected_paths: [ota.yaml, work/a/cfg/settings.json]}' \
  '{repo_root_mode: read_only, writable_paths: [work, work/a/cfg/out], protected_paths: [ota.yaml, work/a/cfg/settings.json]}'; do
  r=$tmp/r11b
  mkrepo "$r" 'cd work/a && for d in cfg .; do mv "$d" "$d.real" 2>>/tmp/ota-r11b.err; done;
    mkdir -p cfg && echo pwned > cfg/settings.json 2>>/tmp/ota-r11b.err; sleep 2; echo done' "$fs"
  mkdir -p "$r/work/a/cfg/out"; echo '{"safe":true}' >"$r/work/a/cfg/settings.json"
  run_watched "$r" work/a/cfg/settings.json "$tmp/r11b.json" "t11b $fs"
  [ "$(cat "$r/work/a/cfg/settings.json")" = '{"safe":true}' ] && [ ! -e "$r/work/a/cfg.real" ] &&
    [ ! -e "$r/work/a.real" ] || fail "t11b $fs: a parent moved: $(find "$r/work")"
  jq -e '.sandbox_policy.status == "enforced_through_completion"' "$tmp/r11b.json" >/dev/null ||
    fail "t11b $fs: $(jq -c .sandbox_policy.status "$tmp/r11b.json")"
  echo "ok: t11b: no parent of a protected path renamed ($fs)"
  no_containers
done

# ---- t11c: nested carve-outs: the directory between the outer and the
# inner carve-out holds mounts, and a directory holding mounts can be
# renamed: work/a is pinned too (it was not: a host reader saw the task's
# file at work/a/b/c/settings.json while the receipt said unchanged) ----
r=$tmp/r11c
mkrepo "$r" 'mv work/a work/a.real 2>>/tmp/ota-r11c.err && mkdir -p work/a/b/c &&
  echo pwned > work/a/b/c/settings.json; sleep 2; [ -d work/a.real ] && rm -rf work/a && mv work/a.real work/a; echo done' \
  '{repo_root_mode: read_only, writable_paths: [work, work/a/b], protected_paths: [ota.yaml, work/a/b/c/settings.json]}'
mkdir -p "$r/work/a/b/c"; echo '{"safe":true}' >"$r/work/a/b/c/settings.json"
run_watched "$r" work/a/b/c/settings.json "$tmp/r11c.json" t11c
[ ! -e "$r/work/a.real" ] || fail "t11c: work/a was renamed"
rendered_has "$tmp/r11c.json" /workspace/work/a || fail "t11c: work/a is not pinned"
echo "ok: t11c: the directory between nested carve-outs is pinned"
no_containers

# ---- t11d: nested protected paths: inside the protected work/cfg (a
# read-only mount) nothing is pinned (a writable pin there would widen),
# and work/cfg/sub/keep.json stays read-only ----
r=$tmp/r11d
mkrepo "$r" 'echo x > work/cfg/sub/keep.json 2>/dev/null; mv work/cfg/sub work/cfg/sub2 2>/dev/null; echo done' \
  '{repo_root_mode: read_only, writable_paths: [work], protected_paths: [ota.yaml, work/cfg, work/cfg/sub/keep.json]}'
mkdir -p "$r/work/cfg/sub"; echo keep >"$r/work/cfg/sub/keep.json"
runtask "$r" --receipt "$tmp/r11d.json"
[ "$rc" -eq 0 ] || fail "t11d: $rc $err"
[ "$(cat "$r/work/cfg/sub/keep.json")" = keep ] && [ ! -e "$r/work/cfg/sub2" ] || fail "t11d: protected content changed"
! rendered_has "$tmp/r11d.json" /workspace/work/cfg/sub || fail "t11d: a pin inside a protected directory"
echo "ok: t11d: no pin inside a protected directory"
no_containers

# ---- t14: .ota/org-policy.yaml is a FIFO, or a symlink ----
r=$tmp/r14
mkrepo "$r" 'echo ran > out/ran'
mkdir -p "$r/.ota"; mkfifo "$r/.ota/org-policy.yaml"
s=$(date +%s)
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "not_regular_file: $r/.ota/org-policy.yaml" <<<"$err" || fail "t14: $rc $err"
[ $(( $(date +%s) - s )) -lt 60 ] || fail "t14: blocked"
[ ! -e "$r/out/ran" ] || fail "t14: the task ran"
# the dry run, policy, validate and doctor read it the same way
for sub in "run t --dry-run --agent" "policy show t" "validate" "doctor"; do
  set +e
  # shellcheck disable=SC2086
  ( cd "$r" && timeout 60 "$OTA" $sub >"$tmp/out.txt" 2>&1 )
  src=$?
  set -e
  [ "$src" -eq 1 ] && grep -q "not_regular_file" "$tmp/out.txt" \
    || fail "t14: ota $sub: exit $src: $(cat "$tmp/out.txt")"
done
rm "$r/.ota/org-policy.yaml"
printf 'policies: {sandbox: {network: {default: deny}}}\n' >"$outside/org.yaml"
ln -s "$outside/org.yaml" "$r/.ota/org-policy.yaml"
runtask "$r"
[ "$rc" -eq 1 ] && grep -q "path_symlink: $r/.ota/org-policy.yaml" <<<"$err" || fail "t14 symlink: $rc $err"
# named explicitly, the operator's file is read
runtask "$r" --org-policy "$outside/org.yaml" --no-archive
[ "$rc" -eq 0 ] && [ -e "$r/out/ran" ] || fail "t14 --org-policy: $rc $err"
rm -f "$outside/org.yaml"
no_containers

# ---- t07 in small: a protected directory of 20,000 files, unchanged ----
r=$tmp/r7
mkrepo "$r" 'true'
( cd "$r/secrets" && seq 0 19999 | awk '{printf "f%07d\n", ($1 * 7919) % 20000}' | xargs touch )
runtask "$r" --receipt "$tmp/r7.json" --no-archive
[ "$rc" -eq 0 ] || fail "t07: $rc $err"
jq -e '.sandbox_policy.status == "enforced_through_completion"' "$tmp/r7.json" >/dev/null || fail "t07 receipt"
no_containers
empty_outside end
echo "oci_hostwrite: ok"
