/* Rendering of an admitted plan to an OCI runtime config (config.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "oci_internal.h"
#include "ota/json.h"

static json_t *strs(const char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int add_mount(json_t *mounts, const char *dest, const char *type, const char *src,
                     const char *const *opts, size_t nopts)
{
	json_t *m = json_pack("{s:s, s:s, s:s, s:o}", "destination", dest, "type", type, "source",
	                      src, "options", strs(opts, nopts));
	if (m == NULL)
		return -1;
	return json_array_append_new(mounts, m);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static json_t *seccomp_profile(void)
{
	/* Deny-list: everything else is allowed; these give EPERM. It holds
	 * every call Docker's default profile denies a container without
	 * capabilities (its documented table; the NUMA calls, kcmp, the clock
	 * setters and the obsolete ones included), and more (the new mount
	 * API, io_uring, chroot, syslog, vhangup). Calls newer than this list
	 * give ENOSYS by the canary's filter (NEWER_NR in canary.c). A name
	 * the runtime's libseccomp cannot resolve for the native architecture
	 * (vm86, vm86old and stime are i386's only) is skipped by runc and
	 * crun: this host has no i386 entry points to reach them through. */
	static const char *const deny[] = {
		"mount", "umount", "umount2", "pivot_root", "mount_setattr", "open_tree",
		"move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "ptrace",
		"process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
		"io_uring_register", "unshare", "setns", "bpf", "perf_event_open", "userfaultfd",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
		"swapon", "swapoff", "reboot", "acct", "quotactl", "lookup_dcookie", "syslog",
		"iopl", "ioperm", "personality", "vhangup", "chroot",
		"kcmp", "mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages",
		"clock_adjtime", "clock_settime", "settimeofday", "stime", "uselib", "ustat",
		"sysfs", "_sysctl", "nfsservctl", "create_module", "get_kernel_syms",
		"query_module", "vm86", "vm86old",
	};
	struct utsname u;
	const char *arches[3] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
	size_t narch = 3;
	if (uname(&u) == 0 && strcmp(u.machine, "aarch64") == 0) {
		arches[0] = "SCMP_ARCH_AARCH64";
		arches[1] = "SCMP_ARCH_ARM";
		narch = 2;
	}
	json_t *sys = json_array();
	if (sys == NULL)
		return NULL;
	json_array_append_new(sys, json_pack("{s:o, s:s, s:i}", "names", strs(deny, N(deny)),
	                                     "action", "SCMP_ACT_ERRNO", "errnoRet", 1));
	/* AF_VSOCK (40) sockets: a VM host channel outside any netns. */
	static const char *const sock[] = {"socket"};
	json_array_append_new(sys, json_pack("{s:o, s:s, s:i, s:[{s:i, s:i, s:s}]}", "names",
	                                     strs(sock, 1), "action", "SCMP_ACT_ERRNO", "errnoRet", 1,
	                                     "args", "index", 0, "value", 40, "op", "SCMP_CMP_EQ"));
	/* clone(CLONE_NEWUSER): no nested user namespaces. */
	static const char *const clone[] = {"clone"};
	json_array_append_new(sys, json_pack("{s:o, s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}", "names",
	                                     strs(clone, 1), "action", "SCMP_ACT_ERRNO", "errnoRet",
	                                     1, "args", "index", 0, "value", (json_int_t)0x10000000,
	                                     "valueTwo", (json_int_t)0x10000000, "op",
	                                     "SCMP_CMP_MASKED_EQ"));
	/* clone3 cannot be filtered by flags: ENOSYS makes libc fall back to clone. */
	static const char *const clone3[] = {"clone3"};
	json_array_append_new(sys, json_pack("{s:o, s:s, s:i}", "names", strs(clone3, 1), "action",
	                                     "SCMP_ACT_ERRNO", "errnoRet", 38));
	if (json_array_size(sys) != 4) {
		json_decref(sys);
		return NULL;
	}
	return json_pack("{s:s, s:o, s:o}", "defaultAction", "SCMP_ACT_ALLOW", "architectures",
	                 strs(arches, narch), "syscalls", sys);
}

