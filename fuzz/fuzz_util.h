/*
 * fuzz/fuzz_util.h - small helpers shared by the libFuzzer targets (header
 * only: each target is one .c file, see fuzz/CMakeLists.txt).
 *
 *   FZ_CHECK(c)        abort (a libFuzzer crash) with the condition's text
 *   fz_terminal_safe(s) s holds nothing a terminal acts on (C0, DEL, C1,
 *                      bidirectional controls)
 *   fz_refusal(rc, e)  a refusal names itself: rc != OTA_OK, e->code == rc,
 *                      the name is a known stable name, and `where` is set
 *   fz_yaml_flow(v)    a JSON value as YAML flow text (new, free()): quoted
 *                      strings with \x, \u and \U escapes only, explicit
 *                      `? key : value` entries (no 1024-byte simple-key
 *                      limit), so that the strict YAML reader gives back
 *                      the same typed value: the "independent of
 *                      formatting" identities can be checked against it
 *   fz_write_file()    writes a whole file (harness fixtures)
 */
#ifndef OTA_FUZZ_UTIL_H
#define OTA_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/common.h"

#define FZ_CHECK(c)                                                                      \
	do {                                                                             \
		if (!(c)) {                                                              \
			fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #c, __FILE__, \
			        __LINE__);                                               \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* no byte or UTF-8 sequence a terminal acts on: C0, DEL, C1 (U+0080..U+009F),
 * U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069 */
static inline int fz_terminal_safe(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
		    (p[0] == 0xd8 && p[1] == 0x9c))
			return 0;
		if (p[0] == 0xe2 && p[1] == 0x80 &&
		    (p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xaa && p[2] <= 0xae)))
			return 0;
		if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
			return 0;
	}
	return 1;
}

static inline void fz_refusal(ota_err rc, const ota_error *e)
{
	ota_err back;
	FZ_CHECK(rc != OTA_OK);
	FZ_CHECK(e->code == rc);
	FZ_CHECK(ota_err_from_name(ota_err_name(rc), &back) && back == rc);
	FZ_CHECK(e->where[0] != '\0');
}

typedef struct {
	char *p;
	size_t len, cap;
	int oom;
} fz_sb;

static inline void fz_sb_put(fz_sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->len + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (np == NULL) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static inline void fz_sb_u64(fz_sb *b, unsigned long long v)
{
	char t[32];
	int n = snprintf(t, sizeof t, "%llu", v);
	if (n > 0 && (size_t)n < sizeof t)
		fz_sb_put(b, t, (size_t)n);
}

/* an escape: \ + letter + digits lowercase hex digits of v */
static inline void fz_sb_esc(fz_sb *b, char letter, unsigned long v, unsigned digits)
{
	char t[12];
	t[0] = '\\';
	t[1] = letter;
	for (unsigned i = 0; i < digits; i++)
		t[2 + i] = "0123456789abcdef"[(v >> (4 * (digits - 1 - i))) & 0xf];
	fz_sb_put(b, t, 2 + digits);
}

/* s (valid UTF-8, as jansson keeps it) as a YAML double-quoted scalar */
static inline void fz_yaml_str(fz_sb *b, const char *s, size_t n)
{
	fz_sb_put(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			if (c == '"' || c == '\\') {
				char t[2] = {'\\', (char)c};
				fz_sb_put(b, t, 2);
			} else if (c < 0x20 || c == 0x7f) {
				fz_sb_esc(b, 'x', c, 2);
			} else {
				fz_sb_put(b, (const char *)&s[i], 1);
			}
			i++;
			continue;
		}
		size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		unsigned long cp = c & (k == 4 ? 0x07u : k == 3 ? 0x0fu : 0x1fu);
		for (size_t j = 1; j < k && i + j < n; j++)
			cp = cp << 6 | ((unsigned char)s[i + j] & 0x3fu);
		if (cp > 0xffff)
			fz_sb_esc(b, 'U', cp, 8);
		else
			fz_sb_esc(b, 'u', cp, 4);
		i += k;
	}
	fz_sb_put(b, "\"", 1);
}

static inline void fz_yaml_value(fz_sb *b, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *x;
		int first = 1;
		fz_sb_put(b, "{", 1);
		json_object_foreach((json_t *)(uintptr_t)v, k, x) {
			fz_sb_put(b, first ? "? " : ", ? ", first ? 2 : 4);
			fz_yaml_str(b, k, strlen(k));
			fz_sb_put(b, " : ", 3);
			fz_yaml_value(b, x);
			first = 0;
		}
		fz_sb_put(b, "}", 1);
		break;
	}
	case JSON_ARRAY:
		fz_sb_put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i > 0)
				fz_sb_put(b, ", ", 2);
			fz_yaml_value(b, json_array_get(v, i));
		}
		fz_sb_put(b, "]", 1);
		break;
	case JSON_STRING:
		fz_yaml_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);
		if (i < 0) {
			fz_sb_put(b, "-", 1);
			fz_sb_u64(b, 0ull - (unsigned long long)i);
		} else {
			fz_sb_u64(b, (unsigned long long)i);
		}
		break;
	}
	case JSON_TRUE:
		fz_sb_put(b, "true", 4);
		break;
	case JSON_FALSE:
		fz_sb_put(b, "false", 5);
		break;
	default: /* null (reals never come out of the YAML reader) */
		fz_sb_put(b, "null", 4);
		break;
	}
}

/* NULL on allocation failure */
static inline char *fz_yaml_flow(const json_t *v, size_t *len)
{
	fz_sb b = {NULL, 0, 0, 0};
	fz_yaml_value(&b, v);
	fz_sb_put(&b, "\n", 1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

static inline void fz_write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FZ_CHECK(fd >= 0);
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t w = write(fd, q, n);
		FZ_CHECK(w > 0);
		q += w;
		n -= (size_t)w;
	}
	close(fd);
}

#endif
