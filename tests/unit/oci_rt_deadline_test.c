/*
 * provider-oci: every OCI runtime command has a deadline, and SIGINT /
 * SIGTERM end a blocked forward command (run --detach) at once. The
 * runtime's commands used to run with no bound, and the cancel flag was
 * looked at only once the runtime returned: a runtime blocked on a FIFO (a
 * `runc init` reading the image's /etc/passwd), a hung cgroup or a stuck
 * mount hung `ota run` for good, and SIGTERM did not end it.
 *
 * Now a command still running at its deadline (default per command,
 * ota_oci_run_opts.runtime_timeout_seconds for all) is killed with its
 * process group and is oci_runtime_timeout; the run goes to its failure
 * path (cleanup through the lease, a terminal record naming the error,
 * never enforced_through_completion), and a cleanup it cannot confirm
 * keeps the lease open.
 *
 * The runtime is a fake one (a shell script): each command named in its
 * block list starts a child that blocks opening a FIFO nobody writes (as
 * runc init did) and waits for it, recording the child's pid. Every test
 * runs under alarm(): on the old code each one hangs and the alarm fails
 * it. Bounds on time are generous (30 s); no root, no runc needed.
 */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "provider-oci/oci_internal.h"
#include "ota/oci.h"

#define ID "ota-0123456789abcdef01234567"
/* the hang guard: longer than any bound below, shorter than the default
 * deadline of run (60 s) that the interruption tests must not wait for */
#define GUARD_S 50
#define BOUND_MS 30000.0

typedef struct world {
	char *tmp;
	char fakert[512], log[512], pids[512], fifo[512], statef[512];
	char rtroot[512], state[512], db[512], repo[512], rootfs[512];
} world;

/* block: the commands that block, space-separated ("run state"). */
static void world_make(world *w, const char *block)
{
	memset(w, 0, sizeof *w);
	w->tmp = test_tmpdir();
	test_pathf(w->fakert, sizeof w->fakert, w->tmp, "fakert");
	test_pathf(w->log, sizeof w->log, w->tmp, "rt.log");
	test_pathf(w->pids, sizeof w->pids, w->tmp, "blocked.pids");
	test_pathf(w->fifo, sizeof w->fifo, w->tmp, "fifo");
	test_pathf(w->statef, sizeof w->statef, w->tmp, "state.json");
	test_pathf(w->rtroot, sizeof w->rtroot, w->tmp, "rtroot");
	test_pathf(w->state, sizeof w->state, w->tmp, "state");
	test_pathf(w->db, sizeof w->db, w->tmp, "leases.db");
	test_mkdir_in(w->tmp, "repo", w->repo, sizeof w->repo);
	test_mkdir_in(w->tmp, "rootfs", w->rootfs, sizeof w->rootfs);
	assert_int_equal(mkfifo(w->fifo, 0600), 0);
	char text[4096];
	/* argv: --root ROOT CMD ...; `state` prints state.json when there is
	 * one, else "does not exist"; `run` fails; the rest succeed */
	int n = snprintf(text, sizeof text,
	                 "#!/bin/sh\n"
	                 "echo \"$*\" >> '%s'\n"
	                 "cmd=$3\n"
	                 "case ' %s ' in\n"
	                 "  *\" $cmd \"*) cat '%s' >/dev/null & echo $! >> '%s'; wait; exit 0;;\n"
	                 "esac\n"
	                 "case $cmd in\n"
	                 "  state) if [ -f '%s' ]; then cat '%s'; exit 0; fi\n"
	                 "         echo 'container does not exist' >&2; exit 1;;\n"
	                 "  run) echo 'no containers in this test' >&2; exit 1;;\n"
	                 "  --version) echo 'fakert version 1'; exit 0;;\n"
	                 "esac\n"
	                 "exit 0\n",
	                 w->log, block, w->fifo, w->pids, w->statef, w->statef);
	assert_true(n > 0 && (size_t)n < sizeof text);
	test_put(w->fakert, text, 0755);
}

