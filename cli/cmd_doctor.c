/*
 * ota doctor [--json]: what this machine can really enforce, for the lanes
 * of an ota.yaml. It never reports ready merely because a policy compiled:
 * the runtime is probed (RUNTIME --version), root is checked, namespaces are
 * created for real in a child (unshare of mount, network, pid, ipc and uts;
 * the new network namespace must hold only lo), the recorded capability
 * descriptor is compared with the live one, and the lease database is read
 * for leases whose runner is gone. docs/doctor.md lists the finding codes.
 *
 * Exit status: 0 ready (no problem found), 1 problems found, 2 usage or
 * unreadable input, 3 internal error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/oci.h"
#include "ota/policy.h"

#define DOCTOR_DEFAULT_DESCRIPTOR "/var/lib/ota/descriptors/oci_local.json"
#define DOCTOR_MAX_LANES 64

static const char *doctor_usage =
	"ota doctor [-f FILE] [--task T]... [--workflow W]... [--runtime runc|crun] "
	"[--runtime-binary PATH] [--runtime-root DIR] [--image-store DIR] [--lease-db PATH] "
	"[--descriptor FILE] [--record-descriptor] [--org-policy FILE | --no-org-policy] [--json]";

typedef struct doctor_opts {
	const char *file;
	bool file_given, json, record, no_org;
	const char *org_policy, *runtime, *runtime_binary, *runtime_root, *store, *lease_db;
	const char *descriptor;
	const char *tasks[DOCTOR_MAX_LANES];
	size_t ntasks;
	const char *workflows[DOCTOR_MAX_LANES];
	size_t nworkflows;
} doctor_opts;

typedef struct doctor {
	json_t *findings;
	size_t problems, warnings;
	/* machine */
	bool root, runtime_ok, ns_ok, netns_lo_only, seccomp, rro_kernel;
	bool pids_controller; /* a pids cgroup controller runc can limit with */
	bool target_available;
	char runtime_version[128];
	char ns_detail[160];
	ota_capability_descriptor live;
} doctor;

static const char *env_or(const char *v, const char *env, const char *def)
{
	if (v != NULL)
		return v;
	const char *e = getenv(env);
	return e != NULL && e[0] != '\0' ? e : def;
}

/* Adds a finding; severity "problem" (counted for the exit status),
 * "warning" or "info". Takes ownership of extra (may be NULL). */
static void finding(doctor *d, const char *severity, const char *code, const char *lane,
                    json_t *extra, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void finding(doctor *d, const char *severity, const char *code, const char *lane,
                    json_t *extra, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *f = json_pack("{s:s, s:s, s:s}", "code", code, "severity", severity, "message", msg);
	if (f == NULL) {
		json_decref(extra);
		return;
	}
	json_object_set_new(f, "lane", lane != NULL ? json_string(lane) : json_null());
	if (extra != NULL)
		json_object_update(f, extra);
	json_decref(extra);
	json_array_append_new(d->findings, f);
	if (strcmp(severity, "problem") == 0)
		d->problems++;
	else if (strcmp(severity, "warning") == 0)
		d->warnings++;
}

/* ---- machine probes ---- */

/*
 * Creates fresh mount, network, pid, ipc, uts and cgroup namespaces (those
 * oci_local renders) in a child and checks the new network namespace: it
 * must list only "lo" in /proc/self/net/dev. Child exit: 0 ok, 10 +
 * errno-class on unshare failure, 20 when other interfaces are visible, 21
 * when unreadable.
 */
static void probe_namespaces(doctor *d)
{
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(d->ns_detail, sizeof d->ns_detail, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
		            CLONE_NEWCGROUP) != 0)
			_exit(errno == EPERM ? 10 : errno == EINVAL ? 11 : 12);
		FILE *f = fopen("/proc/self/net/dev", "re");
		if (f == NULL)
			_exit(21);
		char line[512];
		int n = 0, other = 0;
		while (fgets(line, sizeof line, f) != NULL) {
			if (++n <= 2)
				continue; /* two header lines */
			char *c = strchr(line, ':');
			if (c == NULL)
				continue;
			*c = '\0';
			char *name = line;
			while (*name == ' ')
				name++;
			if (strcmp(name, "lo") != 0)
				other++;
		}
		fclose(f);
		_exit(other == 0 ? 0 : 20);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	switch (code) {
	case 0:
		d->ns_ok = true;
		d->netns_lo_only = true;
		snprintf(d->ns_detail, sizeof d->ns_detail,
		         "unshare(mnt, net, pid, ipc, uts, cgroup) works; a new network namespace "
		         "holds only lo");
		break;
	case 10:
		snprintf(d->ns_detail, sizeof d->ns_detail, "unshare: operation not permitted");
		break;
	case 11:
		snprintf(d->ns_detail, sizeof d->ns_detail, "unshare: namespaces not supported by the kernel");
		break;
	case 20:
		d->ns_ok = true;
		snprintf(d->ns_detail, sizeof d->ns_detail,
		         "a new network namespace shows interfaces other than lo");
		break;
	default:
		snprintf(d->ns_detail, sizeof d->ns_detail, "namespace probe failed (status %d)", code);
		break;
	}
}

