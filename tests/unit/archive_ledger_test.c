/*
 * ota-verify archive --ledger and --require-status as a merge gate runs
 * them, on the committed vectors (vectors/archive/a.json, its pinned root and
 * FIXTURE runner key; a second archive with the same challenges is a.json's
 * receipt signed again, a new receipt identity). No root.
 *
 *   - a COMMIT that fails (the disk is full: a VFS whose WAL writes fail)
 *     fails the verification and records nothing; it passed, and the next
 *     archive with the same nonces passed too;
 *   - a ledger another process holds the write lock of is waited for
 *     (making it WAL did not wait: database_error at once);
 *   - a ledger that is not there is archive_ledger_missing and never made
 *     without ledger_init (a mistyped path started a fresh ledger, and a
 *     replayed archive passed); so are a zero-byte file, an empty database
 *     and a symlink to nothing (nothing made through it); a directory or
 *     FIFO is not_regular_file; with ledger_init, threads making one new
 *     ledger at once all get the one complete ledger, nothing left beside;
 *   - a ledger of another schema version, a stamped ledger without its table
 *     or another tool's sqlite file is refused and left as it was; a ledger
 *     of before the stamp is taken and stamped;
 *   - --require-status takes only the five statuses (else usage), and a
 *     refused report carries no status in its JSON.
 * The concurrency of many ota-verify processes is tests/cli/archive_ledger.sh.
 */
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_mutate.h"

/* ---- a VFS over the default one whose WAL writes fail while armed ---- */

static sqlite3_vfs *base_vfs;
static sqlite3_vfs shim_vfs;
static bool fail_wal;

typedef struct shim_file {
	sqlite3_file base;
	sqlite3_file *real; /* the base VFS's file, right after this struct */
	bool wal;
} shim_file;

#define REAL(f) (((shim_file *)(f))->real)

static int s_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int s_read(sqlite3_file *f, void *b, int n, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xRead(REAL(f), b, n, off);
}
static int s_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 off)
{
	if (((shim_file *)f)->wal && fail_wal)
		return SQLITE_FULL;
	return REAL(f)->pMethods->xWrite(REAL(f), b, n, off);
}
static int s_truncate(sqlite3_file *f, sqlite3_int64 n)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int s_sync(sqlite3_file *f, int flags)
{
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int s_size(sqlite3_file *f, sqlite3_int64 *n)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int s_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int s_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int s_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int s_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int s_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int s_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int s_shmmap(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, extend, pp);
}
static int s_shmlock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void s_shmbarrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int s_shmunmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static const sqlite3_io_methods shim_io = {
	2,        s_close,  s_read,   s_write,    s_truncate, s_sync,     s_size,
	s_lock,   s_unlock, s_reserved, s_fcntl,  s_sector,   s_devchar,  s_shmmap,
	s_shmlock, s_shmbarrier, s_shmunmap, NULL, NULL,
};

static int s_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out)
{
	(void)vfs;
	shim_file *s = (shim_file *)f;
	s->real = (sqlite3_file *)(s + 1);
	s->wal = (flags & SQLITE_OPEN_WAL) != 0;
	int rc = base_vfs->xOpen(base_vfs, name, s->real, flags, out);
	s->base.pMethods = s->real->pMethods != NULL ? &shim_io : NULL;
	return rc;
}

/* ---- fixture ---- */

static char *dir;
static json_t *a2; /* a.json with its receipt signed again: the same challenges */
static uint8_t nonce0[64];
static size_t nonce0_len;

static int setup(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof fx);
	size_t n = 0;
	uint8_t *b = test_read_src("vectors/archive/a.json", &n);
	fx.a = json_loadb((const char *)b, n, JSON_REJECT_DUPLICATES, NULL);
	free(b);
	fx.ra = receipt_of(fx.a);
	fx.pin_a = test_read_src("vectors/archive/a.json.root.json", &fx.pin_a_len);
	uint8_t *k = test_read_src("vectors/archive/a.json.runner.FIXTURE.pem", &n);
	ota_err rc = ota_key_load_pem(ota_bytes_make(k, n), &fx.runner_a, NULL);
	free(k);
	if (fx.a == NULL || fx.ra == NULL || rc != OTA_OK)
		return -1;
	a2 = json_deep_copy(fx.a);
	resign(a2, fx.ra);
	const char *nb = json_string_value(
	    json_object_get(json_array_get(json_object_get(fx.a, "challenges"), 0), "nonce"));
	uint8_t *raw = NULL;
	if (nb == NULL || ota_base64_decode(nb, strlen(nb), &raw, &nonce0_len) != OTA_OK ||
	    nonce0_len > sizeof nonce0) {
		free(raw);
		return -1;
	}
	memcpy(nonce0, raw, nonce0_len);
	free(raw);
	base_vfs = sqlite3_vfs_find(NULL);
	shim_vfs = *base_vfs;
	shim_vfs.zName = "ota-test-fail-wal";
	shim_vfs.szOsFile = (int)sizeof(shim_file) + base_vfs->szOsFile;
	shim_vfs.xOpen = s_open;
	shim_vfs.pNext = NULL;
	if (sqlite3_vfs_register(&shim_vfs, 1) != SQLITE_OK)
		return -1;
	dir = test_tmpdir();
	have_fixture = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sqlite3_vfs_unregister(&shim_vfs);
	test_rmtree(dir);
	free(dir);
	json_decref(a2);
	json_decref(fx.a);
	json_decref(fx.ra);
	free(fx.pin_a);
	ota_key_free(fx.runner_a);
	return 0;
}

