/*
 * Attestation admission against re-encoding: one signed attestation has one
 * accepted form, so a third party holding no key cannot submit other bytes
 * (another identity) for it, take its challenge first and break the
 * provider's chain. Refused: a kid only in the unprotected header
 * (attestation_kid_missing), any unprotected label
 * (attestation_unprotected_header), a head not in its shortest form
 * (cose_head_not_shortest), a high-S ECDSA signature
 * (attestation_signature_high_s). After each refusal the provider's own
 * bytes are still accepted and its chain goes on.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/cbor.h"
#include "ota/cose.h"

#define NOW 1800000000

typedef struct world {
	test_admission_world base;   /* root, store, context, signer (test_util.c) */
	ota_key *k256, *k384, *k521; /* issuer:acme's keys */
} world;

static const ota_nonce_binding acme = {"txn-env", "issuer:acme", "oci_remote"};

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "envelope.test", NOW - 86400,
	                                                NOW + 86400 * 30);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->k256), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES384, &w->k384), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES512, &w->k521), OTA_OK);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->k256, NOW - 86400);
	test_trust_add_key(d, "issuer:acme", w->k384, NOW - 86400);
	test_trust_add_key(d, "issuer:acme", w->k521, NOW - 86400);
	test_admission_world_finish(&w->base, d, "envelope.db");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_admission_world_free(&w->base);
	ota_key_free(w->k256);
	ota_key_free(w->k384);
	ota_key_free(w->k521);
	free(w);
	return 0;
}

/* The claims of an attestation for a fresh challenge on boundary b. */
static ota_attestation claims_for(world *w, const char *boundary, const char *prior)
{
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(w->base.store, &acme, 0, 0, NOW - 10, &c, NULL), OTA_OK);
	ota_attestation a;
	test_attestation_claims(&a, w->base.root, "issuer:acme", c.txn, boundary, prior);
	a.iat = NOW - 5;
	a.exp = NOW + 120;
	memcpy(a.nonce, c.nonce, c.nonce_len);
	a.nonce_len = c.nonce_len;
	return a;
}

/* The payload of an attestation for a fresh challenge on boundary b. */
static uint8_t *payload_for(world *w, const char *boundary, const char *prior, size_t *len)
{
	ota_attestation a = claims_for(w, boundary, prior);
	uint8_t *p = NULL;
	assert_ota(ota_attestation_encode(&a, &p, len), OTA_OK);
	return p;
}

/* An attestation as the provider signs it (ota_cose_sign1_sign, kid protected). */
static uint8_t *attest(world *w, const ota_key *k, const char *boundary, const char *prior,
                       size_t *len)
{
	ota_attestation a = claims_for(w, boundary, prior);
	return test_attestation_sign(&a, k, true, len);
}

/* 18([prot, unprot (raw CBOR), payload, signature over prot and payload]) */
static uint8_t *sign1_raw(const ota_key *k, ota_alg alg, ota_bytes prot, ota_bytes unprot,
                          ota_bytes payload, size_t *len)
{
	ota_cbor_wr tbs = {0}, m = {0};
	ota_cbor_head(&tbs, OTA_CBOR_ARRAY, 4);
	ota_cbor_text(&tbs, "Signature1");
	ota_cbor_bstr(&tbs, prot.ptr, prot.len);
	ota_cbor_bstr(&tbs, NULL, 0);
	ota_cbor_bstr(&tbs, payload.ptr, payload.len);
	assert_false(tbs.oom);
	uint8_t sig[132];
	size_t sl = 0;
	assert_ota(ota_key_sign(k, alg, ota_bytes_make(tbs.p, tbs.len), (ota_buf){sig, sizeof sig}, &sl),
	           OTA_OK);
	free(tbs.p);
	ota_cbor_head(&m, OTA_CBOR_TAG, 18);
	ota_cbor_head(&m, OTA_CBOR_ARRAY, 4);
	ota_cbor_bstr(&m, prot.ptr, prot.len);
	ota_cbor_put(&m, unprot.ptr, unprot.len);
	ota_cbor_bstr(&m, payload.ptr, payload.len);
	ota_cbor_bstr(&m, sig, sl);
	assert_false(m.oom);
	*len = m.len;
	return m.p;
}

static ota_err admit(world *w, const uint8_t *msg, size_t len, char *id_out)
{
	return test_admission_admit(&w->base, ota_bytes_make(msg, len), NOW, id_out);
}

