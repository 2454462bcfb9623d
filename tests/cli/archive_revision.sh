#!/usr/bin/env bash
# The repository revision and work tree in the signed receipt, end to end
# (root, runc):
# `ota run` in a git repository (git init + a commit) records the commit id
# HEAD resolved to when the run was admitted, also after a second commit and
# packed refs; a repository without .git records "revision": null. Receipt
# and archive validate against their schemas. `ota-verify archive
# --require-revision SHA` passes only on that revision: another, a null one
# and the committed vector (written before the member existed, which still
# reconciles without the option) are archive_revision_mismatch (exit 1,
# named in --json, identities.revision shown); a malformed SHA or a second
# --require-revision is usage (exit 2, one JSON document).
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
command -v git >/dev/null || { echo "SKIP: git missing"; exit 0; }
command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
runner_world rev
g() { env -u GIT_DIR -u GIT_WORK_TREE HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 \
  GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t \
  git -c init.defaultBranch=main -c safe.directory='*' "$@"; }

make_repo() { # make_repo DIR
  mkdir -p "$1/reports"
  {
    contract_head rev-test bb:1
    echo "tasks:"
    reports_task build "echo built > reports/out.txt"
    printf 'agent:\n  safe_tasks: [build]\n'
  } >"$1/ota.yaml"
}
run() { # run DIR NAME: ota run build, archive and receipt under $tmp/NAME.*
  ( cd "$1" && "$OTA" run build --agent --runtime-root "$root" --lease-db "$tmp/leases.db" \
      --state-dir "$tmp/state" --image-store "$img" --key "$T/keys/runner.pem" \
      --nonce-db "$tmp/nonces.db" --trust "$T" --archive "$tmp/$2.json" \
      --receipt "$tmp/$2.receipt.json" >/dev/null 2>"$tmp/$2.err" ) \
    || fail "run $2: $(cat "$tmp/$2.err")"
}
text_refusal() { # text_refusal PATTERN ARCHIVE [options...]: exit 1, stderr line matches
  local pat=$1 rc=0
  shift
  "$OTA_VERIFY" archive "$@" --trust "$PIN" >/dev/null 2>"$tmp/verr" || rc=$?
  [ "$rc" -eq 1 ] && grep -q "$pat" "$tmp/verr" || fail "text refusal $*: exit $rc: $(cat "$tmp/verr")"
}

# ---- a git repository ----
w=$tmp/repo
make_repo "$w"
( cd "$w" && g init -q . && printf 'reports/\n' >.gitignore && g add ota.yaml .gitignore && g commit -qm one )
rev1=$(g -C "$w" rev-parse HEAD)
run "$w" a
jq -e --arg r "$rev1" '.revision == $r' "$tmp/a.receipt.json" >/dev/null \
  || fail "receipt revision $(jq -c .revision "$tmp/a.receipt.json"), want $rev1"
schema_check receipt.schema.json "$tmp/a.receipt.json"
schema_check archive.schema.json "$tmp/a.json"
verify_gate 0 "$tmp/a.json" --require-revision "$rev1" \
  ".ok == true and .identities.revision == \"$rev1\" and .status == \"enforced_through_completion\""
verify_gate 0 "$tmp/a.json" ".ok == true and .identities.revision == \"$rev1\""
# the work tree: the commit's files and nothing else (reports/ is empty)
tree1=$(g -C "$w" rev-parse 'HEAD^{tree}')
jq -e --arg t "$tree1" '.worktree == $t' "$tmp/a.receipt.json" >/dev/null \
  || fail "receipt worktree $(jq -c .worktree "$tmp/a.receipt.json"), want $tree1"
verify_gate 0 "$tmp/a.json" --require-revision "$rev1" --require-worktree "$tree1" \
  ".ok == true and .identities.worktree == \"$tree1\""

# a second commit, then packed refs: the run records the new HEAD
( cd "$w" && echo two >notes && g add notes && g commit -qm two && g pack-refs --all )
[ ! -e "$w/.git/refs/heads/main" ] || fail "pack-refs left the loose ref"
rev2=$(g -C "$w" rev-parse HEAD)
[ "$rev2" != "$rev1" ] || fail "no new commit"
run "$w" b
verify_gate 0 "$tmp/b.json" --require-revision "$rev2" ".identities.revision == \"$rev2\""
# the gate handed the older archive for the newer commit refuses it
verify_gate 1 "$tmp/a.json" --require-revision "$rev2" \
  '.ok == false and .status == null and .code == "archive_revision_mismatch" and (.failures | map(.code) == ["archive_revision_mismatch"])'
# run b saw run a's output (reports/out.txt, gitignored): not the commit's tree
tree2=$(g -C "$w" rev-parse 'HEAD^{tree}')
[ -s "$w/reports/out.txt" ] || fail "run a wrote no reports/out.txt"
jq -e --arg t "$tree2" '.worktree != $t and (.worktree | length == 40)' "$tmp/b.receipt.json" >/dev/null \
  || fail "run b on a dirty work tree: worktree $(jq -c .worktree "$tmp/b.receipt.json")"
