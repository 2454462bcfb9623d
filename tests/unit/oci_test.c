/*
 * oci_local without a runtime: admission (canonicalization and alias
 * refusals, the cancel flag during its scan), rendering, mountinfo and
 * network-namespace inspection, platforms.
 */
#include "test_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/json.h"
#include "ota/oci.h"

typedef struct fx {
	char *tmp;
	char repo[512];
	char rootfs[512];
} fx;

static void sh(const char *cmd)
{
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void shf(const char *fmt, ...) OTA_PRINTF(1, 2);
static void shf(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof cmd);
	sh(cmd);
}

static fx *fx_new(void)
{
	fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->tmp = test_tmpdir();
	snprintf(f->repo, sizeof f->repo, "%s/repo", f->tmp);
	snprintf(f->rootfs, sizeof f->rootfs, "%s/rootfs", f->tmp);
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
	         "mkdir -p %s/bin %s/out %s/.git %s/work/cfg && printf x > %s/.git/config && "
	         "printf y > %s/work/cfg/s.json && printf v > %s/ota.yaml",
	         f->rootfs, f->repo, f->repo, f->repo, f->repo, f->repo, f->repo);
	sh(cmd);
	return f;
}

static void fx_free(fx *f)
{
	test_rmtree(f->tmp);
	free(f->tmp);
	free(f);
}

static const char *const ARGV[] = {"/bin/true"};

static ota_oci_plan plan_of(const fx *f, const char *const *w, size_t nw, const char *const *p,
                            size_t np)
{
	ota_oci_plan pl;
	memset(&pl, 0, sizeof pl);
	pl.repo = f->repo;
	pl.rootfs = f->rootfs;
	pl.writable = w;
	pl.n_writable = nw;
	pl.protected_paths = p;
	pl.n_protected = np;
	pl.argv = ARGV;
	pl.argc = 1;
	return pl;
}

static ota_err admit(const ota_oci_plan *p)
{
	ota_oci_admitted *a = NULL;
	ota_err rc = ota_oci_admit(p, "/run/ota/test-none", &a, NULL);
	if (rc == OTA_OK)
		assert_non_null(a);
	else
		assert_null(a);
	ota_oci_admitted_free(a);
	return rc;
}

