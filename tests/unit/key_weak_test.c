/*
 * Public keys anyone can sign for, and keys with a second encoding, are
 * refused on every path that makes a key (common/key.c key_wrap_der): SPKI
 * PEM (the fixed-form fast path and OpenSSL's decoders), JWK, private PEM.
 *
 * - RSA: the public exponent must be odd and at least 65537 (FIPS 186-5);
 *   with e = 1 every PSS encoding is its own signature (key_too_weak).
 * - Ed25519: each of libsodium's seven small-order encodings, with either x
 *   sign bit (key_point_invalid); y at or above 2^255 - 19 (key_noncanonical).
 * - Ed448 (COSE verification only): the four small-order points (y = 0, 1,
 *   -1, either sign bit); y at or
 *   above the field prime, reserved bits (key_noncanonical).
 * - EC: only a named curve with an uncompressed point (0x04); compressed
 *   (0x02/0x03), hybrid (0x06/0x07) and explicit-parameter encodings of the
 *   same key would hash to other kids (key_noncanonical). A private key's
 *   public half is re-encoded in the canonical form whatever its file held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ota/key.h"
#include "test_util.h"

/* ---- helpers ---- */

static ota_err load_der(const uint8_t *der, size_t n)
{
	char *pem = test_pem_of_der(der, n);
	ota_key *k = NULL;
	ota_err rc = ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &k, NULL);
	if (rc != OTA_OK)
		assert_null(k);
	ota_key_free(k);
	free(pem);
	return rc;
}

static ota_err load_pkey_pem(EVP_PKEY *p, bool priv)
{
	BIO *b = BIO_new(BIO_s_mem());
	assert_non_null(b);
	assert_int_equal(priv ? PEM_write_bio_PrivateKey(b, p, NULL, NULL, 0, NULL, NULL)
	                      : PEM_write_bio_PUBKEY(b, p),
	                 1);
	char *d = NULL;
	long n = BIO_get_mem_data(b, &d);
	ota_key *k = NULL;
	ota_err rc = ota_key_load_pem(ota_bytes_make(d, (size_t)n), &k, NULL);
	if (rc != OTA_OK)
		assert_null(k);
	ota_key_free(k);
	BIO_free(b);
	return rc;
}

/* An OKP JWK {kty, crv, x} of the raw public key. */
static ota_err load_okp_jwk(const char *crv, const uint8_t *x, size_t n)
{
	char *xs = NULL;
	assert_ota(ota_base64url_encode(ota_bytes_make(x, n), &xs), OTA_OK);
	char jwk[256];
	int w = snprintf(jwk, sizeof jwk, "{\"kty\":\"OKP\",\"crv\":\"%s\",\"x\":\"%s\"}", crv, xs);
	assert_true(w > 0 && (size_t)w < sizeof jwk);
	free(xs);
	ota_key *k = NULL;
	ota_err rc = ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &k, NULL);
	if (rc != OTA_OK)
		assert_null(k);
	ota_key_free(k);
	return rc;
}

/* ---- RSA exponents ---- */

static EVP_PKEY *RSA_KEY; /* 2048 bits, e = 65537: its modulus is reused */

static int setup(void **state)
{
	(void)state;
	RSA_KEY = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	return RSA_KEY != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(RSA_KEY);
	return 0;
}

/* An RSA public key with RSA_KEY's modulus and exponent e. */
static EVP_PKEY *rsa_with_e(const BIGNUM *e)
{
	BIGNUM *n = NULL;
	assert_int_equal(EVP_PKEY_get_bn_param(RSA_KEY, OSSL_PKEY_PARAM_RSA_N, &n), 1);
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	assert_non_null(bld);
	assert_int_equal(OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n), 1);
	assert_int_equal(OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e), 1);
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *p = NULL;
	assert_non_null(c);
	assert_int_equal(EVP_PKEY_fromdata_init(c), 1);
	assert_int_equal(EVP_PKEY_fromdata(c, &p, EVP_PKEY_PUBLIC_KEY, params), 1);
	EVP_PKEY_CTX_free(c);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(n);
	return p;
}

static ota_err rsa_jwk_with_e(const BIGNUM *e)
{
	BIGNUM *n = NULL;
	assert_int_equal(EVP_PKEY_get_bn_param(RSA_KEY, OSSL_PKEY_PARAM_RSA_N, &n), 1);
	uint8_t nb[512], eb[64];
	int nl = BN_bn2bin(n, nb), el = BN_bn2bin(e, eb);
	BN_free(n);
	char *ns = NULL, *es = NULL;
	assert_ota(ota_base64url_encode(ota_bytes_make(nb, (size_t)nl), &ns), OTA_OK);
	assert_ota(ota_base64url_encode(ota_bytes_make(eb, (size_t)el), &es), OTA_OK);
	char jwk[1024];
	int w = snprintf(jwk, sizeof jwk, "{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"%s\"}", ns, es);
	assert_true(w > 0 && (size_t)w < sizeof jwk);
	free(ns);
	free(es);
	ota_key *k = NULL;
	ota_err rc = ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &k, NULL);
	if (rc != OTA_OK)
		assert_null(k);
	ota_key_free(k);
	return rc;
}

