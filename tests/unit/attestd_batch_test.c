/*
 * ota-attestd's batch route: POST /v1/attestations with an RFC 8742 CBOR
 * sequence of COSE_Sign1 attestations (application/cbor-seq). Each item is
 * judged on its own and answered in body order; the admitted ones commit
 * together, in body order, so an item may name an earlier item of the same
 * batch as its prior. Framing errors refuse the whole batch before anything
 * is consumed; the item count and the items in flight are capped.
 */
#include "attestd_client.h"
#include "test_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/acceptance.h"
#include "ota/attestd.h"
#include "ota/cose.h"
#include "ota/limits.h"

typedef struct fx {
	test_endpoint_root w;
	ota_attestd *d;
	char url[64];
	uint16_t port;
} fx;

static int group_setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	test_endpoint_root_make(&f->w, "attestd-batch.test", (int64_t)time(NULL), 1);
	*state = f;
	return 0;
}

static int group_teardown(void **state)
{
	fx *f = *state;
	test_endpoint_root_free(&f->w);
	free(f);
	return 0;
}

static void start_with(fx *f, unsigned max_batch_items)
{
	ota_attestd_opts o;
	test_attestd_opts(&f->w, &o);
	o.threads = 2;
	o.max_body = 256 * 1024;
	o.timeout_s = 5;
	o.max_batch_items = max_batch_items;
	f->port = test_attestd_start(&o, &f->d, f->url, sizeof f->url);
}

static int start(void **state)
{
	start_with(*state, 0); /* the default cap */
	return 0;
}

static int stop(void **state)
{
	fx *f = *state;
	ota_attestd_stop(f->d);
	f->d = NULL;
	return 0;
}

/* A challenge for (txn, issuer:acme, oci_remote) and an attestation for it
 * signed by k (new COSE bytes); *id receives its record identity. */
static uint8_t *attest_with(fx *f, const ota_key *k, const char *txn, const char *boundary,
                            const char *prior, size_t *len, char id[OTA_ID_LEN + 1])
{
	ota_nonce_binding b = {txn, "issuer:acme", "oci_remote"};
	ota_attestation a;
	test_attestation_claims(&a, f->w.root, "issuer:acme", txn, boundary, prior);
	assert_ota(test_attestd_challenge(f->url, &b, a.nonce, &a.nonce_len), OTA_OK);
	a.iat = (int64_t)time(NULL);
	a.exp = a.iat + 120;
	uint8_t *m = test_attestation_sign(&a, k, true, len);
	assert_non_null(m);
	assert_ota(ota_sha256_id(ota_bytes_make(m, *len), id), OTA_OK);
	return m;
}

typedef struct seq {
	uint8_t *p;
	size_t len;
} seq;

static void seq_add(seq *s, const void *p, size_t n)
{
	s->p = realloc(s->p, s->len + n + 1);
	assert_non_null(s->p);
	memcpy(s->p + s->len, p, n);
	s->len += n;
}

static test_http_reply post_seq(fx *f, const char *ctype, const seq *s)
{
	char h[128];
	snprintf(h, sizeof h, "Content-Type: %s\r\n", ctype);
	return test_http_post(f->port, "/v1/attestations", h, s->p, s->len);
}

