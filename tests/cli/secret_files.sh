#!/usr/bin/env bash
# The operator's secrets and durable files, through the CLIs: keys written
# by ota cose keygen, ota trust init and ota trust add-key --generate are
# 0600 whatever the umask (the public key 0644, DIR/keys 0700) and never
# written over anything; a private key readable by group or others, or
# owned by another user, is refused where it is used (key_permissions_unsafe,
# exit 2: ota cose sign, ota trust sign, ota-verify cose); a DIR/keys that
# others may enter is refused before a key is written into it; the
# verifier's ledger is made 0600, and one that others may write or another
# user owns is file_permissions_unsafe (exit 2). Root: chown to 65534 is
# "another user" (skipped otherwise).
set -u
OTA=${OTA:?OTA must name the ota CLI}
OTA_VERIFY=${OTA_VERIFY:?OTA_VERIFY must name the ota-verify CLI}
SRC=${OTA_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d /tmp/ota-secret-files-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
checks=0

# expect CODE DESCRIPTION -- COMMAND...
expect() {
	local want=$1 what=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	checks=$((checks + 1))
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $what: exit $got, want $want" >&2
		sed 's/^/  stderr: /' "$T/err" >&2
		fails=$((fails + 1))
	fi
}
stderr_has() {
	checks=$((checks + 1))
	if ! grep -q -- "$1" "$T/err"; then
		echo "FAIL: $2: stderr lacks '$1'" >&2
		sed 's/^/  stderr: /' "$T/err" >&2
		fails=$((fails + 1))
	fi
}
mode_is() {
	checks=$((checks + 1))
	local got
	got=$(stat -c %a "$1")
	if [ "$got" != "$2" ]; then
		echo "FAIL: $3: $1 has mode $got, want $2" >&2
		fails=$((fails + 1))
	fi
}
check() {
	checks=$((checks + 1))
	if ! eval "$1"; then
		echo "FAIL: $2" >&2
		fails=$((fails + 1))
	fi
}

# ---- ota cose keygen under umask 000 ----
(umask 000 && "$OTA" cose keygen --alg ES256 --out "$T/k.pem" --pub "$T/k.pub" >/dev/null 2>"$T/err") ||
	{ echo "FAIL: keygen: $(cat "$T/err")" >&2; exit 1; }
mode_is "$T/k.pem" 600 "keygen private key under umask 000"
mode_is "$T/k.pub" 644 "keygen public key under umask 000"
sum=$(sha256sum <"$T/k.pem")
expect 2 "keygen over an existing key" -- "$OTA" cose keygen --alg ES256 --out "$T/k.pem"
stderr_has already_exists "keygen over an existing key"
check '[ "$(sha256sum <"$T/k.pem")" = "$sum" ]' "keygen changed an existing key"
ln -s "$T/elsewhere.pem" "$T/link.pem"
expect 2 "keygen through a dangling symlink" -- "$OTA" cose keygen --alg ES256 --out "$T/link.pem"
check '[ ! -e "$T/elsewhere.pem" ]' "keygen wrote through a symlink"
check '[ -z "$(find "$T" -name "*.tmp.*")" ]' "keygen left a temporary file"

# ---- the key where it is used: ota cose sign, ota-verify cose ----
printf 'payload' >"$T/p"
expect 0 "sign with a 0600 key" -- "$OTA" cose sign --key "$T/k.pem" --payload "$T/p" --out "$T/m.cose"
for m in 640 604 644 660 400; do
	chmod "$m" "$T/k.pem"
	rm -f "$T/m2.cose"
	if [ "$m" = 400 ]; then
		expect 0 "sign with a $m key" -- "$OTA" cose sign --key "$T/k.pem" --payload "$T/p" --out "$T/m2.cose"
		continue
	fi
	expect 2 "sign with a $m key" -- "$OTA" cose sign --key "$T/k.pem" --payload "$T/p" --out "$T/m2.cose"
	stderr_has "key_permissions_unsafe: $T/k.pem" "sign with a $m key"
	check '[ ! -e "$T/m2.cose" ]' "sign with a $m key wrote a message"
	expect 2 "ota-verify cose with a $m private key" -- "$OTA_VERIFY" cose --key "$T/k.pem" "$T/m.cose"
	stderr_has key_permissions_unsafe "ota-verify cose with a $m private key"
done
chmod 600 "$T/k.pem"
# the public key is not secret: 0644 and any owner
expect 0 "ota-verify cose with the 0644 public key" -- "$OTA_VERIFY" cose --key "$T/k.pub" "$T/m.cose"
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$T/k.pem" "$T/k.pub"
	expect 2 "sign with a key owned by uid 65534" -- "$OTA" cose sign --key "$T/k.pem" --payload "$T/p" --out "$T/m3.cose"
	stderr_has "owned by uid 65534" "sign with a key owned by uid 65534"
	expect 0 "ota-verify cose with a public key owned by uid 65534" -- "$OTA_VERIFY" cose --key "$T/k.pub" "$T/m.cose"
	chown 0:0 "$T/k.pem"
	expect 0 "sign with a root-owned 0600 key" -- "$OTA" cose sign --key "$T/k.pem" --payload "$T/p" --out "$T/m3.cose"
fi

# ---- ota trust init / add-key --generate / sign ----
D=$T/trust
(umask 000 && "$OTA" trust init --domain acme --dir "$D" --root-keys 2 --threshold 1 >/dev/null 2>"$T/err") ||
	{ echo "FAIL: trust init: $(cat "$T/err")" >&2; exit 1; }
mode_is "$D/keys" 700 "trust init DIR/keys under umask 000"
mode_is "$D/keys/root-1.pem" 600 "trust init root key under umask 000"
mode_is "$D/keys/root-2.pem" 600 "trust init root key under umask 000"
(umask 000 && "$OTA" trust add-key --dir "$D" --principal issuer:acme --generate "$T/issuer.pem" \
	--sign "$D/keys/root-1.pem" >/dev/null 2>"$T/err") || true
# add-key needs the principal first when it is not there; make it and retry
if [ ! -e "$T/issuer.pem" ]; then
	"$OTA" trust add-principal --dir "$D" --id issuer:acme --role issuer >/dev/null 2>&1
	(umask 000 && "$OTA" trust add-key --dir "$D" --principal issuer:acme --generate "$T/issuer.pem" \
		--sign "$D/keys/root-1.pem" >/dev/null 2>"$T/err") ||
		{ echo "FAIL: add-key --generate: $(cat "$T/err")" >&2; fails=$((fails + 1)); }
fi
mode_is "$T/issuer.pem" 600 "add-key --generate under umask 000"
"$OTA" trust add-principal --dir "$D" --id runner:ci --role runner >/dev/null 2>&1
chmod 644 "$D/keys/root-2.pem"
expect 2 "trust sign with a 0644 root key" -- "$OTA" trust sign --dir "$D" --key "$D/keys/root-2.pem"
stderr_has key_permissions_unsafe "trust sign with a 0644 root key"
chmod 600 "$D/keys/root-2.pem"
expect 0 "trust sign with the 0600 root key" -- "$OTA" trust sign --dir "$D" --key "$D/keys/root-2.pem"
# a keys directory others may enter: refused before a new key is put there
D2=$T/trust2
mkdir -p "$D2/keys" && chmod 755 "$D2/keys"
expect 2 "trust init into a 0755 DIR/keys" -- "$OTA" trust init --domain acme --dir "$D2" --root-keys 1
stderr_has key_permissions_unsafe "trust init into a 0755 DIR/keys"
check '[ -z "$(ls -A "$D2/keys")" ]' "trust init wrote a key into a 0755 DIR/keys"
rmdir "$D2/keys" && ln -s "$T" "$D2/keys"
expect 1 "trust init into a symlinked DIR/keys" -- "$OTA" trust init --domain acme --dir "$D2" --root-keys 1
stderr_has path_symlink "trust init into a symlinked DIR/keys"
check '[ ! -e "$T/root-1.pem" ]' "trust init wrote a key through a symlinked DIR/keys"

# ---- the verifier's ledger ----
V=$SRC/vectors/archive
L=$T/ledger.db
(umask 000 && "$OTA_VERIFY" archive "$V/a.json" --trust "$V/a.json.root.json" --ledger "$L" --ledger-init \
	>/dev/null 2>"$T/err") || { echo "FAIL: ledger-init: $(cat "$T/err")" >&2; fails=$((fails + 1)); }
mode_is "$L" 600 "ledger made under umask 000"
chmod 666 "$L"
expect 2 "a world-writable ledger" -- "$OTA_VERIFY" archive "$V/b.json" --trust "$V/b.json.root.json" --ledger "$L"
stderr_has file_permissions_unsafe "a world-writable ledger"
chmod 600 "$L"
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$L"
	expect 2 "a ledger owned by uid 65534" -- "$OTA_VERIFY" archive "$V/b.json" --trust "$V/b.json.root.json" --ledger "$L"
	stderr_has file_permissions_unsafe "a ledger owned by uid 65534"
fi

echo "secret_files: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
