/*
 * ota-attestd's answers checked against docs/attestation.md, over raw HTTP
 * on loopback:
 * - POST /v1/challenges: an explicit "ttl" or "nonce_bytes" outside
 *   1..--challenge-ttl and 16..64 is refused (0 included); only an absent
 *   member means the default;
 * - status codes: a body within the HTTP cap whose attestation payload is
 *   too large or nests too deep is a payload refusal (403), 413 is only the
 *   HTTP body cap; a JSON request nesting too deep is a malformed request
 *   (400);
 * - refusals decided in the group commit's transaction (prior_*, a lost
 *   replay race) carry the store's where and message;
 * - HTTP strictness: one Content-Length, one Content-Type, and the media
 *   type exactly (case-insensitive type/subtype, only the parameters the
 *   docs allow).
 */
#include "attestd_client.h"
#include "test_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/admission.h"
#include "ota/attestd.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/trust.h"

typedef struct fx {
	test_endpoint_root w;
	ota_attestd *d;
	uint16_t port;
	char url[64];
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	test_endpoint_root_make(&f->w, "attestd-strict.test", (int64_t)time(NULL), 0);
	ota_attestd_opts o;
	test_attestd_opts(&f->w, &o);
	o.threads = 2;
	o.timeout_s = 3;
	f->port = test_attestd_start(&o, &f->d, f->url, sizeof f->url);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	ota_attestd_stop(f->d);
	test_endpoint_root_free(&f->w);
	free(f);
	return 0;
}

/* ---- raw HTTP ---- */

static const char *code_of(const test_http_reply *r)
{
	const char *c = json_string_value(json_object_get(r->body, "code"));
	return c != NULL ? c : "";
}

static const char *str_of(const test_http_reply *r, const char *k)
{
	const char *c = json_string_value(json_object_get(r->body, k));
	return c != NULL ? c : "";
}

/* Asserts the status and (unless NULL) the error code of r, then frees it. */
static void expect(test_http_reply r, int status, const char *code, const char *what)
{
	if (r.status != status || (code != NULL && strcmp(code_of(&r), code) != 0)) {
		char *s = r.body != NULL ? json_dumps(r.body, JSON_COMPACT) : NULL;
		fail_msg("%s: got %d %s, want %d %s", what, r.status, s != NULL ? s : "(no JSON)",
		         status, code != NULL ? code : "");
	}
	json_decref(r.body);
}

/* ---- attestations ---- */

static uint8_t *sign(fx *f, ota_bytes payload, size_t *len)
{
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	uint8_t *msg = NULL;
	ota_error e = {0};
	assert_ota(ota_cose_sign1_sign(f->w.issuer_key, payload, &so, &msg, len, &e), OTA_OK);
	return msg;
}

/* A signed attestation for a fresh challenge of txn (new COSE bytes). */
static uint8_t *attest(fx *f, const char *txn, const char *prior, ota_bytes body, size_t *len)
{
	ota_nonce_binding b = {txn, "issuer:acme", "oci_remote"};
	ota_attestation a;
	test_attestation_claims(&a, f->w.root, "issuer:acme", txn, "b1", prior);
	snprintf(a.kind, sizeof a.kind, "capability");
	assert_ota(test_attestd_challenge(f->url, &b, a.nonce, &a.nonce_len), OTA_OK);
	a.iat = (int64_t)time(NULL);
	a.exp = a.iat + 120;
	a.body = body;
	return test_attestation_sign(&a, f->w.issuer_key, true, len);
}

static test_http_reply submit(fx *f, const uint8_t *msg, size_t len)
{
	return test_http_post(f->port, "/v1/attestations", "Content-Type: application/cose\r\n",
	                      msg, len);
}

/* ---- item: challenge ttl and nonce_bytes ---- */

static test_http_reply ask(fx *f, const char *json)
{
	return test_http_post(f->port, "/v1/challenges", "Content-Type: application/json\r\n", json,
	                      strlen(json));
}

