/*
 * Strict parsing of trust-root snapshots, accessors, signing, serialization.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "trust_internal.h"

#define W_SIZE 96

static const char *const scope_fields[SCOPE_N] = {"repos", "lanes", "provider_targets"};

const char *trust_scope_field(int dim)
{
	return dim >= 0 && dim < SCOPE_N ? scope_fields[dim] : "?";
}

const char *ota_trust_role_name(ota_trust_role r)
{
	switch (r) {
	case OTA_TRUST_ROLE_ISSUER:
		return "issuer";
	case OTA_TRUST_ROLE_RUNNER:
		return "runner";
	case OTA_TRUST_ROLE_VERIFIER:
		return "verifier";
	}
	return "unknown";
}

ota_err ota_trust_role_from_name(const char *name, ota_trust_role *out)
{
	static const ota_trust_role all[] = {OTA_TRUST_ROLE_ISSUER, OTA_TRUST_ROLE_RUNNER,
	                                     OTA_TRUST_ROLE_VERIFIER};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (name != NULL && strcmp(name, ota_trust_role_name(all[i])) == 0) {
			*out = all[i];
			return OTA_OK;
		}
	return OTA_ERR_USAGE;
}

/* Printable ASCII without spaces, quotes or backslashes, 1..256 bytes. */
bool trust_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > OTA_MAX_TRUST_NAME_BYTES)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/* A name whose only '*' (if any) is the last character. */
bool trust_pattern_ok(const char *s)
{
	if (!trust_name_ok(s))
		return false;
	const char *star = strchr(s, '*');
	return star == NULL || star[1] == '\0';
}

/* ---- kref ---- */

/*
 * SHA-256 over the public key's components, whatever their encoding: the
 * type, then the curve and the affine x and y padded to the field size (EC),
 * the raw public key (EdDSA), or n and e each length-prefixed (RSA). Two
 * entries with equal fingerprints hold one key, even if a hole in the
 * encoding checks let it hash to two kids.
 */
ota_err trust_key_fingerprint(const void *pkey, uint8_t out[32])
{
	const EVP_PKEY *p = pkey;
	uint8_t buf[16 + 2 * (4 + OTA_MAX_RSA_BITS / 8 + 1)];
	size_t n;
	ota_err rc = OTA_ERR_CRYPTO;
	BIGNUM *a = NULL, *b = NULL;
	int id = EVP_PKEY_get_base_id(p);
	const char *tag = id == EVP_PKEY_EC        ? "EC"
	                  : id == EVP_PKEY_ED25519 ? "Ed25519"
	                  : id == EVP_PKEY_ED448   ? "Ed448"
	                  : id == EVP_PKEY_RSA     ? "RSA"
	                                           : NULL;
	if (tag == NULL)
		return OTA_ERR_KEY_UNSUPPORTED;
	n = strlen(tag) + 1;
	memcpy(buf, tag, n);
	if (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) {
		size_t pl = 57;
		if (EVP_PKEY_get_raw_public_key(p, buf + n, &pl) != 1)
			goto out;
		n += pl;
	} else if (id == EVP_PKEY_EC) {
		char g[32];
		size_t gl = 0, pl = 0;
		int bits = EVP_PKEY_get_bits(p);
		size_t field = bits > 0 ? ((size_t)bits + 7) / 8 : 0;
		if (field == 0 || field > 66 ||
		    EVP_PKEY_get_utf8_string_param(p, OSSL_PKEY_PARAM_GROUP_NAME, g, sizeof g, &gl) != 1)
			goto out;
		memcpy(buf + n, g, gl + 1);
		n += gl + 1;
		/* x || y follow the first byte of an uncompressed (0x04) or
		 * hybrid (0x06/0x07) point; a compressed one has only x */
		uint8_t pt[1 + 2 * 66];
		if (EVP_PKEY_get_octet_string_param(p, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof pt, &pl) ==
		        1 &&
		    pl == 1 + 2 * field && (pt[0] == 0x04 || pt[0] == 0x06 || pt[0] == 0x07)) {
			memcpy(buf + n, pt + 1, 2 * field);
		} else if (EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_EC_PUB_X, &a) != 1 ||
		           EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_EC_PUB_Y, &b) != 1 ||
		           BN_bn2binpad(a, buf + n, (int)field) != (int)field ||
		           BN_bn2binpad(b, buf + n + field, (int)field) != (int)field) {
			goto out;
		}
		n += 2 * field;
	} else {
		if (EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_RSA_N, &a) != 1 ||
		    EVP_PKEY_get_bn_param(p, OSSL_PKEY_PARAM_RSA_E, &b) != 1)
			goto out;
		for (int i = 0; i < 2; i++) {
			const BIGNUM *x = i == 0 ? a : b;
			int xl = BN_num_bytes(x);
			if (xl < 0 || n + 4 + (size_t)xl > sizeof buf)
				goto out;
			buf[n++] = (uint8_t)((unsigned)xl >> 24);
			buf[n++] = (uint8_t)((unsigned)xl >> 16);
			buf[n++] = (uint8_t)((unsigned)xl >> 8);
			buf[n++] = (uint8_t)xl;
			if (BN_bn2bin(x, buf + n) != xl)
				goto out;
			n += (size_t)xl;
		}
	}
	rc = ota_sha256(ota_bytes_make(buf, n), out);
out:
	BN_free(a);
	BN_free(b);
	ERR_clear_error();
	return rc;
}

