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
 * Verifies an acceptance with the verifier key named by its kid in root
 * (role verifier, judged at `at`) and parses its payload into *out (cleared
 * on failure). Errors: cose_*, trust_*, signature_invalid,
 * acceptance_malformed.
 */
OTA_API OTA_NODISCARD ota_err ota_acceptance_verify(ota_bytes cose, const ota_trust_root *root,
                                                    int64_t at, ota_acceptance *out,
                                                    ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
