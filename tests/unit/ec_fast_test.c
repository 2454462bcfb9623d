/*
 * common/ec_fast.c, ECDSA P-256 verification with a table of multiples of
 * the public key, answers exactly as OpenSSL's EVP verification does:
 *   - on valid signatures of random digests, and on the same signatures and
 *     digests with one bit flipped;
 *   - on edge values of r and s (0, 1, n-1, n, n+1, p-1, 2^256-1) and of
 *     the digest (0, n, 2^256-1);
 *   - on a valid signature whose x(R) lies in [n, p), so that r = x(R) - n
 *     (the second comparison; built by choosing the public key);
 *   - through ota_key_verify before and after the key's table is built
 *     (the FAST_AFTER-th verification), from several threads at once.
 */
#include "test_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

#include "common/ec_fast.h"
#include "ota/key.h"

/* OpenSSL's answer through EVP: 1 valid, 0 anything else */
static int evp_answer(EVP_PKEY *pk, const uint8_t dig[32], const uint8_t sig[64])
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	assert_non_null(es);
	assert_non_null(r);
	assert_non_null(s);
	assert_int_equal(ECDSA_SIG_set0(es, r, s), 1);
	unsigned char *der = NULL;
	int dl = i2d_ECDSA_SIG(es, &der);
	assert_true(dl > 0);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	assert_non_null(c);
	assert_int_equal(EVP_PKEY_verify_init(c), 1);
	int v = EVP_PKEY_verify(c, der, (size_t)dl, dig, 32);
	EVP_PKEY_CTX_free(c);
	OPENSSL_free(der);
	ECDSA_SIG_free(es);
	return v == 1 ? 1 : 0;
}

static void evp_sign(EVP_PKEY *pk, const uint8_t dig[32], uint8_t sig[64])
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	assert_non_null(c);
	assert_int_equal(EVP_PKEY_sign_init(c), 1);
	unsigned char der[80];
	size_t dl = sizeof der;
	assert_int_equal(EVP_PKEY_sign(c, der, &dl, dig, 32), 1);
	const unsigned char *p = der;
	ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dl);
	assert_non_null(es);
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(es, &r, &s);
	assert_int_equal(BN_bn2binpad(r, sig, 32), 32);
	assert_int_equal(BN_bn2binpad(s, sig + 32, 32), 32);
	ECDSA_SIG_free(es);
	EVP_PKEY_CTX_free(c);
}

/* both answers, which must agree; returns the answer */
static int agree(const ota_ec_fast *f, EVP_PKEY *pk, const uint8_t dig[32], const uint8_t sig[64])
{
	int fast = ota_ec_fast_verify(f, dig, sig);
	int evp = evp_answer(pk, dig, sig);
	assert_int_equal(fast, evp);
	return fast;
}

static void test_random_and_flipped(void **state)
{
	(void)state;
	for (int key = 0; key < 3; key++) {
		EVP_PKEY *pk = EVP_EC_gen("P-256");
		assert_non_null(pk);
		ota_ec_fast *f = ota_ec_fast_new(pk);
		assert_non_null(f);
		int valid = 0, refused = 0;
		for (int i = 0; i < 120; i++) {
			uint8_t dig[32], sig[64];
			assert_int_equal(RAND_bytes(dig, sizeof dig), 1);
			evp_sign(pk, dig, sig);
			valid += agree(f, pk, dig, sig);
			uint8_t bad[64];
			memcpy(bad, sig, 64);
			bad[i % 64] ^= (uint8_t)(1u << (i % 8));
			refused += !agree(f, pk, dig, bad);
			uint8_t d2[32];
			memcpy(d2, dig, 32);
			d2[(i * 7) % 32] ^= 0x80;
			refused += !agree(f, pk, d2, sig);
			/* r and s swapped */
			memcpy(bad, sig + 32, 32);
			memcpy(bad + 32, sig, 32);
			refused += !agree(f, pk, dig, bad);
		}
		assert_int_equal(valid, 120);
		assert_int_equal(refused, 360);
		/* a table for another key refuses this key's signatures */
		EVP_PKEY *other = EVP_EC_gen("P-256");
		ota_ec_fast *g = ota_ec_fast_new(other);
		assert_non_null(g);
		uint8_t dig[32] = {1}, sig[64];
		evp_sign(pk, dig, sig);
		assert_int_equal(ota_ec_fast_verify(g, dig, sig), 0);
		assert_int_equal(ota_ec_fast_verify(f, dig, sig), 1);
		ota_ec_fast_free(g);
		EVP_PKEY_free(other);
		ota_ec_fast_free(f);
		EVP_PKEY_free(pk);
	}
}

