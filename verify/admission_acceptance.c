/*
 * verify/admission_acceptance.c - verification and strict parsing of
 * acceptance records (include/ota/acceptance.h).
 */
#include <stdio.h>
#include <string.h>

#include "admission_cbor.h"
#include "ota/acceptance.h"
#include "ota/cose.h"

static ota_err malformed(ota_error *err, const char *where, const char *what)
{
	return ota_error_set(err, OTA_ERR_ACCEPTANCE_MALFORMED, where, "%s", what);
}

static ota_err parse_payload(ota_bytes p, ota_acceptance *a, ota_error *err)
{
	rd r = {p.ptr, p.len, 0};
	unsigned mt = 0;
	uint64_t n = 0, kv = 0;
	ota_error sub;
	ota_error_clear(&sub);
	if (rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 5 || n != 13)
		return malformed(err, "acceptance", "payload is not a map of 13 claims");
	uint32_t seen = 0;
	for (uint64_t i = 0; i < n; i++) {
		char key[32] = "";
		int k = -1;
		if (rd_head(&r, &mt, &kv, &sub) != OTA_OK)
			return malformed(err, "acceptance", sub.what);
		if (mt == 0) {
			k = kv == 1 ? 0 : kv == 6 ? 1 : kv == 10 ? 2 : -1;
		} else if (mt == 3) {
			ota_bytes t = {NULL, 0};
			if (rd_span(&r, kv, &t, &sub) != OTA_OK || t.len >= sizeof key)
				return malformed(err, "acceptance", "claim key");
			memcpy(key, t.ptr, t.len);
			static const char *const names[] = {"kind", "result", "attestation", "challenge",
			                                    "issuer", "txn", "boundary", "prior",
			                                    "trust_root", "verifier"};
			for (int j = 0; j < 10; j++)
				if (strcmp(key, names[j]) == 0)
					k = 3 + j;
		}
		if (k < 0)
			return malformed(err, "acceptance", "unknown claim");
		if (seen & (1u << k))
			return malformed(err, "acceptance", "duplicate claim");
		seen |= 1u << k;
		ota_err e = OTA_OK;
		char kind[32];
		switch (k) {
		case 0: e = rd_text(&r, "iss", a->verifier_id, sizeof a->verifier_id, true, &sub); break;
		case 1: e = rd_uint(&r, "iat", &a->accepted_at, &sub); break;
		case 2: e = rd_bstr(&r, "eat_nonce", a->nonce, OTA_NONCE_MIN_BYTES, OTA_NONCE_MAX_BYTES,
		                    &a->nonce_len, &sub); break;
		case 3:
			e = rd_text(&r, "kind", kind, sizeof kind, true, &sub);
			if (e == OTA_OK && strcmp(kind, "acceptance") != 0)
				return malformed(err, "kind", "not an acceptance");
			break;
		case 4: e = rd_text(&r, "result", a->result, sizeof a->result, true, &sub); break;
		case 5: e = rd_id(&r, "attestation", a->attestation, sizeof a->attestation, &sub); break;
		case 6: e = rd_id(&r, "challenge", a->challenge, sizeof a->challenge, &sub); break;
		case 7: e = rd_text(&r, "issuer", a->issuer, sizeof a->issuer, true, &sub); break;
		case 8: e = rd_text(&r, "txn", a->txn, sizeof a->txn, true, &sub); break;
		case 9: e = rd_text(&r, "boundary", a->boundary, sizeof a->boundary, true, &sub); break;
		case 10:
			if (r.off < r.len && r.p[r.off] == 0xf6)
				r.off++;
			else
				e = rd_id(&r, "prior", a->prior, sizeof a->prior, &sub);
			break;
		case 11: e = rd_id(&r, "trust_root", a->trust_root, sizeof a->trust_root, &sub); break;
		case 12: {
			uint64_t m = 0;
			if (rd_head(&r, &mt, &m, &sub) != OTA_OK || mt != 5 || m != 3)
				return malformed(err, "verifier", "must be a map of id, version, kid");
			char id[OTA_ATT_TEXT_MAX + 1];
			size_t kl = 0;
			for (int j = 0; j < 3 && e == OTA_OK; j++) {
				if ((e = rd_text(&r, "verifier", key, sizeof key, true, &sub)) != OTA_OK)
					break;
				if (strcmp(key, "id") == 0)
					e = rd_text(&r, "verifier.id", id, sizeof id, true, &sub);
				else if (strcmp(key, "version") == 0)
					e = rd_text(&r, "verifier.version", a->verifier_version,
					            sizeof a->verifier_version, true, &sub);
				else if (strcmp(key, "kid") == 0)
					e = rd_bstr(&r, "verifier.kid", a->verifier_kid, 32, 32, &kl, &sub);
				else
					return malformed(err, "verifier", "unknown member");
			}
			if (e == OTA_OK && strcmp(id, a->verifier_id) != 0)
				return malformed(err, "verifier", "id differs from iss");
			break;
		}
		default: break;
		}
		if (e != OTA_OK)
			return malformed(err, sub.where, sub.what);
	}
	if (r.off != r.len)
		return malformed(err, "acceptance", "trailing bytes");
	if (seen != (1u << 13) - 1)
		return malformed(err, "acceptance", "missing claims");
	return OTA_OK;
}

ota_err ota_acceptance_verify(ota_bytes cose, const ota_trust_root *root, int64_t at,
                              ota_acceptance *out, ota_error *err)
{
	ota_err e;
	if (out == NULL || root == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no output or trust root");
	memset(out, 0, sizeof *out);
	ota_cose_sign1 m;
	if ((e = ota_cose_sign1_decode(cose, NULL, &m, err)) != OTA_OK)
		return e;
	const ota_key *key = NULL;
	const ota_trust_principal *who = NULL;
	if ((e = ota_trust_lookup(root, m.kid, m.alg, OTA_TRUST_ROLE_VERIFIER, NULL, at, &key, &who,
	                          err)) != OTA_OK)
		return e;
	if ((e = ota_cose_sign1_check(&m, key, ota_bytes_make(NULL, 0), err)) != OTA_OK)
		return e;
	if ((e = parse_payload(m.payload, out, err)) != OTA_OK)
		goto out_clear;
	if (strcmp(ota_trust_principal_id(who), out->verifier_id) != 0 ||
	    memcmp(out->verifier_kid, m.kid.ptr, 32) != 0) {
		e = malformed(err, "iss", "signed by another verifier than it names");
		goto out_clear;
	}
	return OTA_OK;
out_clear:
	memset(out, 0, sizeof *out);
	return e;
}
