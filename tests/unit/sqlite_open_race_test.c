/*
 * Processes opening the same new database file at the same instant: all
 * must succeed (ota_sqlite_wal). Turning a new file to WAL takes a lock
 * sqlite does not wait for, and without the retry about 3 rounds in 100 of
 * four openers failed with "database is locked", for the lease database
 * (`ota run` and `ota cleanup`, or two runs, on a machine's first use) and
 * for the nonce store alike. Each round is a fresh file and all OPENERS
 * start at once (a pipe as barrier); ROUNDS makes a regression show with
 * high probability.
 */
#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ota/nonce.h"
#include "ota/oci.h"
#include "ota/sqlite.h"

#define ROUNDS 60
#define OPENERS 4

typedef bool (*opener)(const char *path, char *why, size_t cap);

static bool open_lease(const char *path, char *why, size_t cap)
{
	json_t *rows = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_lease_list(path, false, &rows, &e);
	json_decref(rows);
	if (rc != OTA_OK)
		snprintf(why, cap, "%s: %s", ota_err_name(rc), e.what);
	return rc == OTA_OK;
}

static bool open_nonce(const char *path, char *why, size_t cap)
{
	ota_nonce_opts o;
	ota_nonce_opts_init(&o);
	o.sync = OTA_NONCE_SYNC_NORMAL;
	ota_nonce_store *s = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_nonce_store_open(path, &o, &s, &e);
	ota_nonce_store_close(s);
	if (rc != OTA_OK)
		snprintf(why, cap, "%s: %s", ota_err_name(rc), e.what);
	return rc == OTA_OK;
}

/* Runs ROUNDS rounds of OPENERS simultaneous openers; returns the failures. */
static int race(opener fn, const char *name)
{
	char *dir = test_tmpdir();
	int failures = 0;
	for (int round = 0; round < ROUNDS; round++) {
		char path[600];
		snprintf(path, sizeof path, "%s/%s-%d.db", dir, name, round);
		int go[2];
		assert_int_equal(pipe(go), 0);
		pid_t kids[OPENERS];
		for (int k = 0; k < OPENERS; k++) {
			kids[k] = fork();
			assert_true(kids[k] >= 0);
			if (kids[k] == 0) {
				close(go[1]);
				char c;
				if (read(go[0], &c, 1) != 0) /* the barrier: end of file */
					_exit(2);
				char why[300] = "";
				bool ok = fn(path, why, sizeof why);
				if (!ok)
					fprintf(stderr, "round %d: %s\n", round, why);
				_exit(ok ? 0 : 1);
			}
		}
		close(go[0]);
		close(go[1]); /* both start */
		for (int k = 0; k < OPENERS; k++) {
			int st = 0;
			assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
			assert_true(WIFEXITED(st));
			failures += WEXITSTATUS(st) != 0;
		}
	}
	test_rmtree(dir);
	free(dir);
	return failures;
}

static void test_lease_db(void **state)
{
	(void)state;
	assert_int_equal(race(open_lease, "leases"), 0);
}

static void test_nonce_store(void **state)
{
	(void)state;
	assert_int_equal(race(open_nonce, "nonces"), 0);
}

/* An in-memory database cannot be WAL: refused, not taken for WAL. */
static void test_not_wal(void **state)
{
	(void)state;
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(ota_sqlite_wal(db), SQLITE_ERROR);
	sqlite3_close(db);
	char *dir = test_tmpdir();
	char path[600];
	snprintf(path, sizeof path, "%s/f.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(ota_sqlite_wal(db), SQLITE_OK);
	sqlite3_close(db);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lease_db),
		cmocka_unit_test(test_nonce_store),
		cmocka_unit_test(test_not_wal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
