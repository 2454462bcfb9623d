/*
 * Attestation admission, third adversarial audit: role confusion (the
 * endpoint's verifier key or a runner key signing as an issuer), a detached
 * payload, crit parameters, alg smuggled into the unprotected header, huge
 * iat/exp, a challenge taken by another issuer, and a prior naming a record
 * of another boundary or txn. Each is refused with its own name, and the
 * refusal consumes nothing: the challenge still admits the right record.
 */
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"
#include "ota/cbor.h"
#include "ota/cose.h"

#define NOW 1800000000

typedef struct world {
	test_admission_world base; /* verifier:endpoint holds base.verifier_key */
	ota_key *issuer_key, *other_key, *runner_key;
} world;

static const ota_nonce_binding acme = {"txn-1", "issuer:acme", "oci_remote"};
static const ota_nonce_binding other = {"txn-1", "issuer:other", "oci_remote"};

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "roles.test", NOW - 86400,
	                                                NOW + 86400 * 30);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->issuer_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->other_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->runner_key), OTA_OK);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->issuer_key,
	               NOW - 86400);
	test_trust_add(d, "issuer:other", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->other_key,
	               NOW - 86400);
	test_trust_add(d, "runner:ci", OTA_TRUST_ROLE_RUNNER, "*", w->runner_key, NOW - 86400);
	test_admission_world_finish(&w->base, d, "roles.db");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_admission_world_free(&w->base);
	ota_key_free(w->issuer_key);
	ota_key_free(w->other_key);
	ota_key_free(w->runner_key);
	free(w);
	return 0;
}

/* Claims of iss for a fresh challenge issued under b, on txn/boundary. */
static ota_attestation claims(world *w, const ota_nonce_binding *b, const char *iss,
                              const char *txn, const char *boundary, const char *prior)
{
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(w->base.store, b, 0, 0, NOW - 10, &c, NULL), OTA_OK);
	ota_attestation a;
	test_attestation_claims(&a, w->base.root, iss, txn, boundary, prior);
	a.iat = NOW - 5;
	a.exp = NOW + 120;
	memcpy(a.nonce, c.nonce, c.nonce_len);
	a.nonce_len = c.nonce_len;
	return a;
}

static ota_err admit(world *w, const uint8_t *msg, size_t len, char *id_out)
{
	return test_admission_admit(&w->base, ota_bytes_make(msg, len), NOW, id_out);
}

static ota_err submit(world *w, const ota_attestation *a, const ota_key *k, char *id_out)
{
	size_t len = 0;
	uint8_t *msg = test_attestation_sign(a, k, true, &len);
	ota_err rc = admit(w, msg, len, id_out);
	free(msg);
	return rc;
}

/* 18([prot, unprot (raw CBOR), payload, sig over prot and payload]) */
static uint8_t *sign1_raw(const ota_key *k, ota_bytes prot, ota_bytes unprot, ota_bytes payload,
                          size_t *len)
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
	assert_ota(ota_key_sign(k, OTA_ALG_ES256, ota_bytes_make(tbs.p, tbs.len),
	                        (ota_buf){sig, sizeof sig}, &sl),
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

/* ---- role confusion ---- */

static void test_verifier_and_runner_keys_as_issuer(void **state)
{
	world *w = *state;
	/* the endpoint's own verifier key, iss naming either principal */
	ota_attestation a = claims(w, &acme, "issuer:acme", "txn-1", "b-role", NULL);
	assert_ota(submit(w, &a, w->base.verifier_key, NULL), OTA_ERR_TRUST_ROLE_MISMATCH);
	snprintf(a.iss, sizeof a.iss, "verifier:endpoint");
	assert_ota(submit(w, &a, w->base.verifier_key, NULL), OTA_ERR_TRUST_ROLE_MISMATCH);
	/* a runner's key */
	snprintf(a.iss, sizeof a.iss, "runner:ci");
	assert_ota(submit(w, &a, w->runner_key, NULL), OTA_ERR_TRUST_ROLE_MISMATCH);
	/* another issuer's key, iss naming acme */
	snprintf(a.iss, sizeof a.iss, "issuer:acme");
	assert_ota(submit(w, &a, w->other_key, NULL), OTA_ERR_ATT_KEY_ISSUER);
	/* nothing was consumed: the challenge admits acme's own record */
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_OK);
}

