/*
 * Keys and raw signatures over OpenSSL 3 EVP (see include/ota/key.h).
 *
 * A loaded key keeps its EVP_PKEY, its kind, its curve's coordinate size,
 * its kid and the message digests fetched once, so that verification does
 * no parsing and no provider look-up per call.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "ec_fast.h"
#include "md.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/limits.h"

typedef enum { KIND_EC, KIND_ED25519, KIND_ED448, KIND_RSA } key_kind;

struct ota_key {
	EVP_PKEY *pkey;
	key_kind kind;
	int nid;        /* curve NID for EC keys */
	size_t field;   /* bytes per coordinate / scalar (EC), modulus bytes (RSA) */
	unsigned bits;
	bool priv;
	EVP_MD *sha256, *sha384, *sha512; /* fetched once */
	EVP_PKEY_CTX *vctx; /* EC: initialised for verification once, duplicated per call */
	EVP_MD_CTX *edctx;  /* EdDSA: initialised for verification once, copied per call */
	uint8_t kid[32];
	uint8_t *spki;      /* SubjectPublicKeyInfo DER, as i2d_PUBKEY writes it (once) */
	size_t spki_len;
	/* P-256 keys: the table of multiples of the public point, built by
	 * the thread whose verification is the FAST_AFTER-th with this key
	 * (ec_fast.c). Apart, since verifiers hold the key as const. */
	struct fast_state *fast;
};

struct fast_state {
	_Atomic(ota_ec_fast *) table;
	atomic_uint verifies;
};

/* A table costs about 20 ms of one core and saves about 37 us per ES256
 * verification: it pays for itself after about 540 verifications with the
 * key. Keys that verify fewer (a CLI call, an archive of a few hundred
 * records) never build one; an endpoint's keys and a long archive's runner
 * key do, at their 512th verification. */
#define FAST_AFTER 512u

/* ---- algorithms ---- */

const char *ota_alg_name(ota_alg a)
{
	switch (a) {
	case OTA_ALG_ES256: return "ES256";
	case OTA_ALG_ES384: return "ES384";
	case OTA_ALG_ES512: return "ES512";
	case OTA_ALG_EDDSA: return "EdDSA";
	case OTA_ALG_PS256: return "PS256";
	case OTA_ALG_PS384: return "PS384";
	case OTA_ALG_PS512: return "PS512";
	case OTA_ALG_NONE:
	default: return "none";
	}
}

ota_err ota_alg_from_name(const char *name, ota_alg *out)
{
	static const ota_alg all[] = {OTA_ALG_ES256, OTA_ALG_ES384, OTA_ALG_ES512, OTA_ALG_EDDSA,
	                              OTA_ALG_PS256, OTA_ALG_PS384, OTA_ALG_PS512};
	*out = OTA_ALG_NONE;
	if (name == NULL)
		return OTA_ERR_ALG_UNKNOWN;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (strcmp(name, ota_alg_name(all[i])) == 0) {
			*out = all[i];
			return OTA_OK;
		}
	}
	return OTA_ERR_ALG_UNKNOWN;
}

bool ota_alg_is_known(int64_t v)
{
	return v == OTA_ALG_ES256 || v == OTA_ALG_ES384 || v == OTA_ALG_ES512 ||
	       v == OTA_ALG_EDDSA || v == OTA_ALG_PS256 || v == OTA_ALG_PS384 ||
	       v == OTA_ALG_PS512;
}

size_t ota_alg_sig_size(ota_alg a)
{
	switch (a) {
	case OTA_ALG_ES256: return 64;
	case OTA_ALG_ES384: return 96;
	case OTA_ALG_ES512: return 132;
	case OTA_ALG_EDDSA: return 64;
	default: return 0;
	}
}

/* ---- construction ---- */

void ota_key_free(ota_key *k)
{
	if (k == NULL)
		return;
	if (k->fast != NULL) {
		ota_ec_fast_free(atomic_load(&k->fast->table));
		free(k->fast);
	}
	EVP_PKEY_CTX_free(k->vctx);
	EVP_MD_CTX_free(k->edctx);
	EVP_PKEY_free(k->pkey);
	EVP_MD_free(k->sha256);
	EVP_MD_free(k->sha384);
	EVP_MD_free(k->sha512);
	free(k->spki);
	free(k);
}

static ota_err spki_der(EVP_PKEY *p, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	int n = i2d_PUBKEY(p, NULL);
	if (n <= 0)
		return OTA_ERR_CRYPTO;
	uint8_t *buf = malloc((size_t)n);
	if (buf == NULL)
		return OTA_ERR_NOMEM;
	uint8_t *w = buf;
	if (i2d_PUBKEY(p, &w) != n) {
		free(buf);
		return OTA_ERR_CRYPTO;
	}
	*out = buf;
	*out_len = (size_t)n;
	return OTA_OK;
}

/*
 * The SubjectPublicKeyInfo of a named-curve EC key with an uncompressed
 * point, byte for byte as i2d_PUBKEY writes it, up to the point's first byte
 * (0x04). A key has one such encoding; compressed (0x02/0x03) and hybrid
 * (0x06/0x07) points, and explicit curve parameters, are other encodings of
 * the same key, which would hash to other kids.
 */
static const uint8_t SPKI_P256[26] = {0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48,
                                      0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
                                      0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00};
static const uint8_t SPKI_P384[23] = {0x30, 0x76, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86,
                                      0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b,
                                      0x81, 0x04, 0x00, 0x22, 0x03, 0x62, 0x00};
static const uint8_t SPKI_P521[25] = {0x30, 0x81, 0x9b, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86,
                                      0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x05, 0x2b, 0x81,
                                      0x04, 0x00, 0x23, 0x03, 0x81, 0x86, 0x00};

/* true when spki is the canonical SPKI of a key on curve nid (field bytes). */
static bool ec_spki_canonical(int nid, size_t field, const uint8_t *spki, size_t len)
{
	const uint8_t *pre = nid == NID_X9_62_prime256v1 ? SPKI_P256
	                     : nid == NID_secp384r1      ? SPKI_P384
	                     : nid == NID_secp521r1      ? SPKI_P521
	                                                 : NULL;
	size_t pl = nid == NID_X9_62_prime256v1 ? sizeof SPKI_P256
	            : nid == NID_secp384r1      ? sizeof SPKI_P384
	                                        : sizeof SPKI_P521;
	return pre != NULL && len == pl + 1 + 2 * field && memcmp(spki, pre, pl) == 0 &&
	       spki[pl] == 0x04;
}

/*
 * EdDSA public keys anyone can sign for. A small-order point A (the 8 of
 * edwards25519, the 4 of edwards448) makes [8][S]B = [8]R + [8][k]A hold for
 * R = [S]B whatever the message: libsodium's has_small_order blocklist for
 * Ed25519 (compared with the x sign bit cleared, as libsodium does, so that
 * each entry stands for both signs), and the points with y = 0, 1, -1 for
 * Ed448. Little-endian y, as encoded.
 */
