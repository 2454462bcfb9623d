/*
 * oci_local end to end on the real runtimes (root): enforcement, the escape
 * catalogue with host-side oracles, refusals, timeouts, interruption.
 * Every test uses its own runtime --root and lease database and leaves
 * no container behind.
 */
#include "test_util.h"

#include <dirent.h>
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
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
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

static bool runtime_available(ota_oci_runtime_kind k)
{
	return system(k == OTA_OCI_CRUN ? "command -v crun >/dev/null 2>&1"
	                                : "command -v runc >/dev/null 2>&1") == 0;
}

/* The fixture of the running test: the teardown releases it even when an
 * assertion left the test early (its nested mounts, containers, files). */
static fx *g_live;

static fx *fx_new(ota_oci_runtime_kind kind)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	g_live = f;
	f->kind = kind;
	f->tmp = test_tmpdir();
	snprintf(f->repo, sizeof f->repo, "%s/repo", f->tmp);
	snprintf(f->rootfs, sizeof f->rootfs, "%s", rootfs_dir());
	snprintf(f->rtroot, sizeof f->rtroot, "/run/ota/test-%ld-%s", (long)getpid(),
	         kind == OTA_OCI_CRUN ? "crun" : "runc");
	snprintf(f->db, sizeof f->db, "%s/leases.db", f->tmp);
	snprintf(f->state, sizeof f->state, "%s/state", f->tmp);
	test_sh("mkdir -p '%s'/reports '%s'/.git '%s'/.github/workflows '%s'/work/cfg '%s'/sub", f->repo,
	   f->repo, f->repo, f->repo, f->repo);
	test_sh("printf 'orig-git-config' > '%s/.git/config'; printf 'version: 1' > '%s/ota.yaml';"
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

/* Unmounts, deletes what is left under the runtime root, removes the files. */
static void fx_release(fx *f)
{
	umount2(f->repo, MNT_DETACH); /* in case a test left a nested mount */
	char p[1024];
	snprintf(p, sizeof p, "%s/sub", f->repo);
	umount2(p, MNT_DETACH);
	snprintf(p, sizeof p, "%s/work/m", f->repo);
	umount2(p, MNT_DETACH);
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
	         "%s --root '%s' list -q 2>/dev/null | xargs -r -n1 %s --root '%s' delete -f "
	         ">/dev/null 2>&1",
	         f->kind == OTA_OCI_CRUN ? "crun" : "runc", f->rtroot,
	         f->kind == OTA_OCI_CRUN ? "crun" : "runc", f->rtroot);
	if (system(cmd) != 0) { /* best effort: the test has already failed */
	}
	test_rmtree(f->tmp);
	rmdir(f->rtroot);
	free(f->tmp);
	free(f);
	if (g_live == f)
		g_live = NULL;
}

/* Asserts that the test left no container, then releases the fixture. */
static void fx_free(fx *f)
{
	int left = count_containers(f);
	fx_release(f);
	assert_int_equal(left, 0);
}

static int fx_teardown(void **state)
{
	(void)state;
	if (g_live != NULL)
		fx_release(g_live);
	return 0;
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
	                            "sed 's/^/cgroup-line /' /proc/self/cgroup; "
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
	/* every rendered namespace is the container's own, the cgroup one
	 * included, and the task sees its cgroups as "/", never the host's
	 * paths (the runner's cgroup, runc's /ota-ID) */
	json_t *ns = json_object_get(r.applied, "namespaces");
	static const char *const links[] = {"pid", "net", "ipc", "uts", "mnt", "cgroup"};
	assert_int_equal(json_object_size(ns), sizeof links / sizeof links[0]);
	for (size_t k = 0; k < sizeof links / sizeof links[0]; k++) {
		char self[64], mine[64] = "";
		snprintf(self, sizeof self, "/proc/self/ns/%s", links[k]);
		ssize_t n = readlink(self, mine, sizeof mine - 1);
		assert_true(n > 0);
		const char *theirs = json_string_value(json_object_get(ns, links[k]));
		assert_non_null(theirs);
		assert_true(strncmp(theirs, links[k], strlen(links[k])) == 0);
		assert_string_not_equal(theirs, mine);
	}
	size_t cg_lines = 0;
	for (const char *l = strstr(f->out, "cgroup-line "); l != NULL;
	     l = strstr(l + 1, "cgroup-line ")) {
		const char *eol = strchr(l, '\n');
		assert_non_null(eol);
		assert_true(eol - l >= 2 && eol[-1] == '/' && eol[-2] == ':');
		cg_lines++;
	}
	assert_true(cg_lines >= 1);
	assert_lease_terminal(f, r.container_id, "enforced_through_completion");
	ota_oci_result_clear(&r);
	fx_free(f);
}

/* ---- the canary gate: the task is the container's process, exec'd in
 * place on the go, without the report and go descriptors; no go, no task ---- */

static ota_err refuse_initial(void *ctx, const json_t *initial, const json_t *applied,
                              ota_error *err)
{
	(void)ctx;
	(void)initial;
	(void)applied;
	return ota_error_set(err, OTA_ERR_USAGE, "test", "signing refused");
}

static void gate_run(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, "for n in 3 4 5; do [ -e /proc/self/fd/$n ] && echo fd$n-open; "
	                            "done; echo pid$$; exit 0");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.exit_status, 0);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_non_null(strstr(f->out, "pid1\n")); /* the canary's own process */
	assert_null(strstr(f->out, "fd3-open"));
	assert_null(strstr(f->out, "fd4-open"));
	assert_null(strstr(f->out, "fd5-open"));
	/* the rendered process is the canary in gate mode, the task after -- */
	json_t *args = json_object_get(json_object_get(json_object_get(r.rendered, "config"),
	                                               "process"),
	                               "args");
	assert_string_equal(json_string_value(json_array_get(args, 0)), OTA_OCI_CANARY_DEST);
	assert_string_equal(json_string_value(json_array_get(args, 1)), "gate");
	size_t na = json_array_size(args);
	assert_true(na > 4);
	assert_string_equal(json_string_value(json_array_get(args, na - 4)), "--");
	assert_string_equal(json_string_value(json_array_get(args, na - 3)), "/bin/sh");
	ota_oci_result_clear(&r);

	/* no go (on_initial refuses): the canary exits, the task never runs */
	f->out_len = 0;
	f->out[0] = '\0';
	o.on_initial = refuse_initial;
	ota_oci_plan q = fx_plan(f, "printf ran > reports/ran; echo task-ran");
	ota_error_clear(&e);
	rc = ota_oci_run(&q, &o, &r, &e);
	assert_int_not_equal(rc, OTA_OK);
	assert_false(r.started);
	assert_int_equal(r.terminal, OTA_OCI_REFUSED);
	assert_null(strstr(f->out, "task-ran"));
	char path[1024];
	snprintf(path, sizeof path, "%s/reports/ran", f->repo);
	assert_int_not_equal(access(path, F_OK), 0);
	json_t *cl = json_object_get(r.terminal_record, "cleanup");
	assert_true(json_is_true(json_object_get(cl, "confirmed")));
	assert_lease_terminal(f, r.container_id, "refused");
	ota_oci_result_clear(&r);
	fx_free(f); /* asserts no container is left */
}

static void test_gate_runc(void **state)
{
	(void)state;
	gate_run(OTA_OCI_RUNC);
}