/* A new reference to k (which it takes only on success), with k's fingerprint. */
static ota_err kref_new(ota_key *k, trust_kref **out)
{
	*out = NULL;
	trust_kref *kr = malloc(sizeof *kr);
	if (kr == NULL)
		return OTA_ERR_NOMEM;
	ota_err rc = trust_key_fingerprint(ota_key_evp(k), kr->fp);
	if (rc != OTA_OK) {
		free(kr);
		return rc;
	}
	kr->key = k;
	kr->refs = 1;
	*out = kr;
	return OTA_OK;
}

static void kref_put(trust_kref *kr)
{
	if (kr == NULL)
		return;
	if (--kr->refs == 0) {
		ota_key_free(kr->key);
		free(kr);
	}
}

void ota_trust_root_free(ota_trust_root *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_rk; i++)
		kref_put(r->rk[i].kr);
	for (size_t i = 0; i < r->n_keys; i++)
		kref_put(r->keys[i].kr);
	for (size_t i = 0; i < r->n_pr; i++)
		for (int d = 0; d < SCOPE_N; d++)
			free(r->pr[i].scopes[d]);
	if (r->sigs != NULL)
		for (size_t i = 0; i < r->n_sigs; i++)
			free(r->sigs[i].sig);
	free(r->sigs);
	free(r->rk);
	free(r->pr);
	free(r->keys);
	free(r->index);
	free(r->kids);
	free(r->tbs);
	json_decref(r->signed_);
	free(r);
}

/* ---- small JSON field helpers ---- */

static ota_err malformed(ota_error *err, const char *where, const char *what)
{
	return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where, "%s", what);
}

/* Refuses members of obj not in allowed (NULL-terminated). */
static ota_err only_members(const json_t *obj, const char *const *allowed, const char *where,
                            ota_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)(uintptr_t)obj, k, v) {
		bool ok = false;
		for (const char *const *a = allowed; *a != NULL; a++)
			if (strcmp(*a, k) == 0)
				ok = true;
		if (!ok)
			return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
			                     "unknown member \"%.64s\"", k);
	}
	return OTA_OK;
}

static ota_err get_int(const json_t *obj, const char *name, bool required, int64_t min,
                       int64_t max, int64_t *out, bool *present, const char *where,
                       ota_error *err)
{
	const json_t *v = json_object_get(obj, name);
	if (present != NULL)
		*present = v != NULL;
	if (v == NULL) {
		if (required)
			return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
			                     "missing integer member \"%s\"", name);
		return OTA_OK;
	}
	if (!json_is_integer(v))
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
		                     "member \"%s\" must be an integer", name);
	json_int_t x = json_integer_value(v);
	if (x < min || x > max)
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
		                     "member \"%s\" is out of range", name);
	*out = (int64_t)x;
	return OTA_OK;
}

static ota_err get_str(const json_t *obj, const char *name, const char **out, const char *where,
                       ota_error *err)
{
	const json_t *v = json_object_get(obj, name);
	if (!json_is_string(v))
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
		                     "member \"%s\" must be a string", name);
	*out = json_string_value(v);
	if (strlen(*out) != json_string_length(v))
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
		                     "member \"%s\" holds a NUL character", name);
	return OTA_OK;
}

