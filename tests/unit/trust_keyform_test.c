/*
 * Trust roots: one key is one kid, no key anyone can sign for, EdDSA is
 * Ed25519 (trust/snapshot.c, trust/draft.c; the alg change of a root key
 * across a rotation is trust_alg_cache_test).
 *
 * - The same P-256/P-384 key in the X9.62 hybrid form (0x06/0x07) had
 *   another kid and passed the canonical-form check (same length as the
 *   uncompressed point): a revoked key could come back as a "new" one. It is
 *   trust_key_noncanonical now, as a root key or a principal key, and
 *   principal keys are also compared as keys (trust_duplicate_key whatever
 *   their kids), in the parser and in ota_trust_draft_add_key.
 * - RSA e = 1, Ed25519 small-order and non-canonical points as root or
 *   principal keys; an Ed448 key declared EdDSA.
 * - A parse sharing another snapshot's loaded keys (ota_trust_root_parse_sharing,
 *   as the archive verifier parses its chain) refuses every entry that is not
 *   the very same kid, alg and PEM as the plain parse refuses it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ota/json.h"
#include "ota/trust.h"
#include "test_util.h"
#include "trust/trust_internal.h"

static const int64_t T0 = 1000, TEXP = 100000;
static ota_key *ROOT; /* ES256 root key of the one-root snapshots */

static int setup(void **state)
{
	(void)state;
	return ota_key_generate(OTA_ALG_ES256, &ROOT) == OTA_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	ota_key_free(ROOT);
	return 0;
}

/* ---- building snapshots by hand ---- */

/* A principal entry with these keys (reference stolen). */
static json_t *principal(const char *id, json_t *keys)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:[s], s:[s], s:[s]}, s:o}", "id", id, "role", "runner",
	                      "scopes", "repos", "*", "lanes", "*", "provider_targets", "*", "keys",
	                      keys);
	assert_non_null(p);
	return p;
}

/* A principal key entry: e plus valid_from (and revoked_at when > 0). */
static json_t *pkey(json_t *e, int64_t revoked_at)
{
	json_object_set_new(e, "valid_from", json_integer(T0));
	if (revoked_at > 0)
		json_object_set_new(e, "revoked_at", json_integer(revoked_at));
	return e;
}

/* Parses version 1 with ROOT as its root key and these principals. */
static ota_err parse_with(json_t *principals, json_t *extra_root_key)
{
	json_t *rk = json_pack("[o]", test_snap_key(ROOT, OTA_ALG_ES256));
	if (extra_root_key != NULL)
		json_array_append_new(rk, extra_root_key);
	size_t n = 0;
	char *text = test_snap_text(test_snap_body(1, NULL, 1, rk, principals, T0, TEXP), NULL, &n);
	ota_trust_root *r = NULL;
	ota_error err;
	ota_error_clear(&err);
	ota_err rc = ota_trust_root_parse(ota_bytes_make(text, n), &r, &err);
	if (rc != OTA_OK) {
		assert_null(r);
		assert_int_equal(err.code, rc);
	}
	ota_trust_root_free(r);
	free(text);
	return rc;
}

/* ---- 1. one key, one kid ---- */

static void test_hybrid_point_refused(void **s)
{
	(void)s;
	static const ota_alg algs[] = {OTA_ALG_ES256, OTA_ALG_ES384, OTA_ALG_ES512};
	for (size_t a = 0; a < 3; a++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(algs[a], &k), OTA_OK);
		const char *alg = ota_alg_name(algs[a]);
		size_t hn = 0, cn = 0;
		uint8_t *hyb = test_ec_spki_as(ota_key_evp(k), "hybrid", NULL, &hn);
		uint8_t *cmp = test_ec_spki_as(ota_key_evp(k), "compressed", NULL, &cn);
		/* a principal key in the hybrid form, under the kid of that form */
		assert_ota(parse_with(json_pack("[o]", principal("p", json_pack("[o]", pkey(test_snap_key_der(
		                                                          hyb, hn, alg), 0)))),
		                      NULL),
		           OTA_ERR_TRUST_KEY_NONCANONICAL);
		/* the audit's case: the key revoked, then again in the hybrid form */
		json_t *ps = json_pack("[o, o]",
		                       principal("p1", json_pack("[o]", pkey(test_snap_key(k, algs[a]),
		                                                             T0 + 1))),
		                       principal("p2", json_pack("[o]", pkey(test_snap_key_der(hyb, hn, alg),
		                                                             0))));
		assert_ota(parse_with(ps, NULL), OTA_ERR_TRUST_KEY_NONCANONICAL);
		/* ... and in the same principal; and the compressed form */
		assert_ota(parse_with(json_pack("[o]",
		                                principal("p", json_pack("[o, o]",
		                                                         pkey(test_snap_key(k, algs[a]),
		                                                              T0 + 1),
		                                                         pkey(test_snap_key_der(cmp, cn, alg),
		                                                              0)))),
		                      NULL),
		           OTA_ERR_TRUST_KEY_NONCANONICAL);
		/* a root key in the hybrid form */
		assert_ota(parse_with(json_array(), test_snap_key_der(hyb, hn, alg)),
		           OTA_ERR_TRUST_KEY_NONCANONICAL);
		/* the canonical form parses */
		assert_ota(parse_with(json_pack("[o]", principal("p", json_pack("[o]",
		                                                                  pkey(test_snap_key(k, algs[a]),
		                                                                       0)))),
		                      NULL),
		           OTA_OK);
		free(hyb);
		free(cmp);
		ota_key_free(k);
	}
}