static void probe_kernel(doctor *d)
{
	struct utsname u;
	if (uname(&u) == 0) {
		long maj = strtol(u.release, NULL, 10);
		const char *dot = strchr(u.release, '.');
		long min = dot != NULL ? strtol(dot + 1, NULL, 10) : 0;
		/* recursive read-only binds (mount_setattr MOUNT_ATTR_RDONLY, AT_RECURSIVE) */
		d->rro_kernel = maj > 5 || (maj == 5 && min >= 12);
	}
	FILE *f = fopen("/proc/self/status", "re");
	if (f != NULL) {
		char line[256];
		while (fgets(line, sizeof line, f) != NULL)
			if (strncmp(line, "Seccomp:", 8) == 0)
				d->seccomp = true;
		fclose(f);
	}
}

/*
 * A pids cgroup controller this process's cgroups can reach, as runc's
 * will: a cgroup v1 hierarchy listing "pids" in /proc/self/cgroup, or the
 * unified hierarchy (the "0::" line) whose /sys/fs/cgroup/cgroup.controllers
 * lists it. Without one runc cannot hold the default process-count limit,
 * and every runc run is refused (oci_limit_not_applied).
 */
static void probe_pids(doctor *d)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return;
	char line[1024];
	bool unified = false;
	while (fgets(line, sizeof line, f) != NULL) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		if (strncmp(line, "0:", 2) == 0 && c1[1] == '\0') {
			unified = true;
			continue;
		}
		for (char *t = strtok(c1 + 1, ","); t != NULL; t = strtok(NULL, ","))
			if (strcmp(t, "pids") == 0)
				d->pids_controller = true;
	}
	fclose(f);
	if (d->pids_controller || !unified)
		return;
	f = fopen("/sys/fs/cgroup/cgroup.controllers", "re");
	if (f == NULL)
		return;
	char buf[512];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *t = strtok(buf, " \n"); t != NULL; t = strtok(NULL, " \n"))
		if (strcmp(t, "pids") == 0)
			d->pids_controller = true;
}

/* The process start time (field 22 of /proc/PID/stat, as the lease records
 * it), or "" when gone. */
static void proc_start(long pid, char *out, size_t cap)
{
	unsigned long long t = ota_oci_proc_start_time(pid);
	if (t == 0)
		out[0] = '\0';
	else
		snprintf(out, cap, "%llu", t);
}

/* ---- the live descriptor and drift ---- */

static ota_err load_builtin_into(ota_capability_descriptor *out, ota_error *e)
{
	ota_platform host;
	ota_platform_host(&host);
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	if (txt == NULL)
		return ota_error_set(e, OTA_ERR_INTERNAL, "oci_local", "no built-in descriptor");
	return ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &host, out, e);
}

/* Downgrades the descriptor to what this machine can enforce right now. */
static void apply_machine(doctor *d)
{
	if (!d->target_available) {
		for (int c = 0; c < OTA_CTL_COUNT; c++)
			d->live.controls[c] = OTA_CAP_UNSUPPORTED;
		return;
	}
	if (!d->netns_lo_only) {
		d->live.controls[OTA_CTL_NET_EXTERNAL_DENY] = OTA_CAP_UNSUPPORTED;
		d->live.controls[OTA_CTL_PROCESS_ISOLATION] = OTA_CAP_UNSUPPORTED;
	}
	if (!d->rro_kernel)
		d->live.controls[OTA_CTL_FS_READ_ONLY_ROOT] = OTA_CAP_ADVISORY;
}

static const char *cap_name(ota_cap_state s)
{
	return s == OTA_CAP_ENFORCED ? "enforced" : s == OTA_CAP_ADVISORY ? "advisory" : "unsupported";
}

