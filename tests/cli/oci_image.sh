#!/usr/bin/env bash
# ota image import/list/resolve against a local OCI layout store built offline
# (busybox rootfs packed with umoci, exported with skopeo to both archive kinds).
set -euo pipefail
: "${OTA:?}" "${OTA_SOURCE_DIR:?}"
. "$OTA_SOURCE_DIR/tests/tools/contract.sh"
for t in skopeo umoci; do command -v $t >/dev/null || { echo "SKIP: $t missing"; exit 0; }; done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (umoci unpack)"; exit 0; }
tmp=$(mktemp -d /tmp/ota-oci-image-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OTA_CACHE=$tmp/cache
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$tmp/src" bb:1
# idempotent: a second run changes nothing
before=$(cat "$tmp/src/index.json")
bash "$OTA_SOURCE_DIR/scripts/make-test-rootfs.sh" busybox-image "$tmp/src" bb:1
[ "$before" = "$(cat "$tmp/src/index.json")" ] || fail "make-test-rootfs.sh is not idempotent"

skopeo --insecure-policy copy --quiet oci:"$tmp/src":bb:1 oci-archive:"$tmp/bb.tar"
skopeo --insecure-policy copy --quiet oci:"$tmp/src":bb:1 docker-archive:"$tmp/bb-docker.tar":bb:1

store=$tmp/store
"$OTA" image import oci-archive:"$tmp/bb.tar" --name bb:oci --store "$store" --json >"$tmp/imp.json"
jq -e '.ok == true and (.digest | startswith("sha256:"))' "$tmp/imp.json" >/dev/null || fail "import oci-archive"
"$OTA" image import docker-archive:"$tmp/bb-docker.tar" --name bb:docker --store "$store" >/dev/null
"$OTA" image list --store "$store" --json >"$tmp/list.json"
jq -e 'map(.name) | sort == ["bb:docker","bb:oci"]' "$tmp/list.json" >/dev/null || fail "list: $(cat "$tmp/list.json")"

arch=$(ota_arch)
"$OTA" image resolve bb:oci --store "$store" --cache "$tmp/rootfs" --platform "linux/$arch" --json >"$tmp/res.json"
jq -e '.ok == true and .platform_check.ok == true and .platform_check.image_platform.architecture == "'"$arch"'"' \
  "$tmp/res.json" >/dev/null || fail "resolve: $(cat "$tmp/res.json")"
rootfs=$(jq -r .rootfs "$tmp/res.json")
[ -x "$rootfs/bin/busybox" ] && [ -d "$rootfs/workspace" ] || fail "unpacked rootfs incomplete"
# cached: a second resolve reuses the unpacked tree
"$OTA" image resolve bb:oci --store "$store" --cache "$tmp/rootfs" >/dev/null
[ "$(ls "$tmp/rootfs" | wc -l)" -eq 1 ] || fail "rootfs cache not reused"

# a foreign platform is refused (no emulation), with the check as evidence
other=$([ "$arch" = amd64 ] && echo arm64 || echo amd64)
set +e
"$OTA" image resolve bb:oci --store "$store" --cache "$tmp/rootfs" --platform "linux/$other" --json >"$tmp/bad.json"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "foreign platform exit $rc"
jq -e '.ok == false and .error.code == "oci_platform_mismatch" and .platform_check.ok == false' \
  "$tmp/bad.json" >/dev/null || fail "mismatch json: $(cat "$tmp/bad.json")"
# unknown image, unsupported transport
set +e
"$OTA" image resolve nope:1 --store "$store" 2>/dev/null; rc1=$?
"$OTA" image import docker://example/x --name x:1 --store "$store" 2>/dev/null; rc2=$?
set -e
[ "$rc1" -eq 1 ] || fail "unknown image exit $rc1"
[ "$rc2" -eq 2 ] || fail "bad transport exit $rc2"
# image volumes are refused (a runtime would add storage outside the plan)
umoci config --image "$tmp/src:bb:1" --tag bb:vol --config.volume /data
skopeo --insecure-policy copy --quiet oci:"$tmp/src":bb:vol oci-archive:"$tmp/vol.tar"
"$OTA" image import oci-archive:"$tmp/vol.tar" --name bb:vol --store "$store" >/dev/null
set +e
"$OTA" image resolve bb:vol --store "$store" --cache "$tmp/rootfs" --json >"$tmp/vol.json"; rc=$?
set -e
[ "$rc" -eq 1 ] || fail "image volume: exit $rc"
jq -e '.error.code == "oci_policy_unsupported" and .error.where == "image.volumes"' "$tmp/vol.json" >/dev/null \
  || fail "image volume: $(cat "$tmp/vol.json")"
echo "oci_image: ok"