/* ---- the envelope ---- */

static void test_detached_payload(void **state)
{
	world *w = *state;
	ota_attestation a = claims(w, &acme, "issuer:acme", "txn-1", "b-det", NULL);
	uint8_t *p = NULL, *msg = NULL;
	size_t pl = 0, len = 0;
	assert_ota(ota_attestation_encode(&a, &p, &pl), OTA_OK);
	ota_cose_sign_opts o;
	memset(&o, 0, sizeof o);
	o.include_kid = true;
	o.detached = true;
	assert_ota(ota_cose_sign1_sign(w->issuer_key, ota_bytes_make(p, pl), &o, &msg, &len, NULL),
	           OTA_OK);
	assert_ota(admit(w, msg, len, NULL), OTA_ERR_COSE_DETACHED_MISSING);
	free(msg);
	free(p);
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_OK);
}

/* protected {1: ES256, 4: kid} plus what extra writes before kid and after
 * after it (n extra entries in all) */
static ota_cbor_wr prot_with(const uint8_t kid[32], unsigned n, void (*extra)(ota_cbor_wr *),
                             void (*after)(ota_cbor_wr *))
{
	ota_cbor_wr p = {0};
	ota_cbor_head(&p, OTA_CBOR_MAP, 2 + n);
	ota_cbor_int(&p, 1);
	ota_cbor_int(&p, OTA_ALG_ES256);
	if (extra != NULL)
		extra(&p); /* labels 2 (crit) sort before 4 */
	ota_cbor_int(&p, 4);
	ota_cbor_bstr(&p, kid, 32);
	if (after != NULL)
		after(&p);
	return p;
}

static void crit_unknown(ota_cbor_wr *p)
{
	ota_cbor_int(p, 2); /* crit: [99] */
	ota_cbor_head(p, OTA_CBOR_ARRAY, 1);
	ota_cbor_int(p, 99);
}

static void label_99(ota_cbor_wr *p)
{
	ota_cbor_int(p, 99);
	ota_cbor_int(p, 1);
}

static void crit_empty(ota_cbor_wr *p)
{
	ota_cbor_int(p, 2);
	ota_cbor_head(p, OTA_CBOR_ARRAY, 0);
}

