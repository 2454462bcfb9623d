/* Keys: PEM/JWK loading, kid, raw ECDSA, RSA-PSS, refusals (common/key.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "ota/key.h"
#include "test_util.h"

/* FIXTURE: a SEC1 "EC PRIVATE KEY" test key, never used outside tests. */
static const char sec1_fixture[] =
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEINV8SPyQlQPnoGo1ncpr98WQqopVn3i4rlqCvyfH2KffoAoGCCqGSM49\n"
    "AwEHoUQDQgAEsK9HyfAsPG2OLSbt3mT/yjJ8/DQR2l+IgYxxGhGNvQlUrMandI5D\n"
    "+aKyUFym6OcmcuWel96RVXgGMHOdaV13Qw==\n"
    "-----END EC PRIVATE KEY-----\n";

/* FIXTURE: RFC 8152 / cose-wg Examples key "11" (public test material). */
static const char jwk_p256_fixture[] =
    "{\"kty\":\"EC\",\"kid\":\"11\",\"crv\":\"P-256\","
    "\"x\":\"usWxHK2PmfnHKwXPS54m0kTcGJ90UiglWiGahtagnv8\","
    "\"y\":\"IBOL-C3BttVivg-lSreASjpkttcsz-1rb7btKLv8EX4\","
    "\"d\":\"V8kgd2ZBRuh2dgyVINBUqpPDr7BOMGcF22CQMIUHtNM\"}";
/* Same x, y with the last character of y changed: off the curve. */
static const char jwk_p256_offcurve[] =
    "{\"kty\":\"EC\",\"crv\":\"P-256\","
    "\"x\":\"usWxHK2PmfnHKwXPS54m0kTcGJ90UiglWiGahtagnv8\","
    "\"y\":\"IBOL-C3BttVivg-lSreASjpkttcsz-1rb7btKLv8EX8\"}";
/* FIXTURE: RFC 8032 test 1 Ed25519 key (public test material). */
static const char jwk_ed25519_fixture[] =
    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\","
    "\"d\":\"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A\"}";

static const ota_bytes msg = {(const uint8_t *)"hello, ota", 10};

static void roundtrip(ota_alg alg)
{
	ota_key *k = NULL;
	assert_ota(ota_key_generate(alg, &k), OTA_OK);
	assert_true(ota_key_has_private(k));
	assert_int_equal(ota_key_default_alg(k), alg);
	uint8_t sig[256];
	size_t sl = 0;
	assert_ota(ota_key_sign(k, alg, msg, (ota_buf){sig, sizeof sig}, &sl), OTA_OK);
	assert_int_equal(sl, ota_alg_sig_size(alg));
	assert_ota(ota_key_verify(k, alg, msg, ota_bytes_make(sig, sl)), OTA_OK);
	/* tampered message */
	assert_ota(ota_key_verify(k, alg, ota_bytes_make("hello, otb", 10), ota_bytes_make(sig, sl)),
	           OTA_ERR_SIG_INVALID);
	/* tampered signature */
	sig[sl - 1] ^= 1;
	assert_ota(ota_key_verify(k, alg, msg, ota_bytes_make(sig, sl)), OTA_ERR_SIG_INVALID);
	sig[sl - 1] ^= 1;
	/* wrong length */
	assert_ota(ota_key_verify(k, alg, msg, ota_bytes_make(sig, sl - 1)), OTA_ERR_SIG_FORMAT);
	/* split into parts: same answer */
	ota_bytes parts[3] = {{msg.ptr, 3}, {msg.ptr + 3, 0}, {msg.ptr + 3, msg.len - 3}};
	assert_ota(ota_key_verify_parts(k, alg, parts, 3, ota_bytes_make(sig, sl)), OTA_OK);

	/* public PEM round trip keeps the kid */
	char *pub = NULL;
	assert_ota(ota_key_public_pem(k, &pub), OTA_OK);
	ota_key *kp = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(pub, strlen(pub)), &kp, NULL), OTA_OK);
	assert_false(ota_key_has_private(kp));
	assert_true(ota_key_equal_public(k, kp));
	assert_ota(ota_key_verify(kp, alg, msg, ota_bytes_make(sig, sl)), OTA_OK);
	assert_ota(ota_key_sign(kp, alg, msg, (ota_buf){sig, sizeof sig}, &sl),
	           OTA_ERR_KEY_PRIVATE_REQUIRED);
	/* private PEM round trip */
	char *priv = NULL;
	size_t priv_len = 0;
	assert_ota(ota_key_private_pem(k, &priv, &priv_len), OTA_OK);
	assert_non_null(strstr(priv, "BEGIN PRIVATE KEY"));
	ota_key *k2 = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(priv, priv_len), &k2, NULL), OTA_OK);
	assert_true(ota_key_has_private(k2));
	assert_true(ota_key_equal_public(k, k2));
	ota_wipe(priv, priv_len);
	free(priv);
	/* public JWK round trip */
	char *jwk = NULL;
	assert_ota(ota_key_public_jwk(k, &jwk), OTA_OK);
	ota_key *kj = NULL;
	assert_ota(ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &kj, NULL), OTA_OK);
	assert_true(ota_key_equal_public(k, kj));
	free(jwk);
	ota_key_free(kj);
	ota_key_free(k2);
	ota_key_free(kp);
	free(pub);
	ota_key_free(k);
}