static void test_challenge_ranges(void **state)
{
	fx *f = *state;
#define CH "{\"txn\":\"t\",\"issuer\":\"issuer:acme\",\"scope\":\"oci_remote\""
	/* explicit 0 is not the default */
	expect(ask(f, CH ",\"ttl\":0}"), 400, "nonce_ttl", "ttl 0");
	expect(ask(f, CH ",\"nonce_bytes\":0}"), 400, "nonce_length", "nonce_bytes 0");
	expect(ask(f, CH ",\"ttl\":-1}"), 400, "nonce_ttl", "ttl -1");
	expect(ask(f, CH ",\"ttl\":3601}"), 400, "nonce_ttl", "ttl 3601");
	/* the endpoint's --challenge-ttl (here the default, 300) is the most a
	 * client gets, not only the default */
	expect(ask(f, CH ",\"ttl\":301}"), 400, "nonce_ttl", "ttl 301 over --challenge-ttl");
	expect(ask(f, CH ",\"ttl\":3600}"), 400, "nonce_ttl", "ttl 3600 over --challenge-ttl");
	expect(ask(f, CH ",\"nonce_bytes\":15}"), 400, "nonce_length", "nonce_bytes 15");
	expect(ask(f, CH ",\"nonce_bytes\":65}"), 400, "nonce_length", "nonce_bytes 65");
	expect(ask(f, CH ",\"nonce_bytes\":-1}"), 400, "nonce_length", "nonce_bytes -1");
	/* the bounds themselves */
	expect(ask(f, CH ",\"ttl\":1}"), 201, NULL, "ttl 1");
	expect(ask(f, CH ",\"ttl\":300}"), 201, NULL, "ttl 300");
	expect(ask(f, CH ",\"nonce_bytes\":16}"), 201, NULL, "nonce_bytes 16");
	expect(ask(f, CH ",\"nonce_bytes\":64}"), 201, NULL, "nonce_bytes 64");
	/* absent: the defaults (300 s, 32 bytes) */
	test_http_reply r = ask(f, CH "}");
	assert_int_equal(r.status, 201);
	json_int_t at = json_integer_value(json_object_get(r.body, "issued_at"));
	json_int_t until = json_integer_value(json_object_get(r.body, "expires_at"));
	assert_int_equal(until - at, 300);
	uint8_t *raw = NULL;
	size_t nl = 0;
	const char *n64 = str_of(&r, "nonce");
	assert_ota(ota_base64_decode(n64, strlen(n64), &raw, &nl), OTA_OK);
	assert_int_equal(nl, 32);
	free(raw);
	json_decref(r.body);
#undef CH
}

/* ---- item: status codes of payload refusals ---- */

static void test_payload_refusal_status(void **state)
{
	fx *f = *state;
	/* a validly signed payload over 64 KiB in a body under the 256 KiB cap */
	size_t pl = OTA_MAX_ATTESTATION_BYTES + 1000, len = 0;
	uint8_t *big = calloc(1, pl);
	assert_non_null(big);
	uint8_t *msg = sign(f, ota_bytes_make(big, pl), &len);
	free(big);
	assert_true(len < OTA_MAX_HTTP_BODY_BYTES);
	expect(submit(f, msg, len), 403, "attestation_too_large", "payload over 64 KiB");
	free(msg);
	/* a body nesting 20 deep (the limit is 16) */
	uint8_t deep[21];
	memset(deep, 0x81, 20); /* [[[[...0...]]]] */
	deep[20] = 0x00;
	msg = attest(f, "txn-deep", NULL, ota_bytes_make(deep, sizeof deep), &len);
	expect(submit(f, msg, len), 403, "too_deep", "body too deep");
	free(msg);
	/* a JSON request nesting too deep is a malformed request */
	char json[512];
	int n = snprintf(json, sizeof json, "{\"txn\":");
	for (int i = 0; i < 100; i++)
		json[n++] = '[';
	for (int i = 0; i < 100; i++)
		json[n++] = ']';
	json[n++] = '}';
	json[n] = '\0';
	expect(ask(f, json), 400, "too_deep", "JSON too deep");
	/* the HTTP cap stays 413 */
	expect(test_http_post(f->port, "/v1/attestations",
	                      "Content-Type: application/cose\r\nContent-Length: 300000\r\n", "",
	                      0),
	       413, "http_body_too_large", "declared over the cap");
}

/* ---- item: refusals decided in the commit keep their detail ---- */