static const char *const default_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"TERM=dumb",
};

ota_err ota_oci_render(const ota_oci_plan *plan, const ota_oci_admitted *a,
                       ota_oci_runtime_kind kind, const char *canary, json_t **config_out,
                       ota_error *err)
{
	*config_out = NULL;
	(void)kind; /* runc and crun take the same config here */
	static const char *const caps_none[] = {NULL};
	json_t *caps = json_pack("{s:o, s:o, s:o, s:o, s:o}", "bounding", strs(caps_none, 0),
	                         "effective", strs(caps_none, 0), "inheritable", strs(caps_none, 0),
	                         "permitted", strs(caps_none, 0), "ambient", strs(caps_none, 0));
	json_t *env = plan->n_env > 0 ? strs(plan->env, plan->n_env) : strs(default_env, N(default_env));
	json_t *process = json_pack(
		"{s:b, s:{s:I, s:I}, s:o, s:o, s:s, s:o, s:b, s:[{s:s, s:I, s:I}]}", "terminal", 0,
		"user", "uid", (json_int_t)plan->uid, "gid", (json_int_t)plan->gid, "args",
		strs(plan->argv, plan->argc), "env", env, "cwd",
		plan->cwd != NULL ? plan->cwd : "/workspace", "capabilities", caps,
		"noNewPrivileges", 1, "rlimits", "type", "RLIMIT_NOFILE", "hard", (json_int_t)4096,
		"soft", (json_int_t)4096);
	json_t *mounts = json_array();
	json_t *cfg = NULL;
	if (process == NULL || mounts == NULL)
		goto out_nomem;

	static const char *const o_proc[] = {"nosuid", "noexec", "nodev"};
	static const char *const o_dev[] = {"nosuid", "strictatime", "mode=755", "size=65536k"};
	static const char *const o_pts[] = {"nosuid", "noexec", "newinstance", "ptmxmode=0666",
	                                    "mode=0620"};
	static const char *const o_shm[] = {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"};
	static const char *const o_mq[] = {"nosuid", "noexec", "nodev"};
	static const char *const o_sys[] = {"nosuid", "noexec", "nodev", "ro"};
	static const char *const o_tmp[] = {"nosuid", "nodev", "mode=1777", "size=262144k"};
	/* rro, rnosuid, rnodev: mount_setattr(AT_RECURSIVE), so a host mount
	 * nested in the repository or a protected directory is read-only,
	 * nosuid and nodev as well (the plain options reach the top mount
	 * only: a device node on such a mount opened for the task) */
	static const char *const o_repo_ro[] = {"rbind", "rro", "nosuid", "nodev", "rnosuid", "rnodev",
	                                       "rprivate"};
	static const char *const o_repo_rw[] = {"bind", "rw", "nosuid", "nodev", "rprivate"};
	static const char *const o_carve[] = {"bind", "rw", "nosuid", "nodev", "rprivate"};
	static const char *const o_prot_dir[] = {"rbind", "rro", "nosuid", "nodev", "rnosuid", "rnodev",
	                                        "rprivate"};
	static const char *const o_prot_file[] = {"bind", "ro", "nosuid", "nodev", "rprivate"};
	static const char *const o_canary[] = {"bind", "ro", "nosuid", "nodev", "rprivate"};
	if (add_mount(mounts, "/proc", "proc", "proc", o_proc, N(o_proc)) ||
	    add_mount(mounts, "/dev", "tmpfs", "tmpfs", o_dev, N(o_dev)) ||
	    add_mount(mounts, "/dev/pts", "devpts", "devpts", o_pts, N(o_pts)) ||
	    add_mount(mounts, "/dev/shm", "tmpfs", "shm", o_shm, N(o_shm)) ||
	    add_mount(mounts, "/dev/mqueue", "mqueue", "mqueue", o_mq, N(o_mq)) ||
	    add_mount(mounts, "/sys", "sysfs", "sysfs", o_sys, N(o_sys)) ||
	    add_mount(mounts, "/tmp", "tmpfs", "tmpfs", o_tmp, N(o_tmp)))
		goto out_nomem;
	/* Repository, then carve-outs (shallow first), then protected paths,
	 * so a protected path under a carve-out is mounted last and wins. */
	if (a->repo_writable ? add_mount(mounts, "/workspace", "bind", a->repo, o_repo_rw, N(o_repo_rw))
	                     : add_mount(mounts, "/workspace", "bind", a->repo, o_repo_ro, N(o_repo_ro)))
		goto out_nomem;
	/* carve-outs and pins (the directories above protected paths under a
	 * writable mount, bound over themselves so that they cannot be
	 * renamed: oci_pin_parents), one list, shallow first: a pin below a
	 * carve-out comes after it, a carve-out below a pin after the pin */
	size_t nrw = a->n_writable + a->n_pins;
	const oci_path **order = calloc(nrw + 1, sizeof *order);
	if (order == NULL)
		goto out_nomem;
	for (size_t i = 0; i < a->n_writable; i++)
		order[i] = &a->writable[i];
	for (size_t i = 0; i < a->n_pins; i++)
		order[a->n_writable + i] = &a->pins[i];
	for (size_t i = 1; i < nrw; i++)
		for (size_t j = i; j > 0 && strlen(order[j - 1]->rel) > strlen(order[j]->rel); j--) {
			const oci_path *t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < nrw; i++) {
		const oci_path *p = order[i];
		if (add_mount(mounts, p->dest, "bind", p->host, o_carve, N(o_carve))) {
			free(order);
			goto out_nomem;
		}
	}
	free(order);
	for (size_t i = 0; i < a->n_prot; i++) {
		const oci_path *p = &a->prot[i];
		if (!p->exists)
			continue; /* under a read-only parent: cannot be created */
		if (p->is_dir ? add_mount(mounts, p->dest, "bind", p->host, o_prot_dir, N(o_prot_dir))
		              : add_mount(mounts, p->dest, "bind", p->host, o_prot_file, N(o_prot_file)))
			goto out_nomem;
	}
	if (canary != NULL &&
	    add_mount(mounts, OTA_OCI_CANARY_DEST, "bind", canary, o_canary, N(o_canary)))
		goto out_nomem;

	static const char *const masked[] = {
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	};
	static const char *const ro_paths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
	                                       "/proc/sysrq-trigger"};
	json_t *seccomp = seccomp_profile();
	if (seccomp == NULL)
		goto out_nomem;
	/* Fresh namespaces, none joined: pid, network (only its own lo), ipc,
	 * uts, mount, and cgroup (/proc/self/cgroup shows "/" instead of the
	 * host's cgroup paths; there is no cgroup mount to scope). */
	json_t *linux_ = json_pack(
		"{s:[{s:s},{s:s},{s:s},{s:s},{s:s},{s:s}], s:o, s:o, s:s, s:o}", "namespaces", "type",
		"pid", "type", "network", "type", "ipc", "type", "uts", "type", "mount", "type", "cgroup",
		"maskedPaths",
		strs(masked, N(masked)), "readonlyPaths", strs(ro_paths, N(ro_paths)),
		"rootfsPropagation", "rprivate", "seccomp", seccomp);
	if (linux_ == NULL)
		goto out_nomem;
	cfg = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o}", "ociVersion", "1.0.2", "process",
	                process, "root", "path", a->rootfs, "readonly", 1, "hostname", "ota-sandbox",
	                "mounts", mounts, "linux", linux_);
	process = NULL;
	mounts = NULL;
	if (cfg == NULL)
		goto out_nomem;
	*config_out = cfg;
	return OTA_OK;