static void test_roundtrip_es256(void **s) { (void)s; roundtrip(OTA_ALG_ES256); }
static void test_roundtrip_es384(void **s) { (void)s; roundtrip(OTA_ALG_ES384); }
static void test_roundtrip_es512(void **s) { (void)s; roundtrip(OTA_ALG_ES512); }
static void test_roundtrip_eddsa(void **s) { (void)s; roundtrip(OTA_ALG_EDDSA); }

static void test_alg_names(void **s)
{
	(void)s;
	ota_alg a;
	assert_ota(ota_alg_from_name("ES256", &a), OTA_OK);
	assert_int_equal(a, OTA_ALG_ES256);
	assert_ota(ota_alg_from_name("EdDSA", &a), OTA_OK);
	assert_int_equal(a, OTA_ALG_EDDSA);
	assert_ota(ota_alg_from_name("es256", &a), OTA_ERR_ALG_UNKNOWN);
	assert_ota(ota_alg_from_name("HS256", &a), OTA_ERR_ALG_UNKNOWN);
	assert_string_equal(ota_alg_name(OTA_ALG_PS256), "PS256");
	assert_true(ota_alg_is_known(-7));
	assert_false(ota_alg_is_known(-46));
	assert_false(ota_alg_is_known(0));
	assert_ota(ota_key_generate(OTA_ALG_PS256, &(ota_key *){NULL}), OTA_ERR_ALG_UNKNOWN);
}

static void test_alg_mismatch(void **s)
{
	(void)s;
	ota_key *p256 = NULL, *ed = NULL, *p521 = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &p256), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &ed), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES512, &p521), OTA_OK);
	uint8_t sig[132] = {0};
	assert_ota(ota_key_check_alg(ed, OTA_ALG_ES256), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_check_alg(p256, OTA_ALG_ES512), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_check_alg(p256, OTA_ALG_EDDSA), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_check_alg(p256, OTA_ALG_PS256), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_check_alg(p521, OTA_ALG_ES384), OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_check_alg(p521, OTA_ALG_ES512), OTA_OK);
	assert_ota(ota_key_verify(ed, OTA_ALG_ES256, msg, ota_bytes_make(sig, 64)),
	           OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_key_verify(p256, OTA_ALG_ES512, msg, ota_bytes_make(sig, 132)),
	           OTA_ERR_ALG_KEY_MISMATCH);
	size_t sl;
	assert_ota(ota_key_sign(p256, OTA_ALG_ES384, msg, (ota_buf){sig, sizeof sig}, &sl),
	           OTA_ERR_ALG_KEY_MISMATCH);
	ota_key_free(p256);
	ota_key_free(ed);
	ota_key_free(p521);
}

