/*
 * bench_oci: wall time of a full enforced oci_local run of `true`
 * (admission, lease, render, create, host inspection, canaries, start, wait,
 * terminal inspection, delete, confirmation, lease finalization) against a
 * bare `run` + `delete --force` of the same rendered bundle on the same
 * runtime, in the same process and run. Medians over N runs (default 15;
 * OTA_BENCH_OCI_N). Needs root and the runtimes; skips a runtime that is
 * missing. The busybox rootfs comes from scripts/make-test-rootfs.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../provider-oci/oci_internal.h"
#include "ota/json.h"
#include "ota/oci.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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
	if (full == NULL || bare == NULL)
		return 1;
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
			full[i - 2] = t1 - t0;
			bare[i - 2] = t2 - t1;
			if (getenv("OTA_BENCH_OCI_SAMPLES") != NULL) /* raw samples, stderr */
				fprintf(stderr, "%s %zu full %.2f bare %.2f\n", name, i - 2, t1 - t0,
				        t2 - t1);
		}
	}
	if (rc == 0) {
		double mf = median(full, n), mb = median(bare, n);
		printf("{\"bench\": \"oci_enforced_run_true_%s\", \"value\": %.2f, \"unit\": \"ms\", "
		       "\"baseline\": \"%s_run_delete_true\", \"baseline_value\": %.2f, \"ratio\": %.2f}\n",
		       name, mf, name, mb, mf / mb);
		fflush(stdout);
	}
	free(full);
	free(bare);
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
	int rc = bench_runtime(OTA_OCI_RUNC, src, n);
	rc |= bench_runtime(OTA_OCI_CRUN, src, n);
	return rc;
}