static void test_admit_paths(void **state)
{
	(void)state;
	fx *f = fx_new();
	const char *w[] = {"./out//"};
	const char *p[] = {".git", "work/cfg/s.json", "missing/under/ro"};
	ota_oci_plan pl = plan_of(f, w, 1, p, 3);
	assert_ota(admit(&pl), OTA_OK); /* FS-27: other spellings normalise */

	const char *w_dotdot[] = {"out/../../etc"};
	pl = plan_of(f, w_dotdot, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_ESCAPE); /* FS-07 at admission */
	const char *w_abs[] = {"/etc"};
	pl = plan_of(f, w_abs, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_WRITABLE_OUTSIDE);
	const char *w_missing[] = {"nope"};
	pl = plan_of(f, w_missing, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_MISSING);
	const char *w_root[] = {"."};
	pl = plan_of(f, w_root, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PLAN_INVALID);

	/* FS-25: a carve-out through a symlink, also in a parent component */
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "ln -s /tmp %s/link && mkdir -p %s/real && ln -s real %s/alias",
	         f->repo, f->repo, f->repo);
	sh(cmd);
	const char *w_link[] = {"link"};
	pl = plan_of(f, w_link, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);
	const char *w_link2[] = {"link/x"};
	pl = plan_of(f, w_link2, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);
	const char *w_alias[] = {"alias"};
	pl = plan_of(f, w_alias, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);
	/* FS-26: the protected path is a symlink; a missing one behind a symlink */
	const char *p_link[] = {"link"};
	pl = plan_of(f, w, 1, p_link, 1);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);
	const char *p_link2[] = {"alias/.git"};
	pl = plan_of(f, w, 1, p_link2, 1);
	assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);

	/* FS-13: missing protected name under a writable parent */
	const char *p_missing[] = {"out/.git"};
	pl = plan_of(f, w, 1, p_missing, 1);
	assert_ota(admit(&pl), OTA_ERR_OCI_PROTECTED_UNDEFENDABLE);
	pl.repo_writable = true;
	const char *p_missing2[] = {".envrc"};
	pl.protected_paths = p_missing2;
	pl.n_writable = 0;
	assert_ota(admit(&pl), OTA_ERR_OCI_PROTECTED_UNDEFENDABLE);

	/* protected at or above a writable path; duplicates */
	const char *w_in_prot[] = {".git/hooks"};
	snprintf(cmd, sizeof cmd, "mkdir -p %s/.git/hooks", f->repo);
	sh(cmd);
	const char *p_git[] = {".git"};
	pl = plan_of(f, w_in_prot, 1, p_git, 1);
	assert_ota(admit(&pl), OTA_ERR_OCI_PLAN_INVALID);
	const char *w_dup[] = {"out", "./out"};
	pl = plan_of(f, w_dup, 2, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_PLAN_INVALID);

	/* FS-05: a hardlink under a carve-out to protected content; a
	 * hardlinked writable file; a link to a file outside the repo */
	snprintf(cmd, sizeof cmd, "ln %s/.git/config %s/out/prehl", f->repo, f->repo);
	sh(cmd);
	pl = plan_of(f, w, 1, p, 2);
	assert_ota(admit(&pl), OTA_ERR_OCI_HARDLINK_ALIAS);
	const char *w_file[] = {".git/config"};
	pl = plan_of(f, w_file, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_HARDLINK_ALIAS);
	shf("rm %s/out/prehl && echo h > %s/host-secret && ln %s/host-secret %s/out/hl", f->repo,
	    f->tmp, f->tmp, f->repo);
	pl = plan_of(f, w, 1, NULL, 0);
	assert_ota(admit(&pl), OTA_ERR_OCI_HARDLINK_ALIAS);
	/* links that all live under writable paths are the task's own: allowed */
	shf("rm %s/out/hl && echo a > %s/out/a && ln %s/out/a %s/out/b", f->repo, f->repo, f->repo,
	    f->repo);
	assert_ota(admit(&pl), OTA_OK);
	/* ... unless one of them sits in a protected path below the carve-out */
	const char *p_out[] = {"out/b"};
	pl = plan_of(f, w, 1, p_out, 1);
	assert_ota(admit(&pl), OTA_ERR_OCI_HARDLINK_ALIAS);
	shf("rm %s/out/a %s/out/b", f->repo, f->repo);

	/* runtime state and the host root are never the repository or rootfs */
	pl = plan_of(f, w, 1, NULL, 0);
	pl.repo = "/";
	assert_ota(admit(&pl), OTA_ERR_OCI_RUNTIME_SOCKET);
	pl.repo = "/var/run";
	assert_ota(admit(&pl), OTA_ERR_OCI_RUNTIME_SOCKET);
	pl = plan_of(f, NULL, 0, NULL, 0);
	pl.rootfs = "/";
	assert_ota(admit(&pl), OTA_ERR_OCI_RUNTIME_SOCKET);
	/* a socket file anywhere in the rootfs, however deep, is refused;
	 * a refusal found before it (a symlinked writable path) still wins */
	{
		char sd[600];
		snprintf(sd, sizeof sd, "%s/deep/er", f->rootfs);
		shf("mkdir -p %s", sd);
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(s >= 0);
		struct sockaddr_un un;
		memset(&un, 0, sizeof un);
		un.sun_family = AF_UNIX;
		int un_n = snprintf(un.sun_path, sizeof un.sun_path, "%s/ctl.sock", sd);
		assert_true(un_n > 0 && (size_t)un_n < sizeof un.sun_path);
		assert_int_equal(bind(s, (struct sockaddr *)&un, sizeof un), 0);
		pl = plan_of(f, w, 1, NULL, 0);
		assert_ota(admit(&pl), OTA_ERR_OCI_RUNTIME_SOCKET);
		shf("ln -s out %s/outlink", f->repo);
		const char *wl[] = {"outlink"};
		pl = plan_of(f, wl, 1, NULL, 0);
		assert_ota(admit(&pl), OTA_ERR_OCI_PATH_SYMLINK);
		shf("rm %s/outlink", f->repo);
		close(s);
		unlink(un.sun_path);
		shf("rm -r %s/deep", f->rootfs);
		pl = plan_of(f, w, 1, NULL, 0);
		assert_ota(admit(&pl), OTA_OK);
	}
	/* a device node anywhere in the repository (the read-only part, a
	 * carve-out, a protected directory, deep down): oci_repo_device, as
	 * the rootfs's outside /dev; a FIFO stays allowed */
	if (geteuid() == 0) {
		static const char *const at[] = {"kmsg", "out/kmsg", ".git/kmsg", "work/a/b/c/kmsg"};
		shf("mkdir -p %s/work/a/b/c && mkfifo %s/out/fifo", f->repo, f->repo);
		pl = plan_of(f, w, 1, p, 2);
		assert_ota(admit(&pl), OTA_OK);
		for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
			for (int blk = 0; blk < 2; blk++) {
				shf("mknod -m 666 %s/%s %s", f->repo, at[i], blk ? "b 7 0" : "c 1 11");
				ota_oci_admitted *a = NULL;
				ota_error e;
				ota_error_clear(&e);
				assert_ota(ota_oci_admit(&pl, "/run/ota/test-none", &a, &e),
				           OTA_ERR_OCI_REPO_DEVICE);
				assert_null(a);
				assert_string_equal(e.where, at[i]);
				shf("rm %s/%s", f->repo, at[i]);
			}
		}
		shf("rm -r %s/work/a %s/out/fifo", f->repo, f->repo);
	}
	/* a set-user-ID, a set-group-ID group-executable or a file-capable
	 * file under a writable path: oci_writable_setid (a shared writable
	 * mapping keeps the bits); allowed: 2644, a set-id file in the
	 * read-only part or protected under the carve-out */
	{
		pl = plan_of(f, w, 1, p, 2);
		static const char *const refused[] = {"4755", "4700", "2755", "2710", "6755"};
		for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
			shf("printf x > %s/out/t && chmod %s %s/out/t", f->repo, refused[i], f->repo);
			assert_ota(admit(&pl), OTA_ERR_OCI_WRITABLE_SETID);
		}
		if (geteuid() == 0 && system("command -v setcap >/dev/null 2>&1") == 0) {
			shf("chmod 755 %s/out/t && setcap cap_net_raw+ep %s/out/t", f->repo, f->repo);
			assert_ota(admit(&pl), OTA_ERR_OCI_WRITABLE_SETID);
		}
		shf("rm %s/out/t && printf x > %s/out/t && chmod 2644 %s/out/t && printf x > %s/ro-suid "
		    "&& chmod 4755 %s/ro-suid",
		    f->repo, f->repo, f->repo, f->repo, f->repo);
		assert_ota(admit(&pl), OTA_OK);
		const char *p_t[] = {"out/t"};
		shf("chmod 4755 %s/out/t", f->repo);
		pl = plan_of(f, w, 1, p_t, 1);
		assert_ota(admit(&pl), OTA_OK);
		shf("rm %s/out/t %s/ro-suid", f->repo, f->repo);
	}
	/* rootfs and repository must not overlap; argv is required */
	pl = plan_of(f, NULL, 0, NULL, 0);
	pl.rootfs = f->repo;
	assert_ota(admit(&pl), OTA_ERR_OCI_PLAN_INVALID);
	pl = plan_of(f, NULL, 0, NULL, 0);
	pl.argc = 0;
	assert_ota(admit(&pl), OTA_ERR_OCI_PLAN_INVALID);
	fx_free(f);
}

