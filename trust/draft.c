/*
 * Drafts: editing the `signed` body of the next snapshot. Every edit works
 * on JSON; ota_trust_draft_finish re-parses strictly.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "trust_internal.h"

struct ota_trust_draft {
	json_t *s; /* own reference: the signed body */
};

void ota_trust_draft_free(ota_trust_draft *d)
{
	if (d == NULL)
		return;
	json_decref(d->s);
	free(d);
}

static ota_err draft_wrap(json_t *s, ota_trust_draft **out, ota_error *err)
{
	*out = NULL;
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "draft", NULL);
	ota_trust_draft *d = calloc(1, sizeof *d);
	if (d == NULL) {
		json_decref(s);
		return ota_error_set(err, OTA_ERR_NOMEM, "draft", NULL);
	}
	d->s = s;
	*out = d;
	return OTA_OK;
}

/* {kid, alg, public_key} for a key (public part). */
static ota_err key_entry(const ota_key *key, ota_alg alg, json_t **out, ota_error *err)
{
	*out = NULL;
	uint8_t kid[32];
	char kh[65];
	char *pem = NULL;
	if (alg == OTA_ALG_NONE)
		alg = ota_key_default_alg(key);
	if (!trust_alg_fits(key, alg))
		return ota_error_set(err, OTA_ERR_ALG_KEY_MISMATCH, "key",
		                     "alg %s does not fit the %s key%s", ota_alg_name(alg),
		                     ota_key_type_name(key),
		                     alg == OTA_ALG_EDDSA ? " (EdDSA means Ed25519)" : "");
	if (ota_key_kid(key, kid) != OTA_OK || ota_key_public_pem(key, &pem) != OTA_OK)
		return ota_error_set(err, OTA_ERR_CRYPTO, "key", "cannot encode the public key");
	ota_hex_encode(ota_bytes_make(kid, 32), kh);
	*out = json_pack("{s:s, s:s, s:s}", "kid", kh, "alg", ota_alg_name(alg), "public_key", pem);
	free(pem);
	return *out != NULL ? OTA_OK : ota_error_set(err, OTA_ERR_NOMEM, "key", NULL);
}

static bool times_ok(int64_t issued_at, int64_t expires)
{
	return issued_at >= 0 && expires > issued_at && expires <= OTA_JSON_MAX_SAFE_INT;
}

ota_err ota_trust_draft_new(const char *domain, const ota_key *const *root_keys, size_t n,
                            unsigned threshold, int64_t issued_at, int64_t expires,
                            ota_trust_draft **out, ota_error *err)
{
	*out = NULL;
	if (domain == NULL || !trust_name_ok(domain) || strchr(domain, '*') != NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "trust_domain",
		                     "a domain is 1-256 printable characters without '*'");
	if (n == 0 || n > OTA_MAX_TRUST_ROOT_KEYS || threshold == 0 || threshold > n)
		return ota_error_set(err, OTA_ERR_USAGE, "root",
		                     "need 1..%u root keys and a threshold of 1..keys",
		                     OTA_MAX_TRUST_ROOT_KEYS);
	if (!times_ok(issued_at, expires))
		return ota_error_set(err, OTA_ERR_USAGE, "expires", "expires must be after issued_at");
	json_t *keys = json_array();
	for (size_t i = 0; keys != NULL && i < n; i++) {
		json_t *e;
		ota_err rc = key_entry(root_keys[i], OTA_ALG_NONE, &e, err);
		if (rc != OTA_OK) {
			json_decref(keys);
			return rc;
		}
		json_array_append_new(keys, e);
	}
	json_t *s = json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:I, s:o}, s:[]}", "kind",
	                      OTA_TRUST_KIND, "trust_domain", domain, "version", (json_int_t)1,
	                      "issued_at", (json_int_t)issued_at, "expires", (json_int_t)expires,
	                      "root", "threshold", (json_int_t)threshold, "keys", keys,
	                      "principals");
	return draft_wrap(s, out, err);
}

