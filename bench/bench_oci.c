/*
 * bench_oci: wall time of a full enforced oci_local run of `true`
 * (admission, lease, render, create, host inspection, canaries, start, wait,
 * terminal inspection, delete, confirmation, lease finalization) against a
 * bare `run` + `delete --force` of the same rendered bundle on the same
 * runtime, in the same process and run. Medians over N runs (default 15;
 * OTA_BENCH_OCI_N). Needs root and the runtimes; skips a runtime that is
 * missing (OTA_BENCH_OCI_RUNTIME=runc|crun: that one only). The busybox
 * rootfs comes from scripts/make-test-rootfs.sh.
 *
 * Two enforced figures per runtime, interleaved with the baseline in each
 * round: `oci_enforced_run_true_*` (ota_oci_run alone) and
 * `oci_enforced_signed_run_true_*`, the same run with the runner's signing
 * of both application records as runner/runner.c does it: both challenges
 * issued in one nonce-store commit on a thread during admission and create;
 * the initial record signed (COSE_Sign1, ES256) before the go through
 * on_initial and its challenge consumed on a thread while the task runs;
 * the terminal record signed and its challenge consumed on a thread from
 * on_terminal, while the lease's terminal state commits; each record
 * acknowledged only after its consumption committed (docs/oci-local.md).
 * The nonce store is opened once per runtime, as `ota run` opens it once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../provider-oci/oci_internal.h"
#include "ota/admission.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/oci.h"

#include "bench_util.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A nonce-store batch on a thread (runner/runner.c nonce_job). */
typedef struct bench_job {
	ota_nonce_store *ns;
	ota_nonce_binding b;
	ota_nonce_op ops[2];
	size_t n;
	int64_t now;
	ota_err rc;
	pthread_t th;
	bool running;
} bench_job;

static void *bench_job_main(void *arg)
{
	bench_job *j = arg;
	j->rc = ota_nonce_store_commit_batch(j->ns, j->ops, j->n, j->now, NULL);
	for (size_t i = 0; j->rc == OTA_OK && i < j->n; i++)
		j->rc = j->ops[i].result;
	return NULL;
}

static void bench_job_start(bench_job *j)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	j->running = pthread_create(&j->th, NULL, bench_job_main, j) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!j->running)
		bench_job_main(j);
}

static ota_err bench_job_join(bench_job *j)
{
	if (j->running) {
		pthread_join(j->th, NULL);
		j->running = false;
	}
	return j->rc;
}

typedef struct bench_signer {
	ota_key *key;
	ota_nonce_store *nonces;
	char initial_id[OTA_ID_LEN + 1];
	bench_job pre;       /* both challenges of a run, one commit, issued ahead */
	bench_job cons;      /* the initial challenge's consumption, while the task runs */
	bool cons_started;
	uint8_t *init_msg;   /* the initial COSE_Sign1, acknowledged after cons */
	size_t init_ml;
	/* the terminal record: signed and consumed on a thread from on_terminal */
	char term_rid[OTA_ID_LEN + 1], term_boundary[64], term_id[OTA_ID_LEN + 1];
	int64_t term_now;
	uint8_t *term_msg;
	size_t term_ml;
	ota_err term_rc;
	pthread_t term_th;
	bool term_running, term_started;
} bench_signer;

static const ota_nonce_binding bench_binding = {"bench", "runner:local", "oci_local"};

