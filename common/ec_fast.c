/*
 * common/ec_fast.c - ECDSA P-256 verification with precomputed multiples of
 * the public key.
 *
 * Why: verification computes u1*G + u2*Q. OpenSSL keeps a table of
 * multiples of the generator G, so u1*G is cheap (about 7 us here), but Q
 * changes from call to call, so u2*Q is a variable-base multiplication
 * (about 41 us): two thirds of a verification. An endpoint or an archive
 * verifier checks thousands of signatures made with the same few keys, so
 * key.c builds, for a key that has verified many signatures, the same kind
 * of table for Q: a copy of the P-256 group whose generator is Q, given to
 * EC_GROUP_precompute_mult. u2*Q is then a fixed-base multiplication too,
 * and one verification costs about a third of OpenSSL's.
 *
 * What is not ours: every field and group operation (OpenSSL's EC_POINT_mul,
 * EC_POINT_add, BIGNUM). What is: the ECDSA verification equation of SEC 1
 * section 4.1.4, the same steps as OpenSSL's ossl_ecdsa_simple_verify_sig:
 * r and s in [1, n-1]; e the digest as an integer (SHA-256 is as long as
 * the P-256 order, so no truncation); w = s^-1 mod n; u1 = e*w, u2 = r*w mod
 * n; R = u1*G + u2*Q not the point at infinity; valid iff x(R) mod n = r.
 * w is computed by a binary extended Euclid on 4 x 64-bit words (below;
 * 4 us where BN_mod_inverse takes 10; no constant time is needed, every
 * input of a verification is public) and proven before use: w * s mod n
 * must be 1 (one BN_mod_mul), or BN_mod_inverse computes it instead.
 * x(R) is compared in Jacobian coordinates (X = x*Z^2, so x = r or x = r+n,
 * when r+n < p, is X = r*Z^2 or X = (r+n)*Z^2 mod p), which saves the field
 * inversion of the affine conversion.
 *
 * tests/unit/ec_fast_test.c and fuzz/fuzz_ec_fast.c hold the answers to
 * OpenSSL's EVP verification on valid, altered and edge-case signatures
 * (r or s of 0, 1, n-1, n, n+1, 2^256-1; digests of 0 and above n).
 *
 * EC_GROUP_precompute_mult and EC_POINT_get_Jprojective_coordinates_GFp
 * are deprecated in OpenSSL 3 (low-level EC API) but present in every 3.x;
 * they are used in this file only.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>

#include "ec_fast.h"


/* ---- s^-1 mod n, n odd: 256-bit words, least significant first ---- */

typedef struct {
	uint64_t w[4];
} u256;

static void u256_from_be(u256 *a, const uint8_t be[32])
{
	for (int i = 0; i < 4; i++) {
		uint64_t v = 0;
		for (int j = 0; j < 8; j++)
			v = (v << 8) | be[(3 - i) * 8 + j];
		a->w[i] = v;
	}
}

static void u256_to_be(const u256 *a, uint8_t be[32])
{
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			be[(3 - i) * 8 + j] = (uint8_t)(a->w[i] >> (56 - 8 * j));
}

static bool u256_is(const u256 *a, uint64_t v)
{
	return a->w[0] == v && (a->w[1] | a->w[2] | a->w[3]) == 0;
}

static bool u256_ge(const u256 *a, const u256 *b)
{
	for (int i = 3; i >= 0; i--)
		if (a->w[i] != b->w[i])
			return a->w[i] > b->w[i];
	return true;
}

static void u256_sub(u256 *a, const u256 *b) /* a >= b */
{
	uint64_t borrow = 0;
	for (int i = 0; i < 4; i++) {
		uint64_t x = a->w[i], y = b->w[i];
		a->w[i] = x - y - borrow;
		borrow = (x < y) || (x - y < borrow);
	}
}

static uint64_t u256_add(u256 *a, const u256 *b) /* returns the carry */
{
	uint64_t carry = 0;
	for (int i = 0; i < 4; i++) {
		uint64_t x = a->w[i];
		uint64_t s = x + b->w[i];
		uint64_t c1 = s < x;
		uint64_t s2 = s + carry;
		a->w[i] = s2;
		carry = c1 | (s2 < s);
	}
	return carry;
}

static void u256_shr1(u256 *a, uint64_t top)
{
	for (int i = 0; i < 3; i++)
		a->w[i] = (a->w[i] >> 1) | (a->w[i + 1] << 63);
	a->w[3] = (a->w[3] >> 1) | (top << 63);
}