static json_t *descriptor_drift(doctor *d, const char *path, bool explicit_path, json_t *rep)
{
	ota_error e;
	ota_error_clear(&e);
	uint8_t *buf = NULL;
	size_t n = 0;
	if (access(path, F_OK) != 0) {
		if (explicit_path)
			finding(d, "problem", "descriptor_unreadable", NULL,
			        json_pack("{s:s}", "path", path), "recorded descriptor %s does not exist",
			        path);
		else
			finding(d, "info", "descriptor_not_recorded", NULL, json_pack("{s:s}", "path", path),
			        "no recorded capability descriptor at %s (ota doctor --record-descriptor "
			        "records the live one)",
			        path);
		json_object_set_new(rep, "recorded", json_null());
		return rep;
	}
	ota_platform host;
	ota_platform_host(&host);
	ota_capability_descriptor rec;
	ota_err rc = ota_file_read(path, OTA_MAX_YAML_BYTES, &buf, &n, &e);
	if (rc == OTA_OK)
		rc = ota_capability_descriptor_parse(ota_bytes_make(buf, n), &host, &rec, &e);
	free(buf);
	json_object_set_new(rep, "recorded", json_string(path));
	if (rc != OTA_OK) {
		finding(d, "problem", "descriptor_unreadable", NULL,
		        json_pack("{s:s, s:s}", "path", path, "error", ota_err_name(e.code)),
		        "recorded descriptor %s cannot be used: %s", path, e.what);
		return rep;
	}
	char rid[OTA_ID_LEN + 1] = "";
	if (ota_capability_descriptor_identity(&rec, rid, &e) == OTA_OK)
		json_object_set_new(rep, "recorded_identity", json_string(rid));
	json_t *drift = json_array();
	for (int c = 0; c < OTA_CTL_COUNT; c++) {
		ota_cap_state was = rec.controls[c], now = d->live.controls[c];
		if (was == now)
			continue;
		bool narrowed = was == OTA_CAP_ENFORCED || (was == OTA_CAP_ADVISORY && now == OTA_CAP_UNSUPPORTED);
		const char *ctl = ota_control_name((ota_control)c);
		json_array_append_new(drift, json_pack("{s:s, s:s, s:s}", "control", ctl, "recorded",
		                                       cap_name(was), "live", cap_name(now)));
		finding(d, narrowed ? "problem" : "warning", "capability_drift", NULL,
		        json_pack("{s:s, s:s, s:s}", "control", ctl, "recorded", cap_name(was), "live",
		                  cap_name(now)),
		        "%s: recorded %s, live %s%s", ctl, cap_name(was), cap_name(now),
		        narrowed ? " (lanes admitted against the recorded descriptor would now be refused)"
		                 : " (capability widened since it was recorded)");
	}
	struct {
		const char *name;
		bool was, now;
	} ex[] = {
		{"execution.backend.container", rec.backend_container, d->live.backend_container},
		{"execution.lifecycle.ephemeral", rec.lifecycle_ephemeral, d->live.lifecycle_ephemeral},
		{"execution.kind.run", rec.kind_run, d->live.kind_run},
		{"execution.kind.script", rec.kind_script, d->live.kind_script},
		{"execution.kind.command", rec.kind_command, d->live.kind_command},
		{"execution.kind.aggregate", rec.kind_aggregate, d->live.kind_aggregate},
	};
	for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
		if (ex[i].was == ex[i].now)
			continue;
		json_array_append_new(drift, json_pack("{s:s, s:b, s:b}", "control", ex[i].name,
		                                       "recorded", ex[i].was, "live", ex[i].now));
		finding(d, ex[i].was ? "problem" : "warning", "capability_drift", NULL,
		        json_pack("{s:s}", "control", ex[i].name), "%s: recorded %s, live %s",
		        ex[i].name, ex[i].was ? "supported" : "unsupported",
		        ex[i].now ? "supported" : "unsupported");
	}
	json_object_set_new(rep, "drift", drift);
	return rep;
}

/* ---- leases ---- */

static json_t *check_leases(doctor *d, const char *db)
{
	json_t *rep = json_pack("{s:s}", "db", db);
	if (access(db, F_OK) != 0) {
		json_object_set_new(rep, "exists", json_false());
		json_object_set_new(rep, "open", json_integer(0));
		json_object_set_new(rep, "orphaned", json_array());
		return rep;
	}
	json_object_set_new(rep, "exists", json_true());
	ota_error e;
	ota_error_clear(&e);
	json_t *rows = NULL;
	if (ota_oci_lease_list(db, true, &rows, &e) != OTA_OK) {
		finding(d, "problem", "lease_db_unreadable", NULL,
		        json_pack("{s:s, s:s}", "db", db, "error", ota_err_name(e.code)),
		        "lease database %s cannot be read: %s", db, e.what);
		return rep;
	}
	json_t *orph = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
	{
		long pid = (long)json_integer_value(json_object_get(r, "runner_pid"));
		const char *start = json_string_value(json_object_get(r, "runner_start"));
		char now[64];
		proc_start(pid, now, sizeof now);
		if (now[0] != '\0' && start != NULL && strcmp(now, start) == 0)
			continue; /* its runner is alive: not orphaned */
		const char *id = json_string_value(json_object_get(r, "id"));
		const char *phase = json_string_value(json_object_get(r, "phase"));
		json_array_append_new(orph, json_pack("{s:s?, s:s?, s:I}", "id", id, "phase", phase,
		                                      "runner_pid", (json_int_t)pid));
		finding(d, "problem", "orphaned_lease", NULL,
		        json_pack("{s:s?, s:s?}", "lease", id, "phase", phase),
		        "lease %s (phase %s) belongs to runner %ld, which is gone: run `ota cleanup "
		        "--lease-db %s` to finalize it",
		        id != NULL ? id : "?", phase != NULL ? phase : "?", pid, db);
	}
	json_object_set_new(rep, "open", json_integer((json_int_t)json_array_size(rows)));
	json_object_set_new(rep, "orphaned", orph);
	json_decref(rows);
	return rep;
}