static void test_not_p256(void **state)
{
	(void)state;
	EVP_PKEY *p384 = EVP_EC_gen("P-384");
	EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_non_null(p384);
	assert_non_null(ed);
	assert_null(ota_ec_fast_new(p384));
	assert_null(ota_ec_fast_new(ed));
	assert_null(ota_ec_fast_new(NULL));
	uint8_t dig[32] = {0}, sig[64] = {0};
	assert_int_equal(ota_ec_fast_verify(NULL, dig, sig), -1);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(ed);
}

static void put(const BIGNUM *v, uint8_t out[32])
{
	assert_int_equal(BN_bn2binpad(v, out, 32), 32);
}

static void test_edges(void **state)
{
	(void)state;
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	assert_non_null(pk);
	ota_ec_fast *f = ota_ec_fast_new(pk);
	assert_non_null(f);
	EC_GROUP *grp = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	BIGNUM *p = BN_new();
	assert_int_equal(EC_GROUP_get_curve(grp, p, NULL, NULL, NULL), 1);
	const BIGNUM *n = EC_GROUP_get0_order(grp);
	BIGNUM *v[8];
	for (int i = 0; i < 8; i++)
		v[i] = BN_new();
	BN_zero(v[0]);
	BN_one(v[1]);
	BN_copy(v[2], n);
	BN_sub_word(v[2], 1);
	BN_copy(v[3], n);
	BN_copy(v[4], n);
	BN_add_word(v[4], 1);
	BN_copy(v[5], p);
	BN_sub_word(v[5], 1);
	BN_set_bit(v[6], 256);
	BN_sub_word(v[6], 1);
	BN_set_word(v[7], 0x1234567);
	uint8_t digs[3][32];
	memset(digs[0], 0, 32);
	put(v[3], digs[1]);
	memset(digs[2], 0xff, 32);
	int checked = 0;
	for (int d = 0; d < 3; d++)
		for (int a = 0; a < 8; a++)
			for (int b = 0; b < 8; b++) {
				uint8_t sig[64];
				put(v[a], sig);
				put(v[b], sig + 32);
				assert_int_equal(agree(f, pk, digs[d], sig), 0);
				checked++;
			}
	assert_int_equal(checked, 192);
	/* valid signatures of the edge digests */
	for (int d = 0; d < 3; d++) {
		uint8_t sig[64];
		evp_sign(pk, digs[d], sig);
		assert_int_equal(agree(f, pk, digs[d], sig), 1);
	}
	for (int i = 0; i < 8; i++)
		BN_free(v[i]);
	BN_free(p);
	EC_GROUP_free(grp);
	ota_ec_fast_free(f);
	EVP_PKEY_free(pk);
}

static EVP_PKEY *pkey_from_point(const EC_GROUP *g, const EC_POINT *q)
{
	uint8_t pub[65];
	assert_int_equal(EC_POINT_point2oct(g, q, POINT_CONVERSION_UNCOMPRESSED, pub, sizeof pub, NULL),
	                 65);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	assert_non_null(b);
	assert_int_equal(OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0),
	                 1);
	assert_int_equal(OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub), 1);
	OSSL_PARAM *ps = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *pk = NULL;
	assert_int_equal(EVP_PKEY_fromdata_init(c), 1);
	assert_int_equal(EVP_PKEY_fromdata(c, &pk, EVP_PKEY_PUBLIC_KEY, ps), 1);
	EVP_PKEY_CTX_free(c);
	OSSL_PARAM_free(ps);
	OSSL_PARAM_BLD_free(b);
	return pk;
}

