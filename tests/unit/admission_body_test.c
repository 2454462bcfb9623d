/*
 * The attestation payload's "body" (verify/admission_claims.c,
 * docs/attestation.md): any CBOR, but valid and deterministic where it
 * matters for identity: no map with two equal keys, at any depth (RFC 8949
 * section 5.6), and floats in their shortest form (section 4.2.1), NaN only
 * as f97e00 (section 4.2.2). Each case is a whole payload with the body
 * given in hex, parsed with ota_attestation_parse.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"

/* The payload of a valid attestation whose body is the CBOR in hex. */
static ota_err parse_with_body(const char *hex, ota_error *e)
{
	uint8_t body[512];
	size_t bl = 0;
	ota_buf out = {body, sizeof body};
	assert_ota(ota_hex_decode(hex, strlen(hex), out, &bl), OTA_OK);
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "issuer:acme");
	a.iat = 1800000000;
	a.exp = a.iat + 120;
	memset(a.nonce, 0x42, 32);
	a.nonce_len = 32;
	snprintf(a.kind, sizeof a.kind, "capability");
	snprintf(a.txn, sizeof a.txn, "txn-1");
	snprintf(a.trust_root, sizeof a.trust_root, "sha256:%064d", 7);
	snprintf(a.provider, sizeof a.provider, "oci_remote");
	snprintf(a.boundary, sizeof a.boundary, "b1");
	a.body = ota_bytes_make(body, bl);
	uint8_t *p = NULL;
	size_t pl = 0;
	assert_ota(ota_attestation_encode(&a, &p, &pl), OTA_OK);
	ota_attestation out_a;
	ota_error_clear(e);
	ota_err rc = ota_attestation_parse(ota_bytes_make(p, pl), &out_a, e);
	if (rc == OTA_OK) {
		assert_int_equal(out_a.body.len, bl);
		assert_memory_equal(out_a.body.ptr, body, bl);
	}
	free(p);
	return rc;
}

static void accepts(const char *hex)
{
	ota_error e;
	ota_err rc = parse_with_body(hex, &e);
	if (rc != OTA_OK)
		fail_msg("body %s: %s (%s: %s), want ok", hex, ota_err_name(rc), e.where, e.what);
}

static void refuses(const char *hex, ota_err want, const char *what)
{
	ota_error e;
	ota_err rc = parse_with_body(hex, &e);
	if (rc != want)
		fail_msg("body %s: %s (%s: %s), want %s", hex, ota_err_name(rc), e.where, e.what,
		         ota_err_name(want));
	if (what != NULL && strstr(e.what, what) == NULL)
		fail_msg("body %s: what \"%s\" lacks \"%s\"", hex, e.what, what);
}

static void test_valid_bodies(void **state)
{
	(void)state;
	accepts("a0");                             /* {} */
	accepts("a2616101616202");                 /* {"a": 1, "b": 2} */
	accepts("a2616201616101");                 /* keys in any order */
	accepts("82a1616101a1616101");             /* [{"a": 1}, {"a": 1}]: two maps */
	accepts("a2016161f93c006162");             /* {1: "a", 1.0: "b"}: 1 and 1.0 differ */
	accepts("a20001200f");                     /* {0: 1, -1: 15} */
	accepts("a2410001410101");                 /* {h'00': 1, h'01': 1} */
	accepts("a2a0008000");                     /* {{}: 0, []: 0} */
	accepts("c1a2616101616202");               /* a tag over a map */
	accepts("626f6b");                         /* "ok" */
	accepts("f97e00");                         /* the one NaN */
	accepts("f93c00");                         /* 1.0 as half */
	accepts("f97c00");                         /* infinity as half */
	accepts("f9fc00");                         /* -infinity as half */
	accepts("f98000");                         /* -0.0 as half */
	accepts("f90001");                         /* 2^-24, the smallest half */
	accepts("fa47c35000");                     /* 100000.0: beyond half */
	accepts("fa477ff000");                     /* 65520.0: beyond half */
	accepts("fa33000000");                     /* 2^-25: below half */
	accepts("fa3eaaaaab");                     /* 1/3 as single */
	accepts("fb3ff199999999999a");             /* 1.1 as double */
	accepts("fb3690000000000000");             /* 2^-150: below single */
}

static void test_valid_simple(void **state)
{
	(void)state;
	accepts("84f4f5f6f7");                     /* [false, true, null, undefined] */
	accepts("f820");                           /* simple(32) */
}