/* The fingerprint the parser compares principal keys by is one per key,
 * whatever the encoding OpenSSL decoded it from. */
static void test_fingerprint_one_per_key(void **s)
{
	(void)s;
	static const ota_alg algs[] = {OTA_ALG_ES256, OTA_ALG_ES384, OTA_ALG_ES512, OTA_ALG_EDDSA};
	uint8_t prev[32] = {0};
	for (size_t a = 0; a < 4; a++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(algs[a], &k), OTA_OK);
		uint8_t want[32], got[32];
		assert_ota(trust_key_fingerprint(ota_key_evp(k), want), OTA_OK);
		assert_true(memcmp(want, prev, 32) != 0);
		memcpy(prev, want, 32);
		const char *forms[] = {"uncompressed", "hybrid", "compressed"};
		for (size_t f = 0; f < (algs[a] == OTA_ALG_EDDSA ? 1u : 3u); f++) {
			size_t n = 0;
			uint8_t *der = NULL;
			if (algs[a] == OTA_ALG_EDDSA)
				assert_ota(ota_key_spki_der(k, &der, &n), OTA_OK);
			else
				der = test_ec_spki_as(ota_key_evp(k), forms[f], NULL, &n);
			const unsigned char *p = der;
			EVP_PKEY *pk = d2i_PUBKEY(NULL, &p, (long)n);
			assert_non_null(pk);
			assert_ota(trust_key_fingerprint(pk, got), OTA_OK);
			if (memcmp(got, want, 32) != 0)
				fail_msg("%s %s: another fingerprint", ota_alg_name(algs[a]), forms[f]);
			EVP_PKEY_free(pk);
			free(der);
		}
		ota_key_free(k);
	}
	/* RSA: n and e */
	EVP_PKEY *r1 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	assert_non_null(r1);
	EVP_PKEY *r2 = EVP_PKEY_dup(r1);
	uint8_t f1[32], f2[32];
	assert_ota(trust_key_fingerprint(r1, f1), OTA_OK);
	assert_ota(trust_key_fingerprint(r2, f2), OTA_OK);
	assert_memory_equal(f1, f2, 32);
	assert_true(memcmp(f1, prev, 32) != 0);
	EVP_PKEY_free(r1);
	EVP_PKEY_free(r2);
}

/*
 * ota_trust_draft_add_key compares keys, not only kids: a draft whose entry
 * holds the key under another kid (white-box: the parsed root's signed body
 * edited after parsing) refuses the key again.
 */
