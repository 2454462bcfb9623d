/*
 * Attestation admission: acceptance of a chain of records, and every attack
 * refused with its own error name (wrong key, revoked key, out-of-scope
 * issuer, stale, expired, replayed, wrong txn, wrong nonce, forked or
 * skipped prior, ...), plus the strict payload parser.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/cose.h"

#define NOW 1800000000

typedef struct world {
	test_admission_world base; /* root, store, context, signer (test_util.c) */
	ota_key *issuer_key, *revoked_key, *other_key, *runner_key, *stranger_key, *late_key;
} world;

static const ota_nonce_binding acme = {"txn-1", "issuer:acme", "oci_remote"};

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "example.test", NOW - 86400,
	                                                NOW + 86400 * 30);
	ota_key **keys[] = {&w->issuer_key, &w->revoked_key, &w->other_key,
	                    &w->runner_key, &w->stranger_key, &w->late_key};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		assert_ota(ota_key_generate(OTA_ALG_ES256, keys[i]), OTA_OK);
	ota_error e = {0};
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->issuer_key,
	               NOW - 86400);
	test_trust_add_key(d, "issuer:acme", w->revoked_key, NOW - 86400);
	/* valid only from NOW - 5: after the challenges (issued at NOW - 10) */
	test_trust_add_key(d, "issuer:acme", w->late_key, NOW - 5);
	uint8_t kid[32];
	assert_ota(ota_key_kid(w->revoked_key, kid), OTA_OK);
	assert_ota(ota_trust_draft_revoke_key(d, ota_bytes_make(kid, 32), NOW - 60, &e), OTA_OK);
	test_trust_add(d, "issuer:other", OTA_TRUST_ROLE_ISSUER, "other_target", w->other_key,
	               NOW - 86400);
	test_trust_add(d, "runner:ci", OTA_TRUST_ROLE_RUNNER, "*", w->runner_key, NOW - 86400);
	test_admission_world_finish(&w->base, d, "admission.db");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_admission_world_free(&w->base);
	ota_key *keys[] = {w->issuer_key, w->revoked_key, w->other_key,
	                   w->runner_key, w->stranger_key, w->late_key};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		ota_key_free(keys[i]);
	free(w);
	return 0;
}

/* Claims for challenge c, fresh at NOW. */
static ota_attestation claims_for(const world *w, const ota_challenge *c)
{
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "%s", c->issuer);
	a.iat = NOW - 5;
	a.exp = NOW + 120;
	memcpy(a.nonce, c->nonce, c->nonce_len);
	a.nonce_len = c->nonce_len;
	snprintf(a.kind, sizeof a.kind, "initial_application");
	snprintf(a.txn, sizeof a.txn, "%s", c->txn);
	snprintf(a.trust_root, sizeof a.trust_root, "%s", ota_trust_root_identity(w->base.root));
	snprintf(a.provider, sizeof a.provider, "%.200s", c->scope);
	snprintf(a.adapter, sizeof a.adapter, "remote-adapter/1.0");
	snprintf(a.platform_os, sizeof a.platform_os, "linux");
	snprintf(a.platform_arch, sizeof a.platform_arch, "amd64");
	snprintf(a.segment, sizeof a.segment, "build");
	snprintf(a.policy_canonical, sizeof a.policy_canonical, "sha256:%064d", 1);
	snprintf(a.policy_effective, sizeof a.policy_effective, "sha256:%064d", 2);
	snprintf(a.boundary, sizeof a.boundary, "boundary-1");
	static const uint8_t body[] = {0xa1, 0x61, 'x', 0x01}; /* {"x": 1} */
	a.body = ota_bytes_make(body, sizeof body);
	return a;
}

static ota_challenge issue(world *w, const ota_nonce_binding *b)
{
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(w->base.store, b, 0, 0, NOW - 10, &c, NULL), OTA_OK);
	return c;
}

