/* COSE_Sign1 sign/verify API (verify/cose_verify.c, attest/cose_sign.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ota/cose.h"
#include "ota/limits.h"
#include "test_util.h"

static const ota_bytes payload = {(const uint8_t *)"{\"kind\":\"demo\"}", 15};
static const ota_bytes aad = {(const uint8_t *)"\x11\xaa\x22", 3};

static void roundtrip(ota_alg alg)
{
	ota_key *k = NULL;
	assert_ota(ota_key_generate(alg, &k), OTA_OK);
	for (int variant = 0; variant < 8; variant++) {
		ota_cose_sign_opts so = {0};
		so.include_kid = variant & 1;
		so.untagged = (variant & 2) != 0;
		so.detached = (variant & 4) != 0;
		so.external_aad = aad;
		uint8_t *m = NULL;
		size_t ml = 0;
		assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_OK);
		ota_cose_verify_opts vo = {0};
		vo.allow_untagged = so.untagged;
		vo.external_aad = aad;
		vo.have_detached_payload = so.detached;
		vo.detached_payload = payload;
		ota_cose_sign1 d;
		ota_error err;
		ota_error_clear(&err);
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, &vo, &d, &err), OTA_OK);
		assert_int_equal(d.alg, alg);
		assert_int_equal(d.tagged, !so.untagged);
		assert_int_equal(d.detached, so.detached);
		assert_int_equal(d.payload.len, payload.len);
		assert_memory_equal(d.payload.ptr, payload.ptr, payload.len);
		assert_int_equal(d.kid.len, so.include_kid ? 32 : 0);
		/* wrong AAD */
		vo.external_aad = ota_bytes_make("x", 1);
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, &vo, &d, NULL),
		           OTA_ERR_SIG_INVALID);
		assert_null(d.payload.ptr);
		vo.external_aad = aad;
		/* tag policy */
		if (so.untagged) {
			vo.allow_untagged = false;
			assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, &vo, NULL, NULL),
			           OTA_ERR_COSE_TAG_MISSING);
		}
		free(m);
	}
	ota_key_free(k);
}

static void test_es256(void **s) { (void)s; roundtrip(OTA_ALG_ES256); }
static void test_es384(void **s) { (void)s; roundtrip(OTA_ALG_ES384); }
static void test_es512(void **s) { (void)s; roundtrip(OTA_ALG_ES512); }
static void test_eddsa(void **s) { (void)s; roundtrip(OTA_ALG_EDDSA); }

static void test_exact_bytes(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &k), OTA_OK);
	uint8_t *m = NULL;
	size_t ml = 0;
	assert_ota(ota_cose_sign1_sign(k, ota_bytes_make("hi", 2), NULL, &m, &ml, NULL), OTA_OK);
	static const uint8_t prefix[] = {0xd2, 0x84, 0x43, 0xa1, 0x01, 0x27, 0xa0, 0x42, 'h', 'i',
	                                 0x58, 0x40};
	assert_int_equal(ml, sizeof prefix + 64);
	assert_memory_equal(m, prefix, sizeof prefix);
	free(m);
	ota_key_free(k);
}

static void test_sign_refusals(void **s)
{
	(void)s;
	ota_key *k = NULL, *pub = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	uint8_t *m = (uint8_t *)1;
	size_t ml = 1;
	ota_cose_sign_opts so = {.alg = OTA_ALG_EDDSA};
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_ERR_ALG_KEY_MISMATCH);
	assert_null(m);
	assert_int_equal(ml, 0);
	so.alg = OTA_ALG_PS256;
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_ERR_UNSUPPORTED);
	so.alg = (ota_alg)-999;
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_ERR_ALG_UNKNOWN);
	char *pem = NULL;
	assert_ota(ota_key_public_pem(k, &pem), OTA_OK);
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &pub, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_sign(pub, payload, NULL, &m, &ml, NULL),
	           OTA_ERR_KEY_PRIVATE_REQUIRED);
	free(pem);
	ota_key_free(pub);
	ota_key_free(k);
}

/* ---- key sets ---- */

typedef struct {
	ota_key *keys[2];
} keyset;

static ota_err lookup(void *ctx, ota_bytes kid, ota_alg alg, const ota_key **out, ota_error *err)
{
	keyset *ks = ctx;
	(void)alg;
	*out = NULL;
	for (int i = 0; i < 2; i++) {
		uint8_t id[32];
		if (ota_key_kid(ks->keys[i], id) == OTA_OK &&
		    ota_ct_equal(kid, ota_bytes_make(id, 32))) {
			*out = ks->keys[i];
			return OTA_OK;
		}
	}
	return ota_error_set(err, OTA_ERR_COSE_KID_UNKNOWN, "kid", "no such key");
}

