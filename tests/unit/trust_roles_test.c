/*
 * Trust-root attacks of the third adversarial audit, each with the error
 * name it must give: key reuse across roles (a root key that is also an
 * issuer, runner or verifier key was accepted: one online key then held root
 * authority), and, as checks that the rule holds, a snapshot signed only by
 * the keys it adds, one key counted twice (two kids / two signatures / two
 * principals), alg confusion between a key's declared alg and the alg it is
 * used with, a revoked key judged just before and at its revocation, and
 * the verifier state file edited between runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/json.h"
#include "ota/trust.h"
#include "test_util.h"

static const int64_t T0 = 1000, TEXP = 100000, AT = 2000;

static ota_key *R1, *R2, *P1, *E1; /* root keys, an ES256 and an Ed25519 principal key */

static int setup(void **s)
{
	(void)s;
	return ota_key_generate(OTA_ALG_ES256, &R1) == OTA_OK &&
	               ota_key_generate(OTA_ALG_ES256, &R2) == OTA_OK &&
	               ota_key_generate(OTA_ALG_ES256, &P1) == OTA_OK &&
	               ota_key_generate(OTA_ALG_EDDSA, &E1) == OTA_OK
	           ? 0
	           : -1;
}

static int teardown(void **s)
{
	(void)s;
	ota_key_free(R1);
	ota_key_free(R2);
	ota_key_free(P1);
	ota_key_free(E1);
	return 0;
}

/* Appends k's signature (under alg) over JCS(signed) to sigs, as keyid kid
 * (NULL: k's own). */
static void add_sig_as(json_t *sigs, const json_t *signed_, const ota_key *k, ota_alg alg,
                       const uint8_t *kid_override)
{
	char *tbs = NULL;
	size_t tl = 0;
	assert_ota(ota_jcs_serialize(signed_, &tbs, &tl, NULL), OTA_OK);
	uint8_t sig[OTA_MAX_SIG_BYTES], kid[32];
	size_t sl = 0;
	assert_ota(ota_key_sign(k, alg, ota_bytes_make(tbs, tl), (ota_buf){sig, sizeof sig}, &sl),
	           OTA_OK);
	free(tbs);
	assert_ota(ota_key_kid(k, kid), OTA_OK);
	char kh[65], *sh = malloc(2 * sl + 1);
	assert_non_null(sh);
	ota_hex_encode(ota_bytes_make(kid_override != NULL ? kid_override : kid, 32), kh);
	ota_hex_encode(ota_bytes_make(sig, sl), sh);
	json_array_append_new(sigs, json_pack("{s:s, s:s}", "keyid", kh, "sig", sh));
	free(sh);
}

static void add_sig(json_t *sigs, const json_t *signed_, const ota_key *k)
{
	add_sig_as(sigs, signed_, k, OTA_ALG_ES256, NULL);
}

/* A principal {id, role, scopes *, keys [k as alg, valid_from 0, revoked_at?]}. */
static json_t *principal(const char *id, const char *role, const ota_key *k, ota_alg alg,
                         int64_t revoked_at)
{
	json_t *key = test_snap_key(k, alg);
	json_object_set_new(key, "valid_from", json_integer(0));
	if (revoked_at > 0)
		json_object_set_new(key, "revoked_at", json_integer(revoked_at));
	json_t *p = json_pack("{s:s, s:s, s:{s:[s], s:[s], s:[s]}, s:[o]}", "id", id, "role", role,
	                      "scopes", "repos", "*", "lanes", "*", "provider_targets", "*", "keys",
	                      key);
	assert_non_null(p);
	return p;
}

static void id_of(const json_t *signed_, char id[OTA_ID_LEN + 1])
{
	char *tbs = NULL;
	size_t tl = 0;
	assert_ota(ota_jcs_serialize(signed_, &tbs, &tl, NULL), OTA_OK);
	assert_ota(ota_sha256_id(ota_bytes_make(tbs, tl), id), OTA_OK);
	free(tbs);
}

static ota_err parse_text(const char *t, size_t l)
{
	ota_trust_root *r = NULL;
	ota_err rc = ota_trust_root_parse(ota_bytes_make(t, l), &r, NULL);
	ota_trust_root_free(r);
	return rc;
}