static const uint8_t ED25519_SMALL_ORDER[7][32] = {
	/* 0 (order 4) */
	{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	/* 1 (order 1) */
	{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	/* 2707385501144840649318225287225658788936804267575313519463743609750303402022
	   (order 8) */
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
	 0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
	 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	/* 55188659117513257062467267217118295137698188065244968500265048394206261417927
	   (order 8) */
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
	 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
	 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	/* p-1 (order 2) */
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	/* p (=0, order 4) */
	{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	/* p+1 (=1, order 1) */
	{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
};

/* a < b, both n-byte little-endian */
static bool le_less(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = n; i-- > 0;)
		if (a[i] != b[i])
			return a[i] < b[i];
	return false;
}

/*
 * Checks an EdDSA public key (32 bytes Ed25519, 57 bytes Ed448): not a
 * small-order point (key_point_invalid), y below the field prime and, for
 * Ed448, the last byte's seven low bits clear (key_noncanonical: y and
 * y + p would be one point under two kids).
 */
static ota_err eddsa_pub_check(const uint8_t *pub, size_t n, ota_error *err)
{
	uint8_t y[57], p[57];
	if (n != 32 && n != 57)
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "EdDSA key of %zu bytes", n);
	memcpy(y, pub, n);
	y[n - 1] &= 0x7f; /* the x sign bit */
	if (n == 32) {
		for (size_t i = 0; i < sizeof ED25519_SMALL_ORDER / sizeof ED25519_SMALL_ORDER[0]; i++)
			if (memcmp(y, ED25519_SMALL_ORDER[i], 32) == 0)
				return ota_error_set(err, OTA_ERR_KEY_POINT, "key",
				                     "Ed25519 public key is a small-order point");
		/* p = 2^255 - 19 */
		memset(p, 0xff, 32);
		p[0] = 0xed;
		p[31] = 0x7f;
	} else {
		if (y[56] != 0)
			return ota_error_set(err, OTA_ERR_KEY_NONCANONICAL, "key",
			                     "Ed448 public key has reserved bits set");
		/* p = 2^448 - 2^224 - 1, y is the first 56 bytes */
		memset(p, 0xff, 56);
		p[28] = 0xfe;
		p[56] = 0;
		uint8_t pm1[56];
		static const uint8_t zeros[55];
		memcpy(pm1, p, 56);
		pm1[0] = 0xfe;
		bool small = memcmp(y, pm1, 56) == 0 || /* -1 (order 2) */
		             (y[0] <= 1 && memcmp(y + 1, zeros, 55) == 0); /* 0 (order 4), 1 */
		if (small)
			return ota_error_set(err, OTA_ERR_KEY_POINT, "key",
			                     "Ed448 public key is a small-order point");
	}
	if (!le_less(y, p, n))
		return ota_error_set(err, OTA_ERR_KEY_NONCANONICAL, "key",
		                     "EdDSA public key y is not below the field prime");
	return OTA_OK;
}

/*
 * RSA public exponent: odd and at least 65537 (FIPS 186-5 A.1.1). With
 * e = 1 every message representative is its own signature; small exponents
 * are the ones broken signature checks have been forged against.
 */
static bool rsa_e_ok(const BIGNUM *e)
{
	return e != NULL && BN_is_odd(e) && BN_num_bits(e) >= 17; /* 65537 = 2^16 + 1 */
}

/*
 * Takes ownership of p, even on failure. spki (may be NULL) is p's
 * SubjectPublicKeyInfo DER exactly as i2d_PUBKEY writes it, when the caller
 * already holds it (the fixed-form fast path of ota_key_load_pem).
 */
static ota_err key_wrap_der(EVP_PKEY *p, bool priv, const uint8_t *spki, size_t spki_len,
                            ota_key **out, ota_error *err)
{
	*out = NULL;
	ota_key *k = calloc(1, sizeof *k);
	if (k == NULL) {
		EVP_PKEY_free(p);
		return ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
	}
	k->pkey = p;
	k->priv = priv;
	ota_err rc;
	int id = EVP_PKEY_get_base_id(p);
	if (id == EVP_PKEY_EC) {
		char gname[64];
		size_t glen = 0;
		if (!EVP_PKEY_get_utf8_string_param(p, OSSL_PKEY_PARAM_GROUP_NAME, gname,
		                                    sizeof gname, &glen)) {
			rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "key",
			                   "EC key without a named curve");
			goto fail;
		}
		int nid = OBJ_txt2nid(gname);
		if (nid == NID_X9_62_prime256v1) {
			k->field = 32;
		} else if (nid == NID_secp384r1) {
			k->field = 48;
		} else if (nid == NID_secp521r1) {
			k->field = 66;
		} else {
			rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "key",
			                   "curve %s is not P-256, P-384 or P-521", gname);
			goto fail;
		}
		k->nid = nid;
		k->kind = KIND_EC;
		k->bits = (unsigned)EVP_PKEY_get_bits(p);
		/* a private key's public half is written in the canonical form
		 * whatever form its file held (a public key is checked below) */
		if (priv &&
		    (EVP_PKEY_set_utf8_string_param(p, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
		                                    "uncompressed") != 1 ||
		     EVP_PKEY_set_utf8_string_param(p, OSSL_PKEY_PARAM_EC_ENCODING, "named_curve") !=
		             1)) {
			rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot set the point form");
			goto fail;
		}
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, p, NULL);
		/* P-256/384/521 have cofactor 1: a point on the curve (with
		 * coordinates in range, not infinity) is in the prime-order group,
		 * so the quick check is the whole check (the full one also
		 * multiplies by the order, an extra scalar multiplication). */
		int ok = c != NULL && EVP_PKEY_public_check_quick(c) == 1;
		EVP_PKEY_CTX_free(c);
		if (!ok) {
			ERR_clear_error();
			rc = ota_error_set(err, OTA_ERR_KEY_POINT, "key",
			                   "public point is not on the curve");
			goto fail;
		}
		k->vctx = EVP_PKEY_CTX_new_from_pkey(NULL, p, NULL);
		if (k->vctx == NULL || EVP_PKEY_verify_init(k->vctx) != 1) {
			rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot prepare verification");
			goto fail;
		}
		if (nid == NID_X9_62_prime256v1 && (k->fast = calloc(1, sizeof *k->fast)) == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "key", "out of memory");
			goto fail;
		}
	} else if (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) {
		k->kind = id == EVP_PKEY_ED25519 ? KIND_ED25519 : KIND_ED448;
		k->bits = id == EVP_PKEY_ED25519 ? 256 : 456;
		k->field = id == EVP_PKEY_ED25519 ? 32 : 57;
		uint8_t pub[57];
		size_t pl = sizeof pub;
		if (EVP_PKEY_get_raw_public_key(p, pub, &pl) != 1 || pl != k->field) {
			rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot read the public key");
			goto fail;
		}
		if ((rc = eddsa_pub_check(pub, pl, err)) != OTA_OK)
			goto fail;
		k->edctx = EVP_MD_CTX_new();
		if (k->edctx == NULL || EVP_DigestVerifyInit(k->edctx, NULL, NULL, NULL, p) != 1) {
			rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot prepare verification");
			goto fail;
		}
	} else if (id == EVP_PKEY_RSA) {
		k->kind = KIND_RSA;
		int bits = EVP_PKEY_get_bits(p);
		if (bits < (int)OTA_MIN_RSA_BITS) {
			rc = ota_error_set(err, OTA_ERR_KEY_WEAK, "key",
			                   "RSA key has %d bits, at least %u required", bits,
			                   OTA_MIN_RSA_BITS);
			goto fail;
		}
		if (bits > (int)OTA_MAX_RSA_BITS) {
			rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "key",
			                   "RSA key has %d bits, at most %u supported", bits,
			                   OTA_MAX_RSA_BITS);
			goto fail;
		}
		BIGNUM *e = NULL;
		if (EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
			rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot read the RSA exponent");
			goto fail;
		}
		bool e_ok = rsa_e_ok(e);
		BN_free(e);
		if (!e_ok) {
			rc = ota_error_set(err, OTA_ERR_KEY_WEAK, "key",
			                   "RSA public exponent must be odd and at least 65537");
			goto fail;
		}
		k->bits = (unsigned)bits;
		k->field = ((size_t)bits + 7) / 8;
	} else {
		rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "key",
		                   "key type %s is not supported", OBJ_nid2sn(id));
		goto fail;
	}
	/* the process-wide digests; each key holds its own reference */
	EVP_MD *md[3] = {(EVP_MD *)(uintptr_t)ota_md_sha2(256), (EVP_MD *)(uintptr_t)ota_md_sha2(384),
	                 (EVP_MD *)(uintptr_t)ota_md_sha2(512)};
	for (int i = 0; i < 3; i++)
		if (md[i] == NULL || EVP_MD_up_ref(md[i]) != 1)
			md[i] = NULL;
	k->sha256 = md[0];
	k->sha384 = md[1];
	k->sha512 = md[2];
	if (k->sha256 == NULL || k->sha384 == NULL || k->sha512 == NULL) {
		rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot fetch SHA-2");
		goto fail;
	}
	if (spki != NULL) {
		k->spki = malloc(spki_len);
		if (k->spki == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
			goto fail;
		}
		memcpy(k->spki, spki, spki_len);
		k->spki_len = spki_len;
	} else {
		rc = spki_der(p, &k->spki, &k->spki_len);
		if (rc != OTA_OK) {
			rc = ota_error_set(err, rc, "key", "cannot encode SubjectPublicKeyInfo");
			goto fail;
		}
	}
	if (k->kind == KIND_EC && !ec_spki_canonical(k->nid, k->field, k->spki, k->spki_len)) {
		rc = ota_error_set(err, OTA_ERR_KEY_NONCANONICAL, "key",
		                   "EC public key must be a named curve with an uncompressed point "
		                   "(first byte 0x04)");
		goto fail;
	}
	rc = ota_sha256(ota_bytes_make(k->spki, k->spki_len), k->kid);
	if (rc != OTA_OK) {
		rc = ota_error_set(err, rc, "key", "cannot hash SubjectPublicKeyInfo");
		goto fail;
	}
	*out = k;
	return OTA_OK;
