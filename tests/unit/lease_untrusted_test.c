/*
 * Forged lease rows: a lease database row is data, never instructions.
 * `ota cleanup` (ota_oci_cleanup) and every run's orphan sweep act on a
 * dead runner's lease only when the row is one this configuration would
 * have written: a container id of the form ota_oci_run makes, the bundle
 * STATE/bundles/ID of the configured state directory, the configured
 * runtime binary and root. Planted rows (an id "../x", a bundle outside the
 * state directory, /bin/sh or a marker-writing script as the runtime, a
 * different runtime root, an unknown runtime) run nothing, remove nothing,
 * stay open and are reported as oci_lease_untrusted; a legitimate row in
 * the same database is still finalized, and a symlink at its bundle path is
 * not followed.
 *
 * The configured runtime is a fake one (a script that logs its arguments
 * and answers `state` with "does not exist"), so the log shows every
 * runtime command cleanup ran; no runc, no root needed.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ota/oci.h"

#define GOOD "ota-0123456789abcdef01234567"
#define SYML "ota-77777777777777777777777a"

typedef struct world {
	char *tmp;
	char state[512], bundles[512], rtroot[512], fakert[512], log[512], evil[512], marker[512];
	char db[512];
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
	test_pathf(w->evil, sizeof w->evil, w->tmp, "evil.sh");
	test_pathf(w->marker, sizeof w->marker, w->tmp, "evil-ran");
	test_pathf(w->db, sizeof w->db, w->tmp, "leases.db");
	assert_int_equal(mkdir(w->state, 0700), 0);
	assert_int_equal(mkdir(w->bundles, 0700), 0);
	assert_int_equal(mkdir(w->rtroot, 0700), 0);
	test_fake_runtime(w->fakert, w->log);
	char text[1024];
	int n = snprintf(text, sizeof text, "#!/bin/sh\necho \"$*\" > '%s'\nexit 0\n", w->marker);
	assert_true(n > 0 && (size_t)n < (int)sizeof text);
	test_put(w->evil, text, 0755);
	json_t *rows = NULL;
	assert_ota(ota_oci_lease_list(w->db, true, &rows, NULL), OTA_OK); /* the schema */
	json_decref(rows);
}

static void world_free(world *w)
{
	test_rmtree(w->tmp);
	free(w->tmp);
}