static ota_err get_kid(const char *hex, uint8_t out[32], char out_hex[65], const char *where,
                       ota_error *err)
{
	size_t n = strlen(hex);
	size_t got = 0;
	if (n != 64)
		return malformed(err, where, "kid must be 64 lowercase hex digits");
	for (size_t i = 0; i < n; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return malformed(err, where, "kid must be 64 lowercase hex digits");
	if (ota_hex_decode(hex, n, (ota_buf){out, 32}, &got) != OTA_OK || got != 32)
		return malformed(err, where, "kid must be 64 lowercase hex digits");
	memcpy(out_hex, hex, 65);
	return OTA_OK;
}

/* Coordinate size in bytes of the curve of an ECDSA alg (0: not ECDSA). */
static size_t ec_field(ota_alg a)
{
	switch (a) {
	case OTA_ALG_ES256:
		return 32;
	case OTA_ALG_ES384:
		return 48;
	case OTA_ALG_ES512:
		return 66;
	default:
		return 0;
	}
}

/* Expected SPKI DER sizes of named-curve keys with uncompressed points. */
static size_t ec_spki_len(ota_alg a)
{
	switch (a) {
	case OTA_ALG_ES256:
		return 91;
	case OTA_ALG_ES384:
		return 120;
	case OTA_ALG_ES512:
		return 158;
	default:
		return 0;
	}
}

bool trust_alg_fits(const ota_key *k, ota_alg alg)
{
	if (ota_key_check_alg(k, alg) != OTA_OK)
		return false;
	/* EdDSA in a trust root is Ed25519 (COSE verification alone also
	 * takes Ed448 under the generic EdDSA, docs/cose.md) */
	return alg != OTA_ALG_EDDSA || strcmp(ota_key_type_name(k), "Ed25519") == 0;
}

/*
 * Loads the key of one entry {kid, alg, public_key, ...}: from the cache
 * when the previous version had the very same entry, otherwise from PEM with
 * every canonical-form check.
 */
static ota_err load_entry_key(const json_t *e, trust_key *tk, const ota_trust_root *cache,
                              const char *where, ota_error *err)
{
	const char *kid_hex = NULL, *alg_name = NULL;
	ota_err rc;
	if ((rc = get_str(e, "kid", &kid_hex, where, err)) != OTA_OK ||
	    (rc = get_str(e, "alg", &alg_name, where, err)) != OTA_OK ||
	    (rc = get_str(e, "public_key", &tk->pem, where, err)) != OTA_OK)
		return rc;
	if ((rc = get_kid(kid_hex, tk->kid, tk->kid_hex, where, err)) != OTA_OK)
		return rc;
	if (ota_alg_from_name(alg_name, &tk->alg) != OTA_OK)
		return ota_error_set(err, OTA_ERR_ALG_UNKNOWN, where, "alg \"%.32s\" is not allowed",
		                     alg_name);
	if (cache != NULL) {
		const trust_key *c = trust_find_root_key(cache, tk->kid);
		if (c == NULL || strcmp(c->pem, tk->pem) != 0 || c->alg != tk->alg)
			c = trust_find_key(cache, tk->kid);
		if (c != NULL && strcmp(c->pem, tk->pem) == 0 && c->alg == tk->alg) {
			tk->kr = c->kr;
			tk->kr->refs++;
			return OTA_OK;
		}
	}
	size_t pem_len = strlen(tk->pem);
	ota_key *k = NULL;
	ota_error kerr;
	ota_error_clear(&kerr);
	rc = ota_key_load_pem(ota_bytes_make(tk->pem, pem_len), &k, &kerr);
	if (rc == OTA_ERR_KEY_NONCANONICAL)
		rc = OTA_ERR_TRUST_KEY_NONCANONICAL; /* another encoding of a key: another kid */
	if (rc != OTA_OK)
		return ota_error_set(err, rc, where, "public_key: %s", kerr.what);
	if (ota_key_has_private(k)) {
		ota_key_free(k);
		return malformed(err, where, "public_key holds a private key");
	}
	if (!trust_alg_fits(k, tk->alg)) {
		rc = ota_error_set(err, OTA_ERR_ALG_KEY_MISMATCH, where,
		                   "alg %s does not fit the %s key%s", ota_alg_name(tk->alg),
		                   ota_key_type_name(k),
		                   tk->alg == OTA_ALG_EDDSA ? " (EdDSA means Ed25519)" : "");
		ota_key_free(k);
		return rc;
	}
	char *canon = NULL;
	rc = ota_key_public_pem(k, &canon);
	if (rc != OTA_OK) {
		ota_key_free(k);
		return ota_error_set(err, rc, where, "cannot re-encode the public key");
	}
	bool same = strcmp(canon, tk->pem) == 0;
	free(canon);
	uint8_t *der = NULL;
	size_t der_len = 0;
	if (same && ec_spki_len(tk->alg) != 0) {
		rc = ota_key_spki_der(k, &der, &der_len);
		if (rc != OTA_OK) {
			ota_key_free(k);
			return ota_error_set(err, rc, where, "cannot encode SPKI");
		}
		/* the length alone does not tell a hybrid point (0x06/0x07) from an
		 * uncompressed one: the point's first byte must be 0x04 */
		same = der_len == ec_spki_len(tk->alg) &&
		       der[der_len - 1 - 2 * ec_field(tk->alg)] == 0x04;
		free(der);
	}
	if (!same) {
		ota_key_free(k);
		return ota_error_set(err, OTA_ERR_TRUST_KEY_NONCANONICAL, where,
		                     "public_key must be SPKI PEM as written by OpenSSL "
		                     "(64-column base64, named curve, uncompressed point)");
	}
	uint8_t kid[32];
	if (ota_key_kid(k, kid) != OTA_OK || memcmp(kid, tk->kid, 32) != 0) {
		ota_key_free(k);
		return ota_error_set(err, OTA_ERR_TRUST_KID_MISMATCH, where,
		                     "kid is not SHA-256 of the key's SubjectPublicKeyInfo");
	}
	rc = kref_new(k, &tk->kr);
	if (rc != OTA_OK) {
		ota_key_free(k);
		return ota_error_set(err, rc, where, "cannot fingerprint the key");
	}
	return OTA_OK;
}

static int cmp_kidp(const void *a, const void *b)
{
	const trust_key *x = *(const trust_key *const *)a;
	const trust_key *y = *(const trust_key *const *)b;
	return memcmp(x->kid, y->kid, 32);
}

static int cmp_fpp(const void *a, const void *b)
{
	const trust_key *x = *(const trust_key *const *)a;
	const trust_key *y = *(const trust_key *const *)b;
	return memcmp(x->kr->fp, y->kr->fp, 32);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const trust_key *trust_find_key(const ota_trust_root *r, const uint8_t kid[32])
{
	size_t lo = 0, hi = r->n_keys;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(r->kids[mid], kid, 32);
		if (c == 0)
			return r->index[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const trust_key *trust_find_root_key(const ota_trust_root *r, const uint8_t kid[32])
{
	for (size_t i = 0; i < r->n_rk; i++)
		if (memcmp(r->rk[i].kid, kid, 32) == 0)
			return &r->rk[i];
	return NULL;
}

static ota_err parse_scopes(const json_t *sc, ota_trust_principal *p, const char *where,
                            ota_error *err)
{
	static const char *const allowed[] = {"repos", "lanes", "provider_targets", NULL};
	if (!json_is_object(sc))
		return malformed(err, where, "scopes must be an object");
	ota_err rc = only_members(sc, allowed, where, err);
	if (rc != OTA_OK)
		return rc;
	for (int d = 0; d < SCOPE_N; d++) {
		const json_t *a = json_object_get(sc, scope_fields[d]);
		if (!json_is_array(a))
			return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
			                     "scopes.%s must be an array", scope_fields[d]);
		size_t n = json_array_size(a);
		if (n > OTA_MAX_TRUST_SCOPES)
			return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
			                     "scopes.%s has more than %u patterns", scope_fields[d],
			                     OTA_MAX_TRUST_SCOPES);
		p->scopes[d] = calloc(n + 1, sizeof *p->scopes[d]);
		if (p->scopes[d] == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, where, NULL);
		for (size_t i = 0; i < n; i++) {
			const json_t *s = json_array_get(a, i);
			if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s) ||
			    !trust_pattern_ok(json_string_value(s)))
				return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, where,
				                     "scopes.%s[%zu] must be a printable pattern with "
				                     "'*' only at its end",
				                     scope_fields[d], i);
			p->scopes[d][i] = json_string_value(s);
		}
		p->n_scopes[d] = n;
	}
	return OTA_OK;
}

