/* Unit tests of nonce-store: issue, single use, replay/unknown/expired,
 * binding, purge, durability epochs, batches, heads and group commit. */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ota/json.h"
#include "ota/nonce.h"

typedef struct fixture {
	char *dir;
	char path[512];
	ota_nonce_store *s;
} fixture;

static const ota_nonce_binding bind_a = {"txn-a", "issuer:acme", "oci_local"};

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->dir = test_tmpdir();
	snprintf(f->path, sizeof f->path, "%s/nonce.db", f->dir);
	ota_error e = {0};
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, &e), OTA_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	ota_nonce_store_close(f->s);
	test_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static ota_bytes nb(const ota_challenge *c)
{
	return ota_bytes_make(c->nonce, c->nonce_len);
}

static void test_issue_defaults(void **state)
{
	fixture *f = *state;
	ota_challenge c, d;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c, NULL), OTA_OK);
	assert_int_equal(c.nonce_len, 32);
	assert_int_equal(c.issued_at, 1000);
	assert_int_equal(c.expires_at, 1300);
	assert_int_equal(c.consumed_at, 0);
	assert_int_equal(c.epoch, ota_nonce_store_epoch(f->s));
	assert_string_equal(c.txn, "txn-a");
	assert_string_equal(c.issuer, "issuer:acme");
	assert_string_equal(c.scope, "oci_local");
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &d, NULL), OTA_OK);
	assert_memory_not_equal(c.nonce, d.nonce, 32); /* fresh randomness */
	/* the identity is stable and of the sha256: shape */
	char id1[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	assert_ota(ota_challenge_identity(&c, id1), OTA_OK);
	assert_ota(ota_challenge_identity(&c, id2), OTA_OK);
	assert_true(ota_id_is_valid(id1));
	assert_string_equal(id1, id2);
	char *j = NULL;
	size_t jn = 0;
	assert_ota(ota_challenge_jcs(&c, &j, &jn), OTA_OK);
	assert_non_null(strstr(j, "\"kind\":\"ota.challenge/v1\""));
	assert_non_null(strstr(j, "\"expires_at\":1300"));
	free(j);
}

static void test_issue_limits(void **state)
{
	fixture *f = *state;
	ota_challenge c;
	ota_error e = {0};
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 15, 0, 1000, &c, &e), OTA_ERR_NONCE_LENGTH);
	assert_string_equal(ota_err_name(e.code), "nonce_length");
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 65, 0, 1000, &c, NULL), OTA_ERR_NONCE_LENGTH);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 16, 0, 1000, &c, NULL), OTA_OK);
	assert_int_equal(c.nonce_len, 16);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 64, 0, 1000, &c, NULL), OTA_OK);
	assert_int_equal(c.nonce_len, 64);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, -1, 1000, &c, NULL), OTA_ERR_NONCE_TTL);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, OTA_NONCE_MAX_TTL + 1, 1000, &c, NULL),
	           OTA_ERR_NONCE_TTL);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 10, 1000, &c, NULL), OTA_OK);
	assert_int_equal(c.expires_at, 1010);
	ota_nonce_binding bad = {"", "i", "s"};
	assert_ota(ota_nonce_store_issue(f->s, &bad, 0, 0, 1000, &c, NULL), OTA_ERR_NONCE_BINDING);
	bad.txn = "t\n";
	assert_ota(ota_nonce_store_issue(f->s, &bad, 0, 0, 1000, &c, NULL), OTA_ERR_NONCE_BINDING);
	assert_ota(ota_nonce_store_issue(f->s, NULL, 0, 0, 1000, &c, NULL), OTA_ERR_NONCE_BINDING);
	char big[OTA_MAX_TXN_BYTES + 2];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ota_nonce_binding b2 = {big, "i", "s"};
	assert_ota(ota_nonce_store_issue(f->s, &b2, 0, 0, 1000, &c, NULL), OTA_ERR_NONCE_BINDING);
	assert_int_equal(c.nonce_len, 0); /* cleared on failure */
}

static void test_single_use(void **state)
{
	fixture *f = *state;
	ota_challenge c, got;
	ota_error e = {0};
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c, NULL), OTA_OK);
	assert_ota(ota_nonce_store_peek(f->s, nb(&c), 1001, &got, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &bind_a, 1001, &got, NULL), OTA_OK);
	assert_int_equal(got.consumed_at, 1001);
	assert_string_equal(got.txn, "txn-a");
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &bind_a, 1002, &got, &e), OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(ota_err_name(e.code), "nonce_replayed");
	assert_int_equal(got.nonce_len, 0);
	/* still a replay after its expiry, while it is kept */
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), NULL, 1400, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
	assert_ota(ota_nonce_store_peek(f->s, nb(&c), 1002, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
	/* unknown */
	uint8_t r[32];
	memset(r, 0x5a, sizeof r);
	assert_ota(ota_nonce_store_consume(f->s, ota_bytes_make(r, 32), NULL, 1001, NULL, NULL),
	           OTA_ERR_NONCE_UNKNOWN);
	assert_ota(ota_nonce_store_consume(f->s, ota_bytes_make(r, 8), NULL, 1001, NULL, NULL),
	           OTA_ERR_NONCE_LENGTH);
	/* expired: at exactly expires_at it no longer counts */
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 5, 2000, &c, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &bind_a, 2005, NULL, NULL), OTA_ERR_NONCE_EXPIRED);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &bind_a, 2004, NULL, NULL), OTA_OK);
}

