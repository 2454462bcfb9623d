/*
 * ota/common.h - byte spans, errors, clock and secret hygiene shared by every
 * module of the Ota sandbox evidence toolkit.
 *
 * Ownership vocabulary (jansson's): "borrowed" = caller keeps it; "new" =
 * caller frees; "takes ownership" = callee frees, even on failure; "points
 * into input" = valid only while the input is.
 */
#ifndef OTA_COMMON_H
#define OTA_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define OTA_API __attribute__((visibility("default")))
#define OTA_NODISCARD __attribute__((warn_unused_result))
#define OTA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OTA_API
#define OTA_NODISCARD
#define OTA_PRINTF(f, a)
#endif

/* Read-only view of bytes we do not own. Untrusted input enters only so. */
typedef struct {
	const uint8_t *ptr;
	size_t len;
} ota_bytes;

/* Caller's writable space: ptr with capacity cap. */
typedef struct {
	uint8_t *ptr;
	size_t cap;
} ota_buf;

static inline ota_bytes ota_bytes_make(const void *p, size_t n)
{
	ota_bytes b;
	b.ptr = (const uint8_t *)p;
	b.len = n;
	return b;
}

#include "ota/err.h"

/*
 * Detail for one refusal: the stable code, where it happened (file:line:col,
 * a JSON pointer, a CBOR position or a field name) and what was wrong, in
 * words. Functions that parse untrusted input take an optional ota_error *
 * (NULL allowed) and fill it on failure; the first error set wins.
 */
typedef struct ota_error {
	ota_err code;
	char where[256];
	char what[256];
} ota_error;

/* Clears e (if not NULL) to OTA_OK and empty strings. */
OTA_API void ota_error_clear(ota_error *e);

/*
 * Records code, where and a printf-formatted what into e (if e is not NULL
 * and no error was recorded yet) and returns code, so callers can write
 * `return ota_error_set(err, OTA_ERR_X, "path", "...")`.
 */
OTA_API ota_err ota_error_set(ota_error *e, ota_err code, const char *where,
                              const char *fmt, ...) OTA_PRINTF(4, 5);
OTA_API ota_err ota_error_vset(ota_error *e, ota_err code, const char *where,
                               const char *fmt, va_list ap) OTA_PRINTF(4, 0);

/* ---- clock (injected; no module reads the system time on its own) ---- */

typedef struct ota_clock {
	/* Seconds since the Unix epoch. */
	int64_t (*now)(void *ctx);
	void *ctx;
} ota_clock;

/* The system's real-time clock. */
OTA_API ota_clock ota_clock_system(void);
/* A clock that always answers *t (borrowed; tests move it). */
OTA_API ota_clock ota_clock_fixed(const int64_t *t);
/* c->now(c->ctx), or the system time when c is NULL. */
OTA_API int64_t ota_clock_now(const ota_clock *c);

/* ---- secrets ---- */

/* Wipes n bytes at p in a way the compiler cannot elide. */
OTA_API void ota_wipe(void *p, size_t n);
/* Constant-time equality of two equal-length spans; false if lengths differ. */
OTA_API bool ota_ct_equal(ota_bytes a, ota_bytes b);

/* ---- small helpers ---- */

/*
 * Lowercase hex of in into out (must hold 2*in.len+1 bytes); NUL-terminated.
 */
OTA_API void ota_hex_encode(ota_bytes in, char *out);
/*
 * Decodes hex (either case, even length) into out (capacity out.cap);
 * *out_len receives the byte count. OTA_ERR_BAD_HEX on bad input,
 * OTA_ERR_TOO_LARGE when out is too small.
 */
OTA_API OTA_NODISCARD ota_err ota_hex_decode(const char *hex, size_t hex_len,
                                             ota_buf out, size_t *out_len);

/*
 * Reads a whole file of at most max bytes. *out is new (caller frees with
 * free()), NUL-terminated beyond *out_len. OTA_ERR_IO when unreadable,
 * OTA_ERR_TOO_LARGE beyond max (checked before reading it all).
 */
OTA_API OTA_NODISCARD ota_err ota_file_read(const char *path, size_t max,
                                            uint8_t **out, size_t *out_len,
                                            ota_error *err);

/*
 * Writes data to path atomically: a temporary file in the same directory,
 * fsync, rename, fsync of the directory. mode is the file's permission
 * (0600 for secrets). Never leaves a partial file under path.
 */
OTA_API OTA_NODISCARD ota_err ota_file_write_atomic(const char *path,
                                                    ota_bytes data,
                                                    unsigned mode,
                                                    ota_error *err);

/* Standard base64 (with padding). *out new, NUL-terminated. */
OTA_API OTA_NODISCARD ota_err ota_base64_encode(ota_bytes in, char **out);
/* Standard or url-safe base64, padding optional. *out new. */
OTA_API OTA_NODISCARD ota_err ota_base64_decode(const char *in, size_t in_len,
                                                uint8_t **out, size_t *out_len);
/* base64url without padding. *out new, NUL-terminated. */
OTA_API OTA_NODISCARD ota_err ota_base64url_encode(ota_bytes in, char **out);

/* "sha256:" + lowercase hex of SHA-256(data); out holds OTA_ID_LEN+1 bytes. */
#define OTA_ID_LEN 71
OTA_API OTA_NODISCARD ota_err ota_sha256_id(ota_bytes data, char out[OTA_ID_LEN + 1]);
/* Raw SHA-256 of data into out[32]. */
OTA_API OTA_NODISCARD ota_err ota_sha256(ota_bytes data, uint8_t out[32]);
/* true when s has the exact shape "sha256:" + 64 lowercase hex digits. */
OTA_API bool ota_id_is_valid(const char *s);

/* The toolkit's version string ("0.1.0"), bound into evidence. */
OTA_API const char *ota_version(void);

#ifdef __cplusplus
}
#endif
#endif
