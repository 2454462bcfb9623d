#!/usr/bin/env bash
# Regenerates vectors/archive: two runner-shaped archives of 9 attestations
# (a two-domain pair: a.* and b.*) and one external-provider archive (c.*:
# attestations signed by an issuer principal, each accepted by a verifier
# principal as ota-attestd does), each with its pinned trust root and its
# FIXTURE runner key, written by bench_archive --write-seed from a build tree.
#   vectors/archive/generate.sh BUILD_DIR
set -euo pipefail
b=${1:?build dir with bench/bench_archive}
d=$(cd "$(dirname "$0")" && pwd)
for x in a b; do
  "$b/bench/bench_archive" 1 --max 9 --write-seed "$d/$x.json" >/dev/null
done
"$b/bench/bench_archive" 1 --max 9 --external --write-seed "$d/c.json" >/dev/null
# d.*: correctly signed, but the provider rendered and applied a writable repo
# root where the effective policy says read_only (archive_control_mismatch)
"$b/bench/bench_archive" 1 --max 9 --widen --write-seed "$d/d.json" >/dev/null
# e.*: correctly signed, the applied record says ok, but its canary result
# says the write to the read-only repository root succeeded
# (archive_canary_failed); f.*: that canary result is missing
# (archive_canary_missing). Every applied record of a.* to d.* carries the
# canary results as oci_local records them.
"$b/bench/bench_archive" 1 --max 9 --canary-failed --write-seed "$d/e.json" >/dev/null
"$b/bench/bench_archive" 1 --max 9 --canary-missing --write-seed "$d/f.json" >/dev/null
# g.*, h.*, i.*: correctly signed, but an applied record's resources (the
# limits read back from the container's cgroups) are not the rendered
# config's linux.resources (archive_resources_mismatch): g claims pids 8192
# where 4096 was rendered, h claims a memory limit that was not rendered, i
# renders a memory limit and claims none. Every other archive renders and
# claims runc's default, pids 4096 and no memory limit.
"$b/bench/bench_archive" 1 --max 9 --resources different --write-seed "$d/g.json" >/dev/null
"$b/bench/bench_archive" 1 --max 9 --resources unrendered --write-seed "$d/h.json" >/dev/null
"$b/bench/bench_archive" 1 --max 9 --resources omitted --write-seed "$d/i.json" >/dev/null
# j.*: external, correctly signed, but verifier-1 is trusted for provider
# target oci_remote alone and accepted oci_local attestations
# (trust_scope_mismatch at each attestation)
"$b/bench/bench_archive" 1 --max 9 --external --verifier-target oci_remote \
  --write-seed "$d/j.json" >/dev/null
echo "vectors/archive regenerated"