static void test_binding(void **state)
{
	fixture *f = *state;
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c, NULL), OTA_OK);
	ota_nonce_binding b = bind_a;
	b.txn = "txn-b";
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &b, 1001, NULL, NULL), OTA_ERR_NONCE_TXN_MISMATCH);
	b = bind_a;
	b.issuer = "issuer:evil";
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &b, 1001, NULL, NULL),
	           OTA_ERR_NONCE_ISSUER_MISMATCH);
	b = bind_a;
	b.scope = "other";
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &b, 1001, NULL, NULL),
	           OTA_ERR_NONCE_SCOPE_MISMATCH);
	/* a mismatch did not burn it */
	assert_ota(ota_nonce_store_consume(f->s, nb(&c), &bind_a, 1001, NULL, NULL), OTA_OK);
}

static void test_purge(void **state)
{
	fixture *f = *state;
	ota_challenge a, b;
	uint64_t n = 99;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 10, 1000, &a, NULL), OTA_OK);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 1000, 1000, &b, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&a), NULL, 1001, NULL, NULL), OTA_OK);
	/* expiry + skew (60 s) not reached: kept */
	assert_ota(ota_nonce_store_purge(f->s, 1069, &n, NULL), OTA_OK);
	assert_int_equal(n, 0);
	assert_ota(ota_nonce_store_consume(f->s, nb(&a), NULL, 1069, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
	assert_ota(ota_nonce_store_purge(f->s, 1070, &n, NULL), OTA_OK);
	assert_int_equal(n, 1);
	assert_ota(ota_nonce_store_consume(f->s, nb(&a), NULL, 1070, NULL, NULL), OTA_ERR_NONCE_UNKNOWN);
	uint64_t live = 0, consumed = 9, acc = 9;
	assert_ota(ota_nonce_store_counts(f->s, &live, &consumed, &acc, NULL), OTA_OK);
	assert_int_equal(live, 1);
	assert_int_equal(consumed, 0);
	assert_int_equal(acc, 0);
	assert_ota(ota_nonce_store_consume(f->s, nb(&b), NULL, 1070, NULL, NULL), OTA_OK);
}

static void test_reopen_full(void **state)
{
	fixture *f = *state;
	ota_challenge used, live;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &used, NULL), OTA_OK);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &live, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&used), NULL, 1001, NULL, NULL), OTA_OK);
	int64_t ep = ota_nonce_store_epoch(f->s);
	ota_nonce_store_close(f->s);
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, NULL), OTA_OK);
	assert_int_equal(ota_nonce_store_epoch(f->s), ep + 1);
	/* FULL: consumes survive, live challenges stay usable */
	assert_ota(ota_nonce_store_consume(f->s, nb(&used), NULL, 1002, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
	assert_ota(ota_nonce_store_consume(f->s, nb(&live), NULL, 1002, NULL, NULL), OTA_OK);
}

static void test_normal_epoch(void **state)
{
	fixture *f = *state;
	ota_nonce_store_close(f->s);
	ota_nonce_opts o;
	ota_nonce_opts_init(&o);
	o.sync = OTA_NONCE_SYNC_NORMAL;
	assert_ota(ota_nonce_store_open(f->path, &o, &f->s, NULL), OTA_OK);
	ota_challenge c1, c2;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c1, NULL), OTA_OK);
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c2, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c1), NULL, 1001, NULL, NULL), OTA_OK);
	ota_nonce_store_close(f->s);
	/* Simulate a power loss that rolled the consume back: the row of c1
	 * is live again on disk. Any reopen (FULL here) must refuse both. */
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE challenges SET consumed_at = NULL", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, NULL), OTA_OK);
	assert_true(ota_nonce_store_min_epoch(f->s) > c1.epoch);
	ota_error e = {0};
	assert_ota(ota_nonce_store_consume(f->s, nb(&c1), NULL, 1002, NULL, &e), OTA_ERR_NONCE_STALE_EPOCH);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c2), NULL, 1002, NULL, &e), OTA_ERR_NONCE_STALE_EPOCH);
	assert_string_equal(ota_err_name(e.code), "nonce_stale_epoch");
	/* a fresh challenge of the new epoch works */
	ota_challenge c3;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c3, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c3), NULL, 1002, NULL, NULL), OTA_OK);
	/* the FULL epoch's challenges survive the next FULL reopen */
	ota_challenge c4;
	assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c4, NULL), OTA_OK);
	ota_nonce_store_close(f->s);
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&c4), NULL, 1002, NULL, NULL), OTA_OK);
}

