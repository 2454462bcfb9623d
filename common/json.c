/*
 * Strict JSON input over jansson and RFC 8785 (JCS) canonical output.
 *
 * JCS rules implemented here (RFC 8785 section 3.2):
 *  - no whitespace;
 *  - object members sorted by the UTF-16 code units of their names
 *    (not by UTF-8 bytes: astral-plane names sort before U+E000..U+FFFF);
 *  - strings: '"' and '\\' escaped, U+0000..U+001F escaped as \b \t \n \f \r
 *    or \u00xx (lowercase hex), everything else literal UTF-8;
 *  - numbers: ECMAScript form. We only admit integers within +-(2^53-1),
 *    whose ECMAScript form is the plain decimal; reals are refused
 *    (identified objects hold integers only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "md.h"
#include "ota/json.h"
#include "ota/limits.h"

/* ---- strict parse ---- */

static ota_err check_depth(const json_t *v, unsigned depth, ota_error *err)
{
	if (depth > OTA_MAX_JSON_DEPTH)
		return ota_error_set(err, OTA_ERR_TOO_DEEP, "json",
		                     "nesting deeper than %u", OTA_MAX_JSON_DEPTH);
	if (json_is_object(v)) {
		const char *k;
		json_t *m;
		json_object_foreach((json_t *)(uintptr_t)v, k, m) {
			ota_err rc = check_depth(m, depth + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *m;
		json_array_foreach(v, i, m) {
			ota_err rc = check_depth(m, depth + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
	}
	return OTA_OK;
}

ota_err ota_json_parse(ota_bytes in, json_t **out, ota_error *err)
{
	*out = NULL;
	if (in.len > OTA_MAX_JSON_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "json",
		                     "document has %zu bytes, limit is %u", in.len,
		                     OTA_MAX_JSON_BYTES);
	json_error_t je;
	/* no bytes may come as a NULL pointer (an empty request body), which
	 * jansson refuses as "wrong arguments" at line -1, column -1 */
	json_t *v = json_loadb(in.ptr != NULL ? (const char *)in.ptr : "", in.len,
	                       JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (v == NULL) {
		ota_err code = OTA_ERR_JSON_SYNTAX;
		switch (json_error_code(&je)) {
		case json_error_duplicate_key:
			code = OTA_ERR_JSON_DUPLICATE_KEY;
			break;
		case json_error_invalid_utf8:
			code = OTA_ERR_JSON_INVALID_UTF8;
			break;
		case json_error_numeric_overflow:
			code = OTA_ERR_JSON_NUMBER_RANGE;
			break;
		case json_error_stack_overflow:
			code = OTA_ERR_TOO_DEEP;
			break;
		default:
			break;
		}
		char where[64];
		snprintf(where, sizeof where, "line %d, column %d", je.line, je.column);
		return ota_error_set(err, code, where, "%s", je.text);
	}
	ota_err rc = check_depth(v, 0, err);
	if (rc != OTA_OK) {
		json_decref(v);
		return rc;
	}
	*out = v;
	return OTA_OK;
}

/* ---- output: a growable buffer, or a SHA-256 stream ---- */

#define SB_CHUNK 16384u

typedef struct {
	char *p;
	size_t len, cap;
	bool oom;
	EVP_MD_CTX *md; /* non-NULL: flushed into this digest, never grown past SB_CHUNK */
	EVP_MD_CTX *md2; /* with md: the digest of the value of the top object's member tap */
	const char *tap;
	bool md2_on;     /* while that value is written: flushed into md2 as well */
} sbuf;

static bool sb_digest(sbuf *b, const void *p, size_t n)
{
	return EVP_DigestUpdate(b->md, p, n) == 1 &&
	       (!b->md2_on || EVP_DigestUpdate(b->md2, p, n) == 1);
}

static void sb_flush(sbuf *b)
{
	if (b->md != NULL && b->len > 0) {
		if (!sb_digest(b, b->p, b->len))
			b->oom = true;
		b->len = 0;
	}
}

static void sb_grow(sbuf *b, size_t n)
{
	if (b->md != NULL) {
		sb_flush(b);
		if (n <= b->cap)
			return;
		/* one piece larger than the chunk: hash it in place by the caller */
		return;
	}
	size_t ncap = b->cap ? b->cap : 256;
	while (b->len + n + 1 > ncap)
		ncap *= 2;
	char *np = realloc(b->p, ncap);
	if (np == NULL) {
		b->oom = true;
		return;
	}
	b->p = np;
	b->cap = ncap;
}

static void sb_put(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		sb_grow(b, n);
		if (b->oom)
			return;
		if (b->md != NULL && n + 1 > b->cap) {
			if (!sb_digest(b, s, n))
				b->oom = true;
			return;
		}
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void sb_putc(sbuf *b, char c)
{
	if (b->len + 2 <= b->cap && !b->oom)
		b->p[b->len++] = c;
	else
		sb_put(b, &c, 1);
}

/* ---- UTF-8 ---- */

size_t ota_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	size_t len;
	uint32_t v, min;
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		v = c & 0x1f;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		v = c & 0x0f;
		min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		v = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* ---- JCS ---- */

typedef struct {
	const char *key;
	size_t key_len;
	json_t *value;
} member;

/*
 * Member names in the order of their UTF-16 code units, compared on their
 * UTF-8 bytes. Byte order is code point order; UTF-16 order differs only
 * where a supplementary character (a surrogate pair, 0xD800..0xDBFF first)
 * meets a BMP character at or above U+E000. Names that are not valid UTF-8
 * are refused when they are written; here they compare by bytes.
 */
static int member_cmp(const void *a, const void *b)
{
	const member *x = a, *y = b;
	const unsigned char *p = (const unsigned char *)x->key, *q = (const unsigned char *)y->key;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len, i = 0;
	while (i < n && p[i] == q[i])
		i++;
	if (i == n)
		return x->key_len == y->key_len ? 0 : (x->key_len < y->key_len ? -1 : 1);
	if (p[i] < 0x80 || q[i] < 0x80)
		return p[i] < q[i] ? -1 : 1;
	while (i > 0 && (p[i] & 0xc0) == 0x80) /* back to the start of the character */
		i--;
	uint32_t cx, cy;
	if (ota_utf8_next(p + i, x->key_len - i, &cx) == 0 ||
	    ota_utf8_next(q + i, y->key_len - i, &cy) == 0)
		return p[i] < q[i] ? -1 : (p[i] > q[i] ? 1 : 0);
	if ((cx >= 0x10000) != (cy >= 0x10000)) {
		/* one surrogate pair: its high surrogate against the BMP unit */
		if (cx >= 0x10000)
			cx = 0xd800 | ((cx - 0x10000) >> 10);
		else
			cy = 0xd800 | ((cy - 0x10000) >> 10);
	}
	return cx < cy ? -1 : (cx > cy ? 1 : 0);
}

static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

size_t ota_jcs_escape(unsigned char c, char e[6])
{
	static const char hex[] = "0123456789abcdef";
	char x;
	switch (c) {
	case '"':
		x = '"';
		break;
	case '\\':
		x = '\\';
		break;
	case '\b':
		x = 'b';
		break;
	case '\t':
		x = 't';
		break;
	case '\n':
		x = 'n';
		break;
	case '\f':
		x = 'f';
		break;
	case '\r':
		x = 'r';
		break;
	default:
		if (c >= 0x20)
			return 0;
		memcpy(e, "\\u00", 4);
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		return 6;
	}
	e[0] = '\\';
	e[1] = x;
	return 2;
}

size_t ota_jcs_integer(long long v, char out[24])
{
	char num[24];
	size_t k = sizeof num;
	unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		num[--k] = (char)('0' + m % 10);
		m /= 10;
	} while (m != 0);
	if (v < 0)
		num[--k] = '-';
	memcpy(out, num + k, sizeof num - k);
	return sizeof num - k;
}

static ota_err put_string(sbuf *b, const char *s, size_t n, ota_error *err)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	sb_putc(b, '"');
	while (i < n) {
		size_t r = i;
		while (r < n && plain(u[r]))
			r++;
		if (r > i) {
			sb_put(b, s + i, r - i);
			i = r;
			if (i == n)
				break;
		}
		unsigned char c = u[i];
		if (c >= 0x80) {
			uint32_t cp;
			size_t k = ota_utf8_next(u + i, n - i, &cp);
			if (k == 0)
				return ota_error_set(err, OTA_ERR_JSON_INVALID_UTF8, "json",
				                     "string is not valid UTF-8");
			sb_put(b, s + i, k);
			i += k;
			continue;
		}
		char e[6];
		sb_put(b, e, ota_jcs_escape(c, e));
		i++;
	}
	sb_putc(b, '"');
	return OTA_OK;
}

static void put_int(sbuf *b, long long v)
{
	char num[24];
	sb_put(b, num, ota_jcs_integer(v, num));
}

/* Members sorted in m (n of them); insertion sort for the small objects
 * identified records are made of, qsort beyond. */
static void sort_members(member *m, size_t n)
{
	if (n > 24) {
		qsort(m, n, sizeof *m, member_cmp);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		member t = m[i];
		size_t j = i;
		while (j > 0 && member_cmp(&m[j - 1], &t) > 0) {
			m[j] = m[j - 1];
			j--;
		}
		m[j] = t;
	}
}

static ota_err jcs_value(sbuf *b, const json_t *v, unsigned depth, ota_error *err)
{
	if (depth > OTA_MAX_JSON_DEPTH)
		return ota_error_set(err, OTA_ERR_TOO_DEEP, "json", "nesting deeper than %u",
		                     OTA_MAX_JSON_DEPTH);
	switch (json_typeof(v)) {
	case JSON_NULL:
		sb_put(b, "null", 4);
		return OTA_OK;
	case JSON_TRUE:
		sb_put(b, "true", 4);
		return OTA_OK;
	case JSON_FALSE:
		sb_put(b, "false", 5);
		return OTA_OK;
	case JSON_REAL:
		return ota_error_set(err, OTA_ERR_JSON_FLOAT, "json",
		                     "real number %.17g in an identified object", json_real_value(v));
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);
		if (i > OTA_JSON_MAX_SAFE_INT || i < -OTA_JSON_MAX_SAFE_INT)
			return ota_error_set(err, OTA_ERR_JSON_NUMBER_RANGE, "json",
			                     "integer %lld outside +-(2^53-1)", (long long)i);
		put_int(b, (long long)i);
		return OTA_OK;
	}
	case JSON_STRING:
		return put_string(b, json_string_value(v), json_string_length(v), err);
	case JSON_ARRAY: {
		sb_putc(b, '[');
		size_t n = json_array_size(v);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				sb_putc(b, ',');
			ota_err rc = jcs_value(b, json_array_get(v, i), depth + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
		sb_putc(b, ']');
		return OTA_OK;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		member small[32];
		member *m = n <= 32 ? small : calloc(n, sizeof *m);
		if (m == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "json", NULL);
		ota_err rc = OTA_OK;
		for (void *it = json_object_iter((json_t *)(uintptr_t)v); it != NULL && i < n;
		     it = json_object_iter_next((json_t *)(uintptr_t)v, it), i++) {
			m[i].key = json_object_iter_key(it);
			m[i].key_len = json_object_iter_key_len(it);
			m[i].value = json_object_iter_value(it);
		}
		sort_members(m, i);
		sb_putc(b, '{');
		for (size_t k = 0; k < i; k++) {
			if (k > 0)
				sb_putc(b, ',');
			rc = put_string(b, m[k].key, m[k].key_len, err);
			if (rc != OTA_OK) {
				if (rc == OTA_ERR_JSON_INVALID_UTF8)
					rc = ota_error_set(err, OTA_ERR_JSON_INVALID_UTF8, "json",
					                   "member name is not valid UTF-8");
				break;
			}
			sb_putc(b, ':');
			/* the tapped member's value goes into md2 as well (flushed
			 * before and after it: md2 sees exactly its bytes) */
			bool tap = depth == 0 && b->md2 != NULL && strlen(b->tap) == m[k].key_len &&
			           memcmp(b->tap, m[k].key, m[k].key_len) == 0;
			if (tap) {
				sb_flush(b);
				b->md2_on = true;
			}
			rc = jcs_value(b, m[k].value, depth + 1, err);
			if (tap) {
				sb_flush(b);
				b->md2_on = false;
			}
			if (rc != OTA_OK)
				break;
		}
		if (rc == OTA_OK)
			sb_putc(b, '}');
		if (m != small)
			free(m);
		return rc;
	}
	}
	return ota_error_set(err, OTA_ERR_JSON_TYPE, "json", "unknown JSON type");
}

ota_err ota_jcs_serialize(const json_t *v, char **out, size_t *out_len, ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	if (v == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "json", "no value");
	sbuf b = {0};
	ota_err rc = jcs_value(&b, v, 0, err);
	if (rc == OTA_OK && b.oom)
		rc = ota_error_set(err, OTA_ERR_NOMEM, "json", NULL);
	if (rc != OTA_OK) {
		free(b.p);
		return rc;
	}
	if (b.p == NULL) { /* cannot happen: every value writes something */
		free(b.p);
		return ota_error_set(err, OTA_ERR_INTERNAL, "json", "empty output");
	}
	b.p[b.len] = '\0'; /* sb_grow keeps one byte spare */
	*out = b.p;
	*out_len = b.len;
	return OTA_OK;
}

/* "sha256:" + the hex of a finished SHA-256 digest of md. */
static bool id_final(EVP_MD_CTX *md, char out[OTA_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[32];
	unsigned int dl = 0;
	if (EVP_DigestFinal_ex(md, d, &dl) != 1 || dl != 32)
		return false;
	memcpy(out, "sha256:", 7);
	for (size_t i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[d[i] >> 4];
		out[8 + 2 * i] = hex[d[i] & 15];
	}
	out[OTA_ID_LEN] = '\0';
	return true;
}

/*
 * The identity streams the canonical bytes into SHA-256 (no whole copy);
 * with tap, the bytes of the value of v's member tap (when v is an object
 * that has one) stream into a second digest on the way: its identity in
 * tap_out ("" without such a member).
 */
static ota_err jcs_identity(const json_t *v, char out[OTA_ID_LEN + 1], const char *tap,
                            char tap_out[OTA_ID_LEN + 1], ota_error *err)
{
	out[0] = '\0';
	if (tap_out != NULL)
		tap_out[0] = '\0';
	if (v == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "json", "no value");
	char chunk[SB_CHUNK];
	sbuf b = {0};
	b.p = chunk;
	b.cap = sizeof chunk;
	b.md = EVP_MD_CTX_new();
	bool tapped = tap != NULL && json_is_object(v) && json_object_get(v, tap) != NULL;
	if (tapped)
		b.md2 = EVP_MD_CTX_new();
	b.tap = tap;
	if (b.md == NULL || EVP_DigestInit_ex(b.md, ota_md_sha2(256), NULL) != 1 ||
	    (tapped && (b.md2 == NULL || EVP_DigestInit_ex(b.md2, ota_md_sha2(256), NULL) != 1))) {
		EVP_MD_CTX_free(b.md);
		EVP_MD_CTX_free(b.md2);
		return ota_error_set(err, OTA_ERR_CRYPTO, "json", "sha256");
	}
	ota_err rc = jcs_value(&b, v, 0, err);
	sb_flush(&b);
	if (rc == OTA_OK && (b.oom || !id_final(b.md, out) || (tapped && !id_final(b.md2, tap_out))))
		rc = ota_error_set(err, OTA_ERR_CRYPTO, "json", "sha256");
	EVP_MD_CTX_free(b.md);
	EVP_MD_CTX_free(b.md2);
	if (rc != OTA_OK) {
		out[0] = '\0';
		if (tap_out != NULL)
			tap_out[0] = '\0';
	}
	return rc;
}

ota_err ota_jcs_identity(const json_t *v, char out[OTA_ID_LEN + 1], ota_error *err)
{
	return jcs_identity(v, out, NULL, NULL, err);
}

ota_err ota_json_identity(const json_t *v, char out[OTA_ID_LEN + 1], ota_error *err)
{
	out[0] = '\0';
	const json_t *kind = json_is_object(v) ? json_object_get(v, "kind") : NULL;
	if (!json_is_string(kind) || strncmp(json_string_value(kind), "ota.", 4) != 0)
		return ota_error_set(err, OTA_ERR_JSON_KIND, "kind",
		                     "identified object needs a string kind \"ota.<name>/v1\"");
	return ota_jcs_identity(v, out, err);
}

ota_err ota_json_identity_and(const json_t *v, char out[OTA_ID_LEN + 1], const char *name,
                              char member_out[OTA_ID_LEN + 1], ota_error *err)
{
	out[0] = '\0';
	member_out[0] = '\0';
	const json_t *kind = json_is_object(v) ? json_object_get(v, "kind") : NULL;
	if (!json_is_string(kind) || strncmp(json_string_value(kind), "ota.", 4) != 0)
		return ota_error_set(err, OTA_ERR_JSON_KIND, "kind",
		                     "identified object needs a string kind \"ota.<name>/v1\"");
	if (name == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "json", "no member");
	return jcs_identity(v, out, name, member_out, err);
}

char *ota_json_dumps(const json_t *v, bool pretty)
{
	return json_dumps(v, JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
	                             JSON_PRESERVE_ORDER);
}