static ota_err chain2(const char *v1, size_t l1, const char *v2, size_t l2, ota_trust_state *st,
                      ota_error *e)
{
	ota_trust_verify_opts o = {.at = AT, .state = st, .max_chain = 0};
	ota_trust_root *latest = NULL;
	ota_bytes c = ota_bytes_make(v2, l2);
	ota_err rc = ota_trust_chain_verify(ota_bytes_make(v1, l1), &c, v2 != NULL ? 1 : 0, &o,
	                                    &latest, e);
	ota_trust_root_free(latest);
	return rc;
}

/* v1: root R1 (1 of 1), issuer "prov" with P1. */
static char *v1_text(size_t *l, char id[OTA_ID_LEN + 1])
{
	json_t *s = test_snap_body(1, NULL, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                           json_pack("[o]", principal("prov", "issuer", P1, OTA_ALG_ES256, 0)),
	                           T0, TEXP);
	json_t *g = json_array();
	add_sig(g, s, R1);
	id_of(s, id);
	return test_snap_text(s, g, l);
}

/* ---- key reuse across roles (broken before: accepted) ---- */

static void test_root_key_as_principal_key(void **s)
{
	(void)s;
	const char *roles[] = {"issuer", "runner", "verifier"};
	for (size_t i = 0; i < 3; i++) {
		/* a pinned snapshot whose root key is also a principal's key */
		json_t *b = test_snap_body(1, NULL, 1,
		                           json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
		                           json_pack("[o]", principal("p", roles[i], R1,
		                                                      OTA_ALG_ES256, 0)),
		                           T0, TEXP);
		json_t *g = json_array();
		add_sig(g, b, R1);
		size_t l = 0;
		char *t = test_snap_text(b, g, &l);
		assert_ota(parse_text(t, l), OTA_ERR_TRUST_DUPLICATE_KEY);
		ota_error e;
		ota_error_clear(&e);
		assert_ota(chain2(t, l, NULL, 0, NULL, &e), OTA_ERR_TRUST_DUPLICATE_KEY);
		assert_non_null(strstr(e.what, "root key"));
		free(t);
	}
	/* ... and in a rotation, signed by the threshold: v2 makes the
	 * root key R1 the key of a runner principal too */
	char id1[OTA_ID_LEN + 1];
	size_t l1 = 0, l2 = 0;
	char *v1 = v1_text(&l1, id1);
	json_t *s2 = test_snap_body(2, id1, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                            json_pack("[o, o]",
	                                      principal("prov", "issuer", P1, OTA_ALG_ES256, 0),
	                                      principal("ci", "runner", R1, OTA_ALG_ES256, 0)),
	                            T0, TEXP);
	json_t *g2 = json_array();
	add_sig(g2, s2, R1);
	char *v2 = test_snap_text(s2, g2, &l2);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(chain2(v1, l1, v2, l2, NULL, &e), OTA_ERR_TRUST_DUPLICATE_KEY);
	assert_non_null(strstr(e.where, "chain[1]"));
	free(v2);
	/* ... and the other way: v2 promotes the issuer key P1 to a root key */
	json_t *s3 = test_snap_body(2, id1, 1,
	                            json_pack("[o, o]", test_snap_key(R1, OTA_ALG_ES256),
	                                      test_snap_key(P1, OTA_ALG_ES256)),
	                            json_pack("[o]", principal("prov", "issuer", P1, OTA_ALG_ES256, 0)),
	                            T0, TEXP);
	json_t *g3 = json_array();
	add_sig(g3, s3, R1);
	size_t l3 = 0;
	char *v3 = test_snap_text(s3, g3, &l3);
	assert_ota(chain2(v1, l1, v3, l3, NULL, NULL), OTA_ERR_TRUST_DUPLICATE_KEY);
	free(v3);
	free(v1);
}

/* ---- the rule holds ---- */

/* v2 names new root keys R2 only and is signed only by R2: v1's threshold
 * (R1) is missing. */
