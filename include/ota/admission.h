/*
 * ota/admission.h - attestation payloads and their admission (verify/,
 * target ota_verify). DESIGN.md sections 4-6; docs/attestation.md.
 *
 * An attestation is a tagged COSE_Sign1 whose payload is one CBOR map with
 * CWT/EAT keys where they fit (iss 1, exp 4, iat 6, cti 7, eat_nonce 10)
 * and text keys for the rest: kind, txn, trust_root, provider, adapter,
 * platform, segment, policy, boundary, prior, body. The payload is parsed
 * strictly: definite lengths only, shortest-form heads, no duplicate or
 * unknown keys, typed values, a size cap (OTA_MAX_ATTESTATION_BYTES) and a
 * depth cap for body (OTA_MAX_ATTESTATION_DEPTH); inside body no map holds
 * two equal keys, at any depth, and floats are in their shortest form
 * (RFC 8949 section 4.2.1, NaN only as f97e00).
 *
 * Admission (ota_admission_prepare, then one ADMIT operation of the nonce
 * store) checks, in order, each refusal with its own name:
 *   the trust root unexpired at `now` (trust_expired: the archive check
 *   judges its expiry at the acceptance's time),
 *   COSE structure, every head in its shortest form (cose_*), kid present
 *   in the protected header (attestation_kid_missing), unprotected header
 *   empty (attestation_unprotected_header), key chosen by
 *   kid from the trust root and judged at the verifier's time `now`
 *   (trust_key_unknown, trust_alg_mismatch, trust_role_mismatch,
 *   trust_key_revoked, trust_key_not_yet_valid, trust_key_expired),
 *   signature (signature_invalid, ...), an ECDSA signature in low-S form
 *   (attestation_signature_high_s), payload (attestation_*), iss is the
 *   key's principal (attestation_key_not_issuer), principal scoped for the
 *   provider target (trust_scope_mismatch), kind admissible
 *   (attestation_kind_refused), trust_root equal to the verifier's
 *   (attestation_trust_root_mismatch), freshness (attestation_from_future,
 *   attestation_stale, attestation_expired, attestation_lifetime), the
 *   challenge (nonce_unknown, nonce_replayed, nonce_expired,
 *   nonce_stale_epoch, nonce_not_yet_issued, nonce_issuer_mismatch,
 *   attestation_txn_mismatch, the key judged again at the challenge's issue
 *   time (trust_key_*), attestation_scope_mismatch,
 *   attestation_nonce_mismatch), iat not more than max_skew before the
 *   challenge's issue (attestation_before_challenge); then, in ONE
 *   sqlite transaction: consume (single use), head of the lane
 *   (txn, iss, boundary), iss's own, equal to prior (attestation_prior_missing,
 *   attestation_prior_fork, attestation_prior_unknown), head advance and
 *   the stored acceptance, stored with the time it signs (judged_at).
 * One signed attestation thus has one admissible encoding, and so one
 * identity: nobody without the key can submit other bytes for it.
 */
#ifndef OTA_ADMISSION_H
#define OTA_ADMISSION_H

#include "ota/common.h"
#include "ota/limits.h"
#include "ota/nonce.h"
#include "ota/trust.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CWT/EAT claim keys (RFC 8392, RFC 9711). */
enum {
	OTA_CLAIM_ISS = 1,
	OTA_CLAIM_EXP = 4,
	OTA_CLAIM_IAT = 6,
	OTA_CLAIM_CTI = 7,
	OTA_CLAIM_EAT_NONCE = 10
};

#define OTA_ATT_TEXT_MAX 256u

/*
 * A parsed attestation payload (a plain value). Text claims are copied,
 * NUL-terminated; absent optional claims are "" (has_* false). body points
 * into the input payload (the raw CBOR item), empty when absent.
 */
typedef struct ota_attestation {
	char iss[OTA_ATT_TEXT_MAX + 1];
	int64_t exp;
	int64_t iat;
	uint8_t cti[64];
	size_t cti_len;
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nonce_len;
	char kind[32];
	char txn[OTA_ATT_TEXT_MAX + 1];
	char trust_root[OTA_ATT_TEXT_MAX + 1];
	char provider[OTA_ATT_TEXT_MAX + 1];
	char adapter[OTA_ATT_TEXT_MAX + 1];
	char platform_os[64];
	char platform_arch[64];
	char platform_variant[64];
	char segment[OTA_ATT_TEXT_MAX + 1];
	char policy_canonical[OTA_ATT_TEXT_MAX + 1];
	char policy_effective[OTA_ATT_TEXT_MAX + 1];
	char boundary[OTA_ATT_TEXT_MAX + 1];
	char prior[OTA_ATT_TEXT_MAX + 1];
	bool has_prior;
	ota_bytes body;
} ota_attestation;