static json_t *mount_at(json_t *cfg, const char *dest, size_t *index)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(cfg, "mounts"), i, m)
	{
		if (strcmp(json_string_value(json_object_get(m, "destination")), dest) == 0) {
			if (index != NULL)
				*index = i;
			return m;
		}
	}
	return NULL;
}

static bool has_opt(json_t *m, const char *o)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(m, "options"), i, v) if (strcmp(json_string_value(v), o) ==
	                                                             0) return true;
	return false;
}

static void test_render(void **state)
{
	(void)state;
	fx *f = fx_new();
	const char *w[] = {"work"};
	const char *p[] = {"work/cfg", ".git", "ota.yaml"};
	ota_oci_plan pl = plan_of(f, w, 1, p, 3);
	ota_oci_admitted *a = NULL;
	assert_ota(ota_oci_admit(&pl, NULL, &a, NULL), OTA_OK);
	json_t *cfg = NULL;
	assert_ota(ota_oci_render(&pl, a, OTA_OCI_RUNC, "/bin/true", &cfg, NULL), OTA_OK);
	assert_true(json_is_true(json_object_get(json_object_get(cfg, "root"), "readonly")));
	size_t iw = 0, ic = 0, ip = 0;
	json_t *ws = mount_at(cfg, "/workspace", &iw);
	assert_non_null(ws);
	assert_true(has_opt(ws, "rro") && has_opt(ws, "rbind"));
	json_t *carve = mount_at(cfg, "/workspace/work", &ic);
	assert_non_null(carve);
	assert_true(has_opt(carve, "rw"));
	json_t *prot = mount_at(cfg, "/workspace/work/cfg", &ip);
	assert_non_null(prot);
	assert_true(has_opt(prot, "rro"));
	/* recursive nosuid and nodev too: a host mount nested in the
	 * repository or a protected directory kept its own flags */
	assert_true(has_opt(ws, "rnodev") && has_opt(ws, "rnosuid"));
	assert_true(has_opt(prot, "rnodev") && has_opt(prot, "rnosuid"));
	assert_true(iw < ic && ic < ip); /* FS-24: protected wins over its carve-out */
	assert_true(has_opt(mount_at(cfg, "/workspace/ota.yaml", NULL), "ro"));
	assert_true(has_opt(mount_at(cfg, "/proc", NULL), "noexec"));
	assert_non_null(mount_at(cfg, OTA_OCI_CANARY_DEST, NULL));
	json_t *proc = json_object_get(cfg, "process");
	assert_true(json_is_true(json_object_get(proc, "noNewPrivileges")));
	json_t *caps = json_object_get(proc, "capabilities");
	assert_int_equal(json_array_size(json_object_get(caps, "bounding")), 0);
	assert_int_equal(json_array_size(json_object_get(caps, "effective")), 0);
	json_t *lin = json_object_get(cfg, "linux");
	assert_string_equal(json_string_value(json_object_get(lin, "rootfsPropagation")), "rprivate");
	bool netns = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(lin, "namespaces"), i, v) if (
		strcmp(json_string_value(json_object_get(v, "type")), "network") == 0 &&
		json_object_get(v, "path") == NULL) netns = true;
	assert_true(netns);
	/* exactly these fresh namespaces, none joined: a cgroup namespace
	 * among them (/proc/self/cgroup shows "/", not the host's paths) */
	static const char *const ns_want[] = {"pid", "network", "ipc", "uts", "mount", "cgroup"};
	json_t *nss = json_object_get(lin, "namespaces");
	assert_int_equal(json_array_size(nss), sizeof ns_want / sizeof ns_want[0]);
	for (size_t k = 0; k < sizeof ns_want / sizeof ns_want[0]; k++) {
		json_t *n = json_array_get(nss, k);
		assert_string_equal(json_string_value(json_object_get(n, "type")), ns_want[k]);
		assert_int_equal(json_object_size(n), 1);
	}
	assert_non_null(json_object_get(json_object_get(lin, "seccomp"), "syscalls"));
	/* the rendered-policy identity is deterministic */
	json_t *r1 = NULL, *r2 = NULL, *cfg2 = NULL;
	assert_ota(ota_oci_render(&pl, a, OTA_OCI_RUNC, "/bin/true", &cfg2, NULL), OTA_OK);
	assert_ota(ota_oci_rendered_policy(&pl, cfg, OTA_OCI_RUNC, &r1, NULL), OTA_OK);
	assert_ota(ota_oci_rendered_policy(&pl, cfg2, OTA_OCI_RUNC, &r2, NULL), OTA_OK);
	char id1[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity(r1, id1, NULL), OTA_OK);
	assert_ota(ota_json_identity(r2, id2, NULL), OTA_OK);
	assert_string_equal(id1, id2);
	json_decref(r1);
	json_decref(r2);
	json_decref(cfg2);
	json_decref(cfg);
	ota_oci_admitted_free(a);
	fx_free(f);
}

