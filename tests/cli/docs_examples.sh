#!/usr/bin/env bash
# The documentation as an operator follows it, checked against the built
# CLIs (docs/README.md, man/*):
#   1. every option a command's own usage text names is in its man page's
#      SYNOPSIS (ota, ota-verify, ota-attestd), so a new option cannot ship
#      undocumented, and every option a SYNOPSIS shows is named by that
#      usage text, so a removed one cannot stay documented;
#   2. the EXAMPLES of ota(1) (trust domain, rotation, cose) and of
#      ota-verify(1) (cose) run as written and print the shapes shown;
#   3. outputs that no other test validates against docs/schemas: ota
#      validate --json (success), ota workflows --json, ota policy show TASK
#      --workflow W --json (selected_segment), ota-verify trust --json, every
#      snapshot ota trust writes (trust-root), and, with root and runc, the
#      archive of a run without --key ({cose_sign1: null, unsigned}) and the
#      ota(1)/ota-verify(1) run examples' output lines.
# No network; about 3 s.
set -euo pipefail
: "${OTA:?}" "${OTA_VERIFY:?}" "${OTA_ATTESTD:?}" "${OTA_SOURCE_DIR:?}"
command -v mandoc >/dev/null || { echo "SKIP: mandoc missing (scripts/install-deps.sh)"; exit 0; }
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
tmp=$(mktemp -d /tmp/ota-docs-examples-XXXXXX)
root=/run/ota/test-docs-$$
cleanup() {
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
man_dir=$OTA_SOURCE_DIR/man

# ---- 1. usage text options are in the SYNOPSIS ----
# synopsis PAGE PREFIX...: the rendered SYNOPSIS entries of PAGE that start
# with one of the PREFIXes ("ota trust"), continuation lines included.
synopsis() {
  local page=$1
  shift
  mandoc -T utf8 "$man_dir/$page" | col -bx |
    awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
    awk -v prefixes="$*" '
      BEGIN { n = split(prefixes, p, "|") }
      /^     [^ ]/ { keep = 0; line = substr($0, 6)
                     for (i = 1; i <= n; i++) if (index(line, p[i] " ") == 1 || line == p[i]) keep = 1 }
      keep'
}
# usage_options CMD...: the long options the command prints in its usage
# (whatever the exit status; --help is not a documented option everywhere)
usage_options() {
  { "$@" 2>&1 || true; } | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -e '--help' -e '--no-such-option' |
    sort -u
}
check_synopsis() {
  local page=$1 prefixes=$2
  shift 2
  local doc missing
  doc=$(synopsis "$page" "$prefixes")
  [ -n "$doc" ] || { fail "$page: no SYNOPSIS entry for $prefixes"; return; }
  missing=$(usage_options "$@" | while read -r o; do
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" <<<"$doc" || printf '%s ' "$o"
  done)
  [ -z "$missing" ] || fail "$page SYNOPSIS ($prefixes) lacks $missing(printed by: $*)"
}
check_synopsis ota.1 "ota trust" "$OTA" trust --help
check_synopsis ota.1 "ota cose" "$OTA" cose --help
check_synopsis ota.1 "ota attest" "$OTA" attest --help
check_synopsis ota.1 "ota image" "$OTA" image
check_synopsis ota.1 "ota cleanup" "$OTA" cleanup --no-such-option
check_synopsis ota.1 "ota run" "$OTA" run --no-such-option
check_synopsis ota.1 "ota run|ota up" "$OTA" up --no-such-option
check_synopsis ota.1 "ota validate" "$OTA" validate --no-such-option
check_synopsis ota.1 "ota tasks" "$OTA" tasks --no-such-option
check_synopsis ota.1 "ota workflows" "$OTA" workflows --no-such-option
check_synopsis ota.1 "ota policy show" "$OTA" policy show --no-such-option
check_synopsis ota.1 "ota doctor" "$OTA" doctor --help
check_synopsis ota.1 "ota archive build" "$OTA" archive
check_synopsis ota-verify.1 "ota-verify cose" "$OTA_VERIFY" cose --help
check_synopsis ota-verify.1 "ota-verify trust" "$OTA_VERIFY" trust --help
check_synopsis ota-verify.1 "ota-verify archive" "$OTA_VERIFY" archive --help
check_synopsis ota-attestd.8 "ota-attestd" "$OTA_ATTESTD" --help
# and the other way: every option a SYNOPSIS shows is one the command names
# in its usage (a removed or renamed option cannot stay documented).
check_documented() {
  local page=$1 prefixes=$2 use=$3 extra
  extra=$(synopsis "$page" "$prefixes" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u |
    comm -23 - <(sort -u <<<"$use") | tr '\n' ' ')
  [ -z "$extra" ] || fail "$page SYNOPSIS ($prefixes) shows $extra, which the usage text does not name"
}
check_documented ota.1 "ota trust" "$(usage_options "$OTA" trust --help)"
check_documented ota.1 "ota cose" "$(usage_options "$OTA" cose --help)"
check_documented ota.1 "ota attest" "$(usage_options "$OTA" attest --help)"
check_documented ota.1 "ota image" "$(usage_options "$OTA" image)"
check_documented ota.1 "ota cleanup" "$(usage_options "$OTA" cleanup --no-such-option)"
check_documented ota.1 "ota run|ota up" \
  "$({ usage_options "$OTA" run --no-such-option; usage_options "$OTA" run --dry-run
       usage_options "$OTA" up --no-such-option; usage_options "$OTA" up --dry-run; } | sort -u)"
