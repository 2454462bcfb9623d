/*
 * ota/err.h - the one error enum of the toolkit.
 *
 * Each module keeps its own list in include/ota/errors/<module>.def inside
 * its own number range, as X(ENUM, NUMBER, "stable_name", "message").
 * Stable names are snake_case; they are the JSON "code", the word the CLIs
 * print on stderr and the key of the data-driven vectors. Add at the end of
 * a range; never renumber, never reuse, never rename.
 *
 * Ranges: common 0-99, cose 100-199, trust 200-299, nonce-store 300-399,
 * attestation admission and endpoint 400-499, policy 500-699,
 * provider-oci and runner 700-899, receipts and archives 900-999.
 */
#ifndef OTA_ERR_H
#define OTA_ERR_H

#define OTA_ERRORS(X)                         \
	OTA_ERRORS_COMMON(X)                  \
	OTA_ERRORS_COSE(X)                    \
	OTA_ERRORS_TRUST(X)                   \
	OTA_ERRORS_NONCE(X)                   \
	OTA_ERRORS_ADMISSION(X)               \
	OTA_ERRORS_POLICY(X)                  \
	OTA_ERRORS_OCI(X)                     \
	OTA_ERRORS_ARCHIVE(X)

#include "ota/errors/common.def"
#include "ota/errors/cose.def"
#include "ota/errors/trust.def"
#include "ota/errors/nonce.def"
#include "ota/errors/admission.def"
#include "ota/errors/policy.def"
#include "ota/errors/oci.def"
#include "ota/errors/archive.def"

typedef enum ota_err {
#define OTA_ERR_ENUM_(e, n, name, msg) e = n,
	OTA_ERRORS(OTA_ERR_ENUM_)
#undef OTA_ERR_ENUM_
	OTA_ERR_ENUM_END_ = 100000
} ota_err;

/* Stable snake_case name of e ("ok", "cose_tag_missing"); never NULL. */
const char *ota_err_name(ota_err e) __attribute__((visibility("default")));
/* One fixed English sentence for e; never NULL. */
const char *ota_err_message(ota_err e) __attribute__((visibility("default")));
/* Looks a stable name up; true and *out set when known. */
_Bool ota_err_from_name(const char *name, ota_err *out) __attribute__((visibility("default")));
/* Calls fn for every defined error, in number order (tests, docs, man pages). */
void ota_err_foreach(void (*fn)(ota_err e, const char *name, const char *msg, void *ctx),
                     void *ctx) __attribute__((visibility("default")));

#endif