/* A container mountinfo as runc renders the plan of test_mountinfo. */
static const char *good_mountinfo(void)
{
	return "67 44 254:0 /x/rootfs / ro,relatime - ext4 /dev/vda rw\n"
	       "68 67 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	       "69 67 0:42 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
	       "70 69 0:43 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw\n"
	       "71 69 0:44 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw\n"
	       "72 69 0:40 / /dev/mqueue rw,nosuid,nodev,noexec,relatime - mqueue mqueue rw\n"
	       "73 67 0:45 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n"
	       "74 67 0:46 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw\n"
	       "84 67 254:0 /r /workspace ro,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
	       "85 84 0:39 / /workspace/sub ro,nosuid,nodev,relatime - tmpfs tmpfs rw\n"
	       "86 84 254:0 /r/work /workspace/work rw,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
	       "87 86 254:0 /r/work/cfg /workspace/work/cfg ro,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
	       "88 84 254:0 /r/my\\040dir /workspace/my\\040dir ro,nosuid,nodev - ext4 /dev/vda rw\n"
	       "89 69 254:0 /c /dev/.ota-canary ro,nosuid,nodev,relatime - ext4 /dev/vda rw\n"
	       "45 68 0:41 /bus /proc/bus ro,relatime - proc proc rw\n"
	       "50 68 0:42 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
	       "49 68 0:47 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n";
}

static ota_err check_mi(const ota_oci_admitted *a, const char *text, ota_error *e)
{
	json_t *rep = NULL;
	ota_err rc = ota_oci_check_mountinfo(a, ota_bytes_make(text, strlen(text)), &rep, e);
	if (rc == OTA_OK)
		assert_true(json_is_true(json_object_get(rep, "ok")));
	else
		assert_null(rep);
	json_decref(rep);
	return rc;
}

static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	assert_non_null(at);
	size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
	char *r = malloc(n);
	assert_non_null(r);
	snprintf(r, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return r;
}

