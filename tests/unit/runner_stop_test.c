/*
 * A two-segment lane (workflow ci: setup build, run check) on oci_local
 * (root, runc) stopped by an error after its first segment ran through:
 * the receipt ota_runner_run writes must not claim a lane that was enforced
 * through completion. The error is a nonce store the runner cannot write:
 * the test's clock (ota_runner_opts.oci.clock, read by the runner before
 * every signature) takes the store's write lock on its own sqlite
 * connection once a given number of challenges has been consumed, and the
 * runner's store waits for it at most 100 ms (nonce_store_busy):
 *  - after the first segment's terminal record (3 consumed: capability,
 *    initial, terminal): the transition to the second segment cannot be
 *    signed and the second segment never starts;
 *  - after the first segment's initial record (2 consumed): its terminal
 *    record cannot be signed and the lane stops there.
 * In both not every segment ran and the error is named; the lane is
 * enforcement_lost when the first segment ended proved, and
 * enforcement_unknown_after_interruption (the first segment too) when its
 * end has no signed record, as ota-verify archive derives both. No production hook: the clock and the store are the runner's own
 * options.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/json.h"
#include "ota/runner.h"

static char *contract_text(void)
{
	char os[16], arch[16], var[16];
	ota_oci_host_platform(os, arch, var);
	char *buf = malloc(4096);
	assert_non_null(buf);
	snprintf(buf, 4096,
	         "version: 1\n"
	         "project:\n  name: runner-stop\n"
	         "execution:\n  supported: [container]\n  default_context: box\n"
	         "  lifecycle: ephemeral\n  backends:\n    container:\n      image: bb:1\n"
	         "      platform: %s/%s\n      engines: [docker]\n"
	         "  contexts:\n    box:\n      backend: container\n      lifecycle: ephemeral\n"
	         "tasks:\n  build:\n    context: box\n    run: \"echo built > reports/build.txt\"\n"
	         "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only, "
	         "writable_paths: [reports], protected_paths: [ota.yaml]}\n"
	         "      network: {default: deny}\n    safe_for_agent: true\n"
	         "  check:\n    context: box\n"
	         "    run: \"test -s reports/build.txt && echo checked > reports/check.txt\"\n"
	         "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only, "
	         "writable_paths: [reports], protected_paths: [ota.yaml]}\n"
	         "      network: {default: deny}\n    safe_for_agent: true\n"
	         "workflows:\n  default: ci\n  ci:\n    setup: {task: build}\n"
	         "    run: {task: check}\n"
	         "agent:\n  safe_tasks: [build, check]\n",
	         os, arch);
	return buf;
}

static ota_policy *compile(json_t **adm)
{
	char *yaml = contract_text();
	bool admitted = false;
	ota_policy *p = test_policy_admit_host(yaml, OTA_LANE_WORKFLOW, "ci", adm, &admitted);
	free(yaml);
	assert_true(admitted);
	assert_int_equal(ota_policy_segment_count(p), 2);
	return p;
}

/* The system time; once `after` challenges are consumed in the store, the
 * store's write lock is taken (and held) on the test's connection. */
typedef struct locking_clock {
	sqlite3 *db;
	long long after;
	bool locked;
} locking_clock;

