/*
 * The acceptance payload is parsed strictly (verify/admission_acceptance.c,
 * docs/attestation.md "The acceptance"): every claim exactly once, "result"
 * the documented "accepted", and "verifier" exactly {"id", "version",
 * "kid"}, each member once (a map of three with one member twice and
 * another missing used to pass, reading an uninitialised id when "id" was
 * the missing one). Payloads here are signed by the trust root's verifier
 * key in the single form, so only the payload can be at fault; or, in
 * test_unprotected_values, the unsigned unprotected header, whose values
 * are walked as strictly as an attestation's body.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/acceptance.h"
#include "ota/cbor.h"
#include "ota/cose.h"
#include "ota/key.h"
#include "ota/trust.h"

static test_endpoint_root w;
static int64_t now;

static int setup(void **state)
{
	(void)state;
	now = (int64_t)time(NULL);
	test_endpoint_root_make(&w, "acceptance-strict.test", now, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_endpoint_root_free(&w);
	return 0;
}

/* The members of the "verifier" map, in order ("" ends the list). */
typedef struct shape {
	const char *result;       /* value of "result" */
	const char *vm[5];        /* verifier members */
	const char *vid;          /* value written for "id" */
	bool verifier_first;      /* the verifier map before iss */
	const char *twice;        /* a top-level claim written in place of "boundary" */
} shape;

static void put_verifier(ota_cbor_wr *p, const shape *s, const uint8_t kid[32])
{
	size_t n = 0;
	while (n < 5 && s->vm[n] != NULL)
		n++;
	ota_cbor_text(p, "verifier");
	ota_cbor_head(p, 5, n);
	for (size_t i = 0; i < n; i++) {
		ota_cbor_text(p, s->vm[i]);
		if (strcmp(s->vm[i], "id") == 0)
			ota_cbor_text(p, s->vid != NULL ? s->vid : "verifier:endpoint");
		else if (strcmp(s->vm[i], "kid") == 0)
			ota_cbor_bstr(p, kid, 32);
		else
			ota_cbor_text(p, "0.1.0");
	}
}

/* A single-form acceptance of shape s (new COSE bytes). */
static uint8_t *acceptance(const shape *s, size_t *len)
{
	uint8_t kid[32], nonce[32];
	assert_ota(ota_key_kid(w.verifier_key, kid), OTA_OK);
	memset(nonce, 0x11, sizeof nonce);
	char a[OTA_ID_LEN + 1], c[OTA_ID_LEN + 1];
	snprintf(a, sizeof a, "sha256:%064x", 1);
	snprintf(c, sizeof c, "sha256:%064x", 2);
	ota_cbor_wr p = {0};
	ota_cbor_head(&p, 5, 13);
	if (s->verifier_first)
		put_verifier(&p, s, kid);
	ota_cbor_head(&p, 0, 1);
	ota_cbor_text(&p, "verifier:endpoint");
	ota_cbor_head(&p, 0, 6);
	ota_cbor_head(&p, 0, (uint64_t)now);
	ota_cbor_head(&p, 0, 10);
	ota_cbor_bstr(&p, nonce, sizeof nonce);
	ota_cbor_text(&p, "kind");
	ota_cbor_text(&p, "acceptance");
	ota_cbor_text(&p, "result");
	ota_cbor_text(&p, s->result != NULL ? s->result : "accepted");
	ota_cbor_text(&p, "attestation");
	ota_cbor_text(&p, a);
	ota_cbor_text(&p, "challenge");
	ota_cbor_text(&p, c);
	ota_cbor_text(&p, "issuer");
	ota_cbor_text(&p, "issuer:acme");
	ota_cbor_text(&p, "txn");
	ota_cbor_text(&p, "txn-1");
	ota_cbor_text(&p, s->twice != NULL ? s->twice : "boundary");
	ota_cbor_text(&p, "b1");
	ota_cbor_text(&p, "prior");
	ota_cbor_null(&p);
	ota_cbor_text(&p, "trust_root");
	ota_cbor_text(&p, ota_trust_root_identity(w.root));
	if (!s->verifier_first)
		put_verifier(&p, s, kid);
	assert_false(p.oom);
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	uint8_t *msg = NULL;
	ota_error e = {0};
	assert_ota(ota_cose_sign1_sign(w.verifier_key, ota_bytes_make(p.p, p.len), &so, &msg, len, &e),
	           OTA_OK);
	free(p.p);
	return msg;
}