check_documented ota.1 "ota validate" "$(usage_options "$OTA" validate --no-such-option)"
check_documented ota.1 "ota tasks" "$(usage_options "$OTA" tasks --no-such-option)"
check_documented ota.1 "ota workflows" "$(usage_options "$OTA" workflows --no-such-option)"
check_documented ota.1 "ota policy show" "$(usage_options "$OTA" policy show --no-such-option)"
check_documented ota.1 "ota doctor" "$(usage_options "$OTA" doctor --help)"
# (archive build takes --output for -o, cli/cmd_archive.c; its usage names -o only)
check_documented ota.1 "ota archive build" "$({ usage_options "$OTA" archive; echo --output; } | sort -u)"
check_documented ota-verify.1 "ota-verify cose" "$(usage_options "$OTA_VERIFY" cose --help)"
check_documented ota-verify.1 "ota-verify trust" "$(usage_options "$OTA_VERIFY" trust --help)"
check_documented ota-verify.1 "ota-verify archive" "$(usage_options "$OTA_VERIFY" archive --help)"
check_documented ota-attestd.8 "ota-attestd" "$({ usage_options "$OTA_ATTESTD" --help; echo --help; } | sort -u)"
# the commands each tool dispatches have a SYNOPSIS entry
for c in $({ "$OTA" --help; } | awk '/^commands:/ { on = 1; next } on && NF { print $1 }'); do
  [ -n "$(synopsis ota.1 "ota $c")" ] || fail "ota.1 SYNOPSIS has no 'ota $c'"
done
for c in $({ "$OTA_VERIFY" --help; } | awk '/^commands:/ { on = 1; next } on && NF { print $1 }'); do
  [ -n "$(synopsis ota-verify.1 "ota-verify $c")" ] || fail "ota-verify.1 SYNOPSIS has no 'ota-verify $c'"
done
# every command (and the two-word ones) answers --help and -h with its usage
# on stdout, exit 0, nothing on stderr (run, up, cleanup, attest submit,
# tasks, validate, workflows, policy, archive and image exited 2 with the
# usage on stderr)
help_ok() {
  local out err rc
  out=$("$@" 2>"$tmp/help.err"); rc=$?
  err=$(cat "$tmp/help.err")
  [ "$rc" -eq 0 ] && grep -q 'usage' <<<"$out" && [ -z "$err" ] ||
    fail "$*: exit $rc, stdout '${out:0:60}', stderr '${err:0:60}'"
}
for c in $({ "$OTA" --help; } | awk '/^commands:/ { on = 1; next } on && NF { print $1 }'); do
  [ "$c" = version ] && continue
  help_ok "$OTA" "$c" --help
  help_ok "$OTA" "$c" -h