/* ---- lanes ---- */

static bool image_in_store(const json_t *images, const char *name)
{
	size_t i;
	json_t *im;
	json_array_foreach(images, i, im)
	{
		const char *n = json_string_value(json_object_get(im, "name"));
		if (n != NULL && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/*
 * Reports segments without a network boundary: the boundary is read from the
 * effective segment (overlays may have narrowed it), the declared effects
 * from the canonical one. A segment is bounded when network.default is deny
 * or it names outbound_targets.
 */
static void lane_network_scan(doctor *d, const char *lane, const ota_policy *p)
{
	const json_t *csegs = json_object_get(ota_policy_canonical_json(p), "segments");
	const json_t *esegs = json_object_get(ota_policy_effective_json(p), "segments");
	size_t i;
	json_t *seg;
	json_array_foreach(csegs, i, seg)
	{
		const char *sid = json_string_value(json_object_get(seg, "id"));
		const json_t *eseg = json_array_get(esegs, i);
		const char *eid = json_string_value(json_object_get(eseg, "id"));
		if (eseg == NULL || eid == NULL || sid == NULL || strcmp(eid, sid) != 0)
			eseg = seg;
		const json_t *net = json_object_get(json_object_get(eseg, "runtime_boundary"), "network");
		const char *def = json_string_value(json_object_get(net, "default"));
		size_t ntargets = json_array_size(json_object_get(net, "outbound_targets"));
		bool bounded = def != NULL && (strcmp(def, "deny") == 0 || ntargets > 0);
		const json_t *eff = json_object_get(seg, "effects");
		bool net_effects = json_is_true(json_object_get(eff, "network"));
		if (bounded)
			continue;
		if (net_effects)
			finding(d, "problem", "network_effects_unbounded", lane,
			        json_pack("{s:s?}", "segment_id", sid),
			        "%s declares network effects but no network boundary (default %s, no "
			        "outbound_targets): its egress is as broad as the host's",
			        sid != NULL ? sid : lane, def != NULL ? def : "unset");
		else
			finding(d, "warning", "network_unbounded", lane,
			        json_pack("{s:s?}", "segment_id", sid),
			        "%s declares no network boundary: nothing limits its network access",
			        sid != NULL ? sid : lane);
	}
}

static json_t *check_lane(doctor *d, const ota_contract *c, ota_lane_kind kind, const char *name,
                          const ota_overlay *const *ovs, size_t nov, const json_t *images,
                          const char *store)
{
	char label[300];
	snprintf(label, sizeof label, "%s:%s", kind == OTA_LANE_TASK ? "task" : "workflow", name);
	json_t *rep = json_pack("{s:s, s:s}", "kind", kind == OTA_LANE_TASK ? "task" : "workflow",
	                        "name", name);
	ota_error e;
	ota_error_clear(&e);
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	ota_platform_host(&po.native_platform);
	ota_policy *p = NULL;
	if (ota_policy_compile(c, kind, name, &po, ovs, nov, &p, &e) != OTA_OK) {
		finding(d, "problem", "lane_invalid", label, json_pack("{s:s}", "error", ota_err_name(e.code)),
		        "%s does not compile: %s: %s", label, ota_err_name(e.code), e.what);
		json_object_set_new(rep, "compiled", json_false());
		return rep;
	}
	json_object_set_new(rep, "compiled", json_true());
	json_object_set_new(rep, "canonical_policy_identity",
	                    json_string(ota_policy_canonical_identity(p)));
	json_object_set_new(rep, "effective_policy_identity",
	                    json_string(ota_policy_effective_identity(p)));
	/* authoritative in the canonical policy, or made so by an overlay */
	bool auth = ota_policy_has_authoritative_controls(p);
	size_t si;
	json_t *eseg;
	json_array_foreach(json_object_get(ota_policy_effective_json(p), "segments"), si, eseg)
		if (json_array_size(json_object_get(json_object_get(eseg, "controls"),
		                                    "authoritative_runtime")) > 0)
			auth = true;
	json_object_set_new(rep, "authoritative", json_boolean(auth));
	lane_network_scan(d, label, p);
	if (!auth) {
		json_object_set_new(rep, "enforceable_here", json_null());
		ota_policy_free(p);
		return rep;
	}
	/* the declared policy against the target as shipped ... */
	ota_capability_descriptor shipped;
	ota_error_clear(&e);
	if (load_builtin_into(&shipped, &e) != OTA_OK) {
		ota_policy_free(p);
		return rep;
	}
	ota_admission_request req = {false, "oci_local", &shipped, 1};
	json_t *adm = NULL;
	bool admitted = false;
	if (ota_policy_admit(p, &req, &adm, &admitted, &e) != OTA_OK) {
		finding(d, "problem", "lane_invalid", label, json_pack("{s:s}", "error", ota_err_name(e.code)),
		        "%s: admission failed: %s", label, e.what);
		ota_policy_free(p);
		return rep;
	}
	json_object_set_new(rep, "admitted_by_target", json_boolean(admitted));
	const json_t *apps = json_object_get(json_object_get(adm, "provider_evaluation"),
	                                     "segment_applications");
	bool fs_enforced = json_array_size(apps) > 0, net_enforced = true;
	size_t i;
	json_t *a;
	json_array_foreach(apps, i, a)
	{
		const char *fs = json_string_value(json_object_get(a, "filesystem"));
		const char *net = json_string_value(json_object_get(a, "network"));
		if (fs == NULL || (strcmp(fs, "enforced") != 0 && strcmp(fs, "not_required") != 0))
			fs_enforced = false;
		if (net == NULL || (strcmp(net, "enforced") != 0 && strcmp(net, "not_required") != 0))
			net_enforced = false;
	}
	json_t *refusals = json_object_get(adm, "refusals");
	json_t *ctls = json_array();
	json_t *r;
	bool other = false;
	json_array_foreach(refusals, i, r)
	{
		const char *ctl = json_string_value(json_object_get(r, "control"));
		if (ctl == NULL)
			continue;
		json_array_append_new(ctls, json_string(ctl));
		if (strncmp(ctl, "network.", 8) != 0)
			other = true;
	}
	json_t *alts = json_object_get(adm, "supported_alternatives");
	char *ctl_list = ota_json_dumps(ctls, false);
	if (!admitted && fs_enforced && !net_enforced && !other) {
		finding(d, "problem", "network_not_enforced", label,
		        json_pack("{s:O, s:O}", "controls", ctls, "supported_alternatives",
		                  alts != NULL ? alts : json_null()),
		        "oci_local enforces the filesystem policy of %s but not its declared network "
		        "policy (%s); the lane is refused",
		        label, ctl_list != NULL ? ctl_list : "?");
	} else if (!admitted) {
		finding(d, "problem", "lane_not_enforceable", label,
		        json_pack("{s:O, s:O}", "controls", ctls, "supported_alternatives",
		                  alts != NULL ? alts : json_null()),
		        "oci_local cannot enforce every authoritative control of %s (%s)", label,
		        ctl_list != NULL ? ctl_list : "?");
	}
	free(ctl_list);
	json_decref(ctls);
	/* ... and on this machine right now */
	bool here = admitted && d->target_available;
	if (admitted && !d->target_available)
		finding(d, "problem", "no_enforcing_target", label, NULL,
		        "%s has authoritative boundaries but no enforcing target is available on this "
		        "machine (runtime %s, %s, namespaces %s)",
		        label, d->runtime_ok ? "present" : "missing", d->root ? "root" : "not root",
		        d->ns_ok ? "available" : "unavailable");
	if (admitted) {
		json_t *seg;
		json_array_foreach(json_object_get(ota_policy_canonical_json(p), "segments"), i, seg)
		{
			const char *img = json_string_value(
				json_object_get(json_object_get(seg, "execution"), "image"));
			if (img == NULL || image_in_store(images, img))
				continue;
			here = false;
			finding(d, "problem", "image_unavailable", label,
			        json_pack("{s:s, s:s}", "image", img, "store", store),
			        "%s needs image %s, which is not in the store %s (ota image import, or "
			        "scripts/make-test-rootfs.sh)",
			        label, img, store);
		}
	}
	json_object_set_new(rep, "enforceable_here", json_boolean(here));
	json_decref(adm);
	ota_policy_free(p);
	return rep;
}

/* ---- contract ---- */

static ota_err load_overlay(const char *path, ota_overlay_source src, ota_overlay **out,
                            ota_error *e)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(path, OTA_MAX_YAML_BYTES, &buf, &n, e);
	if (rc == OTA_OK)
		rc = ota_overlay_load(ota_bytes_make(buf, n), path, src, out, e);
	free(buf);
	return rc;
}

static json_t *check_contract(doctor *d, const doctor_opts *o, const char *store)
{
	json_t *lanes = json_array();
	ota_error e;
	ota_error_clear(&e);
	uint8_t *yaml = NULL;
	size_t ylen = 0;
	ota_contract *c = NULL;
	ota_overlay *ov = NULL;
	ota_err rc = cli_contract_read(o->file, &yaml, &ylen, &e);
	if (rc == OTA_OK)
		rc = ota_contract_load(ota_bytes_make(yaml, ylen), o->file, &c, &e);
	free(yaml);
	if (rc == OTA_OK && !o->no_org) {
		char dir[PATH_MAX], def[PATH_MAX + 32];
		snprintf(dir, sizeof dir, "%s", o->file);
		if (o->org_policy != NULL) {
			rc = load_overlay(o->org_policy, OTA_OVERLAY_ORG_POLICY, &ov, &e);
		} else {
			/* beneath the contract's directory, as `ota run` reads it */
			uint8_t *buf = NULL;
			size_t bl = 0;
			rc = cli_org_policy_read(dirname(dir), &buf, &bl, def, sizeof def, &e);
			if (rc == OTA_OK && buf != NULL)
				rc = ota_overlay_load(ota_bytes_make(buf, bl), def, OTA_OVERLAY_ORG_POLICY,
				                      &ov, &e);
			free(buf);
		}
	}
	if (rc != OTA_OK) {
		finding(d, "problem", "contract_invalid", NULL,
		        json_pack("{s:s, s:s}", "path", o->file, "error", ota_err_name(e.code)),
		        "%s: %s: %s", o->file, ota_err_name(e.code), e.what);
		ota_contract_free(c);
		return lanes;
	}
	json_t *images = NULL;
	if (ota_oci_image_list(store, &images, &e) != OTA_OK || images == NULL) {
		json_decref(images);
		images = json_array();
	}
	const ota_overlay *ovs[1] = {ov};
	size_t nov = ov != NULL ? 1 : 0;
	bool all = o->ntasks == 0 && o->nworkflows == 0;
	if (all) {
		for (size_t i = 0; i < ota_contract_task_count(c); i++)
			json_array_append_new(lanes, check_lane(d, c, OTA_LANE_TASK,
			                                        ota_contract_task_name(c, i), ovs, nov,
			                                        images, store));
		for (size_t i = 0; i < ota_contract_workflow_count(c); i++)
			json_array_append_new(lanes, check_lane(d, c, OTA_LANE_WORKFLOW,
			                                        ota_contract_workflow_name(c, i), ovs,
			                                        nov, images, store));
	} else {
		for (size_t i = 0; i < o->ntasks; i++)
			json_array_append_new(lanes, check_lane(d, c, OTA_LANE_TASK, o->tasks[i], ovs, nov,
			                                        images, store));
		for (size_t i = 0; i < o->nworkflows; i++)
			json_array_append_new(lanes, check_lane(d, c, OTA_LANE_WORKFLOW, o->workflows[i],
			                                        ovs, nov, images, store));
	}
	json_decref(images);
	ota_overlay_free(ov);
	ota_contract_free(c);
	return lanes;
}

static int parse_args(int argc, char **argv, doctor_opts *o)
{
	memset(o, 0, sizeof *o);
	o->file = "ota.yaml";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--json") == 0)
			o->json = true;
		else if (strcmp(a, "--record-descriptor") == 0)
			o->record = true;
		else if (strcmp(a, "--no-org-policy") == 0)
			o->no_org = true;
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			printf("usage: %s\n", doctor_usage);
			return CLI_OK;
		} else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && more) {
			o->file = argv[++i];
			o->file_given = true;
		} else if (strcmp(a, "--task") == 0 && more) {
			if (o->ntasks == DOCTOR_MAX_LANES)
				return cli_usage("ota", "too many --task arguments");
			o->tasks[o->ntasks++] = argv[++i];
		} else if (strcmp(a, "--workflow") == 0 && more) {
			if (o->nworkflows == DOCTOR_MAX_LANES)
				return cli_usage("ota", "too many --workflow arguments");
			o->workflows[o->nworkflows++] = argv[++i];
		} else if (strcmp(a, "--org-policy") == 0 && more)
			o->org_policy = argv[++i];
		else if (strcmp(a, "--runtime") == 0 && more)
			o->runtime = argv[++i];
		else if (strcmp(a, "--runtime-binary") == 0 && more)
			o->runtime_binary = argv[++i];
		else if (strcmp(a, "--runtime-root") == 0 && more)
			o->runtime_root = argv[++i];
		else if (strcmp(a, "--image-store") == 0 && more)
			o->store = argv[++i];
		else if (strcmp(a, "--lease-db") == 0 && more)
			o->lease_db = argv[++i];
		else if (strcmp(a, "--descriptor") == 0 && more)
			o->descriptor = argv[++i];
		else
			return cli_usage("ota", doctor_usage);
	}
	/* as ota run / up / policy: naming an org policy and ignoring it contradict */
	if (o->org_policy != NULL && o->no_org)
		return cli_usage("ota", "--org-policy and --no-org-policy contradict each other");
	return -1;
}

