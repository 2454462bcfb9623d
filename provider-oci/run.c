/*
 * The handshake and lifetime of one segment on oci_local:
 * admit -> lease -> render -> create -> inspect -> canaries -> start -> wait
 * -> terminal inspection -> delete -> confirm -> finalize lease.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oci_internal.h"
#include "procfs.h"
#include "ota/json.h"
#include "ota/limits.h"

#ifndef OTA_OCI_CANARY_BUILD
#define OTA_OCI_CANARY_BUILD ""
#endif
#ifndef OTA_OCI_CANARY_INSTALL
#define OTA_OCI_CANARY_INSTALL "/usr/local/libexec/ota/ota-oci-canary"
#endif

const char *ota_oci_terminal_name(ota_oci_terminal t)
{
	switch (t) {
	case OTA_OCI_ENFORCED_THROUGH_COMPLETION:
		return "enforced_through_completion";
	case OTA_OCI_ENFORCEMENT_LOST:
		return "enforcement_lost";
	case OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION:
		return "enforcement_unknown_after_interruption";
	case OTA_OCI_NOT_STARTED:
		return "not_started";
	case OTA_OCI_REFUSED:
	default:
		return "refused";
	}
}

void ota_oci_result_clear(ota_oci_result *r)
{
	if (r == NULL)
		return;
	json_decref(r->rendered);
	json_decref(r->applied);
	json_decref(r->initial);
	json_decref(r->terminal_record);
	json_decref(r->finalized_orphans);
	memset(r, 0, sizeof *r);
	r->exit_status = -1;
}

static int64_t now_of(const ota_oci_run_opts *o)
{
	return o->clock.now != NULL ? ota_clock_now(&o->clock) : ota_clock_now(NULL);
}

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static bool cancelled(const ota_oci_run_opts *o)
{
	return o->cancel != NULL && *o->cancel != 0;
}

static ota_err read_proc(long pid, const char *what, size_t cap, uint8_t **buf, size_t *len,
                         ota_error *err)
{
	char p[128];
	snprintf(p, sizeof p, "/proc/%ld/%s", pid, what);
	return oci_proc_read(p, cap, buf, len, err);
}

static const char *canary_path(const ota_oci_run_opts *o)
{
	if (o->canary != NULL)
		return o->canary;
	if (OTA_OCI_CANARY_BUILD[0] != '\0' && access(OTA_OCI_CANARY_BUILD, X_OK) == 0)
		return OTA_OCI_CANARY_BUILD;
	if (access(OTA_OCI_CANARY_INSTALL, X_OK) == 0)
		return OTA_OCI_CANARY_INSTALL;
	return NULL;
}

/* ---- host-side inspection of the created container ---- */

static ota_err check_process(long pid, json_t **out, ota_error *err)
{
	uint8_t *b = NULL;
	size_t n = 0;
	ota_err rc = read_proc(pid, "status", 64 * 1024, &b, &n, err);
	if (rc != OTA_OK)
		return rc;
	oci_proc_caps caps;
	oci_proc_status_caps((const char *)b, n, &caps);
	free(b);
	const char *eff = caps.eff, *prm = caps.prm, *bnd = caps.bnd, *amb = caps.amb;
	const char *nnp = caps.nnp;
	const char *z = "0000000000000000";
	bool ok = strcmp(eff, z) == 0 && strcmp(prm, z) == 0 && strcmp(bnd, z) == 0 &&
	          strcmp(amb, z) == 0 && strcmp(nnp, "1") == 0;
	*out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "cap_eff", eff, "cap_prm", prm, "cap_bnd",
	                 bnd, "cap_amb", amb, "no_new_privs", nnp, "ok", ok);
	if (!ok)
		return ota_error_set(err, OTA_ERR_OCI_PROCESS_UNEXPECTED, "process",
		                     "CapEff %s CapBnd %s NoNewPrivs %s", eff, bnd, nnp);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

