#!/usr/bin/env bash
# Builds root filesystems for oci_local offline, idempotently.
#
#   make-test-rootfs.sh busybox DIR
#       DIR becomes a small rootfs: busybox-static and its applet links
#       (/bin/busybox --install -s), the mount points oci_local uses.
#   make-test-rootfs.sh busybox-image STORE NAME
#       The same rootfs packed into the OCI image layout STORE as NAME
#       (umoci init/new/insert; no hand-written layers).
#   make-test-rootfs.sh debian-image STORE [NAME]
#       A debian:bookworm-slim-like rootfs (debootstrap --variant=minbase
#       from the mirror apt uses), cached under /var/cache/ota/debootstrap
#       so CI reuses it, packed into STORE as NAME (default
#       debian:bookworm-slim).
# Environment: OTA_CACHE (default /var/cache/ota).
set -euo pipefail

cache=${OTA_CACHE:-/var/cache/ota}

die() { echo "make-test-rootfs: $*" >&2; exit 2; }

busybox_rootfs() {
  local dir=$1 bb
  bb=$(command -v busybox || true)
  [ -n "$bb" ] || die "busybox-static is not installed (scripts/install-deps.sh)"
  if [ -x "$dir/bin/busybox" ] && cmp -s "$bb" "$dir/bin/busybox" && [ -e "$dir/bin/sh" ]; then
    return 0
  fi
  mkdir -p "$dir"/{bin,etc,proc,sys,dev,tmp,workspace,root,run}
  cp "$bb" "$dir/bin/busybox"
  chmod 0755 "$dir/bin/busybox"
  # --install -s runs inside the new root so the links point at /bin/busybox
  chroot "$dir" /bin/busybox --install -s /bin
  # bash-free images: the upstream examples call `bash -lc`; busybox sh serves
  [ -e "$dir/bin/bash" ] || ln -s busybox "$dir/bin/bash"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$dir/etc/passwd"
  printf 'root:x:0:\n' >"$dir/etc/group"
}

host_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;;
  esac
}

pack_image() { # rootfs store name
  local rootfs=$1 store=$2 name=$3
  command -v umoci >/dev/null || die "umoci is not installed"
  [ -f "$store/oci-layout" ] || umoci init --layout "$store"
  if umoci list --layout "$store" 2>/dev/null | grep -qxF "$name"; then
    return 0
  fi
  umoci new --image "$store:$name"
  umoci insert --image "$store:$name" "$rootfs" /
  umoci config --image "$store:$name" --os linux --architecture "$(host_arch)" \
    --config.workingdir /workspace --config.cmd /bin/sh
}

debian_rootfs() {
  local dir=$cache/debootstrap/bookworm-$(host_arch)
  if [ -f "$dir/.ota-complete" ]; then echo "$dir/rootfs"; return 0; fi
  command -v debootstrap >/dev/null || die "debootstrap is not installed"
  local mirror
  mirror=$(grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
             | grep -v security | head -n1 | awk '{ if ($1=="deb") print $2; else print $2 }')
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  debootstrap --variant=minbase --arch "$(host_arch)" bookworm "$dir.tmp/rootfs" "$mirror" >&2
  # slim like the official image: no docs, man pages or apt lists
  rm -rf "$dir.tmp/rootfs"/usr/share/{doc,man,info}/* "$dir.tmp/rootfs"/var/lib/apt/lists/* \
         "$dir.tmp/rootfs"/var/cache/apt/*.bin
  mkdir -p "$dir.tmp/rootfs/workspace"
  touch "$dir.tmp/.ota-complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "$dir/rootfs"
}

case "${1:-}" in
  busybox)
    [ $# -eq 2 ] || die "usage: $0 busybox DIR"
    busybox_rootfs "$2" ;;
  busybox-image)
    [ $# -eq 3 ] || die "usage: $0 busybox-image STORE NAME"
    tmp=$cache/busybox-rootfs
    mkdir -p "$cache"
    busybox_rootfs "$tmp"
    pack_image "$tmp" "$2" "$3" ;;
  debian-image)
    [ $# -ge 2 ] || die "usage: $0 debian-image STORE [NAME]"
    r=$(debian_rootfs)
    pack_image "$r" "$2" "${3:-debian:bookworm-slim}" ;;
  *)
    die "usage: $0 busybox DIR | busybox-image STORE NAME | debian-image STORE [NAME]" ;;
esac
