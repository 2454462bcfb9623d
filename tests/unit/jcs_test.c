/*
 * JCS (RFC 8785) golden vectors: walks vectors/jcs/<case>/ and checks
 * ota_json_parse + ota_jcs_serialize against output.json (exact bytes) or
 * against expect ("error=<stable name>"). Also checks idempotence on every
 * accepted case and runs the independent Python check (tests/tools/jcs_check.py)
 * over the same vectors when python3 is present.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test_util.h"

#include "ota/json.h"

#define VEC_DIR "vectors/jcs"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted case names under vectors/jcs (new array of new strings). */
static char **list_cases(size_t *n)
{
	char *dir = test_src_path(VEC_DIR);
	DIR *d = opendir(dir);
	assert_non_null(d);
	char **names = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof *names);
			assert_non_null(names);
		}
		names[cnt] = strdup(e->d_name);
		assert_non_null(names[cnt]);
		cnt++;
	}
	closedir(d);
	free(dir);
	qsort(names, cnt, sizeof *names, cmp_names);
	*n = cnt;
	return names;
}

static bool src_exists(const char *rel)
{
	char *p = test_src_path(rel);
	struct stat st;
	bool ok = stat(p, &st) == 0;
	free(p);
	return ok;
}

/* Parse then serialise; the error (if any) of either step. */
static ota_err canon(ota_bytes in, char **out, size_t *out_len, ota_error *err)
{
	json_t *v = NULL;
	*out = NULL;
	*out_len = 0;
	ota_err rc = ota_json_parse(in, &v, err);
	if (rc != OTA_OK) {
		assert_null(v);
		return rc;
	}
	rc = ota_jcs_serialize(v, out, out_len, err);
	json_decref(v);
	if (rc != OTA_OK) {
		assert_null(*out);
		assert_int_equal(*out_len, 0);
	}
	return rc;
}

static int run_case(const char *name)
{
	char rel[512];
	int failed = 0;
	size_t in_len = 0;
	snprintf(rel, sizeof rel, VEC_DIR "/%s/input.json", name);
	uint8_t *in = test_read_src(rel, &in_len);

	char *out = NULL;
	size_t out_len = 0;
	ota_error err;
	ota_error_clear(&err);
	ota_err rc = canon(ota_bytes_make(in, in_len), &out, &out_len, &err);

	snprintf(rel, sizeof rel, VEC_DIR "/%s/expect", name);
	if (src_exists(rel)) {
		size_t elen = 0;
		char *exp = (char *)test_read_src(rel, &elen);
		while (elen > 0 && (exp[elen - 1] == '\n' || exp[elen - 1] == '\r'))
			exp[--elen] = '\0';
		char got[128];
		snprintf(got, sizeof got, "error=%s", ota_err_name(rc));
		if (strcmp(got, exp) != 0) {
			print_error("jcs %s: want %s, got %s (%s: %s)\n", name, exp, got, err.where,
			            err.what);
			failed = 1;
		} else if (err.code != rc) {
			print_error("jcs %s: ota_error holds %s, returned %s\n", name,
			            ota_err_name(err.code), ota_err_name(rc));
			failed = 1;
		}
		free(exp);
	} else {
		snprintf(rel, sizeof rel, VEC_DIR "/%s/output.json", name);
		size_t want_len = 0;
		uint8_t *want = test_read_src(rel, &want_len);
		if (rc != OTA_OK) {
			print_error("jcs %s: refused as %s (%s: %s)\n", name, ota_err_name(rc),
			            err.where, err.what);
			failed = 1;
		} else if (out_len != want_len || memcmp(out, want, want_len) != 0) {
			print_error("jcs %s: output differs\n  want %.*s\n  got  %.*s\n", name,
			            (int)want_len, (const char *)want, (int)out_len, out);
			failed = 1;
		} else {
			/* idempotent: serialize(parse(serialize(x))) == serialize(x) */
			char *again = NULL;
			size_t again_len = 0;
			rc = canon(ota_bytes_make(out, out_len), &again, &again_len, NULL);
			if (rc != OTA_OK || again_len != out_len ||
			    memcmp(again, out, out_len) != 0) {
				print_error("jcs %s: not idempotent (%s)\n", name, ota_err_name(rc));
				failed = 1;
			}
			free(again);
		}
		free(want);
	}
	free(out);
	free(in);
	return failed;
}

