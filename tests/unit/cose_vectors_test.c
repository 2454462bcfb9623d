/*
 * Data-driven COSE_Sign1 vectors: every folder vectors/cose/<case>/ (see
 * vectors/cose/generate.py for the layout) and the public vectors in
 * vectors/cose/public/sign1-vectors.json (cose-wg Examples with the RFC 9052
 * / RFC 9053 examples, GlueCOSE, go-cose), each checked against its
 * strict_expect.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "ota/cose.h"
#include "ota/json.h"
#include "test_util.h"

#define MAX_KEYS 8

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Reads dir/name; NULL when absent. */
static char *read_opt(const char *dir, const char *name, size_t *len)
{
	char p[1024];
	int pn = snprintf(p, sizeof p, "%s/%s", dir, name);
	if (pn < 0 || (size_t)pn >= sizeof p)
		fail_msg("path too long: %s/%s", dir, name);
	if (!exists(p))
		return NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	if (ota_file_read(p, 16u * 1024u * 1024u, &buf, &n, NULL) != OTA_OK)
		fail_msg("cannot read %s", p);
	if (len != NULL)
		*len = n;
	return (char *)buf;
}

/* Hex text (whitespace ignored) to new bytes. */
static uint8_t *hex_bytes(const char *text, size_t *out_len)
{
	size_t n = strlen(text);
	char *clean = malloc(n + 1);
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (text[i] != '\n' && text[i] != ' ' && text[i] != '\r' && text[i] != '\t')
			clean[c++] = text[i];
	uint8_t *out = malloc(c / 2 + 1);
	assert_ota(ota_hex_decode(clean, c, (ota_buf){out, c / 2 + 1}, out_len), OTA_OK);
	free(clean);
	return out;
}

typedef struct {
	ota_key *keys[MAX_KEYS];
	size_t n;
} keyset;

static ota_err lookup(void *ctx, ota_bytes kid, ota_alg alg, const ota_key **out, ota_error *err)
{
	const keyset *ks = ctx;
	(void)alg;
	*out = NULL;
	size_t hits = 0;
	for (size_t i = 0; i < ks->n; i++) {
		uint8_t id[32];
		if (ota_key_kid(ks->keys[i], id) == OTA_OK && ota_ct_equal(kid, ota_bytes_make(id, 32))) {
			*out = ks->keys[i];
			hits++;
		}
	}
	if (hits > 1) {
		*out = NULL;
		return ota_error_set(err, OTA_ERR_COSE_KID_AMBIGUOUS, "kid", "kid selects %zu keys", hits);
	}
	if (hits == 0)
		return ota_error_set(err, OTA_ERR_COSE_KID_UNKNOWN, "kid", "kid selects no key");
	return OTA_OK;
}

/* Runs one case folder; returns the stable name of the answer ("ok" or an error). */
static const char *run_case(const char *dir, ota_error *err)
{
	ota_error_clear(err);
	char *opts = read_opt(dir, "options", NULL);
	bool keyset_mode = opts != NULL && strstr(opts, "keyset") != NULL;
	ota_cose_verify_opts vo = {0};
	vo.allow_untagged = opts != NULL && strstr(opts, "allow_untagged") != NULL;
	free(opts);

	keyset ks = {{NULL}, 0};
	ota_err rc = OTA_OK;
	static const char *key_files[] = {"key.FIXTURE.pem", "key.FIXTURE.jwk", "key2.FIXTURE.pem",
	                                  "key3.FIXTURE.pem", "key4.FIXTURE.pem"};
	for (size_t i = 0; i < sizeof key_files / sizeof key_files[0] && rc == OTA_OK; i++) {
		char p[1024];
		int pn = snprintf(p, sizeof p, "%s/%s", dir, key_files[i]);
		if (pn < 0 || (size_t)pn >= sizeof p)
			fail_msg("path too long: %s/%s", dir, key_files[i]);
		if (!exists(p))
			continue;
		rc = ota_key_load_file(p, &ks.keys[ks.n], err);
		if (rc == OTA_OK)
			ks.n++;
	}
	if (rc == OTA_OK && ks.n == 0)
		fail_msg("%s: no key file", dir);

	size_t ml = 0, al = 0, pl = 0;
	char *hex = read_opt(dir, "input.cbor.hex", NULL);
	assert_non_null(hex);
	uint8_t *msg = hex_bytes(hex, &ml);
	free(hex);
	uint8_t *aad = NULL, *payload = NULL;
	char *t = read_opt(dir, "aad.hex", NULL);
	if (t != NULL) {
		aad = hex_bytes(t, &al);
		vo.external_aad = ota_bytes_make(aad, al);
		free(t);
	}
	t = read_opt(dir, "payload.hex", NULL);
	if (t != NULL) {
		payload = hex_bytes(t, &pl);
		vo.have_detached_payload = true;
		vo.detached_payload = ota_bytes_make(payload, pl);
		free(t);
	}
	if (rc == OTA_OK) {
		ota_cose_sign1 out;
		if (keyset_mode)
			rc = ota_cose_sign1_verify_with(ota_bytes_make(msg, ml), lookup, &ks, &vo, &out, err);
		else
			rc = ota_cose_sign1_verify(ota_bytes_make(msg, ml), ks.keys[0], &vo, &out, err);
		if (rc == OTA_OK) {
			/* a success points into the input and carries the payload */
			assert_true(out.signature.ptr >= msg && out.signature.ptr < msg + ml);
			assert_true(out.alg != OTA_ALG_NONE);
		} else {
			assert_int_equal(err->code, rc);
		}
	}
	for (size_t i = 0; i < ks.n; i++)
		ota_key_free(ks.keys[i]);
	free(msg);
	free(aad);
	free(payload);
	return ota_err_name(rc);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_folder_vectors(void **s)
{
	(void)s;
	char *root = test_src_path("vectors/cose");
	DIR *d = opendir(root);
	assert_non_null(d);
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && n < 1024) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "public") == 0)
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s/expect", root, e->d_name);
		if (exists(p))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof names[0], cmp_str);
	assert_true(n >= 80);
	size_t failures = 0, oks = 0;
	for (size_t i = 0; i < n; i++) {
		char dir[1024];
		snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
		char *expect = read_opt(dir, "expect", NULL);
		expect[strcspn(expect, "\r\n")] = '\0';
		const char *want = strncmp(expect, "error=", 6) == 0 ? expect + 6 : expect;
		ota_err known;
		if (strcmp(want, "ok") != 0 && !ota_err_from_name(want, &known))
			fail_msg("%s: unknown error name %s", names[i], want);
		ota_error err;
		const char *got = run_case(dir, &err);
		if (strcmp(got, want) != 0) {
			print_error("vector %s: got %s (%s: %s), want %s\n", names[i], got, err.where,
			            err.what, want);
			failures++;
		}
		if (strcmp(want, "ok") == 0)
			oks++;
		free(expect);
		free(names[i]);
	}
	print_message("%zu COSE vectors, %zu accepted, %zu refused, %zu failures\n", n, oks, n - oks,
	              failures);
	free(root);
	assert_int_equal(failures, 0);
}

