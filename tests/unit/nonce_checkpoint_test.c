/*
 * The nonce store's background checkpointer (nonce-store/store.c,
 * CKPT_FRAMES): WAL checkpoints run on a thread of the store handle with a
 * connection of its own, not inside the writer's COMMIT; a RESTART keeps
 * the WAL from growing under a load that never pauses; the writer falls
 * back to checkpointing itself at the hard limit; and nothing committed is
 * lost or damaged on the way.
 */
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nonce-store/nonce_internal.h"
#include "ota/nonce.h"

static const ota_nonce_binding bind_a = {"txn-a", "issuer:acme", "oci_local"};

enum { BATCHES = 300, PER = 8, ATT = 2000 };

static off_t wal_size(const char *path)
{
	char w[600];
	snprintf(w, sizeof w, "%s-wal", path);
	struct stat st;
	return stat(w, &st) == 0 ? st.st_size : 0;
}

/* Commits `batches` batches of PER challenges, each then admitted with an
 * ATT-byte attestation (a few WAL frames per record), from record `from` on;
 * pause_us after each commit (a disk's fsync: /tmp may have none, and a
 * writer that never waits outruns any checkpointer). */
static void load_paced(ota_nonce_store *s, int from, int batches, long pause_us)
{
	struct timespec pause = {0, pause_us * 1000};
	static uint8_t att[ATT];
	memset(att, 0x5a, sizeof att);
	ota_nonce_op ops[PER];
	ota_challenge c[PER];
	char ids[PER][24], bnd[PER][24];
	for (int b = 0; b < batches; b++) {
		memset(ops, 0, sizeof ops);
		for (int i = 0; i < PER; i++) {
			ops[i].kind = OTA_NONCE_OP_ISSUE;
			ops[i].binding = &bind_a;
		}
		assert_ota(ota_nonce_store_commit_batch(s, ops, PER, 1000, NULL), OTA_OK);
		if (pause_us > 0)
			nanosleep(&pause, NULL);
		for (int i = 0; i < PER; i++) {
			assert_ota(ops[i].result, OTA_OK);
			c[i] = ops[i].challenge;
			int k = from + b * PER + i;
			snprintf(ids[i], sizeof ids[i], "rec-%d", k);
			snprintf(bnd[i], sizeof bnd[i], "bd-%d", k);
			memset(&ops[i], 0, sizeof ops[i]);
			ops[i].kind = OTA_NONCE_OP_ADMIT;
			ops[i].nonce = ota_bytes_make(c[i].nonce, c[i].nonce_len);
			ops[i].expect = &bind_a;
			ops[i].boundary = bnd[i];
			ops[i].record_id = ids[i];
			ops[i].attestation = ota_bytes_make(att, sizeof att);
			ops[i].acceptance = ota_bytes_make(att, 100);
			ops[i].accepted_at = 1001;
		}
		assert_ota(ota_nonce_store_commit_batch(s, ops, PER, 1001, NULL), OTA_OK);
		if (pause_us > 0)
			nanosleep(&pause, NULL);
		for (int i = 0; i < PER; i++)
			assert_ota(ops[i].result, OTA_OK);
	}
}

static void load(ota_nonce_store *s, int from, int batches)
{
	load_paced(s, from, batches, 0);
}

enum { PASSES, RESTARTS, BUSY };

/* Waits (up to 10 s) for one of the checkpointer's counts (PASSES,
 * RESTARTS: done; BUSY: RESTARTs that found the lock taken) to reach
 * `want`; returns it. */