static void ledger_path(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

/* The result of one integer query on the ledger (-1: it failed). */
static long long query(const char *file, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void make_db(const char *file, const char *sql)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(file, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void test_commit_failure(void **state)
{
	(void)state;
	char l[4096];
	ledger_path("full.db", l, sizeof l);
	make_db(l, "PRAGMA journal_mode = WAL; PRAGMA user_version = 1;"
	           "CREATE TABLE used_challenges(nonce BLOB PRIMARY KEY, challenge TEXT NOT NULL,"
	           " archive TEXT NOT NULL);");
	/* the disk fills up under the COMMIT: the verification fails, nothing recorded */
	fail_wal = true;
	ota_err first = OTA_OK;
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, &first), OTA_ERR_DB);
	assert_ota(first, OTA_ERR_DB);
	fail_wal = false;
	assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 0);
	/* with room again: recorded, so the same nonces in another archive are a replay */
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_OK);
	assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 9);
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_OK);
	assert_ota(verify_doc(a2, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	/* a failed COMMIT on an existing ledger: still refused, still nothing new */
	char l2[4096];
	ledger_path("full2.db", l2, sizeof l2);
	assert_ota(verify_doc(a2, fx.pin_a, fx.pin_a_len, l2, NULL), OTA_OK);
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l2, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	fail_wal = true;
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l2, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	fail_wal = false;
	assert_int_equal(query(l2, "SELECT count(DISTINCT archive) FROM used_challenges"), 1);
}

static void *release_later(void *arg)
{
	sqlite3 *db = arg;
	usleep(300 * 1000);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return NULL;
}

static void test_new_ledger_locked(void **state)
{
	(void)state;
	char l[4096];
	ledger_path("locked.db", l, sizeof l);
	/* another process holds the write lock of a new ledger (one that
	 * ledger_init made, not yet written to) */
	assert_ota(ota_archive_ledger_prepare(l, true, NULL), OTA_OK);
	sqlite3 *other = NULL;
	assert_int_equal(sqlite3_open(l, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, release_later, other), 0);
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_OK);
	pthread_join(t, NULL);
	assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 9);
}