out_nomem:
	json_decref(process);
	json_decref(mounts);
	return ota_error_set(err, OTA_ERR_NOMEM, "render", "out of memory");
}

ota_err ota_oci_render_limits(json_t *config, const ota_oci_run_opts *o,
                              ota_oci_runtime_kind kind, ota_oci_limits *out, ota_error *err)
{
	out->pids = 0;
	out->memory_bytes = 0;
	int64_t p = o->pids_limit, m = o->memory_limit_bytes;
	if (p != 0 && p != -1 && (p < OTA_OCI_PIDS_LIMIT_MIN || p > OTA_OCI_PIDS_LIMIT_MAX))
		return ota_error_set(err, OTA_ERR_USAGE, "pids_limit",
		                     "a process-count limit is %d to %d (-1: none, 0: the default)",
		                     OTA_OCI_PIDS_LIMIT_MIN, OTA_OCI_PIDS_LIMIT_MAX);
	if (m != 0 && (m < OTA_OCI_MEMORY_LIMIT_MIN || m > OTA_OCI_MEMORY_LIMIT_MAX || m % 4096 != 0))
		return ota_error_set(err, OTA_ERR_USAGE, "memory_limit_bytes",
		                     "a memory limit is a multiple of 4096 bytes from 4 MiB to 1 TiB "
		                     "(0: none)");
	if (kind == OTA_OCI_CRUN) {
		/* --cgroup-manager=disabled: the container stays in the runner's
		 * cgroups and nothing would hold a limit; the default is none */
		if (p > 0 || m > 0)
			return ota_error_set(err, OTA_ERR_OCI_LIMIT_UNSUPPORTED,
			                     p > 0 ? "pids_limit" : "memory_limit_bytes",
			                     "crun runs with --cgroup-manager=disabled here and applies no "
			                     "resource limit; use runc");
		return OTA_OK;
	}
	out->pids = p == 0 ? OTA_OCI_DEFAULT_PIDS_LIMIT : p > 0 ? p : 0;
	out->memory_bytes = m;
	if (out->pids == 0 && out->memory_bytes == 0)
		return OTA_OK;
	json_t *lin = json_object_get(config, "linux");
	json_t *res = json_is_object(lin) ? json_object() : NULL;
	if (res == NULL ||
	    (out->pids > 0 &&
	     json_object_set_new(res, "pids", json_pack("{s:I}", "limit", (json_int_t)out->pids))) ||
	    (out->memory_bytes > 0 &&
	     json_object_set_new(res, "memory",
	                         json_pack("{s:I}", "limit", (json_int_t)out->memory_bytes))) ||
	    json_object_set_new(lin, "resources", json_incref(res))) {
		json_decref(res);
		out->pids = out->memory_bytes = 0;
		return ota_error_set(err, OTA_ERR_NOMEM, "render", "out of memory");
	}
	json_decref(res);
	return OTA_OK;
}