/* A dead runner's open lease, phase started. */
static void plant(const world *w, const char *id, const char *runtime, const char *bin,
                  const char *root, const char *bundle)
{
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(w->db, &h), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(h,
	                                    "INSERT INTO oci_lease (id, txn, runtime, runtime_bin,"
	                                    " runtime_root, bundle, runner_pid, runner_start, phase,"
	                                    " container_pid, created_at)"
	                                    " VALUES (?, 'txn-forged', ?, ?, ?, ?, 999999999, '1',"
	                                    " 'started', 0, 1)",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, runtime, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, bin, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, root, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, bundle, -1, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* A directory holding a file "keep" (what a wrong removal would delete). */
static void victim(const char *dir)
{
	assert_int_equal(mkdir(dir, 0755), 0);
	char p[1024];
	test_pathf(p, sizeof p, dir, "keep");
	test_put(p, "precious", 0644);
}

static bool kept(const char *dir)
{
	char p[1024];
	test_pathf(p, sizeof p, dir, "keep");
	return test_lexists(p);
}

/* The forged rows, with what each must leave in place. */
typedef struct forged {
	const char *id;
	const char *field; /* the error's where */
	char keep[1024];   /* a directory that must keep its file */
} forged;

enum { N_FORGED = 8 };

static void plant_forged(const world *w, forged f[N_FORGED])
{
	char b[1024], other[1024];
	memset(f, 0, sizeof(forged) * N_FORGED);
	/* 0: an id that is a path: its "bundle" STATE/bundles/../x = STATE/x */
	f[0].id = "../x";
	f[0].field = "id";
	test_pathf(f[0].keep, sizeof f[0].keep, w->state, "x");
	victim(f[0].keep);
	test_pathf(b, sizeof b, w->bundles, "../x");
	plant(w, f[0].id, "runc", w->fakert, w->rtroot, b);
	/* 1, 2: ids the runner never makes (upper case, one digit short) */
	f[1].id = "ota-0123456789ABCDEF01234567";
	f[2].id = "ota-89abcdef0123456789abcde";
	for (int i = 1; i <= 2; i++) {
		f[i].field = "id";
		test_pathf(f[i].keep, sizeof f[i].keep, w->bundles, f[i].id);
		victim(f[i].keep);
		plant(w, f[i].id, "runc", w->fakert, w->rtroot, f[i].keep);
	}
	/* 3: a bundle outside STATE/bundles */
	f[3].id = "ota-333333333333333333333333";
	f[3].field = "bundle";
	test_pathf(f[3].keep, sizeof f[3].keep, w->tmp, "victim");
	victim(f[3].keep);
	plant(w, f[3].id, "runc", w->fakert, w->rtroot, f[3].keep);
	/* 4: /bin/sh as the runtime binary; 5: a script that leaves a marker */
	f[4].id = "ota-444444444444444444444444";
	f[5].id = "ota-555555555555555555555555";
	for (int i = 4; i <= 5; i++) {
		f[i].field = "runtime_bin";
		test_pathf(f[i].keep, sizeof f[i].keep, w->bundles, f[i].id);
		victim(f[i].keep);
		plant(w, f[i].id, "runc", i == 4 ? "/bin/sh" : w->evil, w->rtroot, f[i].keep);
	}
	/* 6: another runtime root, holding what looks like a half-built
	 * creation of that id (a trusted finalization would remove it) */
	f[6].id = "ota-666666666666666666666666";
	f[6].field = "runtime_root";
	test_pathf(other, sizeof other, w->tmp, "otherroot");
	assert_int_equal(mkdir(other, 0700), 0);
	char fifo[1100];
	test_pathf(b, sizeof b, other, f[6].id);
	assert_int_equal(mkdir(b, 0711), 0);
	test_pathf(fifo, sizeof fifo, b, "exec.fifo");
	assert_int_equal(mkfifo(fifo, 0622), 0);
	test_pathf(f[6].keep, sizeof f[6].keep, w->bundles, f[6].id);
	victim(f[6].keep);
	plant(w, f[6].id, "runc", w->fakert, other, f[6].keep);
	/* 7: a runtime that is neither runc nor crun */
	f[7].id = "ota-777777777777777777777777";
	f[7].field = "runtime";
	test_pathf(f[7].keep, sizeof f[7].keep, w->bundles, f[7].id);
	victim(f[7].keep);
	plant(w, f[7].id, "sh", w->fakert, w->rtroot, f[7].keep);
}

/* true when text holds word as a whole token (between spaces/newlines) */
static bool has_token(const char *text, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(text, word); p != NULL; p = strstr(p + 1, word)) {
		bool start = p == text || p[-1] == ' ' || p[-1] == '\n';
		bool end = p[n] == '\0' || p[n] == ' ' || p[n] == '\n';
		if (start && end)
			return true;
	}
	return false;
}

/* Asserts that no forged row was acted upon: nothing run for it (neither
 * its binary nor the configured one), nothing removed, the row open. */
static void assert_untouched(const world *w, const forged f[N_FORGED])
{
	assert_false(test_lexists(w->marker));
	uint8_t *log = NULL;
	size_t n = 0;
	ota_error e;
	ota_error_clear(&e);
	if (ota_file_read(w->log, 1 << 20, &log, &n, &e) != OTA_OK)
		log = (uint8_t *)strdup("");
	for (int i = 0; i < N_FORGED; i++) {
		if (has_token((const char *)log, f[i].id))
			fail_msg("the runtime was run for forged lease %s: %s", f[i].id, (char *)log);
		if (!kept(f[i].keep))
			fail_msg("forged lease %s removed %s", f[i].id, f[i].keep);
	}
	free(log);
	char other[1024], b[1100], fifo[1200];
	test_pathf(other, sizeof other, w->tmp, "otherroot");
	test_pathf(b, sizeof b, other, f[6].id);
	test_pathf(fifo, sizeof fifo, b, "exec.fifo");
	assert_true(test_lexists(fifo)); /* its "half-built creation" was not removed */
	json_t *open_rows = NULL;
	assert_ota(ota_oci_lease_list(w->db, true, &open_rows, NULL), OTA_OK);
	for (int i = 0; i < N_FORGED; i++) {
		bool found = false;
		size_t k;
		json_t *r;
		json_array_foreach(open_rows, k, r)
		{
			if (strcmp(json_string_value(json_object_get(r, "id")), f[i].id) == 0) {
				found = true;
				assert_true(json_is_null(json_object_get(r, "terminal")));
			}
		}
		if (!found)
			fail_msg("forged lease %s was closed", f[i].id);
	}
	json_decref(open_rows);
}

static const json_t *record_of(const json_t *arr, const char *id)
{
	size_t i;
	json_t *r;
	json_array_foreach(arr, i, r)
	{
		const char *rid = json_string_value(json_object_get(r, "container_id"));
		if (rid != NULL && strcmp(rid, id) == 0)
			return r;
	}
	return NULL;
}

static bool log_has(const world *w, const char *needle)
{
	uint8_t *log = NULL;
	size_t n = 0;
	if (ota_file_read(w->log, 1 << 20, &log, &n, NULL) != OTA_OK)
		return false;
	bool has = has_token((const char *)log, needle);
	free(log);
	return has;
}

static ota_oci_run_opts opts_of(const world *w)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = OTA_OCI_RUNC;
	o.runtime.binary = w->fakert;
	o.runtime.root = w->rtroot;
	o.runtime.version = "fake";
	o.state_dir = w->state;
	o.lease_db = w->db;
	return o;
}