/* Verifies shape s: its error name, and (when want is not ok) where and a
 * part of what. */
static void expect(const shape *s, ota_err want, const char *where, const char *what)
{
	size_t len = 0;
	uint8_t *msg = acceptance(s, &len);
	ota_acceptance out;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_acceptance_verify(ota_bytes_make(msg, len), w.root, now, &out, &e);
	free(msg);
	if (rc != want)
		fail_msg("got %s (%s: %s), want %s", ota_err_name(rc), e.where, e.what,
		         ota_err_name(want));
	if (want == OTA_OK) {
		assert_string_equal(out.result, "accepted");
		assert_string_equal(out.verifier_id, "verifier:endpoint");
		assert_string_equal(out.verifier_version, "0.1.0");
		return;
	}
	assert_string_equal(out.result, ""); /* cleared on failure */
	if (where != NULL && strcmp(e.where, where) != 0)
		fail_msg("where %s (%s), want %s", e.where, e.what, where);
	if (what != NULL && strstr(e.what, what) == NULL)
		fail_msg("what \"%s\" lacks \"%s\"", e.what, what);
}

static void test_good(void **state)
{
	(void)state;
	shape s = {.vm = {"id", "version", "kid"}};
	expect(&s, OTA_OK, NULL, NULL);
	shape t = {.vm = {"kid", "id", "version"}};
	expect(&t, OTA_OK, NULL, NULL);
	/* the verifier map ahead of iss: id is compared with iss once both are read */
	shape u = {.vm = {"id", "version", "kid"}, .verifier_first = true};
	expect(&u, OTA_OK, NULL, NULL);
}

