/*
 * Pure parsers of HTTP header values (ota/http.h).
 */
#include <string.h>
#include <strings.h>

#include "ota/http.h"
#include "ota/limits.h"

static bool is_ows(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* An RFC 9110 token character. */
static bool is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* qdtext without obs-text (RFC 9110 section 5.6.4) */
static bool is_qdtext(char ch)
{
	unsigned char c = (unsigned char)ch;
	return c == '\t' || (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\');
}

bool ota_http_media_type_is(const char *ct, size_t n, const char *want,
                            const char *const *allowed)
{
	if (ct == NULL || want == NULL || n > OTA_MAX_HTTP_MEDIA_TYPE_BYTES)
		return false;
	size_t wl = strlen(want);
	if (n < wl || strncasecmp(ct, want, wl) != 0 || memchr(ct, '\0', wl) != NULL)
		return false;
	const char *p = ct + wl, *end = ct + n;
	unsigned seen = 0;
	for (;;) {
		while (p < end && is_ows(*p))
			p++;
		if (p == end)
			return true;
		if (*p++ != ';')
			return false;
		while (p < end && is_ows(*p))
			p++;
		if (p == end || *p == ';')
			continue; /* an empty parameter */
		const char *name = p;
		while (p < end && is_tchar(*p))
			p++;
		size_t nl = (size_t)(p - name);
		if (nl == 0 || p == end || *p++ != '=')
			return false;
		const char *val = p;
		size_t vl = 0;
		if (p < end && *p == '"') { /* a quoted-string without quoted-pairs */
			val = ++p;
			while (p < end && is_qdtext(*p))
				p++;
			if (p == end || *p != '"')
				return false;
			vl = (size_t)(p - val);
			p++;
		} else {
			while (p < end && is_tchar(*p))
				p++;
			vl = (size_t)(p - val);
		}
		if (vl == 0)
			return false;
		size_t i = 0;
		for (; allowed != NULL && allowed[i] != NULL && i < 32; i++) {
			const char *eq = strchr(allowed[i], '=');
			if (eq != NULL && (size_t)(eq - allowed[i]) == nl &&
			    strncasecmp(allowed[i], name, nl) == 0 && strlen(eq + 1) == vl &&
			    strncasecmp(eq + 1, val, vl) == 0)
				break;
		}
		if (allowed == NULL || i >= 32 || allowed[i] == NULL || (seen & (1u << i)))
			return false;
		seen |= 1u << i;
	}
}