static void test_batch(void **state)
{
	fixture *f = *state;
	enum { N = 100 };
	ota_challenge cs[N];
	ota_nonce_op ops[N + 2];
	memset(ops, 0, sizeof ops);
	for (int i = 0; i < N; i++) {
		ops[i].kind = OTA_NONCE_OP_ISSUE;
		ops[i].binding = &bind_a;
	}
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, N, 1000, NULL), OTA_OK);
	for (int i = 0; i < N; i++) {
		assert_ota(ops[i].result, OTA_OK);
		cs[i] = ops[i].challenge;
	}
	memset(ops, 0, sizeof ops);
	for (int i = 0; i < N; i++) {
		ops[i].kind = OTA_NONCE_OP_CONSUME;
		ops[i].nonce = nb(&cs[i]);
	}
	ops[N].kind = OTA_NONCE_OP_CONSUME; /* the same nonce twice in one batch */
	ops[N].nonce = nb(&cs[7]);
	uint8_t junk[32] = {1};
	ops[N + 1].kind = OTA_NONCE_OP_CONSUME;
	ops[N + 1].nonce = ota_bytes_make(junk, sizeof junk);
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, N + 2, 1001, NULL), OTA_OK);
	for (int i = 0; i < N; i++)
		assert_ota(ops[i].result, OTA_OK);
	assert_ota(ops[N].result, OTA_ERR_NONCE_REPLAYED);
	assert_ota(ops[N + 1].result, OTA_ERR_NONCE_UNKNOWN);
	for (int i = 0; i < N; i++)
		assert_ota(ota_nonce_store_consume(f->s, nb(&cs[i]), NULL, 1002, NULL, NULL),
		           OTA_ERR_NONCE_REPLAYED);
}

static ota_err admit(fixture *f, const ota_challenge *c, const char *boundary, const char *prior,
                     const char *id)
{
	ota_nonce_op op;
	memset(&op, 0, sizeof op);
	op.kind = OTA_NONCE_OP_ADMIT;
	op.nonce = nb(c);
	op.expect = &bind_a;
	op.boundary = boundary;
	op.prior = prior;
	op.record_id = id;
	op.attestation = ota_bytes_make("att", 3);
	op.acceptance = ota_bytes_make("acc", 3);
	assert_ota(ota_nonce_store_commit_batch(f->s, &op, 1, 1001, NULL), OTA_OK);
	return op.result;
}

static void test_admit_heads(void **state)
{
	fixture *f = *state;
	ota_challenge c[8];
	for (int i = 0; i < 8; i++)
		assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c[i], NULL), OTA_OK);
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	assert_ota(ota_nonce_store_head_get(f->s, "txn-a", "issuer:acme", "b1", head, sizeof head, NULL), OTA_OK);
	assert_string_equal(head, "");
	/* prior on an empty boundary: skipped/invented */
	assert_ota(admit(f, &c[0], "b1", "r0", "r1"), OTA_ERR_ATT_PRIOR_UNKNOWN);
	assert_ota(admit(f, &c[0], "b1", NULL, "r1"), OTA_OK); /* the refusal did not burn c[0] */
	assert_ota(admit(f, &c[1], "b1", "r1", "r2"), OTA_OK);
	assert_ota(ota_nonce_store_head_get(f->s, "txn-a", "issuer:acme", "b1", head, sizeof head, NULL), OTA_OK);
	assert_string_equal(head, "r2");
	assert_ota(admit(f, &c[2], "b1", "r1", "r2b"), OTA_ERR_ATT_PRIOR_FORK);
	assert_ota(admit(f, &c[2], "b1", "r9", "r3"), OTA_ERR_ATT_PRIOR_UNKNOWN);
	assert_ota(admit(f, &c[2], "b1", NULL, "r3"), OTA_ERR_ATT_PRIOR_MISSING);
	assert_ota(admit(f, &c[2], "b1", "r2", "r1"), OTA_ERR_ATT_DUPLICATE);
	assert_ota(admit(f, &c[0], "b1", "r2", "r3"), OTA_ERR_NONCE_REPLAYED);
	assert_ota(admit(f, &c[2], "b1", "r2", "r3"), OTA_OK);
	/* another boundary has its own head */
	assert_ota(admit(f, &c[3], "b2", NULL, "s1"), OTA_OK);
	/* record ids are unique per lane (an attestation's identity covers its
	 * lane claims); the store does not look across lanes */
	assert_ota(admit(f, &c[4], "b4", NULL, "r1"), OTA_OK);
	assert_ota(admit(f, &c[5], "b4", "r1", "r1"), OTA_ERR_ATT_DUPLICATE);
	uint8_t *att = NULL, *acc = NULL;
	size_t al = 0, cl = 0;
	assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", "b1", "r3", &att, &al, &acc, &cl,
	                                          NULL),
	           OTA_OK);
	assert_int_equal(al, 3);
	assert_memory_equal(acc, "acc", 3);
	free(att);
	free(acc);
	/* found by its lane only */
	assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", "b2", "r3", &att, &al, &acc, &cl,
	                                          NULL),
	           OTA_ERR_NOT_FOUND);
	assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-b", "b1", "r3", &att, &al, &acc, &cl,
	                                          NULL),
	           OTA_ERR_NOT_FOUND);
	assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", "b1", "r2b", &att, &al, &acc, &cl,
	                                          NULL),
	           OTA_ERR_NOT_FOUND);
	assert_null(att);
	uint64_t acc_n = 0;
	assert_ota(ota_nonce_store_counts(f->s, NULL, NULL, &acc_n, NULL), OTA_OK);
	assert_int_equal(acc_n, 5); /* r1, r2, r3, s1 and b4's r1 */
}

