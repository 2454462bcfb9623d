/* Unit tests of the peek cache of nonce-store (peek_cache.c): a store
 * handle answers ota_nonce_store_peek for the challenges it issued from
 * memory, and always exactly as sqlite would for everything done through
 * that handle. A second handle on the same file, which issues nothing,
 * always reads sqlite: the reference every answer is compared with. */
#include "test_util.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nonce-store/nonce_internal.h"
#include "ota/nonce.h"

typedef struct fixture {
	char *dir;
	char path[512];
	ota_nonce_store *a; /* issues, consumes, purges: its peeks may use the cache */
	ota_nonce_store *b; /* only peeks: always sqlite */
} fixture;

static char long_scope[901];

static int setup(void **state)
{
	memset(long_scope, 's', sizeof long_scope - 1);
	fixture *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->dir = test_tmpdir();
	snprintf(f->path, sizeof f->path, "%s/nonce.db", f->dir);
	ota_nonce_opts o;
	ota_nonce_opts_init(&o);
	o.skew = 5;
	o.busy_timeout_ms = 30;
	assert_ota(ota_nonce_store_open(f->path, &o, &f->a, NULL), OTA_OK);
	assert_ota(ota_nonce_store_open(f->path, &o, &f->b, NULL), OTA_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	ota_nonce_store_close(f->a);
	ota_nonce_store_close(f->b);
	test_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static uint64_t hits_of(ota_nonce_store *s)
{
	uint64_t h = 0;
	nonce_store_peek_cache_stats(s, &h, NULL);
	return h;
}

static uint64_t entries_of(ota_nonce_store *s)
{
	uint64_t n = 0;
	nonce_store_peek_cache_stats(s, NULL, &n);
	return n;
}

static ota_bytes nb(const ota_challenge *c)
{
	return ota_bytes_make(c->nonce, c->nonce_len);
}

/* Peeks nonce through both handles at now: the same code, record (byte
 * for byte) and error detail. Returns the code. */
static ota_err peek_both(fixture *f, ota_bytes nonce, int64_t now)
{
	ota_challenge ca, cb;
	ota_error ea, eb;
	ota_error_clear(&ea);
	ota_error_clear(&eb);
	memset(&ca, 0xa5, sizeof ca);
	memset(&cb, 0x5a, sizeof cb);
	ota_err ra = ota_nonce_store_peek(f->a, nonce, now, &ca, &ea);
	ota_err rb = ota_nonce_store_peek(f->b, nonce, now, &cb, &eb);
	if (ra != rb)
		fail_msg("peek at %lld: cached handle %s, sqlite %s", (long long)now, ota_err_name(ra),
		         ota_err_name(rb));
	assert_memory_equal(&ca, &cb, sizeof ca);
	if (ra != OTA_OK) {
		assert_string_equal(ea.where, eb.where);
		assert_string_equal(ea.what, eb.what);
	}
	return ra;
}

/* ---- the differential test ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static const ota_nonce_binding binds[3] = {
	{"txn-a", "issuer:acme", "oci_local"},
	{"txn-b", "issuer:acme", "*"},
	{"txn-a", "issuer:other", long_scope},
};

#define MAX_KNOWN 8192

typedef struct diff_run {
	fixture *f;
	ota_challenge known[MAX_KNOWN];
	int bind_of[MAX_KNOWN];
	size_t nknown;
	int64_t t;
	unsigned ids;
	unsigned peeks, peeks_ok, peeks_replayed, peeks_expired, peeks_unknown, other;
	unsigned issued, consumed, admitted, purged, busy, rolled_back;
} diff_run;

static void remember(diff_run *d, const ota_challenge *c, int bind)
{
	if (d->nknown < MAX_KNOWN) {
		d->bind_of[d->nknown] = bind;
		d->known[d->nknown++] = *c;
	}
	d->issued++;
}

/* a known challenge (most of the time) or one never issued */
static ota_bytes pick(diff_run *d, uint8_t scratch[OTA_NONCE_MAX_BYTES], size_t *idx)
{
	if (d->nknown == 0 || rnd() % 10 == 0) {
		for (size_t i = 0; i < 32; i++)
			scratch[i] = (uint8_t)rnd();
		*idx = SIZE_MAX;
		return ota_bytes_make(scratch, 32);
	}
	/* recent ones more often: they are the live ones */
	size_t i = rnd() % 2 ? d->nknown - 1 - rnd() % (d->nknown < 16 ? d->nknown : 16)
			     : rnd() % d->nknown;
	*idx = i;
	return nb(&d->known[i]);
}

static const ota_nonce_binding *expect_for(diff_run *d, size_t idx)
{
	unsigned r = rnd() % 8;
	if (idx == SIZE_MAX || r == 0)
		return &binds[rnd() % 3];
	if (r == 1)
		return NULL;
	return &binds[d->bind_of[idx]];
}

static void count_peek(diff_run *d, ota_err e)
{
	d->peeks++;
	if (e == OTA_OK)
		d->peeks_ok++;
	else if (e == OTA_ERR_NONCE_REPLAYED)
		d->peeks_replayed++;
	else if (e == OTA_ERR_NONCE_EXPIRED)
		d->peeks_expired++;
	else if (e == OTA_ERR_NONCE_UNKNOWN)
		d->peeks_unknown++;
	else
		d->other++;
}

static void fill_admit(diff_run *d, ota_nonce_op *op, ota_bytes nonce, size_t idx, char *id,
                       char *boundary)
{
	memset(op, 0, sizeof *op);
	op->kind = OTA_NONCE_OP_ADMIT;
	op->nonce = nonce;
	op->expect = idx == SIZE_MAX ? &binds[0] : rnd() % 6 == 0 ? &binds[rnd() % 3]
								    : &binds[d->bind_of[idx]];
	unsigned n = d->ids++;
	snprintf(id, 32, "rec-%u", n);
	snprintf(boundary, 32, "bnd-%u", n);
	op->boundary = boundary;
	/* a prior on a fresh boundary: refused (attestation_prior_unknown)
	 * after the challenge was judged live, and consumes nothing */
	op->prior = rnd() % 3 == 0 ? "rec-none" : NULL;
	op->record_id = id;
	op->attestation = ota_bytes_make("att", 3);
	op->acceptance = ota_bytes_make("acc", 3);
	if (idx != SIZE_MAX && rnd() % 2)
		op->challenge_row = d->known[idx].row;
}

/* ops[0..n): issues, consumes and admissions (some refused) */
static void fill_batch(diff_run *d, ota_nonce_op *ops, size_t n, char (*ids)[32],
                       char (*bnds)[32], uint8_t (*scr)[OTA_NONCE_MAX_BYTES], int *bis)
{
	size_t idx;
	for (size_t i = 0; i < n; i++) {
		unsigned k = (unsigned)(rnd() % 3);
		memset(&ops[i], 0, sizeof ops[i]);
		bis[i] = -1;
		if (k == 0) {
			bis[i] = (int)(rnd() % 3);
			ops[i].kind = OTA_NONCE_OP_ISSUE;
			ops[i].binding = &binds[bis[i]];
			ops[i].ttl = (int64_t)(1 + rnd() % 150);
		} else if (k == 1) {
			ops[i].kind = OTA_NONCE_OP_CONSUME;
			ops[i].nonce = pick(d, scr[i], &idx);
			ops[i].expect = expect_for(d, idx);
		} else {
			ota_bytes nn = pick(d, scr[i], &idx);
			fill_admit(d, &ops[i], nn, idx, ids[i], bnds[i]);
		}
	}
}

static const ota_nonce_binding bind_boom = {"txn-a", "issuer:acme", "boom"};

static void diff_step(diff_run *d)
{
	fixture *f = d->f;
	uint8_t scratch[OTA_NONCE_MAX_BYTES];
	size_t idx;
	unsigned r = (unsigned)(rnd() % 100);
	d->t += (int64_t)(rnd() % 3);
	if (rnd() % 40 == 0)
		d->t -= (int64_t)(rnd() % 8); /* the clock goes back */
	if (r < 18) {
		static const size_t lens[] = {0, 16, 32, 64, 17};
		int bi = (int)(rnd() % 3);
		ota_challenge c;
		assert_ota(ota_nonce_store_issue(f->a, &binds[bi], lens[rnd() % 5],
		                                 (int64_t)(1 + rnd() % 150), d->t, &c, NULL),
		           OTA_OK);
		remember(d, &c, bi);
		/* what the issue returned is what both handles read back */
		ota_challenge p;
		assert_ota(ota_nonce_store_peek(f->a, nb(&c), d->t, &p, NULL), OTA_OK);
		assert_memory_equal(&p, &c, sizeof c);
		peek_both(f, nb(&c), d->t);
	} else if (r < 28) {
		/* a batch: issues, consumes and admissions, some refused */
		ota_nonce_op ops[8];
		char ids[8][32], bnds[8][32];
		uint8_t scr[8][OTA_NONCE_MAX_BYTES];
		size_t n = 1 + rnd() % 8;
		int bis[8];
		fill_batch(d, ops, n, ids, bnds, scr, bis);
		assert_ota(ota_nonce_store_commit_batch(f->a, ops, n, d->t, NULL), OTA_OK);
		for (size_t i = 0; i < n; i++) {
			if (ops[i].kind == OTA_NONCE_OP_ISSUE) {
				assert_ota(ops[i].result, OTA_OK);
				remember(d, &ops[i].challenge, bis[i]);
				peek_both(f, nb(&ops[i].challenge), d->t);
			} else {
				if (ops[i].result == OTA_OK && ops[i].kind == OTA_NONCE_OP_ADMIT)
					d->admitted++;
				else if (ops[i].result == OTA_OK)
					d->consumed++;
				count_peek(d, peek_both(f, ops[i].nonce, d->t));
			}
		}
	} else if (r < 42) {
		ota_bytes nn = pick(d, scratch, &idx);
		ota_challenge c;
		if (ota_nonce_store_consume(f->a, nn, expect_for(d, idx), d->t, &c, NULL) == OTA_OK)
			d->consumed++;
		count_peek(d, peek_both(f, nn, d->t));
	} else if (r < 50) {
		ota_nonce_op op;
		char id[32], bnd[32];
		ota_bytes nn = pick(d, scratch, &idx);
		fill_admit(d, &op, nn, idx, id, bnd);
		assert_ota(ota_nonce_store_commit_batch(f->a, &op, 1, d->t, NULL), OTA_OK);
		if (op.result == OTA_OK)
			d->admitted++;
		count_peek(d, peek_both(f, nn, d->t));
	} else if (r < 53) {
		uint64_t del = 0;
		assert_ota(ota_nonce_store_purge(f->a, d->t, &del, NULL), OTA_OK);
		d->purged += (unsigned)del;
	} else if (r < 55) {
		/* a batch rolled back after its operations ran: the consume of
		 * a "boom" challenge fails in the trigger run_diff installed
		 * (database_error, fatal to the batch), so nothing the others
		 * did is committed */
		ota_challenge boom;
		assert_ota(ota_nonce_store_issue(f->a, &bind_boom, 0, 100, d->t, &boom, NULL), OTA_OK);
		ota_nonce_op ops[9];
		char ids[9][32], bnds[9][32];
		uint8_t scr[9][OTA_NONCE_MAX_BYTES];
		size_t n = 1 + rnd() % 8;
		int bis[9];
		fill_batch(d, ops, n, ids, bnds, scr, bis);
		memset(&ops[n], 0, sizeof ops[n]);
		ops[n].kind = OTA_NONCE_OP_CONSUME;
		ops[n].nonce = nb(&boom);
		n++;
		assert_ota(ota_nonce_store_commit_batch(f->a, ops, n, d->t, NULL), OTA_ERR_DB);
		d->rolled_back++;
		for (size_t i = 0; i < n; i++)
			if (ops[i].kind != OTA_NONCE_OP_ISSUE)
				count_peek(d, peek_both(f, ops[i].nonce, d->t));
	} else if (r < 56 && d->busy < 6) {
		/* a batch that cannot begin (another connection holds the write
		 * lock) consumes and issues nothing */
		sqlite3 *x = NULL;
		assert_int_equal(sqlite3_open_v2(f->path, &x, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_exec(x, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
		ota_nonce_op ops[2];
		memset(ops, 0, sizeof ops);
		ops[0].kind = OTA_NONCE_OP_CONSUME;
		ops[0].nonce = pick(d, scratch, &idx);
		ops[1].kind = OTA_NONCE_OP_ISSUE;
		ops[1].binding = &binds[0];
		assert_ota(ota_nonce_store_commit_batch(f->a, ops, 2, d->t, NULL), OTA_ERR_NONCE_BUSY);
		assert_int_equal(sqlite3_exec(x, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
		sqlite3_close(x);
		d->busy++;
		count_peek(d, peek_both(f, ops[0].nonce, d->t));
	} else {
		ota_bytes nn = pick(d, scratch, &idx);
		int64_t at = d->t + (int64_t)(rnd() % 60) - 10;
		count_peek(d, peek_both(f, nn, at));
	}
}

static void run_diff(fixture *f, unsigned steps, uint64_t seed)
{
	diff_run *d = calloc(1, sizeof *d);
	assert_non_null(d);
	d->f = f;
	d->t = 1000000;
	rng_state = seed;
	sqlite3 *x = NULL;
	assert_int_equal(sqlite3_open_v2(f->path, &x, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(x,
	                              "CREATE TRIGGER IF NOT EXISTS boom BEFORE UPDATE ON challenges"
	                              " WHEN NEW.scope = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(x);
	for (unsigned i = 0; i < steps; i++)
		diff_step(d);
	/* finally every challenge ever issued, at a few times */
	for (size_t i = 0; i < d->nknown; i++)
		for (int64_t dt = -3; dt <= 160; dt += 23)
			count_peek(d, peek_both(f, nb(&d->known[i]), d->t + dt));
	print_message("seed %llu: %u steps, %u issued, %u consumed, %u admitted, %u purged, %u busy, %u rolled back;"
	              " %u peeks compared: %u ok, %u replayed, %u expired, %u unknown, %u other;"
	              " cache: %llu hits, %llu entries\n",
	              (unsigned long long)seed, steps, d->issued, d->consumed, d->admitted, d->purged,
	              d->busy, d->rolled_back, d->peeks, d->peeks_ok, d->peeks_replayed, d->peeks_expired,
	              d->peeks_unknown, d->other, (unsigned long long)hits_of(f->a),
	              (unsigned long long)entries_of(f->a));
	/* every outcome occurred, so the comparison covered each of them */
	assert_true(d->peeks_ok > 50 && d->peeks_replayed > 50 && d->peeks_expired > 50 &&
	            d->peeks_unknown > 50);
	assert_true(d->consumed > 20 && d->admitted > 20 && d->purged > 20 && d->busy > 0 &&
	            d->rolled_back > 10);
	assert_true(hits_of(f->a) > 500); /* the handle that issued answered from memory */
	assert_int_equal(hits_of(f->b), 0); /* the other one never could */
	free(d);
}

static uint64_t seed_from_env(uint64_t dflt)
{
	const char *s = getenv("OTA_TEST_SEED");
	return s != NULL && s[0] != '\0' ? strtoull(s, NULL, 10) | 1 : dflt;
}

static void test_differential(void **state)
{
	run_diff(*state, 4000, seed_from_env(0x9e3779b97f4a7c15ull));
}

/* A cache far smaller than what is live: new challenges are often not
 * cached (their peeks read sqlite) and full shards sweep expired entries. */
static void test_differential_small_cache(void **state)
{
	fixture *f = *state;
	nonce_store_peek_cache_reset(f->a, 24, (size_t)24 * 600);
	run_diff(f, 4000, seed_from_env(0x2545f4914f6cdd1dull) * 3 + 1);
	assert_true(entries_of(f->a) <= 24);
}

/* A full cache of consumed challenges (the steady state of an endpoint:
 * most challenges are answered soon after their issue) makes room for new
 * ones: a full shard drops its consumed entries, not only its expired
 * ones, and the new challenges' peeks are answered from memory. */
static void test_full_of_consumed(void **state)
{
	fixture *f = *state;
	nonce_store_peek_cache_reset(f->a, 80, (size_t)80 * 600);
	enum { FILL = 400, NEW = 8 };
	static ota_challenge c[FILL], d[NEW];
	for (int i = 0; i < FILL; i++)
		assert_ota(ota_nonce_store_issue(f->a, &binds[0], 0, 100, 5000, &c[i], NULL), OTA_OK);
	for (int i = 0; i < FILL; i++)
		assert_ota(ota_nonce_store_consume(f->a, nb(&c[i]), &binds[0], 5001, NULL, NULL),
		           OTA_OK);
	assert_int_equal(entries_of(f->a), 80); /* full, every entry consumed, none expired */
	for (int i = 0; i < NEW; i++)
		assert_ota(ota_nonce_store_issue(f->a, &binds[0], 0, 100, 5002, &d[i], NULL), OTA_OK);
	uint64_t h0 = hits_of(f->a);
	ota_challenge p;
	for (int i = 0; i < NEW; i++) {
		assert_ota(ota_nonce_store_peek(f->a, nb(&d[i]), 5003, &p, NULL), OTA_OK);
		assert_memory_equal(&p, &d[i], sizeof p);
	}
	assert_int_equal(hits_of(f->a), h0 + NEW);
	/* a dropped consumed challenge is still a replay, read from sqlite */
	for (int i = 0; i < FILL; i += 37)
		assert_ota(ota_nonce_store_peek(f->a, nb(&c[i]), 5003, &p, NULL),
		           OTA_ERR_NONCE_REPLAYED);
}

/* ---- the cache is what answers ---- */

/*
 * A row deleted behind the handle's back (another process's purge) is
 * still answered live by the handle that issued it: the peek did not read
 * sqlite (before the cache it said nonce_unknown). The consuming
 * transaction decides, and refuses it. A purge through the handle drops
 * the entry.
 */
static void test_peek_answers_from_memory(void **state)
{
	fixture *f = *state;
	ota_challenge c, p;
	assert_ota(ota_nonce_store_issue(f->a, &binds[0], 0, 100, 5000, &c, NULL), OTA_OK);
	uint64_t h0 = hits_of(f->a);
	assert_ota(ota_nonce_store_peek(f->a, nb(&c), 5001, &p, NULL), OTA_OK);
	assert_memory_equal(&p, &c, sizeof c);
	assert_int_equal(hits_of(f->a), h0 + 1);

	sqlite3 *x = NULL;
	assert_int_equal(sqlite3_open_v2(f->path, &x, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(x, "DELETE FROM challenges WHERE nonce = ?1", -1, &st,
	                                    NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, c.nonce, (int)c.nonce_len, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(x);

	assert_ota(ota_nonce_store_peek(f->b, nb(&c), 5001, &p, NULL), OTA_ERR_NONCE_UNKNOWN);
	assert_ota(ota_nonce_store_peek(f->a, nb(&c), 5001, &p, NULL), OTA_OK); /* stale */
	assert_memory_equal(&p, &c, sizeof c);
	assert_int_equal(hits_of(f->a), h0 + 2);
	/* the commit decides: nothing stale is ever accepted */
	assert_ota(ota_nonce_store_consume(f->a, nb(&c), &binds[0], 5002, NULL, NULL),
	           OTA_ERR_NONCE_UNKNOWN);
	ota_nonce_op op;
	memset(&op, 0, sizeof op);
	op.kind = OTA_NONCE_OP_ADMIT;
	op.nonce = nb(&c);
	op.expect = &binds[0];
	op.boundary = "b";
	op.record_id = "r";
	op.challenge_row = c.row;
	op.attestation = ota_bytes_make("att", 3);
	op.acceptance = ota_bytes_make("acc", 3);
	assert_ota(ota_nonce_store_commit_batch(f->a, &op, 1, 5002, NULL), OTA_OK);
	assert_ota(op.result, OTA_ERR_NONCE_UNKNOWN);
	/* purged through the handle (expiry 5100 + skew 5), it is gone */
	assert_ota(ota_nonce_store_purge(f->a, 5104, NULL, NULL), OTA_OK);
	assert_ota(ota_nonce_store_peek(f->a, nb(&c), 5104, &p, NULL), OTA_ERR_NONCE_EXPIRED);
	assert_ota(ota_nonce_store_purge(f->a, 5105, NULL, NULL), OTA_OK);
	assert_ota(ota_nonce_store_peek(f->a, nb(&c), 5105, &p, NULL), OTA_ERR_NONCE_UNKNOWN);
	assert_int_equal(entries_of(f->a), 0);
}

/* Consumed through another handle: the issuing handle's peek still says
 * live (it cannot know), its commit refuses the replay. Consumed through
 * the issuing handle: replayed from memory, as sqlite says. */
static void test_stale_entry_only_delays_refusal(void **state)
{
	fixture *f = *state;
	ota_challenge c, d, p;
	assert_ota(ota_nonce_store_issue(f->a, &binds[1], 0, 100, 5000, &c, NULL), OTA_OK);
	assert_ota(ota_nonce_store_issue(f->a, &binds[1], 0, 100, 5000, &d, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->b, nb(&c), NULL, 5001, NULL, NULL), OTA_OK);
	assert_ota(ota_nonce_store_peek(f->a, nb(&c), 5002, &p, NULL), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->a, nb(&c), NULL, 5002, NULL, NULL),
	           OTA_ERR_NONCE_REPLAYED);
	uint64_t h0 = hits_of(f->a);
	assert_ota(ota_nonce_store_consume(f->a, nb(&d), NULL, 5003, NULL, NULL), OTA_OK);
	assert_ota(peek_both(f, nb(&d), 5004), OTA_ERR_NONCE_REPLAYED);
	assert_int_equal(hits_of(f->a), h0 + 1);
}

/* A store without the cache (as after a failed allocation) peeks sqlite. */
static void test_no_cache(void **state)
{
	fixture *f = *state;
	nonce_store_peek_cache_reset(f->a, 0, 0);
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(f->a, &binds[0], 0, 100, 5000, &c, NULL), OTA_OK);
	assert_ota(peek_both(f, nb(&c), 5001), OTA_OK);
	assert_ota(ota_nonce_store_consume(f->a, nb(&c), NULL, 5001, NULL, NULL), OTA_OK);
	assert_ota(peek_both(f, nb(&c), 5001), OTA_ERR_NONCE_REPLAYED);
	assert_int_equal(hits_of(f->a), 0);
}

/* ---- threads ---- */

#define CONC_N 3000

typedef struct conc {
	fixture *f;
	ota_challenge rec[CONC_N];
	atomic_size_t consumed; /* rec[0..consumed) have been consumed (committed) */
	atomic_bool stop;
	atomic_uint errors;
	atomic_ulong peeks;
} conc;

static void *peeker(void *arg)
{
	conc *c = arg;
	uint64_t x = (uint64_t)(uintptr_t)&x | 1;
	while (!atomic_load(&c->stop)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t i = (size_t)(x % CONC_N);
		size_t done = atomic_load(&c->consumed);
		ota_challenge p;
		ota_err e = ota_nonce_store_peek(c->f->a, nb(&c->rec[i]), 1001, &p, NULL);
		/* consumed before the peek began: replayed, no stale "live" */
		if (i < done && e != OTA_ERR_NONCE_REPLAYED)
			atomic_fetch_add(&c->errors, 1);
		else if (e == OTA_OK && memcmp(&p, &c->rec[i], sizeof p) != 0)
			atomic_fetch_add(&c->errors, 1);
		else if (e != OTA_OK && e != OTA_ERR_NONCE_REPLAYED)
			atomic_fetch_add(&c->errors, 1);
		atomic_fetch_add(&c->peeks, 1);
	}
	return NULL;
}

static void *issuer(void *arg)
{
	conc *c = arg;
	while (!atomic_load(&c->stop)) {
		ota_challenge n, p;
		if (ota_nonce_store_issue(c->f->a, &binds[2], 0, 100, 1000, &n, NULL) != OTA_OK ||
		    ota_nonce_store_peek(c->f->a, nb(&n), 1001, &p, NULL) != OTA_OK ||
		    memcmp(&p, &n, sizeof p) != 0)
			atomic_fetch_add(&c->errors, 1);
		uint64_t del = 1;
		if (ota_nonce_store_purge(c->f->a, 1001, &del, NULL) != OTA_OK || del != 0)
			atomic_fetch_add(&c->errors, 1);
	}
	return NULL;
}

static void test_threads(void **state)
{
	fixture *f = *state;
	conc *c = calloc(1, sizeof *c);
	assert_non_null(c);
	c->f = f;
	ota_nonce_op ops[100];
	for (size_t i = 0; i < CONC_N; i += 100) {
		memset(ops, 0, sizeof ops);
		for (size_t k = 0; k < 100; k++) {
			ops[k].kind = OTA_NONCE_OP_ISSUE;
			ops[k].binding = &binds[(i + k) % 3];
			ops[k].ttl = 100;
		}
		assert_ota(ota_nonce_store_commit_batch(f->a, ops, 100, 1000, NULL), OTA_OK);
		for (size_t k = 0; k < 100; k++) {
			assert_ota(ops[k].result, OTA_OK);
			c->rec[i + k] = ops[k].challenge;
		}
	}
	pthread_t th[4];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, peeker, c), 0);
	assert_int_equal(pthread_create(&th[3], NULL, issuer, c), 0);
	/* the group-commit side: consumes and admissions in order, batches of 10 */
	char ids[10][32];
	for (size_t i = 0; i < CONC_N; i += 10) {
		memset(ops, 0, sizeof ops);
		for (size_t k = 0; k < 10; k++) {
			ota_nonce_op *op = &ops[k];
			op->nonce = nb(&c->rec[i + k]);
			op->expect = &binds[(i + k) % 3];
			if (k % 2) {
				op->kind = OTA_NONCE_OP_CONSUME;
			} else {
				op->kind = OTA_NONCE_OP_ADMIT;
				snprintf(ids[k], sizeof ids[k], "r%zu", i + k);
				op->boundary = ids[k];
				op->record_id = ids[k];
				op->challenge_row = c->rec[i + k].row;
				op->attestation = ota_bytes_make("att", 3);
				op->acceptance = ota_bytes_make("acc", 3);
			}
		}
		assert_ota(ota_nonce_store_commit_batch(f->a, ops, 10, 1001, NULL), OTA_OK);
		for (size_t k = 0; k < 10; k++)
			assert_ota(ops[k].result, OTA_OK);
		atomic_store(&c->consumed, i + 10);
	}
	atomic_store(&c->stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	print_message("%lu peeks in threads, %llu cache hits\n", atomic_load(&c->peeks),
	              (unsigned long long)hits_of(f->a));
	assert_int_equal(atomic_load(&c->errors), 0);
	assert_true(atomic_load(&c->peeks) > 1000);
	for (size_t i = 0; i < CONC_N; i++)
		assert_ota(peek_both(f, nb(&c->rec[i]), 1001), OTA_ERR_NONCE_REPLAYED);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_differential, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_of_consumed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_differential_small_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peek_answers_from_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_entry_only_delays_refusal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
