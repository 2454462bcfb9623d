/*
 * ota/trust.h - trust-root snapshots: root keys with a threshold, principals
 * with roles, scopes and keys, the rotation chain, rollback protection and
 * key lookup (DESIGN.md section 5; docs/trust-root.md has the format).
 *
 * A snapshot is JSON {"signed": {...}, "signatures": [{"keyid", "sig"}]};
 * the signatures are over JCS(signed) (RFC 8785). The identity of a snapshot
 * is "sha256:" + hex(SHA-256(JCS(signed))); signatures are not part of it.
 *
 * Times are integer seconds since the Unix epoch. A key is valid at time t
 * when valid_from <= t < valid_until and not (revoked_at <= t). t is always
 * the verifier's acceptance time, never a time claimed by the signer.
 *
 * Ownership: ota_trust_root handles are new (ota_trust_root_free); keys and
 * principals returned by lookups are borrowed from their root and live as
 * long as it does. No function prints, exits or reads the clock.
 */
#ifndef OTA_TRUST_H
#define OTA_TRUST_H

#include "ota/common.h"
#include "ota/key.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OTA_TRUST_KIND "ota.trust_root/v1"
#define OTA_TRUST_STATE_KIND "ota.trust_state/v1"

typedef enum ota_trust_role {
	OTA_TRUST_ROLE_ISSUER = 1,   /* signs attestations (sandbox providers) */
	OTA_TRUST_ROLE_RUNNER = 2,   /* signs receipts */
	OTA_TRUST_ROLE_VERIFIER = 3  /* signs acceptances (attestation endpoint) */
} ota_trust_role;

/* "issuer", "runner", "verifier"; "unknown" otherwise. */
OTA_API const char *ota_trust_role_name(ota_trust_role r);
/* Parses a role name; usage error when unknown. */
OTA_API OTA_NODISCARD ota_err ota_trust_role_from_name(const char *name, ota_trust_role *out);

typedef struct ota_trust_root ota_trust_root;
typedef struct ota_trust_principal ota_trust_principal;

/* ---- parsing and inspection ---- */

/*
 * Parses one snapshot strictly. The size cap OTA_MAX_TRUST_ROOT_BYTES is
 * checked before any parsing (trust_snapshot_too_large); then ota_json_parse
 * (no duplicate members), unknown members refused, a version above
 * OTA_MAX_TRUST_VERSION refused (trust_version_absurd) before any key is
 * loaded, every kid checked against SHA-256 of its key's SPKI
 * (trust_kid_mismatch), keys in canonical SPKI PEM only, EC points
 * uncompressed (trust_key_noncanonical), no key anyone can sign for (RSA
 * exponent even or under 65537: key_too_weak; small-order Ed25519 point:
 * key_point_invalid), the declared alg fitting the key, EdDSA for Ed25519
 * only (alg_key_mismatch), no key under two entries, whatever their kids
 * (trust_duplicate_key), no key signing twice (trust_duplicate_signature),
 * no two principals with one id (trust_duplicate_principal). Signatures are
 * NOT verified here (an
 * unsigned snapshot parses); see ota_trust_root_verify_self and
 * ota_trust_chain_verify. *out is new; NULL on failure.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_parse(ota_bytes in, ota_trust_root **out,
                                                   ota_error *err);
/*
 * As ota_trust_root_parse, every check included, but a key entry identical
 * to one of keys_of (same kid, alg and PEM text, the inputs of every key
 * check) shares keys_of's loaded key instead of loading it again, as chain
 * verification does between consecutive versions. keys_of (NULL: none) may
 * be freed before or after *out.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_parse_sharing(ota_bytes in,
                                                           const ota_trust_root *keys_of,
                                                           ota_trust_root **out,
                                                           ota_error *err);
/*
 * ota_trust_root_parse_sharing without loading the principals and their
 * keys (the costly part): every parse check of the document, its root role
 * and signatures; version, domain, identity and expiry are usable, and
 * ota_trust_lookup finds no principal key. For reading a chain's versions
 * and identities before anything has been authenticated.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_parse_unloaded(ota_bytes in,
                                                           const ota_trust_root *keys_of,
                                                           ota_trust_root **out,
                                                           ota_error *err);
/* Frees r; NULL is a no-op. */
OTA_API void ota_trust_root_free(ota_trust_root *r);

