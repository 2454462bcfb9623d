/*
 * ota/cose.h - COSE_Sign1 (RFC 9052) strict decoding, verification (verify/,
 * target ota_verify) and signing (attest/, target ota_attest).
 *
 * Accepted algorithms: ES256 (P-256), ES384 (P-384), ES512 (P-521), EdDSA
 * (Ed25519; Ed448 keys for verification), PS256 (and PS384/PS512) for
 * verification only. alg must be an integer in the protected header.
 *
 * Decoding is strict and allocation-free: tag 18 required unless the caller
 * allows untagged messages; exactly four elements; no trailing bytes; no
 * indefinite lengths in the structure or the headers; no duplicate labels
 * in either bucket or across them; crit only protected, non-empty, naming
 * labels present in the protected header and understood here (1 alg,
 * 3 content type, 4 kid); every head (the tag, the array, each string,
 * map, integer and float, the protected header's contents included) in its
 * shortest form, RFC 8949 section 4.2.1 (cose_head_not_shortest), so that
 * no one can re-encode a message into other bytes that still verify.
 * Accepted: high-S ECDSA (attestation admission alone refuses it),
 * protected labels in any order (the signature covers the bytes as
 * received), unknown labels in the unprotected bucket. Every refusal has
 * its own error name (include/ota/errors/cose.def); docs/cose.md explains
 * each.
 *
 * Sig_structure = ["Signature1", protected bytes exactly as received,
 * external_aad, payload], hashed piecewise without copying (EdDSA copies
 * into a stack buffer up to 4 KiB).
 *
 * kid: when a message carries a kid of exactly 32 bytes (the size of our
 * kids, SHA-256 of the key's SubjectPublicKeyInfo DER), it must equal the
 * verifying key's kid (cose_kid_mismatch). Shorter or longer kids (public
 * vectors use "11") are informational with one explicit key. With a key set
 * (ota_cose_sign1_verify_with), the kid is required and selects the key.
 */
#ifndef OTA_COSE_H
#define OTA_COSE_H

#include "ota/common.h"
#include "ota/key.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OTA_COSE_SIGN1_TAG 18u

/* A decoded COSE_Sign1. Every span points into the input message (or into
 * the caller's detached payload); valid only while those are. */
typedef struct {
	ota_bytes protected_bytes; /* contents of the protected bstr, as received */
	ota_alg alg;               /* from the protected header */
	ota_bytes kid;             /* empty when absent */
	bool kid_protected;        /* kid was in the protected bucket */
	size_t unprotected_labels; /* labels in the unprotected bucket (0: it is {}) */
	ota_bytes payload;         /* embedded payload, or the detached one */
	bool detached;             /* payload was nil in the message */
	ota_bytes signature;
	bool tagged;               /* outer tag 18 was present */
} ota_cose_sign1;

/* Verification options; a zeroed struct (or NULL) means: tag 18 required,
 * empty external AAD, embedded payload required. */
typedef struct {
	bool allow_untagged;
	ota_bytes external_aad;
	bool have_detached_payload;
	ota_bytes detached_payload;
} ota_cose_verify_opts;

/*
 * Strictly decodes msg (at most OTA_MAX_COSE_BYTES) into *out without
 * allocating and without checking the signature. o may be NULL. On failure
 * *out is zeroed and err (may be NULL) says what and where (byte offset).
 * Errors: too_large and the cose_* structural errors.
 */
OTA_API OTA_NODISCARD ota_err ota_cose_sign1_decode(ota_bytes msg, const ota_cose_verify_opts *o,
                                                    ota_cose_sign1 *out, ota_error *err);

/*
 * Checks a decoded message's signature with key (borrowed) and the given
 * external AAD. Errors: alg_key_mismatch, cose_kid_mismatch,
 * signature_format, signature_invalid, crypto_error.
 */
OTA_API OTA_NODISCARD ota_err ota_cose_sign1_check(const ota_cose_sign1 *m, const ota_key *key,
                                                   ota_bytes external_aad, ota_error *err);

/* decode + check with o->external_aad. out may be NULL; when not NULL it is
 * filled on success and zeroed on failure. */
OTA_API OTA_NODISCARD ota_err ota_cose_sign1_verify(ota_bytes msg, const ota_key *key,
                                                    const ota_cose_verify_opts *o,
                                                    ota_cose_sign1 *out, ota_error *err);

/*
 * Key-set lookup: returns OTA_OK with *out (borrowed; must outlive the
 * verification) for the one key that kid names and that may be used with
 * alg, or an error (cose_kid_unknown, cose_kid_ambiguous, alg_key_mismatch,
 * or one of its own) after filling err.
 */
typedef ota_err (*ota_cose_key_lookup)(void *ctx, ota_bytes kid, ota_alg alg,
                                       const ota_key **out, ota_error *err);

/*
 * Verifies with a key set: the kid is required (cose_kid_missing) and fn
 * selects exactly one key; no other key is tried. out may be NULL.
 */
OTA_API OTA_NODISCARD ota_err ota_cose_sign1_verify_with(ota_bytes msg, ota_cose_key_lookup fn,
                                                         void *ctx,
                                                         const ota_cose_verify_opts *o,
                                                         ota_cose_sign1 *out, ota_error *err);

/* Signing options; a zeroed struct (or NULL) means: the key's natural alg,
 * no kid, tagged, embedded payload, empty external AAD. */
typedef struct {
	ota_alg alg;          /* OTA_ALG_NONE: ota_key_default_alg(key) */
	bool include_kid;     /* put our 32-byte kid in the protected header */
	bool untagged;        /* omit tag 18 */
	bool detached;        /* payload nil in the message */
	ota_bytes external_aad;
} ota_cose_sign_opts;

/*
 * Signs payload as COSE_Sign1 with key (borrowed; must hold a private key).
 * Protected header: {1: alg} or {1: alg, 4: kid} (this order); unprotected
 * header: {}. *out is new (free()), *out_len its size; both cleared on
 * failure. Errors: key_private_required, alg_key_mismatch, alg_unknown,
 * unsupported (PS256 is verification only), too_large, crypto_error.
 */
OTA_API OTA_NODISCARD ota_err ota_cose_sign1_sign(const ota_key *key, ota_bytes payload,
                                                  const ota_cose_sign_opts *o, uint8_t **out,
                                                  size_t *out_len, ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