done
for c in "run build" "attest submit" "attest challenge" "archive build" "policy show" "trust init" "cose sign" "image import" "run build --json"; do
  # shellcheck disable=SC2086
  help_ok "$OTA" $c --help
done
for c in $({ "$OTA_VERIFY" --help; } | awk '/^commands:/ { on = 1; next } on && NF { print $1 }'); do
  help_ok "$OTA_VERIFY" "$c" --help
done
help_ok "$OTA_ATTESTD" --help

# ---- 2. the EXAMPLES, as written ----
cd "$tmp"
# ota(1): a 2-of-3 domain, a runner principal, two holders signing
"$OTA" trust init --domain acme.example --dir trust --root-keys 3 --threshold 2 >out 2>&1 ||
  fail "trust init: $(cat out)"
"$OTA" trust add-principal --dir trust --id ci-runner --role runner \
  --repo 'acme/*' --lane ci --provider-target oci_local >out 2>&1 || fail "add-principal: $(cat out)"
"$OTA" trust add-key --dir trust --principal ci-runner --generate runner.pem >out 2>&1 ||
  fail "add-key: $(cat out)"
"$OTA" trust sign --dir trust --key trust/keys/root-1.pem >out 2>&1 || fail "sign 1: $(cat out)"
[ ! -f trust/versions/2.root.json ] || fail "one of two holders published v2"
"$OTA" trust sign --dir trust --key trust/keys/root-2.pem >out 2>&1 || fail "sign 2: $(cat out)"
grep -q '^published acme.example version 2$' out || fail "'# publishes v2': $(cat out)"
"$OTA_VERIFY" trust --pinned trust/versions/1.root.json trust/versions/2.root.json >out 2>&1 ||
  fail "ota-verify trust: $(cat out)"
grep -q '^trusted acme.example version 2$' out || fail "ota-verify trust output: $(cat out)"
# rotating to three new root keys, two old and two new holders
"$OTA" trust rotate --dir trust --root-keys 3 --threshold 2 \
  --sign trust/keys/root-1.pem --sign trust/keys/root-3.pem >out 2>&1 || fail "rotate: $(cat out)"
"$OTA" trust sign --dir trust --key trust/keys/root-v3-1.pem >out 2>&1 || fail "sign v3-1: $(cat out)"
"$OTA" trust sign --dir trust --key trust/keys/root-v3-2.pem >out 2>&1 || fail "sign v3-2: $(cat out)"
grep -q '^published acme.example version 3$' out || fail "rotation not published: $(cat out)"
schema_check trust-root.schema.json trust/versions/1.root.json trust/versions/2.root.json \
  trust/versions/3.root.json
# ota-verify trust --json: {ok: true, trusted: the snapshot summary}
"$OTA_VERIFY" trust --pinned trust/versions/1.root.json trust/versions/2.root.json \
  trust/versions/3.root.json --json >v.json || fail "ota-verify trust --json"
jq -e '.ok == true and .trusted.trust_domain == "acme.example" and .trusted.version == 3
  and (.trusted.identity | test("^sha256:[0-9a-f]{64}$")) and (.trusted | has("expires"))' v.json \
  >/dev/null || fail "ota-verify trust --json shape: $(jq -c . v.json)"
"$OTA_VERIFY" trust --pinned trust/versions/3.root.json --json >v0.json ||
  fail "ota-verify trust without CHAIN.json"
jq -e '.ok == true and .trusted.version == 3' v0.json >/dev/null || fail "pinned only: $(jq -c . v0.json)"