static void test_mountinfo(void **state)
{
	(void)state;
	fx *f = fx_new();
	const char *w[] = {"work"};
	const char *p[] = {"work/cfg"};
	ota_oci_plan pl = plan_of(f, w, 1, p, 1);
	ota_oci_admitted *a = NULL;
	assert_ota(ota_oci_admit(&pl, NULL, &a, NULL), OTA_OK);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(check_mi(a, good_mountinfo(), &e), OTA_OK);
	struct {
		const char *from, *to;
		ota_err want;
		const char *where;
	} cases[] = {
		/* FS-21: a nested mount left writable */
		{"/workspace/sub ro,", "/workspace/sub rw,", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/workspace/sub"},
		/* MNT-05: a nested mount without nodev or nosuid (the runtimes
		 * apply the plain options to the top mount only; a device node
		 * on it opened for the task under crun) */
		{"/workspace/sub ro,nosuid,nodev,", "/workspace/sub ro,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace/sub"},
		{"/workspace/sub ro,nosuid,nodev,", "/workspace/sub ro,nosuid,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace/sub"},
		{"/workspace/sub ro,nosuid,nodev,", "/workspace/sub ro,nodev,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace/sub"},
		/* ... nor the repository, a carve-out or a protected path */
		{"/workspace ro,nosuid,nodev,", "/workspace ro,nosuid,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace"},
		{"/workspace/work rw,nosuid,nodev,", "/workspace/work rw,nosuid,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace/work"},
		{"/workspace/work/cfg ro,nosuid,nodev,", "/workspace/work/cfg ro,nodev,",
		 OTA_ERR_OCI_MOUNT_UNEXPECTED, "/workspace/work/cfg"},
		/* repository root writable */
		{"/workspace ro,", "/workspace rw,", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/workspace"},
		/* protected path writable under its carve-out */
		{"/workspace/work/cfg ro,", "/workspace/work/cfg rw,", OTA_ERR_OCI_MOUNT_UNEXPECTED,
		 "/workspace/work/cfg"},
		/* MNT-07 root writable */
		{"/ ro,relatime", "/ rw,relatime", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/"},
		/* FS-22 propagation from the host */
		{"/workspace/work rw,nosuid,nodev,relatime -", "/workspace/work rw,nosuid,nodev,relatime shared:5 -",
		 OTA_ERR_OCI_MOUNT_UNEXPECTED, "/workspace/work"},
		/* FS-28 host-backed scratch */
		{"/tmp rw,nosuid,nodev,relatime - tmpfs", "/tmp rw,nosuid,nodev,relatime - ext4",
		 OTA_ERR_OCI_MOUNT_UNEXPECTED, "/tmp"},
		/* a provider-added writable path (an extra rw bind) */
		{"/dev/.ota-canary ro,", "/data rw,", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/data"},
		/* MNT-06 /proc without noexec */
		{"/proc rw,nosuid,nodev,noexec,relatime", "/proc rw,relatime", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/proc"},
		/* missing carve-out and missing protected mount */
		{"/workspace/work rw", "/workspace/other ro", OTA_ERR_OCI_MOUNT_MISSING, "/workspace/work"},
		{"/workspace/work/cfg ro", "/workspace/work/cfh ro", OTA_ERR_OCI_MOUNT_MISSING, "/workspace/work/cfg"},
		/* kernel interface writable */
		{"/proc/bus ro,", "/proc/bus rw,", OTA_ERR_OCI_MOUNT_UNEXPECTED, "/proc/bus"},
		/* a cgroup file system, even read-only: none is rendered */
		{"/ /proc/acpi ro,relatime - tmpfs tmpfs ro",
		 "/ /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 ro",
		 OTA_ERR_OCI_MOUNT_UNEXPECTED, "/sys/fs/cgroup"},
		{"/ /proc/acpi ro,relatime - tmpfs tmpfs ro",
		 "/ /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime - cgroup cgroup ro,pids",
		 OTA_ERR_OCI_MOUNT_UNEXPECTED, "/sys/fs/cgroup/pids"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *t = replace(good_mountinfo(), cases[i].from, cases[i].to);
		ota_error_clear(&e);
		ota_err rc = check_mi(a, t, &e);
		if (rc != cases[i].want)
			fail_msg("case %zu: got %s, want %s", i, ota_err_name(rc),
			         ota_err_name(cases[i].want));
		assert_string_equal(e.where, cases[i].where);
		free(t);
	}
	/* EVD-02: octal escapes decoded (the "my dir" mount is reported by name) */
	json_t *rep = NULL;
	assert_ota(ota_oci_check_mountinfo(a, ota_bytes_make(good_mountinfo(), strlen(good_mountinfo())),
	                                   &rep, NULL),
	           OTA_OK);
	bool seen = false;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(rep, "mounts"), i, m) if (
		strcmp(json_string_value(json_object_get(m, "path")), "/workspace/my dir") == 0) seen = true;
	assert_true(seen);
	json_decref(rep);
	/* malformed input */
	assert_ota(check_mi(a, "1 2 3\n", NULL), OTA_ERR_OCI_MOUNT_UNEXPECTED);
	ota_oci_admitted_free(a);
	fx_free(f);
}

static void test_netns(void **state)
{
	(void)state;
	const char *dev = "Inter-|   Receive\n face |bytes\n    lo:       0       0    0\n";
	const char *route = "Iface\tDestination\tGateway\n";
	const char *r6 = "00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
	                 "00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n";
	json_t *rep = NULL;
	assert_ota(ota_oci_check_netns(ota_bytes_make(dev, strlen(dev)),
	                               ota_bytes_make(route, strlen(route)),
	                               ota_bytes_make(r6, strlen(r6)), &rep, NULL),
	           OTA_OK);
	assert_true(json_is_true(json_object_get(rep, "loopback_only")));
	json_decref(rep);
	const char *dev2 = "Inter-|\n face |\n    lo: 0\n  eth0: 0\n";
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_check_netns(ota_bytes_make(dev2, strlen(dev2)),
	                               ota_bytes_make(route, strlen(route)),
	                               ota_bytes_make(r6, strlen(r6)), &rep, &e),
	           OTA_ERR_OCI_NETWORK_UNEXPECTED);
	assert_null(rep);
	const char *route2 = "Iface\tDestination\n eth0\t00000000\t0101A8C0\n";
	assert_ota(ota_oci_check_netns(ota_bytes_make(dev, strlen(dev)),
	                               ota_bytes_make(route2, strlen(route2)),
	                               ota_bytes_make(r6, strlen(r6)), &rep, NULL),
	           OTA_ERR_OCI_NETWORK_UNEXPECTED);
	const char *r62 = "fe800000000000000000000000000000 40 0 00 0 00 0 0 0 0 eth0\n";
	assert_ota(ota_oci_check_netns(ota_bytes_make(dev, strlen(dev)),
	                               ota_bytes_make(route, strlen(route)),
	                               ota_bytes_make(r62, strlen(r62)), &rep, NULL),
	           OTA_ERR_OCI_NETWORK_UNEXPECTED);
	const char *none = "Inter-|\n face |\n";
	assert_ota(ota_oci_check_netns(ota_bytes_make(none, strlen(none)),
	                               ota_bytes_make(route, strlen(route)),
	                               ota_bytes_make("", 0), &rep, NULL),
	           OTA_ERR_OCI_NETWORK_UNEXPECTED);
}

static void test_platform(void **state)
{
	(void)state;
	char os[16], arch[16], var[16];
	assert_ota(ota_oci_platform_parse("linux/amd64", os, arch, var, NULL), OTA_OK);
	assert_string_equal(os, "linux");
	assert_string_equal(arch, "amd64");
	assert_string_equal(var, "");
	assert_ota(ota_oci_platform_parse("linux/arm/v7", os, arch, var, NULL), OTA_OK);
	assert_string_equal(var, "v7");
	assert_ota(ota_oci_platform_parse("linux", os, arch, var, NULL), OTA_ERR_OCI_PLAN_INVALID);
	assert_ota(ota_oci_platform_parse("linux//", os, arch, var, NULL), OTA_ERR_OCI_PLAN_INVALID);
	assert_ota(ota_oci_platform_parse("linux/arm/v7/x", os, arch, var, NULL),
	           OTA_ERR_OCI_PLAN_INVALID);
	ota_oci_host_platform(os, arch, var);
	assert_string_equal(os, "linux");
	assert_true(arch[0] != '\0');
	assert_string_equal(ota_oci_terminal_name(OTA_OCI_ENFORCED_THROUGH_COMPLETION),
	                    "enforced_through_completion");
	assert_string_equal(ota_oci_terminal_name(OTA_OCI_REFUSED), "refused");
	json_t *d = ota_oci_capability_descriptor(OTA_OCI_CRUN);
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "controls"),
	                                                      "network.target_allowlist")),
	                    "unsupported");
	json_decref(d);
}