static void test_schema(void **state)
{
	(void)state;
	char l[4096];
	/* a future schema: refused, untouched */
	ledger_path("v2.db", l, sizeof l);
	make_db(l, "PRAGMA user_version = 2; CREATE TABLE challenges_v2(nonce BLOB PRIMARY KEY);");
	ota_err first = OTA_OK;
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, &first), OTA_ERR_DB);
	assert_ota(first, OTA_ERR_DB);
	assert_int_equal(query(l, "SELECT count(*) FROM sqlite_master WHERE name = 'used_challenges'"), 0);
	assert_int_equal(query(l, "PRAGMA user_version"), 2);
	/* another tool's sqlite file (a lease database, say): no table added to it */
	ledger_path("other.db", l, sizeof l);
	make_db(l, "CREATE TABLE leases(id TEXT PRIMARY KEY);");
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_DB);
	assert_int_equal(query(l, "SELECT count(*) FROM sqlite_master"), 2); /* leases + its index */
	/* stamped, but its table is gone: refused, not started afresh */
	ledger_path("emptied.db", l, sizeof l);
	make_db(l, "PRAGMA user_version = 1; CREATE TABLE x(a); DROP TABLE x;");
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_DB);
	assert_int_equal(query(l, "SELECT count(*) FROM sqlite_master"), 0);
	/* a ledger from before the stamp keeps its records and is stamped */
	ledger_path("v0.db", l, sizeof l);
	make_db(l, "CREATE TABLE used_challenges(nonce BLOB PRIMARY KEY, challenge TEXT NOT NULL,"
	           " archive TEXT NOT NULL);");
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open(l, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO used_challenges VALUES(?1, 'c', 'sha256:"
	                                        "0000000000000000000000000000000000000000000000000000000000000000')",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, nonce0, (int)nonce0_len, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	assert_int_equal(query(l, "PRAGMA user_version"), 0); /* the refusal wrote nothing */
	make_db(l, "DELETE FROM used_challenges;");
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_OK);
	assert_int_equal(query(l, "PRAGMA user_version"), 1);
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, l, NULL), OTA_OK);
	assert_ota(verify_doc(a2, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
}

static ota_err verify_status(const char *status, const char *ledger, json_t **json)
{
	char *text = json_dumps(fx.a, JSON_COMPACT);
	assert_non_null(text);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.pinned = ota_bytes_make(fx.pin_a, fx.pin_a_len);
	o.require_status = status;
	o.ledger = ledger;
	ota_archive_report *r = NULL;
	ota_err rc = ota_archive_verify(ota_bytes_make(text, strlen(text)), &o, &r, NULL);
	if (json != NULL)
		*json = ota_archive_report_json(r);
	ota_archive_report_free(r);
	free(text);
	return rc;
}

static void test_require_status(void **state)
{
	(void)state;
	char l[4096];
	ledger_path("status.db", l, sizeof l);
	static const char *const unknown[] = {"Enforced_through_completion",
	                                      "enforced_through_completion ",
	                                      " enforced_through_completion",
	                                      "ENFORCED_THROUGH_COMPLETION",
	                                      "enforced",
	                                      "ok",
	                                      ""};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		json_t *j = NULL;
		assert_ota(verify_status(unknown[i], l, &j), OTA_ERR_USAGE);
		assert_true(json_is_false(json_object_get(j, "ok")));
		assert_true(json_is_null(json_object_get(j, "status")));
		json_decref(j);
	}
	assert_int_equal(access(l, F_OK), -1); /* the ledger was never opened */
	/* a ledger that is not there: refused before the status is looked at */
	assert_ota(verify_status("refused", l, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_int_equal(access(l, F_OK), -1);
	assert_ota(ota_archive_ledger_prepare(l, true, NULL), OTA_OK);
	static const char *const other[] = {"not_started", "enforcement_unknown_after_interruption",
	                                    "enforcement_lost", "refused"};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		json_t *j = NULL;
		assert_ota(verify_status(other[i], l, &j), OTA_ERR_ARCHIVE_STATUS_NOT_REQUIRED);
		/* a refused report names no status a gate could read as the answer */
		assert_true(json_is_null(json_object_get(j, "status")));
		json_decref(j);
	}
	assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 0);
	json_t *j = NULL;
	assert_ota(verify_status("enforced_through_completion", l, &j), OTA_OK);
	assert_string_equal(json_string_value(json_object_get(j, "status")),
	                    "enforced_through_completion");
	json_decref(j);
	assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 9);
}

/* One verification of fx.a with the ledger at l, made only with init. */
static ota_err verify_ledger(const char *l, bool init, ota_err *first)
{
	char *text = json_dumps(fx.a, JSON_COMPACT);
	assert_non_null(text);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.pinned = ota_bytes_make(fx.pin_a, fx.pin_a_len);
	o.ledger = l;
	o.ledger_init = init;
	ota_archive_report *r = NULL;
	ota_err rc = ota_archive_verify(ota_bytes_make(text, strlen(text)), &o, &r, NULL);
	if (first != NULL)
		*first = ota_archive_report_failure(r, 0, NULL, NULL);
	ota_archive_report_free(r);
	free(text);
	return rc;
}

