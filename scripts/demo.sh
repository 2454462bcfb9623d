#!/usr/bin/env bash
# The main job (README "Run the demo"): installs what it needs, builds the
# release preset, then shows the evidence flow on the embedded defaults:
#   1-4. COSE_Sign1: a runner key, a signed attestation, offline
#        verification, a tampered copy refused;
#   5.   a local trust root (ota trust init) with a runner principal;
#   6.   ota doctor: what this machine can really enforce;
#   7.   a real run of an example lane (examples/build-output, workflow ci)
#        on oci_local with the default image store, lease database and
#        nonce store under /var/lib/ota; every record signed by the runner
#        against a single-use challenge; the receipt and the archive;
#   8.   ota-verify archive against the pinned trust root, as a merge gate
#        runs it: the status, the lane, the commit and its exact files
#        (git rev-parse HEAD and HEAD^{tree}; the example is committed to
#        a fresh git repository first); a gate wanting another lane or
#        another commit's files and a tampered archive refused;
#   9.   an external provider: ota-attestd on loopback, three challenges,
#        three chained attestations signed by an issuer and submitted as one
#        batch, each acceptance checked against the trust root; the same
#        batch again refused (replays).
# Idempotent: each run works in a fresh directory under .ota/demo/; the
# demo's trust root (.ota/demo/trust) is created once and reused.
# Environment: OTA_BIN_DIR (skip the build, use these CLIs).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# OTA_BIN_DIR: use already built CLIs (a directory holding ota and ota-verify)
if [ -n "${OTA_BIN_DIR:-}" ]; then
  bin=$(realpath "$OTA_BIN_DIR")
else
  cmake --preset release -G Ninja >/dev/null
  cmake --build --preset release -j "$(nproc)" >/dev/null
  bin=$PWD/build/release/cli
fi
OTA=$bin/ota
VERIFY=$bin/ota-verify

demo=.ota/demo/$(date -u +%Y%m%dT%H%M%SZ)-$$
mkdir -p "$demo"
demo=$(realpath "$demo")
echo "demo directory: $demo"
echo "$("$OTA" version), $("$VERIFY" --version 2>/dev/null || echo ota-verify)"

step() { printf '\n== %s ==\n' "$*"; }

step "1. make a runner key (ES256; private key file is 0600 and never printed)"
"$OTA" cose keygen --alg ES256 --out "$demo/runner.key.pem" --pub "$demo/runner.pub.pem"
stat -c '%a %n' "$demo/runner.key.pem"

step "2. sign a demo attestation as COSE_Sign1 (tagged, kid = SHA-256 of the SPKI)"
cat >"$demo/attestation.json" <<JSON
{"kind":"ota.demo_attestation/v1","provider":"oci_local","segment":"verify","enforced":["filesystem.repo_root_mode","network.default"],"iat":$(date +%s)}
JSON
"$OTA" cose sign --key "$demo/runner.key.pem" --payload "$demo/attestation.json" \
  --kid-from-key --out "$demo/attestation.cose"
echo "signed: $demo/attestation.cose ($(stat -c %s "$demo/attestation.cose") bytes)"

step "3. verify it offline with ota-verify"
"$VERIFY" cose --key "$demo/runner.pub.pem" --json "$demo/attestation.cose"

step "4. a tampered copy (one payload byte changed) is refused"
cp "$demo/attestation.cose" "$demo/tampered.cose"
python3 - "$demo/tampered.cose" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = b.find(b'oci_local')
b[i] ^= 0x01  # 'o' -> 'n'
open(p, 'wb').write(bytes(b))
PY
set +e
"$VERIFY" cose --key "$demo/runner.pub.pem" --json "$demo/tampered.cose"
rc=$?
set -e
if [ "$rc" -ne 1 ]; then
  echo "demo: FAILED: tampered copy was not refused (exit $rc)" >&2
  exit 1
fi
echo "tampered copy refused (exit 1), as it must be"