ota_err ota_trust_draft_from(const ota_trust_root *r, ota_trust_draft **out, ota_error *err)
{
	return draft_wrap(json_deep_copy(r->signed_), out, err);
}

ota_err ota_trust_draft_next(const ota_trust_root *cur, int64_t issued_at, int64_t expires,
                             ota_trust_draft **out, ota_error *err)
{
	*out = NULL;
	if (cur->version >= OTA_MAX_TRUST_VERSION)
		return ota_error_set(err, OTA_ERR_TRUST_VERSION_ABSURD, "version", "no next version");
	if (!times_ok(issued_at, expires))
		return ota_error_set(err, OTA_ERR_USAGE, "expires", "expires must be after issued_at");
	json_t *s = json_deep_copy(cur->signed_);
	if (s == NULL || json_object_set_new(s, "version", json_integer(cur->version + 1)) != 0 ||
	    json_object_set_new(s, "prev", json_string(cur->identity)) != 0 ||
	    json_object_set_new(s, "issued_at", json_integer(issued_at)) != 0 ||
	    json_object_set_new(s, "expires", json_integer(expires)) != 0) {
		json_decref(s);
		return ota_error_set(err, OTA_ERR_NOMEM, "draft", NULL);
	}
	return draft_wrap(s, out, err);
}

ota_err ota_trust_draft_set_times(ota_trust_draft *d, int64_t issued_at, int64_t expires,
                                  ota_error *err)
{
	if (!times_ok(issued_at, expires))
		return ota_error_set(err, OTA_ERR_USAGE, "expires", "expires must be after issued_at");
	if (json_object_set_new(d->s, "issued_at", json_integer(issued_at)) != 0 ||
	    json_object_set_new(d->s, "expires", json_integer(expires)) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, "draft", NULL);
	return OTA_OK;
}

static json_t *find_principal(ota_trust_draft *d, const char *id)
{
	json_t *ps = json_object_get(d->s, "principals");
	size_t i;
	json_t *p;
	json_array_foreach(ps, i, p) {
		const char *pid = json_string_value(json_object_get(p, "id"));
		if (pid != NULL && strcmp(pid, id) == 0)
			return p;
	}
	return NULL;
}

static ota_err pattern_array(const char *const *v, size_t n, const char *what, json_t **out,
                             ota_error *err)
{
	*out = json_array();
	if (*out == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, what, NULL);
	if (n > OTA_MAX_TRUST_SCOPES)
		return ota_error_set(err, OTA_ERR_USAGE, what, "too many patterns");
	for (size_t i = 0; i < n; i++) {
		if (!trust_pattern_ok(v[i]))
			return ota_error_set(err, OTA_ERR_USAGE, what,
			                     "\"%.64s\": a pattern is printable, '*' only at its end",
			                     v[i]);
		json_array_append_new(*out, json_string(v[i]));
	}
	return OTA_OK;
}

ota_err ota_trust_draft_add_principal(ota_trust_draft *d, const char *id, ota_trust_role role,
                                      const char *const *repos, size_t n_repos,
                                      const char *const *lanes, size_t n_lanes,
                                      const char *const *targets, size_t n_targets,
                                      ota_error *err)
{
	if (id == NULL || !trust_name_ok(id))
		return ota_error_set(err, OTA_ERR_USAGE, "id", "an id is 1-256 printable characters");
	if (strcmp(ota_trust_role_name(role), "unknown") == 0)
		return ota_error_set(err, OTA_ERR_USAGE, "role", "unknown role");
	if (find_principal(d, id) != NULL)
		return ota_error_set(err, OTA_ERR_EXISTS, id, "principal already exists");
	json_t *a[3] = {NULL, NULL, NULL};
	ota_err rc;
	if ((rc = pattern_array(repos, n_repos, "repos", &a[0], err)) != OTA_OK ||
	    (rc = pattern_array(lanes, n_lanes, "lanes", &a[1], err)) != OTA_OK ||
	    (rc = pattern_array(targets, n_targets, "provider_targets", &a[2], err)) != OTA_OK) {
		for (int i = 0; i < 3; i++)
			json_decref(a[i]);
		return rc;
	}
	json_t *p = json_pack("{s:s, s:s, s:{s:o, s:o, s:o}, s:[]}", "id", id, "role",
	                      ota_trust_role_name(role), "scopes", "repos", a[0], "lanes", a[1],
	                      "provider_targets", a[2], "keys");
	if (p == NULL || json_array_append_new(json_object_get(d->s, "principals"), p) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, id, NULL);
	return OTA_OK;
}