static void test_image_store_errors(void **state)
{
	(void)state;
	char *tmp = test_tmpdir();
	char *rootfs = NULL;
	json_t *ev = NULL;
	assert_ota(ota_oci_image_resolve(tmp, "x:1", NULL, tmp, &rootfs, &ev, NULL),
	           OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_null(rootfs);
	assert_ota(ota_oci_image_import(tmp, "docker://evil/x", "x:1", NULL), OTA_ERR_USAGE);
	assert_ota(ota_oci_image_import(tmp, "oci-archive:/nonexistent.tar", "x;1", NULL),
	           OTA_ERR_USAGE);
	test_rmtree(tmp);
	free(tmp);
}

/* ---- the cancel flag stops the admission scan ---- */

/* dir/fNNNNNN, n empty files */
static void many_files(const char *dir, unsigned n)
{
	assert_int_equal(mkdir(dir, 0755), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof name, "f%06u", i);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	close(dfd);
}

/* Interrupts the scan as ota run's SIGINT handler does: as soon as the scan
 * opens the directory `watch` (inotify IN_OPEN), i.e. once it is under
 * way, it sends SIGUSR1 to the scanning thread, whose handler sets the
 * flag there (a volatile sig_atomic_t is for a handler on the thread that
 * reads it: written from this thread it would be a data race, which
 * ThreadSanitizer reported). */
typedef struct canceller {
	int ino_fd;
	pthread_t target;
} canceller;

static volatile sig_atomic_t *usr1_flag;

static void on_usr1(int sig)
{
	(void)sig;
	*usr1_flag = 1;
}

static void *cancel_on_open(void *arg)
{
	canceller *c = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	(void)read(c->ino_fd, buf, sizeof buf); /* the first open of the directory */
	(void)pthread_kill(c->target, SIGUSR1);
	return NULL;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_admit_cancel(void **state)
{
	(void)state;
	fx *f = fx_new();
	/* a big carve-out: every regular file under a writable path is
	 * stat'ed (its link count), so the scan takes a while */
	char big[600];
	snprintf(big, sizeof big, "%s/out/big", f->repo);
	enum { N = 150000 };
	many_files(big, N);
	const char *w[] = {"out"};
	const char *p[] = {".git"};
	ota_oci_plan pl = plan_of(f, w, 1, p, 1);
	volatile sig_atomic_t cancel = 0;
	ota_oci_admit_opts ao = {"/run/ota/test-none", &cancel};
	ota_oci_admitted *a = NULL;
	double t0 = mono_s();
	assert_ota(ota_oci_admit_with(&pl, &ao, &a, NULL), OTA_OK);
	double full = mono_s() - t0;
	assert_non_null(a);
	ota_oci_admitted_free(a);
	a = NULL;
	assert_ota(ota_oci_admit_with(&pl, NULL, &a, NULL), OTA_OK); /* opts NULL: none */
	ota_oci_admitted_free(a);
	a = NULL;

	/* set before: nothing is scanned */
	cancel = 1;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_admit_with(&pl, &ao, &a, &e), OTA_ERR_OCI_INTERRUPTED);
	assert_null(a);

	/* set while the scan runs (as a SIGINT handler would): it stops at
	 * the next entry, long before the whole scan would have ended */
	cancel = 0;
	int ifd = inotify_init1(IN_CLOEXEC);
	assert_true(ifd >= 0);
	assert_true(inotify_add_watch(ifd, big, IN_OPEN) >= 0);
	usr1_flag = &cancel;
	struct sigaction sa, old_sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old_sa), 0);
	canceller c = {ifd, pthread_self()};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cancel_on_open, &c), 0);
	ota_error_clear(&e);
	t0 = mono_s();
	ota_err rc = ota_oci_admit_with(&pl, &ao, &a, &e);
	double cut = mono_s() - t0;
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(cancel, 1); /* the handler ran */
	close(ifd);
	assert_ota(rc, OTA_ERR_OCI_INTERRUPTED);
	assert_null(a);
	assert_non_null(strstr(e.what, "admission scan of the repository interrupted after"));
	unsigned long seen = 0;
	const char *after = strstr(e.what, "after ");
	assert_non_null(after);
	seen = strtoul(after + 6, NULL, 10);
	assert_true(seen < N); /* stopped inside out/big */
	fprintf(stderr, "admission scan: whole %.3f s, interrupted %.3f s after %lu of %u entries\n",
	        full, cut, seen, (unsigned)N);

	/* through ota_oci_run: the run ends interrupted and not_started,
	 * before any lease, bundle or runtime command (the runtime is a
	 * script that would leave a mark) */
	char rtroot[600], state_dir[600], db[600], fakert[600], mark[600];
	snprintf(rtroot, sizeof rtroot, "%s/rtroot", f->tmp);
	snprintf(state_dir, sizeof state_dir, "%s/state", f->tmp);
	snprintf(db, sizeof db, "%s/leases.db", f->tmp);
	snprintf(fakert, sizeof fakert, "%s/fakert", f->tmp);
	snprintf(mark, sizeof mark, "%s/runtime-ran", f->tmp);
	FILE *sf = fopen(fakert, "w");
	assert_non_null(sf);
	fprintf(sf, "#!/bin/sh\necho \"$*\" >> '%s'\nexit 1\n", mark);
	assert_int_equal(fclose(sf), 0);
	assert_int_equal(chmod(fakert, 0755), 0);
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.runtime.kind = OTA_OCI_RUNC;
	o.runtime.binary = fakert;
	o.runtime.root = rtroot;
	o.runtime.version = "fake";
	o.state_dir = state_dir;
	o.lease_db = db;
	o.cancel = &cancel;
	cancel = 0;
	ifd = inotify_init1(IN_CLOEXEC);
	assert_true(ifd >= 0);
	assert_true(inotify_add_watch(ifd, big, IN_OPEN) >= 0);
	c.ino_fd = ifd;
	assert_int_equal(pthread_create(&th, NULL, cancel_on_open, &c), 0);
	ota_oci_result r;
	ota_error_clear(&e);
	rc = ota_oci_run(&pl, &o, &r, &e);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &old_sa, NULL), 0);
	assert_int_equal(cancel, 1);
	close(ifd);
	assert_ota(rc, OTA_ERR_OCI_INTERRUPTED);
	assert_int_equal(r.terminal, OTA_OCI_NOT_STARTED);
	assert_true(r.interrupted);
	assert_false(r.started);
	assert_int_equal(r.exit_status, -1);
	json_t *err_rec = json_object_get(r.terminal_record, "error");
	assert_string_equal(json_string_value(json_object_get(err_rec, "code")), "oci_interrupted");
	assert_non_null(strstr(json_string_value(json_object_get(err_rec, "message")),
	                       "admission scan"));
	assert_string_equal(json_string_value(json_object_get(r.terminal_record, "state")),
	                    "not_started");
	ota_oci_result_clear(&r);
	struct stat st;
	assert_int_not_equal(stat(db, &st), 0);        /* no lease database, no lease */
	assert_int_not_equal(stat(state_dir, &st), 0); /* no bundle */
	assert_int_not_equal(stat(mark, &st), 0);      /* no runtime command */
	fx_free(f);
}

