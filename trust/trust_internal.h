/* trust/trust_internal.h - private representation of parsed snapshots. */
#ifndef OTA_TRUST_INTERNAL_H
#define OTA_TRUST_INTERNAL_H

#include <jansson.h>

#include "ota/json.h"
#include "ota/limits.h"
#include "ota/trust.h"

/*
 * A loaded key shared between the snapshots of one chain (consecutive
 * versions mostly repeat their keys; loading a PEM costs more than a
 * signature verification). Refcounted; only chain verification shares.
 */
typedef struct trust_kref {
	ota_key *key;
	unsigned refs;
	uint8_t fp[32]; /* trust_key_fingerprint of key */
} trust_kref;

typedef struct trust_key {
	uint8_t kid[32];
	char kid_hex[65];
	ota_alg alg;
	trust_kref *kr;
	const char *pem; /* points into the root's signed JSON */
	int64_t valid_from, valid_until, revoked_at;
	bool has_until, has_revoked;
	const ota_trust_principal *owner; /* NULL for root keys */
} trust_key;

enum { SCOPE_REPOS = 0, SCOPE_LANES = 1, SCOPE_TARGETS = 2, SCOPE_N = 3 };

struct ota_trust_principal {
	const char *id;
	ota_trust_role role;
	const char **scopes[SCOPE_N];
	size_t n_scopes[SCOPE_N];
	size_t first_key, n_keys;
};

typedef struct trust_sig {
	uint8_t kid[32];
	uint8_t *sig;
	size_t len;
} trust_sig;

struct ota_trust_root {
	json_t *signed_; /* own reference */
	char *tbs;       /* JCS(signed) */
	size_t tbs_len;
	char identity[OTA_ID_LEN + 1];
	const char *domain;
	int64_t version;
	char prev[OTA_ID_LEN + 1];
	bool has_prev;
	int64_t issued_at, expires;
	unsigned threshold;
	trust_key *rk;
	size_t n_rk;
	ota_trust_principal *pr;
	size_t n_pr;
	trust_key *keys;
	size_t n_keys;
	trust_key **index; /* keys sorted by kid */
	uint8_t (*kids)[32]; /* the same kids, contiguous (cache-friendly search) */
	bool principals_loaded;
	trust_sig *sigs;   /* capacity OTA_MAX_TRUST_ROOT_KEYS */
	size_t n_sigs;
};

/*
 * Parse with an optional cache of already loaded keys (a previous version).
 * With defer, the principals (and their keys, the costly part) are left for
 * trust_root_load_principals: a chain loads them only once the snapshot has
 * shown the previous version's threshold, so unauthenticated input never
 * costs thousands of key loads.
 */
ota_err trust_root_parse_cached(ota_bytes in, const ota_trust_root *cache, bool defer,
                                ota_trust_root **out, ota_error *err);
/* Loads the principals of a deferred parse (no-op when loaded). */
ota_err trust_root_load_principals(ota_trust_root *r, const ota_trust_root *cache,
                                   ota_error *err);
/* The principal key with this kid, or NULL (binary search). */
const trust_key *trust_find_key(const ota_trust_root *r, const uint8_t kid[32]);
/* The root key with this kid, or NULL. */
const trust_key *trust_find_root_key(const ota_trust_root *r, const uint8_t kid[32]);
/*
 * SHA-256 over the public components of pkey (an EVP_PKEY *): the curve and
 * affine x, y (EC), the raw key (EdDSA), n and e (RSA). Equal for every
 * encoding of one key. key_unsupported for other types, crypto_error.
 */
ota_err trust_key_fingerprint(const void *pkey, uint8_t out[32]);
/* alg fits k (ota_key_check_alg), and EdDSA is Ed25519 only. */
bool trust_alg_fits(const ota_key *k, ota_alg alg);
/* Names used in where/what texts. */
const char *trust_scope_field(int dim);
bool trust_name_ok(const char *s);
bool trust_pattern_ok(const char *s);

#endif
