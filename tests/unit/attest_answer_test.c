/*
 * attest/net/client.c: ota_attest_client_answer, how `ota attest challenge`
 * and `ota attest submit` judge whatever answers at --url. A 2xx "ok": true
 * without the members the CLI prints and writes, or with members of another
 * shape, used to pass (the CLI then printed "(null)" or wrote nothing
 * useful); now attestation_response_invalid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "ota/attestd.h"
#include "ota/limits.h"

#define ID "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
#define NONCE "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" /* 32 bytes, base64url */

static ota_err judge(const char *body, long status, ota_attest_answer_kind k, ota_error *e)
{
	ota_error_clear(e);
	return ota_attest_client_answer(body, strlen(body), status, k, e);
}

static void test_challenge(void **state)
{
	(void)state;
	ota_error e;
	const ota_attest_answer_kind C = OTA_ATTEST_ANSWER_CHALLENGE;
	assert_int_equal(judge("{\"ok\":true,\"challenge\":\"" ID "\",\"nonce\":\"" NONCE "\"}", 201,
	                       C, &e),
	                 OTA_OK);
	static const char *const bad[] = {
		"{\"ok\":true}",
		"{\"ok\":true,\"challenge\":\"" ID "\"}",
		"{\"ok\":true,\"nonce\":\"" NONCE "\"}",
		"{\"ok\":true,\"challenge\":1,\"nonce\":\"" NONCE "\"}",
		"{\"ok\":true,\"challenge\":\"sha256:xyz\",\"nonce\":\"" NONCE "\"}",
		"{\"ok\":true,\"challenge\":\"" ID "\",\"nonce\":\"AAEC\"}", /* 3 bytes */
		"{\"ok\":true,\"challenge\":\"" ID "\",\"nonce\":\"" NONCE "==\"}",
		"{\"ok\":true,\"challenge\":\"" ID "\",\"nonce\":\"\\u001b[2J" NONCE "\"}",
		"{\"ok\":true,\"challenge\":\"" ID "\\n\",\"nonce\":\"" NONCE "\"}",
		"{\"ok\":true,\"challenge\":\"" ID "\",\"nonce\":null}",
		"[true]", "not json", "", "{\"ok\":true,\"ok\":true}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (judge(bad[i], 201, C, &e) != OTA_ERR_ATT_PROTOCOL)
			fail_msg("%s: got %s", bad[i], ota_err_name(e.code));
		assert_string_equal(e.where, "answer");
	}
	/* an acceptance answer is no challenge answer */
	assert_int_equal(judge("{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"0oQ=\"}", 201,
	                       C, &e),
	                 OTA_ERR_ATT_PROTOCOL);
}

static void test_acceptance(void **state)
{
	(void)state;
	ota_error e;
	const ota_attest_answer_kind A = OTA_ATTEST_ANSWER_ACCEPTANCE;
	assert_int_equal(judge("{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"0oRDoQEm\"}",
	                       201, A, &e),
	                 OTA_OK);
	static const char *const bad[] = {
		"{\"ok\":true,\"attestation\":\"" ID "\"}",
		"{\"ok\":true,\"acceptance\":\"0oRDoQEm\"}",
		"{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"\"}",
		"{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"not base64!\"}",
		"{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"0oRD-QEm\"}", /* url alphabet */
		"{\"ok\":true,\"attestation\":\"SHA256:2d71\",\"acceptance\":\"0oRDoQEm\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (judge(bad[i], 201, A, &e) != OTA_ERR_ATT_PROTOCOL)
			fail_msg("%s: got %s", bad[i], ota_err_name(e.code));
	}
}

static void test_refusals(void **state)
{
	(void)state;
	ota_error e;
	const ota_attest_answer_kind A = OTA_ATTEST_ANSWER_ACCEPTANCE;
	assert_int_equal(judge("{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"eat_nonce\","
	                       "\"message\":\"consumed at 1\"}",
	                       403, A, &e),
	                 OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(e.where, "eat_nonce");
	assert_string_equal(e.what, "consumed at 1");
	/* a refusal always names a where; where and message that are empty,
	 * missing, not text or hold control characters (they reach a terminal)
	 * are not taken: "answer" and the code instead (the where was "") */
	static const char *const odd[] = {
		"{\"ok\":false,\"code\":\"nonce_replayed\"}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"\",\"message\":\"\"}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":7,\"message\":[]}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"\\u001b[2J\","
		"\"message\":\"a\\nb\"}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"x\\u009b31m\","
		"\"message\":\"\\u007f\"}",
		/* bidirectional controls: the terminal shows the text reordered */
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"eat_\\u202enonce\","
		"\"message\":\"a\\u2066b\"}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"\\u200f\","
		"\"message\":\"\\u061c\"}",
		"{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"\\u202a\","
		"\"message\":\"x\\u2069\"}",
	};
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		if (judge(odd[i], 403, A, &e) != OTA_ERR_NONCE_REPLAYED)
			fail_msg("%s: got %s", odd[i], ota_err_name(e.code));
		assert_string_equal(e.where, "answer");
		assert_string_equal(e.what, "nonce_replayed");
	}
	/* non-ASCII text is fine */
	assert_int_equal(judge("{\"ok\":false,\"code\":\"nonce_replayed\",\"where\":\"n\u00e9\","
	                       "\"message\":\"d\u00e9j\u00e0\"}",
	                       403, A, &e),
	                 OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(e.where, "n\xc3\xa9");
	/* ok true but not 2xx: the code it names, else the protocol error */
	assert_int_equal(judge("{\"ok\":true,\"attestation\":\"" ID "\",\"acceptance\":\"0oRDoQEm\"}",
	                       500, A, &e),
	                 OTA_ERR_ATT_PROTOCOL);
	assert_int_equal(judge("{\"ok\":false,\"code\":\"no_such_code\"}", 400, A, &e),
	                 OTA_ERR_ATT_PROTOCOL);
	assert_int_equal(judge("{\"ok\":false,\"code\":\"ok\"}", 400, A, &e), OTA_ERR_ATT_PROTOCOL);
	assert_int_equal(judge("{\"ok\":false}", 200, A, &e), OTA_ERR_ATT_PROTOCOL);
	/* the cap: a body over it is refused before parsing */
	size_t n = OTA_MAX_HTTP_ANSWER_BYTES + 1;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	ota_error_clear(&e);
	assert_int_equal(ota_attest_client_answer(big, n, 201, A, &e), OTA_ERR_ATT_PROTOCOL);
	assert_non_null(strstr(e.what, "too large"));
	ota_error_clear(&e);
	assert_int_equal(ota_attest_client_answer(NULL, 0, 201, A, &e), OTA_ERR_ATT_PROTOCOL);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_challenge),
		cmocka_unit_test(test_acceptance),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
