/*
 * oci_local end to end on the real runtimes (root): enforcement, the escape
 * catalogue with host-side oracles, refusals, timeouts, interruption.
 * Every test uses its own runtime --root and lease database and leaves
 * no container behind.
 */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/json.h"
#include "ota/oci.h"

typedef struct fx {
	char *tmp;
	char repo[512];
	char rootfs[512];
	char rtroot[512];
	char db[512];
	char state[512];
	ota_oci_runtime_kind kind;
	char out[65536];
	size_t out_len;
} fx;

static const char *rootfs_dir(void)
{
	static char dir[512];
	if (dir[0] == '\0') {
		const char *c = getenv("OTA_CACHE");
		snprintf(dir, sizeof dir, "%s/test-rootfs-busybox", c != NULL ? c : "/var/cache/ota");
		char cmd[2048];
		char *script = test_src_path("scripts/make-test-rootfs.sh");
		snprintf(cmd, sizeof cmd, "bash '%s' busybox '%s'", script, dir);
		free(script);
		assert_int_equal(system(cmd), 0);
	}
	return dir;
}

static void sh(const char *fmt, ...) OTA_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof cmd);
	int rc = system(cmd);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, cmd);
}

static bool runtime_available(ota_oci_runtime_kind k)
{
	return system(k == OTA_OCI_CRUN ? "command -v crun >/dev/null 2>&1"
	                                : "command -v runc >/dev/null 2>&1") == 0;
}

static fx *fx_new(ota_oci_runtime_kind kind)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->kind = kind;
	f->tmp = test_tmpdir();
	snprintf(f->repo, sizeof f->repo, "%s/repo", f->tmp);
	snprintf(f->rootfs, sizeof f->rootfs, "%s", rootfs_dir());
	snprintf(f->rtroot, sizeof f->rtroot, "/run/ota/test-%ld-%s", (long)getpid(),
	         kind == OTA_OCI_CRUN ? "crun" : "runc");
	snprintf(f->db, sizeof f->db, "%s/leases.db", f->tmp);
	snprintf(f->state, sizeof f->state, "%s/state", f->tmp);
	sh("mkdir -p '%s'/reports '%s'/.git '%s'/.github/workflows '%s'/work/cfg '%s'/sub", f->repo,
	   f->repo, f->repo, f->repo, f->repo);
	sh("printf 'orig-git-config' > '%s/.git/config'; printf 'version: 1' > '%s/ota.yaml';"
	   "printf '{}' > '%s/work/cfg/settings.json'; printf 'on: push' > "
	   "'%s/.github/workflows/ci.yml'",
	   f->repo, f->repo, f->repo, f->repo);
	return f;
}

/* Lists container ids under the fixture's runtime root (runtime list -q). */
static int count_containers(const fx *f)
{
	char cmd[1024];
	if (f->kind == OTA_OCI_CRUN)
		snprintf(cmd, sizeof cmd, "crun --root '%s' list -q 2>/dev/null | grep -c . || true",
		         f->rtroot);
	else
		snprintf(cmd, sizeof cmd, "runc --root '%s' list -q 2>/dev/null | grep -c . || true",
		         f->rtroot);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = 0;
	if (fscanf(p, "%d", &n) != 1) /* test code: fixed integer output */
		n = 0;
	pclose(p);
	return n;
}

static void fx_free(fx *f)
{
	assert_int_equal(count_containers(f), 0);
	umount2(f->repo, MNT_DETACH); /* in case a test left a nested mount */
	char p[1024];
	snprintf(p, sizeof p, "%s/sub", f->repo);
	umount2(p, MNT_DETACH);
	snprintf(p, sizeof p, "%s/work/m", f->repo);
	umount2(p, MNT_DETACH);
	test_rmtree(f->tmp);
	rmdir(f->rtroot);
	free(f->tmp);
	free(f);
}

static void on_output(void *ctx, int fd, const uint8_t *p, size_t n)
{
	(void)fd;
	fx *f = ctx;
	if (f->out_len + n < sizeof f->out) {
		memcpy(f->out + f->out_len, p, n);
		f->out_len += n;
		f->out[f->out_len] = '\0';
	}
}

static ota_oci_run_opts fx_opts(fx *f)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = f->kind;
	o.runtime.root = f->rtroot;
	o.state_dir = f->state;
	o.lease_db = f->db;
	o.txn = "txn-test";
	o.on_output = on_output;
	o.output_ctx = f;
	return o;
}