static void world_free(world *w)
{
	test_rmtree(w->tmp);
	free(w->tmp);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* pid is gone: absent, or a zombie (reaped here when it is ours). */
static bool pid_gone(long pid)
{
	(void)waitpid((pid_t)pid, NULL, WNOHANG);
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return true;
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	FILE *f = fopen(p, "r");
	if (f == NULL)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return rp != NULL && rp[1] == ' ' && rp[2] == 'Z';
}

/* Every process the fake runtime blocked in is gone (killed with the
 * command's process group); returns how many blocked. */
static size_t assert_blocked_gone(const world *w)
{
	FILE *f = fopen(w->pids, "r");
	assert_non_null(f);
	size_t n = 0;
	long pid = 0;
	while (fscanf(f, "%ld", &pid) == 1) {
		n++;
		bool gone = false;
		for (int i = 0; i < 500 && !(gone = pid_gone(pid)); i++)
			usleep(10000);
		if (!gone)
			fail_msg("the blocked runtime child %ld is still running", pid);
	}
	fclose(f);
	return n;
}

/* How many lines of the runtime's log hold word (as its command). */
static size_t log_count(const world *w, const char *cmd)
{
	FILE *f = fopen(w->log, "r");
	if (f == NULL)
		return 0;
	char line[4096], want[64];
	snprintf(want, sizeof want, " %s", cmd);
	size_t n = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		/* "--root ROOT CMD ..." */
		char *p = strchr(line, ' ');
		p = p != NULL ? strchr(p + 1, ' ') : NULL;
		if (p != NULL && strncmp(p, want, strlen(want)) == 0 &&
		    (p[strlen(want)] == ' ' || p[strlen(want)] == '\n'))
			n++;
	}
	fclose(f);
	return n;
}

static ota_oci_run_opts opts_of(world *w)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = OTA_OCI_RUNC;
	o.runtime.binary = w->fakert;
	o.runtime.root = w->rtroot;
	o.runtime.version = "fake"; /* not asked: --version is tested alone */
	o.state_dir = w->state;
	o.lease_db = w->db;
	o.txn = "txn-deadline";
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

/* The lease rows (all) of w's database (new). */
static json_t *lease_rows(const world *w)
{
	oci_lease_db *db = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_lease_open(w->db, &db, &e), OTA_OK);
	json_t *rows = NULL;
	assert_ota(oci_lease_rows(db, false, &rows, &e), OTA_OK);
	oci_lease_close(db);
	assert_int_equal(json_array_size(rows), 1);
	return rows;
}

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s != NULL ? s : "(null)";
}

/* The terminal record names the error, the run never started. */
static void assert_terminal(const ota_oci_result *r, const char *code, const char *where)
{
	assert_int_equal(r->terminal, OTA_OCI_NOT_STARTED);
	assert_false(r->started);
	const json_t *t = r->terminal_record;
	assert_non_null(t);
	assert_string_equal(str_of(t, "state"), "not_started");
	const json_t *er = json_object_get(t, "error");
	assert_string_equal(str_of(er, "code"), code);
	assert_string_equal(str_of(er, "where"), where);
}

/* The deadlines: per command by default, one for all when configured. */
static void test_deadlines(void **state)
{
	(void)state;
	oci_rt rt;
	memset(&rt, 0, sizeof rt);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "run"), OTA_OCI_RT_TIMEOUT_CREATE);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "create"), OTA_OCI_RT_TIMEOUT_CREATE);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "start"), OTA_OCI_RT_TIMEOUT_START);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "exec"), OTA_OCI_RT_TIMEOUT_START);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "delete"), OTA_OCI_RT_TIMEOUT_DELETE);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "state"), OTA_OCI_RT_TIMEOUT_QUICK);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "kill"), OTA_OCI_RT_TIMEOUT_QUICK);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "--version"), OTA_OCI_RT_TIMEOUT_QUICK);
	assert_int_equal(OTA_OCI_RT_TIMEOUT_CREATE, 60);
	assert_int_equal(OTA_OCI_RT_TIMEOUT_START, 30);
	assert_int_equal(OTA_OCI_RT_TIMEOUT_DELETE, 30);
	assert_int_equal(OTA_OCI_RT_TIMEOUT_QUICK, 10);
	rt.timeout_seconds = 7;
	assert_int_equal(oci_rt_deadline_seconds(&rt, "run"), 7);
	assert_int_equal(oci_rt_deadline_seconds(&rt, "state"), 7);
	rt.timeout_seconds = OTA_OCI_RT_TIMEOUT_MAX + 1; /* out of range: the defaults */
	assert_int_equal(oci_rt_deadline_seconds(&rt, "run"), OTA_OCI_RT_TIMEOUT_CREATE);
}

