/* Deterministic CBOR writing (see include/ota/cbor.h). */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "ota/cbor.h"

size_t ota_cbor_head_encode(uint8_t out[9], unsigned mt, uint64_t v)
{
	uint8_t m = (uint8_t)(mt << 5);
	if (v < 24) {
		out[0] = (uint8_t)(m | v);
		return 1;
	}
	size_t n = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffu ? 4 : 8;
	out[0] = (uint8_t)(m | (n == 1 ? 24 : n == 2 ? 25 : n == 4 ? 26 : 27));
	for (size_t i = 0; i < n; i++)
		out[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return 1 + n;
}

void ota_cbor_put(ota_cbor_wr *w, const void *p, size_t n)
{
	if (w->oom)
		return;
	if (w->cap - w->len < n) {
		size_t nc = w->cap * 2 + n + 256;
		uint8_t *np = realloc(w->p, nc);
		if (np == NULL) {
			w->oom = true;
			return;
		}
		w->p = np;
		w->cap = nc;
	}
	if (n > 0)
		memcpy(w->p + w->len, p, n);
	w->len += n;
}

void ota_cbor_head(ota_cbor_wr *w, unsigned mt, uint64_t v)
{
	uint8_t b[9];
	ota_cbor_put(w, b, ota_cbor_head_encode(b, mt, v));
}

void ota_cbor_int(ota_cbor_wr *w, int64_t v)
{
	if (v >= 0)
		ota_cbor_head(w, OTA_CBOR_UINT, (uint64_t)v);
	else
		ota_cbor_head(w, OTA_CBOR_NINT, (uint64_t)(-1 - v));
}

void ota_cbor_text(ota_cbor_wr *w, const char *s)
{
	size_t n = strlen(s);
	ota_cbor_head(w, OTA_CBOR_TSTR, n);
	ota_cbor_put(w, s, n);
}

void ota_cbor_bstr(ota_cbor_wr *w, const uint8_t *p, size_t n)
{
	ota_cbor_head(w, OTA_CBOR_BSTR, n);
	ota_cbor_put(w, p, n);
}

void ota_cbor_null(ota_cbor_wr *w)
{
	ota_cbor_head(w, OTA_CBOR_SIMPLE, 22);
}

bool ota_cbor_rd_head(ota_cbor_rd *r, unsigned *mt, uint64_t *v)
{
	if (r->off >= r->len)
		return false;
	uint8_t ib = r->p[r->off++];
	unsigned ai = ib & 31u;
	*mt = ib >> 5;
	if (ai < 24) {
		*v = ai;
		return true;
	}
	if (ai > 27)
		return false;
	size_t n = (size_t)1 << (ai - 24);
	if (r->len - r->off < n)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++)
		x = x << 8 | r->p[r->off + i];
	r->off += n;
	*v = x;
	return true;
}

bool ota_cbor_rd_take(ota_cbor_rd *r, uint64_t n, ota_bytes *out)
{
	if (n > (uint64_t)(r->len - r->off))
		return false;
	out->ptr = r->p + r->off;
	out->len = (size_t)n;
	r->off += (size_t)n;
	return true;
}

bool ota_cbor_rd_skip(ota_cbor_rd *r, unsigned max_depth)
{
	unsigned mt;
	uint64_t v;
	ota_bytes b;
	if (!ota_cbor_rd_head(r, &mt, &v))
		return false;
	switch (mt) {
	case OTA_CBOR_BSTR:
	case OTA_CBOR_TSTR:
		return ota_cbor_rd_take(r, v, &b);
	case OTA_CBOR_TAG:
		return max_depth > 0 && ota_cbor_rd_skip(r, max_depth - 1);
	case OTA_CBOR_ARRAY:
	case OTA_CBOR_MAP:
		if (max_depth == 0)
			return false;
		if (mt == OTA_CBOR_MAP) {
			if (v > UINT64_MAX / 2)
				return false;
			v *= 2;
		}
		if (v > (uint64_t)(r->len - r->off)) /* each item takes a byte at least */
			return false;
		for (uint64_t i = 0; i < v; i++)
			if (!ota_cbor_rd_skip(r, max_depth - 1))
				return false;
		return true;
	default: /* integers, simple values and floats: the head was all */
		return true;
	}
}

ota_err ota_cbor_seq_split(ota_bytes seq, unsigned max_depth, ota_bytes *parts, size_t max,
                           size_t *n, size_t *bad_at)
{
	ota_cbor_rd r = {seq.ptr, seq.len, 0};
	*n = 0;
	*bad_at = 0;
	while (r.off < r.len) {
		size_t at = r.off;
		if (*n == max)
			return OTA_ERR_TOO_LARGE;
		if (!ota_cbor_rd_skip(&r, max_depth)) {
			*bad_at = at;
			return OTA_ERR_ATT_BATCH_MALFORMED;
		}
		parts[(*n)++] = ota_bytes_make(seq.ptr + at, r.off - at);
	}
	return OTA_OK;
}