static void test_gate_crun(void **state)
{
	(void)state;
	gate_run(OTA_OCI_CRUN);
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

/* ---- the escape catalogue, each with a host-side oracle ---- */

static char *fingerprint_cmd(const fx *f)
{
	/* hash, inode and link count of every protected path, from the host */
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
	         "cd '%s' && find ota.yaml .github .git work/cfg -xdev -printf '%%p %%i %%n %%m %%s "
	         "%%T@ %%C@\\n' | sort && cat ota.yaml .git/config work/cfg/settings.json "
	         ".github/workflows/ci.yml | sha256sum",
	         f->repo);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *buf = calloc(1, 65536);
	assert_non_null(buf);
	size_t n = fread(buf, 1, 65535, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* The attack scripts' prelude: t NAME CMD... appends "NAME denied", or
 * "NAME ESCAPED" when CMD succeeded, to work/results.txt. */
#define ATTACK_PRELUDE \
	"R=/workspace/work/results.txt; t() { n=$1; shift; if \"$@\" >/dev/null 2>&1; then echo \"$n " \
	"ESCAPED\" >>$R; else echo \"$n denied\" >>$R; fi; }\n"

/* work/results.txt as the attack script left it (freed by the caller). */
static char *attack_results(const fx *f)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/work/results.txt", f->repo);
	char *res = slurp(path);
	assert_non_null(res);
	if (getenv("OTA_TEST_VERBOSE") != NULL)
		fprintf(stderr, "%s", res);
	return res;
}

/* The escape catalogue's attacks, each by its research name. */
static const char escape_script[] = ATTACK_PRELUDE
	"t FS-01 sh -c 'echo PWNED >> /workspace/.git/config'\n"
	"t FS-02 sh -c 'echo PWNED >> /workspace/work/cfg/settings.json'\n"
	"ln -s /workspace/.git/config /workspace/work/lnk; t FS-03 sh -c 'echo PWNED >> "
	"/workspace/work/lnk'\n"
	"t FS-07 sh -c 'echo PWNED >> /workspace/work/../.git/config'\n"
	"t FS-08 sh -c 'echo PWNED >> /proc/self/root/workspace/.git/config'\n"
	"t FS-09a chmod 777 /workspace/.git/config\n"
	"t FS-09b truncate -s 0 /workspace/work/cfg/settings.json\n"
	"t FS-09c touch -d 2001-01-01 /workspace/ota.yaml\n"
	"t FS-10a mv /workspace/work/cfg/settings.json /workspace/work/cfg/s.bak\n"
	"t FS-10b rm -f /workspace/work/cfg/settings.json\n"
	"t FS-10c rm -rf /workspace/work/cfg\n"
	"t FS-13 mkdir /workspace/.git/hooks2\n"
	"t FS-17 mknod /workspace/work/null c 1 3\n"
	"t FS-21 sh -c 'echo PWNED > /workspace/sub/pwn'\n"
	"t FS-24 sh -c 'echo PWNED > /workspace/.github/workflows/ci.yml'\n"
	"t MNT-01 mount -o remount,rw /workspace\n"
	"t MNT-01b mount -o remount,bind,rw /workspace/.git\n"
	"t MNT-01c umount -l /workspace/work/cfg\n"
	"t MNT-03 unshare -U -r true\n"
	"t MNT-06 sh -c 'echo 1 > /proc/sysrq-trigger'\n"
	"t MNT-06b sh -c 'echo 1 > /proc/sys/kernel/panic'\n"
	"t MNT-07 touch /escape-root\n"
	"t NET-01 nc -w 2 1.1.1.1 80\n"
	"t NET-02 nc -w 2 192.0.2.1 80\n"
	"t NET-03 sh -c 'echo x | nc -u -w 1 8.8.8.8 53'\n"
	"t NET-06 sh -c 'echo hello | nc -w 1 127.0.0.1 $HOSTPORT'\n"
	"t NET-10 ip link set lo down\n"
	"t NET-10b ip addr add 10.9.9.9/24 dev lo\n"
	"t SOCK-01 ls /var/run/docker.sock\n"
	"t PROC-05 test -t 1\n"
	"t PROC-09 sh -c 'cat /proc/*/environ | tr \"\\\\0\" \"\\\\n\" | grep -q SSH_AUTH_SOCK'\n"
	"ls /proc | grep -c '^[0-9]' > /workspace/work/nprocs\n"
	"sh -c 'ls /proc/$$/fd; true' > /workspace/work/fdlist\n"
	"kill -9 -1 2>/dev/null; echo done >> $R\n";

static void escape_catalogue(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	/* FS-21: a host mount nested inside the repo (not a carve-out) */
	char sub[1024];
	snprintf(sub, sizeof sub, "%s/sub", f->repo);
	assert_int_equal(mount("tmpfs", sub, "tmpfs", 0, "size=1m"), 0);
	/* NET-06: a host loopback listener that must see no connection */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(l >= 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	char portenv[64];
	snprintf(portenv, sizeof portenv, "HOSTPORT=%u", (unsigned)ntohs(a.sin_port));
	/* SOCK-04 / PROC-09: the runner's environment must not leak in */
	setenv("SSH_AUTH_SOCK", "/tmp/ota-test-agent.sock", 1);
	char *before = fingerprint_cmd(f);

	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, escape_script);
	const char *env[] = {"PATH=/bin:/usr/bin", portenv};
	p.env = env;
	p.n_env = 2;
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	unsetenv("SSH_AUTH_SOCK");
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);

	/* Host-side oracles. */
	char *after = fingerprint_cmd(f);
	assert_string_equal(before, after); /* protected hash, inode, links unchanged */
	char path[1024];
	snprintf(path, sizeof path, "%s/sub/pwn", f->repo);
	assert_int_equal(access(path, F_OK), -1); /* FS-21 */
	snprintf(path, sizeof path, "%s/escape-root", f->rootfs);
	assert_int_equal(access(path, F_OK), -1); /* MNT-07 */
	snprintf(path, sizeof path, "%s/.git/hooks2", f->repo);
	assert_int_equal(access(path, F_OK), -1); /* FS-13 */
	struct sockaddr_in peer;
	socklen_t pl = sizeof peer;
	assert_int_equal(accept(l, (struct sockaddr *)&peer, &pl), -1); /* NET-06 */
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(l);
	char *res = attack_results(f);
	assert_null(strstr(res, "ESCAPED")); /* in-sandbox errno side: all denied */
	assert_non_null(strstr(res, "FS-01 denied"));
	assert_non_null(strstr(res, "NET-06 denied"));
	assert_non_null(strstr(res, "done"));
	free(res);
	snprintf(path, sizeof path, "%s/work/nprocs", f->repo);
	char *np = slurp(path);
	assert_non_null(np);
	assert_true(strtol(np, NULL, 10) <= 4); /* PROC-09: host pids invisible */
	free(np);
	snprintf(path, sizeof path, "%s/work/fdlist", f->repo);
	char *nf = slurp(path);
	assert_non_null(nf);
	if (strcmp(nf, "0\n1\n2\n") != 0) /* NET-14: nothing above 0-2 inherited */
		fail_msg("task fds: %s", nf);
	free(nf);
	free(before);
	free(after);
	assert_int_equal(umount2(sub, MNT_DETACH), 0);
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_escapes_runc(void **state)
{
	(void)state;
	escape_catalogue(OTA_OCI_RUNC);
}

static void test_escapes_crun(void **state)
{
	(void)state;
	escape_catalogue(OTA_OCI_CRUN);
}

/* ---- cases that cannot be defended are refused before any mutation ---- */

/*
 * Device nodes an untrusted image brings along (umoci unpacks layers as
 * root): a block node of the host's root disk, /dev/mem, /dev/kmsg and
 * /dev/port, mode 0666, in the read-only root filesystem. The container's
 * root user (no capabilities) may open them as far as file modes go; runc's
 * default device rules refused all four, but crun runs here with
 * --cgroup-manager=disabled (no device cgroup) and a task wrote into the
 * host's kernel log through /dev/kmsg (ttys and input devices the same
 * way). Admission now refuses a device node outside /dev
 * (oci_rootfs_device); under /dev the rendered tmpfs hides them. Not in the
 * research catalogue (FS-17 is mknod by the task, which has no CAP_MKNOD).
 */
static void expect_refusal(fx *f, ota_oci_plan *p, ota_err want);

static const char device_script[] = ATTACK_PRELUDE
	"t DEV-00 test -e /dev/ota-dev/disk\n"
	"t DEV-01 dd if=/dev/ota-dev/disk of=/dev/null bs=512 count=1\n"
	"t DEV-02 dd if=/dev/ota-dev/mem of=/dev/null bs=1 count=1\n"
	"t DEV-03 dd if=/dev/ota-dev/kmsg of=/dev/null bs=1 count=1\n"
	"t DEV-04 sh -c 'echo x > /dev/ota-dev/kmsg'\n"
	"t DEV-05 dd if=/dev/ota-dev/port of=/dev/null bs=1 count=1\n"
	"t CTL-01 dd if=/dev/zero of=/dev/null bs=1 count=1\n"
	"echo done >> $R\n";

static void make_device_nodes(const char *dir)
{
	struct stat root;
	assert_int_equal(stat("/", &root), 0);
	test_sh("mkdir -p '%s' && mknod -m 666 '%s/disk' b %u %u && mknod -m 666 '%s/mem' c 1 1 && "
	   "mknod -m 666 '%s/kmsg' c 1 11 && mknod -m 666 '%s/port' c 1 4",
	   dir, dir, major(root.st_dev), minor(root.st_dev), dir, dir, dir);
}

static void image_devices(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	/* a private copy of the test image with the nodes in it */
	char img[1024], nodes[1100];
	snprintf(img, sizeof img, "%s/image-rootfs", f->tmp);
	test_sh("cp -a '%s' '%s'", f->rootfs, img);
	snprintf(nodes, sizeof nodes, "%s/opt/ota-dev", img);
	make_device_nodes(nodes);
	ota_oci_plan p = fx_plan(f, device_script);
	p.rootfs = img;
	/* outside /dev: refused before anything is prepared */
	expect_refusal(f, &p, OTA_ERR_OCI_ROOTFS_DEVICE);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_result r;
	ota_error e;
	ota_err rc;
	/* under /dev: hidden by the rendered /dev tmpfs, the run goes ahead */
	test_sh("rm -rf '%s'", nodes);
	snprintf(nodes, sizeof nodes, "%s/dev/ota-dev", img);
	make_device_nodes(nodes);
	ota_error_clear(&e);
	rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	char *res = attack_results(f);
	assert_non_null(strstr(res, "DEV-00 denied"));
	assert_non_null(strstr(res, "DEV-01 denied"));
	assert_non_null(strstr(res, "DEV-02 denied"));
	assert_non_null(strstr(res, "DEV-03 denied"));
	assert_non_null(strstr(res, "DEV-04 denied"));
	assert_non_null(strstr(res, "DEV-05 denied"));
	/* the control: the standard pseudo-devices still work, so the denials
	 * are not a broken shell */
	assert_non_null(strstr(res, "CTL-01 ESCAPED"));
	assert_non_null(strstr(res, "done"));
	free(res);
	ota_oci_result_clear(&r);
	fx_free(f);
}

/*
 * An image whose mount points are symlinks: the runtime resolves mount
 * destinations inside the rootfs, so with /tmp -> /workspace/reports the
 * rendered tmpfs landed in the image's /workspace/reports (then hidden by
 * the repository) and the task's /tmp was the host carve-out, while the run
 * said enforced_through_completion; with /workspace -> /tmp the repository
 * and carve-outs moved (the inspection refused that one). Admission now
 * refuses each before anything is prepared (oci_rootfs_mount_point).
 */
static void image_mount_point_symlinks(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	static const char *const cases[][2] = {
		{"tmp", "/workspace/reports"},
		{"workspace", "/tmp"},
		{"proc", "/tmp"},
		{"dev", "/workspace"},
		{"sys", "/workspace/reports"},
	};
	fx *f = fx_new(kind);
	char img[1024];
	snprintf(img, sizeof img, "%s/image-rootfs", f->tmp);
	test_sh("cp -a '%s' '%s'", f->rootfs, img);
	ota_oci_plan p = fx_plan(f, "echo ran > /workspace/work/ran");
	p.rootfs = img;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		test_sh("mv '%s/%s' '%s/%s.orig' 2>/dev/null; ln -s '%s' '%s/%s'", img, cases[i][0], img,
		   cases[i][0], cases[i][1], img, cases[i][0]);
		expect_refusal(f, &p, OTA_ERR_OCI_ROOTFS_MOUNT_POINT);
		test_sh("rm -f '%s/%s'; mv '%s/%s.orig' '%s/%s' 2>/dev/null || true", img, cases[i][0], img,
		   cases[i][0], img, cases[i][0]);
	}
	/* a regular file where a mount point belongs is refused the same way */
	test_sh("mv '%s/tmp' '%s/tmp.orig' 2>/dev/null; : > '%s/tmp'", img, img, img);
	expect_refusal(f, &p, OTA_ERR_OCI_ROOTFS_MOUNT_POINT);
	char path[1024];
	snprintf(path, sizeof path, "%s/work/ran", f->repo);
	assert_int_equal(access(path, F_OK), -1);
	fx_free(f);
}