static void test_rsa_exponent(void **s)
{
	(void)s;
	static const struct {
		const char *e; /* decimal */
		ota_err want;
	} cases[] = {
	    {"1", OTA_ERR_KEY_WEAK},          {"3", OTA_ERR_KEY_WEAK},
	    {"17", OTA_ERR_KEY_WEAK},         {"257", OTA_ERR_KEY_WEAK},
	    {"65535", OTA_ERR_KEY_WEAK},      {"65536", OTA_ERR_KEY_WEAK},
	    {"65538", OTA_ERR_KEY_WEAK}, /* even */
	    {"65537", OTA_OK},                {"65539", OTA_OK},
	    {"4294967297", OTA_OK}, /* 2^32 + 1 */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		BIGNUM *e = NULL;
		assert_true(BN_dec2bn(&e, cases[i].e) > 0);
		EVP_PKEY *p = rsa_with_e(e);
		/* SPKI PEM (OpenSSL's decoder path) */
		ota_err got = load_pkey_pem(p, false);
		if (got != cases[i].want)
			fail_msg("PEM e=%s: got %s want %s", cases[i].e, ota_err_name(got),
			         ota_err_name(cases[i].want));
		/* JWK (was key_format for e = 1 or even, accepted for 3 ... 65535) */
		got = rsa_jwk_with_e(e);
		if (got != cases[i].want)
			fail_msg("JWK e=%s: got %s want %s", cases[i].e, ota_err_name(got),
			         ota_err_name(cases[i].want));
		EVP_PKEY_free(p);
		BN_free(e);
	}
}

/* A private RSA key with e = 3 is refused too (its public half is weak). */
static void test_rsa_private_small_exponent(void **s)
{
	(void)s;
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	BIGNUM *e = BN_new();
	EVP_PKEY *p = NULL;
	assert_non_null(c);
	assert_non_null(e);
	assert_int_equal(BN_set_word(e, 3), 1);
	assert_int_equal(EVP_PKEY_keygen_init(c), 1);
	assert_int_equal(EVP_PKEY_CTX_set_rsa_keygen_bits(c, 2048), 1);
	assert_int_equal(EVP_PKEY_CTX_set1_rsa_keygen_pubexp(c, e), 1);
	assert_int_equal(EVP_PKEY_keygen(c, &p), 1);
	assert_ota(load_pkey_pem(p, true), OTA_ERR_KEY_WEAK);
	assert_ota(load_pkey_pem(p, false), OTA_ERR_KEY_WEAK);
	EVP_PKEY_free(p);
	BN_free(e);
	EVP_PKEY_CTX_free(c);
	/* the fixture-sized key with e = 65537 loads both ways */
	assert_ota(load_pkey_pem(RSA_KEY, true), OTA_OK);
	assert_ota(load_pkey_pem(RSA_KEY, false), OTA_OK);
}

/* ---- Ed25519 ---- */