static void set_admit(ota_nonce_op *op, const ota_challenge *c, const ota_nonce_binding *b,
                      const char *boundary, const char *prior, const char *id)
{
	memset(op, 0, sizeof *op);
	op->kind = OTA_NONCE_OP_ADMIT;
	op->nonce = nb(c);
	op->expect = b;
	op->boundary = boundary;
	op->prior = prior;
	op->record_id = id;
	op->attestation = ota_bytes_make(id, strlen(id));
	op->acceptance = ota_bytes_make("acc", 3);
}

/*
 * Admissions refused inside a batch of many (no savepoint each: every
 * refusal is decided before the admission's first write) leave nothing
 * behind: the challenge stays live, the head does not move, no acceptance
 * is stored; the admissions around them commit, and a refusal may name a
 * record accepted earlier in the same batch.
 */
static void test_admit_refusals_in_batch(void **state)
{
	fixture *f = *state;
	static const ota_nonce_binding bind_b = {"txn-a", "issuer:other", "oci_local"};
	ota_challenge c[16], cb;
	for (int i = 0; i < 16; i++)
		assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c[i], NULL), OTA_OK);
	assert_ota(ota_nonce_store_issue(f->s, &bind_b, 0, 0, 1000, &cb, NULL), OTA_OK);
	ota_nonce_op ops[12];
	int k = 0;
	set_admit(&ops[k++], &c[0], &bind_a, "b1", NULL, "r1");     /* ok */
	set_admit(&ops[k++], &c[1], &bind_a, "b1", "r1", "r2");     /* ok: r1 of this batch */
	set_admit(&ops[k++], &c[2], &bind_a, "b1", "r1", "r2x");    /* fork: r1 is no longer head */
	set_admit(&ops[k++], &c[3], &bind_a, "b1", "r9", "r3x");    /* prior unknown */
	set_admit(&ops[k++], &c[4], &bind_a, "b1", NULL, "r3y");    /* prior missing */
	set_admit(&ops[k++], &c[5], &bind_a, "b2", "r1", "s1x");    /* prior on an empty lane */
	set_admit(&ops[k++], &c[6], &bind_a, "b1", "r2", "r1");     /* duplicate of this batch's r1 */
	set_admit(&ops[k++], &c[0], &bind_a, "b3", NULL, "t1x");    /* nonce consumed in this batch */
	set_admit(&ops[k++], &cb, &bind_b, "b1", "r2", "r3z");      /* acme's r2 is not in other's b1 */
	set_admit(&ops[k++], &c[7], &bind_b, "b3", NULL, "t1y");    /* c[7] is bound to issuer:acme */
	set_admit(&ops[k++], &c[8], &bind_a, "b1", "r2", "r3");     /* ok */
	set_admit(&ops[k++], &c[9], &bind_a, "b2", NULL, "s1");     /* ok */
	static const ota_err want[12] = {
		OTA_OK, OTA_OK, OTA_ERR_ATT_PRIOR_FORK, OTA_ERR_ATT_PRIOR_UNKNOWN,
		OTA_ERR_ATT_PRIOR_MISSING, OTA_ERR_ATT_PRIOR_UNKNOWN, OTA_ERR_ATT_DUPLICATE,
		OTA_ERR_NONCE_REPLAYED, OTA_ERR_ATT_PRIOR_UNKNOWN, OTA_ERR_NONCE_ISSUER_MISMATCH,
		OTA_OK, OTA_OK};
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, (size_t)k, 1001, NULL), OTA_OK);
	for (int i = 0; i < k; i++) {
		assert_ota(ops[i].result, want[i]);
		if (want[i] == OTA_OK)
			assert_int_equal(ops[i].challenge.consumed_at, 1001);
		else
			assert_int_equal(ops[i].challenge.consumed_at, 0);
	}
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	assert_ota(ota_nonce_store_head_get(f->s, "txn-a", "issuer:acme", "b1", head, sizeof head, NULL), OTA_OK);
	assert_string_equal(head, "r3");
	assert_ota(ota_nonce_store_head_get(f->s, "txn-a", "issuer:acme", "b2", head, sizeof head, NULL), OTA_OK);
	assert_string_equal(head, "s1");
	assert_ota(ota_nonce_store_head_get(f->s, "txn-a", "issuer:acme", "b3", head, sizeof head, NULL), OTA_OK);
	assert_string_equal(head, "");
	uint64_t acc_n = 0, consumed = 0;
	assert_ota(ota_nonce_store_counts(f->s, NULL, &consumed, &acc_n, NULL), OTA_OK);
	assert_int_equal(acc_n, 4);
	assert_int_equal(consumed, 4);
	/* r1 is stored once, with the first admission's bytes */
	uint8_t *att = NULL;
	size_t al = 0;
	assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", "b1", "r1", &att, &al, NULL, NULL,
	                                          NULL),
	           OTA_OK);
	assert_int_equal(al, 2);
	free(att);
	static const char *const gone[][2] = {{"b1", "r2x"}, {"b1", "r3x"}, {"b1", "r3y"},
	                                      {"b2", "s1x"}, {"b3", "t1x"}, {"b1", "r3z"},
	                                      {"b3", "t1y"}};
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
		assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", gone[i][0], gone[i][1], NULL,
		                                          NULL, NULL, NULL, NULL),
		           OTA_ERR_NOT_FOUND);
	/* every refused admission's challenge is still live */
	static const int live[] = {2, 3, 4, 5, 6, 7};
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		assert_ota(ota_nonce_store_consume(f->s, nb(&c[live[i]]), &bind_a, 1002, NULL, NULL),
		           OTA_OK);
	assert_ota(ota_nonce_store_consume(f->s, nb(&cb), &bind_b, 1002, NULL, NULL), OTA_OK);
}