static void test_image_mount_points_runc(void **state)
{
	(void)state;
	image_mount_point_symlinks(OTA_OCI_RUNC);
}

static void test_image_mount_points_crun(void **state)
{
	(void)state;
	image_mount_point_symlinks(OTA_OCI_CRUN);
}

static void test_image_devices_runc(void **state)
{
	(void)state;
	image_devices(OTA_OCI_RUNC);
}

static void test_image_devices_crun(void **state)
{
	(void)state;
	image_devices(OTA_OCI_CRUN);
}

/*
 * Device nodes in the repository on a host mount nested in it (FS-21's
 * tmpfs at repo/sub). The repository's binds were rendered "nosuid,nodev",
 * which the runtimes apply to the top mount only: the nested mount came out
 * "ro,relatime" in the container, and under crun (no device cgroup here) a
 * 0666 /dev/kmsg node on it let the task write into the host's kernel log
 * while the run said enforced_through_completion (runc's default device
 * rules refused the open). Now a device node anywhere in the repository is
 * refused before anything is prepared (oci_repo_device), the recursive
 * binds are also rnosuid,rnodev, and the inspection refuses a mount under
 * /workspace without nosuid or nodev. The second part puts the nodes there
 * after admission (a host process: outside the threat model, it tests the
 * rendered flags): the task cannot open them and the kernel log never
 * sees the marker.
 */
static const char repo_device_script[] = ATTACK_PRELUDE
	"t RDEV-01 sh -c 'echo OTA-RDEV-MARKER-$MARK > /workspace/sub/kmsg'\n"
	"t RDEV-02 sh -c 'echo x > /workspace/sub/null'\n"
	"t RDEV-03 dd if=/workspace/sub/null of=/dev/null bs=1 count=1\n"
	"t CTL-01 dd if=/dev/zero of=/dev/null bs=1 count=1\n"
	"echo done >> $R\n";

static void add_sub_nodes(void *ctx)
{
	const fx *f = ctx;
	test_sh("mknod -m 666 '%s/sub/kmsg' c 1 11 && mknod -m 666 '%s/sub/null' c 1 3", f->repo,
	        f->repo);
}

static bool kernel_log_has(const char *marker)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "dmesg 2>/dev/null | grep -q -- '%s'", marker);
	return system(cmd) == 0;
}

static void repo_devices(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	char sub[1024];
	snprintf(sub, sizeof sub, "%s/sub", f->repo);
	assert_int_equal(mount("tmpfs", sub, "tmpfs", 0, "size=1m"), 0);
	char mark[64], markenv[80], marker[96];
	snprintf(mark, sizeof mark, "%ld-%s-%ld", (long)getpid(), kind == OTA_OCI_CRUN ? "crun" : "runc",
	         (long)time(NULL));
	snprintf(markenv, sizeof markenv, "MARK=%s", mark);
	snprintf(marker, sizeof marker, "OTA-RDEV-MARKER-%s", mark);
	ota_oci_plan p = fx_plan(f, repo_device_script);
	const char *env[] = {"PATH=/bin:/usr/bin", markenv};
	p.env = env;
	p.n_env = 2;
	/* a node on the nested mount, in the read-only part, in a carve-out:
	 * refused before anything is prepared */
	static const char *const at[] = {"sub/kmsg", "kmsg", "work/kmsg"};
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
		test_sh("mknod -m 666 '%s/%s' c 1 11", f->repo, at[i]);
		expect_refusal(f, &p, OTA_ERR_OCI_REPO_DEVICE);
		test_sh("rm '%s/%s'", f->repo, at[i]);
	}
	char path[1024];
	snprintf(path, sizeof path, "%s/work/results.txt", f->repo);
	assert_int_equal(access(path, F_OK), -1); /* the task never ran */
	/* nodes made after admission: inert on the rnodev nested mount */
	ota_oci_run_opts o = fx_opts(f);
	o.before_create = add_sub_nodes;
	o.before_create_ctx = f;
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_false(kernel_log_has(marker)); /* host-side oracle */
	char *res = attack_results(f);
	assert_non_null(strstr(res, "RDEV-01 denied"));
	assert_non_null(strstr(res, "RDEV-02 denied"));
	assert_non_null(strstr(res, "RDEV-03 denied"));
	assert_non_null(strstr(res, "CTL-01 ESCAPED")); /* the shell works */
	assert_non_null(strstr(res, "done"));
	free(res);
	/* the inspected nested mount carries nosuid and nodev */
	bool seen = false;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(json_object_get(r.applied, "mounts"), "mounts"), i, m)
	{
		if (strcmp(json_string_value(json_object_get(m, "path")), "/workspace/sub") != 0)
			continue;
		seen = true;
		const char *opts = json_string_value(json_object_get(m, "options"));
		assert_non_null(opts);
		if (strstr(opts, "nodev") == NULL || strstr(opts, "nosuid") == NULL)
			fail_msg("/workspace/sub mounted %s", opts);
	}
	assert_true(seen);
	ota_oci_result_clear(&r);
	assert_int_equal(umount2(sub, MNT_DETACH), 0);
	fx_free(f);
}

static void test_repo_devices_runc(void **state)
{
	(void)state;
	repo_devices(OTA_OCI_RUNC);
}

static void test_repo_devices_crun(void **state)
{
	(void)state;
	repo_devices(OTA_OCI_CRUN);
}

/*
 * runc's init opens the container's /etc/passwd and /etc/group before it
 * execs the container's process, with no bound on the wait: an image whose
 * /etc/passwd was a FIFO (or a symlink to a FIFO in a carve-out of the
 * repository) blocked `runc run --detach`, and the runner with it, for
 * good (SIGTERM set the cancel flag, which was looked at only once runc
 * returned; crun does not read them). Admission now refuses a non-directory
 * /etc and a non-regular /etc/passwd or /etc/group, symlinks included
 * (oci_rootfs_user_db), before anything is prepared. So that the test ends
 * on the old code too, a helper opens and closes each FIFO after 10 s,
 * which lets a blocked runc go on (the run then went ahead).
 */
static pid_t fifo_unblocker(const char *a, const char *b)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sleep(10);
		for (;;) {
			int fa = open(a, O_RDWR | O_NONBLOCK | O_CLOEXEC);
			int fb = open(b, O_RDWR | O_NONBLOCK | O_CLOEXEC);
			if (fa >= 0)
				close(fa);
			if (fb >= 0)
				close(fb);
			usleep(100 * 1000);
		}
	}
	return pid;
}

static void image_user_db(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	char img[1024], fifo[1100], repofifo[1100];
	snprintf(img, sizeof img, "%s/image-rootfs", f->tmp);
	snprintf(fifo, sizeof fifo, "%s/etc/passwd", img);
	snprintf(repofifo, sizeof repofifo, "%s/work/fifo", f->repo);
	test_sh("cp -a '%s' '%s' && mkdir -p '%s/etc' && mkfifo '%s'", f->rootfs, img, img,
	        repofifo);
	ota_oci_plan p = fx_plan(f, "echo ran > /workspace/reports/ran");
	p.rootfs = img;
	/* a FIFO at /etc/passwd, at /etc/group; /etc/passwd a symlink to a
	 * FIFO in a carve-out; /etc a symlink to the carve-out */
	for (size_t i = 0; i < 4; i++) {
		test_sh("rm -rf '%s' && cp -a '%s' '%s' && mkdir -p '%s/etc' && touch '%s/etc/passwd' "
		        "'%s/etc/group'",
		        img, f->rootfs, img, img, img, img);
		if (i == 0)
			test_sh("rm -f '%s/etc/passwd' && mkfifo '%s/etc/passwd'", img, img);
		else if (i == 1)
			test_sh("rm -f '%s/etc/group' && mkfifo '%s/etc/group'", img, img);
		else if (i == 2)
			test_sh("rm -f '%s/etc/passwd' && ln -s /workspace/work/fifo '%s/etc/passwd'", img,
			        img);
		else
			test_sh("mv '%s/etc' '%s/etc.orig' && ln -s /workspace/work '%s/etc' && "
			        "ln -sf fifo '%s/work/passwd'",
			        img, img, img, f->repo);
		char group[1100];
		snprintf(group, sizeof group, "%s/etc/group", img);
		pid_t u = fifo_unblocker(i == 1 ? group : fifo, repofifo);
		ota_oci_run_opts o = fx_opts(f);
		ota_oci_result r;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_oci_run(&p, &o, &r, &e);
		kill(u, SIGKILL);
		waitpid(u, NULL, 0);
		if (rc != OTA_ERR_OCI_ROOTFS_USER_DB)
			fail_msg("case %zu: got %s (%s: %s), want oci_rootfs_user_db", i, ota_err_name(rc),
			         e.where, e.what);
		assert_int_equal(r.terminal, OTA_OCI_REFUSED);
		assert_false(r.started);
		char b[1024];
		snprintf(b, sizeof b, "%s/bundles", f->state);
		assert_int_equal(access(b, F_OK), -1); /* nothing prepared */
		ota_oci_result_clear(&r);
	}
	/* a plain image still runs */
	test_sh("rm -rf '%s' && cp -a '%s' '%s'", img, f->rootfs, img);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_image_user_db_runc(void **state)
{
	(void)state;
	image_user_db(OTA_OCI_RUNC);
}

static void test_image_user_db_crun(void **state)
{
	(void)state;
	image_user_db(OTA_OCI_CRUN);
}

static void expect_refusal(fx *f, ota_oci_plan *p, ota_err want)
{
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(p, &o, &r, &e);
	if (rc != want)
		fail_msg("got %s (%s: %s), want %s", ota_err_name(rc), e.where, e.what,
		         ota_err_name(want));
	assert_int_equal(r.terminal, OTA_OCI_REFUSED);
	assert_false(r.started);
	assert_string_equal(json_string_value(json_object_get(r.terminal_record, "state")), "refused");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(r.terminal_record, "error"), "code")),
	                    ota_err_name(want));
	/* nothing was prepared: no bundle, no container */
	char b[1024];
	snprintf(b, sizeof b, "%s/bundles", f->state);
	assert_int_equal(access(b, F_OK), -1);
	assert_int_equal(count_containers(f), 0);
	ota_oci_result_clear(&r);
}