/* A blocked `run --detach` is killed at its deadline with its process
 * group: oci_runtime_timeout (where run), not started, the cleanup still
 * runs (state answers unknown: confirmed) and the lease is finalized with
 * the error. */
static void test_run_times_out(void **state)
{
	(void)state;
	world w;
	world_make(&w, "run");
	ota_oci_run_opts o = opts_of(&w);
	o.runtime_timeout_seconds = 2;
	ota_oci_result r;
	ota_error e;
	alarm(GUARD_S);
	double t0 = now_ms();
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_TIMEOUT);
	double took = now_ms() - t0;
	alarm(0);
	assert_true(took >= 1900.0 && took < BOUND_MS);
	assert_string_equal(e.where, "run");
	assert_non_null(strstr(e.what, "within 2 s"));
	assert_false(r.interrupted);
	assert_terminal(&r, "oci_runtime_timeout", "run");
	const json_t *cl = json_object_get(r.terminal_record, "cleanup");
	assert_true(json_is_true(json_object_get(cl, "confirmed")));
	assert_int_equal(assert_blocked_gone(&w), 1);
	assert_int_equal(log_count(&w, "state"), 1); /* the cleanup asked */
	json_t *rows = lease_rows(&w);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(str_of(row, "terminal"), "not_started");
	assert_string_equal(str_of(row, "detail"), "oci_runtime_timeout");
	json_decref(rows);
	/* no bundle is left */
	char bundles[600];
	test_pathf(bundles, sizeof bundles, w.state, "bundles");
	assert_int_equal(test_count_entries(bundles, false), 0);
	ota_oci_result_clear(&r);
	world_free(&w);
}

/* The run's `run` and the cleanup's `state` both block: each is bounded,
 * the run fails with the first error, and the lease stays open (the
 * container's removal is not confirmed). */
static void test_cleanup_blocked_keeps_lease(void **state)
{
	(void)state;
	world w;
	world_make(&w, "run state");
	ota_oci_run_opts o = opts_of(&w);
	o.runtime_timeout_seconds = 1;
	ota_oci_result r;
	ota_error e;
	alarm(GUARD_S);
	double t0 = now_ms();
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_RUNTIME_TIMEOUT);
	double took = now_ms() - t0;
	alarm(0);
	assert_true(took < BOUND_MS);
	assert_string_equal(e.where, "run");
	assert_terminal(&r, "oci_runtime_timeout", "run");
	/* the state could not be read: nothing confirmed, nothing proved (the
	 * container never ran) */
	const json_t *cl = json_object_get(r.terminal_record, "cleanup");
	assert_true(json_is_false(json_object_get(cl, "confirmed")));
	assert_true(json_is_false(json_object_get(cl, "pidns_proved")));
	assert_int_equal(assert_blocked_gone(&w), 2);
	json_t *rows = lease_rows(&w);
	assert_true(json_is_null(json_object_get(json_array_get(rows, 0), "terminal")));
	json_decref(rows);
	ota_oci_result_clear(&r);
	world_free(&w);
}

static volatile sig_atomic_t g_cancel;

static void on_term(int sig)
{
	(void)sig;
	g_cancel = 1;
}

/* SIGTERM to this process after a second, as an operator's kill. */
static void *term_later(void *arg)
{
	(void)arg;
	sleep(1);
	kill(getpid(), SIGTERM);
	return NULL;
}

/* SIGTERM while `run --detach` blocks (default deadlines: 60 s for run)
 * ends it at once: oci_interrupted, not started, the blocked processes
 * killed, the cleanup attempted. With blocked_state the cleanup's `state`
 * blocks too: it is bounded by its own deadline (10 s) and the lease
 * stays open. */