/* The key entry with this kid (hex) among principals, or NULL. */
static json_t *find_key_entry(ota_trust_draft *d, const char *kid_hex)
{
	json_t *ps = json_object_get(d->s, "principals");
	size_t i, j;
	json_t *p, *k;
	json_array_foreach(ps, i, p) {
		json_array_foreach(json_object_get(p, "keys"), j, k) {
			const char *h = json_string_value(json_object_get(k, "kid"));
			if (h != NULL && strcmp(h, kid_hex) == 0)
				return k;
		}
	}
	return NULL;
}

/*
 * The principal key entry holding the same public key as key, under any
 * kid, or NULL: entries are loaded and compared with EVP_PKEY_eq (an entry
 * that does not load is left to ota_trust_draft_finish to refuse).
 */
static json_t *find_same_key(ota_trust_draft *d, const ota_key *key)
{
	json_t *ps = json_object_get(d->s, "principals");
	size_t i, j;
	json_t *p, *k;
	json_array_foreach(ps, i, p) {
		json_array_foreach(json_object_get(p, "keys"), j, k) {
			const char *pem = json_string_value(json_object_get(k, "public_key"));
			ota_key *other = NULL;
			if (pem == NULL ||
			    ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &other, NULL) != OTA_OK)
				continue;
			bool same = EVP_PKEY_eq(ota_key_evp(other), ota_key_evp(key)) == 1;
			ota_key_free(other);
			if (same)
				return k;
		}
	}
	ERR_clear_error();
	return NULL;
}

ota_err ota_trust_draft_add_key(ota_trust_draft *d, const char *principal, const ota_key *key,
                                ota_alg alg, int64_t valid_from, int64_t valid_until,
                                ota_error *err)
{
	json_t *p = find_principal(d, principal);
	if (p == NULL)
		return ota_error_set(err, OTA_ERR_NOT_FOUND, principal, "no such principal");
	if (valid_from < 0 || (valid_until > 0 && valid_until <= valid_from))
		return ota_error_set(err, OTA_ERR_USAGE, "valid_until",
		                     "valid_until must be after valid_from");
	json_t *e;
	ota_err rc = key_entry(key, alg, &e, err);
	if (rc != OTA_OK)
		return rc;
	if (find_key_entry(d, json_string_value(json_object_get(e, "kid"))) != NULL) {
		json_decref(e);
		return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, principal,
		                     "the key is already in the trust root");
	}
	const json_t *same = find_same_key(d, key);
	if (same != NULL) {
		rc = ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, principal,
		                   "the key is already in the trust root under kid %.64s",
		                   json_string_value(json_object_get(same, "kid")));
		json_decref(e);
		return rc;
	}
	json_object_set_new(e, "valid_from", json_integer(valid_from));
	if (valid_until > 0)
		json_object_set_new(e, "valid_until", json_integer(valid_until));
	if (json_array_append_new(json_object_get(p, "keys"), e) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, principal, NULL);
	return OTA_OK;
}