static uint64_t wait_stat(ota_nonce_store *s, int which, uint64_t want)
{
	uint64_t n[3] = {0, 0, 0}, writer = 0;
	for (int i = 0; i < 1000; i++) {
		nonce_store_checkpoint_stats(s, &n[PASSES], &n[RESTARTS], &n[BUSY], &writer);
		if (n[which] >= want)
			break;
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	return n[which];
}

static uint64_t wait_restarts(ota_nonce_store *s, uint64_t want)
{
	return wait_stat(s, RESTARTS, want);
}

/* Opens the store at p with no checkpoint in reach, commits two batches
 * and opens a reader in another connection whose read transaction (and
 * snapshot, ending inside the WAL) stays until its COMMIT. */
static sqlite3 *hold_reader(const char *p, ota_nonce_store **s)
{
	assert_ota(ota_nonce_store_open(p, NULL, s, NULL), OTA_OK);
	nonce_store_checkpoint_limits(*s, 1 << 30, 16, 1 << 30, 3600 * 1000);
	load(*s, 0, 2);
	sqlite3 *rd = NULL;
	assert_int_equal(sqlite3_open_v2(p, &rd, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_exec(rd, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(rd, "SELECT count(*) FROM acceptances", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 2 * PER);
	sqlite3_finalize(st);
	return rd;
}

/* Commits paced batches (1 ms after each commit), one at a time, from
 * record `from` on, until the checkpointer has restarted the WAL once:
 * each commit wakes it, and a RESTART that found the writer busy (a
 * writer that never pauses can keep the lock for the whole
 * CKPT_BUSY_MS, under TSan most of all) is only tried again at the next
 * wake-up. Fails past `max` batches; returns the number committed. */
static int load_until_restart(ota_nonce_store *s, int from, int max)
{
	uint64_t passes = 0, restarts = 0, busy = 0, writer = 0;
	for (int b = 0; b < max; b++) {
		load_paced(s, from + b * PER, 1, 1000);
		for (int i = 0; i < 20 && restarts == 0; i++) {
			struct timespec d = {0, 5 * 1000 * 1000};
			nanosleep(&d, NULL);
			nonce_store_checkpoint_stats(s, &passes, &restarts, &busy, &writer);
		}
		if (restarts >= 1)
			return b + 1;
	}
	int rc_passive = -1, rc_restart = -1, log = -1, done = -1;
	nonce_store_checkpoint_last(s, &rc_passive, &rc_restart, &log, &done);
	fail_msg("no RESTART after %d paced batches (%llu passes, %llu busy, %llu by the writer; "
	         "the last pass: PASSIVE %d, RESTART %d, WAL %d frames, %d copied)",
	         max, (unsigned long long)passes, (unsigned long long)busy,
	         (unsigned long long)writer, rc_passive, rc_restart, log, done);
	return -1;
}

/*
 * The same load on two stores: one that never checkpoints while open (the
 * thresholds out of reach: its WAL holds every frame), one whose
 * checkpointer is due every 32 frames (its writer pausing 1 ms after each
 * commit, as a disk's fsync would). The second's WAL never grows to
 * half of the first's: the checkpointer copied and restarted it behind the
 * writer, who never checkpointed itself. Both then read back every record.
 */
static void test_background_restart(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p1[512], p2[512];
	snprintf(p1, sizeof p1, "%s/none.db", dir);
	snprintf(p2, sizeof p2, "%s/bg.db", dir);
	ota_nonce_store *a = NULL, *b = NULL;
	assert_ota(ota_nonce_store_open(p1, NULL, &a, NULL), OTA_OK);
	assert_ota(ota_nonce_store_open(p2, NULL, &b, NULL), OTA_OK);
	nonce_store_checkpoint_limits(a, 1 << 30, 16, 1 << 30, 1000);
	nonce_store_checkpoint_limits(b, 32, 16, 1 << 30, 1000);
	load(a, 0, BATCHES);
	off_t all = wal_size(p1);
	/* restarts happen while the load runs: two rounds, each waited out */
	load_paced(b, 0, BATCHES / 2, 1000);
	assert_true(wait_restarts(b, 1) >= 1);
	load_paced(b, BATCHES / 2 * PER, BATCHES - BATCHES / 2, 1000);
	uint64_t passes = 0, restarts = 0, busy = 0, writer = 1;
	nonce_store_checkpoint_stats(b, &passes, &restarts, &busy, &writer);
	assert_true(passes >= 1);
	assert_true(restarts >= 1);
	assert_int_equal(writer, 0);
	off_t bg = wal_size(p2);
	print_message("WAL without checkpoints %lld bytes, with the checkpointer %lld (%llu passes,"
	              " %llu restarts)\n",
	              (long long)all, (long long)bg, (unsigned long long)passes,
	              (unsigned long long)restarts);
	assert_true(all > 4 * 1024 * 1024);
	assert_true(bg < all / 2);
	ota_nonce_store_close(a);
	ota_nonce_store_close(b);
	for (int k = 0; k < 2; k++) {
		const char *p = k == 0 ? p1 : p2;
		assert_int_equal(test_db_int(p, "SELECT count(*) FROM acceptances"), BATCHES * PER);
		assert_int_equal(test_db_int(p, "SELECT count(*) FROM challenges WHERE consumed_at = 1001"),
		                 BATCHES * PER);
		assert_int_equal(test_db_int(p, "SELECT sum(length(attestation)) FROM acceptances"),
		                 (int64_t)BATCHES * PER * ATT);
		test_db_integrity_ok(p);
	}
	test_rmtree(dir);
	free(dir);
}

/*
 * A reader in another connection keeps an old snapshot, begun while the
 * WAL held frames no checkpoint had copied (so it reads through the WAL):
 * no checkpoint can copy past it and no RESTART can finish. Every commit
 * wakes the checkpointer, but a RESTART, which holds the writer lock while
 * it waits for the reader, is tried at most once per back-off (without
 * it, one per wake-up, each holding the writer up to 50 ms). Once the WAL
 * reaches the hard limit the writer checkpoints itself after each commit
 * (as sqlite's own automatic checkpoint would), and its commits go on.
 * When the reader lets go, the checkpointer restarts the WAL again.
 */
static void test_reader_holds_log(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p[512];
	snprintf(p, sizeof p, "%s/held.db", dir);
	ota_nonce_store *s = NULL;
	sqlite3 *rd = hold_reader(p, &s);
	sqlite3_stmt *st = NULL;
	/* every commit now wakes the checkpointer (a back-off longer than the
	 * test) */
	nonce_store_checkpoint_limits(s, 32, 16, 1 << 30, 3600 * 1000);
	load(s, 2 * PER, 20);
	assert_true(wait_stat(s, PASSES, 1) >= 1);
	load(s, 22 * PER, 10);
	uint64_t passes = 0, restarts = 0, busy = 0, writer = 0;
	nonce_store_checkpoint_stats(s, &passes, &restarts, &busy, &writer);
	print_message("held: %llu passes, %llu restarts, %llu found the reader, %llu by the "
	              "writer\n",
	              (unsigned long long)passes, (unsigned long long)restarts,
	              (unsigned long long)busy, (unsigned long long)writer);
	assert_int_equal(restarts, 0); /* none past the reader */
	assert_int_equal(busy, 1);     /* tried once, then backed off */
	assert_int_equal(writer, 0);
	/* the hard limit: the writer checkpoints itself, and goes on */
	nonce_store_checkpoint_limits(s, 32, 16, 64, 3600 * 1000);
	load(s, 32 * PER, 10);
	nonce_store_checkpoint_stats(s, &passes, &restarts, &busy, &writer);
	assert_true(writer >= 1);
	assert_int_equal(restarts, 0);
	assert_true(wal_size(p) > 64 * 4096); /* the WAL grew past it */
	/* the reader still sees its snapshot, whole */
	assert_int_equal(sqlite3_prepare_v2(rd, "SELECT count(*) FROM acceptances", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 2 * PER);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(rd);
	/* let go: with no back-off and the hard limit out of reach, the
	 * checkpointer restarts the WAL again */
	nonce_store_checkpoint_limits(s, 32, 16, 1 << 30, 0);
	int batches = load_until_restart(s, 42 * PER, 200);
	ota_nonce_store_close(s);
	assert_int_equal(test_db_int(p, "SELECT count(*) FROM acceptances"), (42 + batches) * PER);
	test_db_integrity_ok(p);
	test_rmtree(dir);
	free(dir);
}

/*
 * A RESTART that met a reader is tried again by the checkpointer itself
 * once its back-off is over, with no commit to wake it: the store went
 * idle, the reader let go, and the WAL is restarted all the same.
 */
static void test_busy_restart_retried(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p[512];
	snprintf(p, sizeof p, "%s/retry.db", dir);
	ota_nonce_store *s = NULL;
	sqlite3 *rd = hold_reader(p, &s);
	/* a back-off of 300 ms: eight retries in a row outlast what follows */
	nonce_store_checkpoint_limits(s, 32, 16, 1 << 30, 300);
	load(s, 2 * PER, 4);
	assert_true(wait_stat(s, BUSY, 1) >= 1);
	uint64_t passes = 0, restarts = 0, busy = 0, writer = 0;
	nonce_store_checkpoint_stats(s, &passes, &restarts, &busy, &writer);
	assert_int_equal(restarts, 0);
	assert_int_equal(sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(rd);
	/* no commit from here on */
	assert_true(wait_restarts(s, 1) >= 1);
	nonce_store_checkpoint_stats(s, &passes, &restarts, &busy, &writer);
	assert_int_equal(writer, 0);
	ota_nonce_store_close(s);
	assert_int_equal(test_db_int(p, "SELECT count(*) FROM acceptances"), 6 * PER);
	test_db_integrity_ok(p);
	test_rmtree(dir);
	free(dir);
}

/* Closing a store while its checkpointer is busy waits for it, and the
 * file is whole; over and over (ASan, TSan-free by construction: no
 * shared state outside the two mutexes). */
static void test_close_while_busy(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p[512];
	snprintf(p, sizeof p, "%s/close.db", dir);
	for (int round = 0; round < 5; round++) {
		ota_nonce_store *s = NULL;
		assert_ota(ota_nonce_store_open(p, NULL, &s, NULL), OTA_OK);
		nonce_store_checkpoint_limits(s, 8, 4, 1 << 30, 1000);
		load(s, round * 20 * PER, 20);
		ota_nonce_store_close(s);
		assert_int_equal(test_db_int(p, "SELECT count(*) FROM acceptances"), (round + 1) * 20 * PER);
		test_db_integrity_ok(p);
	}
	test_rmtree(dir);
	free(dir);
}

/* The checkpointer thread of an open store, by its name: its SigBlk line
 * of /proc/self/task/TID/status once it sleeps (waiting for work: a new
 * thread runs with every signal blocked until glibc has set it up and
 * given it its creator's mask), or "" when there is no such thread.
 * Threads whose TID is in skip[0..nskip) are not looked at (those of a
 * store an earlier failed test left open). Sets *tid to the thread's. */
static void ckpt_sigblk(char *out, size_t cap, const long *skip, int nskip, long *tid)
{
	out[0] = '\0';
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		long t = strtol(de->d_name, NULL, 10);
		bool skipped = false;
		for (int i = 0; i < nskip; i++)
			skipped = skipped || skip[i] == t;
		if (skipped)
			continue;
		char path[300], comm[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) == NULL)
			comm[0] = '\0';
		fclose(f);
		if (strcmp(comm, "ota-checkpoint\n") != 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
		for (int tries = 0; tries < 200; tries++) {
			f = fopen(path, "r");
			char line[256];
			bool sleeping = false;
			while (f != NULL && fgets(line, sizeof line, f) != NULL) {
				if (strncmp(line, "State:", 6) == 0 && strstr(line, "S (sleeping)") != NULL)
					sleeping = true;
				if (strncmp(line, "SigBlk:", 7) == 0 &&
				    snprintf(out, cap, "%s", line + 7) >= (int)cap)
					out[0] = '\0'; /* a mask is 16 hex digits: never */
			}
			if (f != NULL)
				fclose(f);
			if (sleeping) {
				if (tid != NULL)
					*tid = t;
				break;
			}
			out[0] = '\0';
			struct timespec pause = {0, 5 * 1000 * 1000};
			nanosleep(&pause, NULL);
		}
	}
	closedir(d);
}

/*
 * The checkpointer blocks every signal: a process's handlers (ota run's
 * SIGINT and SIGTERM, which must interrupt the main thread's waits) keep
 * getting them on the threads that were there, whatever the opener's mask.
 */
static void test_signals_blocked(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p[512];
	snprintf(p, sizeof p, "%s/sig.db", dir);
	/* checkpointers already running (stores earlier failed tests left
	 * open) are not this store's */
	char blk[128];
	long before[8];
	int nskip = 0;
	for (;;) {
		long t = -1;
		ckpt_sigblk(blk, sizeof blk, before, nskip, &t);
		if (blk[0] == '\0' || nskip == 8)
			break;
		before[nskip++] = t;
	}
	/* the opener blocks nothing (as ota run's main thread) */
	sigset_t none, old;
	sigemptyset(&none);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &none, &old), 0);
	ota_nonce_store *s = NULL;
	assert_ota(ota_nonce_store_open(p, NULL, &s, NULL), OTA_OK);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	ckpt_sigblk(blk, sizeof blk, before, nskip, NULL);
	assert_true(blk[0] != '\0'); /* the thread runs */
	unsigned long long mask = strtoull(blk, NULL, 16);
	/* every signal the kernel can block (all but SIGKILL and SIGSTOP) */
	assert_true((mask & (1ull << (SIGINT - 1))) != 0);
	assert_true((mask & (1ull << (SIGTERM - 1))) != 0);
	assert_true((mask & (1ull << (SIGCHLD - 1))) != 0);
	assert_true((mask & (1ull << (SIGALRM - 1))) != 0);
	ota_nonce_store_close(s);
	ckpt_sigblk(blk, sizeof blk, before, nskip, NULL);
	assert_true(blk[0] == '\0'); /* joined on close */
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_background_restart),
		cmocka_unit_test(test_reader_holds_log),
		cmocka_unit_test(test_busy_restart_retried),
		cmocka_unit_test(test_close_while_busy),
		cmocka_unit_test(test_signals_blocked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
