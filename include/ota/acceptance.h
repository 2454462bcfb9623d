/*
 * ota/acceptance.h - acceptance records (attest/, target ota_attest): the
 * endpoint's signed statement that it admitted one attestation.
 *
 * An acceptance is a tagged COSE_Sign1 (kid in the protected header) signed
 * by the endpoint's verifier key, whose payload is a CBOR map:
 *   1 (iss)        verifier principal id (text)
 *   6 (iat)        accepted_at: the verifier's time of admission (uint)
 *   10 (eat_nonce) the challenge nonce (bstr)
 *   "kind"         "acceptance"
 *   "result"       "accepted"
 *   "attestation"  identity of the attestation (sha256: over its COSE bytes)
 *   "challenge"    identity of the challenge (ota.challenge/v1 object)
 *   "issuer"       the attester's principal id
 *   "txn", "boundary" and "prior" (text, prior null for the first record)
 *   "trust_root"   identity of the trust-root snapshot used
 *   "verifier"     {"id": text, "version": text, "kid": bstr}
 *
 * Two forms, told apart by the protected header (docs/attestation.md):
 *
 * - single: protected {1: alg, 4: kid}, the signature over the payload
 *   (ota_acceptance_build);
 * - batch: the acceptances of one group commit share one signature over
 *   the root of an RFC 9162 Merkle tree (SHA-256; leaf = 0x00 || payload,
 *   node = 0x01 || left || right) of their payloads, in the spirit of COSE
 *   Receipts (draft-ietf-cose-merkle-tree-proofs): protected {1: alg,
 *   4: kid, 395 (vds): 1 (RFC9162_SHA256), "tree_size": n}, unprotected
 *   {396 (vdp): {-1 (inclusion proofs): [bstr .cbor [tree_size (= n),
 *   leaf_index, [* bstr32]]]}},
 *   the payload embedded, and the signature over the Sig_structure whose
 *   payload is the 32-byte root (ota_acceptance_build_batch). Its payload
 *   carries a 14th claim, "salt" (16 random bytes), so that a leaf of the
 *   batch that was refused in the transaction (its hash is a sibling in
 *   the others' proofs) can never be opened. A generic COSE verifier
 *   refuses this form (the signature is not over the payload).
 */
#ifndef OTA_ACCEPTANCE_H
#define OTA_ACCEPTANCE_H

#include "ota/admission.h"
#include "ota/key.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ota_acceptance_signer {
	const ota_key *key;      /* verifier's private key (borrowed) */
	const char *verifier_id; /* its principal id (borrowed) */
} ota_acceptance_signer;

/*
 * Builds and signs the acceptance of a prepared admission. ctx is an
 * ota_acceptance_signer *; the signature matches ota_acceptance_fn so it can
 * be handed to ota_admission_admit. *out new (free()).
 */
OTA_API OTA_NODISCARD ota_err ota_acceptance_build(void *ctx, const ota_admission *a,
                                                   uint8_t **out, size_t *out_len,
                                                   ota_error *err);

#define OTA_ACCEPTANCE_SALT_BYTES 16u
#define OTA_ACCEPTANCE_MAX_BATCH 4096u /* leaves per tree (= OTA_NONCE_MAX_BATCH) */
#define OTA_COSE_HEADER_VDS 395        /* verifiable data structure */
#define OTA_COSE_HEADER_VDP 396        /* verifiable data structure proofs */
#define OTA_VDS_RFC9162_SHA256 1
#define OTA_COSE_HEADER_TREE_SIZE "tree_size" /* protected: the signed tree's size */

/*
 * Builds the acceptances of the n (1..OTA_ACCEPTANCE_MAX_BATCH) prepared
 * admissions a[0..n) in the batch form: one Merkle tree over their payloads
 * (leaf i = a[i]), one signature over its root. outs[i] (new, free()) and
 * out_lens[i] receive acceptance i; all are cleared on failure (with n
 * in range: an n of 0 or over the cap touches nothing). Errors:
 * usage, nomem, crypto_error, key_*.
 */
OTA_API OTA_NODISCARD ota_err ota_acceptance_build_batch(const ota_acceptance_signer *s,
                                                         const ota_admission *const *a, size_t n,
                                                         uint8_t **outs, size_t *out_lens,
                                                         ota_error *err);

/* The payload of an acceptance, parsed (strings copied). */
typedef struct ota_acceptance {
	char verifier_id[OTA_ATT_TEXT_MAX + 1];
	char verifier_version[64];
	uint8_t verifier_kid[32];
	int64_t accepted_at;
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nonce_len;
	char attestation[OTA_ID_LEN + 1];
	char challenge[OTA_ID_LEN + 1];
	char issuer[OTA_ATT_TEXT_MAX + 1];
	char txn[OTA_ATT_TEXT_MAX + 1];
	char boundary[OTA_ATT_TEXT_MAX + 1];
	char prior[OTA_ATT_TEXT_MAX + 1];
	char trust_root[OTA_ID_LEN + 1];
	char result[32];
} ota_acceptance;

/*
 * Verifies an acceptance of either form with the verifier key named by its
 * kid in root (role verifier, judged at `at`) and parses its payload into
 * *out (cleared on failure). The batch form: its one inclusion proof
 * (tree size equal to the protected one, at most OTA_ACCEPTANCE_MAX_BATCH
 * leaves, leaf index below it, a path of exactly the length that index and
 * size give) is folded from the payload's leaf hash to a root, and the
 * signature must verify over that root. Errors: cose_*,
 * trust_*, signature_invalid (also: a proof that leads to another root),
 * acceptance_malformed.
 */
OTA_API OTA_NODISCARD ota_err ota_acceptance_verify(ota_bytes cose, const ota_trust_root *root,
                                                    int64_t at, ota_acceptance *out,
                                                    ota_error *err);

/*
 * The acceptances of one batch share one signature over one root. A cache
 * remembers the batch signatures already verified (exact protected header
 * bytes, tree root, signature bytes and key), so that verifying many
 * acceptances of a batch checks its signature once; everything else (the
 * trust lookup at `at`, the proof fold, the payload) is done for each.
 * ota_acceptance_verify_cached with cache NULL is ota_acceptance_verify.
 * A cache holds at most 1024 signatures (older ones are then forgotten) and
 * must be used with one trust root only.
 */
typedef struct ota_acceptance_cache ota_acceptance_cache;
OTA_API ota_acceptance_cache *ota_acceptance_cache_new(void);
OTA_API void ota_acceptance_cache_free(ota_acceptance_cache *c);
OTA_API OTA_NODISCARD ota_err ota_acceptance_verify_cached(ota_bytes cose,
                                                           const ota_trust_root *root,
                                                           int64_t at, ota_acceptance_cache *cache,
                                                           ota_acceptance *out, ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