static void test_vectors(void **state)
{
	(void)state;
	size_t n = 0, ok = 0, errors = 0;
	char **names = list_cases(&n);
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		char rel[512];
		snprintf(rel, sizeof rel, VEC_DIR "/%s/expect", names[i]);
		if (src_exists(rel))
			errors++;
		else
			ok++;
		failed += run_case(names[i]);
		free(names[i]);
	}
	free(names);
	print_message("jcs vectors: %zu cases (%zu canonical, %zu refused), %d failed\n", n, ok,
	              errors, failed);
	assert_int_equal(failed, 0);
	/* the folder must really hold both kinds */
	assert_true(ok >= 10);
	assert_true(errors >= 10);
}

/* Every canonical output is itself a fixed point and holds no whitespace outside strings. */
static void test_output_is_compact(void **state)
{
	(void)state;
	static const char *in = "{ \"b\" : [ 1 , { \"d\" : null , \"c\" : true } ] , \"a\" : \"x y\" }";
	char *out = NULL;
	size_t out_len = 0;
	assert_ota(canon(ota_bytes_make(in, strlen(in)), &out, &out_len, NULL), OTA_OK);
	assert_string_equal(out, "{\"a\":\"x y\",\"b\":[1,{\"c\":true,\"d\":null}]}");
	assert_int_equal(out_len, strlen(out));
	free(out);
}

/* Values built in memory (not parsed) follow the same rules. */
static void test_built_values(void **state)
{
	(void)state;
	json_t *o = json_object();
	assert_non_null(o);
	assert_int_equal(json_object_set_new(o, "\xf0\x9f\x98\x80", json_integer(1)), 0);
	assert_int_equal(json_object_set_new(o, "\xef\xbf\xbf", json_integer(2)), 0);
	assert_int_equal(json_object_set_new(o, "\x7f", json_string("\xe2\x80\xa8")), 0);
	char *out = NULL;
	size_t out_len = 0;
	assert_ota(ota_jcs_serialize(o, &out, &out_len, NULL), OTA_OK);
	assert_string_equal(out, "{\"\x7f\":\"\xe2\x80\xa8\",\"\xf0\x9f\x98\x80\":1,\"\xef\xbf\xbf\":2}");
	free(out);

	/* a real anywhere refuses the whole value and clears the outputs */
	assert_int_equal(json_object_set_new(o, "r", json_real(0.5)), 0);
	out = (char *)1;
	out_len = 7;
	ota_error err;
	ota_error_clear(&err);
	assert_ota(ota_jcs_serialize(o, &out, &out_len, &err), OTA_ERR_JSON_FLOAT);
	assert_null(out);
	assert_int_equal(out_len, 0);
	assert_int_equal(err.code, OTA_ERR_JSON_FLOAT);
	json_decref(o);

	/* integers just inside and just outside the safe range */
	json_t *a = json_pack("[I,I]", (json_int_t)9007199254740991LL, (json_int_t)-9007199254740991LL);
	assert_non_null(a);
	assert_ota(ota_jcs_serialize(a, &out, &out_len, NULL), OTA_OK);
	assert_string_equal(out, "[9007199254740991,-9007199254740991]");
	free(out);
	assert_int_equal(json_array_append_new(a, json_integer(-9007199254740992LL)), 0);
	assert_ota(ota_jcs_serialize(a, &out, &out_len, NULL), OTA_ERR_JSON_NUMBER_RANGE);
	json_decref(a);

	/* a string holding invalid UTF-8 (jansson lets json_stringn_nocheck build one) */
	json_t *bad = json_stringn_nocheck("\xc3(", 2);
	assert_non_null(bad);
	assert_ota(ota_jcs_serialize(bad, &out, &out_len, NULL), OTA_ERR_JSON_INVALID_UTF8);
	json_decref(bad);
	assert_ota(ota_jcs_serialize(NULL, &out, &out_len, NULL), OTA_ERR_USAGE);
}