/* Submits; on success copies the record id into id_out (may be NULL). */
static ota_err submit(world *w, const ota_attestation *a, const ota_key *k, char *id_out)
{
	size_t len = 0;
	uint8_t *msg = test_attestation_sign(a, k, true, &len);
	ota_admission adm;
	ota_error e = {0};
	uint8_t *acc = NULL;
	size_t acc_len = 0;
	ota_err rc = ota_admission_admit(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(NULL, 0), NOW, ota_acceptance_build,
	                                 &w->base.signer, NULL, &adm, &acc, &acc_len, &e);
	if (rc == OTA_OK) {
		ota_acceptance acc_p;
		ota_error ve = {0};
		assert_ota(ota_acceptance_verify(ota_bytes_make(acc, acc_len), w->base.root, NOW,
		                                 &acc_p, &ve),
		           OTA_OK);
		assert_string_equal(acc_p.attestation, adm.record_id);
		assert_string_equal(acc_p.challenge, adm.challenge_id);
		assert_string_equal(acc_p.result, "accepted");
		assert_string_equal(acc_p.trust_root, ota_trust_root_identity(w->base.root));
		assert_string_equal(acc_p.verifier_id, "verifier:endpoint");
		assert_string_equal(acc_p.verifier_version, ota_version());
		assert_int_equal(acc_p.accepted_at, NOW);
		assert_string_equal(acc_p.txn, a->txn);
		assert_string_equal(acc_p.prior, a->has_prior ? a->prior : "");
		assert_memory_equal(acc_p.nonce, a->nonce, a->nonce_len);
		if (id_out != NULL)
			snprintf(id_out, OTA_ID_LEN + 1, "%s", adm.record_id);
		/* stored with its acceptance */
		uint8_t *sa = NULL, *sc = NULL;
		size_t sal = 0, scl = 0;
		assert_ota(ota_nonce_store_acceptance_get(w->base.store, a->txn, a->boundary,
		                                          adm.record_id, &sa, &sal, &sc, &scl, NULL),
		           OTA_OK);
		assert_int_equal(sal, len);
		assert_memory_equal(sa, msg, len);
		assert_int_equal(scl, acc_len);
		free(sa);
		free(sc);
	} else {
		assert_int_equal(e.code, rc); /* the detail names the same refusal */
		assert_null(acc);
	}
	free(acc);
	free(msg);
	return rc;
}

static void test_accept_chain(void **state)
{
	world *w = *state;
	ota_challenge c1 = issue(w, &acme), c2 = issue(w, &acme), c3 = issue(w, &acme);
	char r1[OTA_ID_LEN + 1], r2[OTA_ID_LEN + 1], r3[OTA_ID_LEN + 1];
	ota_attestation a = claims_for(w, &c1);
	assert_ota(submit(w, &a, w->issuer_key, r1), OTA_OK);
	a = claims_for(w, &c2);
	snprintf(a.kind, sizeof a.kind, "transition");
	a.has_prior = true;
	snprintf(a.prior, sizeof a.prior, "%s", r1);
	assert_ota(submit(w, &a, w->issuer_key, r2), OTA_OK);
	a = claims_for(w, &c3);
	snprintf(a.kind, sizeof a.kind, "terminal_application");
	a.has_prior = true;
	snprintf(a.prior, sizeof a.prior, "%s", r2);
	assert_ota(submit(w, &a, w->issuer_key, r3), OTA_OK);
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	assert_ota(ota_nonce_store_head_get(w->base.store, "txn-1", "issuer:acme", "boundary-1", head,
	                                    sizeof head, NULL),
	           OTA_OK);
	assert_string_equal(head, r3);
}

