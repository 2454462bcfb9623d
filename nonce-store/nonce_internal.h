/* nonce-store/nonce_internal.h - private helpers shared inside ota_nonce. */
#ifndef OTA_NONCE_INTERNAL_H
#define OTA_NONCE_INTERNAL_H
#include "ota/nonce.h"

/* ota_nonce_store_commit_batch that also reports each op's detail in
 * errs[i] (may be NULL). */
ota_err nonce_store_commit_errs(ota_nonce_store *s, ota_nonce_op *ops, size_t n, int64_t now,
                                ota_error *errs, ota_error *err);
#endif