/* ---- public vectors ---- */

static char *hex_to_b64url(const char *hex)
{
	size_t n = 0;
	uint8_t *b = hex_bytes(hex, &n);
	char *s = NULL;
	assert_ota(ota_base64url_encode(ota_bytes_make(b, n), &s), OTA_OK);
	free(b);
	return s;
}

/* Public JWK text from a vector's key_hex object; NULL for key types we do not load. */
static char *jwk_from_hex(const json_t *kh)
{
	const char *kty = json_string_value(json_object_get(kh, "kty"));
	json_t *o = json_object();
	json_object_set_new(o, "kty", json_string(kty));
	if (strcmp(kty, "EC") == 0 || strcmp(kty, "OKP") == 0) {
		json_object_set(o, "crv", json_object_get(kh, "crv"));
		const char *members[] = {"x", "y"};
		for (size_t i = 0; i < 2; i++) {
			const char *h = json_string_value(json_object_get(kh, members[i]));
			if (h != NULL) {
				char *b = hex_to_b64url(h);
				json_object_set_new(o, members[i], json_string(b));
				free(b);
			}
		}
	} else if (strcmp(kty, "RSA") == 0) {
		const char *members[] = {"n", "e"};
		for (size_t i = 0; i < 2; i++) {
			char *b = hex_to_b64url(json_string_value(json_object_get(kh, members[i])));
			json_object_set_new(o, members[i], json_string(b));
			free(b);
		}
	}
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void test_public_vectors(void **s)
{
	(void)s;
	size_t len = 0;
	uint8_t *text = test_read_src("vectors/cose/public/sign1-vectors.json", &len);
	json_error_t je;
	json_t *doc = json_loadb((const char *)text, len, 0, &je);
	assert_non_null(doc);
	json_t *vs = json_object_get(doc, "vectors");
	assert_true(json_array_size(vs) >= 39);
	size_t i, failures = 0, valid = 0, rfc = 0;
	json_t *v;
	json_array_foreach(vs, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *want = json_string_value(json_object_get(v, "strict_expect"));
		size_t ml = 0, al = 0, pl = 0;
		uint8_t *msg = hex_bytes(json_string_value(json_object_get(v, "cbor_hex")), &ml);
		const char *aad_hex = json_string_value(json_object_get(v, "external_aad_hex"));
		uint8_t *aad = hex_bytes(aad_hex != NULL ? aad_hex : "", &al);
		ota_cose_verify_opts vo = {0};
		vo.external_aad = ota_bytes_make(aad, al);
		uint8_t *payload = NULL;
		const char *ph = json_string_value(json_object_get(v, "payload_hex"));
		if (ph != NULL) {
			payload = hex_bytes(ph, &pl);
			vo.have_detached_payload = true;
			vo.detached_payload = ota_bytes_make(payload, pl);
		}
		char *jwk = jwk_from_hex(json_object_get(v, "key_hex"));
		ota_key *k = NULL;
		ota_error err;
		ota_error_clear(&err);
		/* the structure is judged first: no key is needed to refuse it */
		ota_cose_sign1 m;
		ota_err rc = ota_cose_sign1_decode(ota_bytes_make(msg, ml), &vo, &m, &err);
		if (rc == OTA_OK)
			rc = ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &k, &err);
		if (rc == OTA_OK)
			rc = ota_cose_sign1_verify(ota_bytes_make(msg, ml), k, &vo, NULL, &err);
		const char *got = rc == OTA_OK ? "valid" : "invalid";
		if (strcmp(got, want) != 0) {
			print_error("public vector %s: got %s (%s: %s: %s), want %s\n", name, got,
			            ota_err_name(rc), err.where, err.what, want);
			failures++;
		} else {
			print_message("public vector %-40s %s (%s)\n", name, got, ota_err_name(rc));
		}
		if (rc == OTA_OK)
			valid++;
		if (strncmp(name, "examples/", 9) == 0 && rc == OTA_OK)
			rfc++;
		ota_key_free(k);
		free(jwk);
		free(msg);
		free(aad);
		free(payload);
	}
	print_message("%zu public vectors, %zu valid (%zu from cose-wg Examples), %zu failures\n",
	              json_array_size(vs), valid, rfc, failures);
	json_decref(doc);
	free(text);
	assert_int_equal(failures, 0);
	assert_true(valid >= 20);
}