fail:
	ERR_clear_error();
	ota_key_free(k);
	return rc;
}

static ota_err key_wrap(EVP_PKEY *p, bool priv, ota_key **out, ota_error *err)
{
	return key_wrap_der(p, priv, NULL, 0, out, err);
}

/*
 * The two SubjectPublicKeyInfo forms trust roots are made of, byte for byte
 * what i2d_PUBKEY writes: P-256 with an uncompressed point and Ed25519. For
 * these the key is built from the raw point (no OpenSSL decoder) and the kid
 * hashes the input DER, which is then exactly the canonical encoding.
 * Anything else takes the general path.
 */
static const uint8_t SPKI_ED25519[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                         0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

/*
 * The P-256 domain parameters, built once per process: EVP_PKEY_fromdata
 * builds the curve's EC_GROUP from scratch for every key (Montgomery
 * contexts, a modular inverse), which costs several times the rest of a
 * key load; copying a built group does not. NULL if they cannot be built
 * (keys are then built from scratch). They live until the process exits.
 */
static EVP_PKEY *g_p256;
static pthread_once_t g_p256_once = PTHREAD_ONCE_INIT;

static void p256_build(void)
{
	OSSL_PARAM params[2];
	char group[] = "P-256";
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_end();
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (c == NULL || EVP_PKEY_fromdata_init(c) != 1 ||
	    EVP_PKEY_fromdata(c, &g_p256, EVP_PKEY_KEY_PARAMETERS, params) != 1)
		g_p256 = NULL;
	EVP_PKEY_CTX_free(c);
	ERR_clear_error();
}

static const EVP_PKEY *p256_params(void)
{
	return pthread_once(&g_p256_once, p256_build) == 0 ? g_p256 : NULL;
}

static EVP_PKEY *spki_fast(const uint8_t *der, size_t n)
{
	if (n == sizeof SPKI_ED25519 + 32 && memcmp(der, SPKI_ED25519, sizeof SPKI_ED25519) == 0)
		return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, der + sizeof SPKI_ED25519,
		                                   32);
	if (n != sizeof SPKI_P256 + 65 || memcmp(der, SPKI_P256, sizeof SPKI_P256) != 0 ||
	    der[sizeof SPKI_P256] != 0x04)
		return NULL;
	/* the P-256 parameters copied, and the point decoded onto them (checked
	 * on the curve as EVP_PKEY_fromdata checks it) */
	const EVP_PKEY *tmpl = p256_params();
	if (tmpl != NULL) {
		EVP_PKEY *pk = EVP_PKEY_new();
		if (pk == NULL || EVP_PKEY_copy_parameters(pk, tmpl) != 1 ||
		    EVP_PKEY_set1_encoded_public_key(pk, der + sizeof SPKI_P256, 65) != 1) {
			EVP_PKEY_free(pk);
			pk = NULL;
		}
		ERR_clear_error();
		return pk;
	}
	OSSL_PARAM params[3];
	char group[] = "P-256";
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(
		OSSL_PKEY_PARAM_PUB_KEY, (void *)(uintptr_t)(der + sizeof SPKI_P256), 65);
	params[2] = OSSL_PARAM_construct_end();
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *pk = NULL;
	if (c == NULL || EVP_PKEY_fromdata_init(c) != 1 ||
	    EVP_PKEY_fromdata(c, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	EVP_PKEY_CTX_free(c);
	ERR_clear_error();
	return pk;
}

/* Never prompts: encrypted private keys are refused. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* Works out why an SPKI did not decode: an EC point off its curve, or else. */
static ota_err diagnose_spki(const uint8_t *der, long der_len, ota_error *err)
{
	const unsigned char *p = der;
	X509_PUBKEY *xp = d2i_X509_PUBKEY(NULL, &p, der_len);
	ota_err rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
	                           "SubjectPublicKeyInfo does not decode");
	if (xp == NULL)
		return rc;
	ASN1_OBJECT *oid = NULL;
	const unsigned char *pk = NULL;
	int pk_len = 0;
	X509_ALGOR *alg = NULL;
	if (X509_PUBKEY_get0_param(&oid, &pk, &pk_len, &alg, xp) == 1 &&
	    OBJ_obj2nid(oid) == NID_X9_62_id_ecPublicKey && alg != NULL) {
		int ptype = 0;
		const void *pval = NULL;
		X509_ALGOR_get0(NULL, &ptype, &pval, alg);
		if (ptype == V_ASN1_OBJECT) {
			int nid = OBJ_obj2nid((const ASN1_OBJECT *)pval);
			EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
			if (g != NULL) {
				EC_POINT *pt = EC_POINT_new(g);
				if (pt != NULL &&
				    EC_POINT_oct2point(g, pt, pk, (size_t)pk_len, NULL) != 1) {
					if (err != NULL)
						err->code = OTA_OK;
					rc = ota_error_set(err, OTA_ERR_KEY_POINT, "key",
					                   "public point is not on the curve");
				}
				EC_POINT_free(pt);
				EC_GROUP_free(g);
			} else {
				if (err != NULL)
					err->code = OTA_OK;
				rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "key",
				                   "EC curve is not supported");
			}
		}
	}
	X509_PUBKEY_free(xp);
	ERR_clear_error();
	return rc;
}