step "5. a local trust root with a runner principal (created once, reused)"
trust=$(realpath .ota/demo)/trust
# the runner is trusted for the demo's workflow "ci" on oci_local, any
# repository; a domain made by an older demo (no lane scope) is made again
if [ ! -f "$trust/root.json" ] || [ ! -f "$trust/runner.pem" ] ||
  ! jq -e '.signed.principals[] | select(.id == "runner:demo") | .scopes.lanes == ["ci"]' \
    "$trust/root.json" >/dev/null 2>&1; then
  rm -rf "$trust"
  "$OTA" trust init --domain demo.ota.local --dir "$trust"
  "$OTA" trust add-principal --dir "$trust" --id runner:demo --role runner --repo '*' \
    --lane ci --provider-target oci_local
  "$OTA" trust add-key --dir "$trust" --principal runner:demo --generate "$trust/runner.pem"
  "$OTA" trust sign --dir "$trust" --key "$trust/keys/root-1.pem"
fi
"$OTA" trust show --dir "$trust"
pinned=$trust/versions/1.root.json

arch=$(case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac)
if [ "$arch" != amd64 ]; then
  echo "the example repositories declare linux/amd64 and this host is linux/$arch: stopping before the run"
  exit 0
fi

step "6. ota doctor: what this machine can enforce for the example (real probes)"
store=/var/lib/ota/images
./scripts/make-test-rootfs.sh busybox-image "$store" busybox:ota-examples >/dev/null
repo=$demo/build-output
cp -a examples/build-output "$repo"
# a checkout of a commit, as CI has: the receipt records the commit and the
# git tree of the files the run saw
git() { command git -C "$repo" -c user.name=demo -c user.email=demo@example.invalid \
  -c init.defaultBranch=main -c safe.directory='*' "$@"; }
git init -q && git add -A && git commit -qm "the example" || {
  echo "demo: FAILED: git could not commit the example" >&2
  exit 1
}
"$OTA" cleanup >/dev/null # finalize leases an earlier interrupted run may have left
(cd "$repo" && "$OTA" doctor --workflow ci --image-store "$store") || {
  echo "demo: ota doctor found problems: this machine cannot enforce the example's boundary" >&2
  exit 1
}

step "7. a real run: ota up --workflow ci --agent (oci_local, embedded defaults)"
receipt=$demo/receipt.json
(cd "$repo" && "$OTA" up --workflow ci --agent --image-store "$store" \
   --trust "$trust" --key "$trust/runner.pem" --receipt "$receipt") 2>&1 | tee "$demo/run.log"
archive=$(sed -n 's/^ota: archive //p' "$demo/run.log" | tail -n1)
[ -n "$archive" ] && [ -f "$archive" ] || { echo "demo: FAILED: no archive was written" >&2; exit 1; }
echo
echo "generated output (the lane's writable paths):"
ls "$repo/build/bin" "$repo/coverage/summary.txt"
echo "receipt: $receipt (status $(jq -r .sandbox_policy.status "$receipt"))"
echo "archive: $archive"

step "8. verify the archive offline against the pinned trust root"
rev=$(git rev-parse HEAD)
tree=$(git rev-parse 'HEAD^{tree}')
echo "receipt: revision $(jq -r .revision "$receipt"), worktree $(jq -r .worktree "$receipt")"
cmd=("$VERIFY" archive "$archive" --trust "$pinned" --require-status enforced_through_completion --require-success
     --require-lane workflow:ci --require-revision "$rev" --require-worktree "$tree"
     --current "$trust/versions")
echo "\$ ota-verify archive $archive --trust $pinned --require-status enforced_through_completion --require-success \\"
echo "    --require-lane workflow:ci --require-revision \$(git rev-parse HEAD) \\"
echo "    --require-worktree \$(git rev-parse 'HEAD^{tree}') --current $trust/versions"
"${cmd[@]}"
# refused WHAT NAME ARGS...: ota-verify ARGS must refuse (exit 1); prints
# its first line, else the demo fails
refused() {
  local what=$1 name=$2 rc=0
  shift 2
  "$VERIFY" "$@" >/dev/null 2>"$demo/$name.err" || rc=$?
  if [ "$rc" -ne 1 ]; then
    echo "demo: FAILED: $what was not refused (exit $rc)" >&2
    exit 1
  fi
  echo "$what is refused (exit 1): $(head -n1 "$demo/$name.err")"
}
# a merge gate that wanted another lane: the archive is of workflow ci
refused "a gate requiring task build" lane archive "$archive" --trust "$pinned" --require-lane task:build
# the next commit's files are not the ones this run saw
echo "# an edit" >>"$repo/ota.yaml"
git commit -qam "an edit after the run"
refused "a gate requiring the next commit's files" worktree archive "$archive" --trust "$pinned" \
  --require-worktree "$(git rev-parse 'HEAD^{tree}')"