/* Borrowed strings / values of the parsed snapshot. */
OTA_API const char *ota_trust_root_domain(const ota_trust_root *r);
OTA_API int64_t ota_trust_root_version(const ota_trust_root *r);
/* "sha256:..." identity of this snapshot (JCS of signed). */
OTA_API const char *ota_trust_root_identity(const ota_trust_root *r);
/* Identity of version N-1, or NULL for a snapshot without prev (version 1). */
OTA_API const char *ota_trust_root_prev(const ota_trust_root *r);
OTA_API int64_t ota_trust_root_issued_at(const ota_trust_root *r);
OTA_API int64_t ota_trust_root_expires(const ota_trust_root *r);
OTA_API unsigned ota_trust_root_threshold(const ota_trust_root *r);
OTA_API size_t ota_trust_root_root_key_count(const ota_trust_root *r);
OTA_API size_t ota_trust_root_principal_count(const ota_trust_root *r);
OTA_API size_t ota_trust_root_key_count(const ota_trust_root *r);
OTA_API size_t ota_trust_root_signature_count(const ota_trust_root *r);
/* The i-th principal (borrowed), NULL when i is out of range. */
OTA_API const ota_trust_principal *ota_trust_root_principal(const ota_trust_root *r, size_t i);
OTA_API const char *ota_trust_principal_id(const ota_trust_principal *p);
OTA_API ota_trust_role ota_trust_principal_role(const ota_trust_principal *p);

/*
 * Counts the distinct root keys of `keys_of` whose signatures on `r` verify
 * (a key counts once however many entries or signatures name it). *count
 * receives the count; the threshold of keys_of is ota_trust_root_threshold.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_count_signers(const ota_trust_root *r,
                                                           const ota_trust_root *keys_of,
                                                           unsigned *count, ota_error *err);

/*
 * Checks r carries a distinct-key threshold of its own root keys
 * (trust_threshold_new otherwise). Used for a pinned first snapshot, which
 * must be signed like any other (TUF test_unsigned_initial_root).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_verify_self(const ota_trust_root *r, ota_error *err);

/*
 * The rotation rule: accepts next as the successor of cur. In order:
 * trust_domain_mismatch; trust_threshold_old (distinct-key threshold of
 * cur's root keys); trust_equivocation (same version, other identity);
 * trust_rollback (lower version); trust_version_skip (not cur+1);
 * trust_prev_mismatch (prev != identity(cur)); trust_threshold_new;
 * trust_revocation_dropped (a key revoked in cur is missing, unrevoked or
 * revoked later in next). The same snapshot presented again (same identity)
 * is OTA_OK with *same set to true (same may be NULL). Expiry is NOT judged
 * here (intermediate snapshots may have expired).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_accept_next(const ota_trust_root *cur,
                                                         const ota_trust_root *next,
                                                         bool *same, ota_error *err);

/* ---- verifier state (rollback protection across restarts) ---- */

/*
 * A durable record of the highest accepted version and its identity per
 * trust domain: a JSON file written with ota_file_write_atomic (temporary
 * file, fsync, rename, fsync of the directory), guarded by an exclusive
 * flock on "<path>.lock" from open to close so two verifiers cannot lose
 * each other's updates. Opening a missing file starts empty.
 */
typedef struct ota_trust_state ota_trust_state;

OTA_API OTA_NODISCARD ota_err ota_trust_state_open(const char *path, ota_trust_state **out,
                                                   ota_error *err);
/* Releases the lock and frees s; NULL is a no-op. */
OTA_API void ota_trust_state_close(ota_trust_state *s);
/*
 * Highest accepted version of domain and its identity (out holds
 * OTA_ID_LEN+1 bytes, may be NULL). not_found when the domain is unknown.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_state_get(const ota_trust_state *s, const char *domain,
                                                  int64_t *version,
                                                  char identity[OTA_ID_LEN + 1]);
/*
 * Records version/identity for domain and persists it before returning.
 * trust_rollback when version is lower than the recorded one,
 * trust_equivocation when equal with another identity; equal and same is a
 * no-op.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_state_record(ota_trust_state *s, const char *domain,
                                                     int64_t version, const char *identity,
                                                     ota_error *err);

/* ---- chain verification ---- */

typedef struct ota_trust_verify_opts {
	int64_t at;             /* verifier's time: the latest must not have expired */
	ota_trust_state *state; /* optional (borrowed): checked and advanced */
	size_t max_chain;       /* 0 = OTA_MAX_TRUST_CHAIN; larger values are clamped */
	/* optional: what each snapshot came from (a file's path), put first in
	 * the where of every error about it ("NAME: ..."); without them a
	 * snapshot of the chain is "chain[i]" (1-based), the pinned one unnamed */
	const char *pinned_name;
	const char *const *chain_names; /* n names, or NULL */
} ota_trust_verify_opts;