static void test_crit_and_unprotected_alg(void **state)
{
	world *w = *state;
	uint8_t kid[32];
	assert_ota(ota_key_kid(w->issuer_key, kid), OTA_OK);
	ota_attestation a = claims(w, &acme, "issuer:acme", "txn-1", "b-crit", NULL);
	uint8_t *p = NULL;
	size_t pl = 0, len = 0;
	assert_ota(ota_attestation_encode(&a, &p, &pl), OTA_OK);
	static const uint8_t empty[] = {0xa0};
	struct {
		void (*extra)(ota_cbor_wr *), (*after)(ota_cbor_wr *);
		unsigned n;
		ota_err want;
	} cases[] = {
		{crit_unknown, label_99, 2, OTA_ERR_COSE_CRIT_UNKNOWN}, /* crit [99], 99 present */
		{crit_unknown, NULL, 1, OTA_ERR_COSE_CRIT_ABSENT},      /* crit [99], 99 absent */
		{crit_empty, NULL, 1, OTA_ERR_COSE_CRIT_EMPTY},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ota_cbor_wr pr = prot_with(kid, cases[i].n, cases[i].extra, cases[i].after);
		uint8_t *msg = sign1_raw(w->issuer_key, ota_bytes_make(pr.p, pr.len),
		                         ota_bytes_make(empty, 1), ota_bytes_make(p, pl), &len);
		assert_ota(admit(w, msg, len, NULL), cases[i].want);
		free(msg);
		free(pr.p);
	}
	/* crit in the unprotected header */
	ota_cbor_wr pr = prot_with(kid, 0, NULL, NULL), un = {0};
	ota_cbor_head(&un, OTA_CBOR_MAP, 1);
	crit_unknown(&un);
	uint8_t *msg = sign1_raw(w->issuer_key, ota_bytes_make(pr.p, pr.len),
	                         ota_bytes_make(un.p, un.len), ota_bytes_make(p, pl), &len);
	assert_ota(admit(w, msg, len, NULL), OTA_ERR_COSE_CRIT_UNPROTECTED);
	free(msg);
	free(un.p);
	/* alg also in the unprotected header: the same alg (a label in both
	 * buckets), or EdDSA (a conflict) */
	const int64_t algs[] = {OTA_ALG_ES256, OTA_ALG_EDDSA};
	const ota_err alg_want[] = {OTA_ERR_COSE_DUPLICATE_LABEL, OTA_ERR_COSE_ALG_CONFLICT};
	for (size_t i = 0; i < 2; i++) {
		ota_cbor_wr u = {0};
		ota_cbor_head(&u, OTA_CBOR_MAP, 1);
		ota_cbor_int(&u, 1);
		ota_cbor_int(&u, algs[i]);
		msg = sign1_raw(w->issuer_key, ota_bytes_make(pr.p, pr.len), ota_bytes_make(u.p, u.len),
		                ota_bytes_make(p, pl), &len);
		assert_ota(admit(w, msg, len, NULL), alg_want[i]);
		free(msg);
		free(u.p);
	}
	free(pr.p);
	/* alg only unprotected, kid protected */
	ota_cbor_wr kp = {0}, u = {0};
	ota_cbor_head(&kp, OTA_CBOR_MAP, 1);
	ota_cbor_int(&kp, 4);
	ota_cbor_bstr(&kp, kid, 32);
	ota_cbor_head(&u, OTA_CBOR_MAP, 1);
	ota_cbor_int(&u, 1);
	ota_cbor_int(&u, OTA_ALG_ES256);
	msg = sign1_raw(w->issuer_key, ota_bytes_make(kp.p, kp.len), ota_bytes_make(u.p, u.len),
	                ota_bytes_make(p, pl), &len);
	assert_ota(admit(w, msg, len, NULL), OTA_ERR_COSE_ALG_UNPROTECTED);
	free(msg);
	free(kp.p);
	free(u.p);
	free(p);
	/* nothing consumed */
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_OK);
}

/* ---- times ---- */

static void test_huge_times(void **state)
{
	world *w = *state;
	ota_attestation a = claims(w, &acme, "issuer:acme", "txn-1", "b-time", NULL);
	a.iat = INT64_MAX / 2; /* the largest a claim may hold */
	a.exp = INT64_MAX / 2;
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_ATT_NOT_YET_VALID);
	a.iat = NOW - 5;
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_ATT_LIFETIME);
	a.exp = a.iat;
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_ATT_EXPIRED);
	a.exp = NOW + 1;
	a.iat = NOW + 2; /* exp before iat, both fresh */
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_ATT_LIFETIME);
	a.iat = 0;
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_ATT_STALE);
	/* beyond INT64_MAX / 2, and negative: not a time at all */
	a.iat = NOW - 5;
	a.exp = NOW + 120;
	uint8_t *p = NULL;
	size_t pl = 0;
	assert_ota(ota_attestation_encode(&a, &p, &pl), OTA_OK);
	/* exp is the claim 4: 0x04 then its head (0x1a + 4 bytes for NOW + 120) */
	uint8_t *at = NULL;
	for (size_t i = 0; i + 5 < pl && at == NULL; i++)
		if (p[i] == 0x04 && p[i + 1] == 0x1a)
			at = p + i + 1;
	assert_non_null(at);
	uint8_t big[9] = {0x1b, 0x40, 0, 0, 0, 0, 0, 0, 0}; /* 2^62 */
	uint8_t neg[5] = {0x3a, 0x6b, 0x49, 0xd2, 0x00};    /* -(0x6b49d200 + 1) */
	const uint8_t *reps[] = {big, neg};
	const size_t rl[] = {sizeof big, sizeof neg};
	for (size_t i = 0; i < 2; i++) {
		size_t off = (size_t)(at - p), nl = pl - 5 + rl[i];
		uint8_t *q = malloc(nl);
		assert_non_null(q);
		memcpy(q, p, off);
		memcpy(q + off, reps[i], rl[i]);
		memcpy(q + off + rl[i], p + off + 5, pl - off - 5);
		ota_cose_sign_opts o;
		memset(&o, 0, sizeof o);
		o.include_kid = true;
		uint8_t *msg = NULL;
		size_t len = 0;
		assert_ota(ota_cose_sign1_sign(w->issuer_key, ota_bytes_make(q, nl), &o, &msg, &len, NULL),
		           OTA_OK);
		assert_ota(admit(w, msg, len, NULL), OTA_ERR_ATT_CLAIM_TYPE);
		free(msg);
		free(q);
	}
	free(p);
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_OK);
}