/* Signs record against ch (as runner/runner.c sign_only); *msg new. */
static ota_err bench_sign_only(bench_signer *s, const char *kind, const json_t *record,
                               const char *rid_in, const char *boundary, const char *prior,
                               const ota_challenge *ch, int64_t now, char out_id[OTA_ID_LEN + 1],
                               uint8_t **msg, size_t *ml, ota_error *err)
{
	char rid[OTA_ID_LEN + 1];
	ota_err rc = OTA_OK;
	if (record != NULL)
		rc = ota_json_identity(record, rid, err);
	else
		snprintf(rid, sizeof rid, "%s", rid_in);
	if (rc != OTA_OK)
		return rc;
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "runner:local");
	a.iat = now;
	a.exp = now + 300;
	memcpy(a.nonce, ch->nonce, ch->nonce_len);
	a.nonce_len = ch->nonce_len;
	snprintf(a.kind, sizeof a.kind, "%s", kind);
	snprintf(a.txn, sizeof a.txn, "bench");
	snprintf(a.trust_root, sizeof a.trust_root, "none");
	snprintf(a.provider, sizeof a.provider, "oci_local");
	snprintf(a.adapter, sizeof a.adapter, "%064d", 0);
	ota_oci_host_platform(a.platform_os, a.platform_arch, a.platform_variant);
	snprintf(a.segment, sizeof a.segment, "bench");
	snprintf(a.boundary, sizeof a.boundary, "%s", boundary);
	if (prior != NULL) {
		snprintf(a.prior, sizeof a.prior, "%s", prior);
		a.has_prior = true;
	}
	uint8_t body[2 + OTA_ID_LEN];
	body[0] = 0x78;
	body[1] = (uint8_t)OTA_ID_LEN;
	memcpy(body + 2, rid, OTA_ID_LEN);
	a.body = ota_bytes_make(body, sizeof body);
	uint8_t *payload = NULL;
	size_t pl = 0;
	rc = ota_attestation_encode(&a, &payload, &pl);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, kind, "cannot encode the attestation payload");
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	rc = ota_cose_sign1_sign(s->key, ota_bytes_make(payload, pl), &so, msg, ml, err);
	free(payload);
	if (rc == OTA_OK)
		rc = ota_sha256_id(ota_bytes_make(*msg, *ml), out_id);
	return rc;
}

/* The acknowledgement of a signed record (the runner appends it as base64). */
static ota_err bench_ack(uint8_t *msg, size_t ml)
{
	char *b64 = NULL;
	ota_err rc = ota_base64_encode(ota_bytes_make(msg, ml), &b64);
	free(b64);
	free(msg);
	return rc;
}

/* Before a signed run: both challenges issued in one commit, on a thread. */
static void bench_presign(bench_signer *s)
{
	memset(&s->pre, 0, sizeof s->pre);
	s->pre.ns = s->nonces;
	s->pre.b = bench_binding;
	s->pre.n = 2;
	for (size_t i = 0; i < 2; i++) {
		s->pre.ops[i].kind = OTA_NONCE_OP_ISSUE;
		s->pre.ops[i].binding = &s->pre.b;
	}
	s->pre.now = ota_clock_now(NULL);
	s->cons_started = false;
	bench_job_start(&s->pre);
}

static ota_err bench_on_initial(void *ctx, const json_t *initial, const json_t *applied,
                                ota_error *err)
{
	(void)applied;
	bench_signer *s = ctx;
	const char *lease = json_string_value(json_object_get(initial, "lease"));
	ota_err rc = bench_job_join(&s->pre);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "nonces", "challenge issue failed");
	int64_t now = ota_clock_now(NULL);
	rc = bench_sign_only(s, "initial_application", initial, NULL,
	                     lease != NULL ? lease : "unknown", NULL, &s->pre.ops[0].challenge, now, s->initial_id, &s->init_msg,
	                     &s->init_ml, err);
	if (rc != OTA_OK)
		return rc;
	memset(&s->cons, 0, sizeof s->cons);
	s->cons.ns = s->nonces;
	s->cons.b = bench_binding;
	s->cons.n = 1;
	s->cons.ops[0].kind = OTA_NONCE_OP_CONSUME;
	s->cons.ops[0].nonce =
		ota_bytes_make(s->pre.ops[0].challenge.nonce, s->pre.ops[0].challenge.nonce_len);
	s->cons.ops[0].expect = &s->cons.b;
	s->cons.now = now;
	bench_job_start(&s->cons);
	s->cons_started = true;
	return OTA_OK;
}