static void print_human(const json_t *rep)
{
	const json_t *m = json_object_get(rep, "machine");
	const json_t *rt = json_object_get(m, "runtime");
	const char *ver = json_string_value(json_object_get(rt, "version"));
	printf("ota %s doctor\n", json_string_value(json_object_get(rep, "ota_version")));
	printf("  %-8s runtime %s: %s\n", json_is_true(json_object_get(rt, "available")) ? "ok" : "PROBLEM",
	       json_string_value(json_object_get(rt, "binary")),
	       ver != NULL && ver[0] != '\0' ? ver : "not found / does not run");
	printf("  %-8s root\n", json_is_true(json_object_get(m, "root")) ? "ok" : "PROBLEM");
	printf("  %-8s namespaces: %s\n",
	       json_is_true(json_object_get(json_object_get(m, "namespaces"), "ok")) ? "ok" : "PROBLEM",
	       json_string_value(json_object_get(json_object_get(m, "namespaces"), "detail")));
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(rep, "lanes"), i, l)
	{
		const json_t *h = json_object_get(l, "enforceable_here");
		printf("  %-8s %s:%s (%s)\n", json_is_true(h) ? "ok" : json_is_null(h) ? "-" : "PROBLEM",
		       json_string_value(json_object_get(l, "kind")),
		       json_string_value(json_object_get(l, "name")),
		       json_is_null(h) ? "no authoritative boundary" : json_is_true(h) ? "enforceable here"
		                                                                   : "not enforceable here");
	}
	json_t *f;
	json_array_foreach(json_object_get(rep, "findings"), i, f)
		printf("%s: %s: %s\n", json_string_value(json_object_get(f, "severity")),
		       json_string_value(json_object_get(f, "code")),
		       json_string_value(json_object_get(f, "message")));
	if (json_is_true(json_object_get(rep, "ready")))
		printf("ready\n");
	else
		printf("not ready: %lld problem(s)\n",
		       (long long)json_integer_value(json_object_get(rep, "problems")));
}