static void test_refusals(void **state)
{
	(void)state;
	fx *f = fx_new(OTA_OCI_RUNC);
	ota_oci_plan p = fx_plan(f, "true");
	/* FS-05: pre-existing hardlink in a carve-out to protected content */
	test_sh("ln '%s/.git/config' '%s/work/prehl'", f->repo, f->repo);
	expect_refusal(f, &p, OTA_ERR_OCI_HARDLINK_ALIAS);
	test_sh("rm '%s/work/prehl'", f->repo);
	/* FS-13: protected name missing under a writable parent */
	const char *w1[] = {"work"};
	const char *p1[] = {"work/.git"};
	p.writable = w1;
	p.n_writable = 1;
	p.protected_paths = p1;
	p.n_protected = 1;
	expect_refusal(f, &p, OTA_ERR_OCI_PROTECTED_UNDEFENDABLE);
	/* FS-25: carve-out declared through a symlink */
	test_sh("ln -s /etc '%s/build'", f->repo);
	const char *w2[] = {"build"};
	p.writable = w2;
	p.n_protected = 0;
	expect_refusal(f, &p, OTA_ERR_OCI_PATH_SYMLINK);
	/* FS-26: protected path that is itself a symlink */
	test_sh("ln -s decoy '%s/work/.codex'", f->repo);
	const char *p2[] = {"work/.codex"};
	p.writable = w1;
	p.protected_paths = p2;
	p.n_protected = 1;
	expect_refusal(f, &p, OTA_ERR_OCI_PATH_SYMLINK);
	test_sh("rm '%s/work/.codex'", f->repo);
	p.n_protected = 0;
	/* writable path outside the repo */
	const char *w3[] = {"/tmp"};
	p.writable = w3;
	expect_refusal(f, &p, OTA_ERR_OCI_WRITABLE_OUTSIDE);
	const char *w4[] = {"../x"};
	p.writable = w4;
	expect_refusal(f, &p, OTA_ERR_OCI_PATH_ESCAPE);
	/* a host mount below a carve-out (mount alias) */
	p.writable = w1;
	test_sh("mkdir -p '%s/work/m'", f->repo);
	char m[1024];
	snprintf(m, sizeof m, "%s/work/m", f->repo);
	assert_int_equal(mount("tmpfs", m, "tmpfs", 0, "size=1m"), 0);
	expect_refusal(f, &p, OTA_ERR_OCI_MOUNT_ALIAS);
	assert_int_equal(umount2(m, MNT_DETACH), 0);
	/* SOCK-03: a socket file (a daemon's control socket) inside the repo */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un un;
	memset(&un, 0, sizeof un);
	un.sun_family = AF_UNIX;
	int un_n = snprintf(un.sun_path, sizeof un.sun_path, "%s/docker.sock", f->repo);
	assert_true(un_n > 0 && (size_t)un_n < sizeof un.sun_path);
	assert_int_equal(bind(s, (struct sockaddr *)&un, sizeof un), 0);
	expect_refusal(f, &p, OTA_ERR_OCI_RUNTIME_SOCKET);
	close(s);
	unlink(un.sun_path);
	/* a repository that contains runtime state */
	p.repo = "/run";
	expect_refusal(f, &p, OTA_ERR_OCI_RUNTIME_SOCKET);
	fx_free(f);
}

/* ---- the runner's own files inside the boundary: a signing key or nonce
 * database in the repository (readable at /workspace: the task copied the
 * key into a carve-out), the lease database or state directory in a
 * carve-out; also through a symlink, and for a file not made yet ---- */

static void expect_private_refusal(fx *f, ota_oci_run_opts *o, const char *where)
{
	ota_oci_plan p = fx_plan(f, "cat /workspace/*.pem > /workspace/reports/stolen");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, o, &r, &e);
	if (rc != OTA_ERR_OCI_RUNTIME_SOCKET)
		fail_msg("got %s (%s: %s), want oci_runtime_socket at %s", ota_err_name(rc), e.where,
		         e.what, where);
	assert_string_equal(e.where, where);
	assert_int_equal(r.terminal, OTA_OCI_REFUSED);
	assert_false(r.started);
	char b[1024];
	snprintf(b, sizeof b, "%s/reports/stolen", f->repo);
	assert_int_equal(access(b, F_OK), -1);
	assert_int_equal(count_containers(f), 0);
	ota_oci_result_clear(&r);
}

static void test_private_paths(void **state)
{
	(void)state;
	fx *f = fx_new(OTA_OCI_RUNC);
	char key[1024], nonces[1024], link[1024], other[1024];
	snprintf(key, sizeof key, "%s/runner.pem", f->repo);
	snprintf(nonces, sizeof nonces, "%s/reports/new/nonces.db", f->repo);
	snprintf(link, sizeof link, "%s/key-link.pem", f->tmp);
	snprintf(other, sizeof other, "%s/outside.pem", f->tmp);
	test_sh("printf 'PRIVATE KEY' > '%s' && ln -s '%s' '%s' && printf 'PRIVATE KEY' > '%s'", key, key,
	   link, other);
	ota_oci_run_opts o = fx_opts(f);
	const char *priv[2] = {key, other};
	o.private_paths = priv;
	o.n_private_paths = 2;
	expect_private_refusal(f, &o, key);
	priv[0] = link; /* resolved: the link's target is in the repository */
	expect_private_refusal(f, &o, link);
	priv[0] = other;
	priv[1] = nonces; /* not made yet: judged by its existing ancestor */
	expect_private_refusal(f, &o, nonces);
	priv[1] = NULL;
	char in_repo[1024];
	snprintf(in_repo, sizeof in_repo, "%s/reports/leases.db", f->repo);
	o.lease_db = in_repo;
	expect_private_refusal(f, &o, in_repo);
	o.lease_db = f->db;
	snprintf(in_repo, sizeof in_repo, "%s/reports/state", f->repo);
	o.state_dir = in_repo;
	expect_private_refusal(f, &o, in_repo);
	/* outside the boundary: the run goes ahead */
	o.state_dir = f->state;
	ota_oci_plan p = fx_plan(f, "true");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	ota_oci_result_clear(&r);
	fx_free(f);
}

/* ---- PROC-08: timeout ---- */

static void test_timeout(void **state)
{
	(void)state;
	fx *f = fx_new(OTA_OCI_RUNC);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, "sleep 30");
	p.timeout_seconds = 1;
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	time_t t0 = time(NULL);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_OK);
	assert_true(time(NULL) - t0 < 20);
	assert_true(r.timed_out);
	assert_int_equal(r.exit_status, 128 + SIGKILL);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_true(json_is_true(json_object_get(json_object_get(r.terminal_record, "cleanup"),
	                                         "confirmed")));
	assert_lease_terminal(f, r.container_id, "enforced_through_completion");
	ota_oci_result_clear(&r);
	fx_free(f);
}

/* ---- set-user-ID files: the task is uid 0 of the host without
 * capabilities; a set-id file it leaves in a carve-out would be a root
 * binary for any local user. The canary's filter denies every way the
 * probe knows (chmod family incl. fchmodat2, open/creat/mknod/O_TMPFILE
 * with the bits, openat2, i386 calls); host-side oracle: find -perm. ---- */

static void setid_run(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	test_sh("mkdir '%s/work/setid' && cp '%s' '%s/work/probe' && cp '%s/bin/busybox' "
	   "'%s/work/bb'",
	   f->repo, OTA_TASK_PROBE, f->repo, f->rootfs, f->repo);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, "/workspace/work/probe setid /workspace/work/setid; "
	                            "chmod u+s /workspace/work/bb; chmod g+s /workspace/work/bb; "
	                            "install -m 4755 /workspace/work/bb /workspace/work/bb2; "
	                            "true");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	if (getenv("OTA_TEST_VERBOSE") != NULL)
		fprintf(stderr, "%s", f->out);
	/* host-side oracle: no set-id file anywhere in the repository */
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "find '%s' -perm /6000 | head -5", f->repo);
	FILE *pf = popen(cmd, "r");
	assert_non_null(pf);
	char found[1024] = "";
	size_t n = fread(found, 1, sizeof found - 1, pf);
	found[n] = '\0';
	pclose(pf);
	if (found[0] != '\0')
		fail_msg("set-id files left on the host:\n%s", found);
	/* the probe ran, and what is not set-id still works */
	assert_non_null(strstr(f->out, "fchmodat2 denied EPERM"));
	assert_non_null(strstr(f->out, "openat2 denied ENOSYS"));
	assert_non_null(strstr(f->out, "chmod_plain made"));
	/* the canaries witnessed the filter before the task */
	size_t i;
	json_t *v;
	int seen = 0;
	json_array_foreach(json_object_get(r.applied, "canaries"), i, v)
	{
		const char *t = json_string_value(json_object_get(v, "target"));
		if (t != NULL && strstr(t, "_setid") != NULL) {
			assert_true(json_is_true(json_object_get(v, "ok")));
			seen++;
		}
	}
	assert_int_equal(seen, 4);
	ota_oci_result_clear(&r);
	fx_free(f);
}

/*
 * Set-id and file-capable files already under a writable path. write()
 * clears the bits and the capabilities of a task without CAP_FSETID, but a
 * write through a shared writable mapping keeps them: a root-owned 4755
 * file in a carve-out came out of the run with the task's bytes and still
 * 4755 (likewise 2755 and a cap_net_raw+ep file), a root binary of the
 * task's making for any local user who can reach the repository, while the
 * run said enforced_through_completion. Admission now refuses such a file
 * under a writable path (oci_writable_setid) before anything is prepared;
 * one in the read-only part stays allowed (the task cannot map it
 * writable: EROFS).
 */