/* Offsets of a message signed by ota_cose_sign1_sign: d2 84 <prot> a0 <payload> <sig>. */
typedef struct {
	size_t prot, unprot, payload, sig; /* offsets of each element's head */
	size_t payload_len, sig_len;
} layout;

static size_t head_size(uint8_t ib)
{
	unsigned ai = ib & 31u;
	return ai < 24 ? 1 : 1 + ((size_t)1 << (ai - 24));
}

static uint64_t head_arg(const uint8_t *p)
{
	unsigned ai = p[0] & 31u;
	if (ai < 24)
		return ai;
	uint64_t v = 0;
	for (size_t i = 1; i < head_size(p[0]); i++)
		v = v << 8 | p[i];
	return v;
}

static layout layout_of(const uint8_t *m, size_t len)
{
	layout l;
	assert_int_equal(m[0], 0xd2);
	assert_int_equal(m[1], 0x84);
	l.prot = 2;
	l.unprot = l.prot + head_size(m[l.prot]) + (size_t)head_arg(m + l.prot);
	assert_int_equal(m[l.unprot], 0xa0);
	l.payload = l.unprot + 1;
	l.payload_len = (size_t)head_arg(m + l.payload);
	l.sig = l.payload + head_size(m[l.payload]) + l.payload_len;
	l.sig_len = (size_t)head_arg(m + l.sig);
	assert_int_equal(l.sig + head_size(m[l.sig]) + l.sig_len, len);
	return l;
}

/* m with bytes [at, at + cut) replaced by rep (new). */
static uint8_t *splice(const uint8_t *m, size_t len, size_t at, size_t cut, const uint8_t *rep,
                       size_t rep_len, size_t *out_len)
{
	uint8_t *o = malloc(len - cut + rep_len);
	assert_non_null(o);
	memcpy(o, m, at);
	memcpy(o + at, rep, rep_len);
	memcpy(o + at + rep_len, m + at + cut, len - at - cut);
	*out_len = len - cut + rep_len;
	return o;
}

/* ---- 1. the kid must be protected ---- */

static void test_kid_only_unprotected(void **state)
{
	world *w = *state;
	uint8_t kid[32];
	assert_ota(ota_key_kid(w->k256, kid), OTA_OK);
	size_t pl = 0;
	uint8_t *p = payload_for(w, "kid", NULL, &pl);
	ota_cbor_wr prot = {0}, unprot = {0};
	ota_cbor_head(&prot, OTA_CBOR_MAP, 1);
	ota_cbor_int(&prot, 1);
	ota_cbor_int(&prot, OTA_ALG_ES256);
	ota_cbor_head(&unprot, OTA_CBOR_MAP, 1);
	ota_cbor_int(&unprot, 4);
	ota_cbor_bstr(&unprot, kid, sizeof kid);
	size_t len = 0;
	uint8_t *msg = sign1_raw(w->k256, OTA_ALG_ES256, ota_bytes_make(prot.p, prot.len),
	                         ota_bytes_make(unprot.p, unprot.len), ota_bytes_make(p, pl), &len);
	/* a generic verifier takes it (the kid is informational with one key) */
	ota_cose_sign1 m;
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, len), w->k256, NULL, &m, NULL), OTA_OK);
	assert_false(m.kid_protected);
	/* admission does not: attestations name their key in the protected header */
	ota_error e = {0};
	ota_admission adm;
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(NULL, 0), NOW, &adm, &e),
	           OTA_ERR_ATT_KID_MISSING);
	assert_string_equal(ota_err_name(e.code), "attestation_kid_missing");
	assert_ota(admit(w, msg, len, NULL), OTA_ERR_ATT_KID_MISSING);
	free(msg);
	free(prot.p);
	free(unprot.p);
	free(p);
}

/* ---- 2a. shortest heads: the t_malleable re-encodings ---- */

