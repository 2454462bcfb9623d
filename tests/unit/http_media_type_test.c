/*
 * common/http.c: ota_http_media_type_is, the Content-Type check of the
 * attestation endpoint's POST routes (attestd_strict_test drives the same
 * through HTTP): case-insensitive type and parameters, charset, quoted
 * strings, whitespace, duplicates, garbage, bytes as given (NUL, the cap).
 */
#include <string.h>

#include "test_util.h"

#include "ota/http.h"
#include "ota/limits.h"

static const char *const json_params[] = {"charset=utf-8", NULL};
static const char *const cose_params[] = {"cose-type=cose-sign1", NULL};

static bool is_json(const char *ct)
{
	return ota_http_media_type_is(ct, strlen(ct), "application/json", json_params);
}

static bool is_cose(const char *ct)
{
	return ota_http_media_type_is(ct, strlen(ct), "application/cose", cose_params);
}

#define YES(f, s)                                                                   \
	do {                                                                        \
		if (!f(s))                                                          \
			fail_msg("%s(\"%s\") refused, should pass", #f, s);         \
	} while (0)
#define NO(f, s)                                                                    \
	do {                                                                        \
		if (f(s))                                                           \
			fail_msg("%s(\"%s\") passed, should be refused", #f, s);    \
	} while (0)

static void test_type_case(void **state)
{
	(void)state;
	YES(is_json, "application/json");
	YES(is_json, "Application/JSON");
	YES(is_json, "APPLICATION/JSON");
	YES(is_cose, "application/cose");
	YES(is_cose, "Application/Cose");
	NO(is_json, "application/cose");
	NO(is_cose, "application/json");
	NO(is_json, "text/json");
	NO(is_json, "application/jsonx");
	NO(is_json, "application/jso");
	NO(is_json, "application");
	NO(is_json, "");
	NO(is_json, "application /json");
	NO(is_json, "application/ json");
	NO(is_cose, "application/cose-key");
}

static void test_parameters(void **state)
{
	(void)state;
	YES(is_json, "application/json; charset=utf-8");
	YES(is_json, "application/json;charset=utf-8");
	YES(is_json, "application/json; CHARSET=UTF-8");
	YES(is_json, "application/json; Charset=Utf-8");
	YES(is_cose, "application/cose; cose-type=cose-sign1");
	YES(is_cose, "application/cose ; COSE-TYPE=COSE-SIGN1");
	NO(is_json, "application/json; charset=latin1");
	NO(is_json, "application/json; charset=utf-88");
	NO(is_json, "application/json; charset=utf");
	NO(is_json, "application/json; x=y");
	NO(is_json, "application/json; cose-type=cose-sign1");
	NO(is_cose, "application/cose; cose-type=cose-mac0");
	NO(is_cose, "application/cose; charset=utf-8");
	/* no parameter is allowed where the route allows none */
	assert_false(ota_http_media_type_is("text/plain; a=b", 15, "text/plain", NULL));
	assert_true(ota_http_media_type_is("text/plain", 10, "text/plain", NULL));
	/* empty parameters are allowed (RFC 9110: *( OWS ";" OWS [ parameter ] )) */
	YES(is_json, "application/json;");
	YES(is_json, "application/json; ;");
	YES(is_json, "application/json;; charset=utf-8;");
	/* a parameter needs a name, '=' and a value */
	NO(is_json, "application/json; charset");
	NO(is_json, "application/json; charset=");
	NO(is_json, "application/json; =utf-8");
	NO(is_json, "application/json;=");
	NO(is_json, "application/json; charset==utf-8");
}

static void test_quoted(void **state)
{
	(void)state;
	YES(is_json, "application/json; charset=\"utf-8\"");
	YES(is_json, "application/json;charset=\"UTF-8\"");
	YES(is_cose, "application/cose; cose-type=\"cose-sign1\"");
	NO(is_json, "application/json; charset=\"utf-8");
	NO(is_json, "application/json; charset=\"utf-8\"x");
	NO(is_json, "application/json; charset=\"\"");
	NO(is_json, "application/json; charset=\"utf\\-8\""); /* no quoted-pair */
	NO(is_json, "application/json; charset=\"utf-8 \"");
	NO(is_json, "application/json; charset=\"utf-8\x7f\""); /* DEL is no qdtext */
	NO(is_json, "application/json; charset=utf-8\"");
	NO(is_json, "application/json; charset='utf-8'");
}

static void test_whitespace(void **state)
{
	(void)state;
	YES(is_json, "application/json ");
	YES(is_json, "application/json\t");
	YES(is_json, "application/json \t; \tcharset=utf-8 \t");
	NO(is_json, "application/json; charset = utf-8");
	NO(is_json, "application/json; charset= utf-8");
	NO(is_json, "application/json; charset =utf-8");
	NO(is_json, "application/json\n");
	NO(is_json, "application/json\r\n; charset=utf-8");
	NO(is_json, "application/json\v");
	NO(is_json, "application/json; charset=utf-8\f");
}

static void test_duplicates(void **state)
{
	(void)state;
	NO(is_json, "application/json; charset=utf-8; charset=utf-8");
	NO(is_json, "application/json; charset=utf-8; charset=\"utf-8\"");
	NO(is_json, "application/json; charset=utf-8; CHARSET=UTF-8");
	NO(is_cose, "application/cose; cose-type=cose-sign1; cose-type=cose-sign1");
	/* two allowed parameters, each once, in any order */
	static const char *const two[] = {"a=1", "b=2", NULL};
	const char *ok = "x/y; b=2; a=1", *dup = "x/y; a=1; b=2; a=1";
	assert_true(ota_http_media_type_is(ok, strlen(ok), "x/y", two));
	assert_false(ota_http_media_type_is(dup, strlen(dup), "x/y", two));
}

static void test_garbage(void **state)
{
	(void)state;
	NO(is_cose, "application/cose ,text/plain");
	NO(is_cose, "application/cose,text/plain");
	NO(is_cose, "application/cose text/plain");
	NO(is_cose, "application/cose/x");
	NO(is_cose, "application/cose; cose-type=cose-sign1 x");
	NO(is_cose, "application/cose; cose-type=cose-sign1,x");
	NO(is_json, "application/json; charset=utf-8; x");
	NO(is_json, "application/json; ch@rset=utf-8");
	NO(is_json, "application/json; charset=utf-8\xc3\xa9");
	NO(is_json, "\xff\xfe");
}

static void test_bytes(void **state)
{
	(void)state;
	/* a NUL anywhere is refused, not cut there */
	static const char nul1[] = "application/json\0; x=y";
	static const char nul2[] = "application/json; charset=utf-8\0";
	static const char nul3[] = "application/js\0n";
	assert_false(ota_http_media_type_is(nul1, sizeof nul1 - 1, "application/json", json_params));
	assert_false(ota_http_media_type_is(nul2, sizeof nul2 - 1, "application/json", json_params));
	assert_false(ota_http_media_type_is(nul3, sizeof nul3 - 1, "application/json", json_params));
	/* n bytes are read, no more (no NUL after them) */
	static const char cut[] = {'a', 'p', 'p', 'l', 'i', 'c', 'a', 't', 'i', 'o', 'n',
	                           '/', 'j', 's', 'o', 'n', ';', 'x'};
	assert_true(ota_http_media_type_is(cut, 16, "application/json", json_params));
	assert_true(ota_http_media_type_is(cut, 17, "application/json", json_params));
	assert_false(ota_http_media_type_is(cut, 18, "application/json", json_params));
	assert_false(ota_http_media_type_is(cut, 15, "application/json", json_params));
	assert_false(ota_http_media_type_is(NULL, 0, "application/json", json_params));
	/* the cap: empty parameters up to it pass, one byte more is refused */
	static char big[OTA_MAX_HTTP_MEDIA_TYPE_BYTES + 1];
	memset(big, ';', sizeof big);
	memcpy(big, "application/json", 16);
	assert_true(ota_http_media_type_is(big, OTA_MAX_HTTP_MEDIA_TYPE_BYTES, "application/json",
	                                   json_params));
	assert_false(ota_http_media_type_is(big, OTA_MAX_HTTP_MEDIA_TYPE_BYTES + 1,
	                                    "application/json", json_params));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type_case),  cmocka_unit_test(test_parameters),
		cmocka_unit_test(test_quoted),     cmocka_unit_test(test_whitespace),
		cmocka_unit_test(test_duplicates), cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