static void test_key_set(void **s)
{
	(void)s;
	keyset ks;
	ota_key *other = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &ks.keys[0]), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &ks.keys[1]), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &other), OTA_OK);
	ota_cose_sign_opts so = {.include_kid = true};
	uint8_t *m = NULL;
	size_t ml = 0;
	ota_cose_sign1 d;
	for (int i = 0; i < 2; i++) {
		assert_ota(ota_cose_sign1_sign(ks.keys[i], payload, &so, &m, &ml, NULL), OTA_OK);
		assert_ota(ota_cose_sign1_verify_with(ota_bytes_make(m, ml), lookup, &ks, NULL, &d, NULL),
		           OTA_OK);
		/* the same message with one explicit key of the wrong identity */
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), ks.keys[1 - i], NULL, NULL, NULL),
		           OTA_ERR_COSE_KID_MISMATCH);
		free(m);
	}
	/* kid of a key outside the set */
	assert_ota(ota_cose_sign1_sign(other, payload, &so, &m, &ml, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_verify_with(ota_bytes_make(m, ml), lookup, &ks, NULL, &d, NULL),
	           OTA_ERR_COSE_KID_UNKNOWN);
	free(m);
	/* no kid at all */
	so.include_kid = false;
	assert_ota(ota_cose_sign1_sign(ks.keys[0], payload, &so, &m, &ml, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_verify_with(ota_bytes_make(m, ml), lookup, &ks, NULL, &d, NULL),
	           OTA_ERR_COSE_KID_MISSING);
	free(m);
	ota_key_free(other);
	ota_key_free(ks.keys[0]);
	ota_key_free(ks.keys[1]);
}

static void test_detached_mismatch(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	uint8_t *m = NULL;
	size_t ml = 0;
	ota_cose_sign_opts so = {.detached = true};
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, NULL, NULL, NULL),
	           OTA_ERR_COSE_DETACHED_MISSING);
	ota_cose_verify_opts vo = {.have_detached_payload = true,
	                           .detached_payload = ota_bytes_make("other", 5)};
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, &vo, NULL, NULL),
	           OTA_ERR_SIG_INVALID);
	free(m);
	so.detached = false;
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, &vo, NULL, NULL),
	           OTA_ERR_COSE_PAYLOAD_UNEXPECTED);
	/* every truncation of a valid message is refused, never accepted */
	for (size_t n = 0; n < ml; n++)
		assert_true(ota_cose_sign1_verify(ota_bytes_make(m, n), k, NULL, NULL, NULL) != OTA_OK);
	free(m);
	ota_key_free(k);
}

/* Every single-bit change of a valid message is refused; over-size input is refused unread. */
static void test_bit_flips_and_size(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &k), OTA_OK);
	uint8_t *m = NULL;
	size_t ml = 0;
	ota_cose_sign_opts so = {.include_kid = true};
	assert_ota(ota_cose_sign1_sign(k, payload, &so, &m, &ml, NULL), OTA_OK);
	for (size_t i = 0; i < ml; i++) {
		for (unsigned b = 0; b < 8; b++) {
			m[i] ^= (uint8_t)(1u << b);
			ota_err rc = ota_cose_sign1_verify(ota_bytes_make(m, ml), k, NULL, NULL, NULL);
			if (rc == OTA_OK)
				fail_msg("bit %u of byte %zu flipped and still valid", b, i);
			m[i] ^= (uint8_t)(1u << b);
		}
	}
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, NULL, NULL, NULL), OTA_OK);
	free(m);
	size_t big = OTA_MAX_COSE_BYTES + 1;
	uint8_t *huge = calloc(1, big);
	assert_non_null(huge);
	ota_cose_sign1 d;
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_cose_sign1_decode(ota_bytes_make(huge, big), NULL, &d, &err), OTA_ERR_TOO_LARGE);
	assert_int_equal(err.code, OTA_ERR_TOO_LARGE);
	/* a receipt-sized payload (the runner's receipt of 10,000
	 * attestations is 4.1 MiB; the cap was 4 MiB, so such a run could
	 * not sign its receipt) signs and verifies; one over the cap is
	 * refused when signing */
	size_t rl = 6u * 1024u * 1024u;
	memset(huge, 'r', rl);
	assert_ota(ota_cose_sign1_sign(k, ota_bytes_make(huge, rl), &so, &m, &ml, NULL), OTA_OK);
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(m, ml), k, NULL, &d, NULL), OTA_OK);
	assert_int_equal(d.payload.len, rl);
	free(m);
	m = NULL;
	assert_ota(ota_cose_sign1_sign(k, ota_bytes_make(huge, OTA_MAX_COSE_BYTES), &so, &m, &ml,
	                               NULL),
	           OTA_ERR_TOO_LARGE);
	assert_null(m);
	free(huge);
	ota_key_free(k);
}

/* One key shared by several threads: the contexts prepared at load time are only read. */
typedef struct {
	const ota_key *key;
	const uint8_t *msg;
	size_t len;
	int bad;
} thread_job;

static void *verify_many(void *arg)
{
	thread_job *j = arg;
	for (int i = 0; i < 150; i++)
		if (ota_cose_sign1_verify(ota_bytes_make(j->msg, j->len), j->key, NULL, NULL, NULL) !=
		    OTA_OK)
			j->bad++;
	return NULL;
}

static void test_threads_share_key(void **s)
{
	(void)s;
	ota_alg algs[2] = {OTA_ALG_ES256, OTA_ALG_EDDSA};
	for (int a = 0; a < 2; a++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(algs[a], &k), OTA_OK);
		uint8_t *m = NULL;
		size_t ml = 0;
		assert_ota(ota_cose_sign1_sign(k, payload, NULL, &m, &ml, NULL), OTA_OK);
		pthread_t th[4];
		thread_job jobs[4];
		for (int i = 0; i < 4; i++) {
			jobs[i] = (thread_job){k, m, ml, 0};
			assert_int_equal(pthread_create(&th[i], NULL, verify_many, &jobs[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_int_equal(jobs[i].bad, 0);
		}
		free(m);
		ota_key_free(k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_es256),         cmocka_unit_test(test_es384),
	    cmocka_unit_test(test_es512),         cmocka_unit_test(test_eddsa),
	    cmocka_unit_test(test_exact_bytes),   cmocka_unit_test(test_sign_refusals),
	    cmocka_unit_test(test_key_set),       cmocka_unit_test(test_detached_mismatch),
	    cmocka_unit_test(test_bit_flips_and_size), cmocka_unit_test(test_threads_share_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