/*
 * ADMIT's challenge_row (the rowid a read reported, ota_challenge.row) is a
 * hint only: the row must hold the admission's nonce, or the nonce is
 * looked up as without it. A hint naming another live challenge neither
 * consumes that one nor stops this one; a row that does not exist is
 * ignored; the right row refuses a replay as the lookup would.
 */
static void test_admit_row_hint(void **state)
{
	fixture *f = *state;
	ota_challenge c[4], peeked;
	for (int i = 0; i < 4; i++) {
		assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &c[i], NULL), OTA_OK);
		assert_true(c[i].row > 0);
	}
	assert_true(c[0].row != c[1].row);
	assert_ota(ota_nonce_store_peek(f->s, nb(&c[2]), 1000, &peeked, NULL), OTA_OK);
	assert_int_equal(peeked.row, c[2].row);
	ota_nonce_op ops[4];
	set_admit(&ops[0], &c[0], &bind_a, "h1", NULL, "h-r1");
	ops[0].challenge_row = c[1].row; /* another challenge's row */
	set_admit(&ops[1], &c[2], &bind_a, "h2", NULL, "h-r2");
	ops[1].challenge_row = c[3].row + 1000; /* no such row */
	set_admit(&ops[2], &c[3], &bind_a, "h3", NULL, "h-r3");
	ops[2].challenge_row = c[3].row;
	set_admit(&ops[3], &c[3], &bind_a, "h4", NULL, "h-r4");
	ops[3].challenge_row = c[3].row; /* the right row, consumed just before */
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, 4, 1001, NULL), OTA_OK);
	assert_ota(ops[0].result, OTA_OK);
	assert_memory_equal(ops[0].challenge.nonce, c[0].nonce, c[0].nonce_len);
	assert_int_equal(ops[0].challenge.row, c[0].row);
	assert_ota(ops[1].result, OTA_OK);
	assert_ota(ops[2].result, OTA_OK);
	assert_ota(ops[3].result, OTA_ERR_NONCE_REPLAYED);
	/* c[1] was only named: still live */
	assert_ota(ota_nonce_store_peek(f->s, nb(&c[1]), 1002, NULL, NULL), OTA_OK);
	assert_ota(ota_nonce_store_peek(f->s, nb(&c[0]), 1002, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
	assert_ota(ota_nonce_store_peek(f->s, nb(&c[2]), 1002, NULL, NULL), OTA_ERR_NONCE_REPLAYED);
}

/* acceptances in the file, read by a connection of sqlite's own (default
 * VFS), not the store's */
/*
 * The writer gathers a transaction's WAL frames and writes them in pieces of
 * at most 124 KiB (walbuf.c; sqlite's default VFS moves at most 0x1ffff
 * bytes per write and reported a longer one as "disk full"). A batch
 * writing about 1.6 MiB of WAL commits, and the moment it has returned
 * another connection sees all of it; after a reopen every record reads
 * back whole and the file is intact.
 */
static void test_wal_gathered(void **state)
{
	fixture *f = *state;
	enum { N = 400, ATT = 4000 };
	ota_challenge *c = calloc(N, sizeof *c);
	ota_nonce_op *ops = calloc(N, sizeof *ops);
	uint8_t *att = malloc((size_t)N * ATT);
	char (*ids)[16] = calloc(N, sizeof *ids), (*bnd)[16] = calloc(N, sizeof *bnd);
	assert_true(c != NULL && ops != NULL && att != NULL && ids != NULL && bnd != NULL);
	for (int i = 0; i < N; i++) {
		ops[i].kind = OTA_NONCE_OP_ISSUE;
		ops[i].binding = &bind_a;
	}
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, N, 1000, NULL), OTA_OK);
	for (int i = 0; i < N; i++) {
		c[i] = ops[i].challenge;
		for (int j = 0; j < ATT; j++)
			att[(size_t)i * ATT + (size_t)j] = (uint8_t)(i * 31 + j);
		snprintf(ids[i], sizeof ids[i], "rec-%d", i);
		snprintf(bnd[i], sizeof bnd[i], "bd-%d", i);
		set_admit(&ops[i], &c[i], &bind_a, bnd[i], NULL, ids[i]);
		ops[i].attestation = ota_bytes_make(att + (size_t)i * ATT, ATT);
	}
	assert_ota(ota_nonce_store_commit_batch(f->s, ops, N, 1001, NULL), OTA_OK);
	for (int i = 0; i < N; i++)
		assert_ota(ops[i].result, OTA_OK);
	assert_int_equal(test_db_int(f->path, "SELECT count(*) FROM acceptances"), N);
	assert_int_equal(test_db_int(f->path, "SELECT sum(length(attestation)) FROM acceptances"),
	                 (int64_t)N * ATT);
	ota_nonce_store_close(f->s);
	f->s = NULL;
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, NULL), OTA_OK);
	for (int i = 0; i < N; i += 37) {
		uint8_t *a = NULL;
		size_t al = 0;
		assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", bnd[i], ids[i], &a, &al, NULL,
		                                          NULL, NULL),
		           OTA_OK);
		assert_int_equal(al, ATT);
		assert_memory_equal(a, att + (size_t)i * ATT, ATT);
		free(a);
	}
	test_db_integrity_ok(f->path);
	free(c);
	free(ops);
	free(att);
	free(ids);
	free(bnd);
}