/*
 * A valid signature with x(R) in [n, p): pick such a point R, any s and e,
 * and the public key Q = r^-1 (s R - e G), with r = x(R) - n. Then
 * u1 G + u2 Q = s^-1 (e G + r Q) = R, whose x is r + n: valid, and only the
 * second comparison accepts it. x(R) = r exactly (r, not r + n) fails.
 */
static void test_x_above_order(void **state)
{
	(void)state;
	EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	BN_CTX *ctx = BN_CTX_new();
	BIGNUM *p = BN_new(), *x = BN_new(), *r = BN_new(), *s = BN_new(), *e = BN_new();
	BIGNUM *t = BN_new(), *ri = BN_new();
	const BIGNUM *n = EC_GROUP_get0_order(g);
	assert_int_equal(EC_GROUP_get_curve(g, p, NULL, NULL, ctx), 1);
	EC_POINT *R = EC_POINT_new(g), *Q = EC_POINT_new(g), *T = EC_POINT_new(g);
	/* x = n + k for the first k whose x lies on the curve */
	int found = 0;
	for (unsigned k = 1; k < 200 && !found; k++) {
		BN_copy(x, n);
		BN_add_word(x, k);
		found = EC_POINT_set_compressed_coordinates(g, R, x, 0, ctx) == 1;
	}
	ERR_clear_error();
	assert_true(found);
	assert_true(BN_cmp(x, p) < 0);
	BN_sub(r, x, n);
	BN_set_word(s, 0xC0FFEE);
	uint8_t dig[32];
	memset(dig, 0x5a, sizeof dig);
	BN_bin2bn(dig, 32, e);
	/* Q = r^-1 (s R - e G) */
	assert_non_null(BN_mod_inverse(ri, r, n, ctx));
	BN_mod_mul(t, s, ri, n, ctx);
	BIGNUM *u = BN_new();
	BN_mod_mul(u, e, ri, n, ctx);
	BN_sub(u, n, u); /* -e r^-1 */
	assert_int_equal(EC_POINT_mul(g, Q, u, R, t, ctx), 1);
	EVP_PKEY *pk = pkey_from_point(g, Q);
	ota_ec_fast *f = ota_ec_fast_new(pk);
	assert_non_null(f);
	uint8_t sig[64];
	put(r, sig);
	put(s, sig + 32);
	assert_int_equal(agree(f, pk, dig, sig), 1);
	/* r + n in the signature is out of range: refused by both */
	put(x, sig);
	assert_int_equal(agree(f, pk, dig, sig), 0);
	/* another s: refused by both */
	put(r, sig);
	sig[63] ^= 1;
	assert_int_equal(agree(f, pk, dig, sig), 0);
	ota_ec_fast_free(f);
	EVP_PKEY_free(pk);
	BN_free(u);
	EC_POINT_free(R);
	EC_POINT_free(Q);
	EC_POINT_free(T);
	BN_free(p);
	BN_free(x);
	BN_free(r);
	BN_free(s);
	BN_free(e);
	BN_free(t);
	BN_free(ri);
	BN_CTX_free(ctx);
	EC_GROUP_free(g);
}