ota_err ota_key_load_pem(ota_bytes pem, ota_key **out, ota_error *err)
{
	*out = NULL;
	if (pem.len > OTA_MAX_KEY_FILE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "key", "key text exceeds %u bytes",
		                     OTA_MAX_KEY_FILE_BYTES);
	if (pem.len == 0 || pem.len > INT32_MAX)
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "empty key");
	BIO *bio = BIO_new_mem_buf(pem.ptr, (int)pem.len);
	if (bio == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
	char *name = NULL, *header = NULL;
	unsigned char *data = NULL;
	long data_len = 0;
	ota_err rc;
	for (;;) {
		if (PEM_read_bio(bio, &name, &header, &data, &data_len) != 1) {
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "no PEM key block");
			goto out;
		}
		/* `openssl ecparam -genkey` writes the curve first: skip it */
		if (strcmp(name, "EC PARAMETERS") != 0)
			break;
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		name = header = NULL;
		data = NULL;
	}
	if (strcmp(name, "PUBLIC KEY") == 0) {
		EVP_PKEY *fast = data_len > 0 ? spki_fast(data, (size_t)data_len) : NULL;
		if (fast != NULL) {
			rc = key_wrap_der(fast, false, data, (size_t)data_len, out, err);
			goto out;
		}
		const unsigned char *p = data;
		EVP_PKEY *pk = d2i_PUBKEY(NULL, &p, data_len);
		if (pk == NULL) {
			rc = diagnose_spki(data, data_len, err);
			goto out;
		}
		if (p != data + data_len) {
			EVP_PKEY_free(pk);
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
			                   "trailing bytes after SubjectPublicKeyInfo");
			goto out;
		}
		rc = key_wrap(pk, false, out, err);
	} else if (strcmp(name, "PRIVATE KEY") == 0 || strcmp(name, "EC PRIVATE KEY") == 0) {
		BIO *b2 = BIO_new_mem_buf(pem.ptr, (int)pem.len);
		if (b2 == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
			goto out;
		}
		EVP_PKEY *pk = PEM_read_bio_PrivateKey(b2, NULL, no_passphrase, NULL);
		BIO_free(b2);
		if (pk == NULL) {
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
			                   "%s does not decode", name);
			goto out;
		}
		/* SEC1 and PKCS#8 carry the public key beside the private one and
		 * nothing ties the two: a key whose public half (and so its kid)
		 * is another key's would sign what its kid never verifies (the
		 * JWK loader checks d against x and y the same way) */
		EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
		int pair = pc != NULL ? EVP_PKEY_pairwise_check(pc) : 0;
		EVP_PKEY_CTX_free(pc);
		if (pair != 1) {
			EVP_PKEY_free(pk);
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
			                   "%s: the public key it carries is not its private key's",
			                   name);
			goto out;
		}
		rc = key_wrap(pk, true, out, err);
	} else if (strcmp(name, "ENCRYPTED PRIVATE KEY") == 0) {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
		                   "encrypted private keys are not supported");
	} else {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key",
		                   "PEM block \"%s\" is not PUBLIC KEY, PRIVATE KEY or EC PRIVATE KEY",
		                   name);
	}
out:
	ERR_clear_error();
	BIO_free(bio);
	OPENSSL_free(name);
	OPENSSL_free(header);
	if (data != NULL)
		OPENSSL_clear_free(data, (size_t)data_len);
	return rc;
}

/* ---- JWK ---- */

/* Decodes base64url member m of o into *out (new) and checks its length
 * (want 0 = any length up to max). */
static ota_err jwk_b64(const json_t *o, const char *m, bool required, size_t want, size_t max,
                       uint8_t **out, size_t *out_len, ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	const json_t *v = json_object_get(o, m);
	if (v == NULL) {
		if (required)
			return ota_error_set(err, OTA_ERR_KEY_FORMAT, m, "JWK member %s missing", m);
		return OTA_OK;
	}
	if (!json_is_string(v))
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, m, "JWK member %s is not a string", m);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return ota_error_set(err, OTA_ERR_KEY_FORMAT, m,
			                     "JWK member %s is not unpadded base64url", m);
	}
	uint8_t *buf = NULL;
	size_t len = 0;
	if (ota_base64_decode(s, n, &buf, &len) != OTA_OK)
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, m, "JWK member %s is not base64url", m);
	if ((want != 0 && len != want) || len > max || len == 0) {
		ota_wipe(buf, len);
		free(buf);
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, m,
		                     "JWK member %s has %zu bytes, want %zu", m, len, want);
	}
	*out = buf;
	*out_len = len;
	return OTA_OK;
}

static void free_secret(uint8_t *p, size_t n)
{
	if (p != NULL) {
		ota_wipe(p, n);
		free(p);
	}
}

static ota_err jwk_ec(const json_t *o, const char *crv, ota_key **out, ota_error *err)
{
	size_t field;
	const char *group;
	int nid;
	if (strcmp(crv, "P-256") == 0) {
		field = 32, group = "P-256", nid = NID_X9_62_prime256v1;
	} else if (strcmp(crv, "P-384") == 0) {
		field = 48, group = "P-384", nid = NID_secp384r1;
	} else if (strcmp(crv, "P-521") == 0) {
		field = 66, group = "P-521", nid = NID_secp521r1;
	} else {
		return ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "crv",
		                     "EC curve %s is not supported", crv);
	}
	uint8_t *x = NULL, *y = NULL, *d = NULL;
	size_t xl = 0, yl = 0, dl = 0;
	uint8_t pt[1 + 2 * 66];
	EVP_PKEY_CTX *ctx = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	BIGNUM *bn = NULL;
	EVP_PKEY *pk = NULL;
	EC_GROUP *g = NULL;
	EC_POINT *p = NULL;
	ota_err rc = jwk_b64(o, "x", true, field, field, &x, &xl, err);
	if (rc == OTA_OK)
		rc = jwk_b64(o, "y", true, field, field, &y, &yl, err);
	if (rc == OTA_OK)
		rc = jwk_b64(o, "d", false, field, field, &d, &dl, err);
	if (rc != OTA_OK)
		goto out;
	pt[0] = 0x04;
	memcpy(pt + 1, x, field);
	memcpy(pt + 1 + field, y, field);
	g = EC_GROUP_new_by_curve_name(nid);
	p = g != NULL ? EC_POINT_new(g) : NULL;
	if (p == NULL) {
		rc = ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot make EC group");
		goto out;
	}
	if (EC_POINT_oct2point(g, p, pt, 1 + 2 * field, NULL) != 1) {
		rc = ota_error_set(err, OTA_ERR_KEY_POINT, "key", "public point is not on the curve");
		goto out;
	}
	bld = OSSL_PARAM_BLD_new();
	if (bld == NULL || !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * field)) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
		goto out;
	}
	if (d != NULL) {
		bn = BN_secure_new();
		if (bn == NULL || BN_bin2bn(d, (int)dl, bn) == NULL ||
		    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn)) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
			goto out;
		}
	}
	params = OSSL_PARAM_BLD_to_param(bld);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
	                      params) != 1) {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "EC JWK does not make a key");
		goto out;
	}
	if (d != NULL) {
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
		int ok = c != NULL && EVP_PKEY_pairwise_check(c) == 1;
		EVP_PKEY_CTX_free(c);
		if (!ok) {
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "d",
			                   "private scalar does not match x and y");
			goto out;
		}
	}
	rc = key_wrap(pk, d != NULL, out, err);
	pk = NULL;
out:
	ERR_clear_error();
	EVP_PKEY_free(pk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_clear_free(bn);
	EC_POINT_free(p);
	EC_GROUP_free(g);
	free(x);
	free(y);
	free_secret(d, dl);
	return rc;
}