/* A DER ECDSA signature (what OpenSSL makes natively) is refused. */
static void test_der_signature_refused(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint8_t der[80];
	size_t dl = sizeof der;
	assert_int_equal(EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, ota_key_evp(k)), 1);
	assert_int_equal(EVP_DigestSign(c, der, &dl, msg.ptr, msg.len), 1);
	EVP_MD_CTX_free(c);
	assert_true(dl != 64);
	assert_ota(ota_key_verify(k, OTA_ALG_ES256, msg, ota_bytes_make(der, dl)),
	           OTA_ERR_SIG_FORMAT);
	ota_key_free(k);
}

/* s replaced by n - s (high-S form) still verifies: ECDSA malleability accepted. */
static void test_high_s_accepted(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	uint8_t sig[64];
	size_t sl = 0;
	assert_ota(ota_key_sign(k, OTA_ALG_ES256, msg, (ota_buf){sig, sizeof sig}, &sl), OTA_OK);
	EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	const BIGNUM *n = EC_GROUP_get0_order(g);
	BIGNUM *sv = BN_bin2bn(sig + 32, 32, NULL);
	BIGNUM *ns = BN_new();
	assert_int_equal(BN_sub(ns, n, sv), 1);
	assert_int_equal(BN_bn2binpad(ns, sig + 32, 32), 32);
	assert_ota(ota_key_verify(k, OTA_ALG_ES256, msg, ota_bytes_make(sig, 64)), OTA_OK);
	BN_free(sv);
	BN_free(ns);
	EC_GROUP_free(g);
	ota_key_free(k);
}

static void test_kid_is_sha256_of_spki(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_EDDSA, &k), OTA_OK);
	uint8_t *der = NULL;
	size_t dl = 0;
	assert_ota(ota_key_spki_der(k, &der, &dl), OTA_OK);
	assert_int_equal(dl, 44); /* Ed25519 SPKI */
	uint8_t want[32], got[32];
	assert_int_equal(EVP_Digest(der, dl, want, NULL, EVP_sha256(), NULL), 1);
	assert_ota(ota_key_kid(k, got), OTA_OK);
	assert_memory_equal(want, got, 32);
	free(der);
	ota_key_free(k);
}

static void test_sec1_pem(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(sec1_fixture, strlen(sec1_fixture)), &k, NULL),
	           OTA_OK);
	/* as `openssl ecparam -genkey` writes it: the curve block first */
	char with_params[1024];
	int n = snprintf(with_params, sizeof with_params,
	                 "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n%s",
	                 sec1_fixture);
	assert_true(n > 0 && (size_t)n < sizeof with_params);
	ota_key *k2 = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(with_params, (size_t)n), &k2, NULL), OTA_OK);
	assert_true(ota_key_equal_public(k, k2));
	ota_key_free(k2);
	assert_true(ota_key_has_private(k));
	assert_int_equal(ota_key_default_alg(k), OTA_ALG_ES256);
	assert_string_equal(ota_key_type_name(k), "P-256");
	uint8_t sig[64];
	size_t sl;
	assert_ota(ota_key_sign(k, OTA_ALG_ES256, msg, (ota_buf){sig, sizeof sig}, &sl), OTA_OK);
	assert_ota(ota_key_verify(k, OTA_ALG_ES256, msg, ota_bytes_make(sig, sl)), OTA_OK);
	ota_key_free(k);
}