/* The legitimate rows: GOOD with its bundle, SYML whose bundle path is a
 * symlink to a victim directory. */
static void plant_good(const world *w, char victim2[1024])
{
	char b[1024];
	test_pathf(b, sizeof b, w->bundles, GOOD);
	assert_int_equal(mkdir(b, 0700), 0);
	char cfg[1100];
	test_pathf(cfg, sizeof cfg, b, "config.json");
	test_put(cfg, "{}", 0600);
	plant(w, GOOD, "runc", w->fakert, w->rtroot, b);
	test_pathf(victim2, 1024, w->tmp, "victim2");
	victim(victim2);
	test_pathf(b, sizeof b, w->bundles, SYML);
	assert_int_equal(symlink(victim2, b), 0);
	plant(w, SYML, "runc", w->fakert, w->rtroot, b);
}

static void test_cleanup_refuses_forged_rows(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	forged f[N_FORGED];
	plant_forged(&w, f);
	char victim2[1024];
	plant_good(&w, victim2);
	ota_oci_run_opts o = opts_of(&w);
	json_t *rep = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &rep, &e), OTA_ERR_OCI_LEASE_UNTRUSTED);
	assert_non_null(rep);
	assert_untouched(&w, f);
	/* every forged row is reported, with the field that failed */
	const json_t *untrusted = json_object_get(rep, "untrusted");
	assert_int_equal(json_array_size(untrusted), N_FORGED);
	for (int i = 0; i < N_FORGED; i++) {
		const json_t *r = record_of(untrusted, f[i].id);
		if (r == NULL)
			fail_msg("forged lease %s not reported", f[i].id);
		assert_string_equal(json_string_value(json_object_get(r, "error")),
		                    "oci_lease_untrusted");
		assert_string_equal(json_string_value(json_object_get(r, "where")), f[i].field);
		assert_true(json_is_false(json_object_get(r, "lease_closed")));
	}
	/* the first one is the call's error */
	assert_string_equal(ota_err_name(e.code), "oci_lease_untrusted");
	assert_non_null(strstr(e.what, "../x"));
	/* the legitimate rows were finalized with the configured runtime */
	const json_t *fin = json_object_get(rep, "finalized");
	assert_int_equal(json_array_size(fin), 2);
	const json_t *g = record_of(fin, GOOD);
	assert_non_null(g);
	assert_true(json_is_true(json_object_get(g, "confirmed")));
	assert_true(json_is_true(json_object_get(g, "lease_closed")));
	assert_true(json_is_true(json_object_get(g, "bundle_removed")));
	assert_true(log_has(&w, GOOD));
	char b[1024];
	test_pathf(b, sizeof b, w.bundles, GOOD);
	assert_false(test_lexists(b));
	/* the symlink at a bundle path is not followed: the lease is closed
	 * (the container is gone), the link and what it points at stay */
	const json_t *s = record_of(fin, SYML);
	assert_non_null(s);
	assert_true(json_is_true(json_object_get(s, "lease_closed")));
	assert_true(json_is_false(json_object_get(s, "bundle_removed")));
	assert_true(kept(victim2));
	test_pathf(b, sizeof b, w.bundles, SYML);
	assert_true(test_lexists(b));
	json_decref(rep);
	/* a second cleanup: the same forged rows, still refused, still open */
	rep = NULL;
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &rep, &e), OTA_ERR_OCI_LEASE_UNTRUSTED);
	assert_int_equal(json_array_size(json_object_get(rep, "finalized")), 0);
	assert_int_equal(json_array_size(json_object_get(rep, "untrusted")), N_FORGED);
	json_decref(rep);
	assert_untouched(&w, f);
	world_free(&w);
}

/* The state directory decides: the same legitimate row under another
 * --state-dir is untrusted; STATE/bundles a symlink is not followed. */