static int64_t locking_now(void *ctx)
{
	locking_clock *c = ctx;
	if (!c->locked) {
		sqlite3_stmt *st = NULL;
		long long consumed = -1;
		if (sqlite3_prepare_v2(c->db,
		                       "SELECT count(*) FROM challenges WHERE consumed_at IS NOT NULL",
		                       -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			consumed = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (consumed >= c->after) {
			int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
			if (rc != SQLITE_OK)
				fprintf(stderr, "locking clock: BEGIN IMMEDIATE: %s\n", sqlite3_errstr(rc));
			c->locked = rc == SQLITE_OK;
		}
	}
	return ota_clock_now(NULL);
}

static const char *sget(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Runs the ci lane with the store locked after `after` consumptions; the
 * receipt (new) and the run's error into *rc_out / *e. */
static json_t *run_locked_after(long long after, ota_err *rc_out, ota_error *e)
{
	char *tmp = test_tmpdir();
	char repo[512], store[512], cmd[2048], db[512], ndb[512], rtroot[256], cache[600];
	snprintf(repo, sizeof repo, "%s/repo", tmp);
	snprintf(store, sizeof store, "%s/images", tmp);
	snprintf(db, sizeof db, "%s/leases.db", tmp);
	snprintf(ndb, sizeof ndb, "%s/nonces.db", tmp);
	snprintf(cache, sizeof cache, "%s/rootfs", tmp);
	snprintf(rtroot, sizeof rtroot, "/run/ota/test-runner-stop-%ld", (long)getpid());
	char *script = test_src_path("scripts/make-test-rootfs.sh");
	snprintf(cmd, sizeof cmd,
	         "mkdir -p '%s/reports' && echo v > '%s/ota.yaml' && OTA_CACHE='%s/cache' bash '%s' "
	         "busybox-image '%s' bb:1 >/dev/null",
	         repo, repo, tmp, script, store);
	free(script);
	assert_int_equal(system(cmd), 0);
	json_t *adm = NULL;
	ota_policy *p = compile(&adm);
	ota_key *key = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &key), OTA_OK);
	ota_nonce_opts no;
	ota_nonce_opts_init(&no);
	no.busy_timeout_ms = 100;
	ota_nonce_store *ns = NULL;
	assert_ota(ota_nonce_store_open(ndb, &no, &ns, NULL), OTA_OK);
	locking_clock lc = {NULL, after, false};
	assert_int_equal(sqlite3_open_v2(ndb, &lc.db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);

	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = repo;
	ro.image_store = store;
	ro.rootfs_cache = cache;
	ro.oci.runtime.root = rtroot;
	ro.oci.lease_db = db;
	ro.oci.txn = "txn-runner-stop";
	ro.oci.clock.now = locking_now;
	ro.oci.clock.ctx = &lc;
	ro.runner_key = key;
	ro.nonces = ns;
	ro.issuer = "runner:test";
	ro.trust_root = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
	json_t *receipt = NULL;
	int status = -1;
	ota_error_clear(e);
	*rc_out = ota_runner_run(p, adm, &ro, &receipt, &status, e);
	assert_true(lc.locked);
	assert_int_equal(sqlite3_exec(lc.db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(lc.db);
	assert_int_equal(status, 0);
	/* the first segment's task ran; the second's never did */
	snprintf(cmd, sizeof cmd, "test -s '%s/reports/build.txt' && ! test -e '%s/reports/check.txt'",
	         repo, repo);
	assert_int_equal(system(cmd), 0);
	ota_nonce_store_close(ns);
	ota_key_free(key);
	json_decref(adm);
	ota_policy_free(p);
	rmdir(rtroot);
	test_rmtree(tmp);
	free(tmp);
	assert_non_null(receipt);
	return receipt;
}

static bool seq_phase(const json_t *rec, const char *phase)
{
	const char *p = json_string_value(json_object_get(rec, "phase"));
	return p != NULL && strcmp(p, phase) == 0;
}

/* What every such receipt says: the lane (status lane) and its first
 * segment (status seg0) are not both enforced, not every segment ran, the
 * error is the store's, and no control is claimed enforced. */
static void assert_stopped_lane(const json_t *receipt, ota_err rc, const ota_error *e,
                                const char *lane, const char *seg0)
{
	assert_ota(rc, OTA_ERR_NONCE_BUSY);
	assert_int_equal(e->code, OTA_ERR_NONCE_BUSY);
	const json_t *sp = json_object_get(receipt, "sandbox_policy");
	assert_string_equal(sget(sp, "status"), lane);
	assert_string_equal(sget(sp, "status"), ota_archive_lane_status(lane, true));
	assert_true(json_is_true(json_object_get(receipt, "execution_started")));
	assert_true(json_is_false(json_object_get(receipt, "all_segments_ran")));
	assert_int_equal(json_integer_value(json_object_get(receipt, "exit_status")), 0);
	assert_string_equal(sget(json_object_get(receipt, "error"), "code"),
	                    ota_err_name(OTA_ERR_NONCE_BUSY));
	const json_t *segs = json_object_get(sp, "segments");
	assert_int_equal(json_array_size(segs), 1);
	assert_string_equal(sget(json_array_get(segs, 0), "status"), seg0);
	const json_t *ctl = json_object_get(sp, "runtime_controls");
	assert_true(json_array_size(ctl) >= 4);
	for (size_t i = 0; i < json_array_size(ctl); i++)
		assert_string_equal(sget(json_array_get(ctl, i), "application"), "not_proved");
}

/* The transition to the second segment cannot be signed. */
static void test_transition_unsigned(void **state)
{
	(void)state;
	if (geteuid() != 0 || system("command -v runc >/dev/null 2>&1") != 0)
		skip();
	ota_err rc = OTA_OK;
	ota_error e;
	json_t *receipt = run_locked_after(3, &rc, &e);
	assert_stopped_lane(receipt, rc, &e, "enforcement_lost", "enforced_through_completion");
	/* the first segment is whole: capability, initial, terminal signed */
	const json_t *atts = json_object_get(receipt, "attestations");
	assert_int_equal(json_array_size(atts), 3);
	assert_string_equal(sget(json_array_get(atts, 2), "kind"), "terminal_application");
	const json_t *seg = json_array_get(json_object_get(json_object_get(receipt, "sandbox_policy"),
	                                                   "segments"),
	                                   0);
	assert_null(json_object_get(seg, "error"));
	assert_non_null(sget(seg, "terminal_attestation_identity"));
	/* the transition nothing signed is not listed, nor is its record */
	assert_int_equal(json_array_size(json_object_get(
				 json_object_get(receipt, "sandbox_policy"), "transition_identities")),
	                 0);
	const json_t *ev = json_object_get(receipt, "evidence");
	for (size_t i = 0; i < json_array_size(ev); i++)
		assert_false(seq_phase(json_array_get(ev, i), "transition"));
	json_decref(receipt);
}

/* The first segment's terminal record cannot be signed: the lane stops
 * there, before its second segment. */
static void test_terminal_unsigned(void **state)
{
	(void)state;
	if (geteuid() != 0 || system("command -v runc >/dev/null 2>&1") != 0)
		skip();
	ota_err rc = OTA_OK;
	ota_error e;
	json_t *receipt = run_locked_after(2, &rc, &e);
	/* the task ran through, but nothing signed says so: unknown (the
	 * runner said enforced_through_completion for the segment, and
	 * enforcement_lost for a lane whose verifier derives unknown) */
	assert_stopped_lane(receipt, rc, &e, "enforcement_unknown_after_interruption",
	                    "enforcement_unknown_after_interruption");
	const json_t *atts = json_object_get(receipt, "attestations");
	assert_int_equal(json_array_size(atts), 2);
	const json_t *seg = json_array_get(json_object_get(json_object_get(receipt, "sandbox_policy"),
	                                                   "segments"),
	                                   0);
	assert_string_equal(sget(seg, "error"), ota_err_name(OTA_ERR_NONCE_BUSY));
	assert_null(json_object_get(seg, "terminal_attestation_identity"));
	json_decref(receipt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transition_unsigned),
		cmocka_unit_test(test_terminal_unsigned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
