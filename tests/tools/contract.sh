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