static void test_commit_refusal_detail(void **state)
{
	fx *f = *state;
	size_t len = 0;
	uint8_t *msg = attest(f, "txn-detail", NULL, ota_bytes_make(NULL, 0), &len);
	test_http_reply r = submit(f, msg, len);
	assert_int_equal(r.status, 201);
	char first[OTA_ID_LEN + 1];
	snprintf(first, sizeof first, "%s", str_of(&r, "attestation"));
	json_decref(r.body);
	free(msg);
	/* head checks run only in the transaction */
	msg = attest(f, "txn-detail", NULL, ota_bytes_make(NULL, 0), &len);
	r = submit(f, msg, len);
	assert_int_equal(r.status, 409);
	assert_string_equal(code_of(&r), "attestation_prior_missing");
	assert_string_equal(str_of(&r, "where"), "prior");
	assert_string_not_equal(str_of(&r, "message"),
	                        ota_err_message(OTA_ERR_ATT_PRIOR_MISSING));
	json_decref(r.body);
	free(msg);
	char invented[OTA_ID_LEN + 1];
	snprintf(invented, sizeof invented, "sha256:%064d", 0);
	msg = attest(f, "txn-detail", invented, ota_bytes_make(NULL, 0), &len);
	r = submit(f, msg, len);
	assert_int_equal(r.status, 409);
	assert_string_equal(code_of(&r), "attestation_prior_unknown");
	assert_string_equal(str_of(&r, "where"), "prior");
	json_decref(r.body);
	free(msg);
	/* a replay is refused where the store says, commit or peek */
	msg = attest(f, "txn-detail", first, ota_bytes_make(NULL, 0), &len);
	expect(submit(f, msg, len), 201, NULL, "second record");
	r = submit(f, msg, len);
	assert_int_equal(r.status, 409);
	assert_string_equal(code_of(&r), "nonce_replayed");
	assert_string_equal(str_of(&r, "where"), "eat_nonce");
	assert_non_null(strstr(str_of(&r, "message"), "consumed at "));
	json_decref(r.body);
	free(msg);
}

/* Eight connections send the same attestation at once: one is accepted,
 * every other is a replay refused with the store's detail, whether the
 * peek or the transaction decided it. */
typedef struct racer {
	fx *f;
	const uint8_t *msg;
	size_t len;
	test_http_reply r;
} racer;

static void *race(void *p)
{
	racer *x = p;
	x->r = submit(x->f, x->msg, x->len);
	return NULL;
}

static void test_replay_race_detail(void **state)
{
	fx *f = *state;
	for (int round = 0; round < 5; round++) {
		char txn[32];
		snprintf(txn, sizeof txn, "txn-race-%d", round);
		size_t len = 0;
		uint8_t *msg = attest(f, txn, NULL, ota_bytes_make(NULL, 0), &len);
		racer x[8];
		pthread_t t[8];
		for (int i = 0; i < 8; i++) {
			x[i] = (racer){f, msg, len, {0, NULL}};
			assert_int_equal(pthread_create(&t[i], NULL, race, &x[i]), 0);
		}
		int accepted = 0;
		for (int i = 0; i < 8; i++) {
			pthread_join(t[i], NULL);
			if (x[i].r.status == 201) {
				accepted++;
			} else {
				assert_int_equal(x[i].r.status, 409);
				assert_string_equal(code_of(&x[i].r), "nonce_replayed");
				assert_string_equal(str_of(&x[i].r, "where"), "eat_nonce");
				assert_non_null(strstr(str_of(&x[i].r, "message"), "consumed at "));
			}
			json_decref(x[i].r.body);
		}
		assert_int_equal(accepted, 1);
		free(msg);
	}
}

/* ---- item: HTTP strictness ---- */

static void test_http_headers(void **state)
{
	fx *f = *state;
	const char junk[] = "not COSE";
	char h[256];
	/* two Content-Length headers, differing or not */
	snprintf(h, sizeof h, "Content-Type: application/cose\r\nContent-Length: %zu\r\n"
	                      "Content-Length: 3\r\n", sizeof junk - 1);
	expect(test_http_post(f->port, "/v1/attestations", h, junk, sizeof junk - 1), 400,
	       "http_bad_request", "two Content-Length");
	snprintf(h, sizeof h, "Content-Type: application/cose\r\nContent-Length: %zu\r\n"
	                      "Content-Length: %zu\r\n", sizeof junk - 1, sizeof junk - 1);
	expect(test_http_post(f->port, "/v1/attestations", h, junk, sizeof junk - 1), 400,
	       "http_bad_request", "two equal Content-Length");
	/* two Content-Type headers, either order */
	expect(test_http_post(
	               f->port, "/v1/attestations",
	               "Content-Type: application/json\r\nContent-Type: application/cose\r\n", junk,
	               sizeof junk - 1),
	       415, "http_content_type", "json then cose");
	expect(test_http_post(
	               f->port, "/v1/attestations",
	               "Content-Type: application/cose\r\nContent-Type: application/json\r\n", junk,
	               sizeof junk - 1),
	       415, "http_content_type", "cose then json");
	const char ch[] = "{\"txn\":\"t\",\"issuer\":\"issuer:acme\",\"scope\":\"oci_remote\"}";
	expect(test_http_post(f->port, "/v1/challenges",
	                      "Content-Type: application/json\r\nContent-Type: text/plain\r\n", ch,
	                      sizeof ch - 1),
	       415, "http_content_type", "two on challenges");
	/* a body framed twice: chunked and a length (request smuggling) */
	const char chunked[] = "8\r\nnot COSE\r\n0\r\n\r\n";
	snprintf(h, sizeof h, "Content-Type: application/cose\r\nTransfer-Encoding: chunked\r\n"
	                      "Content-Length: %zu\r\n", sizeof junk - 1);
	expect(test_http_post(f->port, "/v1/attestations", h, chunked, sizeof chunked - 1), 400,
	       "http_bad_request", "chunked and Content-Length");
}