static void test_ledger_missing(void **state)
{
	(void)state;
	char l[4096], t[4096];
	ota_err first = OTA_OK;
	/* not there: refused, not made; the replay it would have let through */
	ledger_path("gate.db", l, sizeof l);
	assert_ota(verify_ledger(l, false, &first), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_ota(first, OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_int_equal(access(l, F_OK), -1);
	assert_ota(verify_ledger(l, true, NULL), OTA_OK);
	assert_ota(verify_doc(a2, fx.pin_a, fx.pin_a_len, l, NULL), OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	ledger_path("gate.bd", t, sizeof t);
	assert_ota(verify_ledger(t, false, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_int_equal(access(t, F_OK), -1);
	ledger_path("nodir/gate.db", t, sizeof t);
	assert_ota(verify_ledger(t, false, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_ota(verify_ledger(t, true, NULL), OTA_ERR_IO); /* no directory to make it in */
	/* a symlink to a ledger is followed; one to nothing makes nothing */
	ledger_path("link.db", t, sizeof t);
	assert_int_equal(symlink(l, t), 0);
	assert_ota(ota_archive_ledger_prepare(t, false, NULL), OTA_OK);
	char target[4096];
	ledger_path("target.db", target, sizeof target);
	ledger_path("dangling.db", t, sizeof t);
	assert_int_equal(symlink(target, t), 0);
	assert_ota(verify_ledger(t, true, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_int_equal(access(target, F_OK), -1);
	/* a zero-byte file: no ledger, and not made one in place */
	ledger_path("zero.db", t, sizeof t);
	FILE *f = fopen(t, "w");
	assert_non_null(f);
	fclose(f);
	assert_ota(verify_ledger(t, false, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_ota(verify_ledger(t, true, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	struct stat st;
	assert_int_equal(stat(t, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* a database with nothing in it (the old code stamped it a ledger) */
	ledger_path("blank.db", t, sizeof t);
	make_db(t, "CREATE TABLE x(a); DROP TABLE x;");
	assert_ota(verify_ledger(t, true, &first), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_int_equal(query(t, "SELECT count(*) FROM sqlite_master"), 0);
	assert_int_equal(query(t, "PRAGMA user_version"), 0);
	/* a directory or FIFO: not opened */
	ledger_path("dir.db", t, sizeof t);
	assert_int_equal(mkdir(t, 0700), 0);
	assert_ota(verify_ledger(t, true, NULL), OTA_ERR_NOT_REGULAR);
	ledger_path("fifo.db", t, sizeof t);
	assert_int_equal(mkfifo(t, 0600), 0);
	assert_ota(verify_ledger(t, true, NULL), OTA_ERR_NOT_REGULAR);
	/* a relative ":memory:" is a file, not sqlite's in-memory database */
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	assert_ota(verify_ledger(":memory:", false, NULL), OTA_ERR_ARCHIVE_LEDGER_MISSING);
	assert_ota(verify_ledger(":memory:", true, NULL), OTA_OK);
	assert_ota(verify_doc(a2, fx.pin_a, fx.pin_a_len, ":memory:", NULL),
	           OTA_ERR_ARCHIVE_LEDGER_REPLAY);
	assert_int_equal(chdir(cwd), 0);
	ledger_path(":memory:", t, sizeof t);
	assert_int_equal(query(t, "SELECT count(*) FROM used_challenges"), 9);
}

typedef struct init_arg {
	const char *path;
	pthread_barrier_t *go;
	ota_err rc;
} init_arg;

static void *init_one(void *p)
{
	init_arg *a = p;
	pthread_barrier_wait(a->go);
	a->rc = ota_archive_ledger_prepare(a->path, true, NULL);
	return NULL;
}

static void test_ledger_init_race(void **state)
{
	(void)state;
	enum { THREADS = 8, ROUNDS = 25 };
	for (int r = 0; r < ROUNDS; r++) {
		char l[4096], name[64];
		snprintf(name, sizeof name, "race-%d.db", r);
		ledger_path(name, l, sizeof l);
		pthread_barrier_t go;
		assert_int_equal(pthread_barrier_init(&go, NULL, THREADS), 0);
		pthread_t t[THREADS];
		init_arg a[THREADS];
		for (int i = 0; i < THREADS; i++) {
			a[i] = (init_arg){l, &go, OTA_ERR_INTERNAL};
			assert_int_equal(pthread_create(&t[i], NULL, init_one, &a[i]), 0);
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			assert_ota(a[i].rc, OTA_OK);
		}
		pthread_barrier_destroy(&go);
		/* one complete ledger: its schema, empty, taken as it is */
		assert_int_equal(query(l, "PRAGMA user_version"), 1);
		assert_int_equal(query(l, "SELECT count(*) FROM used_challenges"), 0);
		assert_ota(ota_archive_ledger_prepare(l, false, NULL), OTA_OK);
	}
	/* no temporary ledger left beside them */
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, ".init-") != NULL)
			fail_msg("left over: %s", e->d_name);
	closedir(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_failure),
		cmocka_unit_test(test_new_ledger_locked),
		cmocka_unit_test(test_schema),
		cmocka_unit_test(test_require_status),
		cmocka_unit_test(test_ledger_missing),
		cmocka_unit_test(test_ledger_init_race),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
