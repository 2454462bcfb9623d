/*
 * The rotation rule (TUF 5.3 plus the prev link) and chain verification.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "trust_internal.h"

/* Per-signature verification results, shared by the old and new counts. */
enum { SIG_UNKNOWN = 0, SIG_OK = 1, SIG_BAD = 2 };

typedef struct {
	unsigned char status;
	ota_alg alg; /* the alg the result was computed under */
} sig_result;

/*
 * Counts distinct keys of keys_of->rk with a verifying signature in r.
 * status (r->n_sigs entries) caches results across calls: one kid is one
 * key (kid = SHA-256 of the canonical SPKI, checked at parse), but not one
 * alg (an RSA root key may be PS256 in one version and PS512 in the next),
 * so a result holds for whichever snapshot declares that kid with the alg
 * it was computed under, and is computed again under another.
 */
static ota_err count_signers(const ota_trust_root *r, const ota_trust_root *keys_of,
                             sig_result *status, unsigned *count, ota_error *err)
{
	const ota_key *counted[OTA_MAX_TRUST_ROOT_KEYS];
	unsigned n = 0;
	*count = 0;
	for (size_t i = 0; i < r->n_sigs; i++) {
		const trust_key *rk = trust_find_root_key(keys_of, r->sigs[i].kid);
		if (rk == NULL)
			continue; /* not a key of this role: ignored, as in TUF */
		if (status[i].status == SIG_UNKNOWN || status[i].alg != rk->alg) {
			ota_err rc = ota_key_verify(rk->kr->key, rk->alg,
			                            ota_bytes_make(r->tbs, r->tbs_len),
			                            ota_bytes_make(r->sigs[i].sig, r->sigs[i].len));
			if (rc == OTA_ERR_NOMEM)
				return ota_error_set(err, rc, "signatures", "verification failed to run");
			status[i].status = rc == OTA_OK ? SIG_OK : SIG_BAD;
			status[i].alg = rk->alg;
		}
		if (status[i].status != SIG_OK)
			continue;
		bool dup = false;
		for (unsigned j = 0; j < n && !dup; j++)
			dup = counted[j] == rk->kr->key ||
			      EVP_PKEY_eq(ota_key_evp(counted[j]), ota_key_evp(rk->kr->key)) == 1;
		if (!dup && n < OTA_MAX_TRUST_ROOT_KEYS)
			counted[n++] = rk->kr->key;
	}
	*count = n;
	return OTA_OK;
}

ota_err ota_trust_root_count_signers(const ota_trust_root *r, const ota_trust_root *keys_of,
                                     unsigned *count, ota_error *err)
{
	sig_result status[OTA_MAX_TRUST_ROOT_KEYS] = {{0}};
	return count_signers(r, keys_of, status, count, err);
}

ota_err ota_trust_root_verify_self(const ota_trust_root *r, ota_error *err)
{
	unsigned n = 0;
	ota_err rc = ota_trust_root_count_signers(r, r, &n, err);
	if (rc != OTA_OK)
		return rc;
	if (n < r->threshold)
		return ota_error_set(err, OTA_ERR_TRUST_THRESHOLD_NEW, "signatures",
		                     "version %lld has %u valid signature(s) of its root keys, "
		                     "threshold is %u",
		                     (long long)r->version, n, r->threshold);
	return OTA_OK;
}

/*
 * The rule of ota_trust_root_accept_next. load, when not NULL, is next
 * itself with its principals still deferred: they are loaded (keys shared
 * with cur) only after next has shown cur's threshold and its place in the
 * chain.
 */