static void test_verifier_members(void **state)
{
	(void)state;
	/* no id (version twice): id was read uninitialised */
	shape a = {.vm = {"version", "version", "kid"}};
	expect(&a, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "version twice");
	/* id twice, no version: was accepted */
	shape b = {.vm = {"id", "id", "kid"}};
	expect(&b, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "id twice");
	/* kid twice, no version */
	shape c = {.vm = {"id", "kid", "kid"}};
	expect(&c, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "kid twice");
	/* version missing (two members), an extra member, an unknown member */
	shape d = {.vm = {"id", "kid"}};
	expect(&d, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", NULL);
	shape f = {.vm = {"id", "version", "kid", "x"}};
	expect(&f, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", NULL);
	shape g = {.vm = {"id", "version", "x"}};
	expect(&g, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "unknown member");
	/* an id other than iss, before or after iss */
	shape h = {.vm = {"id", "version", "kid"}, .vid = "verifier:other"};
	expect(&h, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "differs from iss");
	h.verifier_first = true;
	expect(&h, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier", "differs from iss");
}

static void test_result(void **state)
{
	(void)state;
	/* ota_acceptance_verify itself refuses any result but "accepted" */
	shape a = {.vm = {"id", "version", "kid"}, .result = "refused"};
	expect(&a, OTA_ERR_ACCEPTANCE_MALFORMED, "result", NULL);
	shape b = {.vm = {"id", "version", "kid"}, .result = "Accepted"};
	expect(&b, OTA_ERR_ACCEPTANCE_MALFORMED, "result", NULL);
	shape c = {.vm = {"id", "version", "kid"}, .result = "accepted\x7f"};
	expect(&c, OTA_ERR_ACCEPTANCE_MALFORMED, NULL, NULL);
}

static void test_top_level_once(void **state)
{
	(void)state;
	/* 13 claims, txn twice and boundary missing: the duplicate is named */
	shape a = {.vm = {"id", "version", "kid"}, .twice = "txn"};
	expect(&a, OTA_ERR_ACCEPTANCE_MALFORMED, "txn", "twice");
	/* 13 claims with an unknown one in place of boundary */
	shape b = {.vm = {"id", "version", "kid"}, .twice = "boundry"};
	expect(&b, OTA_ERR_ACCEPTANCE_MALFORMED, NULL, "unknown claim");
	/* salt is a claim of the batch form only */
	shape c = {.vm = {"id", "version", "kid"}, .twice = "salt"};
	expect(&c, OTA_ERR_ACCEPTANCE_MALFORMED, NULL, "unknown claim");
}

/* The good acceptance with its empty unprotected header (a0) replaced by
 * unprot (unsigned bytes: anyone can put them there), verified. */
static ota_err with_unprotected(const uint8_t *unprot, size_t ul, ota_error *e)
{
	shape s = {.vm = {"id", "version", "kid"}};
	size_t len = 0;
	uint8_t *msg = acceptance(&s, &len);
	/* d2 84, protected 58 <n> <n bytes>, a0 */
	assert_int_equal(msg[2], 0x58);
	size_t at = 4 + (size_t)msg[3];
	assert_int_equal(msg[at], 0xa0);
	uint8_t *m = malloc(len - 1 + ul);
	assert_non_null(m);
	memcpy(m, msg, at);
	memcpy(m + at, unprot, ul);
	memcpy(m + at + ul, msg + at + 1, len - at - 1);
	ota_acceptance out;
	ota_error_clear(e);
	ota_err rc = ota_acceptance_verify(ota_bytes_make(m, len - 1 + ul), w.root, now, &out, e);
	free(m);
	free(msg);
	return rc;
}

/* The values of the unprotected header are walked as strictly as an
 * attestation's body (one walker, rd_skip): deterministic CBOR only; and
 * the single form's header is empty (anyone could put bytes there: an
 * acceptance would get another identity without the key). */
static void test_unprotected_values(void **state)
{
	(void)state;
	ota_error e;
	/* {99: {1: 0}}: an unknown label is refused */
	static const uint8_t nested[] = {0xa1, 0x18, 0x63, 0xa1, 0x01, 0x00};
	assert_ota(with_unprotected(nested, sizeof nested, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_string_equal(e.where, "unprotected");
	assert_non_null(strstr(e.what, "is empty"));
	/* {99: {1: 0, 1: 0}}: a map key twice */
	static const uint8_t twice[] = {0xa1, 0x18, 0x63, 0xa2, 0x01, 0x00, 0x01, 0x00};
	assert_ota(with_unprotected(twice, sizeof twice, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_string_equal(e.where, "unprotected");
	assert_non_null(strstr(e.what, "map key twice"));
	/* {99: NaN f97e01}: NaN only as f97e00 */
	static const uint8_t nan[] = {0xa1, 0x18, 0x63, 0xf9, 0x7e, 0x01};
	assert_ota(with_unprotected(nan, sizeof nan, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_string_equal(e.where, "unprotected");
	assert_non_null(strstr(e.what, "NaN"));
	static const uint8_t nan0[] = {0xa1, 0x18, 0x63, 0xf9, 0x7e, 0x00};
	assert_ota(with_unprotected(nan0, sizeof nan0, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "is empty"));
	/* a second kid riding unprotected beside the protected one: the
	 * strict decoder refuses a label in both headers */
	static const uint8_t kid4[] = {0xa1, 0x04, 0x41, 0x00};
	assert_ota(with_unprotected(kid4, sizeof kid4, &e), OTA_ERR_COSE_DUPLICATE_LABEL);
}

/* (r, n - s) verifies as well as (r, s): only the low-S form the endpoint
 * signs is an acceptance (one identity per signed acceptance). */
static void test_high_s(void **state)
{
	(void)state;
	shape s = {.vm = {"id", "version", "kid"}};
	size_t len = 0;
	uint8_t *msg = acceptance(&s, &len);
	ota_acceptance out;
	ota_error e = {0};
	assert_ota(ota_acceptance_verify(ota_bytes_make(msg, len), w.root, now, &out, &e), OTA_OK);
	/* ES256: the signature is the message's last 64 bytes, s the last 32 */
	uint8_t *sig = msg + len - 64;
	assert_false(ota_key_sig_is_high_s(OTA_ALG_ES256, ota_bytes_make(sig, 64)));
	static const uint8_t n[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
	                              0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
	                              0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
	int borrow = 0;
	for (int i = 31; i >= 0; i--) {
		int d = n[i] - sig[32 + i] - borrow;
		borrow = d < 0;
		sig[32 + i] = (uint8_t)(d + (borrow ? 256 : 0));
	}
	assert_true(ota_key_sig_is_high_s(OTA_ALG_ES256, ota_bytes_make(sig, 64)));
	/* it still verifies as a COSE signature ... */
	ota_cose_sign1 m;
	assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, len), w.verifier_key, NULL, &m, NULL),
	           OTA_OK);
	/* ... and is no acceptance */
	ota_error_clear(&e);
	assert_ota(ota_acceptance_verify(ota_bytes_make(msg, len), w.root, now, &out, &e),
	           OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "low-S"));
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_verifier_members),
		cmocka_unit_test(test_result),
		cmocka_unit_test(test_top_level_once),
		cmocka_unit_test(test_unprotected_values),
		cmocka_unit_test(test_high_s),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