/* The RFC 9052 C.2.1 example (cose-wg Examples) and its specific refusals. */
static void test_public_refusal_reasons(void **s)
{
	(void)s;
	static const struct {
		const char *name;
		const char *code;
	} want[] = {
	    {"examples/ecdsa-examples/ecdsa-sig-04", "alg_key_mismatch"},
	    {"examples/hashsig/hsssig-sig-01", "cose_alg_unknown"},
	    {"examples/sign1-tests/sign-fail-01", "cose_tag_wrong"},
	    {"examples/sign1-tests/sign-fail-02", "signature_invalid"},
	    {"examples/sign1-tests/sign-fail-03", "cose_alg_unknown"},
	    {"examples/sign1-tests/sign-fail-04", "cose_alg_text"},
	    {"examples/sign1-tests/sign-fail-06", "signature_invalid"},
	    {"examples/sign1-tests/sign-fail-07", "signature_invalid"},
	    {"examples/sign1-tests/sign-pass-01", "cose_alg_unprotected"},
	    {"examples/sign1-tests/sign-pass-03", "cose_tag_missing"},
	    {"gocose/sign1-verify-negative-0000", "cose_protected_not_bstr"},
	    {"gocose/sign1-verify-negative-0001", "cose_protected_not_map"},
	    {"gocose/sign1-verify-negative-0002", "cose_duplicate_label"},
	    {"gocose/sign1-verify-negative-0003", "cose_duplicate_label"},
	};
	size_t len = 0;
	uint8_t *text = test_read_src("vectors/cose/public/sign1-vectors.json", &len);
	json_t *doc = json_loadb((const char *)text, len, 0, NULL);
	json_t *vs = json_object_get(doc, "vectors");
	for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
		size_t i;
		json_t *v;
		bool found = false;
		json_array_foreach(vs, i, v) {
			if (strcmp(json_string_value(json_object_get(v, "name")), want[w].name) != 0)
				continue;
			found = true;
			size_t ml = 0;
			uint8_t *msg = hex_bytes(json_string_value(json_object_get(v, "cbor_hex")), &ml);
			char *jwk = jwk_from_hex(json_object_get(v, "key_hex"));
			ota_key *k = NULL;
			ota_cose_sign1 m;
			ota_err rc = ota_cose_sign1_decode(ota_bytes_make(msg, ml), NULL, &m, NULL);
			if (rc == OTA_OK || strcmp(want[w].code, "cose_tag_missing") == 0) {
				assert_ota(ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &k, NULL),
				           OTA_OK);
				rc = ota_cose_sign1_verify(ota_bytes_make(msg, ml), k, NULL, NULL, NULL);
			}
			if (strcmp(ota_err_name(rc), want[w].code) != 0)
				fail_msg("%s: got %s want %s", want[w].name, ota_err_name(rc), want[w].code);
			/* sign-pass-03 is valid once untagged messages are allowed */
			if (strcmp(want[w].name, "examples/sign1-tests/sign-pass-03") == 0) {
				ota_cose_verify_opts vo = {.allow_untagged = true};
				assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, ml), k, &vo, NULL, NULL),
				           OTA_OK);
			}
			ota_key_free(k);
			free(jwk);
			free(msg);
		}
		if (!found)
			fail_msg("public vector %s missing", want[w].name);
	}
	json_decref(doc);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folder_vectors),
	    cmocka_unit_test(test_public_vectors),
	    cmocka_unit_test(test_public_refusal_reasons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