# ota-verify(1): make a key, sign, verify, a tampered copy refused
printf '\xa1\x01\x02' >claims.cbor
"$OTA" cose keygen --alg ES256 --out signer.pem --pub signer.pub >out || fail "cose keygen"
kid=$(sed -n 's/^kid: \([0-9a-f]\{64\}\)$/\1/p' out)
[ -n "$kid" ] || fail "keygen output is not 'kid: HEX': $(cat out)"
"$OTA" cose sign --key signer.pem --payload claims.cbor --kid-from-key --out claims.cose ||
  fail "cose sign"
"$OTA_VERIFY" cose --key signer.pub claims.cose >out || fail "cose verify"
[ "$(cat out)" = "valid: alg=ES256 kid=$kid payload=3 bytes" ] || fail "verify output: $(cat out)"
cp claims.cose tampered.cose
printf '\x00' | dd of=tampered.cose bs=1 seek=$(($(stat -c %s claims.cose) - 5)) conv=notrunc status=none
set +e
"$OTA_VERIFY" cose --key signer.pub --json tampered.cose >bad.json 2>/dev/null
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "tampered copy exit $rc, documented 1"
jq -e '.ok == false and .valid == false and .code == "signature_invalid"' bad.json >/dev/null ||
  fail "tampered --json: $(jq -c . bad.json)"
# ota(1): a detached signature with external AAD, and its check
printf 'body' >body.bin
"$OTA" cose sign --key signer.pem --payload body.bin --kid-from-key \
  --detached --external-aad 11aa22bb --out msg.cose || fail "detached sign"
"$OTA_VERIFY" cose --key signer.pub --payload body.bin --external-aad 11aa22bb msg.cose >out ||
  fail "detached verify: $(cat out)"
"$OTA" cose keygen --alg ES256 --out k2.pem --json >k2.json || fail "keygen --json"
jq -e 'keys == ["alg", "kid", "private", "public"] and .public == null' k2.json >/dev/null ||
  fail "keygen --json shape: $(jq -c . k2.json)"

# ---- 3. outputs against their schemas ----
repo=$tmp/repo
mkdir -p "$repo/reports" "$repo/.github/workflows"
cp "$OTA_SOURCE_DIR/vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml" "$repo/"
(
  cd "$repo"
  "$OTA" validate --json >"$tmp/validate.json" || fail "validate"
  "$OTA" workflows --json >"$tmp/workflows.json" || fail "workflows"
  "$OTA" policy show verify --workflow verify --json >"$tmp/show.json" || fail "policy show"
  # dry runs take the org-policy options (ota(1) SYNOPSIS)
  "$OTA" run verify --agent --dry-run --no-org-policy --json >/dev/null || fail "dry run --no-org-policy"
)
schema_check policy-validate.schema.json "$tmp/validate.json"
schema_check policy-lanes.schema.json "$tmp/workflows.json"
schema_check policy-show.schema.json "$tmp/show.json"
jq -e '.selected_segment | has("canonical") and has("effective")' "$tmp/show.json" >/dev/null ||
  fail "policy show TASK --workflow W: no selected_segment"

if [ "$(id -u)" -ne 0 ] || ! command -v runc >/dev/null; then
  echo "note: runs skipped (need root and runc)"