/* true for the kinds a provider may submit: capability,
 * initial_application, transition, terminal_application, cleanup. */
OTA_API bool ota_attestation_kind_admissible(const char *kind);

/*
 * Parses payload strictly into *out (cleared on failure). Required: iss,
 * exp, iat, eat_nonce (16..64 bytes), kind, txn, trust_root, provider,
 * boundary. Optional: cti (1..64 bytes), adapter, platform (map of os,
 * architecture, variant), segment, policy (map of canonical, effective),
 * prior, body (any well-formed CBOR without duplicate map keys, at any
 * depth, and with shortest-form floats, NaN only as f97e00; else
 * attestation_malformed). Errors: attestation_too_large,
 * attestation_malformed, attestation_claim_missing, attestation_claim_type,
 * attestation_claim_unknown, attestation_claim_duplicate, too_deep.
 */
OTA_API OTA_NODISCARD ota_err ota_attestation_parse(ota_bytes payload, ota_attestation *out,
                                                    ota_error *err);

/*
 * Encodes a as a payload (deterministic: shortest heads, CWT keys first in
 * numeric order, then text keys in encoding order; optional claims only when
 * set). *out new (free()). For providers, tests and benchmarks.
 */
OTA_API OTA_NODISCARD ota_err ota_attestation_encode(const ota_attestation *a, uint8_t **out,
                                                     size_t *out_len);

typedef struct ota_admission_opts {
	int64_t max_age;      /* iat >= now - max_age (freshness window); default 300 */
	int64_t max_skew;     /* iat <= now + max_skew and iat >= challenge issued_at -
	                       * max_skew; default 30, 0..OTA_ATT_MAX_SKEW (what
	                       * ota-verify archive allows), else usage */
	int64_t max_lifetime; /* 0 < exp - iat <= max_lifetime; default 900 */
	bool allow_untagged;  /* default false: tag 18 required */
} ota_admission_opts;

OTA_API void ota_admission_opts_init(ota_admission_opts *o);

/* What admission needs (all borrowed). */
typedef struct ota_admission_ctx {
	const ota_trust_root *root;
	ota_nonce_store *store;
	ota_admission_opts opts;
} ota_admission_ctx;

/* A prepared admission: everything judged except the transaction. */
typedef struct ota_admission {
	ota_attestation claims;
	ota_challenge challenge;
	char record_id[OTA_ID_LEN + 1];          /* sha256: over the COSE bytes */
	char challenge_id[OTA_ID_LEN + 1];       /* identity of the challenge */
	char trust_root_id[OTA_ID_LEN + 1];
	uint8_t kid[32];
	char issuer_principal[OTA_ATT_TEXT_MAX + 1];
	ota_alg alg;
	int64_t judged_at;                       /* the verifier's time */
	ota_bytes cose;                          /* points into the input */
	ota_nonce_binding binding;               /* points into challenge */
} ota_admission;

/*
 * Judges cose at the verifier's time now, without changing any state.
 * expect_nonce (may be empty) is the challenge the caller expects, when it
 * knows it (attestation_nonce_mismatch otherwise). *out cleared on failure;
 * on success it points into cose (keep cose alive until the commit).
 */
OTA_API OTA_NODISCARD ota_err ota_admission_prepare(const ota_admission_ctx *ctx, ota_bytes cose,
                                                    ota_bytes expect_nonce, int64_t now,
                                                    ota_admission *out, ota_error *err);

/*
 * Fills op (an OTA_NONCE_OP_ADMIT for ota_nonce_store_commit_batch or
 * ota_nonce_committer_run) from a prepared admission and the signed
 * acceptance bytes (borrowed). a must outlive op.
 */
OTA_API void ota_admission_op(ota_admission *a, ota_bytes acceptance, ota_nonce_op *op);

/*
 * Builds the acceptance record for a prepared admission: *out new (free()).
 * Supplied by attest/ (verify/ never links attest/).
 */
typedef ota_err (*ota_acceptance_fn)(void *ctx, const ota_admission *a, uint8_t **out,
                                     size_t *out_len, ota_error *err);

/*
 * The whole admission: prepare, build the acceptance with fn, then consume +
 * head advance + store in one transaction (through committer when not NULL,
 * else directly on ctx->store). OTA_OK only once committed.
 * *acceptance_out (may be NULL) receives the acceptance bytes (new).
 */
OTA_API OTA_NODISCARD ota_err ota_admission_admit(const ota_admission_ctx *ctx, ota_bytes cose,
                                                  ota_bytes expect_nonce, int64_t now,
                                                  ota_acceptance_fn fn, void *fn_ctx,
                                                  ota_nonce_committer *committer,
                                                  ota_admission *out, uint8_t **acceptance_out,
                                                  size_t *acceptance_len, ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