static void writable_setid(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	test_sh("cp '%s' '%s/work/probe' && head -c 4096 /dev/zero > '%s/ro-suid' && chmod 4755 "
	        "'%s/ro-suid'",
	        OTA_TASK_PROBE, f->repo, f->repo, f->repo);
	bool have_setcap = system("command -v setcap >/dev/null 2>&1") == 0;
	static const char *const modes[] = {"4755", "2755", "caps"};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		if (i == 2 && !have_setcap)
			continue;
		if (i < 2)
			test_sh("head -c 4096 /dev/zero > '%s/work/target' && chmod %s '%s/work/target'",
			        f->repo, modes[i], f->repo);
		else
			test_sh("head -c 4096 /dev/zero > '%s/work/target' && chmod 755 '%s/work/target' && "
			        "setcap cap_net_raw+ep '%s/work/target'",
			        f->repo, f->repo, f->repo);
		ota_oci_plan p = fx_plan(f, "/workspace/work/probe mmapw /workspace/work/target");
		expect_refusal(f, &p, OTA_ERR_OCI_WRITABLE_SETID);
		char path[1024];
		snprintf(path, sizeof path, "%s/work/target", f->repo);
		char *c = slurp(path);
		assert_non_null(c);
		assert_true(strncmp(c, "OTA-MMAP-WRITTEN", 16) != 0); /* the task never ran */
		free(c);
		test_sh("rm -f '%s/work/target'", f->repo);
	}
	/* allowed: a set-group-ID file that is not group-executable under the
	 * carve-out, and a set-user-ID one in the read-only part (the task's
	 * writable mapping of it is EROFS; the host copy keeps its content) */
	test_sh("head -c 4096 /dev/zero > '%s/work/target' && chmod 2644 '%s/work/target'", f->repo,
	        f->repo);
	ota_oci_run_opts o = fx_opts(f);
	ota_oci_plan p = fx_plan(f, "/workspace/work/probe mmapw /workspace/ro-suid; true");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_non_null(strstr(f->out, "mmapw_open denied EROFS"));
	char path[1024];
	snprintf(path, sizeof path, "%s/ro-suid", f->repo);
	char *c = slurp(path);
	assert_non_null(c);
	assert_true(strncmp(c, "OTA-MMAP-WRITTEN", 16) != 0);
	free(c);
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_writable_setid_runc(void **state)
{
	(void)state;
	writable_setid(OTA_OCI_RUNC);
}

static void test_writable_setid_crun(void **state)
{
	(void)state;
	writable_setid(OTA_OCI_CRUN);
}

/*
 * The runtime's seccomp profile through the i386 entry points (int 0x80 from
 * the 64-bit task): the canary's syscalls check uses the native calls only.
 * Held under runc 1.1.5 and crun 1.8.1 (libseccomp 2.5.4, the profile lists
 * SCMP_ARCH_X86): every one EPERM, AF_VSOCK through socketcall included
 * (its arguments lie in memory, out of the filter's reach, yet the call was
 * refused). The verdict is the kernel's errno as the probe reports it.
 */
#if defined(__x86_64__)
/* Whether the host kernel has the i386 entry points (IA32 emulation): a
 * kernel without them kills int 0x80 with SIGSEGV, so a child tries it. */
static bool host_ia32(void)
{
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		/* without the entry points int 0x80 is a SIGSEGV: it must kill this
		 * child, not reach cmocka's handler, which would report a failure
		 * and run the rest of the suite here too */
		signal(SIGSEGV, SIG_DFL);
		long ret;
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L /* getpid */) : "memory", "cc");
		_exit(ret > 0 ? 0 : 1);
	}
	int st = 0;
	return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
#endif

/* Runs oci-task-probe MODE (copied into the carve-out) as the task under
 * kind; the run must complete enforced. The probe's lines are in f->out. */
static fx *probe_enforced(ota_oci_runtime_kind kind, const char *mode, ota_oci_result *r)
{
	fx *f = fx_new(kind);
	test_sh("cp '%s' '%s/work/probe'", OTA_TASK_PROBE, f->repo);
	ota_oci_run_opts o = fx_opts(f);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "/workspace/work/probe %s", mode);
	ota_oci_plan p = fx_plan(f, cmd);
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r->terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	return f;
}

static void syscalls32_run(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
#if !defined(__x86_64__)
	skip();
#endif
	ota_oci_result r;
	fx *f = probe_enforced(kind, "syscalls32", &r);
	if (getenv("OTA_TEST_VERBOSE") != NULL)
		fprintf(stderr, "%s", f->out);
	assert_null(strstr(f->out, " made"));
#if defined(__x86_64__)
	if (!host_ia32()) {
		/* no i386 entry points in this kernel: none inside the boundary
		 * either, so there is no 32-bit way around the filter */
		assert_non_null(strstr(f->out, "i386 unavailable\n"));
		ota_oci_result_clear(&r);
		fx_free(f);
		return;
	}
#endif
	assert_null(strstr(f->out, "i386 unavailable"));
	static const char *const calls[] = {
		"unshare_user", "clone_user", "mount",    "umount2", "keyctl",
		"add_key",      "io_uring_setup", "bpf", "perf_event_open", "userfaultfd",
		"ptrace",       "setns",      "chroot",   "open_by_handle_at", "socket_vsock",
		"socketcall_vsock",
	};
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		char want[96];
		snprintf(want, sizeof want, "i386_%s denied EPERM\n", calls[i]);
		if (strstr(f->out, want) == NULL)
			fail_msg("i386 %s not denied with EPERM:\n%s", calls[i], f->out);
	}
	assert_null(strstr(f->out, " made"));
	ota_oci_result_clear(&r);
	fx_free(f);
}

/* Inside the boundary, calls the profile denies by name give EPERM
 * (Docker's table among them: kcmp, the NUMA calls, the clock setters,
 * ustat, sysfs, uselib), calls newer than its review ENOSYS (the canary's
 * filter), and cachestat, reviewed and allowed, reaches the kernel. */
static void profile_run(ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	ota_oci_result r;
	fx *f = probe_enforced(kind, "profile", &r);
	static const char *const denied[] = {
		"kcmp", "get_mempolicy", "set_mempolicy", "mbind", "migrate_pages", "move_pages",
		"clock_adjtime", "settimeofday", "clock_settime",
#if defined(__x86_64__)
		"ustat", "sysfs", "uselib",
#endif
	};
	for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
		char want[96];
		snprintf(want, sizeof want, "denied_%s denied EPERM\n", denied[i]);
		if (strstr(f->out, want) == NULL)
			fail_msg("%s not EPERM:\n%s", denied[i], f->out);
	}
	static const char *const calls[] = {
		"statmount", "listmount", "mseal", "open_tree_attr", "file_setattr", "unassigned",
#if defined(__x86_64__)
		"x32_listmount",
#endif
	};
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		char want[96];
		snprintf(want, sizeof want, "newer_%s denied ENOSYS\n", calls[i]);
		if (strstr(f->out, want) == NULL)
			fail_msg("%s not ENOSYS:\n%s", calls[i], f->out);
	}
#if defined(__x86_64__)
	if (host_ia32())
		assert_non_null(strstr(f->out, "newer_i386_listmount denied ENOSYS\n"));
#endif
	assert_null(strstr(f->out, " made"));
	/* the canary witnessed the bound before the task */
	size_t i;
	json_t *v;
	int seen = 0;
	json_array_foreach(json_object_get(r.applied, "canaries"), i, v)
	{
		const char *t = json_string_value(json_object_get(v, "target"));
		if (t != NULL && strcmp(t, "listmount") == 0) {
			assert_true(json_is_true(json_object_get(v, "ok")));
			assert_string_equal(json_string_value(json_object_get(v, "errno")), "ENOSYS");
			seen++;
		}
	}
	assert_int_equal(seen, 1);
	/* below the bound, the kernel answers */
	assert_non_null(strstr(f->out, "reviewed_cachestat denied "));
	struct utsname u;
	int major = 0, minor = 0;
	if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	    (major > 6 || (major == 6 && minor >= 5)))
		assert_non_null(strstr(f->out, "reviewed_cachestat denied EBADF\n"));
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_profile_runc(void **state)
{
	(void)state;
	profile_run(OTA_OCI_RUNC);
}

static void test_profile_crun(void **state)
{
	(void)state;
	profile_run(OTA_OCI_CRUN);
}

static void test_syscalls32_runc(void **state)
{
	(void)state;
	syscalls32_run(OTA_OCI_RUNC);
}

static void test_syscalls32_crun(void **state)
{
	(void)state;
	syscalls32_run(OTA_OCI_CRUN);
}

/* ---- PROC-06: resource limits (runc: linux.resources, read back from
 * the container's cgroups before the start) ---- */

static char g_pids_dir[1024];   /* the applied record's resources.pids_cgroup */
static long g_pids_current = -1; /* pids.current when the task said "full" */
static long g_pids_events = -1;  /* pids.events' max counter then */
static char g_pids_max[32];

static ota_err limits_on_initial(void *ctx, const json_t *initial, const json_t *applied,
                                 ota_error *err)
{
	(void)ctx;
	(void)initial;
	(void)err;
	const char *d = json_string_value(
		json_object_get(json_object_get(applied, "resources"), "pids_cgroup"));
	snprintf(g_pids_dir, sizeof g_pids_dir, "%s", d != NULL ? d : "");
	return OTA_OK;
}

static long read_long_file(const char *dir, const char *file, const char *key)
{
	char path[1200], line[256];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	FILE *fp = fopen(path, "re");
	if (fp == NULL)
		return -1;
	long v = -1;
	while (fgets(line, sizeof line, fp) != NULL) {
		size_t kl = key != NULL ? strlen(key) : 0;
		if (key == NULL || (strncmp(line, key, kl) == 0 && line[kl] == ' ')) {
			v = strtol(line + kl, NULL, 10);
			break;
		}
	}
	fclose(fp);
	return v;
}

