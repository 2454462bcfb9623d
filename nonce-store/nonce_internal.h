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

/*
 * The VFS (walbuf.c) over sqlite's default one that writes a transaction's
 * WAL frames in one call, by the time sqlite syncs the WAL or the commit
 * frame is complete. Registered (not as the default) on the first call;
 * an SQLITE_ code. Only for a connection that runs synchronous=FULL.
 */
#define NONCE_WALBUF_VFS "ota-walbuf"
int nonce_walbuf_register(void);
#endif
