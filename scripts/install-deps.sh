#!/usr/bin/env bash
# Installs every Debian 12 package the toolkit needs to build, test and run.
# Idempotent: apt-get install skips what is present; the package list is
# refreshed only when a package is missing.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libssl-dev libcbor-dev libjansson-dev libyaml-dev libcurl4-openssl-dev
  libsqlite3-dev sqlite3 libcmocka-dev libmicrohttpd-dev zlib1g-dev
  mandoc jq curl python3 python3-cryptography python3-jsonschema nodejs
  runc crun busybox-static skopeo umoci iproute2 util-linux debootstrap openssl
  strace git
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# npm (tests/cli/interop_cose.sh): bundled with some nodejs builds, a separate
# Debian package with Debian's own nodejs.
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: npm missing; run as root" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