static void test_attacks(void **state)
{
	world *w = *state;
	ota_attestation a;
	ota_challenge c;
	char r1[OTA_ID_LEN + 1], r2[OTA_ID_LEN + 1];
	/* an accepted first record, then a second, for the prior checks */
	c = issue(w, &acme);
	a = claims_for(w, &c);
	assert_ota(submit(w, &a, w->issuer_key, r1), OTA_OK);
	c = issue(w, &acme);
	a = claims_for(w, &c);
	a.has_prior = true;
	snprintf(a.prior, sizeof a.prior, "%s", r1);
	assert_ota(submit(w, &a, w->issuer_key, r2), OTA_OK);

	c = issue(w, &acme);
	/* wrong key: not in the trust root */
	a = claims_for(w, &c);
	a.has_prior = true;
	snprintf(a.prior, sizeof a.prior, "%s", r2);
	assert_ota(submit(w, &a, w->stranger_key, NULL), OTA_ERR_TRUST_KEY_UNKNOWN);
	/* revoked key (even with a backdated iat) */
	a.iat = NOW - 200;
	assert_ota(submit(w, &a, w->revoked_key, NULL), OTA_ERR_TRUST_KEY_REVOKED);
	a.iat = NOW - 5;
	/* a key that was not yet valid when the challenge was issued */
	assert_ota(submit(w, &a, w->late_key, NULL), OTA_ERR_TRUST_KEY_NOT_YET_VALID);
	/* a runner's key is not an issuer's */
	assert_ota(submit(w, &a, w->runner_key, NULL), OTA_ERR_TRUST_ROLE_MISMATCH);
	/* iss names another principal than the key's */
	ota_attestation b = a;
	snprintf(b.iss, sizeof b.iss, "issuer:other");
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_KEY_ISSUER);
	/* stale, future, expired, lifetime */
	b = a;
	b.iat = NOW - 301;
	b.exp = NOW + 100;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_STALE);
	b = a;
	b.iat = NOW + 31;
	b.exp = NOW + 100;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_NOT_YET_VALID);
	b = a;
	b.exp = NOW;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_EXPIRED);
	b = a;
	b.exp = b.iat + 901;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_LIFETIME);
	/* wrong txn */
	b = a;
	snprintf(b.txn, sizeof b.txn, "txn-2");
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_TXN_MISMATCH);
	/* wrong nonce: never issued */
	b = a;
	b.nonce[0] ^= 0xff;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_NONCE_UNKNOWN);
	/* provider other than the challenge's scope (principal scoped for both? no:
	 * acme is scoped to oci_remote only, so the trust root refuses first) */
	b = a;
	snprintf(b.provider, sizeof b.provider, "other_target");
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_TRUST_SCOPE_MISMATCH);
	/* another trust root */
	b = a;
	snprintf(b.trust_root, sizeof b.trust_root, "sha256:%064d", 7);
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_TRUST_ROOT);
	/* kinds a provider may not submit */
	b = a;
	snprintf(b.kind, sizeof b.kind, "acceptance");
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_KIND);
	/* forked prior (r1 is accepted but no longer the head), skipped prior,
	 * missing prior */
	b = a;
	snprintf(b.prior, sizeof b.prior, "%s", r1);
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_PRIOR_FORK);
	snprintf(b.prior, sizeof b.prior, "sha256:%064d", 9);
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_PRIOR_UNKNOWN);
	b.has_prior = false;
	assert_ota(submit(w, &b, w->issuer_key, NULL), OTA_ERR_ATT_PRIOR_MISSING);
	/* none of these burned the challenge: the honest record is accepted ... */
	size_t len = 0;
	uint8_t *msg = test_attestation_sign(&a, w->issuer_key, true, &len);
	ota_admission adm;
	ota_error e = {0};
	assert_ota(ota_admission_admit(&w->base.ctx, ota_bytes_make(msg, len),
	                               ota_bytes_make(NULL, 0), NOW, ota_acceptance_build,
	                               &w->base.signer, NULL, &adm, NULL, NULL, &e),
	           OTA_OK);
	/* ... once: the same bytes again are a replay */
	ota_error_clear(&e);
	assert_ota(ota_admission_admit(&w->base.ctx, ota_bytes_make(msg, len),
	                               ota_bytes_make(NULL, 0), NOW, ota_acceptance_build,
	                               &w->base.signer, NULL, &adm, NULL, NULL, &e),
	           OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(ota_err_name(e.code), "nonce_replayed");
	free(msg);
	/* the expected nonce differs */
	c = issue(w, &acme);
	a = claims_for(w, &c);
	snprintf(a.boundary, sizeof a.boundary, "boundary-2");
	msg = test_attestation_sign(&a, w->issuer_key, true, &len);
	uint8_t other[32] = {0};
	ota_error_clear(&e);
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(other, 32), NOW, &adm, &e),
	           OTA_ERR_ATT_NONCE_MISMATCH);
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(c.nonce, c.nonce_len), NOW, &adm, NULL),
	           OTA_OK);
	/* tampered signature */
	msg[len - 1] ^= 1;
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(NULL, 0), NOW, &adm, NULL),
	           OTA_ERR_SIG_INVALID);
	free(msg);
	/* no kid */
	msg = test_attestation_sign(&a, w->issuer_key, false, &len);
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(msg, len),
	                                 ota_bytes_make(NULL, 0), NOW, &adm, NULL),
	           OTA_ERR_ATT_KID_MISSING);
	free(msg);
	/* expired challenge */
	ota_challenge old;
	assert_ota(ota_nonce_store_issue(w->base.store, &acme, 0, 10, NOW - 20, &old, NULL),
	           OTA_OK);
	a = claims_for(w, &old);
	snprintf(a.boundary, sizeof a.boundary, "boundary-3");
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_NONCE_EXPIRED);
	/* a challenge issued to another issuer */
	ota_nonce_binding ob = {"txn-1", "issuer:other", "oci_remote"};
	c = issue(w, &ob);
	a = claims_for(w, &c);
	snprintf(a.iss, sizeof a.iss, "issuer:acme");
	snprintf(a.boundary, sizeof a.boundary, "boundary-4");
	assert_ota(submit(w, &a, w->issuer_key, NULL), OTA_ERR_NONCE_ISSUER_MISMATCH);
	/* out-of-scope issuer: issuer:other may only attest other_target */
	c = issue(w, &ob);
	a = claims_for(w, &c);
	snprintf(a.boundary, sizeof a.boundary, "boundary-5");
	assert_ota(submit(w, &a, w->other_key, NULL), OTA_ERR_TRUST_SCOPE_MISMATCH);
	/* challenge scope differs from the provider */
	ota_nonce_binding os = {"txn-1", "issuer:other", "elsewhere"};
	c = issue(w, &os);
	a = claims_for(w, &c);
	snprintf(a.provider, sizeof a.provider, "other_target");
	snprintf(a.boundary, sizeof a.boundary, "boundary-6");
	assert_ota(submit(w, &a, w->other_key, NULL), OTA_ERR_ATT_SCOPE_MISMATCH);
}