/*
 * kill -9 of a process in the middle of its group commits loses nothing it
 * was told had committed: a child commits batches of admissions (each with
 * about 40 KiB of WAL) and reports each on a pipe once its commit has
 * returned; the parent kills it after some reports, reopens the store and
 * finds every reported admission stored and its challenge consumed.
 */
static void test_kill_after_commit(void **state)
{
	fixture *f = *state;
	enum { B = 16, BATCHES = 200, ATT = 2000 };
	ota_nonce_store_close(f->s);
	f->s = NULL;
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		ota_nonce_store *s = NULL;
		static uint8_t att[ATT];
		memset(att, 0x5a, sizeof att);
		if (ota_nonce_store_open(f->path, NULL, &s, NULL) != OTA_OK)
			_exit(2);
		for (int k = 0; k < BATCHES; k++) {
			ota_nonce_op ops[B];
			ota_challenge c[B];
			char ids[B][24], bnd[B][24];
			for (int i = 0; i < B; i++) {
				if (ota_nonce_store_issue(s, &bind_a, 0, 0, 1000, &c[i], NULL) != OTA_OK)
					_exit(3);
				snprintf(ids[i], sizeof ids[i], "k-%d-%d", k, i);
				snprintf(bnd[i], sizeof bnd[i], "kb-%d-%d", k, i);
				set_admit(&ops[i], &c[i], &bind_a, bnd[i], NULL, ids[i]);
				ops[i].attestation = ota_bytes_make(att, sizeof att);
			}
			if (ota_nonce_store_commit_batch(s, ops, B, 1001, NULL) != OTA_OK)
				_exit(4);
			for (int i = 0; i < B; i++)
				if (ops[i].result != OTA_OK)
					_exit(5);
			int32_t done = k + 1;
			if (write(fd[1], &done, sizeof done) != (ssize_t)sizeof done)
				_exit(6);
		}
		for (;;)
			pause();
	}
	close(fd[1]);
	int32_t acked = 0, v;
	while (acked < 40 && read(fd[0], &v, sizeof v) == (ssize_t)sizeof v)
		acked = v;
	kill(pid, SIGKILL);
	int wst = 0;
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	assert_true(WIFSIGNALED(wst));
	/* reports written before the kill and not read yet count too */
	while (read(fd[0], &v, sizeof v) == (ssize_t)sizeof v)
		acked = v;
	close(fd[0]);
	assert_true(acked >= 40);
	assert_ota(ota_nonce_store_open(f->path, NULL, &f->s, NULL), OTA_OK);
	uint64_t accepted = 0, consumed = 0;
	assert_ota(ota_nonce_store_counts(f->s, NULL, &consumed, &accepted, NULL), OTA_OK);
	assert_true(accepted >= (uint64_t)acked * B);
	assert_int_equal(consumed, accepted);
	for (int k = 0; k < acked; k += 7) {
		char id[24], bd[24];
		snprintf(id, sizeof id, "k-%d-%d", k, B - 1);
		snprintf(bd, sizeof bd, "kb-%d-%d", k, B - 1);
		assert_ota(ota_nonce_store_acceptance_get(f->s, "txn-a", bd, id, NULL, NULL, NULL, NULL,
		                                          NULL),
		           OTA_OK);
	}
}