static void test_draft_same_key_other_kid(void **s)
{
	(void)s;
	ota_key *k = NULL, *other = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &other), OTA_OK);
	const ota_key *rks[] = {ROOT};
	ota_trust_draft *d = NULL;
	ota_trust_root *r = NULL;
	assert_ota(ota_trust_draft_new("acme.example", rks, 1, 1, T0, TEXP, &d, NULL), OTA_OK);
	const char *any[] = {"*"};
	assert_ota(ota_trust_draft_add_principal(d, "p1", OTA_TRUST_ROLE_RUNNER, any, 1, any, 1, any,
	                                         1, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_principal(d, "p2", OTA_TRUST_ROLE_RUNNER, any, 1, any, 1, any,
	                                         1, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "p1", k, OTA_ALG_NONE, T0, 0, NULL), OTA_OK);
	/* the same kid: refused before and after */
	assert_ota(ota_trust_draft_add_key(d, "p2", k, OTA_ALG_NONE, T0, 0, NULL),
	           OTA_ERR_TRUST_DUPLICATE_KEY);
	assert_ota(ota_trust_draft_finish(d, &r, NULL), OTA_OK);
	ota_trust_draft_free(d);
	/* the entry's kid replaced: the same key under another kid */
	json_t *e = json_array_get(
	    json_object_get(json_array_get(json_object_get(r->signed_, "principals"), 0), "keys"), 0);
	assert_non_null(e);
	json_object_set_new(e, "kid", json_string("00000000000000000000000000000000"
	                                          "00000000000000000000000000000000"));
	assert_ota(ota_trust_draft_from(r, &d, NULL), OTA_OK);
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_trust_draft_add_key(d, "p2", k, OTA_ALG_NONE, T0, 0, &err),
	           OTA_ERR_TRUST_DUPLICATE_KEY);
	assert_non_null(strstr(err.what, "0000000000"));
	/* another key is fine */
	assert_ota(ota_trust_draft_add_key(d, "p2", other, OTA_ALG_NONE, T0, 0, NULL), OTA_OK);
	ota_trust_draft_free(d);
	ota_trust_root_free(r);
	ota_key_free(k);
	ota_key_free(other);
}

/* ---- 2. keys anyone can sign for; EdDSA is Ed25519 ---- */

