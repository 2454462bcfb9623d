/*
 * bench_nonce: durable single-use consumes per second through the group
 * committer (many waiting callers, one transaction and one fsync per batch,
 * nothing acknowledged before its COMMIT), against, in the same run and on
 * the same file system:
 *   - the raw fsync rate (write 64 bytes + fdatasync in a loop), and
 *   - a raw sqlite loop (WAL, synchronous=FULL, one DELETE ... RETURNING
 *     per transaction).
 * Usage: bench_nonce [DIR] (default: a fresh directory under the build tree
 * or /var/tmp, not tmpfs).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ota/nonce.h"

#define SECONDS 2.0
#define CLIENTS 512
#define N_CHALLENGES 600000

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void emit(const char *bench, double v, const char *unit, const char *base, double bv)
{
	printf("{\"bench\": \"%s\", \"value\": %.0f, \"unit\": \"%s\", \"baseline\": \"%s\", "
	       "\"baseline_value\": %.0f, \"ratio\": %.2f}\n",
	       bench, v, unit, base, bv, bv > 0 ? v / bv : 0.0);
	fflush(stdout);
}

static double raw_fsync_rate(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/fsync.bin", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	char buf[64];
	memset(buf, 'x', sizeof buf);
	long n = 0;
	double t0 = now_s(), t;
	do {
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fdatasync(fd) != 0)
			break;
		n++;
		t = now_s();
	} while (t - t0 < SECONDS);
	close(fd);
	unlink(path);
	return (double)n / (now_s() - t0);
}

static double raw_sqlite_rate(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/raw.db", dir);
	sqlite3 *db = NULL;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return 0;
	sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
	                 "CREATE TABLE n(id BLOB PRIMARY KEY, exp INTEGER) WITHOUT ROWID;",
	             NULL, NULL, NULL);
	enum { N = 100000 };
	uint8_t (*ids)[32] = malloc(sizeof(*ids) * N);
	if (ids == NULL || getrandom(ids, sizeof(*ids) * N, 0) != (ssize_t)(sizeof(*ids) * N))
		return 0;
	sqlite3_stmt *ins = NULL, *del = NULL;
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO n VALUES(?1, 2000000000)", -1, &ins, NULL);
	for (int i = 0; i < N; i++) {
		sqlite3_bind_blob(ins, 1, ids[i], 32, SQLITE_STATIC);
		sqlite3_step(ins);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "DELETE FROM n WHERE id = ?1 AND exp > ?2 RETURNING id", -1, &del, NULL);
	long n = 0;
	double t0 = now_s();
	while (n < N && now_s() - t0 < SECONDS) {
		sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		sqlite3_bind_blob(del, 1, ids[n], 32, SQLITE_STATIC);
		sqlite3_bind_int64(del, 2, 1000);
		int won = sqlite3_step(del) == SQLITE_ROW;
		sqlite3_reset(del);
		sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		if (!won)
			break;
		n++;
	}
	double rate = (double)n / (now_s() - t0);
	sqlite3_finalize(del);
	sqlite3_close(db);
	free(ids);
	return rate;
}

typedef struct shared {
	ota_nonce_committer *c;
	ota_challenge *cs;
	atomic_long next;
	atomic_long ok;
	atomic_long bad;
	double deadline;
} shared;

static void *client(void *p)
{
	shared *s = p;
	for (;;) {
		if (now_s() > s->deadline)
			return NULL;
		long i = atomic_fetch_add(&s->next, 1);
		if (i >= N_CHALLENGES)
			return NULL;
		ota_nonce_op op;
		memset(&op, 0, sizeof op);
		op.kind = OTA_NONCE_OP_CONSUME;
		op.nonce = ota_bytes_make(s->cs[i].nonce, s->cs[i].nonce_len);
		if (ota_nonce_committer_run(s->c, &op) == OTA_OK)
			atomic_fetch_add(&s->ok, 1);
		else
			atomic_fetch_add(&s->bad, 1);
	}
}

int main(int argc, char **argv)
{
	char tmpl[512];
	const char *dir;
	if (argc > 1) {
		dir = argv[1];
	} else {
		snprintf(tmpl, sizeof tmpl, "/var/tmp/ota-bench-nonce-XXXXXX");
		dir = mkdtemp(tmpl);
		if (dir == NULL) {
			perror("mkdtemp");
			return 3;
		}
	}
	double fs = raw_fsync_rate(dir);
	double raw = raw_sqlite_rate(dir);

	char path[512];
	snprintf(path, sizeof path, "%s/nonce.db", dir);
	ota_nonce_store *st = NULL;
	ota_error e;
	ota_error_clear(&e);
	if (ota_nonce_store_open(path, NULL, &st, &e) != OTA_OK) {
		fprintf(stderr, "bench_nonce: %s: %s\n", ota_err_name(e.code), e.what);
		return 3;
	}
	ota_challenge *cs = calloc(N_CHALLENGES, sizeof *cs);
	ota_nonce_op *ops = calloc(2000, sizeof *ops);
	if (cs == NULL || ops == NULL)
		return 3;
	const ota_nonce_binding b = {"txn-bench", "issuer:bench", "oci_remote"};
	int64_t t_issue = (int64_t)time(NULL);
	for (long k = 0; k < N_CHALLENGES; k += 2000) {
		memset(ops, 0, 2000 * sizeof *ops);
		for (int i = 0; i < 2000; i++) {
			ops[i].kind = OTA_NONCE_OP_ISSUE;
			ops[i].binding = &b;
		}
		if (ota_nonce_store_commit_batch(st, ops, 2000, t_issue, &e) != OTA_OK)
			return 3;
		for (int i = 0; i < 2000; i++)
			cs[k + i] = ops[i].challenge;
	}
	/* reopen: the last close checkpoints the issue phase's WAL, so the
	 * timed phase does not pay for it (FULL epochs keep challenges valid) */
	ota_nonce_store_close(st);
	st = NULL;
	if (ota_nonce_store_open(path, NULL, &st, &e) != OTA_OK)
		return 3;
	ota_nonce_committer *c = NULL;
	if (ota_nonce_committer_new(st, 1024, NULL, &c) != OTA_OK)
		return 3;
	shared s;
	memset(&s, 0, sizeof s);
	s.c = c;
	s.cs = cs;
	pthread_t th[CLIENTS];
	double t0 = now_s();
	s.deadline = t0 + SECONDS;
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&th[i], NULL, client, &s);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	double dt = now_s() - t0;
	uint64_t batches = 0, nops = 0;
	ota_nonce_committer_stats(c, &batches, &nops);
	ota_nonce_committer_free(c);
	double rate = (double)atomic_load(&s.ok) / dt;
	fprintf(stderr, "bench_nonce: %ld consumed (%ld refused) in %.2f s, %llu transactions "
	                "(%.1f consumes per fsync), %d waiting clients\n",
	        (long)atomic_load(&s.ok), (long)atomic_load(&s.bad), dt,
	        (unsigned long long)batches, batches ? (double)nops / (double)batches : 0.0, CLIENTS);
	/* the engine alone: one caller, 1024 consumes per transaction */
	long from = atomic_load(&s.next);
	if (from > N_CHALLENGES)
		from = N_CHALLENGES;
	ota_nonce_op *bops = calloc(1024, sizeof *bops);
	long done = 0;
	double t1 = now_s();
	while (bops != NULL && from + 1024 <= N_CHALLENGES && now_s() - t1 < SECONDS) {
		memset(bops, 0, 1024 * sizeof *bops);
		for (int i = 0; i < 1024; i++) {
			bops[i].kind = OTA_NONCE_OP_CONSUME;
			bops[i].nonce = ota_bytes_make(cs[from + i].nonce, cs[from + i].nonce_len);
		}
		if (ota_nonce_store_commit_batch(st, bops, 1024, (int64_t)time(NULL), &e) != OTA_OK)
			break;
		for (int i = 0; i < 1024; i++)
			done += bops[i].result == OTA_OK;
		from += 1024;
	}
	double brate = (double)done / (now_s() - t1);
	free(bops);
	emit("nonce_consume_durable_group_commit", rate, "ops/s", "raw_fsync", fs);
	emit("nonce_consume_durable_batch1024", brate, "ops/s", "raw_fsync", fs);
	emit("nonce_consume_durable_group_commit", rate, "ops/s", "sqlite_wal_full_txn_per_consume",
	     raw);
	ota_nonce_store_close(st);
	free(cs);
	free(ops);
	if (argc <= 1) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
		if (system(cmd) != 0)
			return 3;
	}
	return atomic_load(&s.bad) == 0 ? 0 : 1;
}
