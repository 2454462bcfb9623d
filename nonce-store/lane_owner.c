/*
 * nonce-store/lane_owner.c - the issuer named by a stored acceptance, for
 * the schema 1 -> 2 migration (store.c: migrate_v1). A bounded reader over
 * bytes this store wrote itself; it never follows a length past the end and
 * refuses indefinite lengths.
 */
#include <string.h>

#include "nonce_internal.h"

enum { MAX_DEPTH = 16 };

typedef struct {
	const uint8_t *p, *end;
} cur;

/* One definite head: major type and argument. */
static bool rd_head(cur *c, unsigned *mt, uint64_t *v)
{
	if (c->p >= c->end)
		return false;
	uint8_t ib = *c->p++;
	unsigned ai = ib & 31u;
	*mt = ib >> 5;
	if (ai < 24) {
		*v = ai;
		return true;
	}
	if (ai > 27)
		return false;
	size_t n = (size_t)1 << (ai - 24);
	if ((size_t)(c->end - c->p) < n)
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++)
		x = x << 8 | c->p[i];
	c->p += n;
	*v = x;
	return true;
}

static bool take(cur *c, uint64_t n, ota_bytes *out)
{
	if (n > (uint64_t)(c->end - c->p))
		return false;
	out->ptr = c->p;
	out->len = (size_t)n;
	c->p += n;
	return true;
}

static bool skip(cur *c, unsigned depth)
{
	unsigned mt;
	uint64_t v;
	ota_bytes b;
	if (depth > MAX_DEPTH || !rd_head(c, &mt, &v))
		return false;
	switch (mt) {
	case 0:
	case 1:
	case 7:
		return true;
	case 2:
	case 3:
		return take(c, v, &b);
	case 6:
		return skip(c, depth + 1);
	default: /* 4 array, 5 map */
		if (mt == 5) {
			if (v > UINT64_MAX / 2)
				return false;
			v *= 2;
		}
		if (v > (uint64_t)(c->end - c->p))
			return false;
		for (uint64_t i = 0; i < v; i++)
			if (!skip(c, depth + 1))
				return false;
		return true;
	}
}

bool nonce_acceptance_issuer(ota_bytes acceptance, char *out, size_t cap)
{
	if (out == NULL || cap == 0)
		return false;
	out[0] = '\0';
	if (acceptance.ptr == NULL)
		return false;
	cur c = {acceptance.ptr, acceptance.ptr + acceptance.len};
	unsigned mt;
	uint64_t v;
	ota_bytes payload;
	/* 18([protected, unprotected, payload, signature]) */
	if (!rd_head(&c, &mt, &v) || mt != 6 || v != 18 || !rd_head(&c, &mt, &v) || mt != 4 ||
	    v != 4 || !skip(&c, 1) || !skip(&c, 1) || !rd_head(&c, &mt, &v) || mt != 2 ||
	    !take(&c, v, &payload))
		return false;
	cur p = {payload.ptr, payload.ptr + payload.len};
	uint64_t n;
	if (!rd_head(&p, &mt, &n) || mt != 5)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		ota_bytes key, val;
		cur save = p;
		if (!rd_head(&p, &mt, &v))
			return false;
		bool is_issuer = mt == 3 && take(&p, v, &key) && key.len == 6 &&
		                 memcmp(key.ptr, "issuer", 6) == 0;
		if (!is_issuer) {
			p = save;
			if (!skip(&p, 1) || !skip(&p, 1))
				return false;
			continue;
		}
		if (!rd_head(&p, &mt, &v) || mt != 3 || !take(&p, v, &val) || val.len >= cap ||
		    memchr(val.ptr, 0, val.len) != NULL)
			return false;
		memcpy(out, val.ptr, val.len);
		out[val.len] = '\0';
		return true;
	}
	return false;
}