static void limits_on_output(void *ctx, int fd, const uint8_t *p, size_t n)
{
	fx *f = ctx;
	on_output(ctx, fd, p, n);
	if (g_pids_current < 0 && strstr(f->out, "full\n") != NULL && g_pids_dir[0] != '\0') {
		/* the task asked for 200 processes and waits: the container's
		 * cgroup, read from the host */
		g_pids_current = read_long_file(g_pids_dir, "pids.current", NULL);
		g_pids_events = read_long_file(g_pids_dir, "pids.events", "max");
		char path[1200];
		snprintf(path, sizeof path, "%s/pids.max", g_pids_dir);
		FILE *fp = fopen(path, "re");
		if (fp == NULL || fgets(g_pids_max, sizeof g_pids_max, fp) == NULL)
			g_pids_max[0] = '\0';
		if (fp != NULL)
			fclose(fp);
	}
}

static void test_limits_runc(void **state)
{
	(void)state;
	if (!runtime_available(OTA_OCI_RUNC))
		skip();
	if (access("/sys/fs/cgroup/pids", F_OK) != 0 && access("/sys/fs/cgroup/pids.max", F_OK) != 0)
		skip();
	fx *f = fx_new(OTA_OCI_RUNC);
	test_sh("cp '%s' '%s/work/probe'", OTA_TASK_PROBE, f->repo);
	ota_oci_run_opts o = fx_opts(f);
	o.pids_limit = 64;
	o.on_output = limits_on_output;
	o.on_initial = limits_on_initial;
	g_pids_dir[0] = '\0';
	g_pids_current = g_pids_events = -1;
	/* 200 processes asked for (a bounded bomb: on the old code, with no
	 * limit, it takes 200 pids of the host, not all of them); each fork
	 * past the limit fails (EAGAIN); then the probe waits until the
	 * timeout kills the container */
	ota_oci_plan p = fx_plan(f, "exec /workspace/work/probe spawn 200");
	p.timeout_seconds = 4;
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	/* rendered, read back before the start, recorded */
	json_t *res = json_object_get(json_object_get(json_object_get(r.rendered, "config"), "linux"),
	                              "resources");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "pids"), "limit")),
	                 64);
	assert_null(json_object_get(res, "memory"));
	json_t *ar = json_object_get(r.applied, "resources");
	assert_int_equal(json_integer_value(json_object_get(ar, "pids_limit")), 64);
	assert_true(json_is_null(json_object_get(ar, "memory_limit_bytes")));
	assert_non_null(strstr(g_pids_dir, r.container_id));
	/* bounded by the container's own limit, which refused forks */
	if (g_pids_current < 0)
		fail_msg("the task never said full:\n%s", f->out);
	assert_string_equal(g_pids_max, "64\n");
	if (g_pids_current > 64 || g_pids_current < 2 || g_pids_events < 1)
		fail_msg("pids.current %ld, pids.events max %ld", g_pids_current, g_pids_events);
	assert_true(r.timed_out);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_true(json_is_true(json_object_get(json_object_get(r.terminal_record, "cleanup"),
	                                         "confirmed")));
	assert_lease_terminal(f, r.container_id, "enforced_through_completion");
	assert_int_equal(count_containers(f), 0);
	assert_int_not_equal(access(g_pids_dir, F_OK), 0); /* the cgroup is gone */
	ota_oci_result_clear(&r);

	/* the memory limit inside the task: dd's 96 MiB buffer is killed by
	 * the container's OOM killer (no swap here: with swap the pages
	 * could go there), the shell that ran it goes on; the pids limit is
	 * the default */
	f->out_len = 0;
	f->out[0] = '\0';
	o.on_initial = NULL;
	o.on_output = on_output;
	o.pids_limit = 0;
	o.memory_limit_bytes = 32LL << 20;
	p = fx_plan(f, "dd if=/dev/zero of=/dev/null bs=96M count=1 2>/dev/null; echo dd=$?; "
	               "dd if=/dev/zero of=/dev/null bs=8M count=1 2>/dev/null; echo small=$?");
	ota_error_clear(&e);
	rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	if (strstr(f->out, "dd=137\n") == NULL || strstr(f->out, "small=0\n") == NULL)
		fail_msg("the memory limit did not hold:\n%s", f->out);
	assert_int_equal(r.exit_status, 0);
	ar = json_object_get(r.applied, "resources");
	assert_int_equal(json_integer_value(json_object_get(ar, "pids_limit")),
	                 OTA_OCI_DEFAULT_PIDS_LIMIT);
	assert_int_equal(json_integer_value(json_object_get(ar, "memory_limit_bytes")), 32LL << 20);
	assert_non_null(strstr(json_string_value(json_object_get(ar, "memory_cgroup")),
	                       r.container_id));
	ota_oci_result_clear(&r);
	assert_int_equal(count_containers(f), 0);
	fx_free(f);
}

/* A runtime that leaves the limit out (a wrapper drops linux.resources
 * from the bundle's config before runc reads it): the read-back refuses
 * the run before the start, the task never runs, removal confirmed. Under
 * crun an explicit limit is refused before anything is prepared. */
static void test_limits_not_applied(void **state)
{
	(void)state;
	if (!runtime_available(OTA_OCI_RUNC))
		skip();
	fx *f = fx_new(OTA_OCI_RUNC);
	char bin[1024];
	snprintf(bin, sizeof bin, "%s/nolimit-runc", f->tmp);
	test_sh("printf '#!/bin/sh\\nprev=\\nfor a; do if [ \"$prev\" = --bundle ]; then "
	        "jq -c \"del(.linux.resources)\" \"$a/config.json\" > \"$a/c2\" && "
	        "mv \"$a/c2\" \"$a/config.json\"; fi; prev=$a; done\\nexec runc \"$@\"\\n' > '%s' "
	        "&& chmod 755 '%s'",
	        bin, bin);
	ota_oci_run_opts o = fx_opts(f);
	o.runtime.binary = bin;
	o.pids_limit = 64;
	ota_oci_plan p = fx_plan(f, "touch /workspace/reports/started");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_ERR_OCI_LIMIT_NOT_APPLIED);
	assert_non_null(strstr(e.what, "pids.max"));
	assert_false(r.started);
	assert_int_equal(r.terminal, OTA_OCI_REFUSED);
	assert_false(json_is_true(json_object_get(r.applied, "ok")));
	assert_true(json_is_true(json_object_get(json_object_get(r.terminal_record, "cleanup"),
	                                         "confirmed")));
	char started[1024];
	snprintf(started, sizeof started, "%s/reports/started", f->repo);
	assert_int_not_equal(access(started, F_OK), 0);
	ota_oci_result_clear(&r);
	assert_int_equal(count_containers(f), 0);
	/* the default (4096) is applied the same way: refused too */
	o.pids_limit = 0;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_ERR_OCI_LIMIT_NOT_APPLIED);
	ota_oci_result_clear(&r);
	/* -1: none asked, none checked: the run goes ahead */
	o.pids_limit = -1;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_OK);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_true(json_is_null(json_object_get(json_object_get(r.applied, "resources"),
	                                         "pids_limit")));
	ota_oci_result_clear(&r);
	assert_int_equal(count_containers(f), 0);
	fx_free(f);

	if (!runtime_available(OTA_OCI_CRUN))
		return;
	f = fx_new(OTA_OCI_CRUN);
	snprintf(started, sizeof started, "%s/reports/started", f->repo);
	o = fx_opts(f);
	p = fx_plan(f, "touch /workspace/reports/started");
	o.pids_limit = 64;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_ERR_OCI_LIMIT_UNSUPPORTED);
	assert_string_equal(e.where, "pids_limit");
	assert_false(r.started);
	ota_oci_result_clear(&r);
	o.pids_limit = 0;
	o.memory_limit_bytes = 64LL << 20;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_ERR_OCI_LIMIT_UNSUPPORTED);
	assert_string_equal(e.where, "memory_limit_bytes");
	ota_oci_result_clear(&r);
	assert_int_not_equal(access(started, F_OK), 0);
	/* the default under crun is none, said so in the applied record */
	o.memory_limit_bytes = 0;
	ota_error_clear(&e);
	assert_ota(ota_oci_run(&p, &o, &r, &e), OTA_OK);
	assert_null(json_object_get(json_object_get(json_object_get(r.rendered, "config"), "linux"),
	                            "resources"));
	assert_true(json_is_null(json_object_get(json_object_get(r.applied, "resources"),
	                                         "pids_limit")));
	assert_int_equal(access(started, F_OK), 0);
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_setid_runc(void **state)
{
	(void)state;
	setid_run(OTA_OCI_RUNC);
}

static void test_setid_crun(void **state)
{
	(void)state;
	setid_run(OTA_OCI_CRUN);
}

/* ---- a runtime that cannot be started after the go (a task that filled
 * the host's pid space leaves no process for `runc kill`): the timeout
 * still kills the container through the init's pidfd; a removal that
 * cannot be confirmed keeps the lease open for `ota cleanup`. A wrapper
 * around runc fails the named subcommands while its flag file exists. ---- */

static void write_failing_runc(const fx *f, char *bin, size_t cap, char *flag, size_t fcap)
{
	snprintf(bin, cap, "%s/failing-runc", f->tmp);
	snprintf(flag, fcap, "%s/fail", f->tmp);
	test_sh("printf '#!/bin/sh\\nfor a; do case \"$a\" in kill|state|delete) "
	   "[ -e %s ] && exit 1;; esac; done\\nexec runc \"$@\"\\n' > '%s' && chmod 755 '%s'",
	   flag, bin, bin);
}