static ota_err jwk_okp(const json_t *o, const char *crv, ota_key **out, ota_error *err)
{
	int type;
	size_t len;
	if (strcmp(crv, "Ed25519") == 0) {
		type = EVP_PKEY_ED25519, len = 32;
	} else if (strcmp(crv, "Ed448") == 0) {
		type = EVP_PKEY_ED448, len = 57;
	} else {
		return ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "crv",
		                     "OKP curve %s is not supported", crv);
	}
	uint8_t *x = NULL, *d = NULL;
	size_t xl = 0, dl = 0;
	EVP_PKEY *pk = NULL;
	ota_err rc = jwk_b64(o, "x", true, len, len, &x, &xl, err);
	if (rc == OTA_OK)
		rc = jwk_b64(o, "d", false, len, len, &d, &dl, err);
	if (rc != OTA_OK)
		goto out;
	if (d != NULL) {
		pk = EVP_PKEY_new_raw_private_key(type, NULL, d, dl);
		uint8_t pub[57];
		size_t pl = sizeof pub;
		if (pk == NULL || EVP_PKEY_get_raw_public_key(pk, pub, &pl) != 1 || pl != xl ||
		    memcmp(pub, x, xl) != 0) {
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "d", "private key does not match x");
			goto out;
		}
	} else {
		pk = EVP_PKEY_new_raw_public_key(type, NULL, x, xl);
		if (pk == NULL) {
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "x", "OKP public key does not decode");
			goto out;
		}
	}
	rc = key_wrap(pk, d != NULL, out, err);
	pk = NULL;
out:
	ERR_clear_error();
	EVP_PKEY_free(pk);
	free(x);
	free_secret(d, dl);
	return rc;
}

static ota_err jwk_rsa(const json_t *o, ota_key **out, ota_error *err)
{
	uint8_t *n = NULL, *e = NULL;
	size_t nl = 0, el = 0;
	BIGNUM *bn_n = NULL, *bn_e = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pk = NULL;
	ota_err rc = jwk_b64(o, "n", true, 0, OTA_MAX_RSA_BITS / 8 + 1, &n, &nl, err);
	if (rc == OTA_OK)
		rc = jwk_b64(o, "e", true, 0, 8, &e, &el, err);
	if (rc != OTA_OK)
		goto out;
	bn_n = BN_bin2bn(n, (int)nl, NULL);
	bn_e = BN_bin2bn(e, (int)el, NULL);
	bld = OSSL_PARAM_BLD_new();
	if (bn_n == NULL || bn_e == NULL || bld == NULL ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
		goto out;
	}
	if (BN_num_bits(bn_n) < (int)OTA_MIN_RSA_BITS) {
		rc = ota_error_set(err, OTA_ERR_KEY_WEAK, "n", "RSA key has %d bits, at least %u required",
		                   BN_num_bits(bn_n), OTA_MIN_RSA_BITS);
		goto out;
	}
	if (!rsa_e_ok(bn_e)) {
		rc = ota_error_set(err, OTA_ERR_KEY_WEAK, "e",
		                   "RSA public exponent must be odd and at least 65537");
		goto out;
	}
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1) {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "RSA JWK does not make a key");
		goto out;
	}
	rc = key_wrap(pk, false, out, err);
	pk = NULL;
out:
	ERR_clear_error();
	EVP_PKEY_free(pk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn_n);
	BN_free(bn_e);
	free(n);
	free(e);
	return rc;
}

ota_err ota_key_load_jwk(ota_bytes text, ota_key **out, ota_error *err)
{
	*out = NULL;
	if (text.len > OTA_MAX_KEY_FILE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "key", "JWK exceeds %u bytes",
		                     OTA_MAX_KEY_FILE_BYTES);
	json_t *o = NULL;
	ota_error jerr;
	ota_error_clear(&jerr);
	if (ota_json_parse(text, &o, &jerr) != OTA_OK)
		return ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "JWK is not JSON: %s",
		                     jerr.what);
	ota_err rc;
	if (!json_is_object(o)) {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "key", "JWK is not a JSON object");
		goto out;
	}
	const char *kty = json_string_value(json_object_get(o, "kty"));
	const char *crv = json_string_value(json_object_get(o, "crv"));
	if (kty == NULL) {
		rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, "kty", "JWK has no kty");
	} else if (strcmp(kty, "EC") == 0) {
		rc = crv == NULL ? ota_error_set(err, OTA_ERR_KEY_FORMAT, "crv", "EC JWK has no crv")
		                 : jwk_ec(o, crv, out, err);
	} else if (strcmp(kty, "OKP") == 0) {
		rc = crv == NULL ? ota_error_set(err, OTA_ERR_KEY_FORMAT, "crv", "OKP JWK has no crv")
		                 : jwk_okp(o, crv, out, err);
	} else if (strcmp(kty, "RSA") == 0) {
		rc = jwk_rsa(o, out, err);
	} else {
		rc = ota_error_set(err, OTA_ERR_KEY_UNSUPPORTED, "kty", "JWK kty %s is not supported",
		                   kty);
	}
out:
	json_decref(o);
	return rc;
}

ota_err ota_key_load_file(const char *path, ota_key **out, ota_error *err)
{
	*out = NULL;
	/* O_NONBLOCK: a FIFO there is refused below, never waited on (the
	 * open of a FIFO without a writer blocked forever) */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open key: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return ota_error_set(err, OTA_ERR_IO, path, "cannot stat key: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		bool dir = S_ISDIR(st.st_mode);
		close(fd);
		if (dir)
			return ota_error_set(err, OTA_ERR_IO, path, "key is a directory");
		return ota_error_set(err, OTA_ERR_NOT_REGULAR, path,
		                     "key is not a regular file (a FIFO, socket or device); not read");
	}
	if ((uint64_t)st.st_size > OTA_MAX_KEY_FILE_BYTES) {
		close(fd);
		return ota_error_set(err, OTA_ERR_TOO_LARGE, path, "key file exceeds %u bytes",
		                     OTA_MAX_KEY_FILE_BYTES);
	}
	uint8_t *buf = malloc(OTA_MAX_KEY_FILE_BYTES + 1);
	if (buf == NULL) {
		close(fd);
		return ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
	}
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, OTA_MAX_KEY_FILE_BYTES + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free_secret(buf, len);
			return ota_error_set(err, OTA_ERR_IO, path, "cannot read key: %s", strerror(e));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > OTA_MAX_KEY_FILE_BYTES) {
			close(fd);
			free_secret(buf, len);
			return ota_error_set(err, OTA_ERR_TOO_LARGE, path, "key file exceeds %u bytes",
			                     OTA_MAX_KEY_FILE_BYTES);
		}
	}
	close(fd);
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	ota_err rc;
	if (i < len && buf[i] == '{')
		rc = ota_key_load_jwk(ota_bytes_make(buf, len), out, err);
	else
		rc = ota_key_load_pem(ota_bytes_make(buf, len), out, err);
	free_secret(buf, OTA_MAX_KEY_FILE_BYTES + 1);
	/* A private key is used only from a file nobody else can read or
	 * replace (OpenSSH's rule for identity files): mode without any group
	 * or other bit, owned by the caller or root. The stat is of the file
	 * that was read (fstat of the open descriptor). A public key is not
	 * secret and is taken from any file. */
	if (rc == OTA_OK && ota_key_has_private(*out)) {
		if ((st.st_mode & 077) != 0)
			rc = ota_error_set(err, OTA_ERR_KEY_PERMISSIONS, path,
			                   "private key file has mode %04o: group or others can read or "
			                   "write it, so it is refused (chmod 600 %s, and consider the key "
			                   "exposed)",
			                   (unsigned)(st.st_mode & 07777), path);
		else if (st.st_uid != geteuid() && st.st_uid != 0)
			rc = ota_error_set(err, OTA_ERR_KEY_PERMISSIONS, path,
			                   "private key file is owned by uid %lu, neither uid %lu running "
			                   "this nor root: refused",
			                   (unsigned long)st.st_uid, (unsigned long)geteuid());
		if (rc != OTA_OK) {
			ota_key_free(*out);
			*out = NULL;
		}
	}
	return rc;
}

