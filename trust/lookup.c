/* Key lookup for verify/: by kid, with alg, role, scope and validity checks. */
#include <string.h>

#include "trust_internal.h"

bool ota_trust_scope_match(const char *pattern, const char *value)
{
	if (pattern == NULL || value == NULL)
		return false;
	if (strcmp(pattern, "*") == 0)
		return true;
	size_t pl = strlen(pattern);
	if (pl > 0 && pattern[pl - 1] == '*') {
		size_t prefix = pl - 1;
		if (strncmp(pattern, value, prefix) != 0)
			return false;
		const char *rest = value + prefix;
		return rest[0] != '\0' && strchr(rest, '/') == NULL;
	}
	return strcmp(pattern, value) == 0;
}

static bool scope_ok(const ota_trust_principal *p, int dim, const char *value)
{
	if (value == NULL)
		return true;
	for (size_t i = 0; i < p->n_scopes[dim]; i++)
		if (ota_trust_scope_match(p->scopes[dim][i], value))
			return true;
	return false;
}

ota_err ota_trust_lookup(const ota_trust_root *r, ota_bytes kid, ota_alg alg, ota_trust_role role,
                         const ota_trust_scope_req *scope, int64_t at, const ota_key **key_out,
                         const ota_trust_principal **who_out, ota_error *err)
{
	if (key_out != NULL)
		*key_out = NULL;
	if (who_out != NULL)
		*who_out = NULL;
	if (kid.len != 32 || kid.ptr == NULL)
		return ota_error_set(err, OTA_ERR_TRUST_KEY_UNKNOWN, "kid",
		                     "a kid is 32 bytes (SHA-256 of the SPKI), got %zu", kid.len);
	const trust_key *k = trust_find_key(r, kid.ptr);
	if (k == NULL) {
		char hex[65];
		ota_hex_encode(kid, hex);
		return ota_error_set(err, OTA_ERR_TRUST_KEY_UNKNOWN, "kid",
		                     "no key %s in %s version %lld", hex, r->domain,
		                     (long long)r->version);
	}
	const ota_trust_principal *p = k->owner;
	if (alg != k->alg)
		return ota_error_set(err, OTA_ERR_TRUST_ALG_MISMATCH, p->id,
		                     "key %s is declared %s, used with %s", k->kid_hex,
		                     ota_alg_name(k->alg), ota_alg_name(alg));
	if (role != p->role)
		return ota_error_set(err, OTA_ERR_TRUST_ROLE_MISMATCH, p->id,
		                     "principal is a %s, a %s is required", ota_trust_role_name(p->role),
		                     ota_trust_role_name(role));
	if (scope != NULL) {
		const char *vals[SCOPE_N] = {scope->repo, scope->lane, scope->provider_target};
		for (int d = 0; d < SCOPE_N; d++)
			if (!scope_ok(p, d, vals[d]))
				return ota_error_set(err, OTA_ERR_TRUST_SCOPE_MISMATCH, p->id,
				                     "\"%.100s\" is outside its %s", vals[d],
				                     trust_scope_field(d));
	}
	if (k->has_revoked && k->revoked_at <= at)
		return ota_error_set(err, OTA_ERR_TRUST_KEY_REVOKED, p->id,
		                     "key %s revoked at %lld, acceptance time %lld", k->kid_hex,
		                     (long long)k->revoked_at, (long long)at);
	if (at < k->valid_from)
		return ota_error_set(err, OTA_ERR_TRUST_KEY_NOT_YET_VALID, p->id,
		                     "key %s valid from %lld, acceptance time %lld", k->kid_hex,
		                     (long long)k->valid_from, (long long)at);
	if (k->has_until && at >= k->valid_until)
		return ota_error_set(err, OTA_ERR_TRUST_KEY_EXPIRED, p->id,
		                     "key %s valid until %lld, acceptance time %lld", k->kid_hex,
		                     (long long)k->valid_until, (long long)at);
	if (key_out != NULL)
		*key_out = k->kr->key;
	if (who_out != NULL)
		*who_out = p;
	return OTA_OK;
}
