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
  "$OTA" trust add-principal --dir "$1" --id ci-runner --role runner --repo '*' --lane '*' \
    --provider-target oci_local --sign "$1/keys/root-1.pem" >/dev/null
  "$OTA" trust add-key --dir "$1" --principal ci-runner --generate "$1/keys/runner.pem" \
    --sign "$1/keys/root-1.pem" >/dev/null
}
