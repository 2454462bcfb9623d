/*
 * The OCI runtime root (--runtime-root, default /run/ota/runc or
 * /run/ota/crun) and the directories made for the lease database are made
 * beneath descriptors, component by component, 0700, never through a
 * symlink; an existing runtime root that is a symlink, not a directory,
 * another user's or writable by group or others is oci_runtime_dir_unsafe
 * before any lease or container is made, for `ota run` and `ota cleanup`
 * alike, and a root swapped after the check is refused before the runtime
 * is run.
 *
 * The runtime is a fake one (a script logging its arguments, refusing
 * `run`, answering `state` with "does not exist"), except for the default
 * root, checked with the real runc when it is installed.
 */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "provider-oci/oci_internal.h"
#include "ota/json.h"
#include "ota/oci.h"

#define ID "ota-0123456789abcdef01234567"

typedef struct world {
	char *tmp;
	char state[512], rtroot[1024], fakert[512], log[512], outside[512], db[512];
	char repo[512], rootfs[512];
} world;

static void world_make(world *w)
{
	memset(w, 0, sizeof *w);
	w->tmp = test_tmpdir();
	test_pathf(w->state, sizeof w->state, w->tmp, "state");
	test_pathf(w->rtroot, sizeof w->rtroot, w->tmp, "rtroot");
	test_pathf(w->fakert, sizeof w->fakert, w->tmp, "fakert");
	test_pathf(w->log, sizeof w->log, w->tmp, "rt.log");
	test_pathf(w->outside, sizeof w->outside, w->tmp, "outside");
	test_pathf(w->db, sizeof w->db, w->tmp, "leases.db");
	test_mkdir_in(w->tmp, "repo", w->repo, sizeof w->repo);
	test_mkdir_in(w->tmp, "rootfs", w->rootfs, sizeof w->rootfs);
	assert_int_equal(mkdir(w->outside, 0755), 0);
	test_fake_runtime(w->fakert, w->log);
}

static void world_free(world *w)
{
	test_rmtree(w->tmp);
	free(w->tmp);
}

static ota_oci_run_opts opts_of(world *w)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = OTA_OCI_RUNC;
	o.runtime.binary = w->fakert;
	o.runtime.root = w->rtroot;
	o.state_dir = w->state;
	o.lease_db = w->db;
	o.txn = "txn-rtroot";
	o.canary = w->fakert; /* bound into a container that is never made */
	return o;
}

static ota_err run(world *w, ota_oci_run_opts *o, ota_oci_result *r, ota_error *e)
{
	static const char *const argv[] = {"/bin/true", NULL};
	ota_oci_plan p;
	memset(&p, 0, sizeof p);
	p.repo = w->repo;
	p.rootfs = w->rootfs;
	p.argv = argv;
	p.argc = 1;
	ota_error_clear(e);
	return ota_oci_run(&p, o, r, e);
}

/* A refused run: oci_runtime_dir_unsafe naming where, not started, no
 * lease (the database is not even made), no state, no runtime command. */
static void assert_refused(world *w, const char *where)
{
	ota_oci_run_opts o = opts_of(w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_string_equal(e.where, where);
	assert_false(test_lexists(w->db));
	assert_false(test_lexists(w->state));
	assert_false(test_lexists(w->log));
	ota_oci_result_clear(&r);
}

static void assert_mode(const char *path, mode_t mode)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, mode);
}

/* A missing root and its missing parents are made 0700; the run reaches
 * the runtime (which refuses it). */