ota_err ota_key_generate(ota_alg alg, ota_key **out)
{
	*out = NULL;
	EVP_PKEY *pk = NULL;
	switch (alg) {
	case OTA_ALG_ES256: pk = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"); break;
	case OTA_ALG_ES384: pk = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384"); break;
	case OTA_ALG_ES512: pk = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-521"); break;
	case OTA_ALG_EDDSA: pk = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"); break;
	default: return OTA_ERR_ALG_UNKNOWN;
	}
	if (pk == NULL) {
		ERR_clear_error();
		return OTA_ERR_CRYPTO;
	}
	return key_wrap(pk, true, out, NULL);
}

/* ---- queries ---- */

bool ota_key_has_private(const ota_key *k)
{
	return k != NULL && k->priv;
}

ota_alg ota_key_default_alg(const ota_key *k)
{
	if (k == NULL)
		return OTA_ALG_NONE;
	switch (k->kind) {
	case KIND_EC:
		return k->nid == NID_X9_62_prime256v1 ? OTA_ALG_ES256
		       : k->nid == NID_secp384r1      ? OTA_ALG_ES384
		                                      : OTA_ALG_ES512;
	case KIND_ED25519:
	case KIND_ED448:
		return OTA_ALG_EDDSA;
	case KIND_RSA:
		return OTA_ALG_PS256;
	}
	return OTA_ALG_NONE;
}

ota_err ota_key_check_alg(const ota_key *k, ota_alg alg)
{
	if (k == NULL)
		return OTA_ERR_USAGE;
	if (!ota_alg_is_known(alg))
		return OTA_ERR_ALG_UNKNOWN;
	switch (k->kind) {
	case KIND_EC:
		return alg == ota_key_default_alg(k) ? OTA_OK : OTA_ERR_ALG_KEY_MISMATCH;
	case KIND_ED25519:
	case KIND_ED448:
		return alg == OTA_ALG_EDDSA ? OTA_OK : OTA_ERR_ALG_KEY_MISMATCH;
	case KIND_RSA:
		return alg == OTA_ALG_PS256 || alg == OTA_ALG_PS384 || alg == OTA_ALG_PS512
		           ? OTA_OK
		           : OTA_ERR_ALG_KEY_MISMATCH;
	}
	return OTA_ERR_ALG_KEY_MISMATCH;
}

ota_err ota_key_kid(const ota_key *k, uint8_t out[32])
{
	if (k == NULL)
		return OTA_ERR_USAGE;
	memcpy(out, k->kid, 32);
	return OTA_OK;
}

ota_err ota_key_spki_der(const ota_key *k, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (k == NULL || k->spki == NULL)
		return OTA_ERR_USAGE;
	*out = malloc(k->spki_len);
	if (*out == NULL)
		return OTA_ERR_NOMEM;
	memcpy(*out, k->spki, k->spki_len);
	*out_len = k->spki_len;
	return OTA_OK;
}

static ota_err bio_take(BIO *b, char **out, size_t *out_len)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	if (n <= 0)
		return OTA_ERR_CRYPTO;
	char *s = malloc((size_t)n + 1);
	if (s == NULL)
		return OTA_ERR_NOMEM;
	memcpy(s, p, (size_t)n);
	s[n] = '\0';
	*out = s;
	if (out_len != NULL)
		*out_len = (size_t)n;
	return OTA_OK;
}

ota_err ota_key_public_pem(const ota_key *k, char **out)
{
	*out = NULL;
	if (k == NULL)
		return OTA_ERR_USAGE;
	if (k->spki == NULL)
		return OTA_ERR_USAGE;
	/* PEM as PEM_write_bio_PUBKEY writes it: 64-column base64 of the SPKI */
	static const char head[] = "-----BEGIN PUBLIC KEY-----\n", tail[] = "-----END PUBLIC KEY-----\n";
	char *b64 = NULL;
	ota_err rc = ota_base64_encode(ota_bytes_make(k->spki, k->spki_len), &b64);
	if (rc != OTA_OK)
		return rc;
	size_t bl = strlen(b64), lines = (bl + 63) / 64;
	char *p = malloc(sizeof head + bl + lines + sizeof tail);
	if (p == NULL) {
		free(b64);
		return OTA_ERR_NOMEM;
	}
	size_t n = 0;
	memcpy(p, head, sizeof head - 1);
	n += sizeof head - 1;
	for (size_t i = 0; i < bl; i += 64) {
		size_t c = bl - i < 64 ? bl - i : 64;
		memcpy(p + n, b64 + i, c);
		n += c;
		p[n++] = '\n';
	}
	memcpy(p + n, tail, sizeof tail); /* with its NUL */
	free(b64);
	*out = p;
	return OTA_OK;
}

ota_err ota_key_private_pem(const ota_key *k, char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (k == NULL)
		return OTA_ERR_USAGE;
	if (!k->priv)
		return OTA_ERR_KEY_PRIVATE_REQUIRED;
	BIO *b = BIO_new(BIO_s_secmem());
	if (b == NULL)
		b = BIO_new(BIO_s_mem());
	if (b == NULL)
		return OTA_ERR_NOMEM;
	ota_err rc = PEM_write_bio_PKCS8PrivateKey(b, k->pkey, NULL, NULL, 0, NULL, NULL) == 1
	                 ? bio_take(b, out, out_len)
	                 : OTA_ERR_CRYPTO;
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	if (n > 0)
		ota_wipe(p, (size_t)n);
	BIO_free(b);
	ERR_clear_error();
	return rc;
}

unsigned ota_key_bits(const ota_key *k)
{
	return k != NULL ? k->bits : 0;
}

const char *ota_key_type_name(const ota_key *k)
{
	if (k == NULL)
		return "none";
	switch (k->kind) {
	case KIND_EC:
		return k->nid == NID_X9_62_prime256v1 ? "P-256"
		       : k->nid == NID_secp384r1      ? "P-384"
		                                      : "P-521";
	case KIND_ED25519: return "Ed25519";
	case KIND_ED448: return "Ed448";
	case KIND_RSA: return "RSA";
	}
	return "none";
}

static int jwk_put_b64(json_t *o, const char *name, const uint8_t *p, size_t n)
{
	char *s = NULL;
	if (ota_base64url_encode(ota_bytes_make(p, n), &s) != OTA_OK)
		return -1;
	int r = json_object_set_new(o, name, json_string(s));
	free(s);
	return r;
}

static int jwk_put_bn(json_t *o, const char *name, const EVP_PKEY *pk, const char *param)
{
	BIGNUM *bn = NULL;
	if (EVP_PKEY_get_bn_param(pk, param, &bn) != 1)
		return -1;
	int n = BN_num_bytes(bn);
	uint8_t *buf = malloc((size_t)n + 1);
	int r = -1;
	if (buf != NULL && BN_bn2bin(bn, buf) == n)
		r = jwk_put_b64(o, name, buf, (size_t)n);
	free(buf);
	BN_free(bn);
	return r;
}