static ota_err accept_impl(const ota_trust_root *cur, const ota_trust_root *next,
                           ota_trust_root *load, bool *same, ota_error *err)
{
	sig_result status[OTA_MAX_TRUST_ROOT_KEYS] = {{0}};
	unsigned n = 0;
	ota_err rc;
	if (same != NULL)
		*same = false;
	if (strcmp(cur->domain, next->domain) != 0)
		return ota_error_set(err, OTA_ERR_TRUST_DOMAIN_MISMATCH, "trust_domain",
		                     "\"%s\" follows \"%s\"", next->domain, cur->domain);
	if (strcmp(cur->identity, next->identity) == 0) {
		if (same != NULL)
			*same = true;
		return OTA_OK;
	}
	if ((rc = count_signers(next, cur, status, &n, err)) != OTA_OK)
		return rc;
	if (n < cur->threshold)
		return ota_error_set(err, OTA_ERR_TRUST_THRESHOLD_OLD, "signatures",
		                     "version %lld has %u valid signature(s) of version %lld's root "
		                     "keys, threshold is %u",
		                     (long long)next->version, n, (long long)cur->version,
		                     cur->threshold);
	if (next->version == cur->version)
		return ota_error_set(err, OTA_ERR_TRUST_EQUIVOCATION, "version",
		                     "two different snapshots of version %lld: %s and %s",
		                     (long long)cur->version, cur->identity, next->identity);
	if (next->version < cur->version)
		return ota_error_set(err, OTA_ERR_TRUST_ROLLBACK, "version",
		                     "version %lld offered after version %lld",
		                     (long long)next->version, (long long)cur->version);
	if (next->version != cur->version + 1)
		return ota_error_set(err, OTA_ERR_TRUST_VERSION_SKIP, "version",
		                     "version %lld follows version %lld", (long long)next->version,
		                     (long long)cur->version);
	if (!next->has_prev || strcmp(next->prev, cur->identity) != 0)
		return ota_error_set(err, OTA_ERR_TRUST_PREV_MISMATCH, "prev",
		                     "version %lld names prev %s, version %lld is %s",
		                     (long long)next->version, next->has_prev ? next->prev : "(none)",
		                     (long long)cur->version, cur->identity);
	if (load != NULL && (rc = trust_root_load_principals(load, cur, err)) != OTA_OK)
		return rc;
	if ((rc = count_signers(next, next, status, &n, err)) != OTA_OK)
		return rc;
	if (n < next->threshold)
		return ota_error_set(err, OTA_ERR_TRUST_THRESHOLD_NEW, "signatures",
		                     "version %lld has %u valid signature(s) of its own root keys, "
		                     "threshold is %u",
		                     (long long)next->version, n, next->threshold);
	for (size_t i = 0; i < cur->n_keys; i++) {
		const trust_key *k = &cur->keys[i];
		if (!k->has_revoked)
			continue;
		const trust_key *nk = trust_find_key(next, k->kid);
		if (nk == NULL || !nk->has_revoked || nk->revoked_at > k->revoked_at)
			return ota_error_set(err, OTA_ERR_TRUST_REVOCATION_DROPPED, "principals",
			                     "key %s revoked at %lld in version %lld is %s in version "
			                     "%lld",
			                     k->kid_hex, (long long)k->revoked_at, (long long)cur->version,
			                     nk == NULL           ? "missing"
			                     : !nk->has_revoked ? "not revoked"
			                                        : "revoked later",
			                     (long long)next->version);
	}
	return OTA_OK;
}

ota_err ota_trust_root_accept_next(const ota_trust_root *cur, const ota_trust_root *next,
                                   bool *same, ota_error *err)
{
	return accept_impl(cur, next, NULL, same, err);
}

/* Equivocation against the durable state: the recorded version must match. */
static ota_err check_state(const ota_trust_root *r, bool have, int64_t sv, const char *sid,
                           ota_error *err)
{
	if (have && r->version == sv && strcmp(r->identity, sid) != 0)
		return ota_error_set(err, OTA_ERR_TRUST_EQUIVOCATION, "state",
		                     "version %lld is %s, but %s was accepted before",
		                     (long long)sv, r->identity, sid);
	return OTA_OK;
}

/* The name of snapshot i of the chain (0: the pinned one, i: chain[i - 1])
 * in errors: its name from o, else "chain[i]" (NULL for the pinned one). */
static const char *snap_name(const ota_trust_verify_opts *o, size_t i, char *buf, size_t cap)
{
	if (i == 0)
		return o->pinned_name;
	if (o->chain_names != NULL && o->chain_names[i - 1] != NULL)
		return o->chain_names[i - 1];
	snprintf(buf, cap, "chain[%zu]", i);
	return buf;
}

/* An error rc about the snapshot named name (may be NULL: nothing done):
 * its where becomes "name: where" ("name" when where was empty). */
static ota_err name_where(ota_error *err, ota_err rc, const char *name)
{
	if (err == NULL || err->code != rc || name == NULL)
		return rc;
	char t[2 * sizeof err->where];
	if (err->where[0] == '\0')
		snprintf(t, sizeof t, "%s", name);
	else
		snprintf(t, sizeof t, "%s: %s", name, err->where);
	size_t len = strlen(t); /* cut at the end: the name stays whole */
	if (len >= sizeof err->where)
		len = sizeof err->where - 1;
	memcpy(err->where, t, len);
	err->where[len] = '\0';
	return rc;
}

/*
 * The walk of ota_trust_chain_verify from cur, the pinned snapshot (its
 * principals may still be deferred): each successor is parsed deferred,
 * sharing the previous version's keys. Takes cur, even on failure;
 * *latest_out is new.
 */
