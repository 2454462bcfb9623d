/*
 * ota-attestd over loopback, against re-encoding and for the stored times:
 *   - a third party re-encodes a provider's attestation (tag 18 as d8 12,
 *     the array head as 98 04, an unprotected label, s := n - s) and submits
 *     it first: each is refused, the challenge stays usable, the provider's
 *     own bytes are accepted and its chain goes on (what /tmp/h7's
 *     t_malleable.py showed accepted);
 *   - with a clock that moves between the judgement of an attestation and
 *     its group commit, the store keeps the time the acceptance signs (its
 *     iat = the answer's accepted_at) as challenges.consumed_at and
 *     acceptances.accepted_at, not the committer's later reading.
 */
#include "attestd_client.h"
#include "test_util.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/acceptance.h"
#include "ota/attestd.h"
#include "ota/cose.h"

typedef struct fx {
	test_endpoint_root w;
	ota_attestd *d;
	char url[64];
	int64_t base;
	atomic_llong calls;
	ota_clock clock;
} fx;

/* Every reading of the endpoint's clock is one second later than the last. */
static int64_t stepping_now(void *ctx)
{
	fx *f = ctx;
	return f->base + atomic_fetch_add(&f->calls, 1);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->base = (int64_t)time(NULL);
	test_endpoint_root_make(&f->w, "envelope.attestd.test", f->base, 0);
	f->clock.now = stepping_now;
	f->clock.ctx = f;
	ota_attestd_opts o;
	test_attestd_opts(&f->w, &o);
	o.threads = 2;
	o.timeout_s = 2;
	o.clock = &f->clock;
	test_attestd_start(&o, &f->d, f->url, sizeof f->url);
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

/* A challenge from the endpoint and the provider's signed attestation for it. */
static uint8_t *attest_for(fx *f, const char *boundary, const char *prior, size_t *len,
                           uint8_t *nonce_out, size_t *nonce_len)
{
	ota_nonce_binding b = {"txn-env", "issuer:acme", "oci_remote"};
	ota_attestation a;
	test_attestation_claims(&a, f->w.root, "issuer:acme", "txn-env", boundary, prior);
	assert_ota(test_attestd_challenge(f->url, &b, a.nonce, &a.nonce_len), OTA_OK);
	if (nonce_out != NULL) {
		memcpy(nonce_out, a.nonce, a.nonce_len);
		*nonce_len = a.nonce_len;
	}
	a.iat = f->base;
	a.exp = f->base + 600;
	return test_attestation_sign(&a, f->w.issuer_key, true, len);
}

static ota_err submit(fx *f, const uint8_t *msg, size_t len, json_t **answer)
{
	char *ans = NULL;
	ota_error e = {0};
	ota_err rc = ota_attest_client_submit(f->url, ota_bytes_make(msg, len), &ans, &e);
	if (answer != NULL)
		*answer = rc == OTA_OK ? json_loads(ans, 0, NULL) : NULL;
	free(ans);
	return rc;
}

static uint8_t *with_prefix(const uint8_t *prefix, size_t pl, const uint8_t *m, size_t skip,
                            size_t len, size_t *out_len)
{
	uint8_t *o = malloc(pl + len - skip);
	assert_non_null(o);
	memcpy(o, prefix, pl);
	memcpy(o + pl, m + skip, len - skip);
	*out_len = pl + len - skip;
	return o;
}

static void test_reencoded_first(void **state)
{
	fx *f = *state;
	size_t len = 0;
	uint8_t *x = attest_for(f, "b1", NULL, &len, NULL, NULL);
	/* what anyone can make of x without a key */
	size_t l1 = 0, l2 = 0, l3 = 0, l4 = 0;
	uint8_t *v1 = with_prefix((const uint8_t *)"\xd8\x12", 2, x, 1, len, &l1);
	uint8_t *v2 = with_prefix((const uint8_t *)"\xd2\x98\x04", 3, x, 2, len, &l2);
	/* protected header of ota_cose_sign1_sign: 58 26 (38 bytes), then a0 */
	assert_int_equal(x[2], 0x58);
	size_t unprot = 2 + 2 + x[3];
	assert_int_equal(x[unprot], 0xa0);
	uint8_t *v3 = malloc(len + 3);
	assert_non_null(v3);
	memcpy(v3, x, unprot);
	memcpy(v3 + unprot, "\xa1\x61x\x01", 4);
	memcpy(v3 + unprot + 4, x + unprot + 1, len - unprot - 1);
	l3 = len + 3;
	uint8_t *v4 = malloc(len);
	assert_non_null(v4);
	memcpy(v4, x, len);
	l4 = len;
	{ /* s := n - s (the last 32 bytes) */
		EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
		BIGNUM *s = BN_bin2bn(v4 + len - 32, 32, NULL), *t = BN_new();
		assert_non_null(g);
		assert_non_null(s);
		assert_non_null(t);
		assert_int_equal(BN_sub(t, EC_GROUP_get0_order(g), s), 1);
		assert_int_equal(BN_bn2binpad(t, v4 + len - 32, 32), 32);
		BN_free(s);
		BN_free(t);
		EC_GROUP_free(g);
	}
	assert_ota(submit(f, v1, l1, NULL), OTA_ERR_COSE_NOT_SHORTEST);
	assert_ota(submit(f, v2, l2, NULL), OTA_ERR_COSE_NOT_SHORTEST);
	assert_ota(submit(f, v3, l3, NULL), OTA_ERR_ATT_UNPROTECTED);
	assert_ota(submit(f, v4, l4, NULL), OTA_ERR_ATT_SIG_HIGH_S);
	/* the provider's bytes: accepted, under their own identity */
	json_t *o = NULL;
	assert_ota(submit(f, x, len, &o), OTA_OK);
	assert_non_null(o);
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_sha256_id(ota_bytes_make(x, len), id), OTA_OK);
	assert_string_equal(json_string_value(json_object_get(o, "attestation")), id);
	json_decref(o);
	/* and its chain goes on */
	size_t len2 = 0;
	uint8_t *y = attest_for(f, "b1", id, &len2, NULL, NULL);
	assert_ota(submit(f, y, len2, NULL), OTA_OK);
	free(y);
	free(v1);
	free(v2);
	free(v3);
	free(v4);
	free(x);
}