/* ---- group commit from many threads over the same challenges ---- */

enum { GC_THREADS = 8, GC_N = 400 };

typedef struct gc_arg {
	ota_nonce_committer *c;
	ota_challenge *cs;
	int wins;
	int replays;
	int other;
	unsigned seed;
} gc_arg;

static void *gc_thread(void *p)
{
	gc_arg *a = p;
	for (int k = 0; k < GC_N; k++) {
		int i = (int)((unsigned)(k * 7919 + (int)a->seed * 31) % GC_N);
		ota_nonce_op op;
		memset(&op, 0, sizeof op);
		op.kind = OTA_NONCE_OP_CONSUME;
		op.nonce = nb(&a->cs[i]);
		ota_err e = ota_nonce_committer_run(a->c, &op);
		if (e == OTA_OK)
			a->wins++;
		else if (e == OTA_ERR_NONCE_REPLAYED)
			a->replays++;
		else
			a->other++;
	}
	return NULL;
}

static void test_group_commit(void **state)
{
	fixture *f = *state;
	ota_challenge *cs = calloc(GC_N, sizeof *cs);
	assert_non_null(cs);
	for (int i = 0; i < GC_N; i++)
		assert_ota(ota_nonce_store_issue(f->s, &bind_a, 0, 0, 1000, &cs[i], NULL), OTA_OK);
	int64_t t = 1001;
	ota_clock clk = ota_clock_fixed(&t);
	ota_nonce_committer *c = NULL;
	assert_ota(ota_nonce_committer_new(f->s, 64, &clk, &c), OTA_OK);
	pthread_t th[GC_THREADS];
	gc_arg args[GC_THREADS];
	for (int i = 0; i < GC_THREADS; i++) {
		args[i] = (gc_arg){c, cs, 0, 0, 0, (unsigned)i};
		assert_int_equal(pthread_create(&th[i], NULL, gc_thread, &args[i]), 0);
	}
	int wins = 0, replays = 0, other = 0;
	for (int i = 0; i < GC_THREADS; i++) {
		pthread_join(th[i], NULL);
		wins += args[i].wins;
		replays += args[i].replays;
		other += args[i].other;
	}
	uint64_t batches = 0, ops = 0;
	ota_nonce_committer_stats(c, &batches, &ops);
	ota_nonce_committer_free(c);
	assert_int_equal(wins, GC_N);
	assert_int_equal(replays, GC_N * (GC_THREADS - 1));
	assert_int_equal(other, 0);
	assert_int_equal(ops, (uint64_t)GC_N * GC_THREADS);
	assert_true(batches >= 1 && batches <= ops);
	free(cs);
	ota_nonce_committer_free(NULL);
}

/* The challenge JCS as the generic path writes it (a jansson object through
 * ota_jcs_serialize); NULL when that path refuses the challenge. */
static char *generic_jcs(const ota_challenge *c)
{
	char *b64 = NULL, *out = NULL;
	size_t n = 0;
	if (ota_base64url_encode(ota_bytes_make(c->nonce, c->nonce_len), &b64) != OTA_OK)
		return NULL;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "kind", "ota.challenge/v1",
	                      "nonce", b64, "txn", c->txn, "issuer", c->issuer, "scope", c->scope,
	                      "issued_at", (json_int_t)c->issued_at, "expires_at",
	                      (json_int_t)c->expires_at, "epoch", (json_int_t)c->epoch);
	free(b64);
	if (o != NULL && ota_jcs_serialize(o, &out, &n, NULL) != OTA_OK)
		out = NULL;
	json_decref(o);
	return out;
}

