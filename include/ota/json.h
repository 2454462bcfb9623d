/*
 * ota/json.h - strict JSON input and RFC 8785 canonical JSON (JCS) output
 * over jansson values, and the sha256: identities of DESIGN.md section 3.
 */
#ifndef OTA_JSON_H
#define OTA_JSON_H

#include <jansson.h>

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parses in as one JSON document (RFC 8259), strictly: at most
 * OTA_MAX_JSON_BYTES and OTA_MAX_JSON_DEPTH, no duplicate member names
 * (json_duplicate_key), valid UTF-8 only, no NUL in strings, nothing after
 * the value but whitespace. *out is a new reference (json_decref); NULL on
 * failure. Errors: too_large, too_deep, json_syntax, json_duplicate_key,
 * json_invalid_utf8, json_number_range.
 */
OTA_API OTA_NODISCARD ota_err ota_json_parse(ota_bytes in, json_t **out, ota_error *err);

/*
 * Serialises v as RFC 8785 canonical JSON: members sorted by UTF-16 code
 * units, only the mandatory string escapes, integers only (reals refused with
 * json_float_refused, integers beyond +-(2^53-1) with json_number_range),
 * depth at most OTA_MAX_JSON_DEPTH. *out is new (free()), NUL-terminated;
 * *out_len excludes the NUL. On failure *out is NULL and *out_len 0.
 */
OTA_API OTA_NODISCARD ota_err ota_jcs_serialize(const json_t *v, char **out, size_t *out_len,
                                                ota_error *err);

/*
 * Identity of v: "sha256:" + lowercase hex(SHA-256(JCS(v))). v may be any
 * JSON value; identified objects should use ota_json_identity_of_kind.
 */
OTA_API OTA_NODISCARD ota_err ota_jcs_identity(const json_t *v, char out[OTA_ID_LEN + 1],
                                               ota_error *err);

/*
 * Identity of an identified object: v must be an object whose "kind" member
 * is a string beginning with "ota." (json_kind_missing otherwise).
 */
OTA_API OTA_NODISCARD ota_err ota_json_identity(const json_t *v, char out[OTA_ID_LEN + 1],
                                                ota_error *err);

/*
 * ota_json_identity of v, and in member_out ota_jcs_identity of the value
 * of v's member name ("" when v has none), from one serialization:
 * the member's canonical bytes are part of v's (ota-verify archive: a
 * rendered policy record and its config). On failure both are "".
 */
OTA_API OTA_NODISCARD ota_err ota_json_identity_and(const json_t *v, char out[OTA_ID_LEN + 1],
                                                    const char *name,
                                                    char member_out[OTA_ID_LEN + 1],
                                                    ota_error *err);

/*
 * Decodes one UTF-8 scalar value at s (n bytes left) into *cp: the bytes it
 * uses, or 0 when it is not a shortest-form scalar value (overlong forms,
 * surrogates, beyond U+10FFFF, truncated or n == 0). The one UTF-8 rule of
 * the project (JCS, challenges, attestation claims).
 */
OTA_API size_t ota_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

/*
 * RFC 8785 pieces for writers that build JCS text without a json_t (the
 * challenge identity): ota_jcs_escape writes the escape of an ASCII byte
 * that needs one ('"', '\\', below 0x20) into e and returns its length (2
 * or 6), 0 when c stands as is; ota_jcs_integer writes v in decimal into out
 * and returns its length (the caller keeps v within +-(2^53-1)).
 */
OTA_API size_t ota_jcs_escape(unsigned char c, char e[6]);
OTA_API size_t ota_jcs_integer(long long v, char out[24]);

/* Compact JSON text for humans/CLIs (not canonical). *out new; NULL on OOM. */
OTA_API char *ota_json_dumps(const json_t *v, bool pretty);

#ifdef __cplusplus
}
#endif
#endif