static int64_t query_int(const char *db, const char *sql, const void *arg, size_t arg_len,
                         bool blob)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (blob)
		sqlite3_bind_blob(st, 1, arg, (int)arg_len, SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static void test_stored_time_is_signed_time(void **state)
{
	fx *f = *state;
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nl = 0, len = 0;
	uint8_t *x = attest_for(f, "b-time", NULL, &len, nonce, &nl);
	json_t *o = NULL;
	assert_ota(submit(f, x, len, &o), OTA_OK);
	assert_non_null(o);
	int64_t answered = (int64_t)json_integer_value(json_object_get(o, "accepted_at"));
	const char *b64 = json_string_value(json_object_get(o, "acceptance"));
	uint8_t *acc = NULL;
	size_t al = 0;
	assert_ota(ota_base64_decode(b64, strlen(b64), &acc, &al), OTA_OK);
	ota_acceptance ap;
	ota_error e = {0};
	assert_ota(ota_acceptance_verify(ota_bytes_make(acc, al), f->w.root, answered, &ap, &e), OTA_OK);
	assert_int_equal(ap.accepted_at, answered);
	/* the committer read the clock after the judgement */
	assert_true(f->base + atomic_load(&f->calls) > answered + 1);
	const char *id = json_string_value(json_object_get(o, "attestation"));
	assert_int_equal(query_int(f->w.db_path, "SELECT accepted_at FROM acceptances WHERE record_id = ?1",
	                           id, 0, false),
	                 answered);
	assert_int_equal(query_int(f->w.db_path, "SELECT consumed_at FROM challenges WHERE nonce = ?1",
	                           nonce, nl, true),
	                 answered);
	free(acc);
	json_decref(o);
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reencoded_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stored_time_is_signed_time, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