static void expect_same_jcs(const ota_challenge *c)
{
	char *want = generic_jcs(c), *got = NULL;
	size_t n = 0;
	ota_err e = ota_challenge_jcs(c, &got, &n);
	if (want == NULL) {
		assert_int_not_equal(e, OTA_OK);
		assert_null(got);
		return;
	}
	assert_ota(e, OTA_OK);
	assert_int_equal(n, strlen(want));
	assert_string_equal(got, want);
	free(got);
	free(want);
}

/* ota_challenge_jcs writes the JCS directly; it must be byte for byte the
 * generic serializer's output (the identity every acceptance names). */
static void test_challenge_jcs_direct(void **state)
{
	(void)state;
	ota_challenge c;
	memset(&c, 0, sizeof c);
	c.nonce_len = 32;
	memset(c.nonce, 0xfb, 32);
	c.epoch = 3;
	c.issued_at = 1796009645;
	c.expires_at = 1796009945;
	static const char *const texts[] = {
		"txn-1", "issuer:acme", "", "a\"b", "back\\slash", "\x01\x1f\x7f", "tab\tnl\ncr\r",
		"\b\f", "caf\xc3\xa9", "\xe2\x80\xa8 line sep", "\xf0\x9f\x98\x80 emoji",
		"\xc3\x28 invalid", "\xe0\x80\xaf overlong", "\xed\xa0\x80 surrogate",
		"\xf4\x90\x80\x80 too big", "\xf0\x9f\x98 cut", "</script>",
	};
	size_t nt = sizeof texts / sizeof texts[0];
	for (size_t i = 0; i < nt; i++) {
		snprintf(c.txn, sizeof c.txn, "%s", texts[i]);
		snprintf(c.issuer, sizeof c.issuer, "%s", texts[(i + 1) % nt]);
		snprintf(c.scope, sizeof c.scope, "%s", texts[(i + 5) % nt]);
		expect_same_jcs(&c);
	}
	static const int64_t ints[] = {0, -1, 1, 9007199254740991LL, -9007199254740991LL,
	                               9007199254740992LL, -9007199254740992LL, INT64_MAX, INT64_MIN};
	snprintf(c.txn, sizeof c.txn, "txn");
	snprintf(c.issuer, sizeof c.issuer, "iss");
	snprintf(c.scope, sizeof c.scope, "scope");
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		c.epoch = ints[i];
		expect_same_jcs(&c);
		c.epoch = 1;
		c.issued_at = ints[i];
		expect_same_jcs(&c);
		c.issued_at = 1;
		c.expires_at = ints[i];
		expect_same_jcs(&c);
		c.expires_at = 2;
	}
	/* random bytes (1..255) in every text field, random nonces */
	uint64_t rs = 0x6a636f6e6365ULL;
	for (int k = 0; k < 3000; k++) {
		char *f[3] = {c.txn, c.issuer, c.scope};
		for (int i = 0; i < 3; i++) {
			size_t n = test_rnd(&rs, 24);
			for (size_t j = 0; j < n; j++) {
				unsigned r = test_rnd(&rs, 4);
				/* mostly ASCII and the bytes that need escaping, some high bytes */
				f[i][j] = (char)(r == 0 ? 1 + test_rnd(&rs, 255)
				                 : r == 1 ? 1 + test_rnd(&rs, 0x7f) : 0x20 + test_rnd(&rs, 0x5f));
			}
			f[i][n] = '\0';
		}
		c.nonce_len = OTA_NONCE_MIN_BYTES + test_rnd(&rs, OTA_NONCE_MAX_BYTES - OTA_NONCE_MIN_BYTES + 1);
		for (size_t j = 0; j < c.nonce_len; j++)
			c.nonce[j] = (uint8_t)test_rnd(&rs, 256);
		c.issued_at = (int64_t)test_rnd(&rs, 2000000000u);
		expect_same_jcs(&c);
	}
}

static void test_null_handles(void **state)
{
	(void)state;
	ota_nonce_store_close(NULL);
	ota_nonce_store *s = (ota_nonce_store *)(uintptr_t)1;
	assert_ota(ota_nonce_store_open("", NULL, &s, NULL), OTA_ERR_USAGE);
	assert_null(s);
	/* a missing directory is not made (not_found, before sqlite opens) */
	assert_ota(ota_nonce_store_open("/nonexistent-dir/x/y.db", NULL, &s, NULL), OTA_ERR_NOT_FOUND);
	assert_null(s);
	assert_int_equal(access("/nonexistent-dir", F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_issue_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_issue_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_single_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_purge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_normal_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admit_heads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admit_refusals_in_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admit_row_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wal_gathered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill_after_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test(test_challenge_jcs_direct),
		cmocka_unit_test(test_null_handles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