ota_err ota_key_public_jwk(const ota_key *k, char **out)
{
	*out = NULL;
	if (k == NULL)
		return OTA_ERR_USAGE;
	json_t *o = json_object();
	if (o == NULL)
		return OTA_ERR_NOMEM;
	int r = 0;
	if (k->kind == KIND_EC) {
		uint8_t pt[1 + 2 * 66];
		size_t pl = 0;
		if (EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof pt,
		                                    &pl) != 1 ||
		    pl != 1 + 2 * k->field || pt[0] != 0x04) {
			r = -1;
		} else {
			r |= json_object_set_new(o, "kty", json_string("EC"));
			r |= json_object_set_new(o, "crv", json_string(ota_key_type_name(k)));
			r |= jwk_put_b64(o, "x", pt + 1, k->field);
			r |= jwk_put_b64(o, "y", pt + 1 + k->field, k->field);
		}
	} else if (k->kind == KIND_ED25519 || k->kind == KIND_ED448) {
		uint8_t pub[57];
		size_t pl = sizeof pub;
		if (EVP_PKEY_get_raw_public_key(k->pkey, pub, &pl) != 1) {
			r = -1;
		} else {
			r |= json_object_set_new(o, "kty", json_string("OKP"));
			r |= json_object_set_new(o, "crv", json_string(ota_key_type_name(k)));
			r |= jwk_put_b64(o, "x", pub, pl);
		}
	} else {
		r |= json_object_set_new(o, "kty", json_string("RSA"));
		r |= jwk_put_bn(o, "n", k->pkey, OSSL_PKEY_PARAM_RSA_N);
		r |= jwk_put_bn(o, "e", k->pkey, OSSL_PKEY_PARAM_RSA_E);
	}
	ERR_clear_error();
	if (r != 0) {
		json_decref(o);
		return OTA_ERR_CRYPTO;
	}
	*out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

bool ota_key_equal_public(const ota_key *a, const ota_key *b)
{
	if (a == NULL || b == NULL)
		return false;
	return memcmp(a->kid, b->kid, 32) == 0;
}

void *ota_key_evp(const ota_key *k)
{
	return k != NULL ? k->pkey : NULL;
}

/* ---- signatures ---- */

static const EVP_MD *alg_md(const ota_key *k, ota_alg alg)
{
	switch (alg) {
	case OTA_ALG_ES256:
	case OTA_ALG_PS256: return k->sha256;
	case OTA_ALG_ES384:
	case OTA_ALG_PS384: return k->sha384;
	case OTA_ALG_ES512:
	case OTA_ALG_PS512: return k->sha512;
	default: return NULL;
	}
}

/* DER INTEGER of the unsigned big-endian n bytes at p; returns bytes written. */
static size_t der_int(uint8_t *w, const uint8_t *p, size_t n)
{
	while (n > 1 && p[0] == 0) {
		p++;
		n--;
	}
	size_t pad = (p[0] & 0x80) ? 1 : 0;
	size_t i = 0;
	w[i++] = 0x02;
	w[i++] = (uint8_t)(n + pad);
	if (pad)
		w[i++] = 0x00;
	memcpy(w + i, p, n);
	return i + n;
}

/* Raw r||s (2*field bytes) to an ECDSA-Sig-Value DER in out (>= 2*field+12). */
static size_t raw_to_der(const uint8_t *sig, size_t field, uint8_t *out)
{
	uint8_t body[2 * (66 + 3)];
	size_t bl = der_int(body, sig, field);
	bl += der_int(body + bl, sig + field, field);
	size_t i = 0;
	out[i++] = 0x30;
	if (bl >= 128)
		out[i++] = 0x81;
	out[i++] = (uint8_t)bl;
	memcpy(out + i, body, bl);
	return i + bl;
}

static ota_err set_pss(EVP_PKEY_CTX *pctx, const EVP_MD *md)
{
	if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md) != 1)
		return OTA_ERR_CRYPTO;
	return OTA_OK;
}

/* The key's P-256 table, or NULL (not built yet, not P-256, or it could
 * not be built: then EVP verifies, as before FAST_AFTER). */
static const ota_ec_fast *fast_table(const ota_key *k, ota_alg alg)
{
	struct fast_state *fs = k->fast;
	if (alg != OTA_ALG_ES256 || fs == NULL)
		return NULL;
	ota_ec_fast *f = atomic_load_explicit(&fs->table, memory_order_acquire);
	if (f != NULL)
		return f;
	/* exactly one caller sees the FAST_AFTER-th count and builds */
	if (atomic_fetch_add_explicit(&fs->verifies, 1, memory_order_relaxed) + 1 != FAST_AFTER)
		return NULL;
	f = ota_ec_fast_new(k->pkey);
	if (f != NULL)
		atomic_store_explicit(&fs->table, f, memory_order_release);
	return f;
}

ota_err ota_key_verify_parts(const ota_key *k, ota_alg alg, const ota_bytes *parts, size_t n,
                             ota_bytes sig)
{
	if (k == NULL)
		return OTA_ERR_USAGE;
	ota_err rc = ota_key_check_alg(k, alg);
	if (rc != OTA_OK)
		return rc;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return OTA_ERR_NOMEM;
	int r;
	if (k->kind == KIND_EC) {
		if (sig.len != 2 * k->field) {
			rc = OTA_ERR_SIG_FORMAT;
			goto out;
		}
		/*
		 * Hash with the digest fetched at load time, then verify the
		 * digest with a duplicate of the context prepared at load time:
		 * no provider look-up per call, and no shared state is written
		 * (safe when several threads verify with one key).
		 */
		uint8_t der[2 * 66 + 12];
		size_t dl = raw_to_der(sig.ptr, k->field, der);
		uint8_t dig[EVP_MAX_MD_SIZE];
		unsigned dig_len = 0;
		if (EVP_DigestInit_ex(ctx, alg_md(k, alg), NULL) != 1) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			if (parts[i].len > 0 && EVP_DigestUpdate(ctx, parts[i].ptr, parts[i].len) != 1) {
				rc = OTA_ERR_CRYPTO;
				goto out;
			}
		}
		if (EVP_DigestFinal_ex(ctx, dig, &dig_len) != 1) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		const ota_ec_fast *f = dig_len == 32 ? fast_table(k, alg) : NULL;
		r = f != NULL ? ota_ec_fast_verify(f, dig, sig.ptr) : -1;
		if (r >= 0)
			goto done; /* -1: an internal failure, EVP answers */
		EVP_PKEY_CTX *pc = EVP_PKEY_CTX_dup(k->vctx);
		if (pc == NULL) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		r = EVP_PKEY_verify(pc, der, dl, dig, dig_len);
		EVP_PKEY_CTX_free(pc);
	} else if (k->kind == KIND_RSA) {
		if (sig.len != k->field) {
			rc = OTA_ERR_SIG_FORMAT;
			goto out;
		}
		EVP_PKEY_CTX *pctx = NULL;
		const EVP_MD *md = alg_md(k, alg);
		if (EVP_DigestVerifyInit(ctx, &pctx, md, NULL, k->pkey) != 1 ||
		    set_pss(pctx, md) != OTA_OK) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			if (parts[i].len > 0 &&
			    EVP_DigestVerifyUpdate(ctx, parts[i].ptr, parts[i].len) != 1) {
				rc = OTA_ERR_CRYPTO;
				goto out;
			}
		}
		EVP_MD_CTX_set_flags(ctx, EVP_MD_CTX_FLAG_FINALISE);
		r = EVP_DigestVerifyFinal(ctx, sig.ptr, sig.len);
	} else {
		size_t want = k->kind == KIND_ED25519 ? 64 : 114;
		if (sig.len != want) {
			rc = OTA_ERR_SIG_FORMAT;
			goto out;
		}
		uint8_t stackbuf[4096];
		uint8_t *buf = stackbuf;
		const uint8_t *msg;
		size_t total = 0;
		for (size_t i = 0; i < n; i++)
			total += parts[i].len;
		if (n == 1) {
			msg = parts[0].ptr;
		} else {
			if (total > sizeof stackbuf) {
				buf = malloc(total);
				if (buf == NULL) {
					rc = OTA_ERR_NOMEM;
					goto out;
				}
			}
			size_t off = 0;
			for (size_t i = 0; i < n; i++) {
				if (parts[i].len > 0)
					memcpy(buf + off, parts[i].ptr, parts[i].len);
				off += parts[i].len;
			}
			msg = buf;
		}
		/* a copy of the context prepared at load time: no look-up per call */
		if (EVP_MD_CTX_copy_ex(ctx, k->edctx) != 1) {
			if (buf != stackbuf)
				free(buf);
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		static const uint8_t empty[1] = {0};
		r = EVP_DigestVerify(ctx, sig.ptr, sig.len, msg != NULL ? msg : empty, total);
		if (buf != stackbuf)
			free(buf);
	}
done:
	rc = r == 1 ? OTA_OK : r == 0 ? OTA_ERR_SIG_INVALID : OTA_ERR_SIG_INVALID;
out:
	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	return rc;
}