static void test_state_dir(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	char victim2[1024];
	plant_good(&w, victim2);
	ota_oci_run_opts o = opts_of(&w);
	char other[1024];
	test_pathf(other, sizeof other, w.tmp, "other-state");
	o.state_dir = other;
	json_t *rep = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &rep, &e), OTA_ERR_OCI_LEASE_UNTRUSTED);
	assert_int_equal(json_array_size(json_object_get(rep, "untrusted")), 2);
	assert_int_equal(json_array_size(json_object_get(rep, "finalized")), 0);
	assert_string_equal(e.where, "bundle");
	assert_false(log_has(&w, GOOD));
	json_decref(rep);
	char b[1024];
	test_pathf(b, sizeof b, w.bundles, GOOD);
	assert_true(test_lexists(b));

	/* the default state directory is /run/ota: these rows are not its */
	o.state_dir = NULL;
	rep = NULL;
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &rep, &e), OTA_ERR_OCI_LEASE_UNTRUSTED);
	assert_int_equal(json_array_size(json_object_get(rep, "untrusted")), 2);
	json_decref(rep);

	world_free(&w);

	/* STATE/bundles a symlink to a directory holding GOOD/keep: the row
	 * is this configuration's, the container is finalized, the link is
	 * not followed */
	world_make(&w);
	o = opts_of(&w);
	char tgt[1024];
	test_pathf(tgt, sizeof tgt, w.tmp, "elsewhere");
	assert_int_equal(mkdir(tgt, 0755), 0);
	test_pathf(b, sizeof b, tgt, GOOD);
	victim(b);
	assert_int_equal(rmdir(w.bundles), 0);
	assert_int_equal(symlink(tgt, w.bundles), 0);
	test_pathf(b, sizeof b, w.bundles, GOOD);
	plant(&w, GOOD, "runc", w.fakert, w.rtroot, b);
	rep = NULL;
	ota_error_clear(&e);
	assert_ota(ota_oci_cleanup(&o, &rep, &e), OTA_OK);
	const json_t *g = record_of(json_object_get(rep, "finalized"), GOOD);
	assert_non_null(g);
	assert_true(json_is_true(json_object_get(g, "lease_closed")));
	assert_true(json_is_false(json_object_get(g, "bundle_removed")));
	assert_int_equal(json_array_size(json_object_get(rep, "untrusted")), 0);
	json_decref(rep);
	test_pathf(b, sizeof b, tgt, GOOD);
	assert_true(kept(b));
	world_free(&w);
}

/* The orphan sweep of the next run applies the same checks: the forged
 * rows stay open and untouched, the legitimate orphan is finalized. */
static void test_run_sweep(void **state)
{
	(void)state;
	world w;
	world_make(&w);
	forged f[N_FORGED];
	plant_forged(&w, f);
	char victim2[1024];
	plant_good(&w, victim2);
	char repo[1024], rootfs[1024];
	test_mkdir_in(w.tmp, "repo", repo, sizeof repo);
	test_mkdir_in(w.tmp, "rootfs", rootfs, sizeof rootfs);
	ota_oci_run_opts o = opts_of(&w);
	o.canary = w.fakert; /* bound into a container that is never made */
	static const char *const argv[] = {"/bin/true", NULL};
	ota_oci_plan p;
	memset(&p, 0, sizeof p);
	p.repo = repo;
	p.rootfs = rootfs;
	p.argv = argv;
	p.argc = 1;
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	/* the fake runtime refuses `run`: the run itself ends not_started */
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_ERR_OCI_RUNTIME_FAILED);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_non_null(r.finalized_orphans);
	assert_int_equal(json_array_size(r.finalized_orphans), 2);
	const json_t *g = record_of(r.finalized_orphans, GOOD);
	assert_non_null(g);
	assert_true(json_is_true(json_object_get(g, "confirmed")));
	assert_true(json_is_true(json_object_get(g, "lease_closed")));
	assert_non_null(record_of(r.finalized_orphans, SYML));
	for (int i = 0; i < N_FORGED; i++)
		assert_null(record_of(r.finalized_orphans, f[i].id));
	assert_true(kept(victim2));
	/* the run's own container id and bundle have the checked form */
	char b[1024];
	assert_true(strncmp(r.container_id, "ota-", 4) == 0 && strlen(r.container_id) == 28);
	test_pathf(b, sizeof b, w.bundles, r.container_id);
	assert_false(test_lexists(b)); /* its own bundle removed */
	assert_true(log_has(&w, r.container_id));
	ota_oci_result_clear(&r);
	assert_untouched(&w, f);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cleanup_refuses_forged_rows),
		cmocka_unit_test(test_state_dir),
		cmocka_unit_test(test_run_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