int cmd_doctor(int argc, char **argv)
{
	doctor_opts o;
	int pr = parse_args(argc, argv, &o);
	if (pr >= 0)
		return pr;
	ota_oci_runtime_kind kind = OTA_OCI_RUNC;
	const char *rtname = env_or(o.runtime, "OTA_OCI_RUNTIME", "runc");
	if (strcmp(rtname, "crun") == 0)
		kind = OTA_OCI_CRUN;
	else if (strcmp(rtname, "runc") != 0)
		return cli_usage("ota", doctor_usage);
	const char *bin = env_or(o.runtime_binary, "OTA_OCI_RUNTIME_BINARY", rtname);
	const char *store = env_or(o.store, "OTA_IMAGE_STORE", OTA_OCI_DEFAULT_IMAGE_STORE);
	const char *db = env_or(o.lease_db, "OTA_LEASE_DB", OTA_OCI_DEFAULT_LEASE_DB);
	const char *desc_path = env_or(o.descriptor, "OTA_DESCRIPTOR", DOCTOR_DEFAULT_DESCRIPTOR);
	bool desc_explicit = o.descriptor != NULL || getenv("OTA_DESCRIPTOR") != NULL;

	doctor d;
	memset(&d, 0, sizeof d);
	d.findings = json_array();
	ota_error e;
	ota_error_clear(&e);
	if (d.findings == NULL || load_builtin_into(&d.live, &e) != OTA_OK) {
		json_decref(d.findings);
		return cli_fail("ota", &e);
	}

	/* the machine, probed for real */
	d.root = geteuid() == 0;
	ota_oci_runtime_opts rto = {kind, bin, o.runtime_root, NULL};
	ota_oci_runtime_version(&rto, d.runtime_version, sizeof d.runtime_version);
	d.runtime_ok = d.runtime_version[0] != '\0';
	probe_namespaces(&d);
	probe_kernel(&d);
	probe_pids(&d);
	d.target_available = d.runtime_ok && d.root && d.ns_ok;
	if (!d.runtime_ok)
		finding(&d, "problem", "runtime_missing", NULL, json_pack("{s:s}", "binary", bin),
		        "the OCI runtime %s is missing or does not run (`%s --version` failed)", bin, bin);
	if (!d.root)
		finding(&d, "problem", "not_root", NULL, NULL,
		        "oci_local needs root (euid %ld) to create containers", (long)geteuid());
	if (!d.ns_ok)
		finding(&d, "problem", "namespaces_unavailable", NULL, NULL, "%s", d.ns_detail);
	else if (!d.netns_lo_only)
		finding(&d, "problem", "netns_not_isolated", NULL, NULL, "%s", d.ns_detail);
	if (!d.seccomp)
		finding(&d, "problem", "seccomp_unavailable", NULL, NULL,
		        "the kernel reports no seccomp support (the syscall deny-list cannot apply)");
	if (!d.rro_kernel)
		finding(&d, "warning", "rro_unavailable", NULL, NULL,
		        "kernel older than 5.12: recursive read-only binds are unavailable");
	if (kind == OTA_OCI_RUNC && d.runtime_ok && !d.pids_controller)
		finding(&d, "problem", "pids_controller_missing", NULL, NULL,
		        "no pids cgroup controller: runc cannot hold the default process-count limit, "
		        "so every run is refused (oci_limit_not_applied); --pids-limit 0 runs without one");
	else if (kind == OTA_OCI_CRUN)
		finding(&d, "info", "resource_limits_unavailable", NULL, NULL,
		        "crun runs without cgroups here (--cgroup-manager=disabled): no process-count or "
		        "memory limit can be applied");
	apply_machine(&d);

	json_t *live = ota_capability_descriptor_json(&d.live);
	char lid[OTA_ID_LEN + 1] = "";
	if (ota_capability_descriptor_identity(&d.live, lid, &e) != OTA_OK)
		lid[0] = '\0';
	json_t *desc = json_pack("{s:s, s:O}", "live_identity", lid, "live", live);
	if (o.record) {
		char *s = ota_json_dumps(live, true);
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", desc_path);
		char *dn = dirname(dir);
		if (strcmp(dn, ".") != 0 && strcmp(dn, "/") != 0) {
			/* mkdir -p of the directory */
			for (char *p = dn + 1; *p != '\0'; p++)
				if (*p == '/') {
					*p = '\0';
					mkdir(dn, 0755);
					*p = '/';
				}
			mkdir(dn, 0755);
		}
		ota_error we;
		ota_error_clear(&we);
		if (s == NULL ||
		    ota_file_write_atomic(desc_path, ota_bytes_make(s, strlen(s)), 0644, &we) != OTA_OK) {
			free(s);
			json_decref(live);
			json_decref(desc);
			json_decref(d.findings);
			return cli_fail("ota", &we);
		}
		free(s);
		json_object_set_new(desc, "recorded_now", json_string(desc_path));
	}
	json_decref(live);
	desc = descriptor_drift(&d, desc_path, desc_explicit, desc);
	json_t *leases = check_leases(&d, db);

	json_t *lanes;
	if (o.file_given || access(o.file, F_OK) == 0)
		lanes = check_contract(&d, &o, store);
	else {
		lanes = json_array();
		finding(&d, "info", "no_contract", NULL, NULL,
		        "no %s here: only the machine was checked (-f FILE names a contract)", o.file);
	}

	bool ready = d.problems == 0;
	json_t *rep = json_pack(
		"{s:s, s:s, s:b, s:I, s:I, s:{s:b, s:I, s:{s:s, s:s, s:b, s:s}, s:{s:b, s:b, s:s}, "
		"s:b, s:b, s:b, s:b}, s:o, s:o, s:o, s:o}",
		"kind", "ota.doctor_report/v1", "ota_version", ota_version(), "ready", ready, "problems",
		(json_int_t)d.problems, "warnings", (json_int_t)d.warnings, "machine", "root", d.root,
		"euid", (json_int_t)geteuid(), "runtime", "kind", rtname, "binary", bin, "available",
		d.runtime_ok, "version", d.runtime_version, "namespaces", "ok", d.ns_ok,
		"netns_loopback_only", d.netns_lo_only, "detail", d.ns_detail, "seccomp", d.seccomp,
		"recursive_read_only", d.rro_kernel, "pids_controller", d.pids_controller,
		"enforcing_target_available", d.target_available,
		"descriptor", desc, "leases", leases, "lanes", lanes, "findings", d.findings);
	if (rep == NULL) {
		fprintf(stderr, "ota: out_of_memory\n");
		return CLI_INTERNAL;
	}
	if (o.json)
		cli_print_json(rep);
	else
		print_human(rep);
	json_decref(rep);
	return ready ? CLI_OK : CLI_REFUSED;
}