static void test_reencodings_refused(void **state)
{
	world *w = *state;
	size_t len = 0;
	uint8_t *x = attest(w, w->k256, "malleable", NULL, &len);
	layout l = layout_of(x, len);
	uint8_t *v[8];
	size_t vl[8], n = 0;
	/* tag 18 as d8 12 and as d9 00 12 */
	v[n] = splice(x, len, 0, 1, (const uint8_t *)"\xd8\x12", 2, &vl[n]), n++;
	v[n] = splice(x, len, 0, 1, (const uint8_t *)"\xd9\x00\x12", 3, &vl[n]), n++;
	/* the array head as 98 04 */
	v[n] = splice(x, len, 1, 1, (const uint8_t *)"\x98\x04", 2, &vl[n]), n++;
	/* the empty unprotected map as b8 00 */
	v[n] = splice(x, len, l.unprot, 1, (const uint8_t *)"\xb8\x00", 2, &vl[n]), n++;
	/* the payload's length one width wider */
	{
		uint8_t h[9];
		size_t old = head_size(x[l.payload]), hl = 0;
		assert_true(old <= 3); /* a payload under 64 KiB */
		h[hl++] = old == 2 ? 0x59 : 0x5a;
		if (old == 3)
			h[hl++] = 0, h[hl++] = 0;
		else
			h[hl++] = 0;
		for (size_t i = 1; i < old; i++)
			h[hl++] = x[l.payload + i];
		v[n] = splice(x, len, l.payload, old, h, hl, &vl[n]), n++;
	}
	/* the 64-byte signature's length as 59 00 40 */
	v[n] = splice(x, len, l.sig, 2, (const uint8_t *)"\x59\x00\x40", 3, &vl[n]), n++;
	/* the protected bstr's length (38: {1: -7, 4: kid}) as 59 00 26 */
	assert_int_equal(x[l.prot], 0x58);
	{
		uint8_t h[3] = {0x59, 0x00, x[l.prot + 1]};
		v[n] = splice(x, len, l.prot, 2, h, 3, &vl[n]), n++;
	}
	for (size_t i = 0; i < n; i++) {
		/* the signature still verifies over the same protected bytes and
		 * payload: only the encoding differs */
		ota_error e = {0};
		assert_ota(admit(w, v[i], vl[i], NULL), OTA_ERR_COSE_NOT_SHORTEST);
		assert_ota(ota_cose_sign1_decode(ota_bytes_make(v[i], vl[i]), NULL, &(ota_cose_sign1){0}, &e),
		           OTA_ERR_COSE_NOT_SHORTEST);
		assert_string_equal(ota_err_name(e.code), "cose_head_not_shortest");
		free(v[i]);
	}
	/* the provider's own bytes: accepted, and its chain goes on */
	char id[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	assert_ota(admit(w, x, len, id), OTA_OK);
	size_t len2 = 0;
	uint8_t *y = attest(w, w->k256, "malleable", id, &len2);
	assert_ota(admit(w, y, len2, id2), OTA_OK);
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	assert_ota(ota_nonce_store_head_get(w->base.store, "txn-env", "issuer:acme", "malleable", head,
	                                    sizeof head, NULL),
	           OTA_OK);
	assert_string_equal(head, id2);
	free(x);
	free(y);
}

/* ---- 2b. nothing unprotected ---- */

static void test_unprotected_refused(void **state)
{
	world *w = *state;
	size_t len = 0;
	uint8_t *x = attest(w, w->k256, "unprotected", NULL, &len);
	layout l = layout_of(x, len);
	/* {"x": 1} */
	size_t l1 = 0;
	uint8_t *v1 = splice(x, len, l.unprot, 1, (const uint8_t *)"\xa1\x61x\x01", 4, &l1);
	/* {99: 200 KiB of zeros} */
	size_t big = 200 * 1024, l2 = 0;
	ota_cbor_wr u = {0};
	ota_cbor_head(&u, OTA_CBOR_MAP, 1);
	ota_cbor_int(&u, 99);
	uint8_t *zeros = calloc(1, big);
	assert_non_null(zeros);
	ota_cbor_bstr(&u, zeros, big);
	assert_false(u.oom);
	uint8_t *v2 = splice(x, len, l.unprot, 1, u.p, u.len, &l2);
	/* {3: 0}: a label the protected header does not carry either */
	size_t l3 = 0;
	uint8_t *v3 = splice(x, len, l.unprot, 1, (const uint8_t *)"\xa1\x03\x00", 3, &l3);
	uint8_t *vs[3] = {v1, v2, v3};
	size_t ls[3] = {l1, l2, l3};
	for (int i = 0; i < 3; i++) {
		/* the general decoder keeps taking unprotected labels (batch
		 * acceptances carry 396 there) ... */
		ota_cose_sign1 m;
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(vs[i], ls[i]), w->k256, NULL, &m, NULL),
		           OTA_OK);
		assert_int_equal(m.unprotected_labels, 1);
		/* ... admission does not */
		ota_error e = {0};
		ota_admission adm;
		assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(vs[i], ls[i]),
		                                 ota_bytes_make(NULL, 0), NOW, &adm, &e),
		           OTA_ERR_ATT_UNPROTECTED);
		assert_string_equal(ota_err_name(e.code), "attestation_unprotected_header");
		assert_ota(admit(w, vs[i], ls[i], NULL), OTA_ERR_ATT_UNPROTECTED);
		free(vs[i]);
	}
	assert_ota(admit(w, x, len, NULL), OTA_OK);
	free(u.p);
	free(zeros);
	free(x);
}