/* ---- challenges and chains ---- */

static void test_challenge_of_another_issuer(void **state)
{
	world *w = *state;
	/* issued to issuer:other, taken by issuer:acme */
	ota_attestation a = claims(w, &other, "issuer:acme", "txn-1", "b-steal", NULL);
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_NONCE_ISSUER_MISMATCH);
	snprintf(a.iss, sizeof a.iss, "issuer:other");
	assert_ota(submit(w, &a, w->other_key, NULL), OTA_OK);
}

static void test_prior_of_another_lane(void **state)
{
	world *w = *state;
	char r1[OTA_ID_LEN + 1], r2[OTA_ID_LEN + 1];
	ota_attestation a = claims(w, &acme, "issuer:acme", "txn-1", "lane-a", NULL);
	assert_ota(submit(w, &a, w->issuer_key, r1), OTA_OK);
	ota_attestation b = claims(w, &acme, "issuer:acme", "txn-1", "lane-b", NULL);
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_OK);
	/* lane-b's next record names lane-a's head */
	ota_attestation c = claims(w, &acme, "issuer:acme", "txn-1", "lane-b", r1);
	assert_ota(submit(w, &c, w->issuer_key, NULL), OTA_ERR_ATT_PRIOR_UNKNOWN);
	/* the same boundary name in another txn: a record of txn-1 as prior */
	static const ota_nonce_binding acme2 = {"txn-2", "issuer:acme", "oci_remote"};
	ota_attestation d = claims(w, &acme2, "issuer:acme", "txn-2", "lane-a", NULL);
	assert_ota(submit(w, &d, w->issuer_key, r2), OTA_OK);
	ota_attestation e = claims(w, &acme2, "issuer:acme", "txn-2", "lane-a", r1);
	assert_ota(submit(w, &e, w->issuer_key, NULL), OTA_ERR_ATT_PRIOR_UNKNOWN);
	/* a challenge of txn-2 for a txn-1 record */
	ota_attestation f = claims(w, &acme2, "issuer:acme", "txn-1", "lane-a", r1);
	assert_ota(submit(w, &f, w->issuer_key, NULL), OTA_ERR_ATT_TXN_MISMATCH);
	/* the right prior goes on */
	snprintf(e.prior, sizeof e.prior, "%s", r2);
	assert_ota(submit(w, &e, w->issuer_key, NULL), OTA_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verifier_and_runner_keys_as_issuer),
		cmocka_unit_test(test_detached_payload),
		cmocka_unit_test(test_crit_and_unprotected_alg),
		cmocka_unit_test(test_huge_times),
		cmocka_unit_test(test_challenge_of_another_issuer),
		cmocka_unit_test(test_prior_of_another_lane),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