static void *bench_term_main(void *arg)
{
	bench_signer *s = arg;
	s->term_rc = bench_sign_only(s, "terminal_application", NULL, s->term_rid, s->term_boundary,
	                             s->initial_id, &s->pre.ops[1].challenge, s->term_now, s->term_id,
	                             &s->term_msg, &s->term_ml, NULL);
	ota_challenge used;
	if (s->term_rc == OTA_OK)
		s->term_rc = ota_nonce_store_consume(s->nonces,
		                                     ota_bytes_make(s->pre.ops[1].challenge.nonce,
		                                                    s->pre.ops[1].challenge.nonce_len),
		                                     &bench_binding, s->term_now, &used, NULL);
	return NULL;
}

/* runner/runner.c on_terminal: before the lease's terminal commit. */
static void bench_on_terminal(void *ctx, const json_t *terminal)
{
	bench_signer *s = ctx;
	const char *cid = json_string_value(json_object_get(terminal, "container_id"));
	if (bench_job_join(&s->pre) != OTA_OK || cid == NULL ||
	    ota_json_identity(terminal, s->term_rid, NULL) != OTA_OK)
		return;
	if (s->cons_started)
		(void)bench_job_join(&s->cons);
	snprintf(s->term_boundary, sizeof s->term_boundary, "%s", cid);
	s->term_now = ota_clock_now(NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->term_running = pthread_create(&s->term_th, NULL, bench_term_main, s) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->term_running)
		bench_term_main(s);
	s->term_started = true;
}

/* After a signed run: the initial record acknowledged once its consumption
 * committed; the terminal record once its thread (sign, consume) is joined,
 * or, without on_terminal, signed and consumed here. */
static ota_err bench_finish(bench_signer *s, const json_t *terminal, const char *boundary,
                            char out_id[OTA_ID_LEN + 1], ota_error *err)
{
	if (s->term_started) {
		s->term_started = false;
		if (s->term_running)
			pthread_join(s->term_th, NULL);
		s->term_running = false;
		ota_err rc = bench_job_join(&s->pre);
		if (s->cons_started) {
			s->cons_started = false;
			ota_err crc = bench_job_join(&s->cons);
			if (crc == OTA_OK)
				crc = bench_ack(s->init_msg, s->init_ml);
			else
				free(s->init_msg);
			s->init_msg = NULL;
			if (rc == OTA_OK)
				rc = crc;
		}
		if (rc == OTA_OK)
			rc = s->term_rc;
		if (rc == OTA_OK) {
			memcpy(out_id, s->term_id, sizeof s->term_id);
			rc = bench_ack(s->term_msg, s->term_ml);
		} else
			free(s->term_msg);
		s->term_msg = NULL;
		return rc == OTA_OK ? OTA_OK : ota_error_set(err, rc, "nonces", "signing failed");
	}
	ota_err rc = bench_job_join(&s->pre);
	if (s->cons_started) {
		s->cons_started = false;
		ota_err crc = bench_job_join(&s->cons);
		if (crc == OTA_OK)
			crc = bench_ack(s->init_msg, s->init_ml);
		else
			free(s->init_msg);
		s->init_msg = NULL;
		if (rc == OTA_OK)
			rc = crc;
	}
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "nonces", "initial challenge");
	int64_t now = ota_clock_now(NULL);
	uint8_t *msg = NULL;
	size_t ml = 0;
	rc = bench_sign_only(s, "terminal_application", terminal, NULL, boundary, s->initial_id,
	                     &s->pre.ops[1].challenge, now, out_id, &msg, &ml, err);
	ota_challenge used;
	if (rc == OTA_OK)
		rc = ota_nonce_store_consume(s->nonces,
		                             ota_bytes_make(s->pre.ops[1].challenge.nonce,
		                                            s->pre.ops[1].challenge.nonce_len),
		                             &bench_binding, now, &used, err);
	if (rc == OTA_OK)
		return bench_ack(msg, ml);
	free(msg);
	return rc;
}

static int sh(const char *cmd)
{
	return system(cmd);
}