/* ---- strict payload parsing ---- */

static ota_err parse_hex(const char *hex)
{
	uint8_t buf[512];
	size_t n = 0;
	assert_ota(ota_hex_decode(hex, strlen(hex), (ota_buf){buf, sizeof buf}, &n), OTA_OK);
	ota_attestation a;
	ota_error e = {0};
	ota_err rc = ota_attestation_parse(ota_bytes_make(buf, n), &a, &e);
	assert_int_equal(rc, e.code);
	return rc;
}

static void test_parse_strict(void **state)
{
	world *w = *state;
	ota_challenge c = issue(w, &acme);
	ota_attestation a = claims_for(w, &c), back;
	uint8_t *p = NULL;
	size_t n = 0;
	assert_ota(ota_attestation_encode(&a, &p, &n), OTA_OK);
	assert_ota(ota_attestation_parse(ota_bytes_make(p, n), &back, NULL), OTA_OK);
	assert_string_equal(back.iss, a.iss);
	assert_string_equal(back.platform_arch, "amd64");
	assert_string_equal(back.policy_effective, a.policy_effective);
	assert_int_equal(back.body.len, 4);
	assert_false(back.has_prior);
	/* trailing byte */
	uint8_t *q = malloc(n + 1);
	assert_non_null(q);
	memcpy(q, p, n);
	q[n] = 0;
	assert_ota(ota_attestation_parse(ota_bytes_make(q, n + 1), &back, NULL), OTA_ERR_ATT_MALFORMED);
	assert_int_equal(back.iat, 0); /* cleared */
	/* every truncation is refused */
	for (size_t k = 0; k < n; k++)
		assert_true(ota_attestation_parse(ota_bytes_make(p, k), &back, NULL) != OTA_OK);
	free(q);
	free(p);
	/* too large */
	uint8_t *big = calloc(1, OTA_MAX_ATTESTATION_BYTES + 1);
	assert_non_null(big);
	assert_ota(ota_attestation_parse(ota_bytes_make(big, OTA_MAX_ATTESTATION_BYTES + 1), &back, NULL),
	           OTA_ERR_ATT_TOO_LARGE);
	free(big);
	assert_ota(parse_hex("80"), OTA_ERR_ATT_MALFORMED);            /* array */
	assert_ota(parse_hex("bf"), OTA_ERR_ATT_MALFORMED);            /* indefinite map */
	assert_ota(parse_hex("a1"), OTA_ERR_ATT_MALFORMED);            /* truncated */
	assert_ota(parse_hex("a10101"), OTA_ERR_ATT_CLAIM_TYPE);       /* iss: 1 */
	assert_ota(parse_hex("a1186401"), OTA_ERR_ATT_CLAIM_UNKNOWN);  /* key 100 */
	assert_ota(parse_hex("a1180101"), OTA_ERR_ATT_MALFORMED);      /* non-shortest key */
	assert_ota(parse_hex("a1206161"), OTA_ERR_ATT_CLAIM_UNKNOWN);  /* key -1 */
	assert_ota(parse_hex("a163666f6f01"), OTA_ERR_ATT_CLAIM_UNKNOWN); /* "foo" */
	assert_ota(parse_hex("a2016161016162"), OTA_ERR_ATT_CLAIM_DUPLICATE); /* iss twice */
	assert_ota(parse_hex("a10161"), OTA_ERR_ATT_MALFORMED);        /* text runs past the end */
	assert_ota(parse_hex("a1016161"), OTA_ERR_ATT_CLAIM_MISSING);  /* only iss */
	assert_ota(parse_hex("a1016101"), OTA_ERR_ATT_CLAIM_TYPE);     /* control character */
	assert_ota(parse_hex("a10162c328"), OTA_ERR_ATT_CLAIM_TYPE);   /* invalid UTF-8 */
	assert_ota(parse_hex("a10420"), OTA_ERR_ATT_CLAIM_TYPE);       /* exp: -1 */
	assert_ota(parse_hex("a10a4401020304"), OTA_ERR_ATT_CLAIM_TYPE); /* 4-byte nonce */
	assert_ota(parse_hex("a164626f6479818181818181818181818181818181818100"), OTA_ERR_TOO_DEEP);
	assert_ota(parse_hex("a1657072696f7263616263"), OTA_ERR_ATT_CLAIM_TYPE); /* prior not an id */
	assert_ota(parse_hex("a168706c6174666f726da1626f7361"), OTA_ERR_ATT_MALFORMED); /* truncated */
	assert_ota(parse_hex("a168706c6174666f726da162787861616161"), OTA_ERR_ATT_CLAIM_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_accept_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_strict, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