static ota_err parse_root_role(ota_trust_root *r, const json_t *root, const ota_trust_root *cache,
                               ota_error *err)
{
	static const char *const allowed[] = {"threshold", "keys", NULL};
	static const char *const key_allowed[] = {"kid", "alg", "public_key", NULL};
	char where[W_SIZE];
	if (!json_is_object(root))
		return malformed(err, "/signed/root", "root must be an object");
	ota_err rc = only_members(root, allowed, "/signed/root", err);
	if (rc != OTA_OK)
		return rc;
	const json_t *keys = json_object_get(root, "keys");
	if (!json_is_array(keys) || json_array_size(keys) == 0 ||
	    json_array_size(keys) > OTA_MAX_TRUST_ROOT_KEYS)
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, "/signed/root/keys",
		                     "root keys must be an array of 1 to %u keys",
		                     OTA_MAX_TRUST_ROOT_KEYS);
	size_t n = json_array_size(keys);
	int64_t thr = 0;
	if ((rc = get_int(root, "threshold", true, 1, (int64_t)n, &thr, NULL, "/signed/root",
	                  err)) != OTA_OK)
		return rc;
	r->threshold = (unsigned)thr;
	r->rk = calloc(n, sizeof *r->rk);
	if (r->rk == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "/signed/root", NULL);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(keys, i);
		snprintf(where, sizeof where, "/signed/root/keys/%zu", i);
		if (!json_is_object(e))
			return malformed(err, where, "a root key must be an object");
		if ((rc = only_members(e, key_allowed, where, err)) != OTA_OK)
			return rc;
		rc = load_entry_key(e, &r->rk[i], cache, where, err);
		if (rc != OTA_OK)
			return rc;
		r->n_rk = i + 1;
		for (size_t j = 0; j < i; j++)
			if (memcmp(r->rk[j].kid, r->rk[i].kid, 32) == 0 ||
			    EVP_PKEY_eq(ota_key_evp(r->rk[j].kr->key),
			                ota_key_evp(r->rk[i].kr->key)) == 1)
				return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, where,
				                     "root key %zu is the same key as root key %zu", i,
				                     j);
	}
	return OTA_OK;
}