/* ---- 2c. low-S only ---- */

/* sig's s := n - s, with n the order of the curve of alg. */
static void flip_s(ota_alg alg, uint8_t *sig, size_t sig_len)
{
	int nid = alg == OTA_ALG_ES256 ? NID_X9_62_prime256v1 : alg == OTA_ALG_ES384 ? NID_secp384r1
	                                                                            : NID_secp521r1;
	size_t field = sig_len / 2;
	EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
	assert_non_null(g);
	BIGNUM *s = BN_bin2bn(sig + field, (int)field, NULL), *t = BN_new();
	assert_non_null(s);
	assert_non_null(t);
	assert_int_equal(BN_sub(t, EC_GROUP_get0_order(g), s), 1);
	assert_int_equal(BN_bn2binpad(t, sig + field, (int)field), (int)field);
	BN_free(s);
	BN_free(t);
	EC_GROUP_free(g);
}

static void test_high_s_refused(void **state)
{
	world *w = *state;
	const ota_key *keys[3] = {w->k256, w->k384, w->k521};
	const ota_alg algs[3] = {OTA_ALG_ES256, OTA_ALG_ES384, OTA_ALG_ES512};
	for (int i = 0; i < 3; i++) {
		char boundary[32];
		snprintf(boundary, sizeof boundary, "high-s-%d", i);
		size_t len = 0;
		uint8_t *x = attest(w, keys[i], boundary, NULL, &len);
		layout l = layout_of(x, len);
		uint8_t *sig = x + l.sig + head_size(x[l.sig]);
		/* what we sign is low-S */
		assert_false(ota_key_sig_is_high_s(algs[i], ota_bytes_make(sig, l.sig_len)));
		uint8_t *hi = malloc(len);
		assert_non_null(hi);
		memcpy(hi, x, len);
		flip_s(algs[i], hi + (sig - x), l.sig_len);
		assert_true(ota_key_sig_is_high_s(algs[i], ota_bytes_make(hi + (sig - x), l.sig_len)));
		/* (r, n - s) verifies: general verification accepts it (interop
		 * vectors and old archives hold high-S signatures) ... */
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(hi, len), keys[i], NULL, NULL, NULL), OTA_OK);
		/* ... admission refuses it, and the challenge stays usable */
		ota_error e = {0};
		ota_admission adm;
		assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(hi, len),
		                                 ota_bytes_make(NULL, 0), NOW, &adm, &e),
		           OTA_ERR_ATT_SIG_HIGH_S);
		assert_string_equal(ota_err_name(e.code), "attestation_signature_high_s");
		assert_ota(admit(w, hi, len, NULL), OTA_ERR_ATT_SIG_HIGH_S);
		assert_ota(admit(w, x, len, NULL), OTA_OK);
		free(hi);
		free(x);
	}
}

/* EdDSA has no such second form: admission is unchanged for it. */
static void test_eddsa_unaffected(void **state)
{
	(void)state;
	uint8_t sig[64];
	memset(sig, 0xff, sizeof sig);
	assert_false(ota_key_sig_is_high_s(OTA_ALG_EDDSA, ota_bytes_make(sig, sizeof sig)));
	assert_true(ota_key_sig_is_high_s(OTA_ALG_ES256, ota_bytes_make(sig, sizeof sig)));
	assert_false(ota_key_sig_is_high_s(OTA_ALG_ES256, ota_bytes_make(sig, 63)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kid_only_unprotected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reencodings_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unprotected_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_high_s_refused, setup, teardown),
		cmocka_unit_test(test_eddsa_unaffected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