static void test_kill_without_runtime(void **state)
{
	(void)state;
	if (!runtime_available(OTA_OCI_RUNC))
		skip();
	fx *f = fx_new(OTA_OCI_RUNC);
	char bin[1024], flag[1024];
	write_failing_runc(f, bin, sizeof bin, flag, sizeof flag);
	ota_oci_run_opts o = fx_opts(f);
	o.runtime.binary = bin;
	ota_oci_plan p = fx_plan(f, "touch /workspace/reports/started; sleep 30");
	p.timeout_seconds = 1;

	/* `kill` fails: the init is killed through its pidfd all the same */
	test_sh("touch '%s'", flag);
	test_sh("sed -i 's/kill|state|delete/kill/' '%s'", bin);
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	time_t t0 = time(NULL);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_true(time(NULL) - t0 < 8);
	assert_true(r.timed_out);
	assert_int_equal(r.exit_status, 128 + SIGKILL);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	assert_lease_terminal(f, r.container_id, "enforced_through_completion");
	ota_oci_result_clear(&r);
	assert_int_equal(count_containers(f), 0);

	/* `kill`, `state` and `delete` fail: the container's init is gone but
	 * its removal cannot be confirmed, so the lease stays open (a child is
	 * the runner: cleanup leaves the leases of live runners alone) */
	write_failing_runc(f, bin, sizeof bin, flag, sizeof flag);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		o.on_output = NULL;
		rc = ota_oci_run(&p, &o, &r, NULL);
		bool ok = rc == OTA_ERR_OCI_CLEANUP_UNCONFIRMED && r.timed_out &&
		          r.terminal == OTA_OCI_ENFORCEMENT_LOST &&
		          json_is_false(json_object_get(json_object_get(r.terminal_record, "cleanup"),
		                                        "confirmed"));
		ota_oci_result_clear(&r);
		_exit(ok ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	json_t *open_rows = NULL;
	assert_ota(ota_oci_lease_list(f->db, true, &open_rows, NULL), OTA_OK);
	assert_int_equal(json_array_size(open_rows), 1);
	char id[64];
	snprintf(id, sizeof id, "%s",
	         json_string_value(json_object_get(json_array_get(open_rows, 0), "id")));
	json_decref(open_rows);
	assert_int_equal(count_containers(f), 1); /* runc still knows it */
	/* the runtime works again: cleanup finalizes the lease it left open */
	test_sh("rm '%s'", flag);
	json_t *rep = NULL;
	ota_error_clear(&e);
	rc = ota_oci_cleanup(&o, &rep, &e);
	if (rc != OTA_OK)
		fail_msg("cleanup: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	json_t *fin = json_object_get(rep, "finalized");
	assert_int_equal(json_array_size(fin), 1);
	assert_true(json_is_true(json_object_get(json_array_get(fin, 0), "confirmed")));
	json_decref(rep);
	assert_lease_terminal(f, id, "enforcement_unknown_after_interruption");
	fx_free(f); /* asserts no container is left */
}

/* ---- interruption: SIGINT, SIGTERM in process; SIGKILL then cleanup ---- */

static volatile sig_atomic_t g_cancel; /* test child only: the signal handler's flag */

static void on_signal(int sig)
{
	(void)sig;
	g_cancel = 1;
}

/* Waits until the child's lease reaches phase "started"; returns its id.
 * A child that ended first fails the test with its status (its error is on
 * stderr); the deadline is generous, as a loaded machine starts slowly. */
static void wait_started(const fx *f, pid_t child, char id[64])
{
	for (int i = 0; i < 1200; i++) {
		int st = 0;
		if (waitpid(child, &st, WNOHANG) == child)
			fail_msg("the child ended before its container started (%s %d)",
			         WIFEXITED(st) ? "exit" : "signal",
			         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		json_t *rows = NULL;
		if (ota_oci_lease_list(f->db, true, &rows, NULL) == OTA_OK) {
			size_t k;
			json_t *r;
			json_array_foreach(rows, k, r)
			{
				const char *ph = json_string_value(json_object_get(r, "phase"));
				if (ph != NULL && strcmp(ph, "started") == 0) {
					snprintf(id, 64, "%s", json_string_value(json_object_get(r, "id")));
					json_decref(rows);
					return;
				}
			}
			json_decref(rows);
		}
		usleep(50000);
	}
	fail_msg("child never started its container");
}

static void interrupt_with(int sig, ota_oci_runtime_kind kind)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		ota_oci_run_opts o = fx_opts(f);
		o.cancel = &g_cancel;
		o.on_output = NULL;
		ota_oci_plan p = fx_plan(f, "sleep 60");
		ota_oci_result r;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_oci_run(&p, &o, &r, &e);
		int code = rc == OTA_ERR_OCI_INTERRUPTED &&
		                           r.terminal == OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION
		                   ? 0
		                   : 1;
		if (code != 0)
			fprintf(stderr, "child run: %s: %s: %s (terminal %d)\n", ota_err_name(rc), e.where,
			        e.what, (int)r.terminal);
		ota_oci_result_clear(&r);
		_exit(code);
	}
	char id[64];
	wait_started(f, child, id);
	assert_int_equal(kill(child, sig), 0);
	int st = 0;
	assert_int_equal(waitpid(child, &st, 0), child);
	if (sig == SIGKILL) {
		assert_true(WIFSIGNALED(st));
		/* the container outlives its runner (PROC-02) until cleanup */
		assert_int_equal(count_containers(f), 1);
		ota_oci_run_opts o = fx_opts(f);
		json_t *rep = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_oci_cleanup(&o, &rep, &e);
		if (rc != OTA_OK)
			fail_msg("cleanup: %s: %s", ota_err_name(rc), e.what);
		assert_int_equal(json_array_size(json_object_get(rep, "finalized")), 1);
		json_decref(rep);
	} else {
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_lease_terminal(f, id, "enforcement_unknown_after_interruption");
	json_t *open_rows = NULL;
	assert_ota(ota_oci_lease_list(f->db, true, &open_rows, NULL), OTA_OK);
	assert_int_equal(json_array_size(open_rows), 0); /* every lease finalized */
	json_decref(open_rows);
	fx_free(f); /* asserts no container is left */
}

static void test_sigint(void **state)
{
	(void)state;
	interrupt_with(SIGINT, OTA_OCI_RUNC);
}

static void test_sigterm(void **state)
{
	(void)state;
	interrupt_with(SIGTERM, OTA_OCI_CRUN);
}

static void test_sigkill_runc(void **state)
{
	(void)state;
	interrupt_with(SIGKILL, OTA_OCI_RUNC);
}

static void test_sigkill_crun(void **state)
{
	(void)state;
	interrupt_with(SIGKILL, OTA_OCI_CRUN);
}

/* ---- a dead runner's container killed by cleanup without the runtime:
 * the lease's container pid, proved to be the container's by its cgroup
 * and its pid namespace, is killed with every process of that namespace
 * through pidfds while `runc kill`, `state` and `delete` all fail (as
 * against a task that filled the host's pid space); the removal is only
 * confirmed by a later cleanup once the runtime answers again. ---- */

/* Whether any live process under /proc shows pid namespace ns (a zombie
 * has ended: this test process may be the subreaper its init was handed to
 * when its runner died, and reaps nothing it did not fork). */
static bool pidns_populated(const char *ns)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	bool any = false;
	struct dirent *de;
	while (!any && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char p[300], got[64];
		snprintf(p, sizeof p, "/proc/%s/ns/pid", de->d_name);
		ssize_t n = readlink(p, got, sizeof got - 1);
		if (n > 0) {
			got[n] = '\0';
			char sp[300], st[512];
			snprintf(sp, sizeof sp, "/proc/%s/stat", de->d_name);
			FILE *f = fopen(sp, "r");
			size_t l = f != NULL ? fread(st, 1, sizeof st - 1, f) : 0;
			if (f != NULL)
				fclose(f);
			st[l] = '\0';
			const char *rp = strrchr(st, ')');
			bool zombie = rp != NULL && (rp[2] == 'Z' || rp[2] == 'X');
			any = strcmp(got, ns) == 0 && !zombie;
		}
	}
	closedir(d);
	return any;
}

static void test_cleanup_kills_without_runtime(void **state)
{
	(void)state;
	if (!runtime_available(OTA_OCI_RUNC))
		skip();
	fx *f = fx_new(OTA_OCI_RUNC);
	char bin[1024], flag[1024];
	write_failing_runc(f, bin, sizeof bin, flag, sizeof flag);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		ota_oci_run_opts o = fx_opts(f);
		o.runtime.binary = bin;
		o.on_output = NULL;
		/* processes in their own sessions (a kill of the init's session
		 * would not reach them), then the sign they exist */
		ota_oci_plan p = fx_plan(f, "for i in 1 2 3 4 5 6; do setsid sleep 300 & done; "
		                            "touch /workspace/reports/spawned; wait");
		p.timeout_seconds = 300;
		ota_oci_result r;
		ota_err rc = ota_oci_run(&p, &o, &r, NULL);
		_exit(rc == OTA_OK ? 2 : 1); /* killed before it ends */
	}
	char id[64];
	wait_started(f, child, id);
	char spawned[1100];
	snprintf(spawned, sizeof spawned, "%s/reports/spawned", f->repo);
	for (int i = 0; i < 600 && access(spawned, F_OK) != 0; i++)
		usleep(50000);
	assert_int_equal(access(spawned, F_OK), 0);
	assert_int_equal(kill(child, SIGKILL), 0);
	int cst = 0;
	assert_int_equal(waitpid(child, &cst, 0), child);
	if (!WIFSIGNALED(cst))
		fail_msg("the runner ended by itself (exit %d) before it was killed",
		         WIFEXITED(cst) ? WEXITSTATUS(cst) : -1);

	json_t *rows = NULL;
	assert_ota(ota_oci_lease_list(f->db, true, &rows, NULL), OTA_OK);
	assert_int_equal(json_array_size(rows), 1);
	long pid = (long)json_integer_value(json_object_get(json_array_get(rows, 0), "container_pid"));
	json_decref(rows);
	assert_true(pid > 1);
	char nsl[300], ns[64];
	snprintf(nsl, sizeof nsl, "/proc/%ld/ns/pid", pid);
	ssize_t nn = readlink(nsl, ns, sizeof ns - 1);
	assert_true(nn > 0);
	ns[nn] = '\0';
	if (!pidns_populated(ns)) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "cat /proc/%ld/stat /proc/%ld/status | head -12; ls %s/reports; cat %s/state 2>/dev/null", pid, pid, f->repo, f->tmp);
		(void)!system(cmd);
		fail_msg("the container's namespace %s is empty after its runner was killed", ns);
	}

	/* the runtime cannot run: every process of the container is killed
	 * all the same; nothing is confirmed, the lease stays open */
	test_sh("touch '%s'", flag);
	ota_oci_run_opts o = fx_opts(f);
	o.runtime.binary = bin;
	json_t *rep = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_cleanup(&o, &rep, &e);
	assert_int_not_equal(rc, OTA_OK);
	json_t *fin = json_array_get(json_object_get(rep, "finalized"), 0);
	assert_non_null(fin);
	assert_true(json_is_false(json_object_get(fin, "confirmed")));
	assert_true(json_is_false(json_object_get(fin, "lease_closed")));
	json_t *cl = json_object_get(fin, "cleanup");
	assert_true(json_is_true(json_object_get(cl, "pidns_proved")));
	assert_true(json_is_true(json_object_get(cl, "pidns_killed")));
	/* the six sleeps at least (the init is signalled through its pidfd) */
	assert_true(json_integer_value(json_object_get(cl, "pidns_signalled")) >= 6);
	json_decref(rep);
	for (int i = 0; i < 100 && pidns_populated(ns); i++)
		usleep(50000);
	assert_false(pidns_populated(ns));
	assert_int_equal(count_containers(f), 1); /* runc still knows it */
	rows = NULL;
	assert_ota(ota_oci_lease_list(f->db, true, &rows, NULL), OTA_OK);
	assert_int_equal(json_array_size(rows), 1);
	json_decref(rows);

	/* the runtime answers again: the removal is confirmed, the lease closed */
	test_sh("rm '%s'", flag);
	rep = NULL;
	ota_error_clear(&e);
	rc = ota_oci_cleanup(&o, &rep, &e);
	if (rc != OTA_OK)
		fail_msg("cleanup: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	fin = json_array_get(json_object_get(rep, "finalized"), 0);
	assert_true(json_is_true(json_object_get(fin, "confirmed")));
	/* nothing left to kill: no proof was needed */
	assert_true(json_is_false(json_object_get(json_object_get(fin, "cleanup"), "pidns_proved")));
	json_decref(rep);
	assert_lease_terminal(f, id, "enforcement_unknown_after_interruption");
	fx_free(f); /* asserts no container is left */
}