static void test_jwk(void **s)
{
	(void)s;
	ota_key *k = NULL, *e = NULL;
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_key_load_jwk(ota_bytes_make(jwk_p256_fixture, strlen(jwk_p256_fixture)), &k,
	                            &err),
	           OTA_OK);
	assert_true(ota_key_has_private(k));
	assert_ota(ota_key_load_jwk(ota_bytes_make(jwk_ed25519_fixture, strlen(jwk_ed25519_fixture)),
	                            &e, NULL),
	           OTA_OK);
	assert_int_equal(ota_key_default_alg(e), OTA_ALG_EDDSA);
	/* RFC 8032 test 1: empty message signature */
	uint8_t sig[64];
	size_t sl;
	assert_ota(ota_key_sign(e, OTA_ALG_EDDSA, ota_bytes_make("", 0), (ota_buf){sig, 64}, &sl),
	           OTA_OK);
	static const uint8_t want_prefix[4] = {0xe5, 0x56, 0x43, 0x00};
	assert_memory_equal(sig, want_prefix, 4);
	ota_key_free(k);
	ota_key_free(e);
}

static void test_jwk_refusals(void **s)
{
	(void)s;
	ota_key *k = NULL;
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_key_load_jwk(ota_bytes_make(jwk_p256_offcurve, strlen(jwk_p256_offcurve)), &k,
	                            &err),
	           OTA_ERR_KEY_POINT);
	assert_null(k);
	static const char *bad[][2] = {
	    {"{\"kty\":\"EC\",\"crv\":\"P-256K\",\"x\":\"AA\",\"y\":\"AA\"}", "key_unsupported"},
	    {"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}", "key_format"},
	    {"{\"kty\":\"oct\",\"k\":\"AA\"}", "key_unsupported"},
	    {"{\"crv\":\"P-256\"}", "key_format"},
	    {"[1]", "key_format"},
	    {"{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AA\"}", "key_unsupported"},
	    {"{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=\"}",
	     "key_format"},
	    {"{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}", "key_too_weak"},
	    {"{\"kty\":\"EC\",\"kty\":\"EC\"}", "key_format"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ota_err want;
		assert_true(ota_err_from_name(bad[i][1], &want));
		ota_err got = ota_key_load_jwk(ota_bytes_make(bad[i][0], strlen(bad[i][0])), &k, NULL);
		if (got != want)
			fail_msg("case %zu: got %s want %s", i, ota_err_name(got), bad[i][1]);
		assert_null(k);
	}
}

/*
 * The fixed-form fast path of public PEM loading (P-256 uncompressed,
 * Ed25519) gives the same key, SPKI and kid as the general path: for fresh
 * keys, the DER re-encoded by i2d_PUBKEY is the DER loaded, and the key
 * verifies what its private half signed.
 */
static void test_public_pem_fast_path(void **s)
{
	(void)s;
	static const ota_alg algs[] = {OTA_ALG_ES256, OTA_ALG_EDDSA};
	for (size_t a = 0; a < 2; a++)
		for (int i = 0; i < 25; i++) {
			ota_key *k = NULL, *pub = NULL;
			assert_ota(ota_key_generate(algs[a], &k), OTA_OK);
			char *pem = NULL;
			assert_ota(ota_key_public_pem(k, &pem), OTA_OK);
			assert_ota(ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &pub, NULL), OTA_OK);
			uint8_t *d1 = NULL, *d2 = NULL;
			size_t l1 = 0, l2 = 0;
			assert_ota(ota_key_spki_der(k, &d1, &l1), OTA_OK);
			assert_ota(ota_key_spki_der(pub, &d2, &l2), OTA_OK);
			assert_int_equal(l1, l2);
			assert_memory_equal(d1, d2, l1);
			uint8_t kid1[32], kid2[32], want[32];
			assert_ota(ota_key_kid(k, kid1), OTA_OK);
			assert_ota(ota_key_kid(pub, kid2), OTA_OK);
			assert_int_equal(EVP_Digest(d2, l2, want, NULL, EVP_sha256(), NULL), 1);
			assert_memory_equal(kid1, kid2, 32);
			assert_memory_equal(kid2, want, 32);
			uint8_t sig[256];
			size_t sl = 0;
			static const char text[] = "fast path";
			assert_ota(ota_key_sign(k, algs[a], ota_bytes_make(text, sizeof text),
			                        (ota_buf){sig, sizeof sig}, &sl),
			           OTA_OK);
			assert_ota(ota_key_verify(pub, algs[a], ota_bytes_make(text, sizeof text),
			                          ota_bytes_make(sig, sl)),
			           OTA_OK);
			sig[0] ^= 1;
			assert_int_not_equal(ota_key_verify(pub, algs[a], ota_bytes_make(text, sizeof text),
			                                    ota_bytes_make(sig, sl)),
			                     OTA_OK);
			free(d1);
			free(d2);
			free(pem);
			ota_key_free(pub);
			ota_key_free(k);
		}
}