static const uint8_t ED25519_SPKI[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                         0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

static json_t *ed25519_entry(const uint8_t pub[32])
{
	uint8_t der[44];
	memcpy(der, ED25519_SPKI, 12);
	memcpy(der + 12, pub, 32);
	return test_snap_key_der(der, sizeof der, "EdDSA");
}

static void test_weak_keys_refused(void **s)
{
	(void)s;
	/* RSA e = 1 as a root key and as a principal key */
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	assert_non_null(rsa);
	BIGNUM *n = NULL;
	assert_int_equal(EVP_PKEY_get_bn_param(rsa, OSSL_PKEY_PARAM_RSA_N, &n), 1);
	/* SPKI: SEQ { SEQ { rsaEncryption, NULL }, BIT STRING { SEQ { n, e = 1 } } } */
	uint8_t der[400];
	size_t nl = (size_t)BN_num_bytes(n);
	assert_int_equal(nl, 256);
	static const uint8_t algid[] = {0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
	                                0x0d, 0x01, 0x01, 0x01, 0x05, 0x00};
	size_t w = 0;
	size_t rsakey_len = 4 + 1 + nl + 3;  /* 02 82 01 01 00 n  02 01 01 */
	size_t bits_len = 1 + 4 + rsakey_len; /* 00, 30 82 xx xx */
	size_t total = sizeof algid + 4 + bits_len;
	der[w++] = 0x30, der[w++] = 0x82, der[w++] = (uint8_t)(total >> 8), der[w++] = (uint8_t)total;
	memcpy(der + w, algid, sizeof algid);
	w += sizeof algid;
	der[w++] = 0x03, der[w++] = 0x82, der[w++] = (uint8_t)(bits_len >> 8),
	der[w++] = (uint8_t)bits_len;
	der[w++] = 0x00;
	der[w++] = 0x30, der[w++] = 0x82, der[w++] = (uint8_t)(rsakey_len >> 8),
	der[w++] = (uint8_t)rsakey_len;
	der[w++] = 0x02, der[w++] = 0x82, der[w++] = (uint8_t)((nl + 1) >> 8),
	der[w++] = (uint8_t)(nl + 1);
	der[w++] = 0x00;
	assert_int_equal(BN_bn2bin(n, der + w), (int)nl);
	w += nl;
	der[w++] = 0x02, der[w++] = 0x01, der[w++] = 0x01;
	assert_int_equal(w, total + 4);
	BN_free(n);
	EVP_PKEY_free(rsa);
	assert_ota(parse_with(json_array(), test_snap_key_der(der, w, "PS256")), OTA_ERR_KEY_WEAK);
	assert_ota(parse_with(json_pack("[o]", principal("p", json_pack("[o]",
	                                                                pkey(test_snap_key_der(der, w,
	                                                                               "PS256"),
	                                                                     0)))),
	                      NULL),
	           OTA_ERR_KEY_WEAK);
	/* Ed25519: the identity, the order-2 point, y = p + 1 (small order),
	 * y = p + 2 (non-canonical) */
	uint8_t pts[4][32];
	memset(pts, 0, sizeof pts);
	pts[0][0] = 1;
	memset(pts[1], 0xff, 32), pts[1][0] = 0xec, pts[1][31] = 0x7f;
	memset(pts[2], 0xff, 32), pts[2][0] = 0xee, pts[2][31] = 0x7f;
	memset(pts[3], 0xff, 32), pts[3][0] = 0xef, pts[3][31] = 0x7f;
	const ota_err want[4] = {OTA_ERR_KEY_POINT, OTA_ERR_KEY_POINT, OTA_ERR_KEY_POINT,
	                         OTA_ERR_TRUST_KEY_NONCANONICAL};
	for (size_t i = 0; i < 4; i++) {
		assert_ota(parse_with(json_array(), ed25519_entry(pts[i])), want[i]);
		assert_ota(parse_with(json_pack("[o]", principal("p", json_pack("[o]",
		                                                                pkey(ed25519_entry(
		                                                                         pts[i]),
		                                                                     0)))),
		                      NULL),
		           want[i]);
	}
}

static void test_ed448_is_not_eddsa(void **s)
{
	(void)s;
	EVP_PKEY *p = EVP_PKEY_Q_keygen(NULL, NULL, "ED448");
	assert_non_null(p);
	ota_key *k = test_key_from_pkey(p);
	EVP_PKEY_free(p);
	assert_ota(parse_with(json_array(), test_snap_key(k, OTA_ALG_EDDSA)), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(parse_with(json_pack("[o]", principal("p", json_pack("[o]",
	                                                                pkey(test_snap_key(
	                                                                         k, OTA_ALG_EDDSA),
	                                                                     0)))),
	                      NULL),
	           OTA_ERR_ALG_KEY_MISMATCH);
	/* nor through the draft, with the default alg or EdDSA named */
	const ota_key *rks[] = {ROOT};
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_new("acme.example", rks, 1, 1, T0, TEXP, &d, NULL), OTA_OK);
	assert_ota(ota_trust_draft_add_principal(d, "p", OTA_TRUST_ROLE_RUNNER, NULL, 0, NULL, 0,
	                                         NULL, 0, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "p", k, OTA_ALG_NONE, T0, 0, NULL),
	           OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_trust_draft_add_key(d, "p", k, OTA_ALG_EDDSA, T0, 0, NULL),
	           OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_trust_draft_add_root_key(d, k, NULL), OTA_ERR_ALG_KEY_MISMATCH);
	ota_trust_draft_free(d);
	const ota_key *ed448_root[] = {k};
	assert_ota(ota_trust_draft_new("acme.example", ed448_root, 1, 1, T0, TEXP, &d, NULL),
	           OTA_ERR_ALG_KEY_MISMATCH);
	assert_null(d);
	ota_key_free(k);
}

/* ---- 4. a parse sharing another snapshot's keys checks every other entry ---- */

/* Version 1 text with ROOT and these principals (stolen). */
static char *text_with(json_t *principals, size_t *n)
{
	json_t *rk = json_pack("[o]", test_snap_key(ROOT, OTA_ALG_ES256));
	return test_snap_text(test_snap_body(1, NULL, 1, rk, principals, T0, TEXP), NULL, n);
}

/* ota_trust_root_parse_sharing(text, keys_of) has the outcome (and error)
 * of ota_trust_root_parse(text); keys_of is freed before the result. */
static ota_err parse_sharing_as_parse(json_t *principals, const char *keys_of_text)
{
	size_t n = 0;
	char *text = text_with(principals, &n);
	ota_trust_root *kof = NULL, *a = NULL, *b = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(keys_of_text, strlen(keys_of_text)), &kof,
	                                NULL),
	           OTA_OK);
	ota_error ea, eb;
	ota_error_clear(&ea);
	ota_error_clear(&eb);
	ota_err ra = ota_trust_root_parse(ota_bytes_make(text, n), &a, &ea);
	ota_err rb = ota_trust_root_parse_sharing(ota_bytes_make(text, n), kof, &b, &eb);
	ota_trust_root_free(kof);
	assert_string_equal(ota_err_name(rb), ota_err_name(ra));
	if (ra != OTA_OK) {
		assert_null(b);
		assert_string_equal(eb.where, ea.where);
		assert_string_equal(eb.what, ea.what);
	} else {
		assert_string_equal(ota_trust_root_identity(b), ota_trust_root_identity(a));
		assert_int_equal(ota_trust_root_key_count(b), ota_trust_root_key_count(a));
		/* the shared keys outlive keys_of: every kid still looks up */
		for (size_t i = 0; i < ota_trust_root_key_count(b); i++) {
			const trust_key *k = b->index[i];
			const ota_key *got = NULL;
			assert_ota(ota_trust_lookup(b, ota_bytes_make(k->kid, 32), k->alg,
			                            OTA_TRUST_ROLE_RUNNER, NULL, T0, &got, NULL, NULL),
			           OTA_OK);
			assert_true(ota_key_equal_public(got, a->index[i]->kr->key));
		}
	}
	ota_trust_root_free(a);
	ota_trust_root_free(b);
	free(text);
	return ra;
}