/* the word inverse equals BN_mod_inverse's, on edges and random values */
static void test_inverse(void **state)
{
	(void)state;
	EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	const BIGNUM *n = EC_GROUP_get0_order(g);
	BN_CTX *ctx = BN_CTX_new();
	BIGNUM *s = BN_new(), *w = BN_new();
	uint8_t sb[32], got[32], want[32];
	int checked = 0;
	for (int i = 0; i < 3000; i++) {
		if (i == 0)
			BN_one(s);
		else if (i == 1)
			BN_set_word(s, 2);
		else if (i == 2) {
			BN_copy(s, n);
			BN_sub_word(s, 1);
		} else if (i == 3) {
			BN_copy(s, n);
			BN_rshift1(s, s);
		} else if (i < 100) {
			BN_zero(s);
			BN_set_bit(s, i + 150); /* powers of two */
		} else {
			assert_int_equal(BN_rand_range(s, n), 1);
			if (BN_is_zero(s))
				continue;
		}
		put(s, sb);
		assert_true(ota_ec_fast_inverse(sb, got));
		assert_non_null(BN_mod_inverse(w, s, n, ctx));
		put(w, want);
		assert_memory_equal(got, want, 32);
		checked++;
	}
	assert_true(checked > 2900);
	/* every power of two, and n minus each: the divsteps' longest and
	 * shortest runs of zero bits */
	for (int k = 0; k < 256; k++) {
		for (int minus = 0; minus < 2; minus++) {
			BN_zero(s);
			BN_set_bit(s, k);
			if (minus) {
				BIGNUM *t = BN_dup(n);
				assert_non_null(t);
				assert_int_equal(BN_sub(t, t, s), 1);
				BN_copy(s, t);
				BN_free(t);
			}
			put(s, sb);
			assert_true(ota_ec_fast_inverse(sb, got));
			assert_non_null(BN_mod_inverse(w, s, n, ctx));
			put(w, want);
			assert_memory_equal(got, want, 32);
		}
	}
	/* 0 and n have no inverse here */
	memset(sb, 0, 32);
	assert_false(ota_ec_fast_inverse(sb, got));
	put(n, sb);
	assert_false(ota_ec_fast_inverse(sb, got));
	BN_free(s);
	BN_free(w);
	BN_CTX_free(ctx);
	EC_GROUP_free(g);
}

/* ---- through ota_key_verify, across the switch to the table ---- */

typedef struct {
	const ota_key *key;
	uint8_t (*msgs)[48];
	uint8_t (*sigs)[64];
	int n;
	int ok, refused, wrong;
} worker;

static void *verify_all(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < w->n; i++) {
		ota_bytes m = {w->msgs[i], 48}, sg = {w->sigs[i], 64};
		ota_err e = ota_key_verify(w->key, OTA_ALG_ES256, m, sg);
		if (e == OTA_OK)
			w->ok++;
		else
			w->wrong++;
		uint8_t bad[64];
		memcpy(bad, w->sigs[i], 64);
		bad[(i * 13) % 64] ^= 0x10;
		ota_bytes b = {bad, 64};
		if (ota_key_verify(w->key, OTA_ALG_ES256, m, b) == OTA_ERR_SIG_INVALID)
			w->refused++;
		else
			w->wrong++;
	}
	return NULL;
}

static void test_key_switch(void **state)
{
	(void)state;
	enum { N = 150, T = 4 };
	ota_key *k = NULL;
	assert_int_equal(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	static uint8_t msgs[N][48], sigs[N][64];
	for (int i = 0; i < N; i++) {
		assert_int_equal(RAND_bytes(msgs[i], 48), 1);
		size_t sl = 0;
		ota_buf out = {sigs[i], 64};
		ota_bytes m = {msgs[i], 48};
		assert_int_equal(ota_key_sign(k, OTA_ALG_ES256, m, out, &sl), OTA_OK);
		assert_int_equal(sl, 64);
	}
	worker w[T];
	pthread_t th[T];
	for (int t = 0; t < T; t++) {
		w[t] = (worker){.key = k, .msgs = msgs, .sigs = sigs, .n = N};
		assert_int_equal(pthread_create(&th[t], NULL, verify_all, &w[t]), 0);
	}
	for (int t = 0; t < T; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(w[t].ok, N);
		assert_int_equal(w[t].refused, N);
		assert_int_equal(w[t].wrong, 0);
	}
	/* well past the switch: still exact, and another key's signature fails */
	ota_key *other = NULL;
	assert_int_equal(ota_key_generate(OTA_ALG_ES256, &other), OTA_OK);
	ota_bytes m = {msgs[0], 48}, sg = {sigs[0], 64};
	assert_int_equal(ota_key_verify(other, OTA_ALG_ES256, m, sg), OTA_ERR_SIG_INVALID);
	assert_int_equal(ota_key_verify(k, OTA_ALG_ES256, m, sg), OTA_OK);
	ota_key_free(other);
	ota_key_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_and_flipped),
		cmocka_unit_test(test_not_p256),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_x_above_order),
		cmocka_unit_test(test_inverse),
		cmocka_unit_test(test_key_switch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