/* linux.resources: the defaults per runtime, the ranges, crun's refusal. */
static ota_err limits_of(int64_t pids, int64_t mem, ota_oci_runtime_kind kind, json_t **cfg,
                         ota_oci_limits *l, ota_error *e)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	o.pids_limit = pids;
	o.memory_limit_bytes = mem;
	*cfg = json_pack("{s:{}}", "linux");
	assert_non_null(*cfg);
	ota_error_clear(e);
	return ota_oci_render_limits(*cfg, &o, kind, l, e);
}

static void test_render_limits(void **state)
{
	(void)state;
	json_t *cfg = NULL;
	ota_oci_limits l;
	ota_error e;
	/* runc: 4096 by default, no memory limit */
	assert_ota(limits_of(0, 0, OTA_OCI_RUNC, &cfg, &l, &e), OTA_OK);
	assert_int_equal(l.pids, OTA_OCI_DEFAULT_PIDS_LIMIT);
	assert_int_equal(l.memory_bytes, 0);
	json_t *res = json_object_get(json_object_get(cfg, "linux"), "resources");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "pids"), "limit")),
	                 4096);
	assert_null(json_object_get(res, "memory"));
	json_decref(cfg);
	/* -1: none, nothing rendered */
	assert_ota(limits_of(-1, 0, OTA_OCI_RUNC, &cfg, &l, &e), OTA_OK);
	assert_int_equal(l.pids, 0);
	assert_null(json_object_get(json_object_get(cfg, "linux"), "resources"));
	json_decref(cfg);
	/* both, at their edges */
	assert_ota(limits_of(16, 4LL << 20, OTA_OCI_RUNC, &cfg, &l, &e), OTA_OK);
	res = json_object_get(json_object_get(cfg, "linux"), "resources");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "memory"), "limit")),
	                 4LL << 20);
	json_decref(cfg);
	assert_ota(limits_of(4194304, 1LL << 40, OTA_OCI_RUNC, &cfg, &l, &e), OTA_OK);
	assert_int_equal(l.pids, 4194304);
	assert_int_equal(l.memory_bytes, 1LL << 40);
	json_decref(cfg);
	/* out of range: usage, named, nothing rendered */
	static const int64_t bad_p[] = {-2, 1, 15, 4194305};
	for (size_t i = 0; i < sizeof bad_p / sizeof bad_p[0]; i++) {
		assert_ota(limits_of(bad_p[i], 0, OTA_OCI_RUNC, &cfg, &l, &e), OTA_ERR_USAGE);
		assert_string_equal(e.where, "pids_limit");
		assert_null(json_object_get(json_object_get(cfg, "linux"), "resources"));
		json_decref(cfg);
	}
	static const int64_t bad_m[] = {-4096, 4096, (4LL << 20) - 4096, (4LL << 20) + 1,
	                                (1LL << 40) + 4096};
	for (size_t i = 0; i < sizeof bad_m / sizeof bad_m[0]; i++) {
		assert_ota(limits_of(0, bad_m[i], OTA_OCI_RUNC, &cfg, &l, &e), OTA_ERR_USAGE);
		assert_string_equal(e.where, "memory_limit_bytes");
		json_decref(cfg);
	}
	/* crun: none by default, an explicit one refused */
	assert_ota(limits_of(0, 0, OTA_OCI_CRUN, &cfg, &l, &e), OTA_OK);
	assert_int_equal(l.pids, 0);
	assert_null(json_object_get(json_object_get(cfg, "linux"), "resources"));
	json_decref(cfg);
	assert_ota(limits_of(-1, 0, OTA_OCI_CRUN, &cfg, &l, &e), OTA_OK);
	json_decref(cfg);
	assert_ota(limits_of(64, 0, OTA_OCI_CRUN, &cfg, &l, &e), OTA_ERR_OCI_LIMIT_UNSUPPORTED);
	assert_string_equal(e.where, "pids_limit");
	json_decref(cfg);
	assert_ota(limits_of(0, 64LL << 20, OTA_OCI_CRUN, &cfg, &l, &e),
	           OTA_ERR_OCI_LIMIT_UNSUPPORTED);
	assert_string_equal(e.where, "memory_limit_bytes");
	assert_null(json_object_get(json_object_get(cfg, "linux"), "resources"));
	json_decref(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_paths),
		cmocka_unit_test(test_admit_cancel),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_limits),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_netns),
		cmocka_unit_test(test_platform),
		cmocka_unit_test(test_image_store_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
