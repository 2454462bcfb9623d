#!/usr/bin/env bash
# ota attest sign --claims: what the endpoint would refuse is refused here
# too, with the same stable name and the member that is wrong: a negative
# iat (named "iat", not "exp"), an empty prior or other optional text, an
# empty platform or policy object (never silently dropped). Nothing is
# written then. Also: --ttl 0 / --bytes 0 are usage errors (0 is not the
# default). No endpoint needed.
set -uo pipefail
OTA=${OTA:?path of ota}
work=$(mktemp -d /tmp/ota-attest-claims-XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v jq >/dev/null || { echo "FAIL jq missing (scripts/install-deps.sh)"; exit 1; }

"$OTA" trust init --domain claims.example --dir "$work/trust" >/dev/null 2>&1 \
  || { echo "FAIL ota trust init"; exit 1; }
KEY="$work/trust/keys/root-1.pem"
[ -s "$KEY" ] || { echo "FAIL no key at $KEY"; exit 1; }

# a valid claims file: everything required, with a platform and a policy
jq -n '{iss: "issuer:acme", eat_nonce: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
  kind: "capability", txn: "txn-1", boundary: "b1", provider: "oci_remote",
  trust_root: ("sha256:" + ("0" * 64)),
  platform: {os: "linux", architecture: "amd64"},
  policy: {canonical: ("sha256:" + ("1" * 64))}}' >"$work/ok.json"

# sign_case NAME RC NAME_ON_STDERR WHERE JQ-FILTER
sign_case() {
  local name=$1 want=$2 code=$3 where=$4 filter=$5
  jq "$filter" "$work/ok.json" >"$work/case.json" || { bad "$name: jq"; return; }
  rm -f "$work/out.cose"
  "$OTA" attest sign --key "$KEY" --claims "$work/case.json" --out "$work/out.cose" \
    >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: rc=$rc (want $want)"; sed 's/^/  | /' "$work/stderr"; return
  fi
  if [ "$want" -eq 0 ]; then
    [ -s "$work/out.cose" ] && pass "$name: signed" || bad "$name: nothing written"
    return
  fi
  if grep -q "^ota attest: $code: $where: " "$work/stderr"; then
    pass "$name: $code at $where"
  else
    bad "$name: stderr lacks '$code: $where'"; sed 's/^/  | /' "$work/stderr"
  fi
  [ -e "$work/out.cose" ] && bad "$name: wrote $work/out.cose" || true
}

sign_case "valid" 0 "" "" '.'
sign_case "iat and exp given" 0 "" "" '. + {iat: 1800000000, exp: 1800000100}'
sign_case "prior null (first record)" 0 "" "" '. + {prior: null}'
sign_case "one platform member" 0 "" "" '. + {platform: {os: "linux"}}'

# iat / exp: each named for itself
sign_case "negative iat" 1 attestation_claim_type iat '. + {iat: -5}'
sign_case "negative iat, valid exp" 1 attestation_claim_type iat '. + {iat: -5, exp: 1800000000}'
sign_case "text iat" 1 attestation_claim_type iat '. + {iat: "now"}'
sign_case "negative exp" 1 attestation_claim_type exp '. + {exp: -1}'
sign_case "negative exp, valid iat" 1 attestation_claim_type exp '. + {iat: 1800000000, exp: -1}'

# empty values the endpoint refuses (attestation_claim_type): never dropped
sign_case "prior empty" 1 attestation_claim_type prior '. + {prior: ""}'
sign_case "platform {}" 1 attestation_claim_type platform '. + {platform: {}}'
sign_case "policy {}" 1 attestation_claim_type policy '. + {policy: {}}'
sign_case "platform os empty" 1 attestation_claim_type os '. + {platform: {os: ""}}'
sign_case "policy effective empty" 1 attestation_claim_type effective \
  '. + {policy: {effective: ""}}'
sign_case "adapter empty" 1 attestation_claim_type adapter '. + {adapter: ""}'
sign_case "segment empty" 1 attestation_claim_type segment '. + {segment: ""}'
sign_case "txn empty" 1 attestation_claim_type txn '. + {txn: ""}'
# still refused as before
sign_case "platform not an object" 1 attestation_claim_type claims '. + {platform: "linux"}'
sign_case "unknown platform member" 1 attestation_claim_unknown platform \
  '. + {platform: {os: "linux", kernel: "6"}}'

# --ttl 0 / --bytes 0: usage (2), nothing sent
for opt in --ttl --bytes; do
  "$OTA" attest challenge --url http://127.0.0.1:9 --txn t --issuer issuer:acme \
    --scope oci_remote "$opt" 0 >"$work/stdout" 2>"$work/stderr"
  rc=$?
  [ "$rc" -eq 2 ] && grep -q "usage" "$work/stderr" && pass "$opt 0: usage" \
    || { bad "$opt 0: rc=$rc"; sed 's/^/  | /' "$work/stderr"; }
done

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