verify_gate 1 "$tmp/b.json" --require-revision "$rev2" --require-worktree "$tree2" \
  '.ok == false and (.failures | map(.code) == ["archive_worktree_mismatch"])'
# cleaned, the same commit's run records its tree
rm -rf "$w/reports"/*
run "$w" b2
verify_gate 0 "$tmp/b2.json" --require-revision "$rev2" --require-worktree "$tree2" \
  ".identities.worktree == \"$tree2\""
# an uncommitted edit: the revision is the commit's, the files are not
echo edited >>"$w/notes"
run "$w" b3
rm -rf "$w/reports"/*
verify_gate 1 "$tmp/b3.json" --require-revision "$rev2" --require-worktree "$tree2" \
  '(.failures | map(.code) == ["archive_worktree_mismatch"]) and .identities.revision != null'
text_refusal "^ota-verify: archive_worktree_mismatch: receipt.worktree: the receipt records worktree " \
  "$tmp/b3.json" --require-worktree "$tree2"
( cd "$w" && g checkout -q notes )
# a work tree git could not store (a FIFO): not recorded, never approximated,
# and ota run says why
mkfifo "$w/pipe"
run "$w" f
rm -f "$w/pipe"
rm -rf "$w/reports"/*
jq -e --arg r "$rev2" '.revision == $r and .worktree == null' "$tmp/f.receipt.json" >/dev/null \
  || fail "FIFO in the work tree: $(jq -c '{revision, worktree}' "$tmp/f.receipt.json")"
grep -q "^ota: note: the work tree is not recorded: unsupported: pipe: " "$tmp/f.err" \
  || fail "no note on the unrecorded work tree: $(cat "$tmp/f.err")"
verify_gate 1 "$tmp/f.json" --require-worktree "$tree2" '.code == "archive_worktree_mismatch" and .identities.worktree == null'
# a SHA-256-length id that is not the revision
verify_gate 1 "$tmp/a.json" --require-revision "$(printf 'a%.0s' $(seq 64))" '.code == "archive_revision_mismatch"'
text_refusal "^ota-verify: archive_revision_mismatch: receipt.revision: " "$tmp/a.json" \
  --require-revision "$rev2"

# ---- no .git: null, never a guess ----
p=$tmp/plain
make_repo "$p"
run "$p" c
jq -e 'has("revision") and .revision == null' "$tmp/c.receipt.json" >/dev/null \
  || fail "no .git: revision $(jq -c .revision "$tmp/c.receipt.json")"
schema_check receipt.schema.json "$tmp/c.receipt.json"
schema_check archive.schema.json "$tmp/c.json"
verify_gate 0 "$tmp/c.json" '.ok == true and .identities.revision == null'
verify_gate 1 "$tmp/c.json" --require-revision "$rev1" '.code == "archive_revision_mismatch"'
jq -e 'has("worktree") and .worktree == null' "$tmp/c.receipt.json" >/dev/null \
  || fail "no .git: worktree $(jq -c .worktree "$tmp/c.receipt.json")"
verify_gate 1 "$tmp/c.json" --require-worktree "$tree1" \
  '.code == "archive_worktree_mismatch" and .identities.worktree == null and (.failures[0].message | test("null: none hashed"))'

# ---- an archive written before the member existed ----
V=$OTA_SOURCE_DIR/vectors/archive/a.json
VP=$OTA_SOURCE_DIR/vectors/archive/a.json.root.json
PIN=$VP verify_gate 0 "$V" '.ok == true and .identities.revision == null and .identities.worktree == null'
PIN=$VP verify_gate 1 "$V" --require-revision "$rev1" '.code == "archive_revision_mismatch"'
PIN=$VP verify_gate 1 "$V" --require-worktree "$tree1" \
  '.code == "archive_worktree_mismatch" and (.failures[0].message | test("before the member existed"))'

# ---- usage ----
for bad in "${rev1^^}" "${rev1:0:39}" "${rev1}0" "g${rev1:1}" "" "$rev1 "; do
  set +e
  "$OTA_VERIFY" archive "$tmp/a.json" --trust "$PIN" --require-revision "$bad" --json >"$tmp/out" 2>/dev/null
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "--require-revision '$bad': exit $rc, want 2"
  jq -e '.ok == false and .code == "usage" and .status == null and (.failures | length == 1)' "$tmp/out" >/dev/null \
    || fail "--require-revision '$bad': $(cat "$tmp/out")"
done
for bad in "${tree1^^}" "${tree1:0:39}" "$tree1 " ""; do
  set +e
  "$OTA_VERIFY" archive "$tmp/a.json" --trust "$PIN" --require-worktree "$bad" --json >"$tmp/out" 2>/dev/null
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && jq -e '.code == "usage" and (.failures | length == 1)' "$tmp/out" >/dev/null \
    || fail "--require-worktree '$bad': exit $rc: $(cat "$tmp/out")"
done
set +e
"$OTA_VERIFY" archive "$tmp/a.json" --trust "$PIN" --require-revision "$rev1" --require-revision "$rev2" --json >"$tmp/out" 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 2 ] && jq -e '.code == "usage"' "$tmp/out" >/dev/null || fail "repeated --require-revision: exit $rc"
echo "archive_revision: ok"