static ota_err parse_principals(ota_trust_root *r, const json_t *arr, const ota_trust_root *cache,
                                ota_error *err)
{
	static const char *const allowed[] = {"id", "role", "scopes", "keys", NULL};
	static const char *const key_allowed[] = {"kid",         "alg",        "public_key",
	                                          "valid_from",  "valid_until", "revoked_at",
	                                          NULL};
	char where[W_SIZE];
	ota_err rc;
	if (!json_is_array(arr))
		return malformed(err, "/signed/principals", "principals must be an array");
	size_t n = json_array_size(arr);
	if (n > OTA_MAX_TRUST_PRINCIPALS)
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, "/signed/principals",
		                     "more than %u principals", OTA_MAX_TRUST_PRINCIPALS);
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *ks = json_object_get(json_array_get(arr, i), "keys");
		total += json_is_array(ks) ? json_array_size(ks) : 0;
	}
	if (total > OTA_MAX_TRUST_KEYS)
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, "/signed/principals",
		                     "more than %u principal keys", OTA_MAX_TRUST_KEYS);
	r->pr = calloc(n ? n : 1, sizeof *r->pr);
	r->keys = calloc(total ? total : 1, sizeof *r->keys);
	r->index = calloc(total ? total : 1, sizeof *r->index);
	if (r->pr == NULL || r->keys == NULL || r->index == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "/signed/principals", NULL);
	for (size_t i = 0; i < n; i++) {
		const json_t *pj = json_array_get(arr, i);
		ota_trust_principal *p = &r->pr[i];
		r->n_pr = i + 1;
		snprintf(where, sizeof where, "/signed/principals/%zu", i);
		if (!json_is_object(pj))
			return malformed(err, where, "a principal must be an object");
		if ((rc = only_members(pj, allowed, where, err)) != OTA_OK)
			return rc;
		const char *role = NULL;
		if ((rc = get_str(pj, "id", &p->id, where, err)) != OTA_OK ||
		    (rc = get_str(pj, "role", &role, where, err)) != OTA_OK)
			return rc;
		if (!trust_name_ok(p->id))
			return malformed(err, where, "id must be 1-256 printable characters");
		if (ota_trust_role_from_name(role, &p->role) != OTA_OK)
			return malformed(err, where, "role must be issuer, runner or verifier");
		if ((rc = parse_scopes(json_object_get(pj, "scopes"), p, where, err)) != OTA_OK)
			return rc;
		const json_t *ks = json_object_get(pj, "keys");
		if (!json_is_array(ks))
			return malformed(err, where, "keys must be an array");
		p->first_key = r->n_keys;
		for (size_t j = 0; j < json_array_size(ks); j++) {
			const json_t *e = json_array_get(ks, j);
			trust_key *tk = &r->keys[r->n_keys];
			snprintf(where, sizeof where, "/signed/principals/%zu/keys/%zu", i, j);
			if (!json_is_object(e))
				return malformed(err, where, "a key must be an object");
			if ((rc = only_members(e, key_allowed, where, err)) != OTA_OK)
				return rc;
			if ((rc = get_int(e, "valid_from", true, 0, INT64_MAX, &tk->valid_from, NULL,
			                  where, err)) != OTA_OK ||
			    (rc = get_int(e, "valid_until", false, 0, INT64_MAX, &tk->valid_until,
			                  &tk->has_until, where, err)) != OTA_OK ||
			    (rc = get_int(e, "revoked_at", false, 0, INT64_MAX, &tk->revoked_at,
			                  &tk->has_revoked, where, err)) != OTA_OK)
				return rc;
			if (tk->has_until && tk->valid_until <= tk->valid_from)
				return malformed(err, where, "valid_until must be after valid_from");
			rc = load_entry_key(e, tk, cache, where, err);
			if (rc != OTA_OK)
				return rc;
			tk->owner = p;
			/* one key, one role: a root key that is also an issuer,
			 * runner or verifier key puts root authority on an online
			 * signer (a stolen runner key would sign rotations) */
			for (size_t k = 0; k < r->n_rk; k++)
				if (memcmp(r->rk[k].kid, tk->kid, 32) == 0 ||
				    memcmp(r->rk[k].kr->fp, tk->kr->fp, 32) == 0) {
					r->index[r->n_keys] = tk;
					r->n_keys++; /* freed with the root */
					return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, where,
					                     "key %s of principal %s is root key %zu: "
					                     "a root key holds no other role",
					                     tk->kid_hex, p->id, k);
				}
			r->index[r->n_keys] = tk;
			r->n_keys++;
		}
		p->n_keys = r->n_keys - p->first_key;
	}
	qsort(r->index, r->n_keys, sizeof *r->index, cmp_kidp);
	r->kids = malloc((r->n_keys ? r->n_keys : 1) * sizeof *r->kids);
	if (r->kids == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "/signed/principals", NULL);
	for (size_t i = 0; i < r->n_keys; i++)
		memcpy(r->kids[i], r->index[i]->kid, 32);
	for (size_t i = 1; i < r->n_keys; i++)
		if (memcmp(r->index[i - 1]->kid, r->index[i]->kid, 32) == 0)
			return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, "/signed/principals",
			                     "key %s appears under two entries (principals %s and %s)",
			                     r->index[i]->kid_hex, r->index[i - 1]->owner->id,
			                     r->index[i]->owner->id);
	/* the same key under two kids: compare the keys themselves (the kid
	 * check above only sees one encoding) */
	if (r->n_keys > 1) {
		const trust_key **byfp = malloc(r->n_keys * sizeof *byfp);
		if (byfp == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "/signed/principals", NULL);
		for (size_t i = 0; i < r->n_keys; i++)
			byfp[i] = &r->keys[i];
		qsort(byfp, r->n_keys, sizeof *byfp, cmp_fpp);
		for (size_t i = 1; i < r->n_keys; i++)
			if (memcmp(byfp[i - 1]->kr->fp, byfp[i]->kr->fp, 32) == 0) {
				rc = ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, "/signed/principals",
				                   "kids %s and %s are the same key (principals %s and %s)",
				                   byfp[i - 1]->kid_hex, byfp[i]->kid_hex,
				                   byfp[i - 1]->owner->id, byfp[i]->owner->id);
				free(byfp);
				return rc;
			}
		free(byfp);
	}
	if (n > 1) {
		const char **ids = malloc(n * sizeof *ids);
		if (ids == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "/signed/principals", NULL);
		for (size_t i = 0; i < n; i++)
			ids[i] = r->pr[i].id;
		qsort(ids, n, sizeof *ids, cmp_strp);
		for (size_t i = 1; i < n; i++)
			if (strcmp(ids[i - 1], ids[i]) == 0) {
				rc = ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_PRINCIPAL,
				                   "/signed/principals", "principal id \"%s\" appears twice",
				                   ids[i]);
				free(ids);
				return rc;
			}
		free(ids);
	}
	return OTA_OK;
}