/* The /proc/PID/ns link of each namespace type a config can render. */
static const char *ns_link(const char *type)
{
	static const char *const map[][2] = {
		{"pid", "pid"}, {"network", "net"}, {"ipc", "ipc"},   {"uts", "uts"},
		{"mount", "mnt"}, {"cgroup", "cgroup"}, {"user", "user"}, {"time", "time"},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(type, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/*
 * Every namespace the config renders (linux.namespaces, each fresh: no
 * "path") is one the container's process does not share with the runner:
 * /proc/PID/ns/X differs from /proc/self/ns/X. The network and mount
 * namespaces must be among them. *out: {"net": "net:[...]", ...}.
 */
static ota_err check_namespaces(long pid, const json_t *cfg, json_t **out, ota_error *err)
{
	*out = json_object();
	if (*out == NULL)
		return OTA_ERR_NOMEM;
	const json_t *list = json_object_get(json_object_get(cfg, "linux"), "namespaces");
	bool net = false, mnt = false;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *n = json_array_get(list, i);
		const char *type = json_string_value(json_object_get(n, "type"));
		const char *link = type != NULL ? ns_link(type) : NULL;
		if (link == NULL || json_object_get(n, "path") != NULL)
			return ota_error_set(err, OTA_ERR_OCI_PROCESS_UNEXPECTED, "ns",
			                     "rendered namespace %zu is not a fresh known one", i);
		char p[64], c[64] = "", h[64] = "";
		snprintf(p, sizeof p, "/proc/%ld/ns/%s", pid, link);
		ssize_t n1 = readlink(p, c, sizeof c - 1);
		snprintf(p, sizeof p, "/proc/self/ns/%s", link);
		ssize_t n2 = readlink(p, h, sizeof h - 1);
		if (n1 <= 0 || n2 <= 0)
			return ota_error_set(err, OTA_ERR_OCI_PROCESS_UNEXPECTED, "ns",
			                     "cannot read the %s namespace links", link);
		c[n1] = h[n2] = '\0';
		if (json_object_set_new(*out, link, json_string(c)) != 0)
			return OTA_ERR_NOMEM;
		net = net || strcmp(link, "net") == 0;
		mnt = mnt || strcmp(link, "mnt") == 0;
		if (strcmp(c, h) == 0)
			return ota_error_set(err,
			                     strcmp(link, "net") == 0   ? OTA_ERR_OCI_NETWORK_UNEXPECTED
			                     : strcmp(link, "mnt") == 0 ? OTA_ERR_OCI_MOUNT_UNEXPECTED
			                                                : OTA_ERR_OCI_PROCESS_UNEXPECTED,
			                     "ns", "container shares the runner's %s namespace (%s)", link,
			                     c);
	}
	if (!net || !mnt)
		return ota_error_set(err, !net ? OTA_ERR_OCI_NETWORK_UNEXPECTED
		                               : OTA_ERR_OCI_MOUNT_UNEXPECTED,
		                     "ns", "no fresh %s namespace rendered", !net ? "network" : "mount");
	return OTA_OK;
}

/* (dev, ino) of each bound object, seen through the container's root with
 * RESOLVE_IN_ROOT, must equal what admission pinned (FS-19 TOCTOU). */
static ota_err check_identities(long pid, const ota_oci_admitted *a, json_t **out, ota_error *err)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%ld/root", pid);
	int root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return ota_error_set(err, OTA_ERR_OCI_MOUNT_MISSING, p, "open: %s", strerror(errno));
	json_t *arr = json_array();
	ota_err rc = OTA_OK;
	size_t total = 1 + a->n_writable + a->n_prot + a->n_pins;
	for (size_t i = 0; i < total && rc == OTA_OK; i++) {
		const char *dest;
		dev_t dev;
		ino_t ino;
		if (i == 0) {
			dest = "/workspace";
			dev = a->repo_dev;
			ino = a->repo_ino;
		} else if (i <= a->n_writable) {
			dest = a->writable[i - 1].dest;
			dev = a->writable[i - 1].dev;
			ino = a->writable[i - 1].ino;
		} else if (i <= a->n_writable + a->n_prot) {
			const oci_path *q = &a->prot[i - 1 - a->n_writable];
			if (!q->exists)
				continue;
			dest = q->dest;
			dev = q->dev;
			ino = q->ino;
		} else {
			const oci_path *q = &a->pins[i - 1 - a->n_writable - a->n_prot];
			dest = q->dest;
			dev = q->dev;
			ino = q->ino;
		}
		struct open_how how;
		memset(&how, 0, sizeof how);
		how.flags = O_PATH | O_CLOEXEC;
		how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		int fd = (int)syscall(SYS_openat2, root, dest + 1, &how, sizeof how);
		struct stat st;
		bool same = false;
		if (fd >= 0 && fstat(fd, &st) == 0)
			same = st.st_dev == dev && st.st_ino == ino;
		if (fd >= 0)
			close(fd);
		char idbuf[64];
		snprintf(idbuf, sizeof idbuf, "%lu:%lu", (unsigned long)dev, (unsigned long)ino);
		json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "path", dest, "admitted", idbuf,
		                                     "same", same));
		if (!same)
			rc = ota_error_set(err, OTA_ERR_OCI_IDENTITY_CHANGED, dest,
			                   "mounted object differs from the admitted one");
	}
	close(root);
	*out = arr;
	return rc;
}

/* ---- canaries ---- */

/*
 * The container's process is the runner's canary in gate mode
 * (provider-oci/canary.c): process.args = [canary, "gate", CHECK..., "--",
 * TASK-ARGV...]. The checks run in the container's own process, so in
 * exactly the task's boundary (mounts, namespaces, seccomp, capabilities,
 * no_new_privs, uid); their report arrives on a pipe only the host reads and
 * the task starts only on the host's go. *expected: number of report lines.
 */
static ota_err gate_args(const oci_rt *rt, const ota_oci_plan *plan, const ota_oci_admitted *a,
                         json_t *cfg, size_t *expected, ota_error *err)
{
	json_t *args = json_array();
	json_t *process = json_object_get(cfg, "process");
	if (args == NULL || !json_is_object(process)) {
		json_decref(args);
		return ota_error_set(err, OTA_ERR_INTERNAL, "render", "no process in the config");
	}
	json_array_append_new(args, json_string(OTA_OCI_CANARY_DEST));
	json_array_append_new(args, json_string("gate"));
	json_array_append_new(args, json_string("status"));
	json_array_append_new(args, json_string("loopback"));
	json_array_append_new(args, json_string("syscalls"));
	size_t first = json_array_size(args);
	char buf[1100];
	if (!a->repo_writable)
		json_array_append_new(args, json_string("deny:/workspace"));
	for (size_t i = 0; i < a->n_prot; i++) {
		if (!a->prot[i].exists)
			continue;
		snprintf(buf, sizeof buf, "deny:%s", a->prot[i].dest);
		json_array_append_new(args, json_string(buf));
	}
	for (size_t i = 0; i < a->n_writable; i++) {
		if (!a->writable[i].is_dir)
			continue;
		snprintf(buf, sizeof buf, "allow:%s", a->writable[i].dest);
		json_array_append_new(args, json_string(buf));
	}
	static const char *const fixed[] = {
		"tcp:192.0.2.1:80", "tcp:[2001:db8::1]:80", "udp:192.0.2.1:53",
		"udp:[2001:db8::1]:53", "tcp:10.255.255.53:53", "udp:10.255.255.53:53",
		"absent:/var/run/docker.sock",
		"absent:/run/docker.sock", "absent:/run/containerd/containerd.sock",
		"absent:/run/podman/podman.sock", "absent:/run/runc", "absent:/run/crun",
		"absent:/run/ota", "absent:/var/run/crio/crio.sock",
	};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		json_array_append_new(args, json_string(fixed[i]));
	snprintf(buf, sizeof buf, "absent:%s", rt->root);
	json_array_append_new(args, json_string(buf));
	*expected = json_array_size(args) - first + 2 + 13; /* status, loopback, the 13 syscalls of canary.c check_syscalls */
	json_array_append_new(args, json_string("--"));
	for (size_t i = 0; i < plan->argc; i++)
		json_array_append_new(args, json_string(plan->argv[i]));
	if (json_object_set_new(process, "args", args) != 0)
		return OTA_ERR_NOMEM;
	return OTA_OK;
}