ota_err ota_oci_rendered_policy(const ota_oci_plan *plan, const json_t *config,
                                ota_oci_runtime_kind kind, json_t **out, ota_error *err)
{
	*out = NULL;
	char id[OTA_ID_LEN + 1];
	ota_err rc = ota_jcs_identity(config, id, err);
	if (rc != OTA_OK)
		return rc;
	*out = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:O}", "kind", "ota.rendered_policy/v1",
	                 "provider", "oci_local", "runtime", oci_rt_name(kind), "segment",
	                 plan->segment_id, "config_identity", id, "config", config);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

const char *oci_rt_name(ota_oci_runtime_kind kind)
{
	return kind == OTA_OCI_CRUN ? "crun" : "runc";
}

json_t *ota_oci_capability_descriptor(ota_oci_runtime_kind kind)
{
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}}", "kind",
		"ota.capability_descriptor/v1", "provider", "oci_local", "runtime", oci_rt_name(kind),
		"adapter_version", ota_version(), "controls", "filesystem.repo_root_mode", "enforced",
		"filesystem.writable_paths", "enforced", "filesystem.protected_paths", "enforced",
		"network.default_deny", "enforced", "network.target_allowlist", "unsupported",
		"network.destination_constraints", "unsupported", "secrets", "unsupported",
		"process_isolation", "enforced", "cleanup_and_interruption", "enforced");
}