static void test_sharing_checks_what_differs(void **s)
{
	(void)s;
	ota_key *k = NULL, *k2 = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k2), OTA_OK);
	size_t n = 0;
	char *base = text_with(json_pack("[o]", principal("p", json_pack("[o]", pkey(test_snap_key(
	                                                                 k, OTA_ALG_ES256), 0)))),
	                       &n);
	/* the very same entries: shared */
	assert_ota(parse_sharing_as_parse(json_pack("[o]", principal("p", json_pack("[o]",
	                                                   pkey(test_snap_key(k, OTA_ALG_ES256), 0)))),
	                                  base),
	           OTA_OK);
	/* k's kid over k2's PEM: not shared, loaded, refused */
	json_t *e = test_snap_key(k, OTA_ALG_ES256), *e2 = test_snap_key(k2, OTA_ALG_ES256);
	json_object_set(e, "public_key", json_object_get(e2, "public_key"));
	json_decref(e2);
	assert_ota(parse_sharing_as_parse(json_pack("[o]", principal("p", json_pack("[o]",
	                                                                             pkey(e, 0)))),
	                                  base),
	           OTA_ERR_TRUST_KID_MISMATCH);
	/* k's kid and PEM under another alg: not shared, refused */
	assert_ota(parse_sharing_as_parse(json_pack("[o]", principal("p", json_pack("[o]",
	                                                   pkey(test_snap_key(k, OTA_ALG_ES384), 0)))),
	                                  base),
	           OTA_ERR_ALG_KEY_MISMATCH);
	/* k in the hybrid form under that form's kid */
	size_t hn = 0;
	uint8_t *hyb = test_ec_spki_as(ota_key_evp(k), "hybrid", NULL, &hn);
	assert_ota(parse_sharing_as_parse(json_pack("[o]", principal("p", json_pack("[o]",
	                                                   pkey(test_snap_key_der(hyb, hn, "ES256"),
	                                                        0)))),
	                                  base),
	           OTA_ERR_TRUST_KEY_NONCANONICAL);
	/* the shared key twice: one key under two entries */
	assert_ota(parse_sharing_as_parse(
	                   json_pack("[o, o]",
	                             principal("p", json_pack("[o]", pkey(test_snap_key(
	                                                                      k, OTA_ALG_ES256),
	                                                                  0))),
	                             principal("q", json_pack("[o]", pkey(test_snap_key(
	                                                                      k, OTA_ALG_ES256),
	                                                                  0)))),
	                   base),
	           OTA_ERR_TRUST_DUPLICATE_KEY);
	/* a new key beside the shared one */
	assert_ota(parse_sharing_as_parse(
	                   json_pack("[o]", principal("p", json_pack("[o, o]",
	                                                             pkey(test_snap_key(
	                                                                      k, OTA_ALG_ES256),
	                                                                  0),
	                                                             pkey(test_snap_key(
	                                                                      k2, OTA_ALG_ES256),
	                                                                  0)))),
	                   base),
	           OTA_OK);
	free(hyb);
	free(base);
	ota_key_free(k);
	ota_key_free(k2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hybrid_point_refused),
	    cmocka_unit_test(test_fingerprint_one_per_key),
	    cmocka_unit_test(test_draft_same_key_other_kid),
	    cmocka_unit_test(test_weak_keys_refused),
	    cmocka_unit_test(test_ed448_is_not_eddsa),
	    cmocka_unit_test(test_sharing_checks_what_differs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