else
  # ota(1): a run writes its archive and says so; without --key the archive
  # carries {cose_sign1: null, unsigned: RECEIPT} (docs/archive.md section 1)
  store=$tmp/images
  OTA_CACHE=$tmp/cache bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$store" \
    debian:bookworm-slim >/dev/null
  common=(--runtime-root "$root" --lease-db "$tmp/leases.db" --state-dir "$tmp/state"
    --image-store "$store")
  plat=linux/$(ota_arch)
  # the busybox image has sh, not bash
  sed -i "s|platform: linux/amd64|platform: $plat|; s|exe: bash|exe: sh|" "$repo/ota.yaml"
  ( cd "$repo" && "$OTA" run verify --agent "${common[@]}" --receipt receipt.json ) \
    >"$tmp/run.out" 2>&1 || fail "ota run verify --agent --receipt: $(cat "$tmp/run.out")"
  archive=$(sed -n 's/^ota: archive //p' "$tmp/run.out")
  grep -q '^ota: sandbox enforced_through_completion$' "$tmp/run.out" ||
    fail "run output: $(cat "$tmp/run.out")"
  [ -f "$archive" ] || fail "no 'ota: archive PATH' line naming a file: $(cat "$tmp/run.out")"
  if [ -f "$archive" ]; then
    jq -e '.receipt.cose_sign1 == null and
      .receipt.unsigned.sandbox_policy.attestation.verification == "runner_owned_unsigned"' \
      "$archive" >/dev/null || fail "unsigned archive receipt: $(jq -c .receipt "$archive" | head -c 300)"
    schema_check archive.schema.json "$archive"
    schema_check receipt.schema.json "$repo/receipt.json"
  fi
  # ota-verify(1): a trust root with a runner, a run that writes its
  # archive, and the merge gate's check (in a git repository)
  if command -v git >/dev/null; then
    T=$tmp/etc-trust
    "$OTA" trust init --domain acme.example --dir "$T" --root-keys 1 --threshold 1 >/dev/null
    "$OTA" trust add-principal --dir "$T" --id ci-runner --role runner \
      --repo '*' --lane '*' --provider-target oci_local --sign "$T/keys/root-1.pem" >/dev/null
    "$OTA" trust add-key --dir "$T" --principal ci-runner \
      --generate "$T/keys/runner.pem" --sign "$T/keys/root-1.pem" >/dev/null
    rm -rf "$repo/.ota" "$repo/receipt.json" "$repo/reports/result.txt"
    touch "$repo/.github/workflows/ci.yml"
    git -C "$repo" init -q
    git -C "$repo" add -A
    git -C "$repo" -c user.email=docs@example.invalid -c user.name=docs commit -qm example
    ( cd "$repo" && "$OTA" run verify --agent "${common[@]}" --nonce-db "$tmp/nonces.db" \
        --key "$T/keys/runner.pem" --trust "$T" ) >"$tmp/run2.out" 2>&1 ||
      fail "ota run --key --trust: $(cat "$tmp/run2.out")"
    a2=$(sed -n 's/^ota: archive //p' "$tmp/run2.out")
    case $a2 in "$repo"/.ota/archives/txn-*.json) ;; *) fail "archive path '$a2'" ;; esac
    # a verifier that makes a ledger only when asked (--ledger-init) needs
    # the example to ask for it, the first time
    ledger=(--ledger "$tmp/audit.db")
    if usage_options "$OTA_VERIFY" archive --help | grep -qx -- --ledger-init; then
      ledger+=(--ledger-init)
      mandoc -T utf8 "$man_dir/ota-verify.1" | col -bx | awk '/^EXAMPLES/ { on = 1 } on' |
        grep -q -- '--ledger-init' ||
        fail "ota-verify.1 EXAMPLES: --ledger on a new ledger without --ledger-init"
    fi
    ( cd "$repo" && "$OTA_VERIFY" archive "$a2" --trust "$T/versions/1.root.json" \
        --require-status enforced_through_completion --require-success --require-lane task:verify \
        --require-revision "$(git rev-parse HEAD)" --require-worktree "$(git rev-parse 'HEAD^{tree}')" \
        --current "$T/versions" "${ledger[@]}" ) >"$tmp/v.out" 2>&1 ||
      fail "ota-verify archive: $(cat "$tmp/v.out")"
    grep -qE '^ok: archive reconciles: status enforced_through_completion, [0-9]+ signatures verified$' \
      "$tmp/v.out" || fail "ota-verify archive output: $(cat "$tmp/v.out")"
    schema_check archive.schema.json "$a2"
  fi
fi

[ "$fails" -eq 0 ] || { echo "docs_examples: $fails failure(s)" >&2; exit 1; }
echo "docs_examples: ok"