jq '.evidence[0].adapter_version = "0.0.0-tampered"' "$archive" >"$demo/archive.tampered.json"
refused "a tampered archive" tampered archive "$demo/archive.tampered.json" --trust "$pinned"

step "9. an external provider: challenges and a batch of attestations through ota-attestd"
# a trust domain of its own (fresh each run): an issuer scoped to the
# provider target oci_remote and the endpoint's verifier key
ext=$demo/provider
if [ -x "$bin/ota-attestd" ]; then
  mkdir -p "$ext"
  "$OTA" trust init --domain provider.ota.local --dir "$ext/trust" >/dev/null
  "$OTA" trust add-principal --dir "$ext/trust" --id issuer:demo --role issuer \
    --provider-target oci_remote --sign "$ext/trust/keys/root-1.pem" >/dev/null
  "$OTA" trust add-key --dir "$ext/trust" --principal issuer:demo --generate "$ext/issuer.pem" \
    --sign "$ext/trust/keys/root-1.pem" >/dev/null
  "$OTA" trust add-principal --dir "$ext/trust" --id verifier:demo --role verifier \
    --provider-target '*' --sign "$ext/trust/keys/root-1.pem" >/dev/null
  "$OTA" trust add-key --dir "$ext/trust" --principal verifier:demo --generate "$ext/verifier.pem" \
    --sign "$ext/trust/keys/root-1.pem" >/dev/null
  root_id=$("$OTA" trust show "$ext/trust/root.json" --json | jq -r .identity)
  "$bin/ota-attestd" --db "$ext/attestd.db" --trust "$ext/trust/root.json" --key "$ext/verifier.pem" \
    --port 0 --port-file "$ext/port" 2>"$ext/attestd.log" &
  attestd_pid=$!
  trap 'kill "$attestd_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do [ -s "$ext/port" ] && break; sleep 0.05; done
  url="http://127.0.0.1:$(cat "$ext/port")"
  echo "ota-attestd listening on $url (loopback only)"
  files=()
  prior=
  for i in 1 2 3; do
    # one boundary's records in order: each names the one before as prior
    "$OTA" attest challenge --url "$url" --txn txn-demo --issuer issuer:demo --scope oci_remote \
      --json >"$ext/ch$i.json"
    jq -n --slurpfile c "$ext/ch$i.json" --arg tr "$root_id" --arg p "$prior" --argjson i "$i" \
      '{iss: "issuer:demo", eat_nonce: $c[0].nonce, txn: "txn-demo", trust_root: $tr,
        provider: "oci_remote", boundary: "step-1", platform: {os: "linux", architecture: "amd64"},
        kind: (if $i == 1 then "initial_application" else "transition" end)}
       + (if $p == "" then {} else {prior: $p} end)' >"$ext/claims$i.json"
    "$OTA" attest sign --key "$ext/issuer.pem" --claims "$ext/claims$i.json" --out "$ext/att$i.cose"
    prior=sha256:$(sha256sum "$ext/att$i.cose" | cut -d' ' -f1)
    files+=("$ext/att$i.cose")
  done
  echo "\$ ota attest submit --url $url att1.cose att2.cose att3.cose --trust root.json"
  "$OTA" attest submit --url "$url" "${files[@]}" --trust "$ext/trust/root.json"
  echo "(one POST of application/cbor-seq; each acceptance checked against the trust root)"
  if "$OTA" attest submit --url "$url" "${files[@]}" >"$ext/again.out" 2>&1; then
    echo "the same batch again was accepted: that is a bug" >&2
    kill "$attestd_pid"
    exit 1
  fi
  echo "the same batch again is refused, each challenge already spent:"
  grep '^refused' "$ext/again.out"
  kill -TERM "$attestd_pid"
  wait "$attestd_pid"
  trap - EXIT
  echo "ota-attestd stopped cleanly (SIGTERM)"
else
  echo "no ota-attestd in $bin: skipped"
fi

printf '\ndemo finished.\n  receipt: %s\n  archive: %s\n  check:   %s archive %s --trust %s\n' \
  "$receipt" "$archive" "$VERIFY" "$archive" "$pinned"
