/*
 * The runner's state directory (--state-dir, default /run/ota) is written
 * beneath descriptors only: STATE and STATE/bundles are opened O_NOFOLLOW
 * and must be directories of root's (or the caller's) that neither group
 * nor others can write; the bundle is mkdirat()ed 0700 beneath bundles,
 * config.json created O_EXCL | O_NOFOLLOW beneath the bundle, and the
 * bundle path handed to the runtime must still resolve to that directory.
 * Every planted symlink, foreign file or loose permission is refused with
 * oci_state_dir_unsafe, before the lease for those checked first, and
 * nothing is written outside the state directory.
 *
 * The runtime is a fake one (a script logging its arguments, refusing
 * `run`, answering `state` with "does not exist"): no runc, no root.
 */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "provider-oci/oci_internal.h"
#include "ota/json.h"
#include "ota/oci.h"

#define ID "ota-0123456789abcdef01234567"

typedef struct world {
	char *tmp;
	char state[512], bundles[512], rtroot[512], fakert[512], log[512], outside[512];
	char db[512], repo[512], rootfs[512];
} world;

static void world_make(world *w)
{
	memset(w, 0, sizeof *w);
	w->tmp = test_tmpdir();
	test_pathf(w->state, sizeof w->state, w->tmp, "state");
	test_pathf(w->bundles, sizeof w->bundles, w->state, "bundles");
	test_pathf(w->rtroot, sizeof w->rtroot, w->tmp, "rtroot");
	test_pathf(w->fakert, sizeof w->fakert, w->tmp, "fakert");
	test_pathf(w->log, sizeof w->log, w->tmp, "rt.log");
	test_pathf(w->outside, sizeof w->outside, w->tmp, "outside");
	test_pathf(w->db, sizeof w->db, w->tmp, "leases.db");
	test_mkdir_in(w->tmp, "repo", w->repo, sizeof w->repo);
	test_mkdir_in(w->tmp, "rootfs", w->rootfs, sizeof w->rootfs);
	assert_int_equal(mkdir(w->rtroot, 0700), 0);
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
	o.txn = "txn-state";
	o.canary = w->fakert; /* bound into a container that is never made */
	return o;
}

static bool log_has(const world *w, const char *s)
{
	uint8_t *b = NULL;
	size_t n = 0;
	if (ota_file_read(w->log, 1u << 20, &b, &n, NULL) != OTA_OK)
		return false;
	bool has = strstr((char *)b, s) != NULL;
	free(b);
	return has;
}

static size_t entries(const char *dir)
{
	return test_count_entries(dir, false);
}

/* ota_oci_run of /bin/true through the fake runtime; the result's code. */
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

/* A refused run: oci_state_dir_unsafe naming where, not started, no lease
 * written (the database is not even made), no runtime command. */