static int bench_runtime(ota_oci_runtime_kind kind, const char *src_dir, size_t n)
{
	const char *name = kind == OTA_OCI_CRUN ? "crun" : "runc";
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
	if (sh(cmd) != 0) {
		fprintf(stderr, "bench_oci: %s not installed; skipped\n", name);
		return 0;
	}
	char tmpl[] = "/tmp/ota-bench-oci-XXXXXX";
	char *tmp = mkdtemp(tmpl);
	if (tmp == NULL)
		return 1;
	const char *cache = getenv("OTA_CACHE") != NULL ? getenv("OTA_CACHE") : "/var/cache/ota";
	char rootfs[1024], repo[1024], rtroot[1024], db[1024], state[1024], bundle[1024];
	snprintf(rootfs, sizeof rootfs, "%s/test-rootfs-busybox", cache);
	snprintf(repo, sizeof repo, "%s/repo", tmp);
	snprintf(rtroot, sizeof rtroot, "/run/ota/bench-%ld-%s", (long)getpid(), name);
	snprintf(db, sizeof db, "%s/leases.db", tmp);
	snprintf(state, sizeof state, "%s/state", tmp);
	snprintf(bundle, sizeof bundle, "%s/bare", tmp);
	char setup[8192];
	int sn = snprintf(setup, sizeof setup,
	                  "bash '%s/scripts/make-test-rootfs.sh' busybox '%s' && mkdir -p '%s/out' "
	                  "'%s/.git' '%s' && echo x > '%s/.git/config'",
	                  src_dir, rootfs, repo, repo, bundle, repo);
	if (sn < 0 || (size_t)sn >= sizeof setup || sh(setup) != 0)
		return 1;
	static const char *const argv[] = {"/bin/true"};
	static const char *const w[] = {"out"};
	static const char *const p[] = {".git"};
	ota_oci_plan plan;
	memset(&plan, 0, sizeof plan);
	plan.repo = repo;
	plan.rootfs = rootfs;
	plan.writable = w;
	plan.n_writable = 1;
	plan.protected_paths = p;
	plan.n_protected = 1;
	plan.argv = argv;
	plan.argc = 1;
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = kind;
	o.runtime.root = rtroot;
	o.state_dir = state;
	o.lease_db = db;
	o.txn = "bench";
	char version[128];
	ota_oci_runtime_version(&o.runtime, version, sizeof version);
	o.runtime.version = version;

	/* The bare baseline runs the same rendered config. */
	oci_rt rt;
	ota_oci_admitted *a = NULL;
	json_t *cfg = NULL;
	ota_error e;
	ota_error_clear(&e);
	if (oci_rt_init(&rt, &o.runtime, &e) != OTA_OK ||
	    ota_oci_admit(&plan, rt.root, &a, &e) != OTA_OK ||
	    ota_oci_render(&plan, a, kind, NULL, &cfg, &e) != OTA_OK) {
		fprintf(stderr, "bench_oci: %s: %s\n", ota_err_name(e.code), e.what);
		return 1;
	}
	char cpath[1100];
	snprintf(cpath, sizeof cpath, "%s/config.json", bundle);
	if (json_dump_file(cfg, cpath, JSON_INDENT(1)) != 0)
		return 1;
	json_decref(cfg);
	ota_oci_admitted_free(a);

	double *full = calloc(n, sizeof *full), *bare = calloc(n, sizeof *bare);
	double *sgn = calloc(n, sizeof *sgn);
	if (full == NULL || bare == NULL || sgn == NULL)
		return 1;
	bench_signer signer;
	memset(&signer, 0, sizeof signer);
	char ndb[1100];
	snprintf(ndb, sizeof ndb, "%s/nonces.db", tmp);
	ota_nonce_opts nopts;
	ota_nonce_opts_init(&nopts);
	if (ota_key_generate(OTA_ALG_ES256, &signer.key) != OTA_OK ||
	    ota_nonce_store_open(ndb, &nopts, &signer.nonces, &e) != OTA_OK) {
		fprintf(stderr, "bench_oci: signer setup failed\n");
		return 1;
	}
	ota_oci_run_opts so = o;
	so.on_initial = bench_on_initial;
	so.on_initial_ctx = &signer;
	so.on_terminal = bench_on_terminal;
	so.on_terminal_ctx = &signer;
	int rc = 0;
	for (size_t i = 0; i < n + 2 && rc == 0; i++) { /* 2 warm-up rounds */
		double t0 = now_ms();
		ota_oci_result r;
		ota_error_clear(&e);
		if (ota_oci_run(&plan, &o, &r, &e) != OTA_OK || r.exit_status != 0) {
			fprintf(stderr, "bench_oci: run: %s: %s: %s\n", ota_err_name(e.code), e.where,
			        e.what);
			rc = 1;
		}
		ota_oci_result_clear(&r);
		double ts0 = now_ms();
		ota_error_clear(&e);
		char tid[OTA_ID_LEN + 1];
		bench_presign(&signer);
		ota_err src = ota_oci_run(&plan, &so, &r, &e);
		ota_err frc = bench_finish(&signer, r.terminal_record, r.container_id, tid, &e);
		if (src != OTA_OK || r.exit_status != 0 || frc != OTA_OK) {
			fprintf(stderr, "bench_oci: signed run: %s: %s: %s\n", ota_err_name(e.code),
			        e.where, e.what);
			rc = 1;
		}
		ota_oci_result_clear(&r);
		double ts1 = now_ms();
		double t1 = now_ms();
		char id[64];
		snprintf(id, sizeof id, "ota-bench-%zu", i);
		const char *run_args[] = {"run", "--bundle", bundle, id, NULL};
		const char *del_args[] = {"delete", "--force", id, NULL};
		int st = 0;
		if (oci_rt_cmd(&rt, run_args, -1, -1, NULL, 0, NULL, 0, &st, &e) != OTA_OK || st != 0)
			rc = 1;
		(void)oci_rt_cmd(&rt, del_args, -1, -1, NULL, 0, NULL, 0, &st, &e);
		double t2 = now_ms();
		if (i >= 2) {
			full[i - 2] = ts0 - t0;
			sgn[i - 2] = ts1 - ts0;
			bare[i - 2] = t2 - t1;
			if (getenv("OTA_BENCH_OCI_SAMPLES") != NULL) /* raw samples, stderr */
				fprintf(stderr, "%s %zu full %.2f signed %.2f bare %.2f\n", name, i - 2,
				        ts0 - t0, ts1 - ts0, t2 - t1);
		}
	}
	if (rc == 0) {
		double mf = bench_median(full, n), mb = bench_median(bare, n), ms = bench_median(sgn, n);
		printf("{\"bench\": \"oci_enforced_run_true_%s\", \"value\": %.2f, \"unit\": \"ms\", "
		       "\"baseline\": \"%s_run_delete_true\", \"baseline_value\": %.2f, \"ratio\": %.2f}\n",
		       name, mf, name, mb, mf / mb);
		printf("{\"bench\": \"oci_enforced_signed_run_true_%s\", \"value\": %.2f, \"unit\": "
		       "\"ms\", \"baseline\": \"%s_run_delete_true\", \"baseline_value\": %.2f, "
		       "\"ratio\": %.2f}\n",
		       name, ms, name, mb, ms / mb);
		fflush(stdout);
	}
	free(full);
	free(bare);
	free(sgn);
	ota_nonce_store_close(signer.nonces);
	ota_key_free(signer.key);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'; rmdir '%s' 2>/dev/null", tmp, rtroot);
	(void)sh(cmd);
	return rc;
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "bench_oci: needs root; skipped\n");
		return 0;
	}
	const char *n_env = getenv("OTA_BENCH_OCI_N");
	size_t n = n_env != NULL ? (size_t)strtoul(n_env, NULL, 10) : 15;
	if (n == 0)
		n = 1;
	const char *src = getenv("OTA_SOURCE_DIR");
	char cwd[1024];
	if (src == NULL)
		src = getcwd(cwd, sizeof cwd) != NULL ? cwd : ".";
	/* OTA_BENCH_OCI_RUNTIME=runc|crun: that runtime only (profiling). */
	const char *only = getenv("OTA_BENCH_OCI_RUNTIME");
	int rc = 0;
	if (only == NULL || strcmp(only, "runc") == 0)
		rc |= bench_runtime(OTA_OCI_RUNC, src, n);
	if (only == NULL || strcmp(only, "crun") == 0)
		rc |= bench_runtime(OTA_OCI_CRUN, src, n);
	return rc;
}