static void test_signed_only_by_keys_it_adds(void **s)
{
	(void)s;
	char id1[OTA_ID_LEN + 1];
	size_t l1 = 0, l2 = 0;
	char *v1 = v1_text(&l1, id1);
	json_t *s2 = test_snap_body(2, id1, 1, json_pack("[o]", test_snap_key(R2, OTA_ALG_ES256)),
	                            json_pack("[o]", principal("prov", "issuer", P1, OTA_ALG_ES256, 0)),
	                            T0, TEXP);
	json_t *g2 = json_array();
	add_sig(g2, s2, R2);
	char *v2 = test_snap_text(s2, g2, &l2);
	assert_ota(chain2(v1, l1, v2, l2, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_OLD);
	free(v2);
	free(v1);
}

/* Threshold 2 of [R1, R2] met by R1 twice: under its own kid twice
 * (duplicate signature), and under R2's kid (its signature does not verify
 * with R2, so it counts nothing). */
static void test_one_key_counted_twice(void **s)
{
	(void)s;
	uint8_t kid2[32];
	assert_ota(ota_key_kid(R2, kid2), OTA_OK);
	for (int v = 0; v < 2; v++) {
		json_t *b = test_snap_body(1, NULL, 2,
		                           json_pack("[o, o]", test_snap_key(R1, OTA_ALG_ES256),
		                                     test_snap_key(R2, OTA_ALG_ES256)),
		                           json_array(), T0, TEXP);
		json_t *g = json_array();
		add_sig(g, b, R1);
		add_sig_as(g, b, R1, OTA_ALG_ES256, v == 0 ? NULL : kid2);
		size_t l = 0;
		char *t = test_snap_text(b, g, &l);
		assert_ota(chain2(t, l, NULL, 0, NULL, NULL),
		           v == 0 ? OTA_ERR_TRUST_DUPLICATE_SIGNATURE : OTA_ERR_TRUST_THRESHOLD_NEW);
		free(t);
	}
	/* one principal key in two principals */
	json_t *b = test_snap_body(1, NULL, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                           json_pack("[o, o]",
	                                     principal("a", "issuer", P1, OTA_ALG_ES256, 0),
	                                     principal("b", "runner", P1, OTA_ALG_ES256, 0)),
	                           T0, TEXP);
	json_t *g = json_array();
	add_sig(g, b, R1);
	size_t l = 0;
	char *t = test_snap_text(b, g, &l);
	assert_ota(parse_text(t, l), OTA_ERR_TRUST_DUPLICATE_KEY);
	free(t);
}

/* An ES256 key used with an EdDSA header and an Ed25519 key used as ES256
 * (lookup), and an Ed25519 key declared ES256 (parse). */
static void test_alg_confusion(void **s)
{
	(void)s;
	json_t *b = test_snap_body(1, NULL, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                           json_pack("[o, o]",
	                                     principal("es", "issuer", P1, OTA_ALG_ES256, 0),
	                                     principal("ed", "issuer", E1, OTA_ALG_EDDSA, 0)),
	                           T0, TEXP);
	json_t *g = json_array();
	add_sig(g, b, R1);
	size_t l = 0;
	char *t = test_snap_text(b, g, &l);
	ota_trust_root *r = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(t, l), &r, NULL), OTA_OK);
	free(t);
	uint8_t kp[32], ke[32];
	assert_ota(ota_key_kid(P1, kp), OTA_OK);
	assert_ota(ota_key_kid(E1, ke), OTA_OK);
	assert_ota(ota_trust_lookup(r, ota_bytes_make(kp, 32), OTA_ALG_EDDSA, OTA_TRUST_ROLE_ISSUER,
	                            NULL, AT, NULL, NULL, NULL),
	           OTA_ERR_TRUST_ALG_MISMATCH);
	assert_ota(ota_trust_lookup(r, ota_bytes_make(ke, 32), OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER,
	                            NULL, AT, NULL, NULL, NULL),
	           OTA_ERR_TRUST_ALG_MISMATCH);
	assert_ota(ota_trust_lookup(r, ota_bytes_make(ke, 32), OTA_ALG_EDDSA, OTA_TRUST_ROLE_ISSUER,
	                            NULL, AT, NULL, NULL, NULL),
	           OTA_OK);
	ota_trust_root_free(r);
	json_t *b2 = test_snap_body(1, NULL, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                            json_pack("[o]", principal("ed", "issuer", E1, OTA_ALG_ES256, 0)),
	                            T0, TEXP);
	json_t *g2 = json_array();
	add_sig(g2, b2, R1);
	t = test_snap_text(b2, g2, &l);
	assert_ota(parse_text(t, l), OTA_ERR_ALG_KEY_MISMATCH);
	free(t);
}

