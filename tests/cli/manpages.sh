#!/usr/bin/env bash
# Man pages: every man/*.[1-8] passes `mandoc -T lint -W warning` with no
# message and renders; each has an EXIT STATUS section that names error
# names, and every snake_case name there is a real error name (from
# include/ota/errors/*.def) or a known non-error token; the three tools of
# the README have a page; docs/errors.md is current and covers every name;
# docs/README.md links every page and JSON Schema under docs/, and every link
# in it resolves.
set -euo pipefail
: "${OTA_SOURCE_DIR:?}"
cd "$OTA_SOURCE_DIR"
command -v mandoc >/dev/null || { echo "SKIP: mandoc missing (scripts/install-deps.sh)"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# every error name, and the generated list is current and complete
grep -ho 'X(OTA_[A-Z0-9_]*, *[0-9]*, *"[a-z0-9_]*"' include/ota/errors/*.def | sed 's/.*"\(.*\)"/\1/' | sort >"$tmp/names"
[ "$(wc -l <"$tmp/names")" -gt 100 ] || fail "too few error names parsed"
[ -z "$(uniq -d "$tmp/names")" ] || fail "duplicate error names: $(uniq -d "$tmp/names" | tr '\n' ' ')"
bash scripts/gen-errors-doc.sh --check || fail "docs/errors.md is stale: run scripts/gen-errors-doc.sh"
grep -o '^| [0-9]* | `[a-z0-9_]*`' docs/errors.md | sed 's/.*`\(.*\)`/\1/' | sort >"$tmp/documented"
diff "$tmp/names" "$tmp/documented" >/dev/null || fail "docs/errors.md does not list exactly the error names"

# tokens that may appear in EXIT STATUS without being error names: targets,
# terminal states, doctor finding codes (docs/doctor.md)
{
  printf '%s\n' oci_local enforced_through_completion enforcement_lost \
    enforcement_unknown_after_interruption not_started refused
  grep -o '^| `[a-z_]*` |' docs/doctor.md | tr -d '|` '
} | sort -u >"$tmp/allowed"

pages=(man/*.[1-8])
[ "${#pages[@]}" -ge 2 ] || fail "no man pages"
for want in man/ota.1 man/ota-verify.1; do
  [ -f "$want" ] || fail "$want missing"
done
if ! ls man/ota-attestd.[18] >/dev/null 2>&1; then
  fail "man/ota-attestd.8 (or .1) missing"
fi
for p in "${pages[@]}"; do
  out=$(mandoc -T lint -W warning "$p" 2>&1) || fail "$p: mandoc -T lint: $out"
  [ -z "$out" ] || fail "$p: mandoc -T lint: $out"
  mandoc -T utf8 "$p" >"$tmp/rendered" 2>&1 || fail "$p does not render"
  grep -q '^\.Sh EXIT STATUS' "$p" || fail "$p has no EXIT STATUS section"
  awk '/^\.Sh EXIT STATUS/ { on = 1; next } /^\.Sh / { on = 0 } on' "$p" >"$tmp/exit"
  grep -oE '\b[a-z][a-z0-9]*(_[a-z0-9]+)+\b' "$tmp/exit" | sort -u >"$tmp/used" || true
  [ -s "$tmp/used" ] || grep -q 'docs/errors.md' "$tmp/exit" || fail "$p: EXIT STATUS names no error"
  unknown=$(comm -23 "$tmp/used" <(sort -u "$tmp/names" "$tmp/allowed"))
  [ -z "$unknown" ] || fail "$p: EXIT STATUS names unknown errors: $unknown"
  echo "ok $p ($(wc -l <"$tmp/used") names)"
done
# the documentation index
for f in docs/*.md docs/internals/*.md docs/schemas/*.json; do
  b=${f#docs/}
  [ "$b" = README.md ] && continue
  grep -qF "]($b)" docs/README.md || fail "docs/README.md does not index $b"
done
grep -o '](\([^)#]*\))' docs/README.md | sed 's/](\(.*\))/\1/' | sort -u | while read -r l; do
  [ -e "docs/$l" ] || fail "docs/README.md links a missing $l"
done
echo "manpages: ok"
