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
	json_t *v = json_loadb((const char *)in.ptr, in.len,
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

/* ---- growable output buffer ---- */

typedef struct {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
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
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_putc(sbuf *b, char c)
{
	sb_put(b, &c, 1);
}

/* ---- UTF-8 ---- */

/* Decodes one scalar value; returns bytes used or 0 when malformed. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
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

/* UTF-16 code units of a UTF-8 string; *out new. false when malformed/OOM. */
static bool to_utf16(const char *s, size_t n, uint16_t **out, size_t *out_len)
{
	uint16_t *u = malloc((n + 1) * sizeof *u);
	if (u == NULL)
		return false;
	size_t j = 0, i = 0;
	while (i < n) {
		uint32_t cp;
		size_t k = utf8_next((const unsigned char *)s + i, n - i, &cp);
		if (k == 0) {
			free(u);
			return false;
		}
		i += k;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			u[j++] = (uint16_t)(0xd800 | (cp >> 10));
			u[j++] = (uint16_t)(0xdc00 | (cp & 0x3ff));
		} else {
			u[j++] = (uint16_t)cp;
		}
	}
	*out = u;
	*out_len = j;
	return true;
}

/* ---- JCS ---- */

typedef struct {
	const char *key;
	size_t key_len;
	uint16_t *u16;
	size_t u16_len;
	json_t *value;
} member;

static int member_cmp(const void *a, const void *b)
{
	const member *x = a, *y = b;
	size_t n = x->u16_len < y->u16_len ? x->u16_len : y->u16_len;
	for (size_t i = 0; i < n; i++)
		if (x->u16[i] != y->u16[i])
			return x->u16[i] < y->u16[i] ? -1 : 1;
	if (x->u16_len == y->u16_len)
		return 0;
	return x->u16_len < y->u16_len ? -1 : 1;
}

static ota_err put_string(sbuf *b, const char *s, size_t n, ota_error *err)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;
	sb_putc(b, '"');
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x80) {
			uint32_t cp;
			size_t k = utf8_next((const unsigned char *)s + i, n - i, &cp);
			if (k == 0)
				return ota_error_set(err, OTA_ERR_JSON_INVALID_UTF8, "json",
				                     "string is not valid UTF-8");
			sb_put(b, s + i, k);
			i += k;
			continue;
		}
		switch (c) {
		case '"':
			sb_put(b, "\\\"", 2);
			break;
		case '\\':
			sb_put(b, "\\\\", 2);
			break;
		case '\b':
			sb_put(b, "\\b", 2);
			break;
		case '\t':
			sb_put(b, "\\t", 2);
			break;
		case '\n':
			sb_put(b, "\\n", 2);
			break;
		case '\f':
			sb_put(b, "\\f", 2);
			break;
		case '\r':
			sb_put(b, "\\r", 2);
			break;
		default:
			if (c < 0x20) {
				char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				sb_put(b, e, 6);
			} else {
				sb_putc(b, (char)c);
			}
		}
		i++;
	}
	sb_putc(b, '"');
	return OTA_OK;
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
		char num[32];
		int n = snprintf(num, sizeof num, "%lld", (long long)i);
		sb_put(b, num, (size_t)n);
		return OTA_OK;
	}
	case JSON_STRING:
		return put_string(b, json_string_value(v), json_string_length(v), err);
	case JSON_ARRAY: {
		sb_putc(b, '[');
		for (size_t i = 0; i < json_array_size(v); i++) {
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
		member *m = calloc(n ? n : 1, sizeof *m);
		if (m == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "json", NULL);
		ota_err rc = OTA_OK;
		for (void *it = json_object_iter((json_t *)(uintptr_t)v); it != NULL && i < n;
		     it = json_object_iter_next((json_t *)(uintptr_t)v, it), i++) {
			m[i].key = json_object_iter_key(it);
			m[i].key_len = json_object_iter_key_len(it);
			m[i].value = json_object_iter_value(it);
			if (!to_utf16(m[i].key, m[i].key_len, &m[i].u16, &m[i].u16_len)) {
				rc = ota_error_set(err, OTA_ERR_JSON_INVALID_UTF8, "json",
				                   "member name is not valid UTF-8");
				goto out_free;
			}
		}
		qsort(m, i, sizeof *m, member_cmp);
		sb_putc(b, '{');
		for (size_t k = 0; k < i; k++) {
			if (k > 0)
				sb_putc(b, ',');
			rc = put_string(b, m[k].key, m[k].key_len, err);
			if (rc != OTA_OK)
				goto out_free;
			sb_putc(b, ':');
			rc = jcs_value(b, m[k].value, depth + 1, err);
			if (rc != OTA_OK)
				goto out_free;
		}
		sb_putc(b, '}');
	out_free:
		for (size_t k = 0; k < n; k++)
			free(m[k].u16);
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
	*out = b.p;
	*out_len = b.len;
	return OTA_OK;
}

ota_err ota_jcs_identity(const json_t *v, char out[OTA_ID_LEN + 1], ota_error *err)
{
	char *s;
	size_t n;
	out[0] = '\0';
	ota_err rc = ota_jcs_serialize(v, &s, &n, err);
	if (rc != OTA_OK)
		return rc;
	rc = ota_sha256_id(ota_bytes_make(s, n), out);
	free(s);
	return rc;
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

char *ota_json_dumps(const json_t *v, bool pretty)
{
	return json_dumps(v, JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
	                             JSON_PRESERVE_ORDER);
}