/*
 * Verifies pinned (self-signed by its own threshold) and then each chain[i]
 * as its successor (ota_trust_root_accept_next), and returns the latest.
 * The count of chain is checked against the cap before anything is parsed
 * (trust_chain_too_long), and each snapshot's size before it is parsed.
 * A snapshot's principal keys are loaded only after it has shown the
 * previous version's threshold (forged input never costs key loads), and
 * keys identical to the previous version's are shared, not loaded again.
 * Only the latest snapshot's expiry is judged, at o->at (trust_expired,
 * freeze); expired intermediates are fine. With a state: a snapshot of the
 * state's recorded version must have the recorded identity
 * (trust_equivocation), the latest version must not be lower than the
 * recorded one (trust_rollback), and on success the latest is recorded
 * durably. *latest_out is new; NULL on failure.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_chain_verify(ota_bytes pinned, const ota_bytes *chain,
                                                     size_t n,
                                                     const ota_trust_verify_opts *o,
                                                     ota_trust_root **latest_out,
                                                     ota_error *err);
/*
 * ota_trust_chain_verify from a pinned snapshot the caller has already
 * parsed whole (ota_trust_root_parse: every parse check has passed), which
 * it takes (freed on failure, or once a successor supersedes it): the same
 * caps, checks, order and errors from the pinned threshold on, without
 * parsing and loading the pinned snapshot again. *latest_out is new (it may
 * be pinned itself).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_chain_verify_from(ota_trust_root *pinned,
                                                          const ota_bytes *chain, size_t n,
                                                          const ota_trust_verify_opts *o,
                                                          ota_trust_root **latest_out,
                                                          ota_error *err);

/* ---- key lookup (for verify/) ---- */

/* What the caller needs the principal to be scoped for; NULL = not checked. */
typedef struct ota_trust_scope_req {
	const char *repo;            /* e.g. "acme/widgets" */
	const char *lane;            /* e.g. "ci" */
	const char *provider_target; /* e.g. "oci_local" */
} ota_trust_scope_req;

/*
 * Finds the principal key named by kid and judges it for use at time at
 * (the verifier's acceptance time; never the signer's iat).
 * Checks, in order, each with its own error:
 *   kid of 32 bytes selecting exactly one key      trust_key_unknown
 *   alg equals the key's declared alg              trust_alg_mismatch
 *   principal holds role                           trust_role_mismatch
 *   each non-NULL scope field matches a pattern    trust_scope_mismatch
 *   revoked_at absent or at < revoked_at           trust_key_revoked
 *   valid_from <= at                               trust_key_not_yet_valid
 *   at < valid_until (when present)                trust_key_expired
 * Scope patterns: "*" matches any value; a pattern P followed by a final
 * '*' (P = "org/" or "ci-", say) matches P followed by one or more
 * characters without '/'; any other pattern matches exactly. A principal with an empty
 * list for a dimension matches nothing in it.
 * Lookup is a binary search over kids sorted at parse time: O(log n).
 * *key_out and *who_out (either may be NULL) are borrowed from r; set to
 * NULL on failure.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_lookup(const ota_trust_root *r, ota_bytes kid,
                                               ota_alg alg, ota_trust_role role,
                                               const ota_trust_scope_req *scope, int64_t at,
                                               const ota_key **key_out,
                                               const ota_trust_principal **who_out,
                                               ota_error *err);

/* true when value matches pattern under the rules of ota_trust_lookup. */
OTA_API bool ota_trust_scope_match(const char *pattern, const char *value);

/* ---- building, editing, signing and serializing ---- */

/*
 * A draft is the `signed` body of a snapshot being prepared. Each edit
 * checks its own arguments; ota_trust_draft_finish re-parses the result
 * strictly, so a draft can never produce a snapshot that would not parse.
 */
typedef struct ota_trust_draft ota_trust_draft;

/*
 * Version 1 of a new domain with root_keys (borrowed; public parts used,
 * alg = each key's default alg) and threshold (1..n).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_new(const char *domain,
                                                  const ota_key *const *root_keys, size_t n,
                                                  unsigned threshold, int64_t issued_at,
                                                  int64_t expires, ota_trust_draft **out,
                                                  ota_error *err);
/* Version cur+1 with prev = identity(cur), a copy of cur's content. */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_next(const ota_trust_root *cur, int64_t issued_at,
                                                   int64_t expires, ota_trust_draft **out,
                                                   ota_error *err);
