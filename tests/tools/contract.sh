# Sourced by tests/cli/*.sh: the pieces of a test contract that run on the
# busybox image of scripts/make-test-rootfs.sh.

# ota_arch: this host's architecture in OCI terms (amd64, arm64, ...).
ota_arch() {
  case "$(uname -m)" in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac
}

# contract_head NAME IMAGE: version, project and an ephemeral container
# context "box" on IMAGE for this host's platform; tasks follow.
contract_head() {
  cat <<YAML
version: 1
project:
  name: $1
execution:
  supported: [container]
  default_context: box
  lifecycle: ephemeral
  backends:
    container:
      image: $2
      platform: linux/$(ota_arch)
      engines: [docker]
  contexts:
    box:
      backend: container
      lifecycle: ephemeral
YAML
}

# runner_trust DIR DOMAIN: a trust domain at DIR (one root key, threshold 1)
# with a runner principal ci-runner for every repository and lane on
# oci_local, and its key at DIR/keys/runner.pem; the pinned snapshot is
# DIR/versions/1.root.json.
runner_trust() {
  "$OTA" trust init --domain "$2" --dir "$1" --root-keys 1 --threshold 1 >/dev/null
  runner_principal "$1" ci-runner "$1/keys/runner.pem" --repo '*' --lane '*' \
    --provider-target oci_local
}

# runner_principal DIR ID KEY SCOPE-OPTIONS...: a runner principal ID with
# those scopes in the trust domain at DIR (signed with its root-1 key), and
# a new key of it at KEY.
runner_principal() {
  local dir=$1 id=$2 key=$3
  shift 3
  "$OTA" trust add-principal --dir "$dir" --id "$id" --role runner "$@" \
    --sign "$dir/keys/root-1.pem" >/dev/null
  "$OTA" trust add-key --dir "$dir" --principal "$id" --generate "$key" \
    --sign "$dir/keys/root-1.pem" >/dev/null
}

# schema_check SCHEMA DOC...: each DOC validates against docs/schemas/SCHEMA
# (calls the script's fail otherwise).
schema_check() {
  /usr/bin/python3 -W ignore::DeprecationWarning "$OTA_SOURCE_DIR/tests/tools/validate_schema.py" \
    "$OTA_SOURCE_DIR/docs/schemas/$1" "${@:2}" >/dev/null || fail "${*:2} against $1"
}

# runner_world NAME: what a test of signed `ota run`s needs (root and runc
# checked by the caller): tmp, a fresh directory; root, a runtime root of its
# own; OTA_CACHE; T, a trust domain NAME.test (runner_trust) and PIN, its
# pinned snapshot; img, an image store holding bb:1. On exit the runs'
# leases are finalized and tmp, root and every path in world_rm removed.
world_rm=()
runner_world() {
  tmp=$(mktemp -d "/tmp/ota-$1-XXXXXX")
  root=/run/ota/test-$1-$$
  trap world_cleanup EXIT
  export OTA_CACHE=$tmp/cache
  T=$tmp/trust
  runner_trust "$T" "$1.test"
  PIN=$T/versions/1.root.json
  img=$tmp/img
  bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$img" bb:1 >/dev/null
}
# need_runner NAME: runner_world NAME when the test can run signed
# oci_local runs here (runc and root), else SKIP (exit 0).
need_runner() {
  command -v runc >/dev/null || { echo "SKIP: runc missing"; exit 0; }
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 0; }
  runner_world "$1"
}
world_cleanup() {
  "$OTA" cleanup --lease-db "$tmp/leases.db" --runtime-root "$root" --state-dir "$tmp/state" \
    >/dev/null 2>&1 || true
  rm -rf "$tmp" "$root" "${world_rm[@]}"
}

# verify_gate WANT_RC ARCHIVE [options...] FILTER: `ota-verify archive
# ARCHIVE --trust $PIN --json options...` exits WANT_RC with one JSON
# document that validates against verify-archive.schema.json and satisfies
# the jq FILTER.
verify_gate() {
  local want=$1 name=$2 rc=0
  shift 2
  local filter=${*: -1}
  set -- "${@:1:$#-1}"
  "$OTA_VERIFY" archive "$name" --trust "$PIN" --json "$@" >"$tmp/out" 2>"$tmp/verr" || rc=$?
  [ "$rc" -eq "$want" ] || fail "verify $(basename "$name") $*: exit $rc, want $want: $(cat "$tmp/out" "$tmp/verr")"
  jq -e "$filter" "$tmp/out" >/dev/null || fail "verify $(basename "$name") $*: $(cat "$tmp/out")"
  [ "$(jq -s length "$tmp/out")" -eq 1 ] || fail "verify $(basename "$name") $*: not one JSON document"
  schema_check verify-archive.schema.json "$tmp/out"
  echo "ok: verify $(basename "$name") $* -> exit $rc"
}

# reports_task NAME COMMAND: a task block (under "tasks:") in context box
# that runs COMMAND with a read-only root, reports/ writable, ota.yaml
# protected and the network denied, safe for agents.
reports_task() {
  cat <<YAML
  $1:
    context: box
    run: "$2"
    runtime_boundary:
      filesystem: {repo_root_mode: read_only, writable_paths: [reports], protected_paths: [ota.yaml]}
      network: {default: deny}
    safe_for_agent: true
YAML
}