static void interrupted_run(bool blocked_state)
{
	world w;
	world_make(&w, blocked_state ? "run state" : "run");
	ota_oci_run_opts o = opts_of(&w);
	g_cancel = 0;
	o.cancel = &g_cancel;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	assert_int_equal(sigaction(SIGTERM, &sa, &old), 0);
	pthread_t th;
	ota_oci_result r;
	ota_error e;
	alarm(GUARD_S);
	double t0 = now_ms();
	assert_int_equal(pthread_create(&th, NULL, term_later, NULL), 0);
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_OCI_INTERRUPTED);
	double took = now_ms() - t0;
	alarm(0);
	pthread_join(th, NULL);
	assert_int_equal(sigaction(SIGTERM, &old, NULL), 0);
	assert_int_equal(g_cancel, 1);
	/* well before run's own deadline (60 s): the signal ended it */
	assert_true(took < BOUND_MS);
	assert_true(r.interrupted);
	assert_false(r.timed_out);
	assert_terminal(&r, "oci_interrupted", "run");
	assert_int_equal(assert_blocked_gone(&w), blocked_state ? 2 : 1);
	assert_int_equal(log_count(&w, "state"), 1); /* cleanup attempted */
	json_t *rows = lease_rows(&w);
	const json_t *row = json_array_get(rows, 0);
	if (blocked_state) {
		assert_true(json_is_null(json_object_get(row, "terminal")));
		const json_t *cl = json_object_get(r.terminal_record, "cleanup");
		assert_true(json_is_false(json_object_get(cl, "confirmed")));
		assert_true(json_is_false(json_object_get(cl, "pidns_proved")));
	} else {
		assert_string_equal(str_of(row, "terminal"), "not_started");
		assert_string_equal(str_of(row, "detail"), "oci_interrupted");
		const json_t *cl = json_object_get(r.terminal_record, "cleanup");
		assert_true(json_is_true(json_object_get(cl, "confirmed")));
	}
	json_decref(rows);
	ota_oci_result_clear(&r);
	world_free(&w);
}

static void test_run_sigterm(void **state)
{
	(void)state;
	interrupted_run(false);
}

static void test_run_sigterm_cleanup_blocked(void **state)
{
	(void)state;
	interrupted_run(true);
}

static void rt_of(world *w, oci_rt *rt, int timeout)
{
	ota_oci_runtime_opts ro = {OTA_OCI_RUNC, w->fakert, w->rtroot, NULL};
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_rt_init(rt, &ro, &e), OTA_OK);
	rt->timeout_seconds = timeout;
}

/* `state` blocked: oci_runtime_timeout (where state), the status empty. */
static void test_state_times_out(void **state)
{
	(void)state;
	world w;
	world_make(&w, "state");
	oci_rt rt;
	rt_of(&w, &rt, 1);
	bool exists = true;
	char status[32] = "x";
	long pid = 7;
	ota_error e;
	ota_error_clear(&e);
	alarm(GUARD_S);
	double t0 = now_ms();
	assert_ota(oci_rt_state(&rt, ID, &exists, status, &pid, &e), OTA_ERR_OCI_RUNTIME_TIMEOUT);
	double took = now_ms() - t0;
	alarm(0);
	assert_true(took >= 900.0 && took < BOUND_MS);
	assert_string_equal(e.where, "state");
	assert_false(exists);
	assert_string_equal(status, "");
	assert_int_equal(pid, 0);
	assert_int_equal(assert_blocked_gone(&w), 1);
	/* the cancel flag does not end a cleanup command: only its deadline */
	volatile sig_atomic_t set = 1;
	rt.cancel = &set;
	ota_error_clear(&e);
	assert_ota(oci_rt_state(&rt, ID, &exists, status, &pid, &e), OTA_ERR_OCI_RUNTIME_TIMEOUT);
	world_free(&w);
}

/* Finalization of a running container whose `kill` and `delete` block:
 * each is bounded, nothing is claimed (not killed, not deleted) and the
 * removal is unconfirmed (its init, a child here, is alive). */
