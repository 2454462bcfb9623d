/*
 * ota-attestd stopped under load (ota_attestd_stop, what SIGTERM does):
 * eight clients keep submitting while the endpoint stops. Every submission
 * ends as an acceptance (201), a 503 http_unavailable (arrived while
 * stopping) or a transport error (after the listener closed); nothing
 * else. Every acknowledged acceptance is in the store and verifies (batch
 * form), and the store holds exactly the acknowledged ones: the queued
 * jobs were committed and answered, none committed without its answer.
 * Resubmitted to a restarted endpoint, each is a replay.
 */
#include "test_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ota/acceptance.h"
#include "ota/attestd.h"
#include "ota/cose.h"

#define N_ATT 1200
#define CLIENTS 8

typedef struct fx {
	test_endpoint_root w; /* trust root, keys and paths (test_util.c) */
	char url[64];
	uint8_t *msg[N_ATT];
	size_t len[N_ATT];
	char acked[N_ATT][OTA_ID_LEN + 1]; /* "" unless acknowledged */
	atomic_int next, n_acked, n_unavailable, n_transport, n_unexpected;
} fx;

static void opts_for(fx *f, ota_attestd_opts *o)
{
	ota_attestd_opts_init(o);
	o->port = 0;
	o->db_path = f->w.db_path;
	o->trust_root_path = f->w.root_path;
	o->verifier_key_path = f->w.key_path;
	o->threads = 2;
	o->max_batch = 8; /* many batches in flight when the stop comes */
	o->timeout_s = 5;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	int64_t now = (int64_t)time(NULL);
	ota_error e = {0};
	test_endpoint_root_make(&f->w, "stop.test", now, 0);

	/* challenges issued in the endpoint's store, attestations signed */
	ota_nonce_store *st = NULL;
	assert_ota(ota_nonce_store_open(f->w.db_path, NULL, &st, &e), OTA_OK);
	static ota_nonce_op ops[N_ATT];
	const ota_nonce_binding b = {"txn-stop", "issuer:acme", "oci_remote"};
	for (int i = 0; i < N_ATT; i++) {
		memset(&ops[i], 0, sizeof ops[i]);
		ops[i].kind = OTA_NONCE_OP_ISSUE;
		ops[i].binding = &b;
	}
	assert_ota(ota_nonce_store_commit_batch(st, ops, N_ATT, now, &e), OTA_OK);
	ota_nonce_store_close(st);
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	for (int i = 0; i < N_ATT; i++) {
		assert_ota(ops[i].result, OTA_OK);
		ota_attestation a;
		memset(&a, 0, sizeof a);
		snprintf(a.iss, sizeof a.iss, "issuer:acme");
		a.iat = now;
		a.exp = now + 600;
		memcpy(a.nonce, ops[i].challenge.nonce, ops[i].challenge.nonce_len);
		a.nonce_len = ops[i].challenge.nonce_len;
		snprintf(a.kind, sizeof a.kind, "initial_application");
		snprintf(a.txn, sizeof a.txn, "txn-stop");
		snprintf(a.trust_root, sizeof a.trust_root, "%s", ota_trust_root_identity(f->w.root));
		snprintf(a.provider, sizeof a.provider, "oci_remote");
		snprintf(a.boundary, sizeof a.boundary, "b-%d", i);
		uint8_t *p = NULL;
		size_t plen = 0;
		assert_ota(ota_attestation_encode(&a, &p, &plen), OTA_OK);
		assert_ota(ota_cose_sign1_sign(f->w.issuer_key, ota_bytes_make(p, plen), &so, &f->msg[i],
		                               &f->len[i], &e),
		           OTA_OK);
		free(p);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	for (int i = 0; i < N_ATT; i++)
		free(f->msg[i]);
	test_endpoint_root_free(&f->w);
	free(f);
	return 0;
}

static void *client(void *p)
{
	fx *f = p;
	for (;;) {
		int i = atomic_fetch_add(&f->next, 1);
		if (i >= N_ATT)
			return NULL;
		char *ans = NULL;
		ota_error e = {0};
		ota_err rc = ota_attest_client_submit(f->url, ota_bytes_make(f->msg[i], f->len[i]), &ans, &e);
		if (rc == OTA_OK) {
			json_t *o = json_loads(ans, 0, NULL);
			const char *id = json_string_value(json_object_get(o, "attestation"));
			if (id != NULL && strlen(id) == OTA_ID_LEN) {
				memcpy(f->acked[i], id, OTA_ID_LEN + 1);
				atomic_fetch_add(&f->n_acked, 1);
			} else {
				atomic_fetch_add(&f->n_unexpected, 1);
			}
			json_decref(o);
			free(ans);
		} else if (rc == OTA_ERR_HTTP_UNAVAILABLE) {
			atomic_fetch_add(&f->n_unavailable, 1);
		} else if (rc == OTA_ERR_HTTP_TRANSPORT) {
			atomic_fetch_add(&f->n_transport, 1);
			return NULL; /* the endpoint is gone */
		} else {
			atomic_fetch_add(&f->n_unexpected, 1); /* cmocka is not thread-safe */
		}
	}
}

static void test_stop_under_load(void **state)
{
	fx *f = *state;
	ota_attestd_opts o;
	opts_for(f, &o);
	ota_attestd *d = NULL;
	ota_error e = {0};
	assert_ota(ota_attestd_start(&o, &d, &e), OTA_OK);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", (unsigned)ota_attestd_port(d));
	pthread_t th[CLIENTS];
	for (int i = 0; i < CLIENTS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, client, f), 0);
	/* stop once a few dozen are through, the others in flight */
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 20000 && atomic_load(&f->n_acked) < 40; i++)
		nanosleep(&ms, NULL);
	ota_attestd_stop(d);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	int acked = atomic_load(&f->n_acked);
	fprintf(stderr, "attestd_stop_test: %d acknowledged, %d answered 503, %d transport errors\n",
	        acked, atomic_load(&f->n_unavailable), atomic_load(&f->n_transport));
	assert_int_equal(atomic_load(&f->n_unexpected), 0);
	assert_true(acked >= 40);
	assert_true(acked < N_ATT); /* the stop came first */

	/* the store holds exactly the acknowledged acceptances, each valid */
	ota_nonce_store *st = NULL;
	assert_ota(ota_nonce_store_open(f->w.db_path, NULL, &st, &e), OTA_OK);
	uint64_t live = 0, consumed = 0, stored = 0;
	assert_ota(ota_nonce_store_counts(st, &live, &consumed, &stored, &e), OTA_OK);
	assert_int_equal(stored, (uint64_t)acked);
	assert_int_equal(consumed, (uint64_t)acked);
	for (int i = 0; i < N_ATT; i++) {
		if (f->acked[i][0] == '\0')
			continue;
		uint8_t *acc = NULL;
		size_t al = 0;
		char bnd[32];
		snprintf(bnd, sizeof bnd, "b-%d", i);
		assert_ota(ota_nonce_store_acceptance_get(st, "txn-stop", bnd, f->acked[i], NULL, NULL,
		                                          &acc, &al, &e),
		           OTA_OK);
		ota_acceptance ap;
		assert_ota(ota_acceptance_verify(ota_bytes_make(acc, al), f->w.root, (int64_t)time(NULL), &ap, &e),
		           OTA_OK);
		assert_string_equal(ap.attestation, f->acked[i]);
		free(acc);
	}
	ota_nonce_store_close(st);

	/* restarted: an acknowledged one again is a replay, an unanswered one
	 * is still accepted */
	assert_ota(ota_attestd_start(&o, &d, &e), OTA_OK);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", (unsigned)ota_attestd_port(d));
	int replayed = 0, fresh = -1;
	for (int i = 0; i < N_ATT; i++) {
		if (f->acked[i][0] == '\0') {
			if (fresh < 0)
				fresh = i;
			continue;
		}
		if (replayed < 20) {
			char *ans = NULL;
			ota_error_clear(&e);
			assert_ota(ota_attest_client_submit(f->url, ota_bytes_make(f->msg[i], f->len[i]), &ans,
			                                    &e),
			           OTA_ERR_NONCE_REPLAYED);
			replayed++;
		}
	}
	assert_true(fresh >= 0);
	char *ans = NULL;
	assert_ota(ota_attest_client_submit(f->url, ota_bytes_make(f->msg[fresh], f->len[fresh]), &ans, &e),
	           OTA_OK);
	free(ans);
	ota_attestd_stop(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_under_load, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