ota_err ota_key_verify(const ota_key *k, ota_alg alg, ota_bytes tbs, ota_bytes sig)
{
	return ota_key_verify_parts(k, alg, &tbs, 1, sig);
}

/* ---- ECDSA low-S: s <= n/2 (n the group order) ---- */

/* The group orders of P-256, P-384 and P-521, big-endian, padded to the
 * curve's scalar size (tests/unit/low_s_test.c checks them against
 * OpenSSL's EC_GROUP_get0_order). */
static const uint8_t order_p256[32] = {
	0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84,
	0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};
static const uint8_t order_p384[48] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37, 0x2d, 0xdf, 0x58, 0x1a, 0x0d, 0xb2,
	0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
};
static const uint8_t order_p521[66] = {
	0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa, 0x51, 0x86,
	0x87, 0x83, 0xbf, 0x2f, 0x96, 0x6b, 0x7f, 0xcc, 0x01, 0x48, 0xf7, 0x09,
	0xa5, 0xd0, 0x3b, 0xb5, 0xc9, 0xb8, 0x89, 0x9c, 0x47, 0xae, 0xbb, 0x6f,
	0xb7, 0x1e, 0x91, 0x38, 0x64, 0x09,
};

/* The order of the curve whose scalars have field bytes (NULL: not ECDSA). */
static const uint8_t *ec_order(size_t field)
{
	switch (field) {
	case sizeof order_p256: return order_p256;
	case sizeof order_p384: return order_p384;
	case sizeof order_p521: return order_p521;
	default: return NULL;
	}
}

/* out = n - s over field big-endian bytes (mod 2^(8 field) when s > n). */
static void order_minus(const uint8_t *n, const uint8_t *s, size_t field, uint8_t *out)
{
	unsigned borrow = 0;
	for (size_t i = field; i-- > 0;) {
		unsigned d = (unsigned)n[i] - (unsigned)s[i] - borrow;
		out[i] = (uint8_t)(d & 0xffu);
		borrow = (d >> 8) & 1u;
	}
}

/* s (field bytes, big-endian) is above n/2, or not below n at all. */
static bool s_is_high(const uint8_t *n, const uint8_t *s, size_t field)
{
	uint8_t t[66];
	if (memcmp(s, n, field) >= 0)
		return true;
	order_minus(n, s, field, t);
	return memcmp(s, t, field) > 0; /* n is odd: s == n - s never happens */
}

bool ota_key_sig_is_high_s(ota_alg alg, ota_bytes sig)
{
	size_t field = alg == OTA_ALG_ES256 ? 32 : alg == OTA_ALG_ES384 ? 48
	             : alg == OTA_ALG_ES512 ? 66 : 0;
	const uint8_t *n = ec_order(field);
	if (n == NULL || sig.ptr == NULL || sig.len != 2 * field)
		return false;
	return s_is_high(n, sig.ptr + field, field);
}

ota_err ota_key_sign(const ota_key *k, ota_alg alg, ota_bytes tbs, ota_buf sig, size_t *sig_len)
{
	*sig_len = 0;
	if (k == NULL)
		return OTA_ERR_USAGE;
	if (!k->priv)
		return OTA_ERR_KEY_PRIVATE_REQUIRED;
	ota_err rc = ota_key_check_alg(k, alg);
	if (rc != OTA_OK)
		return rc;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return OTA_ERR_NOMEM;
	static const uint8_t empty[1] = {0};
	const uint8_t *msg = tbs.ptr != NULL ? tbs.ptr : empty;
	if (k->kind == KIND_EC) {
		uint8_t der[2 * 66 + 12];
		size_t dl = sizeof der;
		ECDSA_SIG *es = NULL;
		if (sig.cap < 2 * k->field) {
			rc = OTA_ERR_TOO_LARGE;
			goto out;
		}
		if (EVP_DigestSignInit(ctx, NULL, alg_md(k, alg), NULL, k->pkey) != 1 ||
		    EVP_DigestSign(ctx, der, &dl, msg, tbs.len) != 1) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		const unsigned char *p = der;
		es = d2i_ECDSA_SIG(NULL, &p, (long)dl);
		if (es == NULL ||
		    BN_bn2binpad(ECDSA_SIG_get0_r(es), sig.ptr, (int)k->field) != (int)k->field ||
		    BN_bn2binpad(ECDSA_SIG_get0_s(es), sig.ptr + k->field, (int)k->field) !=
		        (int)k->field) {
			ECDSA_SIG_free(es);
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		ECDSA_SIG_free(es);
		/* low-S: (r, n - s) verifies as well as (r, s); we only ever
		 * write the one with s <= n/2, so our signatures have one form */
		const uint8_t *n = ec_order(k->field);
		uint8_t *sp = sig.ptr + k->field;
		if (n == NULL) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		if (s_is_high(n, sp, k->field))
			order_minus(n, sp, k->field, sp);
		*sig_len = 2 * k->field;
	} else if (k->kind == KIND_RSA) {
		EVP_PKEY_CTX *pctx = NULL;
		const EVP_MD *md = alg_md(k, alg);
		size_t sl = sig.cap;
		if (sig.cap < k->field) {
			rc = OTA_ERR_TOO_LARGE;
			goto out;
		}
		if (EVP_DigestSignInit(ctx, &pctx, md, NULL, k->pkey) != 1 ||
		    set_pss(pctx, md) != OTA_OK || EVP_DigestSign(ctx, sig.ptr, &sl, msg, tbs.len) != 1) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		*sig_len = sl;
	} else {
		size_t sl = k->kind == KIND_ED25519 ? 64 : 114;
		if (sig.cap < sl) {
			rc = OTA_ERR_TOO_LARGE;
			goto out;
		}
		if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) != 1 ||
		    EVP_DigestSign(ctx, sig.ptr, &sl, msg, tbs.len) != 1) {
			rc = OTA_ERR_CRYPTO;
			goto out;
		}
		*sig_len = sl;
	}
	rc = OTA_OK;
out:
	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	return rc;
}