static void test_finalize_kill_delete_blocked(void **state)
{
	(void)state;
	world w;
	world_make(&w, "kill delete");
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	char js[256];
	snprintf(js, sizeof js, "{\"id\":\"%s\",\"status\":\"running\",\"pid\":%ld}", ID,
	         (long)child);
	test_put(w.statef, js, 0644);
	oci_rt rt;
	rt_of(&w, &rt, 1);
	json_t *cleanup = NULL, *cg = json_array();
	ota_error e;
	ota_error_clear(&e);
	alarm(GUARD_S);
	double t0 = now_ms();
	assert_ota(oci_finalize_container(&rt, ID, (long)child, NULL, cg, &cleanup, &e),
	           OTA_ERR_OCI_CLEANUP_UNCONFIRMED);
	double took = now_ms() - t0;
	alarm(0);
	assert_true(took < BOUND_MS);
	assert_non_null(cleanup);
	assert_true(json_is_true(json_object_get(cleanup, "existed")));
	assert_true(json_is_false(json_object_get(cleanup, "killed")));
	assert_true(json_is_false(json_object_get(cleanup, "deleted")));
	assert_true(json_is_false(json_object_get(cleanup, "confirmed")));
	assert_int_equal(log_count(&w, "kill"), 1);
	assert_int_equal(log_count(&w, "delete"), 1);
	assert_int_equal(assert_blocked_gone(&w), 2);
	json_decref(cleanup);
	json_decref(cg);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	world_free(&w);
}

/* `--version` blocked: bounded by its deadline, and ended by the cancel
 * flag (a forward command); the version is unknown (""). */
static void test_version_blocked(void **state)
{
	(void)state;
	world w;
	world_make(&w, "--version");
	oci_rt rt;
	rt_of(&w, &rt, 1);
	char ver[64] = "x";
	alarm(GUARD_S);
	double t0 = now_ms();
	oci_rt_version(&rt, ver, sizeof ver);
	double took = now_ms() - t0;
	assert_string_equal(ver, "");
	assert_true(took >= 900.0 && took < BOUND_MS);
	rt.timeout_seconds = 0; /* the default, 10 s: the flag ends it first */
	volatile sig_atomic_t set = 1;
	rt.cancel = &set;
	t0 = now_ms();
	oci_rt_version(&rt, ver, sizeof ver);
	took = now_ms() - t0;
	alarm(0);
	assert_string_equal(ver, "");
	assert_true(took < 5000.0);
	/* the first call's blocked child, and the second's when its shell got
	 * as far as starting one before the flag ended it (under load it may
	 * not have): either way none is left */
	size_t blocked = assert_blocked_gone(&w);
	assert_true(blocked == 1 || blocked == 2);
	world_free(&w);
}

/* A command that ends in time is unchanged: its output and status. */
static void test_in_time(void **state)
{
	(void)state;
	world w;
	world_make(&w, "");
	oci_rt rt;
	rt_of(&w, &rt, 1);
	volatile sig_atomic_t unset = 0;
	rt.cancel = &unset;
	char ver[64] = "";
	oci_rt_version(&rt, ver, sizeof ver);
	assert_string_equal(ver, "fakert version 1");
	bool exists = true;
	char status[32];
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_rt_state(&rt, ID, &exists, status, NULL, &e), OTA_OK);
	assert_false(exists);
	world_free(&w);
}

/* An out-of-range runtime_timeout_seconds is a usage error before
 * anything is prepared. */
static void test_bad_timeout(void **state)
{
	(void)state;
	world w;
	world_make(&w, "");
	ota_oci_run_opts o = opts_of(&w);
	ota_oci_result r;
	ota_error e;
	o.runtime_timeout_seconds = OTA_OCI_RT_TIMEOUT_MAX + 1;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_USAGE);
	assert_string_equal(e.where, "runtime_timeout_seconds");
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	ota_oci_result_clear(&r);
	o.runtime_timeout_seconds = -1;
	assert_ota(run(&w, &o, &r, &e), OTA_ERR_USAGE);
	ota_oci_result_clear(&r);
	assert_false(test_lexists(w.db));
	assert_false(test_lexists(w.log));
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_in_time),
		cmocka_unit_test(test_bad_timeout),
		cmocka_unit_test(test_state_times_out),
		cmocka_unit_test(test_version_blocked),
		cmocka_unit_test(test_finalize_kill_delete_blocked),
		cmocka_unit_test(test_run_times_out),
		cmocka_unit_test(test_cleanup_blocked_keeps_lease),
		cmocka_unit_test(test_run_sigterm),
		cmocka_unit_test(test_run_sigterm_cleanup_blocked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