/* Public PEM and SPKI come from the DER kept at load: byte for byte what
 * OpenSSL's PEM_write_bio_PUBKEY / i2d_PUBKEY write, for every key type. */
static void test_public_pem_matches_openssl(void **s)
{
	(void)s;
	static const ota_alg algs[] = {OTA_ALG_ES256, OTA_ALG_ES384, OTA_ALG_ES512, OTA_ALG_EDDSA};
	for (size_t a = 0; a < 4; a++) {
		ota_key *k = NULL;
		assert_ota(ota_key_generate(algs[a], &k), OTA_OK);
		char *priv = NULL, *mine = NULL;
		size_t pl = 0;
		assert_ota(ota_key_private_pem(k, &priv, &pl), OTA_OK);
		assert_ota(ota_key_public_pem(k, &mine), OTA_OK);
		BIO *in = BIO_new_mem_buf(priv, (int)pl);
		EVP_PKEY *pk = PEM_read_bio_PrivateKey(in, NULL, NULL, NULL);
		assert_non_null(pk);
		BIO *outb = BIO_new(BIO_s_mem());
		assert_int_equal(PEM_write_bio_PUBKEY(outb, pk), 1);
		char *theirs = NULL;
		long tl = BIO_get_mem_data(outb, &theirs);
		assert_int_equal((size_t)tl, strlen(mine));
		assert_memory_equal(theirs, mine, (size_t)tl);
		unsigned char *der = NULL;
		int dl = i2d_PUBKEY(pk, &der);
		uint8_t *kd = NULL;
		size_t kl = 0;
		assert_ota(ota_key_spki_der(k, &kd, &kl), OTA_OK);
		assert_int_equal((size_t)dl, kl);
		assert_memory_equal(der, kd, kl);
		free(kd);
		OPENSSL_free(der);
		BIO_free(outb);
		BIO_free(in);
		EVP_PKEY_free(pk);
		free(mine);
		free(priv);
		ota_key_free(k);
	}
}

static void test_spki_off_curve(void **s)
{
	(void)s;
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	uint8_t *der = NULL;
	size_t dl = 0;
	assert_ota(ota_key_spki_der(k, &der, &dl), OTA_OK);
	der[dl - 1] ^= 0x01; /* y changes: off the curve */
	char *b64 = NULL;
	assert_ota(ota_base64_encode(ota_bytes_make(der, dl), &b64), OTA_OK);
	char pem[512];
	int n = snprintf(pem, sizeof pem, "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n",
	                 b64);
	assert_true(n > 0 && (size_t)n < sizeof pem);
	ota_key *bad = NULL;
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, (size_t)n), &bad, &err), OTA_ERR_KEY_POINT);
	assert_int_equal(err.code, OTA_ERR_KEY_POINT);
	assert_null(bad);
	free(b64);
	free(der);
	ota_key_free(k);
}

static void test_pem_refusals(void **s)
{
	(void)s;
	ota_key *k = NULL;
	static const char *bad[] = {
	    "",
	    "not a key",
	    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
	    "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
	    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_ota(ota_key_load_pem(ota_bytes_make(bad[i], strlen(bad[i])), &k, NULL),
		           OTA_ERR_KEY_FORMAT);
		assert_null(k);
	}
}

static EVP_PKEY *rsa_gen(unsigned bits)
{
	EVP_PKEY *p = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
	assert_non_null(p);
	return p;
}

