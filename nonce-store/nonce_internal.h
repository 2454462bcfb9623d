/* nonce-store/nonce_internal.h - private helpers shared inside ota_nonce. */
#ifndef OTA_NONCE_INTERNAL_H
#define OTA_NONCE_INTERNAL_H
#include "ota/nonce.h"

/*
 * The "issuer" claim of a stored acceptance (a tagged COSE_Sign1 of our
 * own, single or batch form) into out (cap bytes, NUL-terminated). Reads
 * only, checks no signature: for the schema 1 -> 2 migration, over bytes
 * this store wrote. false when the bytes are not such a record or the claim
 * is missing, not text, or does not fit.
 */
bool nonce_acceptance_issuer(ota_bytes acceptance, char *out, size_t cap);
#endif
