/*
 * ota/key.h - keys and raw signatures for COSE, trust roots and receipts,
 * over OpenSSL 3 EVP. Private keys never leave the OpenSSL handle except
 * through ota_key_private_pem (for writing a 0600 key file).
 */
#ifndef OTA_KEY_H
#define OTA_KEY_H

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* COSE algorithm identifiers (IANA). The allow-list of the toolkit. */
typedef enum ota_alg {
	OTA_ALG_NONE = 0,
	OTA_ALG_ES256 = -7,   /* ECDSA P-256 SHA-256 */
	OTA_ALG_EDDSA = -8,   /* Ed25519 */
	OTA_ALG_ES384 = -35,  /* ECDSA P-384 SHA-384 */
	OTA_ALG_ES512 = -36,  /* ECDSA P-521 SHA-512 */
	OTA_ALG_PS256 = -37,  /* RSASSA-PSS SHA-256, verification only */
	OTA_ALG_PS384 = -38,  /* RSASSA-PSS SHA-384, verification only (public vectors) */
	OTA_ALG_PS512 = -39   /* RSASSA-PSS SHA-512, verification only (public vectors) */
} ota_alg;

/* "ES256", "EdDSA", ...; "none" for OTA_ALG_NONE or unknown values. */
OTA_API const char *ota_alg_name(ota_alg a);
/* Parses a name (case-sensitive, as COSE/JOSE spell it). alg_unknown otherwise. */
OTA_API OTA_NODISCARD ota_err ota_alg_from_name(const char *name, ota_alg *out);
/* true when v is one of the allow-listed COSE algorithm numbers. */
OTA_API bool ota_alg_is_known(int64_t v);
/* Size in bytes of a raw signature for a (r||s for ECDSA, 64 for Ed25519); 0 for RSA. */
OTA_API size_t ota_alg_sig_size(ota_alg a);

typedef struct ota_key ota_key;

/*
 * Loads a PEM public key (SPKI), private key (PKCS#8, or SEC1 "EC PRIVATE KEY").
 * Every loader (PEM, JWK, file) refuses keys anyone can sign for: RSA under
 * 2048 bits or with a public exponent that is even or under 65537
 * (key_too_weak), an Ed25519 or Ed448 small-order point (key_point_invalid);
 * and a public key in a second encoding, which would have a second kid: an
 * EC point that is not uncompressed (0x04) or explicit curve parameters, an
 * EdDSA y not below the field prime (key_noncanonical). A private EC key's
 * public half is encoded uncompressed whatever its file held.
 */
OTA_API OTA_NODISCARD ota_err ota_key_load_pem(ota_bytes pem, ota_key **out, ota_error *err);
/* Loads a JWK (kty EC with crv P-256/P-384/P-521, OKP Ed25519/Ed448, RSA); the same refusals. */
OTA_API OTA_NODISCARD ota_err ota_key_load_jwk(ota_bytes json, ota_key **out, ota_error *err);
/* Reads path (O_NOFOLLOW, capped) and loads it as PEM or JWK by content. */
OTA_API OTA_NODISCARD ota_err ota_key_load_file(const char *path, ota_key **out, ota_error *err);
/* Generates a fresh key for alg (ES256/ES384/ES512/EdDSA). */
OTA_API OTA_NODISCARD ota_err ota_key_generate(ota_alg alg, ota_key **out);
/* Frees k; NULL is a no-op. */
OTA_API void ota_key_free(ota_key *k);

OTA_API bool ota_key_has_private(const ota_key *k);
/* The natural alg of the key (P-256 -> ES256, P-384 -> ES384, P-521 -> ES512,
 * Ed25519 -> EdDSA, RSA -> PS256). */
OTA_API ota_alg ota_key_default_alg(const ota_key *k);
/* OTA_OK when alg fits the key's type and curve; alg_key_mismatch otherwise. */
OTA_API OTA_NODISCARD ota_err ota_key_check_alg(const ota_key *k, ota_alg alg);
/* kid: SHA-256 over the key's SubjectPublicKeyInfo DER. */
OTA_API OTA_NODISCARD ota_err ota_key_kid(const ota_key *k, uint8_t out[32]);
/* SPKI DER (*out new, free()). */
OTA_API OTA_NODISCARD ota_err ota_key_spki_der(const ota_key *k, uint8_t **out, size_t *out_len);
/* Public key as SPKI PEM (*out new, NUL-terminated). */
OTA_API OTA_NODISCARD ota_err ota_key_public_pem(const ota_key *k, char **out);
/* Private key as PKCS#8 PEM (*out new; caller wipes and frees). */
OTA_API OTA_NODISCARD ota_err ota_key_private_pem(const ota_key *k, char **out, size_t *out_len);

/*
 * Signs tbs with alg (which must fit the key). ECDSA signatures are raw r||s
 * of the curve's size (not DER), always in low-S form (s <= n/2, n the
 * group order: a high s is replaced by n - s), so that each signature we
 * write has one form. sig has cap bytes; *sig_len receives the size.
 */
OTA_API OTA_NODISCARD ota_err ota_key_sign(const ota_key *k, ota_alg alg, ota_bytes tbs,
                                           ota_buf sig, size_t *sig_len);
/*
 * Verifies sig over tbs. ECDSA signatures must be raw r||s of exactly the
 * curve's size (signature_format otherwise; DER is refused). High-S accepted.
 * Errors: alg_key_mismatch, signature_format, signature_invalid, crypto_error.
 */
OTA_API OTA_NODISCARD ota_err ota_key_verify(const ota_key *k, ota_alg alg, ota_bytes tbs,
                                             ota_bytes sig);

/*
 * Like ota_key_verify, but the signed bytes are given as n pieces that are
 * hashed in order as if concatenated (no copy for ECDSA and RSA-PSS; EdDSA,
 * which is one-shot, joins them in a stack buffer up to 4 KiB).
 */
OTA_API OTA_NODISCARD ota_err ota_key_verify_parts(const ota_key *k, ota_alg alg,
                                                   const ota_bytes *parts, size_t n,
                                                   ota_bytes sig);
/*
 * true when sig is a raw ECDSA r||s of the size alg needs (ES256, ES384,
 * ES512) whose s is above n/2 (the high-S form; s >= n counts too); false
 * for a low-S one and for anything else (other algorithms, other sizes).
 * (r, s) and (r, n - s) both verify: attestation admission refuses the high
 * form, general verification accepts both.
 */
OTA_API bool ota_key_sig_is_high_s(ota_alg alg, ota_bytes sig);
/* Size in bits of the key (256 for P-256 and Ed25519, modulus bits for RSA). */
OTA_API unsigned ota_key_bits(const ota_key *k);
/* "P-256", "P-384", "P-521", "Ed25519", "Ed448", "RSA". */
OTA_API const char *ota_key_type_name(const ota_key *k);
/* Public key as a JWK JSON object text (no kid; *out new, NUL-terminated). */
OTA_API OTA_NODISCARD ota_err ota_key_public_jwk(const ota_key *k, char **out);
/* true when a and b hold the same public key (SPKI DER equality). */
OTA_API bool ota_key_equal_public(const ota_key *a, const ota_key *b);

/* The underlying EVP_PKEY * (borrowed), for modules that need OpenSSL directly. */
OTA_API void *ota_key_evp(const ota_key *k);

#ifdef __cplusplus
}
#endif
#endif