static void test_media_types(void **state)
{
	fx *f = *state;
	const char junk[] = "not COSE";
	/* refused: 415 */
	static const char *const bad_cose[] = {
		"application/cose ,text/plain", "application/cose,text/plain",
		"application/cose text/plain",  "application/cosex",
		"application/cose-key",         "application/cose; foo=bar",
		"application/cose; cose-type=cose-mac0", "application/cose; cose-type=\"cose-sign1",
		"application/cose; cose-type=cose-sign1; cose-type=cose-sign1",
		"application/cose;=x",          "application/cose; cose-type=",
		"application /cose",            "text/plain",
		"application/json",
	};
	for (size_t i = 0; i < sizeof bad_cose / sizeof bad_cose[0]; i++) {
		char h[256];
		snprintf(h, sizeof h, "Content-Type: %s\r\n", bad_cose[i]);
		expect(test_http_post(f->port, "/v1/attestations", h, junk, sizeof junk - 1), 415,
		       "http_content_type", bad_cose[i]);
	}
	/* passed on to the COSE decoder: 403 cose_* for the junk body */
	static const char *const good_cose[] = {
		"application/cose", "APPLICATION/COSE", "Application/Cose",
		"application/cose; cose-type=\"cose-sign1\"", "application/cose;cose-type=cose-sign1",
		"application/cose ; COSE-TYPE=COSE-SIGN1", "application/cose;",
	};
	for (size_t i = 0; i < sizeof good_cose / sizeof good_cose[0]; i++) {
		char h[256];
		snprintf(h, sizeof h, "Content-Type: %s\r\n", good_cose[i]);
		test_http_reply r =
		        test_http_post(f->port, "/v1/attestations", h, junk, sizeof junk - 1);
		if (r.status != 403 || strncmp(code_of(&r), "cose_", 5) != 0)
			fail_msg("%s: got %d %s", good_cose[i], r.status, code_of(&r));
		json_decref(r.body);
	}
	const char ch[] = "{\"txn\":\"t\",\"issuer\":\"issuer:acme\",\"scope\":\"oci_remote\"}";
	static const char *const bad_json[] = {
		"application/json ,text/plain", "application/jsonx", "application/json; charset=latin1",
		"application/json; x=y", "text/json",
	};
	for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
		char h[256];
		snprintf(h, sizeof h, "Content-Type: %s\r\n", bad_json[i]);
		expect(test_http_post(f->port, "/v1/challenges", h, ch, sizeof ch - 1), 415,
		       "http_content_type", bad_json[i]);
	}
	static const char *const good_json[] = {
		"application/json", "Application/JSON", "application/json; charset=utf-8",
		"application/json;charset=\"UTF-8\"",
	};
	for (size_t i = 0; i < sizeof good_json / sizeof good_json[0]; i++) {
		char h[256];
		snprintf(h, sizeof h, "Content-Type: %s\r\n", good_json[i]);
		expect(test_http_post(f->port, "/v1/challenges", h, ch, sizeof ch - 1), 201, NULL,
		       good_json[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_challenge_ranges),
		cmocka_unit_test(test_payload_refusal_status),
		cmocka_unit_test(test_commit_refusal_detail),
		cmocka_unit_test(test_replay_race_detail),
		cmocka_unit_test(test_http_headers),
		cmocka_unit_test(test_media_types),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