static char *pub_pem_of(EVP_PKEY *p)
{
	BIO *b = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PUBKEY(b, p), 1);
	char *d = NULL;
	long n = BIO_get_mem_data(b, &d);
	char *s = strndup(d, (size_t)n);
	BIO_free(b);
	return s;
}

static void test_rsa(void **s)
{
	(void)s;
	/* under 2048 bits: refused */
	EVP_PKEY *small = rsa_gen(1024);
	char *pem = pub_pem_of(small);
	ota_key *k = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &k, NULL), OTA_ERR_KEY_WEAK);
	free(pem);
	EVP_PKEY_free(small);

	EVP_PKEY *p = rsa_gen(2048);
	pem = pub_pem_of(p);
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &k, NULL), OTA_OK);
	assert_int_equal(ota_key_default_alg(k), OTA_ALG_PS256);
	assert_int_equal(ota_key_bits(k), 2048);
	assert_ota(ota_key_check_alg(k, OTA_ALG_ES256), OTA_ERR_ALG_KEY_MISMATCH);
	/* PSS with salt = digest length verifies; max salt (OpenSSL's signing default) does not */
	for (int pass = 0; pass < 2; pass++) {
		EVP_MD_CTX *c = EVP_MD_CTX_new();
		EVP_PKEY_CTX *pc = NULL;
		uint8_t sig[256];
		size_t sl = sizeof sig;
		assert_int_equal(EVP_DigestSignInit(c, &pc, EVP_sha256(), NULL, p), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING), 1);
		assert_int_equal(EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, pass == 0 ? 32 : RSA_PSS_SALTLEN_MAX),
		                 1);
		assert_int_equal(EVP_DigestSign(c, sig, &sl, msg.ptr, msg.len), 1);
		EVP_MD_CTX_free(c);
		assert_ota(ota_key_verify(k, OTA_ALG_PS256, msg, ota_bytes_make(sig, sl)),
		           pass == 0 ? OTA_OK : OTA_ERR_SIG_INVALID);
		assert_ota(ota_key_verify(k, OTA_ALG_PS256, msg, ota_bytes_make(sig, sl - 1)),
		           OTA_ERR_SIG_FORMAT);
	}
	ota_key_free(k);
	free(pem);
	EVP_PKEY_free(p);
}

static void test_load_file(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char path[512], link[512];
	snprintf(path, sizeof path, "%s/jwk.json", dir);
	snprintf(link, sizeof link, "%s/link.json", dir);
	assert_ota(ota_file_write_atomic(path, ota_bytes_make(jwk_p256_fixture,
	                                                      strlen(jwk_p256_fixture)),
	                                 0600, NULL),
	           OTA_OK);
	ota_key *k = NULL;
	assert_ota(ota_key_load_file(path, &k, NULL), OTA_OK);
	assert_int_equal(ota_key_default_alg(k), OTA_ALG_ES256);
	ota_key_free(k);
	assert_int_equal(symlink(path, link), 0);
	assert_ota(ota_key_load_file(link, &k, NULL), OTA_ERR_IO); /* O_NOFOLLOW */
	assert_ota(ota_key_load_file("/nonexistent/key.pem", &k, NULL), OTA_ERR_IO);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_es256),   cmocka_unit_test(test_roundtrip_es384),
	    cmocka_unit_test(test_roundtrip_es512),   cmocka_unit_test(test_roundtrip_eddsa),
	    cmocka_unit_test(test_alg_names),         cmocka_unit_test(test_alg_mismatch),
	    cmocka_unit_test(test_der_signature_refused), cmocka_unit_test(test_high_s_accepted),
	    cmocka_unit_test(test_kid_is_sha256_of_spki), cmocka_unit_test(test_sec1_pem),
	    cmocka_unit_test(test_jwk),               cmocka_unit_test(test_jwk_refusals),
	    cmocka_unit_test(test_spki_off_curve),    cmocka_unit_test(test_pem_refusals),
	    cmocka_unit_test(test_rsa),               cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_public_pem_fast_path),
	    cmocka_unit_test(test_public_pem_matches_openssl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
