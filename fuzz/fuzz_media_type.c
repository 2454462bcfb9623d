/*
 * fuzz_media_type: the attestation endpoint's Content-Type check
 * (ota_http_media_type_is, common/http.c), on the bytes of any client's
 * header value.
 *
 * Input: one byte choosing the route (bit 0: application/cose with
 * cose-type=cose-sign1, else application/json with charset=utf-8; bit 1: no
 * parameter allowed), then the header value.
 *
 * Invariants: an accepted value starts with the media type (case aside)
 * and holds no NUL nor control byte other than HTAB; it stays accepted with
 * letters in another case, with an empty parameter or whitespace appended,
 * and the bare media type is accepted; the value cut before a NUL inside
 * is judged on its own, never passed because of what follows; anything over
 * the cap is refused.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_util.h"
#include "ota/http.h"
#include "ota/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_buf[OTA_MAX_HTTP_MEDIA_TYPE_BYTES + 8];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	static const char *const json_params[] = {"charset=utf-8", NULL};
	static const char *const cose_params[] = {"cose-type=cose-sign1", NULL};
	const char *want = (data[0] & 1) ? "application/cose" : "application/json";
	const char *const *allowed = (data[0] & 2) ? NULL : (data[0] & 1) ? cose_params : json_params;
	const char *ct = (const char *)data + 1;
	size_t n = size - 1, wl = strlen(want);
	bool ok = ota_http_media_type_is(ct, n, want, allowed);
	if (n > OTA_MAX_HTTP_MEDIA_TYPE_BYTES) {
		FZ_CHECK(!ok);
		return 0;
	}
	if (!ok)
		return 0;
	FZ_CHECK(n >= wl && strncasecmp(ct, want, wl) == 0);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(ct[i] == '\t' || ((unsigned char)ct[i] >= 0x20 && (unsigned char)ct[i] < 0x7f));
	FZ_CHECK(ota_http_media_type_is(want, wl, want, allowed));
	/* another case */
	for (size_t i = 0; i < n; i++)
		g_buf[i] = (char)((i & 1) ? toupper((unsigned char)ct[i]) : tolower((unsigned char)ct[i]));
	FZ_CHECK(ota_http_media_type_is(g_buf, n, want, allowed));
	/* an empty parameter, whitespace appended (within the cap) */
	memcpy(g_buf, ct, n);
	if (n + 2 <= OTA_MAX_HTTP_MEDIA_TYPE_BYTES) {
		memcpy(g_buf + n, "; ", 2);
		FZ_CHECK(ota_http_media_type_is(g_buf, n + 2, want, allowed));
		memcpy(g_buf + n, "\t;", 2);
		FZ_CHECK(ota_http_media_type_is(g_buf, n + 2, want, allowed));
	}
	/* a NUL or a line break anywhere after the media type refuses it */
	if (n < OTA_MAX_HTTP_MEDIA_TYPE_BYTES) {
		size_t at = wl + (n > wl ? (size_t)data[0] % (n - wl + 1) : 0);
		memcpy(g_buf, ct, at);
		g_buf[at] = (data[0] & 4) ? '\0' : '\n';
		memcpy(g_buf + at + 1, ct + at, n - at);
		FZ_CHECK(!ota_http_media_type_is(g_buf, n + 1, want, allowed));
	}
	return 0;
}