/* Reads the canary's report (to end of file: the canary closes its end
 * before it waits for the go, and no other process holds it) within a
 * bounded time, honouring the cancel flag. */
static ota_err read_report(const ota_oci_run_opts *o, int fd, char *buf, size_t cap,
                           ota_error *err)
{
	size_t len = 0;
	buf[0] = '\0';
	double deadline = mono_ms() + 60000.0;
	for (;;) {
		if (cancelled(o))
			return ota_error_set(err, OTA_ERR_OCI_INTERRUPTED, "run",
			                     "interrupted before start");
		if (mono_ms() > deadline)
			return ota_error_set(err, OTA_ERR_OCI_CANARY_FAILED, "canary",
			                     "no complete report within 60 s");
		struct pollfd pf = {fd, POLLIN, 0};
		int r = poll(&pf, 1, 100);
		if (r < 0 && errno != EINTR)
			return ota_error_set(err, OTA_ERR_IO, "canary", "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		char tmp[4096];
		ssize_t got = read(fd, tmp, sizeof tmp);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return ota_error_set(err, OTA_ERR_IO, "canary", "read: %s", strerror(errno));
		if (got == 0)
			return OTA_OK;
		if (len + (size_t)got >= cap)
			return ota_error_set(err, OTA_ERR_OCI_CANARY_FAILED, "canary",
			                     "report larger than %zu bytes", cap);
		memcpy(buf + len, tmp, (size_t)got);
		len += (size_t)got;
		buf[len] = '\0';
	}
}

static ota_err parse_canaries(char *buf, size_t expected, json_t **out, ota_error *err)
{
	json_t *arr = json_array();
	size_t got = 0;
	const char *bad = NULL;
	char *cur = buf;
	while (cur != NULL && *cur != '\0') {
		char *nl = strchr(cur, '\n');
		if (nl != NULL)
			*nl = '\0';
		json_t *v = NULL;
		if (ota_json_parse(ota_bytes_make(cur, strlen(cur)), &v, NULL) == OTA_OK &&
		    json_is_object(v)) {
			got++;
			if (!json_is_true(json_object_get(v, "ok")) && bad == NULL)
				bad = "check failed";
			json_array_append_new(arr, v);
		} else {
			json_decref(v);
			if (bad == NULL)
				bad = "unparsable canary output";
		}
		cur = nl != NULL ? nl + 1 : NULL;
	}
	*out = arr;
	if (bad == NULL && got != expected)
		bad = "canary report incomplete";
	if (bad != NULL) {
		/* name the first failing check */
		size_t i;
		json_t *v;
		const char *what = "";
		json_array_foreach(arr, i, v) if (!json_is_true(json_object_get(v, "ok"))) {
			what = json_string_value(json_object_get(v, "target"));
			break;
		}
		return ota_error_set(err, OTA_ERR_OCI_CANARY_FAILED, what != NULL ? what : "",
		                     "%s (%zu of %zu checks reported)", bad, got, expected);
	}
	return OTA_OK;
}

/* ---- the run ---- */

/* The durable "started" phase is committed on a thread while the host
 * inspects the container and the canary runs; it is joined before the go
 * (and before any other use of the lease database). */
typedef struct phase_job {
	oci_lease_db *db;
	const char *id;
	long pid;
	ota_err rc;
	ota_error e;
	pthread_t th;
	bool running;
} phase_job;

static void *phase_main(void *arg)
{
	phase_job *j = arg;
	j->rc = oci_lease_phase(j->db, j->id, "started", j->pid, &j->e);
	oci_lease_checkpoint(j->db); /* off the critical path */
	return NULL;
}

static void phase_begin(phase_job *j, oci_lease_db *db, const char *id, long pid)
{
	memset(j, 0, sizeof *j);
	j->db = db;
	j->id = id;
	j->pid = pid;
	ota_error_clear(&j->e);
	/* the thread takes no signal: the caller's handlers stay on this one */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	j->running = pthread_create(&j->th, NULL, phase_main, j) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!j->running)
		(void)phase_main(j); /* no thread: commit here */
}

static ota_err phase_end(phase_job *j, ota_error *err)
{
	if (j->running) {
		pthread_join(j->th, NULL);
		j->running = false;
	}
	if (j->rc != OTA_OK && err != NULL)
		*err = j->e;
	return j->rc;
}

typedef struct fp_pair {
	char before[65];
	char after[65];
} fp_pair;

static json_t *terminal_record(const ota_oci_run_opts *o, const ota_oci_plan *plan,
                               const ota_oci_result *r, const char *initial_id,
                               json_t *inspection, json_t *cleanup, const ota_error *e)
{
	json_t *t = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s, s:s, s:b, s:b, s:b, s:I, s:s?, "
	                      "s:I}",
	                      "kind", "ota.application/v1", "phase", "terminal", "provider",
	                      "oci_local", "txn", o->txn, "segment", plan->segment_id,
	                      "container_id", r->container_id, "state",
	                      ota_oci_terminal_name(r->terminal), "started", r->started,
	                      "timed_out", r->timed_out, "interrupted", r->interrupted,
	                      "exit_status", (json_int_t)r->exit_status, "prior", initial_id,
	                      "at", (json_int_t)now_of(o));
	if (t == NULL)
		return NULL;
	json_object_set_new(t, "terminal_inspection", inspection != NULL ? inspection : json_null());
	json_object_set_new(t, "cleanup", cleanup != NULL ? cleanup : json_null());
	if (e != NULL && e->code != OTA_OK)
		json_object_set_new(t, "error",
		                    json_pack("{s:s, s:s, s:s}", "code", ota_err_name(e->code), "where",
		                              e->where, "message", e->what));
	else
		json_object_set_new(t, "error", json_null());
	return t;
}