static void assert_refused(world *w, const char *where)
{
	ota_oci_run_opts o = opts_of(w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(w, &o, &r, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_string_equal(e.where, where);
	assert_false(test_lexists(w->db));
	assert_false(test_lexists(w->log));
	ota_oci_result_clear(&r);
}

/* The baseline: a missing STATE is made 0700 with bundles 0700; the run
 * reaches the runtime (which refuses it) and its bundle is removed. */
static void test_state_made(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	ota_oci_run_opts o = opts_of(&w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	struct stat st;
	assert_int_equal(lstat(w.state, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(lstat(w.bundles, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_true(log_has(&w, " run "));
	assert_int_equal(entries(w.bundles), 0);
	ota_oci_result_clear(&r);
	/* "STATE/" names the same directory */
	char slash[600];
	snprintf(slash, sizeof slash, "%s/", w.state);
	o.state_dir = slash;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	ota_oci_result_clear(&r);
	world_free(&w);
}

static void test_state_symlink(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	/* STATE a symlink to a directory (also with a trailing slash) */
	assert_int_equal(symlink(w.outside, w.state), 0);
	assert_refused(&w, w.state);
	ota_oci_run_opts o = opts_of(&w);
	char slash[600];
	snprintf(slash, sizeof slash, "%s//", w.state);
	o.state_dir = slash;
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	ota_oci_result_clear(&r);
	assert_int_equal(entries(w.outside), 0);
	/* a dangling one: nothing is made at its target */
	assert_int_equal(unlink(w.state), 0);
	char nowhere[600];
	test_pathf(nowhere, sizeof nowhere, w.outside, "made");
	assert_int_equal(symlink(nowhere, w.state), 0);
	assert_refused(&w, w.state);
	assert_false(test_lexists(nowhere));
	world_free(&w);
}

static void test_bundles_symlink(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	assert_int_equal(mkdir(w.state, 0700), 0);
	assert_int_equal(symlink(w.outside, w.bundles), 0);
	assert_refused(&w, w.bundles);
	assert_int_equal(entries(w.outside), 0);
	/* dangling */
	assert_int_equal(unlink(w.bundles), 0);
	char nowhere[600];
	test_pathf(nowhere, sizeof nowhere, w.outside, "made");
	assert_int_equal(symlink(nowhere, w.bundles), 0);
	assert_refused(&w, w.bundles);
	assert_false(test_lexists(nowhere));
	/* a regular file */
	assert_int_equal(unlink(w.bundles), 0);
	test_put(w.bundles, "not a directory", 0600);
	assert_refused(&w, w.bundles);
	world_free(&w);
	/* STATE a regular file */
	world_make(&w);
	test_put(w.state, "not a directory", 0600);
	assert_refused(&w, w.state);
	world_free(&w);
}

static void test_permissions(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	assert_int_equal(mkdir(w.state, 0700), 0);
	assert_int_equal(mkdir(w.bundles, 0700), 0);
	static const mode_t loose[] = {0777, 0770, 0702, 01777, 0720};
	for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
		assert_int_equal(chmod(w.state, loose[i]), 0);
		assert_refused(&w, w.state);
		assert_int_equal(chmod(w.state, 0755), 0);
		assert_int_equal(chmod(w.bundles, loose[i]), 0);
		assert_refused(&w, w.bundles);
		assert_int_equal(chmod(w.bundles, 0700), 0);
	}
	assert_int_equal(entries(w.bundles), 0);
	if (geteuid() == 0) {
		/* owned by another user: refused when running as root */
		assert_int_equal(chown(w.bundles, 4321, 4321), 0);
		assert_refused(&w, w.bundles);
		assert_int_equal(chown(w.bundles, 0, 0), 0);
		assert_int_equal(chown(w.state, 4321, 0), 0);
		assert_refused(&w, w.state);
		assert_int_equal(chown(w.state, 0, 0), 0);
	}
	/* 0755 state, 0700 bundles: accepted */
	ota_oci_run_opts o = opts_of(&w);
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	ota_oci_result_clear(&r);
	world_free(&w);
}

/* The bundle and config.json beneath their descriptors, directly. */
static void test_bundle_beneath(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	ota_error e;
	ota_error_clear(&e);
	int bfd = -1;
	assert_ota(oci_state_open(w.state, true, &bfd, &e), OTA_OK);
	char bundle[700];
	test_pathf(bundle, sizeof bundle, w.bundles, ID);

	/* a symlink planted at STATE/bundles/ID (to a directory outside):
	 * not used, not followed, nothing made at its target */
	assert_int_equal(symlink(w.outside, bundle), 0);
	int dfd = -1;
	assert_ota(oci_bundle_create(bfd, bundle, ID, &dfd, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_int_equal(dfd, -1);
	assert_int_equal(entries(w.outside), 0);
	/* nor removed through it */
	char keep[700];
	test_pathf(keep, sizeof keep, w.outside, "keep");
	test_put(keep, "precious", 0644);
	assert_false(oci_bundle_remove_at(bfd, ID));
	assert_true(test_lexists(keep));
	assert_int_equal(unlink(bundle), 0);

	/* a directory already there (with a config.json) is not taken over */
	assert_int_equal(mkdir(bundle, 0700), 0);
	char cfg[800];
	test_pathf(cfg, sizeof cfg, bundle, "config.json");
	test_put(cfg, "planted", 0600);
	ota_error_clear(&e);
	assert_ota(oci_bundle_create(bfd, bundle, ID, &dfd, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_string_equal(e.where, bundle);
	assert_true(oci_bundle_remove_at(bfd, ID));
	assert_false(test_lexists(bundle));

	/* made here: 0700, then config.json beneath it */
	ota_error_clear(&e);
	assert_ota(oci_bundle_create(bfd, bundle, ID, &dfd, &e), OTA_OK);
	struct stat st;
	assert_int_equal(lstat(bundle, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* a pre-existing config.json is refused, not overwritten */
	test_put(cfg, "planted", 0644);
	ota_error_clear(&e);
	assert_ota(oci_bundle_write(dfd, "config.json", ota_bytes_make("{}", 2), cfg, &e),
	           OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_string_equal(e.where, cfg);
	uint8_t *b = NULL;
	size_t n = 0;
	assert_ota(ota_file_read(cfg, 100, &b, &n, NULL), OTA_OK);
	assert_string_equal((char *)b, "planted");
	free(b);
	/* a symlink at config.json (dangling, to a file outside): refused, the
	 * target not created */
	assert_int_equal(unlink(cfg), 0);
	char target[800];
	test_pathf(target, sizeof target, w.outside, "written");
	assert_int_equal(symlink(target, cfg), 0);
	ota_error_clear(&e);
	assert_ota(oci_bundle_write(dfd, "config.json", ota_bytes_make("{}", 2), cfg, &e),
	           OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_false(test_lexists(target));
	assert_int_equal(unlink(cfg), 0);
	/* written whole, 0600 */
	ota_error_clear(&e);
	assert_ota(oci_bundle_write(dfd, "config.json", ota_bytes_make("{\"a\":1}", 7), cfg, &e),
	           OTA_OK);
	assert_ota(ota_file_read(cfg, 100, &b, &n, NULL), OTA_OK);
	assert_string_equal((char *)b, "{\"a\":1}");
	free(b);
	assert_int_equal(lstat(cfg, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* the path resolves to it */
	assert_ota(oci_bundle_verify_path(dfd, bundle, &e), OTA_OK);
	/* swapped for a symlink to a look-alike outside: refused */
	char moved[800];
	test_pathf(moved, sizeof moved, w.bundles, "moved");
	assert_int_equal(rename(bundle, moved), 0);
	assert_int_equal(symlink(w.outside, bundle), 0);
	ota_error_clear(&e);
	assert_ota(oci_bundle_verify_path(dfd, bundle, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_int_equal(unlink(bundle), 0);
	ota_error_clear(&e);
	assert_ota(oci_bundle_verify_path(dfd, bundle, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	close(dfd);
	close(bfd);
	assert_true(test_lexists(keep));
	assert_int_equal(entries(w.outside), 1);
	world_free(&w);
}

/* A symlink swapped in for the bundle after it was made, before the
 * runtime is run (the before_create hook): the runtime's `run` is never
 * invoked, the directory the link names is untouched. */
typedef struct swap_ctx {
	world *w;
	char id[64];
} swap_ctx;

static void swap_bundle(void *ctx)
{
	swap_ctx *s = ctx;
	DIR *d = opendir(s->w->bundles);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "ota-", 4) == 0)
			snprintf(s->id, sizeof s->id, "%.60s", de->d_name);
	closedir(d);
	assert_true(s->id[0] != '\0');
	char b[700], real[700], cfg[800];
	test_pathf(b, sizeof b, s->w->bundles, s->id);
	test_pathf(real, sizeof real, s->w->bundles, "real");
	assert_int_equal(rename(b, real), 0);
	test_pathf(cfg, sizeof cfg, s->w->outside, "config.json");
	test_put(cfg, "{\"evil\":true}", 0644);
	assert_int_equal(symlink(s->w->outside, b), 0);
}

static void test_swapped_before_create(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	swap_ctx s = {&w, ""};
	ota_oci_run_opts o = opts_of(&w);
	o.before_create = swap_bundle;
	o.before_create_ctx = &s;
	ota_oci_result r;
	ota_error e;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_STATE_DIR_UNSAFE);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_string_equal(r.container_id, s.id);
	assert_false(log_has(&w, " run "));
	char cfg[800];
	test_pathf(cfg, sizeof cfg, w.outside, "config.json");
	assert_true(test_lexists(cfg));
	assert_int_equal(entries(w.outside), 1);
	/* nothing was created: the lease is closed, the removal confirmed */
	json_t *rows = NULL;
	assert_ota(ota_oci_lease_list(w.db, true, &rows, NULL), OTA_OK);
	assert_int_equal(json_array_size(rows), 0);
	json_decref(rows);
	ota_oci_result_clear(&r);
	world_free(&w);
}

/* The bundle removal of cleanup refuses an unsafe state directory too. */
static void test_remove_refuses_unsafe(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	assert_int_equal(mkdir(w.state, 0700), 0);
	assert_int_equal(mkdir(w.bundles, 0700), 0);
	char b[700], keep[800];
	test_pathf(b, sizeof b, w.bundles, ID);
	assert_int_equal(mkdir(b, 0700), 0);
	test_pathf(keep, sizeof keep, b, "config.json");
	test_put(keep, "{}", 0600);
	assert_int_equal(chmod(w.bundles, 0777), 0);
	assert_false(oci_bundle_remove(w.state, ID));
	assert_true(test_lexists(keep));
	assert_int_equal(chmod(w.bundles, 0700), 0);
	assert_true(oci_bundle_remove(w.state, ID));
	assert_false(test_lexists(b));
	/* no state directory at all: nothing to remove */
	char none[600];
	test_pathf(none, sizeof none, w.tmp, "none");
	assert_true(oci_bundle_remove(none, ID));
	assert_false(test_lexists(none));
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_made),
		cmocka_unit_test(test_state_symlink),
		cmocka_unit_test(test_bundles_symlink),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_bundle_beneath),
		cmocka_unit_test(test_swapped_before_create),
		cmocka_unit_test(test_remove_refuses_unsafe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