static void half_mod(u256 *x, const u256 *n) /* x / 2 mod n, x in [0, n) */
{
	if (x->w[0] & 1) {
		uint64_t c = u256_add(x, n); /* x + n is even; 257 bits */
		u256_shr1(x, c);
	} else {
		u256_shr1(x, 0);
	}
}

static void sub_mod(u256 *x, const u256 *y, const u256 *n) /* x - y mod n */
{
	if (u256_ge(x, y)) {
		u256_sub(x, y);
	} else {
		u256 t = *n;
		u256_sub(&t, y);
		(void)u256_add(x, &t); /* x + n - y < n */
	}
}

/* HAC algorithm 14.61 for an odd modulus: false if it did not reach 1
 * (callers check the result anyway) */
static bool inverse_mod(u256 *out, const u256 *s, const u256 *n)
{
	u256 u = *s, v = *n, x1 = {{1, 0, 0, 0}}, x2 = {{0, 0, 0, 0}};
	for (int round = 0; round < 1024; round++) {
		if (u256_is(&u, 1) || u256_is(&v, 1)) {
			*out = u256_is(&u, 1) ? x1 : x2;
			return true;
		}
		if (u256_is(&u, 0) || u256_is(&v, 0))
			return false; /* not coprime */
		while (!(u.w[0] & 1)) {
			u256_shr1(&u, 0);
			half_mod(&x1, n);
		}
		while (!(v.w[0] & 1)) {
			u256_shr1(&v, 0);
			half_mod(&x2, n);
		}
		if (u256_ge(&u, &v)) {
			u256_sub(&u, &v);
			sub_mod(&x1, &x2, n);
		} else {
			u256_sub(&v, &u);
			sub_mod(&x2, &x1, n);
		}
	}
	return false;
}

bool ota_ec_fast_inverse(const uint8_t s[32], uint8_t out[32])
{
	static const uint8_t n_be[32] = {
		0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
		0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
	};
	u256 n, x, w;
	u256_from_be(&n, n_be);
	u256_from_be(&x, s);
	if (u256_is(&x, 0) || u256_ge(&x, &n) || !inverse_mod(&w, &x, &n))
		return false;
	u256_to_be(&w, out);
	return true;
}

struct ota_ec_fast {
	EC_GROUP *g;  /* P-256 as named: OpenSSL's table of multiples of G */
	EC_GROUP *gq; /* P-256 with generator Q: the table of multiples of Q */
	BIGNUM *n;    /* the group order */
	u256 nw;      /* the same, in words */
	BIGNUM *p;    /* the field prime */
	BIGNUM *pn;   /* p - n: x(R) = r + n is possible only when r < p - n */
};

void ota_ec_fast_free(ota_ec_fast *f)
{
	if (f == NULL)
		return;
	EC_GROUP_free(f->g);
	EC_GROUP_free(f->gq);
	BN_free(f->n);
	BN_free(f->p);
	BN_free(f->pn);
	free(f);
}

ota_ec_fast *ota_ec_fast_new(const EVP_PKEY *pkey)
{
	char gname[32];
	uint8_t pub[65];
	size_t gl = 0, pl = 0;
	if (pkey == NULL || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC ||
	    EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, gname, sizeof gname,
	                                   &gl) != 1 ||
	    (strcmp(gname, "prime256v1") != 0 && strcmp(gname, "P-256") != 0) ||
	    EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &pl) !=
	            1) {
		ERR_clear_error();
		return NULL;
	}
	ota_ec_fast *f = calloc(1, sizeof *f);
	BN_CTX *ctx = BN_CTX_new();
	EC_POINT *q = NULL;
	BIGNUM *one = BN_new();
	if (f == NULL || ctx == NULL || one == NULL || !BN_one(one))
		goto fail;
	f->g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	f->n = BN_new();
	f->p = BN_new();
	f->pn = BN_new();
	if (f->g == NULL || f->n == NULL || f->p == NULL || f->pn == NULL ||
	    BN_copy(f->n, EC_GROUP_get0_order(f->g)) == NULL ||
	    !EC_GROUP_get_curve(f->g, f->p, NULL, NULL, ctx) || !BN_sub(f->pn, f->p, f->n))
		goto fail;
	uint8_t nbe[32];
	if (BN_bn2binpad(f->n, nbe, 32) != 32)
		goto fail;
	u256_from_be(&f->nw, nbe);
	q = EC_POINT_new(f->g);
	/* the key was checked on the curve when loaded; oct2point checks again */
	if (q == NULL || !EC_POINT_oct2point(f->g, q, pub, pl, ctx) ||
	    EC_POINT_is_at_infinity(f->g, q) || EC_POINT_is_on_curve(f->g, q, ctx) != 1)
		goto fail;
	f->gq = EC_GROUP_dup(f->g);
	if (f->gq == NULL || !EC_GROUP_set_generator(f->gq, q, f->n, one) ||
	    !EC_GROUP_precompute_mult(f->gq, ctx))
		goto fail;
	EC_POINT_free(q);
	BN_free(one);
	BN_CTX_free(ctx);
	return f;