/* config.json created beneath the bundle's descriptor (never by path):
 * O_EXCL | O_NOFOLLOW, written fully, the file and the bundle fsync()ed. */
static ota_err write_config(int bundle_fd, const char *bundle, const json_t *cfg, ota_error *err)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/config.json", bundle);
	char *s = ota_json_dumps(cfg, true);
	if (s == NULL)
		return OTA_ERR_NOMEM;
	ota_err rc = oci_bundle_write(bundle_fd, "config.json", ota_bytes_make(s, strlen(s)), p, err);
	free(s);
	return rc;
}

static void forward(const ota_oci_run_opts *o, int fd_no, int fd)
{
	for (;;) {
		uint8_t b[8192];
		ssize_t r = read(fd, b, sizeof b);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (o->on_output != NULL)
			o->on_output(o->output_ctx, fd_no, b, (size_t)r);
	}
}

ota_err ota_oci_run(const ota_oci_plan *plan, const ota_oci_run_opts *opts, ota_oci_result *out,
                    ota_error *err)
{
	memset(out, 0, sizeof *out);
	out->exit_status = -1;
	out->terminal = OTA_OCI_REFUSED;
	ota_oci_run_opts o = *opts;
	oci_rt rt;
	ota_oci_admitted *a = NULL;
	json_t *cfg = NULL, *inspection = NULL, *cleanup = NULL;
	oci_lease_db *db = NULL;
	fp_pair *fps = NULL;
	char bundle[1024] = "";
	int bundles_fd = -1, bundle_fd = -1; /* STATE/bundles and STATE/bundles/ID */
	bool bundle_made = false;            /* STATE/bundles/ID is this run's */
	json_t *cgroups = NULL;              /* the cgroup directories runc will make */
	char initial_id[OTA_ID_LEN + 1] = "";
	int pout[2] = {-1, -1}, perr[2] = {-1, -1};
	int prep[2] = {-1, -1}; /* canary report: container -> host */
	int pgo[2] = {-1, -1};  /* go/no-go: host -> container */
	size_t expected = 0;    /* canary report lines */
	bool phase_started = false; /* the "started" commit was issued */
	phase_job phase;
	memset(&phase, 0, sizeof phase);
	long pid = 0;
	bool leased = false, created = false;
	char known_status[32] = ""; /* runtime status from terminal inspection */
	bool reaped = false;        /* the container init was reaped by this process */
	bool removal_confirmed = true; /* no container, or its removal was confirmed */
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = oci_rt_init(&rt, &o.runtime, &e);
	if (rc == OTA_OK &&
	    (o.runtime_timeout_seconds < 0 || o.runtime_timeout_seconds > OTA_OCI_RT_TIMEOUT_MAX))
		rc = ota_error_set(&e, OTA_ERR_USAGE, "runtime_timeout_seconds",
		                   "a runtime command's deadline is 1 to %d seconds (0: the defaults)",
		                   OTA_OCI_RT_TIMEOUT_MAX);
	if (rc != OTA_OK) {
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_record;
	}
	/* every runtime command has a deadline; the forward ones (run
	 * --detach, --version) also end at the cancel flag */
	rt.timeout_seconds = o.runtime_timeout_seconds;
	rt.cancel = o.cancel;
	/* Admission before anything is prepared; its scan (up to
	 * OTA_OCI_MAX_SCAN_ENTRIES entries) stops at the cancel flag. */
	{
		ota_oci_admit_opts ao = {rt.root, o.cancel};
		rc = ota_oci_admit_with(plan, &ao, &a, &e);
	}
	if (rc == OTA_ERR_OCI_INTERRUPTED)
		goto out_cancel; /* nothing prepared yet: not_started */
	if (rc == OTA_OK)
		rc = oci_admit_private(a, &o, &e);
	if (rc != OTA_OK)
		goto out_record;
	const char *canary = canary_path(&o);
	if (canary == NULL) {
		rc = ota_error_set(&e, OTA_ERR_OCI_CANARY_FAILED, "ota-oci-canary",
		                   "canary binary not found; canaries are mandatory");
		goto out_record;
	}
	rc = ota_oci_render(plan, a, rt.kind, canary, &cfg, &e);
	ota_oci_limits limits = {0, 0};
	if (rc == OTA_OK) /* linux.resources (runc); an explicit one under crun is refused */
		rc = ota_oci_render_limits(cfg, &o, rt.kind, &limits, &e);
	if (rc == OTA_OK)
		rc = gate_args(&rt, plan, a, cfg, &expected, &e);
	if (rc == OTA_OK)
		rc = ota_oci_rendered_policy(plan, cfg, rt.kind, &out->rendered, &e);
	if (rc != OTA_OK)
		goto out_record;
	fps = calloc(a->n_prot + 1, sizeof *fps);
	if (fps == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out_record;
	}
	for (size_t i = 0; i < a->n_prot; i++) {
		rc = oci_fingerprint(a->repo_fd, a->prot[i].rel, o.cancel, fps[i].before, &e);
		if (rc == OTA_ERR_OCI_INTERRUPTED)
			goto out_cancel; /* nothing prepared yet: not_started */
		if (rc != OTA_OK)
			goto out_record;
	}
	/* Container id (the only form oci_container_id_valid accepts) and
	 * bundle (the only path cleanup removes for it). */
	uint8_t rnd[OCI_ID_HEX_LEN / 2];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		rc = ota_error_set(&e, OTA_ERR_CRYPTO, "getrandom", "%s", strerror(errno));
		goto out_record;
	}
	char hex[OCI_ID_HEX_LEN + 1];
	ota_hex_encode(ota_bytes_make(rnd, sizeof rnd), hex);
	snprintf(out->container_id, sizeof out->container_id, OCI_ID_PREFIX "%s", hex);
	const char *state_dir = oci_state_dir(&o);
	if (!oci_bundle_path(state_dir, out->container_id, bundle, sizeof bundle)) {
		rc = ota_error_set(&e, OTA_ERR_USAGE, state_dir, "state directory path too long");
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_record;
	}
	/* The state directory and STATE/bundles, checked (no symlink, a
	 * directory of root's, not group/other-writable) before the lease:
	 * an unsafe one is refused before anything is written. */
	rc = oci_state_open(state_dir, true, &bundles_fd, &e);
	if (rc == OTA_OK)
		rc = rt.kind == OTA_OCI_RUNC ? oci_cgroup_dirs(out->container_id, &cgroups, &e)
		                             : ((cgroups = json_array()) != NULL ? OTA_OK : OTA_ERR_NOMEM);
	if (rc != OTA_OK) {
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_record;
	}

	/* Durable lease before the first mutation; orphans of dead runners
	 * are finalized first. */
	rc = oci_lease_open(o.lease_db != NULL ? o.lease_db : "/var/lib/ota/leases.db", &db, &e);
	if (rc != OTA_OK) {
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_record;
	}
	{
		json_t *fin = json_array();
		size_t skipped = 0;
		ota_error ce;
		ota_error_clear(&ce);
		/* rows this configuration would not have written are left open,
		 * untouched, for `ota cleanup` to report */
		(void)oci_cleanup_db(&o, db, fin, NULL, &skipped, &ce);
		if (fin != NULL && json_array_size(fin) > 0)
			out->finalized_orphans = fin;
		else
			json_decref(fin);
	}
	rc = oci_lease_begin(db, out->container_id, o.txn, &rt, bundle,
	                     json_string_value(json_object_get(out->rendered, "config_identity")),
	                     cgroups, now_of(&o), &e);
	if (rc != OTA_OK) {
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_record;
	}
	leased = true;
	out->terminal = OTA_OCI_NOT_STARTED;
	/* The bundle beneath STATE/bundles's descriptor: mkdirat 0700, then
	 * config.json (O_EXCL | O_NOFOLLOW, fsync()ed). */
	rc = oci_bundle_create(bundles_fd, bundle, out->container_id, &bundle_fd, &e);
	if (rc != OTA_OK)
		goto out_finalize;
	bundle_made = true;
	rc = write_config(bundle_fd, bundle, cfg, &e);
	if (rc != OTA_OK)
		goto out_finalize;
	if (cancelled(&o))
		goto out_cancel;

	if (o.before_create != NULL)
		o.before_create(o.before_create_ctx);
	/* runc takes the bundle by path: it must still name the directory
	 * made above (a symlink swapped in anywhere on it is refused). */
	rc = oci_bundle_verify_path(bundle_fd, bundle, &e);
	if (rc != OTA_OK)
		goto out_finalize;
	/* Apply: create. The container's init is reparented to us. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (pipe2(pout, O_CLOEXEC) != 0 || pipe2(perr, O_CLOEXEC) != 0 ||
	    pipe2(prep, O_CLOEXEC) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pgo) != 0) {
		rc = ota_error_set(&e, OTA_ERR_IO, "pipe", "%s", strerror(errno));
		goto out_finalize;
	}
	{
		char pidfile[1100];
		snprintf(pidfile, sizeof pidfile, "%s/pid", bundle);
		/* `run --detach`: the runtime applies the whole boundary and execs
		 * the canary, which blocks on its first gate before doing anything
		 * (the equivalent of a created container waiting for `start`). */
		const char *cargs[] = {"run",   "--detach",       "--bundle", bundle,
		                       "--pid-file", pidfile, "--preserve-fds", "2",
		                       out->container_id, NULL};
		const int extra[2] = {prep[1], pgo[0]}; /* the container's fds 3 and 4 */
		int st = 0;
		rc = oci_rt_cmd_fds(&rt, cargs, pout[1], perr[1], extra, 2, NULL, 0, NULL, 0, &st,
		                    &e);
		close(pout[1]);
		close(perr[1]);
		close(prep[1]);
		close(pgo[0]);
		pout[1] = perr[1] = prep[1] = pgo[0] = -1;
		created = true; /* possibly partially: finalization checks */
		if (rc == OTA_ERR_OCI_INTERRUPTED)
			goto out_cancel; /* killed with its process group; finalized */
		if (rc == OTA_OK && st != 0) {
			char msg[512] = "";
			fcntl(perr[0], F_SETFL, O_NONBLOCK);
			ssize_t r = read(perr[0], msg, sizeof msg - 1);
			msg[r > 0 ? r : 0] = '\0';
			rc = ota_error_set(&e, OTA_ERR_OCI_RUNTIME_FAILED, "create", "exit %d: %.300s",
			                   st, msg);
		}
		if (rc != OTA_OK)
			goto out_finalize;
		uint8_t *pb = NULL;
		size_t pl = 0;
		bool pid_read = false;
		if (ota_file_read_beneath(bundle_fd, bundle, "pid", 64, &pb, &pl, &e) == OTA_OK) {
			pid_read = true;
			(void)oci_pid_file_parse((const char *)pb, pl, &pid); /* 0 unless a pid */
			free(pb);
		}
		if (pid <= 0) {
			rc = ota_error_set(&e, OTA_ERR_OCI_RUNTIME_FAILED, "create", "%s",
			                   pid_read ? "the pid file is not a pid in 1..INT_MAX"
			                            : "no pid file");
			goto out_finalize;
		}
	}
	if (cancelled(&o))
		goto out_cancel;
	/* From here on the lease says "started" (conservatively: the task can
	 * start only after the go, which waits for this commit). */
	phase_begin(&phase, db, out->container_id, pid);
	phase_started = true;

	/* Host-side inspection of the applied boundary. */
	out->terminal = OTA_OCI_REFUSED;
	json_t *mrep = NULL, *nrep = NULL, *procrep = NULL, *ns = NULL, *ids = NULL, *can = NULL;
	json_t *res = NULL; /* the limits read back from the container's cgroups */
	bool start_failed = false;
	{
		uint8_t *mi = NULL, *nd = NULL, *nr = NULL, *n6 = NULL;
		size_t mil = 0, ndl = 0, nrl = 0, n6l = 0;
		rc = read_proc(pid, "mountinfo", OTA_OCI_MAX_MOUNTINFO_BYTES, &mi, &mil, &e);
		if (rc == OTA_OK)
			rc = ota_oci_check_mountinfo(a, ota_bytes_make(mi, mil), &mrep, &e);
		if (rc == OTA_OK)
			rc = read_proc(pid, "net/dev", OTA_OCI_MAX_NET_BYTES, &nd, &ndl, &e);
		if (rc == OTA_OK)
			rc = read_proc(pid, "net/route", OTA_OCI_MAX_NET_BYTES, &nr, &nrl, &e);
		if (rc == OTA_OK)
			rc = read_proc(pid, "net/ipv6_route", OTA_OCI_MAX_NET_BYTES, &n6, &n6l, &e);
		if (rc == OTA_OK)
			rc = ota_oci_check_netns(ota_bytes_make(nd, ndl), ota_bytes_make(nr, nrl),
			                         ota_bytes_make(n6, n6l), &nrep, &e);
		free(mi);
		free(nd);
		free(nr);
		free(n6);
		if (rc == OTA_OK)
			rc = check_namespaces(pid, cfg, &ns, &e);
		if (rc == OTA_OK)
			rc = check_process(pid, &procrep, &e);
		if (rc == OTA_OK)
			rc = check_identities(pid, a, &ids, &e);
		if (rc == OTA_OK)
			rc = rt.kind == OTA_OCI_RUNC
			             ? oci_cgroup_limits_check(pid, &limits, &res, &e)
			             : ((res = json_pack("{s:n, s:n, s:n, s:n}", "pids_limit",
			                                 "pids_cgroup", "memory_limit_bytes",
			                                 "memory_cgroup")) != NULL
			                        ? OTA_OK
			                        : OTA_ERR_NOMEM);
		/* Only now: start, i.e. release the canary's first gate. It runs
		 * its checks in the task's boundary, reports, and waits for the go.
		 * The lease says "started" (durably, while the canary runs) before
		 * the go can be sent. */
		if (rc == OTA_OK && !cancelled(&o)) {
			ssize_t w;
			do
				w = send(pgo[1], "C", 1, MSG_NOSIGNAL);
			while (w < 0 && errno == EINTR);
			if (w != 1)
				rc = ota_error_set(&e, OTA_ERR_OCI_RUNTIME_FAILED, "start",
				                   "the canary is gone before the start: %s",
				                   strerror(errno));
			start_failed = rc != OTA_OK;
			char *buf = rc == OTA_OK ? malloc(OTA_OCI_MAX_CANARY_BYTES) : NULL;
			if (rc == OTA_OK && buf == NULL)
				rc = OTA_ERR_NOMEM;
			if (rc == OTA_OK)
				rc = read_report(&o, prep[0], buf, OTA_OCI_MAX_CANARY_BYTES, &e);
			if (rc == OTA_OK)
				rc = parse_canaries(buf, expected, &can, &e);
			free(buf);
		}
		char ver[128];
		if (o.runtime.version != NULL)
			snprintf(ver, sizeof ver, "%s", o.runtime.version);
		else
			oci_rt_version(&rt, ver, sizeof ver);
		out->applied = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s?, s:I, s:o*, s:o*, "
		                         "s:o*, s:o*, s:o*, s:o*, s:o*}",
		                         "kind", "ota.applied_policy/v1", "provider", "oci_local",
		                         "runtime", "name", oci_rt_name(rt.kind), "version", ver,
		                         "root", rt.root, "container_id", out->container_id,
		                         "rendered_policy",
		                         json_string_value(json_object_get(out->rendered,
		                                                           "config_identity")),
		                         "pid", (json_int_t)pid, "namespaces", ns, "mounts", mrep,
		                         "network", nrep, "process", procrep, "bound_identities", ids,
		                         "canaries", can, "resources", res);
		json_object_set_new(out->applied, "ok", json_boolean(rc == OTA_OK));
		if (rc == OTA_ERR_OCI_INTERRUPTED)
			goto out_cancel;
		if (start_failed)
			out->terminal = OTA_OCI_NOT_STARTED;
		if (rc != OTA_OK)
			goto out_finalize;
	}
	if (cancelled(&o))
		goto out_cancel;
	{
		char aid[OTA_ID_LEN + 1], rid[OTA_ID_LEN + 1];
		rc = ota_json_identity(out->applied, aid, &e);
		if (rc == OTA_OK)
			rc = ota_json_identity(out->rendered, rid, &e);
		if (rc != OTA_OK)
			goto out_finalize;
		char os[16], arch[16], var[16];
		ota_oci_host_platform(os, arch, var);
		out->initial = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s, s:s, s:s, s:{s:s, s:s, s:s}, "
		                         "s:I}",
		                         "kind", "ota.application/v1", "phase", "initial", "provider",
		                         "oci_local", "txn", o.txn, "segment", plan->segment_id,
		                         "lease", out->container_id, "rendered_policy", rid,
		                         "applied_policy", aid, "platform", "os", os, "architecture",
		                         arch, "variant", var, "at", (json_int_t)now_of(&o));
		rc = out->initial != NULL ? ota_json_identity(out->initial, initial_id, &e)
		                          : OTA_ERR_NOMEM;
		if (rc != OTA_OK)
			goto out_finalize;
	}

	if (o.on_initial != NULL) {
		rc = o.on_initial(o.on_initial_ctx, out->initial, out->applied, &e);
		if (rc != OTA_OK)
			goto out_finalize;
	}
	/* The go. A runner killed before it leaves a canary that reads end of
	 * file and exits without running the task. */
	rc = phase_end(&phase, &e);
	if (rc != OTA_OK) {
		out->terminal = OTA_OCI_NOT_STARTED;
		goto out_finalize;
	}
	if (cancelled(&o))
		goto out_cancel;
	{
		ssize_t w;
		do
			w = send(pgo[1], "G", 1, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		close(pgo[1]);
		pgo[1] = -1;
		if (w != 1) {
			rc = ota_error_set(&e, OTA_ERR_OCI_RUNTIME_FAILED, "start",
			                   "the canary is gone before the go: %s", strerror(errno));
			out->terminal = OTA_OCI_NOT_STARTED;
			goto out_finalize;
		}
		out->started = true;
	}

	/* Wait: stream output, enforce the timeout and cancellation. */
	{
		int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		/* the container's pid namespace, to kill each of its processes
		 * along with the init (pidns.c says why) */
		char pidns[OCI_PIDNS_LEN];
		bool have_ns = oci_pidns_of(pfd, pid, pidns);
		double swept_at = 0;
		double start = mono_ms();
		double deadline = plan->timeout_seconds > 0
		                          ? start + (double)plan->timeout_seconds * 1000.0
		                          : 0;
		bool killed = false, exited = false;
		double kill_at = 0;
		int wst = 0;
		fcntl(pout[0], F_SETFL, O_NONBLOCK);
		fcntl(perr[0], F_SETFL, O_NONBLOCK);
		bool out_open = true, err_open = true;
		while (!exited || out_open || err_open) {
			struct pollfd pf[3];
			nfds_t nf = 0;
			int ip = -1, io = -1, ie = -1;
			if (!exited && pfd >= 0) {
				ip = (int)nf;
				pf[nf++] = (struct pollfd){pfd, POLLIN, 0};
			}
			if (out_open) {
				io = (int)nf;
				pf[nf++] = (struct pollfd){pout[0], POLLIN, 0};
			}
			if (err_open) {
				ie = (int)nf;
				pf[nf++] = (struct pollfd){perr[0], POLLIN, 0};
			}
			int r = poll(pf, nf, 100);
			if (r < 0 && errno != EINTR)
				break;
			if (r > 0 && io >= 0 && pf[io].revents != 0) {
				uint8_t b[8192];
				ssize_t g = read(pout[0], b, sizeof b);
				if (g > 0 && o.on_output != NULL)
					o.on_output(o.output_ctx, 1, b, (size_t)g);
				if (g == 0 || (g < 0 && errno != EAGAIN && errno != EINTR))
					out_open = false;
			}
			if (r > 0 && ie >= 0 && pf[ie].revents != 0) {
				uint8_t b[8192];
				ssize_t g = read(perr[0], b, sizeof b);
				if (g > 0 && o.on_output != NULL)
					o.on_output(o.output_ctx, 2, b, (size_t)g);
				if (g == 0 || (g < 0 && errno != EAGAIN && errno != EINTR))
					err_open = false;
			}
			if (!exited && (pfd < 0 || (r > 0 && ip >= 0 && pf[ip].revents != 0))) {
				pid_t w = waitpid((pid_t)pid, &wst, WNOHANG);
				if (w == (pid_t)pid) {
					exited = true;
				} else if (w < 0 && errno == ECHILD) {
					/* not our child: rely on the pidfd / kill(0) */
					if (kill((pid_t)pid, 0) != 0) {
						exited = true;
						wst = -1;
					}
				}
			}
			double now = mono_ms();
			if (!exited && !killed &&
			    (cancelled(&o) || (deadline > 0 && now >= deadline))) {
				if (cancelled(&o))
					out->interrupted = true;
				else
					out->timed_out = true;
				/* Each process of the container's pid namespace,
				 * then its init, through pidfds: killing the init
				 * kills every process in it once the init acts on
				 * it, which a fork bomb delays (pidns.c), and none
				 * of it takes a new process (a task that filled the
				 * host's pid space leaves none for `runtime kill`). */
				if (have_ns)
					(void)oci_pidns_kill(pidns, pid);
				if (pfd >= 0)
					(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
				swept_at = now;
				const char *kargs[] = {"kill", out->container_id, "KILL", NULL};
				int st = 0;
				ota_error ke;
				ota_error_clear(&ke);
				(void)oci_rt_cmd(&rt, kargs, -1, -1, NULL, 0, NULL, 0, &st, &ke);
				killed = true;
				kill_at = now;
			}
			if (killed && !exited && have_ns && now - swept_at >= 100) {
				/* what forked while the last sweep ran, or did not die */
				(void)oci_pidns_kill(pidns, pid);
				swept_at = now;
			}
			if (exited && now - (kill_at > 0 ? kill_at : now) > 5000)
				break;
			if (killed && !exited && now - kill_at > 30000)
				break; /* finalization reports what is left */
			if (exited && (out_open || err_open) && r == 0) {
				/* the pid namespace is gone: drain what remains and stop */
				forward(&o, 1, pout[0]);
				forward(&o, 2, perr[0]);
				break;
			}
		}
		if (pfd >= 0)
			close(pfd);
		reaped = exited && wst >= 0;
		if (exited && wst >= 0)
			out->exit_status = WIFEXITED(wst)   ? WEXITSTATUS(wst)
			                   : WIFSIGNALED(wst) ? 128 + WTERMSIG(wst)
			                                      : -1;
	}

	/* Terminal inspection: the runtime reports the container stopped, its
	 * init is gone, and every protected path is unchanged. */
	{
		bool exists = false;
		char status[32] = "";
		ota_error se;
		ota_error_clear(&se);
		if (reaped) {
			/* we reaped the init ourselves (subreaper): the pid namespace and
			 * every process in it are gone; the runtime has nothing to add */
			snprintf(status, sizeof status, "stopped");
		} else {
			(void)oci_rt_state(&rt, out->container_id, &exists, status, NULL, &se);
		}
		snprintf(known_status, sizeof known_status, "%s", status);
		json_t *prot = json_array();
		bool unchanged = true;
		for (size_t i = 0; i < a->n_prot; i++) {
			ota_error fe;
			ota_error_clear(&fe);
			/* an interruption (SIGINT/SIGTERM) stops the walk at once: the
			 * remaining paths are not fingerprinted, nothing is claimed */
			ota_err frc = out->interrupted && cancelled(&o)
			                      ? OTA_ERR_OCI_INTERRUPTED
			                      : oci_fingerprint(a->repo_fd, a->prot[i].rel, o.cancel,
			                                        fps[i].after, &fe);
			if (frc != OTA_OK)
				fps[i].after[0] = '\0';
			if (frc == OTA_ERR_OCI_INTERRUPTED)
				out->interrupted = true;
			bool same = frc == OTA_OK && strcmp(fps[i].before, fps[i].after) == 0;
			unchanged = unchanged && same;
			json_t *pe = json_pack("{s:s, s:s, s:s, s:b}", "path", a->prot[i].rel, "before",
			                       fps[i].before, "after", fps[i].after, "unchanged", same);
			if (pe != NULL && frc == OTA_ERR_OCI_INTERRUPTED)
				json_object_set_new(pe, "interrupted", json_true());
			json_array_append_new(prot, pe);
		}
		inspection = json_pack("{s:s, s:b, s:b, s:o, s:b, s:s}", "runtime_status", status,
		                       "init_reaped", reaped,
		                       "stopped", strcmp(status, "stopped") == 0, "protected", prot,
		                       "protected_unchanged", unchanged, "boundary",
		                       "immutable: no capabilities, mount syscalls denied by seccomp");
		if (out->interrupted)
			out->terminal = OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION;
		else if (!unchanged || strcmp(status, "stopped") != 0) {
			out->terminal = OTA_OCI_ENFORCEMENT_LOST;
			rc = ota_error_set(&e, OTA_ERR_OCI_ENFORCEMENT_LOST, "terminal",
			                   !unchanged ? "protected content changed"
			                              : "container not stopped at the end");
		} else
			out->terminal = OTA_OCI_ENFORCED_THROUGH_COMPLETION;
		if (out->interrupted && rc == OTA_OK)
			rc = ota_error_set(&e, OTA_ERR_OCI_INTERRUPTED, "run", "interrupted by a signal");
	}
	goto out_finalize;

out_cancel:
	out->interrupted = true;
	rc = ota_error_set(&e, OTA_ERR_OCI_INTERRUPTED, "run", "interrupted before start");
	out->terminal = out->started || phase_started
	                        ? OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION
	                        : OTA_OCI_NOT_STARTED;
out_finalize:
	(void)phase_end(&phase, NULL);
	if (pgo[1] >= 0) /* no-go: the canary exits without running the task */
		close(pgo[1]);
	for (int i = 0; i < 2; i++) {
		if (prep[i] >= 0)
			close(prep[i]);
		if (i == 0 && pgo[0] >= 0)
			close(pgo[0]);
	}
	if (pout[1] >= 0)
		close(pout[1]);
	if (perr[1] >= 0)
		close(perr[1]);
	if (created) {
		ota_error ce;
		ota_error_clear(&ce);
		ota_err crc = oci_finalize_container(&rt, out->container_id, pid, known_status,
		                                     cgroups, &cleanup, &ce);
		removal_confirmed = crc == OTA_OK;
		if (crc != OTA_OK) {
			if (out->terminal == OTA_OCI_ENFORCED_THROUGH_COMPLETION)
				out->terminal = OTA_OCI_ENFORCEMENT_LOST;
			if (rc == OTA_OK) {
				rc = crc;
				e = ce;
			}
		}
	} else {
		cleanup = json_pack("{s:b, s:b}", "existed", 0, "confirmed", 1);
	}
	if (pid > 0)
		(void)waitpid((pid_t)pid, NULL, WNOHANG);
	if (bundle_made)
		(void)oci_bundle_remove_at(bundles_fd, out->container_id);
	if (pout[0] >= 0)
		close(pout[0]);
	if (perr[0] >= 0)
		close(perr[0]);
out_record:
	out->terminal_record =
		terminal_record(&o, plan, out, initial_id[0] ? initial_id : NULL, inspection, cleanup,
		                rc != OTA_OK ? &e : NULL);
	if (o.on_terminal != NULL && out->terminal_record != NULL)
		o.on_terminal(o.on_terminal_ctx, out->terminal_record);
	/* Only a confirmed removal ends the lease, as in cleanup: a container
	 * that may still run keeps it open (its terminal record says why),
	 * for `ota cleanup` and later runs' sweeps once this runner is gone. */
	if (leased && removal_confirmed) {
		char *cj = cleanup != NULL ? ota_json_dumps(cleanup, false) : NULL;
		ota_error le;
		ota_error_clear(&le);
		ota_err lrc = oci_lease_finalize(db, out->container_id,
		                                 ota_oci_terminal_name(out->terminal), cj,
		                                 rc != OTA_OK ? ota_err_name(e.code) : NULL, now_of(&o),
		                                 &le);
		free(cj);
		if (lrc != OTA_OK && rc == OTA_OK) {
			rc = lrc;
			e = le;
		}
	}
	oci_lease_close(db);
	if (bundle_fd >= 0)
		close(bundle_fd);
	if (bundles_fd >= 0)
		close(bundles_fd);
	json_decref(cgroups);
	json_decref(cfg);
	free(fps);
	ota_oci_admitted_free(a);
	if (rc != OTA_OK && err != NULL && err->code == OTA_OK)
		*err = e;
	return rc;
}