static ota_err parse_signatures(ota_trust_root *r, const json_t *arr, ota_error *err)
{
	static const char *const allowed[] = {"keyid", "sig", NULL};
	char where[W_SIZE];
	ota_err rc;
	r->sigs = calloc(OTA_MAX_TRUST_ROOT_KEYS, sizeof *r->sigs);
	if (r->sigs == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "/signatures", NULL);
	if (!json_is_array(arr) || json_array_size(arr) > OTA_MAX_TRUST_ROOT_KEYS)
		return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, "/signatures",
		                     "signatures must be an array of at most %u entries",
		                     OTA_MAX_TRUST_ROOT_KEYS);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *e = json_array_get(arr, i);
		const char *kid_hex = NULL, *sig_hex = NULL;
		char kh[65];
		snprintf(where, sizeof where, "/signatures/%zu", i);
		if (!json_is_object(e))
			return malformed(err, where, "a signature must be an object");
		if ((rc = only_members(e, allowed, where, err)) != OTA_OK ||
		    (rc = get_str(e, "keyid", &kid_hex, where, err)) != OTA_OK ||
		    (rc = get_str(e, "sig", &sig_hex, where, err)) != OTA_OK)
			return rc;
		trust_sig *s = &r->sigs[i];
		if ((rc = get_kid(kid_hex, s->kid, kh, where, err)) != OTA_OK)
			return rc;
		size_t hl = strlen(sig_hex);
		if (hl == 0 || hl % 2 != 0 || hl > 2 * OTA_MAX_SIG_BYTES)
			return malformed(err, where, "sig must be hex of at most 1024 bytes");
		s->sig = malloc(hl / 2);
		if (s->sig == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, where, NULL);
		r->n_sigs = i + 1;
		if (ota_hex_decode(sig_hex, hl, (ota_buf){s->sig, hl / 2}, &s->len) != OTA_OK)
			return malformed(err, where, "sig must be hex");
		for (size_t j = 0; j < i; j++)
			if (memcmp(r->sigs[j].kid, s->kid, 32) == 0)
				return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_SIGNATURE, where,
				                     "key %s signed twice", kh);
	}
	return OTA_OK;
}

static ota_err parse_signed(ota_trust_root *r, const ota_trust_root *cache, ota_error *err)
{
	static const char *const allowed[] = {"kind",    "trust_domain", "version",
	                                      "prev",    "issued_at",    "expires",
	                                      "root",    "principals",   NULL};
	const json_t *s = r->signed_;
	ota_err rc;
	if (!json_is_object(s))
		return malformed(err, "/signed", "signed must be an object");
	/* The version first: an absurd one is refused before any key is loaded. */
	const json_t *v = json_object_get(s, "version");
	if (!json_is_integer(v))
		return malformed(err, "/signed/version", "version must be an integer");
	if (json_integer_value(v) > OTA_MAX_TRUST_VERSION || json_integer_value(v) < 1)
		return ota_error_set(err, OTA_ERR_TRUST_VERSION_ABSURD, "/signed/version",
		                     "version %lld is outside 1..%lld",
		                     (long long)json_integer_value(v), (long long)OTA_MAX_TRUST_VERSION);
	r->version = (int64_t)json_integer_value(v);
	if ((rc = only_members(s, allowed, "/signed", err)) != OTA_OK)
		return rc;
	const char *kind = NULL;
	if ((rc = get_str(s, "kind", &kind, "/signed", err)) != OTA_OK)
		return rc;
	if (strcmp(kind, OTA_TRUST_KIND) != 0)
		return malformed(err, "/signed/kind", "kind must be " OTA_TRUST_KIND);
	if ((rc = get_str(s, "trust_domain", &r->domain, "/signed", err)) != OTA_OK)
		return rc;
	if (!trust_name_ok(r->domain) || strchr(r->domain, '*') != NULL)
		return malformed(err, "/signed/trust_domain",
		                 "trust_domain must be 1-256 printable characters without '*'");
	const json_t *prev = json_object_get(s, "prev");
	if (r->version == 1 && prev != NULL)
		return malformed(err, "/signed/prev", "version 1 has no prev");
	if (r->version > 1) {
		const char *p = NULL;
		if ((rc = get_str(s, "prev", &p, "/signed", err)) != OTA_OK)
			return rc;
		if (!ota_id_is_valid(p))
			return malformed(err, "/signed/prev", "prev must be sha256: and 64 hex digits");
		memcpy(r->prev, p, OTA_ID_LEN + 1);
		r->has_prev = true;
	}
	if ((rc = get_int(s, "issued_at", true, 0, INT64_MAX, &r->issued_at, NULL, "/signed",
	                  err)) != OTA_OK ||
	    (rc = get_int(s, "expires", true, 0, INT64_MAX, &r->expires, NULL, "/signed", err)) !=
	            OTA_OK)
		return rc;
	if (r->expires <= r->issued_at)
		return malformed(err, "/signed/expires", "expires must be after issued_at");
	if (!json_is_array(json_object_get(s, "principals")))
		return malformed(err, "/signed/principals", "principals must be an array");
	return parse_root_role(r, json_object_get(s, "root"), cache, err);
}

ota_err trust_root_load_principals(ota_trust_root *r, const ota_trust_root *cache, ota_error *err)
{
	if (r->principals_loaded)
		return OTA_OK;
	ota_err rc = parse_principals(r, json_object_get(r->signed_, "principals"), cache, err);
	if (rc == OTA_OK)
		r->principals_loaded = true;
	return rc;
}

