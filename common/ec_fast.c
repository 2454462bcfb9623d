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
 * w is computed by Bernstein and Yang's divsteps on 62-bit limbs (below,
 * the variable-time form: no constant time is needed, every input of a
 * verification is public) and proven before use: w * s mod n must be 1
 * (one BN_mod_mul), or BN_mod_inverse computes it instead.
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

/*
 * The inverse by Bernstein and Yang's "safegcd" divsteps, in the
 * variable-time form of libsecp256k1's modinv64 (Wuille's write-up,
 * doc/safegcd_implementation.md there): numbers in 5 signed limbs of 62
 * bits; 62 divsteps at a time on the low 64 bits of f and g, which give a
 * 2x2 matrix (scaled by 2^62) applied to the full f, g and to d, e with
 * d*s = f and e*s = g (mod n) throughout. When g reaches 0, f is +-1 and
 * s^-1 = +-d. About 10 rounds for 256 bits, where the binary Euclid took
 * about 360 steps of 4-word arithmetic (4-6 us).
 */
typedef struct {
	int64_t v[5]; /* value = sum v[i] * 2^(62 i) */
} s62;

typedef struct {
	int64_t u, v, q, r;
} trans2x2;

__extension__ typedef __int128 i128;

#define M62 ((int64_t)(UINT64_MAX >> 2))

static void s62_from_u256(s62 *r, const u256 *a)
{
	const uint64_t *w = a->w;
	r->v[0] = (int64_t)(w[0] & (uint64_t)M62);
	r->v[1] = (int64_t)((w[0] >> 62 | w[1] << 2) & (uint64_t)M62);
	r->v[2] = (int64_t)((w[1] >> 60 | w[2] << 4) & (uint64_t)M62);
	r->v[3] = (int64_t)((w[2] >> 58 | w[3] << 6) & (uint64_t)M62);
	r->v[4] = (int64_t)(w[3] >> 56);
}

/* a in [0, 2^256), limbs normalised: v[0..3] in [0, 2^62), v[4] >= 0 */
static void u256_from_s62(u256 *r, const s62 *a)
{
	const uint64_t v0 = (uint64_t)a->v[0], v1 = (uint64_t)a->v[1], v2 = (uint64_t)a->v[2],
	               v3 = (uint64_t)a->v[3], v4 = (uint64_t)a->v[4];
	r->w[0] = v0 | v1 << 62;
	r->w[1] = v1 >> 2 | v2 << 60;
	r->w[2] = v2 >> 4 | v3 << 58;
	r->w[3] = v3 >> 6 | v4 << 56;
}

/* 62 divsteps on the low bits of f and g from eta; the matrix in t */
static int64_t divsteps_62_var(int64_t eta, uint64_t f0, uint64_t g0, trans2x2 *t)
{
	uint64_t u = 1, v = 0, q = 0, r = 1, f = f0, g = g0, m, w;
	int i = 62, limit, zeros;
	for (;;) {
		/* a sentinel bit: count zeros only up to i */
		zeros = __builtin_ctzll(g | (UINT64_MAX << i));
		g >>= zeros; /* zeros divsteps that only halve g */
		u <<= zeros;
		v <<= zeros;
		eta -= zeros;
		i -= zeros;
		if (i == 0)
			break;
		if (eta < 0) { /* f, g := g, -f */
			uint64_t tmp;
			eta = -eta;
			tmp = f;
			f = g;
			g = -tmp;
			tmp = u;
			u = q;
			q = -tmp;
			tmp = v;
			v = r;
			r = -tmp;
			/* cancel up to 6 bits of g (at most i, at most eta + 1) */
			limit = ((int)eta + 1) > i ? i : ((int)eta + 1);
			m = (UINT64_MAX >> (64 - limit)) & 63U;
			w = (f * g * (f * f - 2)) & m;
		} else {
			/* up to 4 bits: eta tends to be small here */
			limit = ((int)eta + 1) > i ? i : ((int)eta + 1);
			m = (UINT64_MAX >> (64 - limit)) & 15U;
			w = f + (((f + 1) & 4) << 1);
			w = (-w * g) & m;
		}
		g += f * w;
		q += u * w;
		r += v * w;
	}
	t->u = (int64_t)u;
	t->v = (int64_t)v;
	t->q = (int64_t)q;
	t->r = (int64_t)r;
	return eta;
}

/* [d, e] := (t [d, e] + n [md, me]) / 2^62, md and me chosen to make the
 * division exact; d and e stay in (-2n, n) */