/* A key revoked at 1500 is judged at the verifier's time: valid at 1499,
 * revoked at 1500 and after. */
static void test_revoked_key_times(void **s)
{
	(void)s;
	json_t *b = test_snap_body(1, NULL, 1, json_pack("[o]", test_snap_key(R1, OTA_ALG_ES256)),
	                           json_pack("[o]", principal("prov", "issuer", P1, OTA_ALG_ES256,
	                                                      1500)),
	                           T0, TEXP);
	json_t *g = json_array();
	add_sig(g, b, R1);
	size_t l = 0;
	char *t = test_snap_text(b, g, &l);
	ota_trust_root *r = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(t, l), &r, NULL), OTA_OK);
	free(t);
	uint8_t kp[32];
	assert_ota(ota_key_kid(P1, kp), OTA_OK);
	const int64_t at[] = {1499, 1500, 1501, AT};
	const ota_err want[] = {OTA_OK, OTA_ERR_TRUST_KEY_REVOKED, OTA_ERR_TRUST_KEY_REVOKED,
	                        OTA_ERR_TRUST_KEY_REVOKED};
	for (size_t i = 0; i < 4; i++)
		assert_ota(ota_trust_lookup(r, ota_bytes_make(kp, 32), OTA_ALG_ES256,
		                            OTA_TRUST_ROLE_ISSUER, NULL, at[i], NULL, NULL, NULL),
		           want[i]);
	ota_trust_root_free(r);
}

/* The verifier state edited between runs: a version above the chain's is
 * rollback, another identity at the accepted version is equivocation, an
 * extra member or a bad identity is trust_state_corrupt. (A state edited
 * down to an older version is taken: the state file is as trusted as its
 * permissions, docs/trust-root.md.) */
static void write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_state_tampering(void **s)
{
	(void)s;
	char dir[] = "/tmp/ota-trust-roles-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128], lock[140], text[512];
	snprintf(path, sizeof path, "%s/state.json", dir);
	snprintf(lock, sizeof lock, "%s.lock", path);
	char id1[OTA_ID_LEN + 1];
	size_t l1 = 0;
	char *v1 = v1_text(&l1, id1);
	const char *other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
	static const char pre[] = "{\"domains\":{\"acme.example\":{\"identity\":\"";
	static const char v1s[] = "\",\"version\":1}},\"kind\":\"ota.trust_state/v1\"}";
	struct {
		const char *id, *post;
		ota_err want;
	} cases[] = {
		{other, "\",\"version\":2}},\"kind\":\"ota.trust_state/v1\"}", OTA_ERR_TRUST_ROLLBACK},
		{other, v1s, OTA_ERR_TRUST_EQUIVOCATION},
		{id1, "\",\"version\":1,\"x\":1}},\"kind\":\"ota.trust_state/v1\"}",
		 OTA_ERR_TRUST_STATE_CORRUPT},
		{"sha256:ABC", v1s, OTA_ERR_TRUST_STATE_CORRUPT},
		{id1, "\",\"version\":1}},\"kind\":\"ota.trust_state/v1\",\"domains\":{}}",
		 OTA_ERR_TRUST_STATE_CORRUPT},
		{id1, v1s, OTA_OK},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "%s%s%s", pre, cases[i].id, cases[i].post);
		write_file(path, text);
		ota_trust_state *st = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_trust_state_open(path, &st, &e);
		if (rc == OTA_OK) {
			rc = chain2(v1, l1, NULL, 0, st, &e);
			ota_trust_state_close(st);
		}
		if (rc != cases[i].want)
			fail_msg("case %zu: %s (%s), want %s", i, ota_err_name(rc), e.what,
			         ota_err_name(cases[i].want));
	}
	free(v1);
	unlink(path);
	unlink(lock);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_key_as_principal_key),
		cmocka_unit_test(test_signed_only_by_keys_it_adds),
		cmocka_unit_test(test_one_key_counted_twice),
		cmocka_unit_test(test_alg_confusion),
		cmocka_unit_test(test_revoked_key_times),
		cmocka_unit_test(test_state_tampering),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