/* ---- upstream's enforced-oci-sandbox example on debian:bookworm-slim ---- */

static void test_upstream_example_debian(void **state)
{
	(void)state;
	const char *store = getenv("OTA_TEST_IMAGE_STORE");
	if (store == NULL)
		store = "/var/cache/ota/images";
	char *rootfs = NULL;
	json_t *ev = NULL;
	ota_oci_platform decl = {"linux", "amd64", NULL};
	ota_error e;
	ota_error_clear(&e);
	if (ota_oci_image_resolve(store, "debian:bookworm-slim", &decl, NULL, &rootfs, &ev, &e) !=
	    OTA_OK) {
		fprintf(stderr, "debian image not available (%s: %s); build it with "
		                "scripts/make-test-rootfs.sh debian-image %s\n",
		        ota_err_name(e.code), e.what, store);
		skip();
	}
	assert_true(json_is_true(json_object_get(ev, "ok")));
	json_decref(ev);
	fx *f = fx_new(OTA_OCI_RUNC);
	char *yaml = test_src_path("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml");
	assert_int_equal(access(yaml, R_OK), 0);
	test_sh("cp '%s' '%s/ota.yaml'", yaml, f->repo);
	free(yaml);
	ota_oci_run_opts o = fx_opts(f);
	static const char *const argv[] = {"bash", "-lc", "printf verified > reports/result.txt"};
	static const char *const w[] = {"reports"};
	static const char *const pp[] = {"ota.yaml", ".github/workflows"};
	ota_oci_plan p = fx_plan(f, "");
	p.rootfs = rootfs;
	p.argv = argv;
	p.argc = 3;
	p.writable = w;
	p.n_writable = 1;
	p.protected_paths = pp;
	p.n_protected = 2;
	p.platform = decl;
	ota_oci_result r;
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(r.exit_status, 0);
	assert_int_equal(r.terminal, OTA_OCI_ENFORCED_THROUGH_COMPLETION);
	char path[1024];
	snprintf(path, sizeof path, "%s/reports/result.txt", f->repo);
	char *res = slurp(path);
	assert_non_null(res);
	assert_string_equal(res, "verified");
	free(res);
	ota_oci_result_clear(&r);
	free(rootfs);
	fx_free(f);
}

/* ---- FS-19: a validated bind source swapped before create ---- */

typedef struct swap_ctx {
	const fx *f;
	bool symlink; /* swap for a symlink to a decoy, else for another directory */
} swap_ctx;

static void swap_carve_out(void *ctx)
{
	const swap_ctx *c = ctx;
	const fx *f = c->f;
	test_sh("mkdir -p '%s/decoy' && echo SECRET > '%s/decoy/secret' && mv '%s/reports' "
	   "'%s/reports.real'",
	   f->tmp, f->tmp, f->repo, f->repo);
	if (c->symlink)
		test_sh("ln -s '%s/decoy' '%s/reports'", f->tmp, f->repo);
	else
		test_sh("mkdir '%s/reports' && echo SECRET > '%s/reports/secret'", f->repo, f->repo);
}

static void toctou_swap(ota_oci_runtime_kind kind, bool symlink)
{
	if (!runtime_available(kind))
		skip();
	fx *f = fx_new(kind);
	swap_ctx c = {f, symlink};
	ota_oci_run_opts o = fx_opts(f);
	o.before_create = swap_carve_out;
	o.before_create_ctx = &c;
	ota_oci_plan p = fx_plan(f, "cat /workspace/reports/secret; echo PWNED > /workspace/reports/x");
	ota_oci_result r;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_run(&p, &o, &r, &e);
	if (!symlink && rc != OTA_ERR_OCI_IDENTITY_CHANGED)
		fail_msg("got %s (%s: %s), want oci_identity_changed", ota_err_name(rc), e.where, e.what);
	/* a symlinked source: runc mounts the link's target elsewhere (caught by
	 * the mountinfo check), crun refuses to create; either way, fail closed */
	if (symlink && rc != OTA_ERR_OCI_IDENTITY_CHANGED && rc != OTA_ERR_OCI_MOUNT_UNEXPECTED &&
	    rc != OTA_ERR_OCI_MOUNT_MISSING && rc != OTA_ERR_OCI_RUNTIME_FAILED)
		fail_msg("got %s (%s: %s), want a refusal", ota_err_name(rc), e.where, e.what);
	assert_false(r.started);
	assert_true(r.terminal == OTA_OCI_REFUSED || r.terminal == OTA_OCI_NOT_STARTED);
	assert_null(strstr(f->out, "SECRET")); /* the task never ran */
	char path[1024];
	snprintf(path, sizeof path, "%s/decoy/x", f->tmp);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/reports/x", f->repo);
	assert_int_equal(access(path, F_OK), -1);
	assert_lease_terminal(f, r.container_id, ota_oci_terminal_name(r.terminal));
	ota_oci_result_clear(&r);
	fx_free(f);
}

static void test_toctou_runc(void **state)
{
	(void)state;
	toctou_swap(OTA_OCI_RUNC, false);
	toctou_swap(OTA_OCI_RUNC, true);
}

static void test_toctou_crun(void **state)
{
	(void)state;
	toctou_swap(OTA_OCI_CRUN, false);
	toctou_swap(OTA_OCI_CRUN, true);
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "oci_run_test: needs root; skipped\n");
		return 0;
	}
	if (getenv("OTA_TEST_FILTER") != NULL) /* by hand: one test's name, or a glob */
		cmocka_set_test_filter(getenv("OTA_TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_basic_runc, fx_teardown),
		cmocka_unit_test_teardown(test_basic_crun, fx_teardown),
		cmocka_unit_test_teardown(test_gate_runc, fx_teardown),
		cmocka_unit_test_teardown(test_gate_crun, fx_teardown),
		cmocka_unit_test_teardown(test_escapes_runc, fx_teardown),
		cmocka_unit_test_teardown(test_escapes_crun, fx_teardown),
		cmocka_unit_test_teardown(test_image_devices_runc, fx_teardown),
		cmocka_unit_test_teardown(test_image_devices_crun, fx_teardown),
		cmocka_unit_test_teardown(test_image_mount_points_runc, fx_teardown),
		cmocka_unit_test_teardown(test_repo_devices_runc, fx_teardown),
		cmocka_unit_test_teardown(test_repo_devices_crun, fx_teardown),
		cmocka_unit_test_teardown(test_image_user_db_runc, fx_teardown),
		cmocka_unit_test_teardown(test_image_user_db_crun, fx_teardown),
		cmocka_unit_test_teardown(test_image_mount_points_crun, fx_teardown),
		cmocka_unit_test_teardown(test_refusals, fx_teardown),
		cmocka_unit_test_teardown(test_private_paths, fx_teardown),
		cmocka_unit_test_teardown(test_toctou_runc, fx_teardown),
		cmocka_unit_test_teardown(test_toctou_crun, fx_teardown),
		cmocka_unit_test_teardown(test_timeout, fx_teardown),
		cmocka_unit_test_teardown(test_setid_runc, fx_teardown),
		cmocka_unit_test_teardown(test_setid_crun, fx_teardown),
		cmocka_unit_test_teardown(test_writable_setid_runc, fx_teardown),
		cmocka_unit_test_teardown(test_writable_setid_crun, fx_teardown),
		cmocka_unit_test_teardown(test_syscalls32_runc, fx_teardown),
		cmocka_unit_test_teardown(test_syscalls32_crun, fx_teardown),
		cmocka_unit_test_teardown(test_profile_runc, fx_teardown),
		cmocka_unit_test_teardown(test_profile_crun, fx_teardown),
		cmocka_unit_test_teardown(test_kill_without_runtime, fx_teardown),
		cmocka_unit_test_teardown(test_limits_runc, fx_teardown),
		cmocka_unit_test_teardown(test_limits_not_applied, fx_teardown),
		cmocka_unit_test_teardown(test_sigint, fx_teardown),
		cmocka_unit_test_teardown(test_sigterm, fx_teardown),
		cmocka_unit_test_teardown(test_sigkill_runc, fx_teardown),
		cmocka_unit_test_teardown(test_sigkill_crun, fx_teardown),
		cmocka_unit_test_teardown(test_cleanup_kills_without_runtime, fx_teardown),
		cmocka_unit_test_teardown(test_upstream_example_debian, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