static const char *const W[] = {"reports", "work"};
static const char *const P[] = {"ota.yaml", ".github/workflows", ".git", "work/cfg"};

static ota_oci_plan fx_plan(const fx *f, const char *script)
{
	static const char *argv[4];
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = NULL;
	ota_oci_plan p;
	memset(&p, 0, sizeof p);
	p.segment_id = "seg-0";
	p.repo = f->repo;
	p.writable = W;
	p.n_writable = 2;
	p.protected_paths = P;
	p.n_protected = 4;
	p.rootfs = f->rootfs;
	p.argv = argv;
	p.argc = 3;
	p.timeout_seconds = 60;
	return p;
}

static char *slurp(const char *path)
{
	uint8_t *b = NULL;
	size_t n = 0;
	if (ota_file_read(path, 1u << 20, &b, &n, NULL) != OTA_OK)
		return NULL;
	return (char *)b;
}

static void assert_lease_terminal(const fx *f, const char *id, const char *want)
{
	json_t *rows = NULL;
	assert_ota(ota_oci_lease_list(f->db, false, &rows, NULL), OTA_OK);
	size_t i;
	json_t *r;
	bool found = false;
	json_array_foreach(rows, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "id")), id) == 0) {
			found = true;
			const char *t = json_string_value(json_object_get(r, "terminal"));
			if (t == NULL || strcmp(t, want) != 0)
				fail_msg("lease %s terminal %s, want %s", id, t ? t : "(open)", want);
		}
	}
	json_decref(rows);
	assert_true(found);
}

/* ---- enforcement: read-only repo, carve-out, protected, network ---- */

static void basic_run(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, "echo hello-out; echo hello-err >&2; "
	                            "printf verified > reports/result.txt; exit 3");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK) {
		char *d = r.applied != NULL ? ota_json_dumps(r.applied, true) : NULL;
		fprintf(stderr, "%s\n", d != NULL ? d : "(no applied record)");
		free(d);
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	}
	assert_int_equal(r.exit_status, 3);
	assert_true(r.started);
	assert_false(r.timed_out);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_non_null(strstr(f->out, "hello-out"));
	assert_non_null(strstr(f->out, "hello-err"));
	char path[1024];
	snprintf(path, sizeof path, "%s/reports/result.txt", f->repo);
	char *res = slurp(path);
	assert_non_null(res);
	assert_string_equal(res, "verified");
	free(res);
	/* evidence shapes and identities */
	assert_string_equal(json_string_value(json_object_get(r.rendered, "kind")),
	                    "ota.rendered_policy/v1");
	assert_string_equal(json_string_value(json_object_get(r.applied, "kind")),
	                    "ota.applied_policy/v1");
	assert_true(json_is_true(json_object_get(r.applied, "ok")));
	assert_string_equal(json_string_value(json_object_get(r.initial, "phase")), "initial");
	assert_string_equal(json_string_value(json_object_get(r.terminal_record, "phase")),
	                    "terminal");
	assert_string_equal(json_string_value(json_object_get(r.terminal_record, "state")),
	                    "enforced_through_completion");
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity(r.initial, id, NULL), OTA_OK);
	assert_string_equal(json_string_value(json_object_get(r.terminal_record, "prior")), id);
	json_t *cl = json_object_get(r.terminal_record, "cleanup");
	assert_true(json_is_true(json_object_get(cl, "confirmed")));
	assert_true(json_is_true(json_object_get(cl, "runtime_forgot")));
	/* canaries ran in the container and all held */
	json_t *can = json_object_get(r.applied, "canaries");
	assert_true(json_array_size(can) >= 20);
	size_t i;
	json_t *v;
	json_array_foreach(can, i, v) assert_true(json_is_true(json_object_get(v, "ok")));
	/* the network report is loopback only */
	json_t *net = json_object_get(r.applied, "network");
	assert_int_equal(json_array_size(json_object_get(net, "interfaces")), 1);
	assert_lease_terminal(f, r.container_id, "enforced_through_completion");
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_basic_runc(void **state)
{
	(void)state;
	basic_run(OTA_OCI_RUNC);
}

static void test_basic_crun(void **state)
{
	(void)state;
	basic_run(OTA_OCI_CRUN);
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "oci_run_test: needs root; skipped\n");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_runc),
		cmocka_unit_test(test_basic_crun),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
