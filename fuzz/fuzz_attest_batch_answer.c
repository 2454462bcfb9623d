/*
 * fuzz_attest_batch_answer: the endpoint's answer to a batch POST as
 * `ota attest submit FILE FILE...` reads it (ota_attest_client_batch_answer,
 * attest/net/client.c): bytes from whatever answers at --url.
 *
 * Input: byte 0 low 2 bits the number of items minus one (1..4; item i's
 * identity is "sha256:" and 64 times the digit i), byte 1 the HTTP status
 * (one of 200 201 400 409 413 503 or 0..999 from bytes 1 and 2), then the
 * body.
 *
 * Invariants: OTA_OK only for a 200 whose JSON object says "ok": true and
 * lists one result per item, the accepted ones (as many as "accepted"
 * says) each an object naming its own item's identity with base64
 * "acceptance", the others refusals that name themselves; any other answer
 * is one error carried by every item, with no answer kept. Every where and
 * message kept is terminal-safe (no C0, DEL, C1 or bidirectional control).
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
	static const long statuses[] = {200, 201, 400, 409, 413, 503};
	size_t n = (size_t)(data[0] & 3u) + 1;
	long status = data[1] < 6 ? statuses[data[1]] : (long)((data[1] << 8 | data[2]) % 1000);
	char ids[4][OTA_ID_LEN + 1];
	for (size_t i = 0; i < 4; i++) {
		memcpy(ids[i], "sha256:", 7);
		memset(ids[i] + 7, (int)('0' + i), 64);
		ids[i][OTA_ID_LEN] = '\0';
	}
	const char *body = (const char *)data + 3;
	size_t len = size - 3;
	ota_attest_batch_result res[4];
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_attest_client_batch_answer(body, len, status, n,
	                                            (const char(*)[OTA_ID_LEN + 1])ids, res, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(fz_terminal_safe(e.where) && fz_terminal_safe(e.what));
		for (size_t i = 0; i < n; i++)
			FZ_CHECK(res[i].rc == rc && res[i].answer == NULL);
		return 0;
	}
	FZ_CHECK(status == 200);
	json_t *o = NULL;
	FZ_CHECK(ota_json_parse(ota_bytes_make(body, len), &o, NULL) == OTA_OK);
	FZ_CHECK(json_is_true(json_object_get(o, "ok")));
	FZ_CHECK(json_array_size(json_object_get(o, "results")) == n);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (res[i].rc != OTA_OK) {
			fz_refusal(res[i].rc, &res[i].err);
			FZ_CHECK(res[i].answer == NULL);
			FZ_CHECK(fz_terminal_safe(res[i].err.where) && fz_terminal_safe(res[i].err.what));
			continue;
		}
		k++;
		json_t *a = json_loads(res[i].answer, 0, NULL);
		FZ_CHECK(a != NULL);
		FZ_CHECK(json_is_true(json_object_get(a, "ok")));
		const char *id = json_string_value(json_object_get(a, "attestation"));
		FZ_CHECK(id != NULL && strcmp(id, ids[i]) == 0);
		const char *b64 = json_string_value(json_object_get(a, "acceptance"));
		uint8_t *raw = NULL;
		size_t rl = 0;
		FZ_CHECK(b64 != NULL && ota_base64_decode(b64, strlen(b64), &raw, &rl) == OTA_OK && rl > 0);
		free(raw);
		json_decref(a);
	}
	FZ_CHECK((json_int_t)k == json_integer_value(json_object_get(o, "accepted")));
	json_decref(o);
	ota_attest_batch_results_free(res, n);
	return 0;
}