ota_err ota_trust_draft_revoke_key(ota_trust_draft *d, ota_bytes kid, int64_t revoked_at,
                                   ota_error *err)
{
	char kh[65];
	if (kid.len != 32)
		return ota_error_set(err, OTA_ERR_USAGE, "kid", "a kid is 32 bytes");
	if (revoked_at < 0)
		return ota_error_set(err, OTA_ERR_USAGE, "revoked_at", "negative time");
	ota_hex_encode(kid, kh);
	json_t *k = find_key_entry(d, kh);
	if (k == NULL)
		return ota_error_set(err, OTA_ERR_NOT_FOUND, kh, "no principal key with this kid");
	const json_t *old = json_object_get(k, "revoked_at");
	if (json_is_integer(old) && json_integer_value(old) <= revoked_at)
		return OTA_OK; /* never move a revocation later */
	if (json_object_set_new(k, "revoked_at", json_integer(revoked_at)) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, kh, NULL);
	return OTA_OK;
}

ota_err ota_trust_draft_add_root_key(ota_trust_draft *d, const ota_key *key, ota_error *err)
{
	json_t *keys = json_object_get(json_object_get(d->s, "root"), "keys");
	json_t *e;
	ota_err rc = key_entry(key, OTA_ALG_NONE, &e, err);
	if (rc != OTA_OK)
		return rc;
	const char *kh = json_string_value(json_object_get(e, "kid"));
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k) {
		if (strcmp(json_string_value(json_object_get(k, "kid")), kh) == 0) {
			json_decref(e);
			return ota_error_set(err, OTA_ERR_TRUST_DUPLICATE_KEY, "root",
			                     "the key is already a root key");
		}
	}
	if (json_array_size(keys) >= OTA_MAX_TRUST_ROOT_KEYS) {
		json_decref(e);
		return ota_error_set(err, OTA_ERR_USAGE, "root", "too many root keys");
	}
	if (json_array_append_new(keys, e) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, "root", NULL);
	return OTA_OK;
}

ota_err ota_trust_draft_remove_root_key(ota_trust_draft *d, ota_bytes kid, ota_error *err)
{
	char kh[65];
	if (kid.len != 32)
		return ota_error_set(err, OTA_ERR_USAGE, "kid", "a kid is 32 bytes");
	ota_hex_encode(kid, kh);
	json_t *keys = json_object_get(json_object_get(d->s, "root"), "keys");
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k) {
		if (strcmp(json_string_value(json_object_get(k, "kid")), kh) == 0) {
			json_array_remove(keys, i);
			return OTA_OK;
		}
	}
	return ota_error_set(err, OTA_ERR_NOT_FOUND, kh, "no root key with this kid");
}

void ota_trust_draft_clear_root_keys(ota_trust_draft *d)
{
	json_array_clear(json_object_get(json_object_get(d->s, "root"), "keys"));
}

ota_err ota_trust_draft_set_threshold(ota_trust_draft *d, unsigned threshold, ota_error *err)
{
	if (threshold == 0 || threshold > OTA_MAX_TRUST_ROOT_KEYS)
		return ota_error_set(err, OTA_ERR_USAGE, "threshold", "threshold out of range");
	if (json_object_set_new(json_object_get(d->s, "root"), "threshold",
	                        json_integer(threshold)) != 0)
		return ota_error_set(err, OTA_ERR_NOMEM, "threshold", NULL);
	return OTA_OK;
}

ota_err ota_trust_draft_finish(const ota_trust_draft *d, ota_trust_root **out, ota_error *err)
{
	*out = NULL;
	json_t *doc = json_pack("{s:O, s:[]}", "signed", d->s, "signatures");
	char *text = NULL;
	size_t len = 0;
	ota_err rc = doc != NULL ? ota_jcs_serialize(doc, &text, &len, err)
	                         : ota_error_set(err, OTA_ERR_NOMEM, "draft", NULL);
	json_decref(doc);
	if (rc != OTA_OK)
		return rc;
	rc = ota_trust_root_parse(ota_bytes_make(text, len), out, err);
	free(text);
	return rc;
}