static void update_de_62(s62 *d, s62 *e, const trans2x2 *t, const s62 *n, uint64_t ninv62)
{
	const int64_t d4 = d->v[4], e4 = e->v[4];
	const int64_t u = t->u, v = t->v, q = t->q, r = t->r;
	int64_t sd = d4 >> 63, se = e4 >> 63;
	int64_t md = (u & sd) + (v & se), me = (q & sd) + (r & se);
	i128 cd = (i128)u * d->v[0] + (i128)v * e->v[0];
	i128 ce = (i128)q * d->v[0] + (i128)r * e->v[0];
	md -= (int64_t)((ninv62 * (uint64_t)cd + (uint64_t)md) & (uint64_t)M62);
	me -= (int64_t)((ninv62 * (uint64_t)ce + (uint64_t)me) & (uint64_t)M62);
	cd += (i128)n->v[0] * md;
	ce += (i128)n->v[0] * me;
	cd >>= 62; /* the low 62 bits are zero */
	ce >>= 62;
	for (int i = 1; i < 5; i++) {
		cd += (i128)u * d->v[i] + (i128)v * e->v[i] + (i128)n->v[i] * md;
		ce += (i128)q * d->v[i] + (i128)r * e->v[i] + (i128)n->v[i] * me;
		d->v[i - 1] = (int64_t)cd & M62;
		e->v[i - 1] = (int64_t)ce & M62;
		cd >>= 62;
		ce >>= 62;
	}
	d->v[4] = (int64_t)cd;
	e->v[4] = (int64_t)ce;
}

/* [f, g] := t [f, g] / 2^62 on their len low limbs */
static void update_fg_62_var(int len, s62 *f, s62 *g, const trans2x2 *t)
{
	const int64_t u = t->u, v = t->v, q = t->q, r = t->r;
	i128 cf = (i128)u * f->v[0] + (i128)v * g->v[0];
	i128 cg = (i128)q * f->v[0] + (i128)r * g->v[0];
	cf >>= 62;
	cg >>= 62;
	for (int i = 1; i < len; i++) {
		cf += (i128)u * f->v[i] + (i128)v * g->v[i];
		cg += (i128)q * f->v[i] + (i128)r * g->v[i];
		f->v[i - 1] = (int64_t)cf & M62;
		g->v[i - 1] = (int64_t)cg & M62;
		cf >>= 62;
		cg >>= 62;
	}
	f->v[len - 1] = (int64_t)cf;
	g->v[len - 1] = (int64_t)cg;
}

/* d in (-2n, n), negated when sign < 0, into [0, n) */
static void normalize_62(s62 *d, int64_t sign, const s62 *n)
{
	int64_t *r = d->v;
	int64_t add = r[4] >> 63, neg = sign >> 63;
	for (int i = 0; i < 5; i++)
		r[i] += n->v[i] & add;
	for (int i = 0; i < 5; i++)
		r[i] = (r[i] ^ neg) - neg;
	for (int i = 0; i < 4; i++) {
		r[i + 1] += r[i] >> 62;
		r[i] &= M62;
	}
	add = r[4] >> 63;
	for (int i = 0; i < 5; i++)
		r[i] += n->v[i] & add;
	for (int i = 0; i < 4; i++) {
		r[i + 1] += r[i] >> 62;
		r[i] &= M62;
	}
}

/* s^-1 mod n for an odd n and s in [1, n): false if the divsteps did not
 * end with f = +-1 in the rounds allowed (callers check the result
 * anyway) */
static bool inverse_mod(u256 *out, const u256 *s, const u256 *n)
{
	s62 nn, d = {{0, 0, 0, 0, 0}}, e = {{1, 0, 0, 0, 0}}, f, g;
	s62_from_u256(&nn, n);
	s62_from_u256(&g, s);
	f = nn;
	/* n^-1 mod 2^64 by Newton's iteration (each step doubles the bits) */
	uint64_t inv = n->w[0];
	for (int i = 0; i < 5; i++)
		inv *= 2 - n->w[0] * inv;
	const uint64_t ninv62 = inv & (uint64_t)M62;
	int len = 5;
	int64_t eta = -1;
	/* 256-bit inputs end within 12 rounds of 62 (at most 724 divsteps) */
	for (int round = 0;; round++) {
		if (round == 16)
			return false;
		trans2x2 t;
		eta = divsteps_62_var(eta, (uint64_t)f.v[0], (uint64_t)g.v[0], &t);
		update_de_62(&d, &e, &t, &nn, ninv62);
		update_fg_62_var(len, &f, &g, &t);
		if (g.v[0] == 0) {
			int64_t any = 0;
			for (int j = 1; j < len; j++)
				any |= g.v[j];
			if (any == 0)
				break;
		}
		/* drop a top limb that holds only sign bits of both */
		int64_t fn = f.v[len - 1], gn = g.v[len - 1];
		int64_t cond = ((int64_t)len - 2) >> 63;
		cond |= fn ^ (fn >> 63);
		cond |= gn ^ (gn >> 63);
		if (cond == 0) {
			f.v[len - 2] |= (int64_t)((uint64_t)fn << 62);
			g.v[len - 2] |= (int64_t)((uint64_t)gn << 62);
			len--;
		}
	}
	/* gcd(s, n) = |f|, which must be 1: f is 1 (limbs 1, 0, ..., 0) or -1
	 * (limbs 2^62 - 1, ..., 2^62 - 1 below a top limb of -1) */
	bool one = f.v[0] == 1, minus = len == 1 ? f.v[0] == -1 : f.v[len - 1] == -1;
	for (int j = 1; j < len; j++)
		one = one && f.v[j] == 0;
	for (int j = 0; j < len - 1; j++)
		minus = minus && f.v[j] == M62;
	if (!one && !minus)
		return false;
	normalize_62(&d, minus ? -1 : 1, &nn);
	u256_from_s62(out, &d);
	return true;
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