/* Identity is sha256 over the JCS bytes of the RFC 8785 sorting example. */
static void test_identity_matches_bytes(void **state)
{
	(void)state;
	size_t in_len = 0, want_len = 0;
	uint8_t *in = test_read_src(VEC_DIR "/rfc8785_sorting/input.json", &in_len);
	uint8_t *want = test_read_src(VEC_DIR "/rfc8785_sorting/output.json", &want_len);
	json_t *v = NULL;
	assert_ota(ota_json_parse(ota_bytes_make(in, in_len), &v, NULL), OTA_OK);
	char id[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	assert_ota(ota_jcs_identity(v, id, NULL), OTA_OK);
	assert_ota(ota_sha256_id(ota_bytes_make(want, want_len), id2), OTA_OK);
	assert_string_equal(id, id2);
	assert_true(ota_id_is_valid(id));
	json_decref(v);
	free(in);
	free(want);
}

/* The independent Python canonicaliser agrees with every vector. */
/* UTF-8 -> UTF-16 code units (reference for the member order). */
static size_t ref_utf16(const char *s, uint16_t *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t j = 0;
	while (*u != 0) {
		uint32_t cp;
		if (u[0] < 0x80) {
			cp = u[0];
			u += 1;
		} else if ((u[0] & 0xe0) == 0xc0) {
			cp = (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
			u += 2;
		} else if ((u[0] & 0xf0) == 0xe0) {
			cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
			u += 3;
		} else {
			cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
			     (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
			u += 4;
		}
		if (cp >= 0x10000) {
			out[j++] = (uint16_t)(0xd800 | ((cp - 0x10000) >> 10));
			out[j++] = (uint16_t)(0xdc00 | ((cp - 0x10000) & 0x3ff));
		} else {
			out[j++] = (uint16_t)cp;
		}
	}
	return j;
}

static int ref_cmp(const char *a, const char *b)
{
	uint16_t x[256], y[256];
	size_t n = ref_utf16(a, x), m = ref_utf16(b, y);
	for (size_t i = 0; i < n && i < m; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return n == m ? 0 : (n < m ? -1 : 1);
}

/*
 * Differential: 2,000 objects of up to 40 random member names drawn from
 * characters on every side of the UTF-8/UTF-16 order split (ASCII, Latin-1,
 * U+D7FF, U+E000, U+FFFD, U+FFFF, U+10000, U+1F600, U+10FFFF), serialized;
 * the names must come out in the reference UTF-16 order, and the identity
 * must be the SHA-256 of the serialized bytes.
 */
static void test_member_order_differential(void **state)
{
	(void)state;
	static const char *const atoms[] = {"a",   "b",   "\xc3\xa9", "\xed\x9f\xbf", "\xee\x80\x80",
	                                    "\xef\xbf\xbd", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
	                                    "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "z", "\x7f"};
	srand(12345);
	for (int round = 0; round < 2000; round++) {
		json_t *o = json_object();
		size_t n = 1 + (size_t)(rand() % 40);
		for (size_t i = 0; i < n; i++) {
			char k[64] = "";
			size_t len = 1 + (size_t)(rand() % 4);
			for (size_t j = 0; j < len; j++)
				strcat(k, atoms[rand() % (int)(sizeof atoms / sizeof *atoms)]);
			json_object_set_new(o, k, json_integer((json_int_t)i));
		}
		char *out = NULL;
		size_t ol = 0;
		assert_ota(ota_jcs_serialize(o, &out, &ol, NULL), OTA_OK);
		json_t *back = json_loadb(out, ol, JSON_PRESERVE_ORDER, NULL);
		assert_non_null(back);
		const char *prev = NULL;
		size_t seen = 0;
		const char *k;
		json_t *v;
		json_object_foreach(back, k, v) {
			if (prev != NULL)
				assert_true(ref_cmp(prev, k) < 0);
			prev = k;
			seen++;
		}
		assert_int_equal(seen, json_object_size(o));
		char id[OTA_ID_LEN + 1], want[OTA_ID_LEN + 1];
		assert_ota(ota_jcs_identity(o, id, NULL), OTA_OK);
		assert_ota(ota_sha256_id(ota_bytes_make(out, ol), want), OTA_OK);
		assert_string_equal(id, want);
		json_decref(back);
		json_decref(o);
		free(out);
	}
}

/* The streamed identity of a value larger than the hash chunk. */
static void test_identity_large(void **state)
{
	(void)state;
	json_t *a = json_array();
	char big[40000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	for (int i = 0; i < 50; i++) {
		json_array_append_new(a, json_string(i % 7 == 0 ? big : "a\"b\\c\n"));
		json_array_append_new(a, json_integer(-(json_int_t)i * 1000003));
	}
	char *out = NULL;
	size_t ol = 0;
	assert_ota(ota_jcs_serialize(a, &out, &ol, NULL), OTA_OK);
	assert_true(ol > 200000);
	char id[OTA_ID_LEN + 1], want[OTA_ID_LEN + 1];
	assert_ota(ota_jcs_identity(a, id, NULL), OTA_OK);
	assert_ota(ota_sha256_id(ota_bytes_make(out, ol), want), OTA_OK);
	assert_string_equal(id, want);
	assert_non_null(strstr(out, "-1000003,"));
	free(out);
	json_decref(a);
}

/*
 * ota_json_identity_and: the record's identity and its member's, from one
 * serialization, equal to the two computed apart: a member before and
 * after the tapped one, a tapped value across chunk flushes (a 40,000-byte
 * string, hashed in place, and many small values), one small enough to
 * sit in the chunk, a member of that name below the top (not tapped), no
 * such member (""), and no kind (refused, both "").
 */
static void check_and(json_t *v, const char *name)
{
	char id[OTA_ID_LEN + 1], mid[OTA_ID_LEN + 1], want[OTA_ID_LEN + 1], mwant[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity_and(v, id, name, mid, NULL), OTA_OK);
	assert_ota(ota_json_identity(v, want, NULL), OTA_OK);
	assert_string_equal(id, want);
	const json_t *m = json_object_get(v, name);
	if (m == NULL) {
		assert_string_equal(mid, "");
		return;
	}
	assert_ota(ota_jcs_identity(m, mwant, NULL), OTA_OK);
	assert_string_equal(mid, mwant);
}

static void test_identity_and(void **state)
{
	(void)state;
	char big[40000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	json_t *cfg = json_object();
	json_t *list = json_array();
	for (int i = 0; i < 3000; i++)
		json_array_append_new(list, json_pack("{s:i, s:s}", "n", i, "s", "a\"b\\c\n\u00e9"));
	json_object_set_new(cfg, "mounts", list);
	json_object_set_new(cfg, "big", json_string(big));
	json_object_set_new(cfg, "config", json_integer(7)); /* nested: not tapped */
	json_t *v = json_pack("{s:s, s:s, s:o, s:[i, s], s:{s:b}}", "kind", "ota.rendered_policy/v1",
	                      "a", "first", "config", cfg, "z", 1, "last", "nested", "config", 1);
	assert_non_null(v);
	check_and(v, "config");
	check_and(v, "a");
	check_and(v, "z");
	check_and(v, "kind");
	check_and(v, "absent");
	json_object_set_new(v, "config", json_string(big));
	check_and(v, "config");
	json_object_set_new(v, "config", json_pack("{s:s}", "x", "y"));
	check_and(v, "config");
	/* a member of that name only below the top */
	json_object_del(v, "config");
	json_object_set_new(v, "b", json_pack("{s:i}", "config", 3));
	char id[OTA_ID_LEN + 1], mid[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity_and(v, id, "config", mid, NULL), OTA_OK);
	assert_string_equal(mid, "");
	/* no kind: refused as ota_json_identity refuses it */
	json_object_del(v, "kind");
	ota_error e;
	ota_error_clear(&e);
	assert_int_equal(ota_json_identity_and(v, id, "b", mid, &e), OTA_ERR_JSON_KIND);
	assert_string_equal(id, "");
	assert_string_equal(mid, "");
	json_decref(v);
}

static void test_python_check(void **state)
{
	(void)state;
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		print_message("python3 missing: independent check skipped\n");
		skip();
	}
	char *tool = test_src_path("tests/tools/jcs_check.py");
	char *dir = test_src_path(VEC_DIR);
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", tool, dir);
	int st = system(cmd);
	free(tool);
	free(dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The one UTF-8 decoder (JCS, challenges, attestation claims). */
static void test_utf8_next(void **state)
{
	(void)state;
	static const struct {
		const char *b;
		size_t n, used;
		uint32_t cp;
	} v[] = {
		{"A", 1, 1, 0x41},
		{"\xc3\xa9", 2, 2, 0xe9},
		{"\xe2\x82\xac", 3, 3, 0x20ac},
		{"\xf0\x9f\x98\x80", 4, 4, 0x1f600},
		{"\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff},
		{"\xc0\xaf", 2, 0, 0},         /* overlong '/' */
		{"\xe0\x80\xaf", 3, 0, 0},     /* overlong, three bytes */
		{"\xf0\x80\x80\xaf", 4, 0, 0}, /* overlong, four bytes */
		{"\xed\xa0\x80", 3, 0, 0},     /* a surrogate */
		{"\xf4\x90\x80\x80", 4, 0, 0}, /* beyond U+10FFFF */
		{"\xe2\x82", 2, 0, 0},         /* truncated */
		{"\xe2\x28\xac", 3, 0, 0},     /* bad continuation */
		{"\x80", 1, 0, 0},             /* a lone continuation byte */
		{"\xf8\x88\x80\x80\x80", 5, 0, 0}, /* five-byte form */
		{"", 0, 0, 0},                 /* nothing left */
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint32_t cp = 0;
		size_t used = ota_utf8_next((const unsigned char *)v[i].b, v[i].n, &cp);
		assert_int_equal(used, v[i].used);
		if (used != 0)
			assert_int_equal(cp, v[i].cp);
	}
}

/* No bytes, as a NULL pointer (an empty HTTP request body) or not: a
 * syntax error at line 1, not jansson's "wrong arguments" at line -1. */
static void test_parse_empty(void **state)
{
	(void)state;
	const char *none[] = {NULL, "", " "};
	for (size_t i = 0; i < 3; i++) {
		json_t *v = (json_t *)1;
		ota_error e;
		ota_error_clear(&e);
		ota_bytes in = ota_bytes_make(none[i], none[i] != NULL ? strlen(none[i]) : 0);
		assert_int_equal(ota_json_parse(in, &v, &e), OTA_ERR_JSON_SYNTAX);
		assert_null(v);
		assert_int_equal(e.code, OTA_ERR_JSON_SYNTAX);
		assert_int_equal(strncmp(e.where, "line 1, column ", 15), 0);
		assert_null(strstr(e.what, "wrong arguments"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_output_is_compact),
		cmocka_unit_test(test_built_values),
		cmocka_unit_test(test_identity_matches_bytes),
		cmocka_unit_test(test_member_order_differential),
		cmocka_unit_test(test_identity_large),
		cmocka_unit_test(test_identity_and),
		cmocka_unit_test(test_python_check),
		cmocka_unit_test(test_utf8_next),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
