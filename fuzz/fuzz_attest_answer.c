/*
 * fuzz_attest_answer: the endpoint's answers as `ota attest challenge` and
 * `ota attest submit` read them (ota_attest_client_answer,
 * attest/net/client.c): bytes from whatever answers at --url.
 *
 * Input: byte 0 bit 0 the kind (challenge / acceptance), byte 1 the HTTP
 * status (one of 200 201 400 403 404 409 413 415 500 503 or 0..999 from
 * byte 1 and byte 2), then the body.
 *
 * Invariants: a refusal names itself, and its where and what (printed to a
 * terminal) hold no C0 or C1 control, DEL or bidirectional control; OTA_OK
 * only for a 2xx status and a JSON object with "ok": true carrying the
 * members the CLI prints and writes, of their shape (an sha256: identity,
 * base64url / base64 text).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_util.h"
#include "ota/attestd.h"
#include "ota/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3 || size > 2u * 1024u * 1024u)
		return 0;
	static const long statuses[] = {200, 201, 400, 403, 404, 409, 413, 415, 500, 503};
	ota_attest_answer_kind kind =
		(data[0] & 1) ? OTA_ATTEST_ANSWER_ACCEPTANCE : OTA_ATTEST_ANSWER_CHALLENGE;
	long status = data[1] < 10 ? statuses[data[1]] : (long)((data[1] << 8 | data[2]) % 1000);
	const char *body = (const char *)data + 3;
	size_t n = size - 3;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_attest_client_answer(body, n, status, kind, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(fz_terminal_safe(e.where) && fz_terminal_safe(e.what));
		return 0;
	}
	FZ_CHECK(status >= 200 && status < 300);
	json_t *o = NULL;
	FZ_CHECK(ota_json_parse(ota_bytes_make(body, n), &o, NULL) == OTA_OK);
	FZ_CHECK(json_is_true(json_object_get(o, "ok")));
	const char *id = json_string_value(json_object_get(
		o, kind == OTA_ATTEST_ANSWER_CHALLENGE ? "challenge" : "attestation"));
	const char *b64 = json_string_value(
		json_object_get(o, kind == OTA_ATTEST_ANSWER_CHALLENGE ? "nonce" : "acceptance"));
	FZ_CHECK(id != NULL && strlen(id) == OTA_ID_LEN && strncmp(id, "sha256:", 7) == 0);
	FZ_CHECK(b64 != NULL);
	uint8_t *raw = NULL;
	size_t rl = 0;
	FZ_CHECK(ota_base64_decode(b64, strlen(b64), &raw, &rl) == OTA_OK && rl > 0);
	free(raw);
	json_decref(o);
	return 0;
}
