#!/usr/bin/env bash
# `cmake --install` lays out the CLIs, libota, its public headers, ota.pc and
# the man pages, and a program built with `pkg-config ota` links and runs
# against the installed library.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$OTA_BINARY_DIR" --prefix "$tmp/prefix" >/dev/null
p=$tmp/prefix
libdir=$(ls -d "$p"/lib*/ | head -n 1)
for f in bin/ota bin/ota-verify bin/ota-attestd include/ota/common.h include/ota/cose.h \
         include/ota/json.h include/ota/trust.h include/ota/policy.h share/man/man1/ota.1 \
         share/man/man1/ota-verify.1 share/man/man8/ota-attestd.8; do
  [ -e "$p/$f" ] || fail "not installed: $f"
done
[ -e "$libdir/pkgconfig/ota.pc" ] || fail "ota.pc not installed"
ls "$libdir"/libota.so* >/dev/null || fail "libota not installed"
"$p/bin/ota" version | grep -q '^ota ' || fail "installed ota does not run"
cat >"$tmp/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <ota/json.h>
#include <ota/key.h>
int main(void)
{
	json_t *v = NULL;
	const char *doc = "{\"kind\":\"ota.demo/v1\",\"b\":1,\"a\":[true,null]}";
	if (ota_json_parse(ota_bytes_make(doc, strlen(doc)), &v, NULL) != OTA_OK)
		return 1;
	char *s = NULL;
	size_t n = 0;
	if (ota_jcs_serialize(v, &s, &n, NULL) != OTA_OK)
		return 1;
	printf("%s %s\n", s, ota_err_name(OTA_ERR_SIG_INVALID));
	return 0;
}
C
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
cc -std=c11 -o "$tmp/prog" "$tmp/prog.c" $(pkg-config --cflags --libs ota jansson) \
  -Wl,-rpath,"$libdir" || fail "cannot build against the installed libota"
out=$("$tmp/prog")
[ "$out" = '{"a":[true,null],"b":1,"kind":"ota.demo/v1"} signature_invalid' ] || fail "unexpected output: $out"
echo "install: ok"