static const uint8_t ED25519_SPKI[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                         0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

/* libsodium's has_small_order blocklist (crypto_core/ed25519/ref10), little-endian y. */
static const uint8_t small_order[7][32] = {
    /* 0 (order 4) */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* 1 (order 1: the identity) */
    {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
    /* order 8 */
    {0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
     0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
     0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
    /* order 8 */
    {0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
     0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
     0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
    /* p - 1 (order 2) */
    {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
    /* p (= 0, order 4, non-canonical) */
    {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
    /* p + 1 (= 1, order 1, non-canonical) */
    {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
};

static ota_err load_ed25519_spki(const uint8_t pub[32])
{
	uint8_t der[sizeof ED25519_SPKI + 32];
	memcpy(der, ED25519_SPKI, sizeof ED25519_SPKI);
	memcpy(der + sizeof ED25519_SPKI, pub, 32);
	return load_der(der, sizeof der);
}

static void test_ed25519_small_order(void **s)
{
	(void)s;
	for (size_t i = 0; i < 7; i++) {
		for (int sign = 0; sign < 2; sign++) {
			uint8_t pub[32];
			memcpy(pub, small_order[i], 32);
			pub[31] = (uint8_t)(pub[31] | (sign << 7));
			ota_err a = load_ed25519_spki(pub), b = load_okp_jwk("Ed25519", pub, 32);
			if (a != OTA_ERR_KEY_POINT || b != OTA_ERR_KEY_POINT)
				fail_msg("small-order entry %zu sign %d: PEM %s, JWK %s", i, sign,
				         ota_err_name(a), ota_err_name(b));
		}
	}
}

static void test_ed25519_noncanonical(void **s)
{
	(void)s;
	/* y = p + 2 ... p + 18 = 2^255 - 1 (p and p + 1 are small-order above) */
	for (unsigned k = 2; k <= 18; k++) {
		for (int sign = 0; sign < 2; sign++) {
			uint8_t pub[32];
			memset(pub, 0xff, 32);
			pub[0] = (uint8_t)(0xed + k);
			pub[31] = (uint8_t)(0x7f | (sign << 7));
			ota_err a = load_ed25519_spki(pub), b = load_okp_jwk("Ed25519", pub, 32);
			if (a != OTA_ERR_KEY_NONCANONICAL || b != OTA_ERR_KEY_NONCANONICAL)
				fail_msg("y = p + %u sign %d: PEM %s, JWK %s", k, sign, ota_err_name(a),
				         ota_err_name(b));
		}
	}
}

/* Real keys still load, from every path, and verify. */
static void test_ed25519_real_keys(void **s)
{
	(void)s;
	for (int i = 0; i < 32; i++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(OTA_ALG_EDDSA, &k), OTA_OK);
		uint8_t pub[32];
		size_t pl = sizeof pub;
		assert_int_equal(EVP_PKEY_get_raw_public_key(ota_key_evp(k), pub, &pl), 1);
		assert_ota(load_ed25519_spki(pub), OTA_OK);
		assert_ota(load_okp_jwk("Ed25519", pub, 32), OTA_OK);
		assert_ota(load_pkey_pem(ota_key_evp(k), true), OTA_OK);
		ota_key_free(k);
	}
}

/* ---- Ed448 (COSE verification only) ---- */

static const uint8_t ED448_SPKI[12] = {0x30, 0x43, 0x30, 0x05, 0x06, 0x03,
                                       0x2b, 0x65, 0x71, 0x03, 0x3a, 0x00};

static ota_err load_ed448(const uint8_t pub[57], bool jwk)
{
	if (jwk)
		return load_okp_jwk("Ed448", pub, 57);
	uint8_t der[sizeof ED448_SPKI + 57];
	memcpy(der, ED448_SPKI, sizeof ED448_SPKI);
	memcpy(der + sizeof ED448_SPKI, pub, 57);
	return load_der(der, sizeof der);
}

static void test_ed448(void **s)
{
	(void)s;
	/* p = 2^448 - 2^224 - 1, little-endian in 56 bytes */
	uint8_t p[57] = {0};
	memset(p, 0xff, 56);
	p[28] = 0xfe;
	uint8_t small[3][57] = {{0}}, nonc[3][57];
	/* small[0]: y = 0, order 4 (x = 1 or -1 by the sign bit) */
	small[1][0] = 1;         /* y = 1: the identity */
	memcpy(small[2], p, 57); /* y = p - 1: order 2 */
	small[2][0] = 0xfe;
	memcpy(nonc[0], p, 57); /* y = p */
	memcpy(nonc[1], p, 57); /* y = p + 1: 28 zero bytes, then all ones */
	memset(nonc[1], 0, 28);
	nonc[1][28] = 0xff;
	ota_key *real = NULL;
	EVP_PKEY *rp = EVP_PKEY_Q_keygen(NULL, NULL, "ED448");
	assert_non_null(rp);
	size_t pl = 57;
	assert_int_equal(EVP_PKEY_get_raw_public_key(rp, nonc[2], &pl), 1);
	nonc[2][56] |= 0x01; /* a reserved bit of the last byte */
	for (int jwk = 0; jwk < 2; jwk++) {
		for (size_t i = 0; i < 3; i++)
			for (int sign = 0; sign < 2; sign++) {
				uint8_t pub[57];
				memcpy(pub, small[i], 57);
				pub[56] = (uint8_t)(pub[56] | (sign << 7));
				ota_err got = load_ed448(pub, jwk);
				if (got != OTA_ERR_KEY_POINT)
					fail_msg("Ed448 small-order %zu sign %d jwk %d: %s", i, sign, jwk,
					         ota_err_name(got));
			}
		for (size_t i = 0; i < 3; i++) {
			ota_err got = load_ed448(nonc[i], jwk);
			if (got != OTA_ERR_KEY_NONCANONICAL)
				fail_msg("Ed448 non-canonical %zu jwk %d: %s", i, jwk, ota_err_name(got));
		}
	}
	/* a real Ed448 key loads, and the key layer still takes it under EdDSA
	 * (the cose-wg Ed448 example); trust roots refuse it (trust_keyform_test) */
	uint8_t pub[57];
	pl = sizeof pub;
	assert_int_equal(EVP_PKEY_get_raw_public_key(rp, pub, &pl), 1);
	assert_ota(load_ed448(pub, true), OTA_OK);
	assert_ota(load_ed448(pub, false), OTA_OK);
	assert_ota(load_pkey_pem(rp, true), OTA_OK);
	char *pem = NULL;
	BIO *b = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PUBKEY(b, rp), 1);
	long n = BIO_get_mem_data(b, &pem);
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, (size_t)n), &real, NULL), OTA_OK);
	assert_ota(ota_key_check_alg(real, OTA_ALG_EDDSA), OTA_OK);
	ota_key_free(real);
	BIO_free(b);
	EVP_PKEY_free(rp);
}

/* ---- EC point forms ---- */

static void test_ec_point_forms(void **s)
{
	(void)s;
	static const struct {
		ota_alg alg;
		size_t field;
	} curves[] = {{OTA_ALG_ES256, 32}, {OTA_ALG_ES384, 48}, {OTA_ALG_ES512, 66}};
	for (size_t c = 0; c < 3; c++) {
		for (int round = 0; round < 4; round++) { /* both parities of y, likely */
			ota_key *k = NULL;
			assert_ota(ota_key_generate(curves[c].alg, &k), OTA_OK);
			const EVP_PKEY *p = ota_key_evp(k);
			size_t n = 0;
			uint8_t *der = test_ec_spki_as(p, "uncompressed", "named_curve", &n);
			assert_ota(load_der(der, n), OTA_OK);
			/* the same point, first byte 0x06 | (y & 1): the audit's hybrid form */
			uint8_t *hyb = malloc(n);
			assert_non_null(hyb);
			memcpy(hyb, der, n);
			size_t at = n - 1 - 2 * curves[c].field;
			assert_int_equal(hyb[at], 0x04);
			hyb[at] = (uint8_t)(0x06 | (der[n - 1] & 1));
			assert_ota(load_der(hyb, n), OTA_ERR_KEY_NONCANONICAL);
			hyb[at] ^= 1; /* the wrong parity bit: does not decode or is refused */
			assert_true(load_der(hyb, n) != OTA_OK);
			free(hyb);
			const char *forms[][2] = {{"hybrid", "named_curve"},
			                          {"compressed", "named_curve"},
			                          {"uncompressed", "explicit"}};
			for (size_t f = 0; f < 3; f++) {
				size_t m = 0;
				uint8_t *o = test_ec_spki_as(p, forms[f][0], forms[f][1], &m);
				ota_err got = load_der(o, m);
				if (got != OTA_ERR_KEY_NONCANONICAL)
					fail_msg("%s: %s %s: %s", ota_alg_name(curves[c].alg), forms[f][0],
					         forms[f][1], ota_err_name(got));
				free(o);
			}
			/* a private key whose file holds a compressed (or hybrid) public
			 * point loads, with the kid of the canonical public key */
			for (size_t f = 0; f < 2; f++) {
				EVP_PKEY *d = EVP_PKEY_dup((EVP_PKEY *)(uintptr_t)p);
				assert_non_null(d);
				assert_int_equal(EVP_PKEY_set_utf8_string_param(
				                     d, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
				                     forms[f][0]),
				                 1);
				BIO *b = BIO_new(BIO_s_mem());
				assert_int_equal(PEM_write_bio_PrivateKey(b, d, NULL, NULL, 0, NULL, NULL), 1);
				char *text = NULL;
				long tl = BIO_get_mem_data(b, &text);
				ota_key *pk = NULL;
				assert_ota(ota_key_load_pem(ota_bytes_make(text, (size_t)tl), &pk, NULL),
				           OTA_OK);
				assert_true(ota_key_equal_public(pk, k));
				ota_key_free(pk);
				BIO_free(b);
				EVP_PKEY_free(d);
			}
			free(der);
			ota_key_free(k);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rsa_exponent),
	    cmocka_unit_test(test_rsa_private_small_exponent),
	    cmocka_unit_test(test_ed25519_small_order),
	    cmocka_unit_test(test_ed25519_noncanonical),
	    cmocka_unit_test(test_ed25519_real_keys),
	    cmocka_unit_test(test_ed448),
	    cmocka_unit_test(test_ec_point_forms),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
