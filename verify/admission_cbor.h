/* verify/admission_cbor.h - the strict CBOR reader shared by the admission
 * parsers (private to ota_verify). */
#ifndef OTA_ADMISSION_CBOR_H
#define OTA_ADMISSION_CBOR_H
#include "ota/common.h"

typedef struct rd {
	const uint8_t *p;
	size_t len;
	size_t off;
} rd;

#define bad ota_adm_bad
#define rd_head ota_adm_rd_head
#define rd_span ota_adm_rd_span
#define rd_text ota_adm_rd_text
#define rd_uint ota_adm_rd_uint
#define rd_bstr ota_adm_rd_bstr
#define rd_id ota_adm_rd_id
#define rd_skip ota_adm_rd_skip
#define utf8_ok ota_adm_utf8_ok

ota_err bad(ota_error *err, ota_err code, const rd *r, const char *what);
/* One definite, shortest-form head (major type, argument). */
ota_err rd_head(rd *r, unsigned *mt, uint64_t *arg, ota_error *err);
ota_err rd_span(rd *r, uint64_t n, ota_bytes *out, ota_error *err);
bool utf8_ok(ota_bytes s);
/* Skips one item of valid deterministic CBOR (shortest heads and floats, a
 * map key once, valid UTF-8), nesting at most OTA_MAX_ATTESTATION_DEPTH
 * below depth. */
ota_err rd_skip(rd *r, unsigned depth, ota_error *err);
/* Text of 1..cap-1 bytes, UTF-8, no NUL (no controls when printable). */
ota_err rd_text(rd *r, const char *claim, char *out, size_t cap, bool printable, ota_error *err);
ota_err rd_uint(rd *r, const char *claim, int64_t *out, ota_error *err);
ota_err rd_bstr(rd *r, const char *claim, uint8_t *out, size_t min, size_t max, size_t *out_len,
                ota_error *err);
/* A sha256: identity as text. */
ota_err rd_id(rd *r, const char *claim, char *out, size_t cap, ota_error *err);
#endif
