/*
 * ota/cbor.h - the one deterministic CBOR writer of the toolkit (RFC 8949
 * section 4.2.1: definite lengths, shortest heads). Encoders of claims,
 * acceptances and COSE structures use it; decoding stays with each strict
 * reader.
 */
#ifndef OTA_CBOR_H
#define OTA_CBOR_H

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	OTA_CBOR_UINT = 0,
	OTA_CBOR_NINT = 1,
	OTA_CBOR_BSTR = 2,
	OTA_CBOR_TSTR = 3,
	OTA_CBOR_ARRAY = 4,
	OTA_CBOR_MAP = 5,
	OTA_CBOR_TAG = 6,
	OTA_CBOR_SIMPLE = 7
};

/* The shortest head of major type mt with argument v into out[9]; returns its length. */
OTA_API size_t ota_cbor_head_encode(uint8_t out[9], unsigned mt, uint64_t v);

/*
 * A growable output buffer. Start with {0}; p is new (free()). After an
 * allocation failure oom is set and further writes do nothing, so callers
 * check once at the end.
 */
typedef struct ota_cbor_wr {
	uint8_t *p;
	size_t len, cap;
	bool oom;
} ota_cbor_wr;

OTA_API void ota_cbor_put(ota_cbor_wr *w, const void *p, size_t n);
OTA_API void ota_cbor_head(ota_cbor_wr *w, unsigned mt, uint64_t v);
OTA_API void ota_cbor_int(ota_cbor_wr *w, int64_t v);
/* A text string of strlen(s) bytes (s must be UTF-8). */
OTA_API void ota_cbor_text(ota_cbor_wr *w, const char *s);
OTA_API void ota_cbor_bstr(ota_cbor_wr *w, const uint8_t *p, size_t n);
OTA_API void ota_cbor_null(ota_cbor_wr *w);

/*
 * A bounded peek over definite-length CBOR, for picking a value out of bytes
 * before (or without) their strict parse: it never reads past len, refuses
 * indefinite lengths and counts that cannot fit, and checks nothing else
 * (not shortest form, not UTF-8, not key order). Strict readers stay with
 * their modules. Start with {p, len, 0}.
 */
typedef struct ota_cbor_rd {
	const uint8_t *p;
	size_t len, off;
} ota_cbor_rd;

/* One head: major type and argument; false at the end or on ai 28..31. */
OTA_API bool ota_cbor_rd_head(ota_cbor_rd *r, unsigned *mt, uint64_t *v);
/* The next n bytes into out (pointing into the input). */
OTA_API bool ota_cbor_rd_take(ota_cbor_rd *r, uint64_t n, ota_bytes *out);
/* Skips one item, nesting at most max_depth levels below it. */
OTA_API bool ota_cbor_rd_skip(ota_cbor_rd *r, unsigned max_depth);

/*
 * Frames a CBOR sequence (RFC 8742: whole items one after the other, nothing
 * between or after): parts[0..*n) point into seq, each one item that nests
 * at most max_depth levels (ota_cbor_rd_skip's bounded walk; the items' own
 * readers judge them strictly). Returns OTA_OK with *n >= 0 (0 for no
 * bytes); OTA_ERR_TOO_LARGE when seq holds more than max items (*n = max);
 * OTA_ERR_ATT_BATCH_MALFORMED when an item is not whole (*n items before
 * it, *bad_at its offset). Never reads past seq.len.
 */
OTA_API OTA_NODISCARD ota_err ota_cbor_seq_split(ota_bytes seq, unsigned max_depth,
                                                 ota_bytes *parts, size_t max, size_t *n,
                                                 size_t *bad_at);

#ifdef __cplusplus
}
#endif
#endif