/* A draft holding exactly r's signed content (to edit a staged snapshot). */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_from(const ota_trust_root *r,
                                                   ota_trust_draft **out, ota_error *err);
OTA_API void ota_trust_draft_free(ota_trust_draft *d);

OTA_API OTA_NODISCARD ota_err ota_trust_draft_set_times(ota_trust_draft *d, int64_t issued_at,
                                                        int64_t expires, ota_error *err);
/* Adds a principal (already_exists when the id is taken). Scope arrays may be NULL/0. */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_add_principal(
	ota_trust_draft *d, const char *id, ota_trust_role role, const char *const *repos,
	size_t n_repos, const char *const *lanes, size_t n_lanes, const char *const *targets,
	size_t n_targets, ota_error *err);
/*
 * Adds key (public part; borrowed) to principal id with alg (OTA_ALG_NONE =
 * the key's default). valid_until <= 0 means none. not_found for an unknown
 * principal, trust_duplicate_key when the key is already a principal key
 * (the keys are compared, not only the kids), alg_key_mismatch when alg
 * does not fit the key (EdDSA is Ed25519 only).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_add_key(ota_trust_draft *d, const char *principal,
                                                      const ota_key *key, ota_alg alg,
                                                      int64_t valid_from, int64_t valid_until,
                                                      ota_error *err);
/*
 * Revokes the principal key with this kid at revoked_at. An earlier
 * existing revocation is kept (a revocation is never moved later).
 */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_revoke_key(ota_trust_draft *d, ota_bytes kid,
                                                         int64_t revoked_at, ota_error *err);
/* Adds a root key (alg = default alg). trust_duplicate_key when present. */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_add_root_key(ota_trust_draft *d,
                                                           const ota_key *key, ota_error *err);
/* Removes the root key with this kid (not_found when absent). */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_remove_root_key(ota_trust_draft *d, ota_bytes kid,
                                                              ota_error *err);
/* Removes every root key (before adding a fresh set). */
OTA_API void ota_trust_draft_clear_root_keys(ota_trust_draft *d);
OTA_API OTA_NODISCARD ota_err ota_trust_draft_set_threshold(ota_trust_draft *d,
                                                            unsigned threshold, ota_error *err);
/* Produces the unsigned snapshot (new); the draft stays usable. */
OTA_API OTA_NODISCARD ota_err ota_trust_draft_finish(const ota_trust_draft *d,
                                                     ota_trust_root **out, ota_error *err);

/*
 * Adds (or replaces) the signature of key (private; borrowed) over
 * JCS(signed). The key must be a root key of r or of prev (prev may be NULL;
 * for a rotation the previous version's holders sign too), and signs with
 * the alg declared there; trust_signer_not_root otherwise.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_sign(ota_trust_root *r, const ota_key *key,
                                                  const ota_trust_root *prev, ota_error *err);
/* Removes all signatures (after the content changed). */
OTA_API void ota_trust_root_clear_signatures(ota_trust_root *r);

/*
 * Serializes r as JSON text, pretty with sorted members (humans read these
 * files; signatures cover JCS(signed), so formatting does not matter).
 * *out new (free()), NUL-terminated.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_root_serialize(const ota_trust_root *r, char **out,
                                                       size_t *out_len, ota_error *err);
/*
 * A summary as a new JSON object (for `ota trust show --json`, `ota-verify
 * trust --json`): domain, version, identity, prev, times, root keys,
 * threshold, principals with their keys (kid, alg, windows, status at `at`).
 * NULL on allocation failure. Returns json_t * as void * to keep jansson out
 * of this header.
 */
OTA_API void *ota_trust_root_summary(const ota_trust_root *r, int64_t at);

/* ---- time text ---- */

/*
 * Parses integer seconds ("1767225600", at most 15 digits) or RFC 3339
 * UTC/offset ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00"; no
 * fraction, nothing before 1970; second 60 only as the leap second
 * 23:59:60 UTC of a month's last day, taken as 23:59:59). time_format
 * otherwise.
 */
OTA_API OTA_NODISCARD ota_err ota_trust_time_parse(const char *s, int64_t *out);
/* RFC 3339 UTC text of t into buf (at least 32 bytes). */
OTA_API void ota_trust_time_format(int64_t t, char buf[32]);

#ifdef __cplusplus
}
#endif
#endif