ota_err trust_root_parse_cached(ota_bytes in, const ota_trust_root *cache, bool defer,
                                ota_trust_root **out, ota_error *err)
{
	*out = NULL;
	if (in.len > OTA_MAX_TRUST_ROOT_BYTES)
		return ota_error_set(err, OTA_ERR_TRUST_TOO_LARGE, "snapshot",
		                     "%zu bytes, limit is %u", in.len, OTA_MAX_TRUST_ROOT_BYTES);
	json_t *doc = NULL;
	ota_err rc = ota_json_parse(in, &doc, err);
	if (rc != OTA_OK)
		return rc;
	ota_trust_root *r = calloc(1, sizeof *r);
	if (r == NULL) {
		json_decref(doc);
		return ota_error_set(err, OTA_ERR_NOMEM, "snapshot", NULL);
	}
	static const char *const top[] = {"signed", "signatures", NULL};
	if (!json_is_object(doc)) {
		rc = malformed(err, "/", "a snapshot is an object {signed, signatures}");
		goto fail;
	}
	if ((rc = only_members(doc, top, "/", err)) != OTA_OK)
		goto fail;
	r->signed_ = json_incref(json_object_get(doc, "signed"));
	if (r->signed_ == NULL) {
		rc = malformed(err, "/signed", "missing signed");
		goto fail;
	}
	if ((rc = parse_signed(r, cache, err)) != OTA_OK)
		goto fail;
	if ((rc = ota_jcs_serialize(r->signed_, &r->tbs, &r->tbs_len, err)) != OTA_OK)
		goto fail;
	if ((rc = ota_sha256_id(ota_bytes_make(r->tbs, r->tbs_len), r->identity)) != OTA_OK) {
		rc = ota_error_set(err, rc, "snapshot", "cannot hash");
		goto fail;
	}
	if ((rc = parse_signatures(r, json_object_get(doc, "signatures"), err)) != OTA_OK)
		goto fail;
	if (!defer && (rc = trust_root_load_principals(r, cache, err)) != OTA_OK)
		goto fail;
	json_decref(doc);
	*out = r;
	return OTA_OK;
fail:
	json_decref(doc);
	ota_trust_root_free(r);
	return rc;
}

ota_err ota_trust_root_parse(ota_bytes in, ota_trust_root **out, ota_error *err)
{
	return trust_root_parse_cached(in, NULL, false, out, err);
}

ota_err ota_trust_root_parse_sharing(ota_bytes in, const ota_trust_root *keys_of,
                                     ota_trust_root **out, ota_error *err)
{
	return trust_root_parse_cached(in, keys_of, false, out, err);
}

ota_err ota_trust_root_parse_unloaded(ota_bytes in, const ota_trust_root *keys_of,
                                      ota_trust_root **out, ota_error *err)
{
	return trust_root_parse_cached(in, keys_of, true, out, err);
}

/* ---- accessors ---- */

const char *ota_trust_root_domain(const ota_trust_root *r)
{
	return r->domain;
}
int64_t ota_trust_root_version(const ota_trust_root *r)
{
	return r->version;
}
const char *ota_trust_root_identity(const ota_trust_root *r)
{
	return r->identity;
}
const char *ota_trust_root_prev(const ota_trust_root *r)
{
	return r->has_prev ? r->prev : NULL;
}
int64_t ota_trust_root_issued_at(const ota_trust_root *r)
{
	return r->issued_at;
}
int64_t ota_trust_root_expires(const ota_trust_root *r)
{
	return r->expires;
}
unsigned ota_trust_root_threshold(const ota_trust_root *r)
{
	return r->threshold;
}
size_t ota_trust_root_root_key_count(const ota_trust_root *r)
{
	return r->n_rk;
}
size_t ota_trust_root_principal_count(const ota_trust_root *r)
{
	return r->n_pr;
}
size_t ota_trust_root_key_count(const ota_trust_root *r)
{
	return r->n_keys;
}
size_t ota_trust_root_signature_count(const ota_trust_root *r)
{
	return r->n_sigs;
}
const ota_trust_principal *ota_trust_root_principal(const ota_trust_root *r, size_t i)
{
	return i < r->n_pr ? &r->pr[i] : NULL;
}
const char *ota_trust_principal_id(const ota_trust_principal *p)
{
	return p->id;
}
ota_trust_role ota_trust_principal_role(const ota_trust_principal *p)
{
	return p->role;
}

/* ---- signing and serialization ---- */

ota_err ota_trust_root_sign(ota_trust_root *r, const ota_key *key, const ota_trust_root *prev,
                            ota_error *err)
{
	uint8_t kid[32];
	if (key == NULL || !ota_key_has_private(key))
		return ota_error_set(err, OTA_ERR_KEY_PRIVATE_REQUIRED, "sign",
		                     "signing needs a private key");
	if (ota_key_kid(key, kid) != OTA_OK)
		return ota_error_set(err, OTA_ERR_CRYPTO, "sign", "cannot compute kid");
	const trust_key *rk = trust_find_root_key(r, kid);
	if (rk == NULL && prev != NULL)
		rk = trust_find_root_key(prev, kid);
	if (rk == NULL)
		return ota_error_set(err, OTA_ERR_TRUST_SIGNER_NOT_ROOT, "sign",
		                     "key is not a root key of version %lld%s",
		                     (long long)r->version, prev != NULL ? " or its predecessor" : "");
	uint8_t sig[OTA_MAX_SIG_BYTES];
	size_t sig_len = 0;
	ota_err rc = ota_key_sign(key, rk->alg, ota_bytes_make(r->tbs, r->tbs_len),
	                          (ota_buf){sig, sizeof sig}, &sig_len);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "sign", "signing failed");
	uint8_t *copy = malloc(sig_len);
	if (copy == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "sign", NULL);
	memcpy(copy, sig, sig_len);
	size_t i;
	for (i = 0; i < r->n_sigs; i++)
		if (memcmp(r->sigs[i].kid, kid, 32) == 0)
			break;
	if (i == r->n_sigs) {
		if (r->n_sigs >= OTA_MAX_TRUST_ROOT_KEYS) {
			free(copy);
			return ota_error_set(err, OTA_ERR_TRUST_MALFORMED, "sign", "too many signatures");
		}
		r->n_sigs++;
	}
	free(r->sigs[i].sig);
	memcpy(r->sigs[i].kid, kid, 32);
	r->sigs[i].sig = copy;
	r->sigs[i].len = sig_len;
	return OTA_OK;
}