static const char *str_at(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *result(json_t *ans, size_t i)
{
	json_t *r = json_array_get(json_object_get(ans, "results"), i);
	assert_non_null(r);
	return r;
}

static void assert_refused(json_t *ans, size_t i, ota_err code, int status)
{
	json_t *r = result(ans, i);
	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_string_equal(str_at(r, "code"), ota_err_name(code));
	assert_int_equal(json_integer_value(json_object_get(r, "status")), status);
	assert_non_null(str_at(r, "where"));
	assert_non_null(str_at(r, "message"));
}

static void assert_counts(json_t *ans, long accepted, long refused, size_t n)
{
	assert_true(json_is_true(json_object_get(ans, "ok")));
	assert_int_equal(json_integer_value(json_object_get(ans, "accepted")), accepted);
	assert_int_equal(json_integer_value(json_object_get(ans, "refused")), refused);
	assert_int_equal(json_array_size(json_object_get(ans, "results")), n);
}

/* Accepted ones carry what the single route answers, and a later item may
 * name an earlier one of the same batch as its prior; the same batch again
 * is all replays. */
static void test_all_accepted_in_body_order(void **state)
{
	fx *f = *state;
	enum { N = 6 };
	uint8_t *m[N];
	size_t len[N];
	char id[N][OTA_ID_LEN + 1];
	seq s = {0};
	for (int i = 0; i < N; i++) {
		/* items 0..2 chain on boundary b1; 3..5 each start a boundary */
		char bd[8];
		snprintf(bd, sizeof bd, "b%d", i < 3 ? 1 : i);
		const char *prior = i > 0 && i < 3 ? id[i - 1] : NULL;
		m[i] = attest_with(f, f->w.issuer_key, "txn-batch", bd, prior, &len[i], id[i]);
		seq_add(&s, m[i], len[i]);
	}
	test_http_reply rp = post_seq(f, "application/cbor-seq", &s);
	assert_int_equal(rp.status, 200);
	assert_non_null(rp.body);
	assert_counts(rp.body, N, 0, N);
	for (int i = 0; i < N; i++) {
		json_t *r = result(rp.body, (size_t)i);
		assert_true(json_is_true(json_object_get(r, "ok")));
		assert_string_equal(str_at(r, "result"), "accepted");
		assert_string_equal(str_at(r, "attestation"), id[i]);
		assert_string_equal(str_at(r, "txn"), "txn-batch");
		if (i > 0 && i < 3)
			assert_string_equal(str_at(r, "prior"), id[i - 1]);
		else
			assert_true(json_is_null(json_object_get(r, "prior")));
		/* the acceptance verifies against the trust root and binds this item */
		const char *b64 = str_at(r, "acceptance");
		assert_non_null(b64);
		uint8_t *acc = NULL;
		size_t al = 0;
		assert_ota(ota_base64_decode(b64, strlen(b64), &acc, &al), OTA_OK);
		ota_acceptance ap;
		ota_error e = {0};
		assert_ota(ota_acceptance_verify(ota_bytes_make(acc, al), f->w.root, (int64_t)time(NULL),
		                                 &ap, &e),
		           OTA_OK);
		assert_string_equal(ap.attestation, id[i]);
		free(acc);
	}
	json_decref(rp.body);
	/* the same batch again: every challenge is spent */
	rp = post_seq(f, "application/cbor-seq", &s);
	assert_int_equal(rp.status, 200);
	assert_counts(rp.body, 0, N, N);
	for (int i = 0; i < N; i++)
		assert_refused(rp.body, (size_t)i, OTA_ERR_NONCE_REPLAYED, 409);
	json_decref(rp.body);
	/* one of them alone on the single route: the same answer */
	char *ans = NULL;
	ota_error e = {0};
	assert_ota(ota_attest_client_submit(f->url, ota_bytes_make(m[0], len[0]), &ans, &e),
	           OTA_ERR_NONCE_REPLAYED);
	/* two batches served on this endpoint, none held any more */
	long st = 0;
	size_t n = 0;
	ota_error_clear(&e);
	assert_ota(ota_attest_client_get(f->url, "/metrics", &ans, &n, &st, &e), OTA_OK);
	assert_int_equal(st, 200);
	assert_non_null(strstr(ans, "\nota_attestd_attestation_batches_total 2\n"));
	assert_non_null(strstr(ans, "\nota_attestd_batch_items_in_flight 0\n"));
	assert_non_null(strstr(ans, "\nota_attestd_attestations_accepted_total 6\n"));
	free(ans);
	for (int i = 0; i < N; i++)
		free(m[i]);
	free(s.p);
}

/* Each item is judged on its own: garbage, a duplicate of an earlier item,
 * a key that is not the issuer's, a skipped prior and a wrong txn are
 * refused with their own names while the good items around them commit. */
static void test_mixed_items_answered_one_by_one(void **state)
{
	fx *f = *state;
	char id0[OTA_ID_LEN + 1], id1[OTA_ID_LEN + 1], idk[OTA_ID_LEN + 1], idp[OTA_ID_LEN + 1];
	size_t l0, l1, lk, lp;
	uint8_t *m0 = attest_with(f, f->w.issuer_key, "txn-mixed", "b1", NULL, &l0, id0);
	uint8_t *m1 = attest_with(f, f->w.issuer_key, "txn-mixed", "b2", NULL, &l1, id1);
	uint8_t *mk = attest_with(f, f->w.verifier_key, "txn-mixed", "b3", NULL, &lk, idk);
	/* prior names a record that was never accepted: a skip */
	uint8_t *mp = attest_with(f, f->w.issuer_key, "txn-mixed", "b1", idk, &lp, idp);
	const uint8_t garbage[] = {0x83, 0x01, 0x02, 0x03}; /* a whole item, not a COSE_Sign1 */
	seq s = {0};
	seq_add(&s, m0, l0);        /* 0: accepted */
	seq_add(&s, garbage, 4);    /* 1: not an attestation */
	seq_add(&s, m0, l0);        /* 2: the same challenge again */
	seq_add(&s, mk, lk);        /* 3: signed by the verifier's key */
	seq_add(&s, m1, l1);        /* 4: accepted */
	seq_add(&s, mp, lp);        /* 5: prior skips b1's head */
	test_http_reply rp = post_seq(f, "application/cbor-seq", &s);
	assert_int_equal(rp.status, 200);
	assert_non_null(rp.body);
	assert_counts(rp.body, 2, 4, 6);
	assert_string_equal(str_at(result(rp.body, 0), "attestation"), id0);
	assert_string_equal(str_at(result(rp.body, 4), "attestation"), id1);
	json_t *g = result(rp.body, 1);
	assert_true(json_is_false(json_object_get(g, "ok")));
	/* the single route answers the same item with the same name and status */
	test_http_reply one = test_http_post(f->port, "/v1/attestations",
	                                     "Content-Type: application/cose\r\n", garbage, 4);
	assert_non_null(one.body);
	assert_string_equal(str_at(g, "code"), str_at(one.body, "code"));
	assert_string_equal(str_at(g, "code"), "cose_tag_missing");
	assert_int_equal(json_integer_value(json_object_get(g, "status")), one.status);
	json_decref(one.body);
	assert_refused(rp.body, 2, OTA_ERR_NONCE_REPLAYED, 409);
	json_t *k = result(rp.body, 3);
	assert_true(json_is_false(json_object_get(k, "ok")));
	assert_true(json_integer_value(json_object_get(k, "status")) >= 400 &&
	            json_integer_value(json_object_get(k, "status")) < 500);
	assert_refused(rp.body, 5, OTA_ERR_ATT_PRIOR_UNKNOWN, 409);
	/* the single route refuses the verifier-signed one with the same name */
	char *ans = NULL;
	ota_error e = {0};
	ota_err krc = ota_attest_client_submit(f->url, ota_bytes_make(mk, lk), &ans, &e);
	assert_true(krc != OTA_OK);
	assert_string_equal(str_at(k, "code"), ota_err_name(krc));
	/* what was refused in the batch was not consumed: b2's next record,
	 * naming the accepted item 4, is admitted alone */
	size_t l2;
	char id2[OTA_ID_LEN + 1];
	uint8_t *m2 = attest_with(f, f->w.issuer_key, "txn-mixed", "b2", id1, &l2, id2);
	assert_ota(ota_attest_client_submit(f->url, ota_bytes_make(m2, l2), &ans, &e), OTA_OK);
	free(ans);
	json_decref(rp.body);
	free(m0);
	free(m1);
	free(mk);
	free(mp);
	free(m2);
	free(s.p);
}

/* s posted as a batch is refused as a whole with status and code */
static void refused_whole(fx *f, const seq *s, int status, ota_err code)
{
	test_http_reply rp = post_seq(f, "application/cbor-seq", s);
	assert_int_equal(rp.status, status);
	assert_non_null(rp.body);
	assert_string_equal(str_at(rp.body, "code"), ota_err_name(code));
	assert_null(json_object_get(rp.body, "results"));
	json_decref(rp.body);
}

/* Framing is judged before anything else: a batch that is not whole CBOR
 * items, an empty one, one item too many, or a parameter on the media type
 * is refused as a whole, and none of its challenges is spent. */
static void test_framing_refused_whole(void **state)
{
	fx *f = *state;
	char id[OTA_ID_LEN + 1];
	size_t l;
	uint8_t *m = attest_with(f, f->w.issuer_key, "txn-frame", "b1", NULL, &l, id);
	seq s = {0};
	seq_add(&s, m, l);
	seq_add(&s, m, l - 1); /* the second one cut short */
	refused_whole(f, &s, 400, OTA_ERR_ATT_BATCH_MALFORMED);
	seq empty = {0};
	seq_add(&empty, "", 0);
	refused_whole(f, &empty, 400, OTA_ERR_ATT_BATCH_MALFORMED);
	free(empty.p);
	/* 129 items, each a one-byte integer: too many before any is read */
	seq many = {0};
	for (unsigned i = 0; i <= OTA_MAX_ATTESTATION_BATCH; i++)
		seq_add(&many, "\x01", 1);
	refused_whole(f, &many, 413, OTA_ERR_TOO_LARGE);
	free(many.p);
	test_http_reply rp;
	/* a media type parameter is not part of the contract */
	seq one = {0};
	seq_add(&one, m, l);
	rp = post_seq(f, "application/cbor-seq; x=y", &one);
	assert_int_equal(rp.status, 415);
	json_decref(rp.body);
	/* none of that spent the challenge: the attestation is still admitted */
	rp = post_seq(f, "application/cbor-seq", &one);
	assert_int_equal(rp.status, 200);
	assert_counts(rp.body, 1, 0, 1);
	assert_string_equal(str_at(result(rp.body, 0), "attestation"), id);
	json_decref(rp.body);
	free(one.p);
	free(s.p);
	free(m);
}

/* Beyond max_batch_items in flight a batch is told to retry (503), and a
 * batch within it is served. */
static void test_items_in_flight_capped(void **state)
{
	fx *f = *state;
	start_with(f, 2);
	char id[3][OTA_ID_LEN + 1];
	size_t l[3];
	uint8_t *m[3];
	seq s = {0};
	for (int i = 0; i < 3; i++) {
		char bd[8];
		snprintf(bd, sizeof bd, "c%d", i);
		m[i] = attest_with(f, f->w.issuer_key, "txn-cap", bd, NULL, &l[i], id[i]);
		seq_add(&s, m[i], l[i]);
	}
	test_http_reply rp = post_seq(f, "application/cbor-seq", &s);
	assert_int_equal(rp.status, 503);
	assert_string_equal(str_at(rp.body, "code"), ota_err_name(OTA_ERR_HTTP_UNAVAILABLE));
	json_decref(rp.body);
	seq two = {0};
	seq_add(&two, m[0], l[0]);
	seq_add(&two, m[1], l[1]);
	rp = post_seq(f, "application/cbor-seq", &two);
	assert_int_equal(rp.status, 200);
	assert_counts(rp.body, 2, 0, 2);
	json_decref(rp.body);
	/* the items of answered batches are released: the third one fits */
	seq three = {0};
	seq_add(&three, m[2], l[2]);
	rp = post_seq(f, "application/cbor-seq", &three);
	assert_int_equal(rp.status, 200);
	assert_counts(rp.body, 1, 0, 1);
	assert_string_equal(str_at(result(rp.body, 0), "attestation"), id[2]);
	json_decref(rp.body);
	for (int i = 0; i < 3; i++)
		free(m[i]);
	free(s.p);
	free(two.p);
	free(three.p);
	stop(state);
}

/* The client believes a batch answer only in the shape the endpoint writes:
 * n results, counts that agree, each acceptance naming its own item. */
static void test_client_judges_batch_answers(void **state)
{
	(void)state;
	char ids[2][OTA_ID_LEN + 1];
	memset(ids, 0, sizeof ids);
	snprintf(ids[0], sizeof ids[0], "sha256:%064d", 0);
	snprintf(ids[1], sizeof ids[1], "sha256:%064d", 1);
	const char(*cids)[OTA_ID_LEN + 1] = (const char(*)[OTA_ID_LEN + 1])ids;
	char acc0[512], acc1[512], good[2048];
	snprintf(acc0, sizeof acc0,
	         "{\"acceptance\":\"AAEC\",\"attestation\":\"%s\",\"ok\":true,\"result\":\"accepted\"}",
	         ids[0]);
	snprintf(acc1, sizeof acc1,
	         "{\"acceptance\":\"AAEC\",\"attestation\":\"%s\",\"ok\":true,\"result\":\"accepted\"}",
	         ids[1]);
	const char *refusal = "{\"code\":\"nonce_replayed\",\"message\":\"consumed\",\"ok\":false,"
	                      "\"status\":409,\"where\":\"eat_nonce\"}";
	ota_attest_batch_result res[2];
	ota_error e = {0};
	snprintf(good, sizeof good, "{\"accepted\":1,\"ok\":true,\"refused\":1,\"results\":[%s,%s]}",
	         acc0, refusal);
	assert_ota(ota_attest_client_batch_answer(good, strlen(good), 200, 2, cids, res, &e), OTA_OK);
	assert_ota(res[0].rc, OTA_OK);
	assert_non_null(strstr(res[0].answer, ids[0]));
	assert_ota(res[1].rc, OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(res[1].err.where, "eat_nonce");
	assert_null(res[1].answer);
	ota_attest_batch_results_free(res, 2);
	/* forged or broken: each refused whole as attestation_response_invalid */
	char bad[6][2048];
	/* an acceptance of item 1 in item 0's place */
	snprintf(bad[0], sizeof bad[0], "{\"accepted\":2,\"ok\":true,\"refused\":0,\"results\":[%s,%s]}",
	         acc1, acc0);
	/* counts that do not add up */
	snprintf(bad[1], sizeof bad[1], "{\"accepted\":2,\"ok\":true,\"refused\":0,\"results\":[%s,%s]}",
	         acc0, refusal);
	/* one result for two items */
	snprintf(bad[2], sizeof bad[2], "{\"accepted\":1,\"ok\":true,\"refused\":0,\"results\":[%s]}",
	         acc0);
	/* a refusal with no known name, or without a status */
	snprintf(bad[3], sizeof bad[3],
	         "{\"accepted\":1,\"ok\":true,\"refused\":1,\"results\":[%s,{\"code\":\"made_up\","
	         "\"ok\":false,\"status\":409,\"where\":\"x\",\"message\":\"y\"}]}",
	         acc0);
	snprintf(bad[4], sizeof bad[4],
	         "{\"accepted\":1,\"ok\":true,\"refused\":1,\"results\":[%s,{\"code\":\"nonce_replayed\","
	         "\"ok\":false,\"where\":\"x\",\"message\":\"y\"}]}",
	         acc0);
	/* a 201 (the single route's status) is not a batch's answer */
	snprintf(bad[5], sizeof bad[5], "%s", acc0);
	for (size_t i = 0; i < 6; i++) {
		ota_error_clear(&e);
		long st = i == 5 ? 201 : 200;
		assert_ota(ota_attest_client_batch_answer(bad[i], strlen(bad[i]), st, 2, cids, res, &e),
		           OTA_ERR_ATT_PROTOCOL);
		assert_ota(res[0].rc, OTA_ERR_ATT_PROTOCOL); /* every item carries it */
		assert_null(res[0].answer);
		assert_ota(res[1].rc, OTA_ERR_ATT_PROTOCOL);
	}
	/* the batch refused as a whole, by its name */
	const char *busy = "{\"code\":\"http_unavailable\",\"message\":\"retry\",\"ok\":false,"
	                   "\"where\":\"batch\"}";
	ota_error_clear(&e);
	assert_ota(ota_attest_client_batch_answer(busy, strlen(busy), 503, 2, cids, res, &e),
	           OTA_ERR_HTTP_UNAVAILABLE);
	assert_ota(res[1].rc, OTA_ERR_HTTP_UNAVAILABLE);
	assert_string_equal(res[1].err.where, "batch");
}

/* The library client against the endpoint: one result per item, the
 * accepted ones the single route's objects. */
static void test_client_submits_a_batch(void **state)
{
	fx *f = *state;
	char id0[OTA_ID_LEN + 1], id1[OTA_ID_LEN + 1];
	size_t l0, l1;
	uint8_t *m0 = attest_with(f, f->w.issuer_key, "txn-client", "b1", NULL, &l0, id0);
	uint8_t *m1 = attest_with(f, f->w.issuer_key, "txn-client", "b1", id0, &l1, id1);
	ota_bytes items[3] = {ota_bytes_make(m0, l0), ota_bytes_make(m1, l1), ota_bytes_make(m0, l0)};
	ota_attest_batch_result res[3];
	ota_error e = {0};
	assert_ota(ota_attest_client_submit_batch(f->url, items, 3, res, &e), OTA_OK);
	assert_ota(res[0].rc, OTA_OK);
	assert_ota(res[1].rc, OTA_OK);
	assert_ota(res[2].rc, OTA_ERR_NONCE_REPLAYED);
	json_t *o = json_loads(res[1].answer, 0, NULL);
	assert_non_null(o);
	assert_string_equal(str_at(o, "attestation"), id1);
	assert_string_equal(str_at(o, "prior"), id0);
	json_decref(o);
	ota_attest_batch_results_free(res, 3);
	/* no items, too many: usage, nothing sent */
	ota_error_clear(&e);
	assert_ota(ota_attest_client_submit_batch(f->url, items, 0, res, &e), OTA_ERR_USAGE);
	free(m0);
	free(m1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_accepted_in_body_order, start, stop),
		cmocka_unit_test_setup_teardown(test_mixed_items_answered_one_by_one, start, stop),
		cmocka_unit_test_setup_teardown(test_framing_refused_whole, start, stop),
		cmocka_unit_test(test_items_in_flight_capped),
		cmocka_unit_test(test_client_judges_batch_answers),
		cmocka_unit_test_setup_teardown(test_client_submits_a_batch, start, stop),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