static ota_err chain_walk(ota_trust_root *cur, const ota_bytes *chain, size_t n,
                          const ota_trust_verify_opts *o, ota_trust_root **latest_out,
                          ota_error *err)
{
	ota_err rc;
	char nbuf[32];
	size_t cur_i = 0; /* cur is snapshot cur_i (0: the pinned one) */
	if ((rc = ota_trust_root_verify_self(cur, err)) != OTA_OK ||
	    (rc = trust_root_load_principals(cur, NULL, err)) != OTA_OK) {
		name_where(err, rc, o->pinned_name);
		goto fail;
	}
	bool have = false;
	int64_t sv = 0;
	char sid[OTA_ID_LEN + 1] = "";
	if (o->state != NULL) {
		rc = ota_trust_state_get(o->state, cur->domain, &sv, sid);
		if (rc == OTA_OK)
			have = true;
		else if (rc != OTA_ERR_NOT_FOUND) {
			rc = ota_error_set(err, rc, "state", "cannot read the verifier state");
			goto fail;
		}
	}
	if ((rc = check_state(cur, have, sv, sid, err)) != OTA_OK) {
		name_where(err, rc, o->pinned_name);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		ota_trust_root *next = NULL;
		bool same = false;
		rc = trust_root_parse_cached(chain[i], cur, true, &next, err);
		if (rc == OTA_OK)
			rc = accept_impl(cur, next, next, &same, err);
		if (rc == OTA_OK)
			rc = check_state(next, have, sv, sid, err);
		if (rc != OTA_OK) {
			name_where(err, rc, snap_name(o, i + 1, nbuf, sizeof nbuf));
			ota_trust_root_free(next);
			goto fail;
		}
		if (same) {
			ota_trust_root_free(next);
			continue;
		}
		ota_trust_root_free(cur);
		cur = next;
		cur_i = i + 1;
	}
	if (have && cur->version < sv) {
		rc = ota_error_set(err, OTA_ERR_TRUST_ROLLBACK, "state",
		                   "latest version %lld is lower than version %lld accepted before",
		                   (long long)cur->version, (long long)sv);
		goto fail;
	}
	if (o->at >= cur->expires) {
		char t1[32], t2[32];
		ota_trust_time_format(cur->expires, t1);
		ota_trust_time_format(o->at, t2);
		rc = ota_error_set(err, OTA_ERR_TRUST_EXPIRED, "expires",
		                   "latest version %lld expired at %s (now %s)",
		                   (long long)cur->version, t1, t2);
		name_where(err, rc, snap_name(o, cur_i, nbuf, sizeof nbuf));
		goto fail;
	}
	if (o->state != NULL &&
	    (rc = ota_trust_state_record(o->state, cur->domain, cur->version, cur->identity,
	                                 err)) != OTA_OK)
		goto fail;
	*latest_out = cur;
	return OTA_OK;
fail:
	ota_trust_root_free(cur);
	return rc;
}

/* The caps, checked before anything (else) is parsed; pinned_len 0: parsed. */
static ota_err chain_caps(size_t pinned_len, const ota_bytes *chain, size_t n,
                          const ota_trust_verify_opts *o, ota_error *err)
{
	size_t cap = o->max_chain == 0 || o->max_chain > OTA_MAX_TRUST_CHAIN ? OTA_MAX_TRUST_CHAIN
	                                                                      : o->max_chain;
	if (n > cap)
		return ota_error_set(err, OTA_ERR_TRUST_CHAIN_TOO_LONG, "chain",
		                     "%zu snapshots after the pinned one, limit is %zu", n, cap);
	if (pinned_len > OTA_MAX_TRUST_ROOT_BYTES)
		return ota_error_set(err, OTA_ERR_TRUST_TOO_LARGE,
		                     o->pinned_name != NULL ? o->pinned_name : "pinned",
		                     "%zu bytes, limit is %u", pinned_len, OTA_MAX_TRUST_ROOT_BYTES);
	for (size_t i = 0; i < n; i++)
		if (chain[i].len > OTA_MAX_TRUST_ROOT_BYTES)
			return ota_error_set(err, OTA_ERR_TRUST_TOO_LARGE,
			                     o->chain_names != NULL && o->chain_names[i] != NULL
			                             ? o->chain_names[i]
			                             : "chain",
			                     "snapshot %zu has %zu bytes, limit is %u", i + 1,
			                     chain[i].len, OTA_MAX_TRUST_ROOT_BYTES);
	return OTA_OK;
}

ota_err ota_trust_chain_verify(ota_bytes pinned, const ota_bytes *chain, size_t n,
                               const ota_trust_verify_opts *o, ota_trust_root **latest_out,
                               ota_error *err)
{
	*latest_out = NULL;
	ota_err rc = chain_caps(pinned.len, chain, n, o, err);
	if (rc != OTA_OK)
		return rc;
	ota_trust_root *cur = NULL;
	if ((rc = trust_root_parse_cached(pinned, NULL, true, &cur, err)) != OTA_OK)
		return name_where(err, rc, o->pinned_name);
	return chain_walk(cur, chain, n, o, latest_out, err);
}

ota_err ota_trust_chain_verify_from(ota_trust_root *pinned, const ota_bytes *chain, size_t n,
                                    const ota_trust_verify_opts *o,
                                    ota_trust_root **latest_out, ota_error *err)
{
	*latest_out = NULL;
	ota_err rc = chain_caps(0, chain, n, o, err);
	if (rc != OTA_OK) {
		ota_trust_root_free(pinned);
		return rc;
	}
	return chain_walk(pinned, chain, n, o, latest_out, err);
}
