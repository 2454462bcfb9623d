/*
 * ota/http.h - pure parsers of HTTP header values the attestation endpoint
 * (attest/net/server.c) receives from any client: no I/O, no allocation,
 * fuzzed on bytes (fuzz_media_type).
 */
#ifndef OTA_HTTP_H
#define OTA_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Whether the Content-Type field value ct (n bytes, not NUL-terminated;
 * leading and trailing whitespace already trimmed, as a server hands header
 * values over) is exactly the media type want (type/subtype compared
 * case-insensitively), optionally followed by parameters (RFC 9110 section
 * 8.3.1: *( OWS ";" OWS [ name "=" ( token / quoted-string ) ] ), OWS = SP
 * or HTAB), each one of `allowed` ("name=value", both compared
 * case-insensitively; NULL-terminated, at most 32 entries; NULL: none) and
 * none twice (a token and a quoted form of one value are the same). A
 * quoted-string holds SP, HTAB and visible ASCII but '"' and '\' (no
 * quoted-pair: no allowed value needs one). Refused (false): anything else
 * after the subtype ("application/cose ,text/plain", "application/cosex"),
 * whitespace around '=', an empty value, an unterminated quote, a NUL or
 * other control byte, more than OTA_MAX_HTTP_MEDIA_TYPE_BYTES bytes.
 */
OTA_API bool ota_http_media_type_is(const char *ct, size_t n, const char *want,
                                    const char *const *allowed);

#ifdef __cplusplus
}
#endif
#endif