static void test_root_made(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	char a[600], b[700];
	test_pathf(a, sizeof a, w.tmp, "a");
	test_pathf(b, sizeof b, a, "b");
	test_pathf(w.rtroot, sizeof w.rtroot, b, "runc");
	ota_oci_run_opts o = opts_of(&w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	ota_oci_result_clear(&r);
	assert_mode(a, 0700);
	assert_mode(b, 0700);
	assert_mode(w.rtroot, 0700);
	/* an existing 0755 root of root's is accepted, also with a trailing slash */
	assert_int_equal(chmod(w.rtroot, 0755), 0);
	char slash[1100];
	snprintf(slash, sizeof slash, "%s//", w.rtroot);
	o.runtime.root = slash;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	ota_oci_result_clear(&r);
	world_free(&w);
}

static void test_root_symlink(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	/* the root a symlink to a directory of root's, 0700 */
	char target[600];
	test_pathf(target, sizeof target, w.outside, "rt");
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(symlink(target, w.rtroot), 0);
	assert_refused(&w, w.rtroot);
	assert_int_equal(test_count_entries(target, false), 0);
	/* a dangling one: nothing is made at its target */
	assert_int_equal(unlink(w.rtroot), 0);
	char nowhere[600];
	test_pathf(nowhere, sizeof nowhere, w.outside, "made");
	assert_int_equal(symlink(nowhere, w.rtroot), 0);
	assert_refused(&w, w.rtroot);
	assert_false(test_lexists(nowhere));
	assert_int_equal(unlink(w.rtroot), 0);
	/* a symlink above the root: the root is not made through it */
	char link[600];
	test_pathf(link, sizeof link, w.tmp, "link");
	assert_int_equal(symlink(w.outside, link), 0);
	char where[600];
	snprintf(where, sizeof where, "%s", link);
	test_pathf(w.rtroot, sizeof w.rtroot, link, "runc");
	assert_refused(&w, where);
	char made[700];
	test_pathf(made, sizeof made, w.outside, "runc");
	assert_false(test_lexists(made));
	world_free(&w);
}

static void test_root_not_directory(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	test_put(w.rtroot, "not a directory", 0600);
	assert_refused(&w, w.rtroot);
	world_free(&w);
}

static void test_root_permissions(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	assert_int_equal(mkdir(w.rtroot, 0700), 0);
	static const mode_t loose[] = {0777, 0770, 0702, 01777, 0720, 0730};
	for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
		assert_int_equal(chmod(w.rtroot, loose[i]), 0);
		assert_refused(&w, w.rtroot);
	}
	assert_int_equal(chmod(w.rtroot, 0700), 0);
	if (geteuid() == 0) {
		/* nobody's root: refused when running as root */
		assert_int_equal(chown(w.rtroot, 65534, 65534), 0);
		assert_refused(&w, w.rtroot);
		assert_int_equal(chown(w.rtroot, 0, 65534), 0);
	}
	ota_oci_run_opts o = opts_of(&w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	ota_oci_result_clear(&r);
	world_free(&w);
}

/* A root swapped for a symlink after oci_rt_init checked it: no runtime
 * command is run. */
static void test_root_swapped(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	ota_oci_runtime_opts ro = {OTA_OCI_RUNC, w.fakert, w.rtroot, NULL};
	oci_rt rt;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_rt_init(&rt, &ro, &e), OTA_OK);
	const char *args[] = {"list", NULL};
	int st = -1;
	assert_ota(oci_rt_cmd(&rt, args, -1, -1, NULL, 0, NULL, 0, &st, &e), OTA_OK);
	assert_int_equal(st, 0);
	assert_int_equal(unlink(w.log), 0);
	char moved[600];
	test_pathf(moved, sizeof moved, w.tmp, "moved");
	assert_int_equal(rename(w.rtroot, moved), 0);
	char target[600];
	test_pathf(target, sizeof target, w.outside, "rt");
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(symlink(target, w.rtroot), 0);
	assert_ota(oci_rt_cmd(&rt, args, -1, -1, NULL, 0, NULL, 0, &st, &e),
	           OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_string_equal(e.where, w.rtroot);
	assert_false(test_lexists(w.log));
	/* gone altogether */
	assert_int_equal(unlink(w.rtroot), 0);
	assert_ota(oci_rt_cmd(&rt, args, -1, -1, NULL, 0, NULL, 0, &st, &e),
	           OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_false(test_lexists(w.log));
	/* back in place: run again */
	assert_int_equal(rename(moved, w.rtroot), 0);
	assert_ota(oci_rt_cmd(&rt, args, -1, -1, NULL, 0, NULL, 0, &st, &e), OTA_OK);
	assert_true(test_lexists(w.log));
	world_free(&w);
}

/* A dead runner's open lease, phase started, of this configuration. */
static void plant(const world *w)
{
	oci_lease_db *db = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_lease_open(w->db, &db, &e), OTA_OK);
	oci_lease_close(db);
	char bundle[1100];
	snprintf(bundle, sizeof bundle, "%s/bundles/%s", w->state, ID);
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(w->db, &h), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(h,
	                                    "INSERT INTO oci_lease (id, txn, runtime, runtime_bin,"
	                                    " runtime_root, bundle, runner_pid, runner_start, phase,"
	                                    " container_pid, created_at)"
	                                    " VALUES (?, 'txn-rtroot', 'runc', ?, ?, ?, 999999999,"
	                                    " '1', 'started', 0, 1)",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(st, 1, ID, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, w->fakert, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, w->rtroot, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, bundle, -1, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static size_t open_leases(const world *w)
{
	oci_lease_db *db = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_lease_open(w->db, &db, &e), OTA_OK);
	json_t *rows = NULL;
	assert_ota(oci_lease_rows(db, true, &rows, &e), OTA_OK);
	size_t n = json_array_size(rows);
	json_decref(rows);
	oci_lease_close(db);
	return n;
}

/* ota cleanup runs the runtime with the same root: the same checks, the
 * lease left open, nothing run. */
static void test_cleanup_refuses(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	assert_int_equal(mkdir(w.rtroot, 0700), 0);
	plant(&w);
	ota_oci_run_opts o = opts_of(&w);
	json_t *report = NULL;
	ota_error e;
	/* 0777 */
	assert_int_equal(chmod(w.rtroot, 0777), 0);
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &report, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_string_equal(e.where, w.rtroot);
	assert_non_null(report);
	json_t *fin = json_object_get(report, "finalized");
	assert_int_equal(json_array_size(fin), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(fin, 0), "error")),
	                    "oci_runtime_dir_unsafe");
	assert_false(json_is_true(json_object_get(json_array_get(fin, 0), "lease_closed")));
	json_decref(report);
	assert_false(test_lexists(w.log));
	assert_int_equal(open_leases(&w), 1);
	/* nobody's */
	assert_int_equal(chmod(w.rtroot, 0700), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(w.rtroot, 65534, 65534), 0);
		ota_error_clear(&e);
		assert_ota(ota_oci_cleanup(&o, &report, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
		json_decref(report);
		assert_false(test_lexists(w.log));
		assert_int_equal(open_leases(&w), 1);
		assert_int_equal(chown(w.rtroot, 0, 0), 0);
	}
	/* a symlink to a directory of root's */
	char moved[600];
	test_pathf(moved, sizeof moved, w.tmp, "moved");
	assert_int_equal(rename(w.rtroot, moved), 0);
	assert_int_equal(symlink(moved, w.rtroot), 0);
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &report, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	json_decref(report);
	assert_false(test_lexists(w.log));
	assert_int_equal(open_leases(&w), 1);
	/* the root in place again: the lease is finalized */
	assert_int_equal(unlink(w.rtroot), 0);
	assert_int_equal(rename(moved, w.rtroot), 0);
	ota_error_clear(&e);
	ota_err rc = ota_oci_cleanup(&o, &report, &e);
	assert_true(rc != OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	json_decref(report);
	assert_true(test_lexists(w.log));
	world_free(&w);
}

/* The lease database's missing directories are made 0700 beneath
 * descriptors; a symlink in its path is not followed. */
static void test_lease_db_parents(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	char a[600], b[700], db[800];
	test_pathf(a, sizeof a, w.tmp, "a");
	test_pathf(b, sizeof b, a, "b");
	test_pathf(db, sizeof db, b, "leases.db");
	oci_lease_db *h = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_lease_open(db, &h, &e), OTA_OK);
	oci_lease_close(h);
	assert_mode(a, 0700);
	assert_mode(b, 0700);
	assert_true(test_lexists(db));
	/* a symlink above: refused, nothing made at its target */
	char link[600], db2[800], made[700];
	test_pathf(link, sizeof link, w.tmp, "link");
	assert_int_equal(symlink(w.outside, link), 0);
	snprintf(db2, sizeof db2, "%s/sub/leases.db", link);
	ota_error_clear(&e);
	assert_ota(oci_lease_open(db2, &h, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_null(h);
	assert_string_equal(e.where, link);
	test_pathf(made, sizeof made, w.outside, "sub");
	assert_false(test_lexists(made));
	/* the database's own directory a symlink */
	char db3[800];
	snprintf(db3, sizeof db3, "%s/leases.db", link);
	ota_error_clear(&e);
	assert_ota(oci_lease_open(db3, &h, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_int_equal(test_count_entries(w.outside, false), 0);
	/* ota_oci_run refuses it before any lease or runtime command */
	ota_oci_run_opts o = opts_of(&w);
	o.lease_db = db2;
	ota_oci_result r;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_DIR_UNSAFE);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_false(test_lexists(w.log));
	assert_int_equal(test_count_entries(w.outside, false), 0);
	ota_oci_result_clear(&r);
	world_free(&w);
}

/* The default root (/run/ota/runc) with the real runc. */
static void test_default_root(void **state)
{
	(void)state;
	if (geteuid() != 0 || system("command -v runc >/dev/null 2>&1") != 0)
		skip();
	ota_oci_runtime_opts ro = {OTA_OCI_RUNC, NULL, NULL, NULL};
	oci_rt rt;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_rt_init(&rt, &ro, &e), OTA_OK);
	assert_string_equal(rt.root, "/run/ota/runc");
	struct stat st;
	assert_int_equal(lstat(rt.root, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	const char *args[] = {"list", "-q", NULL};
	int status = -1;
	assert_ota(oci_rt_cmd(&rt, args, -1, -1, NULL, 0, NULL, 0, &status, &e), OTA_OK);
	assert_int_equal(status, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_made),
		cmocka_unit_test(test_root_symlink),
		cmocka_unit_test(test_root_not_directory),
		cmocka_unit_test(test_root_permissions),
		cmocka_unit_test(test_root_swapped),
		cmocka_unit_test(test_cleanup_refuses),
		cmocka_unit_test(test_lease_db_parents),
		cmocka_unit_test(test_default_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