void ota_trust_root_clear_signatures(ota_trust_root *r)
{
	for (size_t i = 0; i < r->n_sigs; i++) {
		free(r->sigs[i].sig);
		r->sigs[i].sig = NULL;
	}
	r->n_sigs = 0;
}

static json_t *signatures_json(const ota_trust_root *r)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < r->n_sigs; i++) {
		char kh[65];
		char *sh = malloc(2 * r->sigs[i].len + 1);
		if (sh == NULL) {
			json_decref(a);
			return NULL;
		}
		ota_hex_encode(ota_bytes_make(r->sigs[i].kid, 32), kh);
		ota_hex_encode(ota_bytes_make(r->sigs[i].sig, r->sigs[i].len), sh);
		if (json_array_append_new(a, json_pack("{s:s, s:s}", "keyid", kh, "sig", sh)) != 0) {
			free(sh);
			json_decref(a);
			return NULL;
		}
		free(sh);
	}
	return a;
}

ota_err ota_trust_root_serialize(const ota_trust_root *r, char **out, size_t *out_len,
                                 ota_error *err)
{
	*out = NULL;
	if (out_len != NULL)
		*out_len = 0;
	json_t *sigs = signatures_json(r);
	json_t *doc = sigs != NULL ? json_pack("{s:O, s:o}", "signed", r->signed_, "signatures",
	                                       sigs)
	                           : NULL;
	if (doc == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "serialize", NULL);
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(doc);
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "serialize", NULL);
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (t == NULL) {
		free(s);
		return ota_error_set(err, OTA_ERR_NOMEM, "serialize", NULL);
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	*out = t;
	if (out_len != NULL)
		*out_len = n + 1;
	return OTA_OK;
}

static const char *key_status(const trust_key *k, int64_t at)
{
	if (k->has_revoked && k->revoked_at <= at)
		return "revoked";
	if (at < k->valid_from)
		return "not_yet_valid";
	if (k->has_until && at >= k->valid_until)
		return "expired";
	return "valid";
}

void *ota_trust_root_summary(const ota_trust_root *r, int64_t at)
{
	char t1[32], t2[32];
	ota_trust_time_format(r->issued_at, t1);
	ota_trust_time_format(r->expires, t2);
	json_t *o = json_pack("{s:s, s:I, s:s, s:s?, s:s, s:s, s:b, s:I}", "trust_domain",
	                      r->domain, "version", (json_int_t)r->version, "identity",
	                      r->identity, "prev", r->has_prev ? r->prev : NULL, "issued_at", t1,
	                      "expires", t2, "expired", at >= r->expires, "signatures",
	                      (json_int_t)r->n_sigs);
	if (o == NULL)
		return NULL;
	json_t *rk = json_array();
	for (size_t i = 0; rk != NULL && i < r->n_rk; i++)
		json_array_append_new(rk, json_pack("{s:s, s:s}", "kid", r->rk[i].kid_hex, "alg",
		                                    ota_alg_name(r->rk[i].alg)));
	json_object_set_new(o, "root", json_pack("{s:I, s:o*}", "threshold",
	                                         (json_int_t)r->threshold, "keys", rk));
	json_t *ps = json_array();
	for (size_t i = 0; ps != NULL && i < r->n_pr; i++) {
		const ota_trust_principal *p = &r->pr[i];
		json_t *sc = json_object();
		for (int d = 0; sc != NULL && d < SCOPE_N; d++) {
			json_t *a = json_array();
			for (size_t j = 0; a != NULL && j < p->n_scopes[d]; j++)
				json_array_append_new(a, json_string(p->scopes[d][j]));
			json_object_set_new(sc, scope_fields[d], a);
		}
		json_t *ks = json_array();
		for (size_t j = 0; ks != NULL && j < p->n_keys; j++) {
			const trust_key *k = &r->keys[p->first_key + j];
			json_t *kj = json_pack("{s:s, s:s, s:I, s:s}", "kid", k->kid_hex, "alg",
			                       ota_alg_name(k->alg), "valid_from",
			                       (json_int_t)k->valid_from, "status", key_status(k, at));
			if (kj != NULL && k->has_until)
				json_object_set_new(kj, "valid_until", json_integer(k->valid_until));
			if (kj != NULL && k->has_revoked)
				json_object_set_new(kj, "revoked_at", json_integer(k->revoked_at));
			json_array_append_new(ks, kj);
		}
		json_array_append_new(ps, json_pack("{s:s, s:s, s:o*, s:o*}", "id", p->id, "role",
		                                    ota_trust_role_name(p->role), "scopes", sc,
		                                    "keys", ks));
	}
	json_object_set_new(o, "principals", ps);
	return o;
}
