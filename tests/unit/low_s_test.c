/*
 * ECDSA low-S: every signature ota_key_sign (and so ota_cose_sign1_sign,
 * the acceptances, the trust-root signatures) writes has s <= n/2, for
 * ES256, ES384 and ES512; ota_key_sig_is_high_s tells the two forms apart
 * at the exact boundary, with the group orders checked against OpenSSL's.
 * General verification still accepts a high-S signature.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include "ota/cose.h"
#include "ota/key.h"

static const struct {
	ota_alg alg;
	int nid;
	size_t field;
} curves[3] = {
	{OTA_ALG_ES256, NID_X9_62_prime256v1, 32},
	{OTA_ALG_ES384, NID_secp384r1, 48},
	{OTA_ALG_ES512, NID_secp521r1, 66},
};

/* sig = r || s with r = 1. */
static void sig_with_s(size_t field, const BIGNUM *s, uint8_t *sig)
{
	memset(sig, 0, field);
	sig[field - 1] = 1;
	assert_int_equal(BN_bn2binpad(s, sig + field, (int)field), (int)field);
}

static void test_boundary(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		EC_GROUP *g = EC_GROUP_new_by_curve_name(curves[i].nid);
		assert_non_null(g);
		const BIGNUM *n = EC_GROUP_get0_order(g);
		size_t f = curves[i].field;
		assert_int_equal((size_t)BN_num_bytes(n), f); /* the orders key.c holds have f bytes */
		BIGNUM *half = BN_new(), *s = BN_new();
		assert_non_null(half);
		assert_non_null(s);
		assert_int_equal(BN_rshift1(half, n), 1); /* (n - 1) / 2: n is odd */
		uint8_t sig[132];
		ota_bytes sb = ota_bytes_make(sig, 2 * f);
		/* s = (n - 1) / 2: the largest low s */
		sig_with_s(f, half, sig);
		assert_false(ota_key_sig_is_high_s(curves[i].alg, sb));
		/* s = (n + 1) / 2: the smallest high s */
		assert_int_equal(BN_add(s, half, BN_value_one()), 1);
		sig_with_s(f, s, sig);
		assert_true(ota_key_sig_is_high_s(curves[i].alg, sb));
		/* s = 1 and s = n - 1 */
		sig_with_s(f, BN_value_one(), sig);
		assert_false(ota_key_sig_is_high_s(curves[i].alg, sb));
		assert_int_equal(BN_sub(s, n, BN_value_one()), 1);
		sig_with_s(f, s, sig);
		assert_true(ota_key_sig_is_high_s(curves[i].alg, sb));
		/* s = n and above: never a low-S signature */
		sig_with_s(f, n, sig);
		assert_true(ota_key_sig_is_high_s(curves[i].alg, sb));
		/* another alg's size, another alg */
		assert_false(ota_key_sig_is_high_s(curves[(i + 1) % 3].alg, sb));
		assert_false(ota_key_sig_is_high_s(OTA_ALG_EDDSA, sb));
		BN_free(s);
		BN_free(half);
		EC_GROUP_free(g);
	}
}

/* n - s in place. */
static void flip(int nid, uint8_t *s, size_t field)
{
	EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
	BIGNUM *b = BN_bin2bn(s, (int)field, NULL), *t = BN_new();
	assert_non_null(g);
	assert_non_null(b);
	assert_non_null(t);
	assert_int_equal(BN_sub(t, EC_GROUP_get0_order(g), b), 1);
	assert_int_equal(BN_bn2binpad(t, s, (int)field), (int)field);
	BN_free(t);
	BN_free(b);
	EC_GROUP_free(g);
}

/* 64 signatures per curve: with a coin-flip s, some would be high (2^-64). */
static void test_sign_is_low_s(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(curves[i].alg, &k), OTA_OK);
		for (int j = 0; j < 64; j++) {
			uint8_t msg[16], sig[132];
			memset(msg, j, sizeof msg);
			size_t sl = 0;
			assert_ota(ota_key_sign(k, curves[i].alg, ota_bytes_make(msg, sizeof msg),
			                        (ota_buf){sig, sizeof sig}, &sl),
			           OTA_OK);
			assert_int_equal(sl, 2 * curves[i].field);
			assert_false(ota_key_sig_is_high_s(curves[i].alg, ota_bytes_make(sig, sl)));
			assert_ota(ota_key_verify(k, curves[i].alg, ota_bytes_make(msg, sizeof msg),
			                          ota_bytes_make(sig, sl)),
			           OTA_OK);
			/* the other form verifies too (general verification keeps
			 * accepting it) and is the high one */
			flip(curves[i].nid, sig + curves[i].field, curves[i].field);
			assert_true(ota_key_sig_is_high_s(curves[i].alg, ota_bytes_make(sig, sl)));
			assert_ota(ota_key_verify(k, curves[i].alg, ota_bytes_make(msg, sizeof msg),
			                          ota_bytes_make(sig, sl)),
			           OTA_OK);
		}
		ota_key_free(k);
	}
}

/* The same through COSE signing, and a high-S COSE message still verifies. */
static void test_cose_sign_is_low_s(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(curves[i].alg, &k), OTA_OK);
		for (int j = 0; j < 32; j++) {
			uint8_t payload[8];
			memset(payload, j, sizeof payload);
			uint8_t *msg = NULL;
			size_t len = 0;
			ota_error e = {0};
			assert_ota(ota_cose_sign1_sign(k, ota_bytes_make(payload, sizeof payload), NULL, &msg,
			                               &len, &e),
			           OTA_OK);
			ota_cose_sign1 m;
			assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, len), k, NULL, &m, &e), OTA_OK);
			assert_false(ota_key_sig_is_high_s(curves[i].alg, m.signature));
			size_t off = (size_t)(m.signature.ptr - msg) + curves[i].field;
			flip(curves[i].nid, msg + off, curves[i].field);
			assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, len), k, NULL, &m, &e), OTA_OK);
			assert_true(ota_key_sig_is_high_s(curves[i].alg, m.signature));
			free(msg);
		}
		ota_key_free(k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundary),
		cmocka_unit_test(test_sign_is_low_s),
		cmocka_unit_test(test_cose_sign_is_low_s),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