static void test_duplicate_keys(void **state)
{
	(void)state;
	refuses("a2616101616102", OTA_ERR_ATT_MALFORMED, "twice");      /* {"a": 1, "a": 2} */
	refuses("a2616101616101", OTA_ERR_ATT_MALFORMED, "twice");      /* the same value too */
	refuses("a3616101616202616103", OTA_ERR_ATT_MALFORMED, "twice");
	refuses("a201000102", OTA_ERR_ATT_MALFORMED, "twice");          /* {1: 0, 1: 2} */
	refuses("a2200020f5", OTA_ERR_ATT_MALFORMED, "twice");          /* {-1: 0, -1: true} */
	refuses("a2f93c0000f93c0001", OTA_ERR_ATT_MALFORMED, "twice");  /* {1.0: 0, 1.0: 1} */
	refuses("a2a000a000", OTA_ERR_ATT_MALFORMED, "twice");          /* {{}: 0, {}: 0} */
	refuses("a2820102f5820102f4", OTA_ERR_ATT_MALFORMED, "twice");  /* {[1, 2]: .., [1, 2]: ..} */
	/* nested: in a map, in an array, under a tag, deep */
	refuses("a1617aa2616101616102", OTA_ERR_ATT_MALFORMED, "twice");
	refuses("8201a2616101616102", OTA_ERR_ATT_MALFORMED, "twice");
	refuses("c1a2616101616102", OTA_ERR_ATT_MALFORMED, "twice");
	refuses("8181818181818181a2616101616102", OTA_ERR_ATT_MALFORMED, "twice");
	/* among many keys: 40 distinct plus one repeated */
	char hex[512];
	int n = snprintf(hex, sizeof hex, "b829");
	for (int i = 0; i < 40; i++)
		n += snprintf(hex + n, sizeof hex - (size_t)n, "18%02x00", 24 + i);
	snprintf(hex + n, sizeof hex - (size_t)n, "182a00"); /* 42 again */
	refuses(hex, OTA_ERR_ATT_MALFORMED, "twice");
}

static void test_many_keys_distinct(void **state)
{
	(void)state;
	char hex[512];
	int n = snprintf(hex, sizeof hex, "b828");
	for (int i = 0; i < 40; i++)
		n += snprintf(hex + n, sizeof hex - (size_t)n, "18%02x00", 24 + i);
	accepts(hex);
}

static void test_floats(void **state)
{
	(void)state;
	/* NaN only as f97e00 */
	refuses("f97e01", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("f9fe00", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("f97c01", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("fa7fc00000", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("fa7f800001", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("fb7ff8000000000000", OTA_ERR_ATT_MALFORMED, "NaN");
	refuses("fbfff8000000000001", OTA_ERR_ATT_MALFORMED, "NaN");
	/* values a shorter float holds exactly */
	refuses("fa3f800000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* 1.0 single */
	refuses("fa00000000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* 0.0 single */
	refuses("fa80000000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* -0.0 single */
	refuses("fa7f800000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* infinity single */
	refuses("fa477fe000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* 65504.0 single */
	refuses("fa33800000", OTA_ERR_ATT_MALFORMED, "non-shortest");  /* 2^-24 single */
	refuses("fb3ff0000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* 1.0 double */
	refuses("fb3ff8000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* 1.5 double */
	refuses("fb0000000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* 0.0 double */
	refuses("fbfff0000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* -inf double */
	refuses("fb40f86a0000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* 100000.0 double */
	refuses("fb36a0000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* 2^-149 double */
	/* inside containers too */
	refuses("a16178fa3f800000", OTA_ERR_ATT_MALFORMED, "non-shortest");
	refuses("82f93c00fb3ff0000000000000", OTA_ERR_ATT_MALFORMED, "non-shortest");
	refuses("a1fa3f80000001", OTA_ERR_ATT_MALFORMED, "non-shortest"); /* as a key */
}

static void test_existing_rules_kept(void **state)
{
	(void)state;
	refuses("1801", OTA_ERR_ATT_MALFORMED, "non-shortest CBOR head");
	refuses("bf6161ff", OTA_ERR_ATT_MALFORMED, "indefinite");
	refuses("62ff00", OTA_ERR_ATT_MALFORMED, "UTF-8");
	refuses("8181818181818181818181818181818100", OTA_ERR_TOO_DEEP, NULL); /* 17 levels */
	accepts("81818181818181818181818181818100");   /* 16 levels: the limit */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_bodies),
		cmocka_unit_test(test_valid_simple),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_many_keys_distinct),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_existing_rules_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