fail:
	ERR_clear_error();
	EC_POINT_free(q);
	BN_free(one);
	BN_CTX_free(ctx);
	ota_ec_fast_free(f);
	return NULL;
}

int ota_ec_fast_verify(const ota_ec_fast *f, const uint8_t digest[32], const uint8_t sig[64])
{
	if (f == NULL)
		return -1;
	int rc = -1;
	BN_CTX *ctx = BN_CTX_new();
	EC_POINT *a = NULL, *b = NULL;
	if (ctx == NULL)
		return -1;
	BN_CTX_start(ctx);
	BIGNUM *r = BN_CTX_get(ctx), *s = BN_CTX_get(ctx), *e = BN_CTX_get(ctx);
	BIGNUM *w = BN_CTX_get(ctx), *u1 = BN_CTX_get(ctx), *u2 = BN_CTX_get(ctx);
	BIGNUM *x = BN_CTX_get(ctx), *y = BN_CTX_get(ctx), *z = BN_CTX_get(ctx);
	BIGNUM *t = BN_CTX_get(ctx);
	if (t == NULL || BN_bin2bn(sig, 32, r) == NULL || BN_bin2bn(sig + 32, 32, s) == NULL ||
	    BN_bin2bn(digest, 32, e) == NULL)
		goto out;
	if (BN_is_zero(r) || BN_is_zero(s) || BN_cmp(r, f->n) >= 0 || BN_cmp(s, f->n) >= 0) {
		rc = 0;
		goto out;
	}
	a = EC_POINT_new(f->g);
	b = EC_POINT_new(f->g);
	if (a == NULL || b == NULL)
		goto out;
	/* n is prime and 0 < s < n: the inverse exists; proven before use */
	u256 sw, ww;
	uint8_t wbe[32];
	u256_from_be(&sw, sig + 32);
	bool fast_w = inverse_mod(&ww, &sw, &f->nw);
	if (fast_w) {
		u256_to_be(&ww, wbe);
		fast_w = BN_bin2bn(wbe, 32, w) != NULL && BN_mod_mul(t, w, s, f->n, ctx) &&
		         BN_is_one(t);
	}
	if (!fast_w && BN_mod_inverse(w, s, f->n, ctx) == NULL)
		goto out;
	if (!BN_mod_mul(u1, e, w, f->n, ctx) || !BN_mod_mul(u2, r, w, f->n, ctx) ||
	    !EC_POINT_mul(f->g, a, u1, NULL, NULL, ctx) ||
	    !EC_POINT_mul(f->gq, b, u2, NULL, NULL, ctx) || !EC_POINT_add(f->g, a, a, b, ctx))
		goto out;
	if (EC_POINT_is_at_infinity(f->g, a)) {
		rc = 0;
		goto out;
	}
	if (!EC_POINT_get_Jprojective_coordinates_GFp(f->g, a, x, y, z, ctx) ||
	    !BN_nnmod(x, x, f->p, ctx) || !BN_mod_sqr(z, z, f->p, ctx) ||
	    !BN_mod_mul(t, r, z, f->p, ctx))
		goto out;
	if (BN_cmp(t, x) == 0) {
		rc = 1;
		goto out;
	}
	rc = 0;
	if (BN_cmp(r, f->pn) < 0) { /* x(R) = r + n < p */
		if (!BN_add(t, r, f->n) || !BN_mod_mul(t, t, z, f->p, ctx)) {
			rc = -1;
			goto out;
		}
		if (BN_cmp(t, x) == 0)
			rc = 1;
	}
out:
	ERR_clear_error();
	EC_POINT_free(a);
	EC_POINT_free(b);
	BN_CTX_end(ctx);
	BN_CTX_free(ctx);
	return rc;
}
