/*
 * ota/oci.h - oci_local: the reference OCI provider (DESIGN.md section 8).
 *
 * A segment plan (plain data, filled by the runner from the effective
 * segment policy) is admitted (path canonicalization with openat2, alias and
 * socket refusal), rendered to an OCI runtime config.json, applied with a
 * real runtime (runc or crun, through its CLI), witnessed from the host
 * (mountinfo, network namespace, process status) and by runner-owned canaries
 * inside the same container, started, waited for, inspected at the end,
 * deleted and confirmed gone. A durable cleanup lease (sqlite) is recorded
 * before the first mutation, so interrupted runs are finalized later.
 *
 * Ownership: every pointer inside ota_oci_plan and the option structs is
 * borrowed for the duration of the call. json_t results are new references.
 * Nothing here prints or exits; task output goes to the on_output callback.
 */
#ifndef OTA_OCI_H
#define OTA_OCI_H

#include <jansson.h>
#include <signal.h>

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Network posture of a segment. Both mean a fresh network namespace holding
 * only its own loopback ("external IP networking denied"); the runtime brings
 * lo up, and loopback is local to the namespace, never claimed absent. */
typedef enum ota_oci_net {
	OTA_OCI_NET_LOOPBACK_ONLY = 0,
	OTA_OCI_NET_NONE = 1,
} ota_oci_net;

typedef enum ota_oci_runtime_kind {
	OTA_OCI_RUNC = 0,
	OTA_OCI_CRUN = 1,
} ota_oci_runtime_kind;

/* Target platform, as in the contract's container.platform ("linux/amd64"). */
typedef struct ota_oci_platform {
	const char *os;           /* "linux" */
	const char *architecture; /* "amd64", "arm64", ... */
	const char *variant;      /* NULL or "" when none */
} ota_oci_platform;

/*
 * One segment's application plan. Paths in writable/protected are relative
 * to repo ("reports", ".github/workflows"), normalized or not: admission
 * normalizes them and refuses "..", absolute paths and symlink components.
 */
typedef struct ota_oci_plan {
	const char *segment_id;         /* for evidence; may be NULL */
	const char *repo;               /* absolute host path; mounted at /workspace */
	bool repo_writable;             /* repo_root_mode: writable (protected paths stay ro) */
	const char *const *writable;    /* carve-outs, relative to repo */
	size_t n_writable;
	const char *const *protected_paths; /* read-only even under a writable parent */
	size_t n_protected;
	ota_oci_net network;
	const char *rootfs;             /* host path of the root filesystem (mounted ro) */
	const char *const *argv;        /* task argv (argv[0] resolved inside the rootfs PATH) */
	size_t argc;
	const char *const *env;         /* "K=V"; NULL/0: a minimal PATH/HOME/TERM environment */
	size_t n_env;
	const char *cwd;                /* inside the container; NULL: /workspace */
	int64_t timeout_seconds;        /* 0: no timeout */
	uint32_t uid, gid;              /* task identity inside the container */
	ota_oci_platform platform;      /* declared platform (os NULL: host platform) */
} ota_oci_plan;

/* ---- admission: canonicalization and preflight ---- */

/* An admitted plan: canonical paths, pinned identities (dev, ino) of every
 * bound object, the host-mount survey. Opaque; ota_oci_admitted_free(NULL) ok. */
typedef struct ota_oci_admitted ota_oci_admitted;

/*
 * Canonicalizes and admits plan: repo and rootfs are realpath'd directories;
 * each writable and protected path is resolved beneath the repo with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, and RESOLVE_NO_XDEV for writable
 * paths); writable paths must exist; protected paths missing under a
 * writable parent are refused; host mounts nested under a writable path,
 * regular files with more than one link under a writable path, socket files
 * anywhere in the repo or rootfs, and a repo containing runtime state or
 * control sockets are refused. runtime_root (may be NULL) is the runtime's
 * state directory, which must not be inside the boundary. *out is new.
 * Errors: oci_plan_invalid, oci_path_escape, oci_path_symlink,
 * oci_path_missing, oci_mount_alias, oci_hardlink_alias, oci_runtime_socket,
 * oci_protected_undefendable, oci_writable_outside_repo, oci_scan_limit,
 * io_error, out_of_memory.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_admit(const ota_oci_plan *plan, const char *runtime_root,
                                            ota_oci_admitted **out, ota_error *err);

/* Options of ota_oci_admit_with. Zero-initialise; members are only ever
 * added at the end. */
typedef struct ota_oci_admit_opts {
	const char *runtime_root; /* as ota_oci_admit's (may be NULL) */
	/* Set (to non-zero) by the caller's SIGINT/SIGTERM handler; borrowed;
	 * may be NULL. The scan of the repo and rootfs (up to
	 * OTA_OCI_MAX_SCAN_ENTRIES entries) checks it at every entry. */
	volatile sig_atomic_t *cancel;
} ota_oci_admit_opts;

/*
 * ota_oci_admit with options (opts NULL: all zero). When *opts->cancel
 * becomes non-zero, admission stops at the next scanned entry and returns
 * oci_interrupted (*out NULL): nothing was admitted, nothing is prepared.
 * ota_oci_run admits through this with its own cancel flag. Errors: those
 * of ota_oci_admit and oci_interrupted.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_admit_with(const ota_oci_plan *plan,
                                                 const ota_oci_admit_opts *opts,
                                                 ota_oci_admitted **out, ota_error *err);
OTA_API void ota_oci_admitted_free(ota_oci_admitted *a);

/* Canonical repo path of an admitted plan (points into a). */
OTA_API const char *ota_oci_admitted_repo(const ota_oci_admitted *a);

/* ---- rendering ---- */

/* Destination of the runner-owned canary binary inside the container. */
#define OTA_OCI_CANARY_DEST "/dev/.ota-canary"

/*
 * Renders the OCI runtime config (config.json) of an admitted plan for the
 * given runtime: read-only rootfs, repo at /workspace (rbind + rro), carve-outs
 * as rw binds above it, protected paths as ro binds over themselves (after the
 * carve-outs), fresh pid, network, ipc, uts, mount and cgroup namespaces
 * (none joined), no capabilities, no_new_privs, a seccomp deny-list (mount
 * family, ptrace, namespaces, bpf, io_uring, AF_VSOCK ...), masked and
 * read-only /proc paths, rprivate propagation.
 * canary (may be NULL) is the host path of the static canary binary bound
 * read-only at OTA_OCI_CANARY_DEST. *config_out is new.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_render(const ota_oci_plan *plan, const ota_oci_admitted *a,
                                             ota_oci_runtime_kind kind, const char *canary,
                                             json_t **config_out, ota_error *err);

/*
 * The rendered-policy evidence: {"kind":"ota.rendered_policy/v1", runtime,
 * segment, config_identity (sha256 of the exact JCS config), config}.
 * *out is new.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_rendered_policy(const ota_oci_plan *plan, const json_t *config,
                                                      ota_oci_runtime_kind kind, json_t **out,
                                                      ota_error *err);

/* ---- host-side inspection (exposed for tests and the verifier) ---- */

/*
 * Checks a container's mountinfo (the bytes of /proc/PID/mountinfo) against
 * the admitted plan: "/" read-only; every mount at or below /workspace
 * read-only except the declared carve-outs (which must be rw and present);
 * protected paths present and read-only; no mount carrying shared:/master:
 * propagation; every other writable mount is one of the container-private
 * kinds (tmpfs /dev, /dev/shm, /tmp; devpts; mqueue; masked /dev/null binds);
 * no cgroup or cgroup2 file system (none is rendered). *report is new:
 * {"mounts": [...], "ok": true}. Errors: oci_mount_unexpected,
 * oci_mount_missing, too_large.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_check_mountinfo(const ota_oci_admitted *a, ota_bytes mountinfo,
                                                      json_t **report, ota_error *err);

/*
 * Checks a network namespace from the bytes of /proc/PID/net/dev,
 * /proc/PID/net/route and /proc/PID/net/ipv6_route: only "lo"; no IPv4
 * route in the main table; every IPv6 route on lo. *report is new.
 * Error: oci_network_unexpected.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_check_netns(ota_bytes dev, ota_bytes route, ota_bytes route6,
                                                  json_t **report, ota_error *err);

/* ---- images and platform ---- */

/* Default locations (overridable by every caller). */
#define OTA_OCI_DEFAULT_IMAGE_STORE  "/var/lib/ota/images"
#define OTA_OCI_DEFAULT_ROOTFS_CACHE "/var/cache/ota/rootfs"
#define OTA_OCI_DEFAULT_LEASE_DB     "/var/lib/ota/leases.db"
#define OTA_OCI_DEFAULT_STATE_DIR    "/run/ota"

/*
 * Lists the image names (ref.name annotations) of the OCI layout store as a
 * JSON array of {"name", "digest"} (new). Error: oci_image_not_found.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_image_list(const char *store, json_t **out, ota_error *err);

/* The host platform ("linux", "amd64", variant or ""), from uname. */
OTA_API void ota_oci_host_platform(char os[16], char arch[16], char variant[16]);

/*
 * Parses "os/arch[/variant]" into the three strings (each < 16 bytes).
 * Error: oci_plan_invalid.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_platform_parse(const char *s, char os[16], char arch[16],
                                                     char variant[16], ota_error *err);

/*
 * Imports an image into the OCI image layout store `store` under `name`
 * (a reference "name:tag"), with skopeo copy from src, a transport-qualified
 * source ("docker-archive:PATH", "oci-archive:PATH", "oci:DIR[:REF]").
 * Errors: oci_image_tool_failed, usage.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_image_import(const char *store, const char *src,
                                                   const char *name, ota_error *err);

/*
 * Resolves image `name` in store, checks that the image config's
 * os/architecture/variant equal the declared platform (NULL: the host's)
 * and the host's, and unpacks it with umoci (once; cached by manifest
 * digest under cache_dir) into a root filesystem. *rootfs_out is new (the
 * rootfs path); *evidence_out (may be NULL) new: the platform check record
 * {"kind":"ota.platform_check/v1", image, manifest, declared, image_platform,
 * host, ok}. An image whose config declares volumes is refused
 * (oci_policy_unsupported, where "image.volumes"). Errors:
 * oci_image_not_found, oci_platform_mismatch, oci_policy_unsupported,
 * oci_image_tool_failed, identity_mismatch (a blob not matching its
 * digest), io_error.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_image_resolve(const char *store, const char *name,
                                                    const ota_oci_platform *declared,
                                                    const char *cache_dir, char **rootfs_out,
                                                    json_t **evidence_out, ota_error *err);

/* ---- the whole run ---- */

typedef enum ota_oci_terminal {
	OTA_OCI_ENFORCED_THROUGH_COMPLETION = 0,
	OTA_OCI_ENFORCEMENT_LOST = 1,
	OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION = 2,
	OTA_OCI_NOT_STARTED = 3,
	OTA_OCI_REFUSED = 4,
} ota_oci_terminal;

/* "enforced_through_completion", ...; never NULL. */
OTA_API const char *ota_oci_terminal_name(ota_oci_terminal t);

typedef struct ota_oci_runtime_opts {
	ota_oci_runtime_kind kind;
	const char *binary; /* NULL: "runc" / "crun" from PATH */
	const char *root;   /* runtime --root; NULL: /run/ota/runc or /run/ota/crun */
	const char *version; /* for evidence; NULL: queried with --version on each run */
} ota_oci_runtime_opts;

/*
 * First line of `RUNTIME --version` into out (cap bytes; "" when unknown),
 * for callers that run several segments and record it once.
 */
OTA_API void ota_oci_runtime_version(const ota_oci_runtime_opts *o, char *out, size_t cap);
/* The same, ended ("" then) when *cancel (may be NULL) becomes non-zero
 * (the caller's SIGINT/SIGTERM flag) as well as at its deadline
 * (OTA_OCI_RT_TIMEOUT_QUICK). */
OTA_API void ota_oci_runtime_version_cancel(const ota_oci_runtime_opts *o,
                                            volatile sig_atomic_t *cancel, char *out, size_t cap);

typedef struct ota_oci_run_opts {
	ota_oci_runtime_opts runtime;
	const char *state_dir; /* bundles under <state_dir>/bundles; NULL: /run/ota
	                        * (OTA_OCI_DEFAULT_STATE_DIR) */
	const char *lease_db;  /* sqlite file; NULL: /var/lib/ota/leases.db */
	/*
	 * The runner's own files the task must not reach (borrowed; may be
	 * NULL/0): its signing key, its nonce database. Each, the lease
	 * database and the state directory are resolved (symlinks followed, a
	 * missing tail by its existing ancestor) and refused when they lie in
	 * the repository (readable at /workspace, carve-outs writable) or the
	 * root filesystem: oci_runtime_socket, before anything is prepared.
	 */
	const char *const *private_paths;
	size_t n_private_paths;
	const char *canary;    /* host path of the static canary; NULL: the built/installed one */
	const char *txn;       /* runner transaction id (bound into evidence); may be NULL */
	ota_clock clock;       /* clock.now NULL: system clock */
	/* Set (to non-zero) by the caller's SIGINT/SIGTERM handler; borrowed. */
	volatile sig_atomic_t *cancel;
	/* Task output (fd 1 or 2) as it arrives. NULL: discarded. */
	void (*on_output)(void *ctx, int fd, const uint8_t *p, size_t n);
	void *output_ctx;
	/* Called after admission and the lease, right before the runtime creates
	 * the container (tests simulate a TOCTOU swap here). NULL: none. */
	void (*before_create)(void *ctx);
	void *before_create_ctx;
	/* Called with the initial application and applied-policy records
	 * (borrowed) after inspection and canaries, before the task starts
	 * (the runner signs them here; the canary waits for the go meanwhile).
	 * A non-OK return refuses the run: the canary exits, the task never
	 * runs. */
	ota_err (*on_initial)(void *ctx, const json_t *initial, const json_t *applied,
	                      ota_error *err);
	void *on_initial_ctx;
	/* Optional: called once with the final terminal record (borrowed; it
	 * stays unchanged until ota_oci_result_clear) just before the lease's
	 * terminal commit, so the caller can sign it while that commit runs
	 * (it must not rely on the lease's terminal state, which is committed
	 * after). Not called when no terminal record could be built. */
	void (*on_terminal)(void *ctx, const json_t *terminal);
	void *on_terminal_ctx;
	/*
	 * Deadline of every runtime command, in seconds (1..3600); 0: each
	 * command's default (OTA_OCI_RT_TIMEOUT_*). A command still running at
	 * its deadline is killed with its process group (SIGKILL) and is
	 * oci_runtime_timeout (where = the command); a forward command (run,
	 * create, start, exec) still running when *cancel becomes non-zero is
	 * killed the same way and is oci_interrupted. Cleanup commands (state,
	 * kill, delete) are bounded by their deadline only, so that an
	 * interrupted run still tries to remove its container.
	 */
	int runtime_timeout_seconds;
	/*
	 * Resource limits of the container, rendered as linux.resources and
	 * applied by runc through its cgroups (crun runs here with
	 * --cgroup-manager=disabled and applies none). pids_limit: 0 the
	 * default (OTA_OCI_DEFAULT_PIDS_LIMIT under runc, none under crun), -1
	 * none, else OTA_OCI_PIDS_LIMIT_MIN..OTA_OCI_PIDS_LIMIT_MAX.
	 * memory_limit_bytes: 0 none, else a multiple of 4096 in
	 * OTA_OCI_MEMORY_LIMIT_MIN..OTA_OCI_MEMORY_LIMIT_MAX. Out of range is
	 * usage; an explicit limit (pids_limit > 0, memory_limit_bytes > 0)
	 * under crun is oci_limit_unsupported, before anything is prepared.
	 * Under runc the container's cgroup is read back before the start and
	 * a limit it does not hold is oci_limit_not_applied (refused, the task
	 * never runs).
	 */
	int64_t pids_limit;
	int64_t memory_limit_bytes;
} ota_oci_run_opts;

#define OTA_OCI_DEFAULT_PIDS_LIMIT 4096
#define OTA_OCI_PIDS_LIMIT_MIN 16 /* runc's init and the canary need a few */
#define OTA_OCI_PIDS_LIMIT_MAX 4194304 /* PID_MAX_LIMIT */
#define OTA_OCI_MEMORY_LIMIT_MIN (4LL * 1024 * 1024)
#define OTA_OCI_MEMORY_LIMIT_MAX (1LL << 40)

/* The limits a run renders (0: none), from ota_oci_render_limits. */
typedef struct ota_oci_limits {
	int64_t pids;
	int64_t memory_bytes;
} ota_oci_limits;

/*
 * Resolves o's limits for kind into *out and, under runc, adds them to
 * the rendered config (linux.resources.pids.limit,
 * linux.resources.memory.limit; nothing when both are none). Errors:
 * usage (out of range, where pids_limit or memory_limit_bytes),
 * oci_limit_unsupported (an explicit limit under crun).
 */
OTA_API OTA_NODISCARD ota_err ota_oci_render_limits(json_t *config, const ota_oci_run_opts *o,
                                                    ota_oci_runtime_kind kind,
                                                    ota_oci_limits *out, ota_error *err);

/* Default deadlines of the runtime's commands, in seconds. */
#define OTA_OCI_RT_TIMEOUT_CREATE 60  /* run --detach, create */
#define OTA_OCI_RT_TIMEOUT_START 30   /* start, exec */
#define OTA_OCI_RT_TIMEOUT_DELETE 30  /* delete, delete --force */
#define OTA_OCI_RT_TIMEOUT_QUICK 10   /* state, kill, --version */
#define OTA_OCI_RT_TIMEOUT_MAX 3600   /* the largest runtime_timeout_seconds */

typedef struct ota_oci_result {
	ota_oci_terminal terminal;
	bool started;          /* the task process was started */
	bool timed_out;
	bool interrupted;
	int exit_status;       /* exit code, or 128+signal; -1 when not started */
	char container_id[40];
	json_t *rendered;      /* ota.rendered_policy/v1 (new or NULL) */
	json_t *applied;       /* ota.applied_policy/v1 */
	json_t *initial;       /* ota.application/v1 phase initial */
	json_t *terminal_record; /* ota.application/v1 phase terminal (always set on return) */
	/* cleanup records (phase cleanup, as ota_oci_cleanup reports them) of
	 * dead runners' leases finalized before this one was taken; NULL: none */
	json_t *finalized_orphans;
} ota_oci_result;

/* Releases the json members and zeroes r. NULL ok. */
OTA_API void ota_oci_result_clear(ota_oci_result *r);

/*
 * The handshake and lifetime of one segment: admit, lease (durable, before
 * the first mutation), render, create (`run --detach` of the container whose
 * process is the runner's canary, held at its first gate), inspect from the
 * host (mountinfo, netns, process, identities of bound objects), start (the
 * canary's checks in the container's own process, reported on a pipe only
 * the host reads), on_initial, the go (the canary execs the task in place),
 * wait (output streamed, timeout and cancel enforced), terminal inspection,
 * delete, confirm the runtime forgot the id (its state directory is gone and
 * the init pid is gone), finalize the lease (docs/oci-local.md).
 * Returns OTA_OK when the task ran under enforcement (whatever its exit
 * status; see out->exit_status, out->timed_out); otherwise the refusal or
 * failure, with out->terminal and out->terminal_record still filled (the
 * lease is finalized in every case it was taken).
 *
 * Process-wide effects: the calling process becomes a child subreaper
 * (PR_SET_CHILD_SUBREAPER) so that it reaps the container's init itself and
 * learns its exit status; runtime commands are its children and die with it
 * (PR_SET_PDEATHSIG). Call from a single-threaded process or one thread;
 * internally one short-lived thread (all signals blocked) commits the lease's
 * "started" phase while the container is inspected, joined before the go.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_run(const ota_oci_plan *plan, const ota_oci_run_opts *opts,
                                          ota_oci_result *out, ota_error *err);

/*
 * Finalizes orphaned leases (runner gone, e.g. after SIGKILL): kills and
 * deletes their containers, confirms the runtime forgot them, removes their
 * bundles, and records enforcement_unknown_after_interruption (started) or
 * not_started. Leases of live runners are left alone.
 *
 * A lease row is data, not instructions: a row is acted upon only when
 * its container id has the form ota_oci_run makes ("ota-" and 24
 * lowercase hex digits), its runtime is runc or crun, its bundle is
 * exactly STATE/bundles/ID of opts->state_dir (NULL: /run/ota), and its
 * runtime binary and root are exactly what opts->runtime gives that
 * runtime (for the other runtime kind: its default binary from PATH and
 * root). The runtime run is always the configured one, and the bundle is
 * removed beneath the state directory without following a symlink. Any
 * other row is not acted upon: it is listed under "untrusted", stays open,
 * and the result is oci_lease_untrusted (unless another error came first).
 *
 * *report (may be NULL) new: {"kind":"ota.cleanup_report/v1",
 * "finalized":[...], "untrusted":[...], "skipped_live":N}. Errors:
 * oci_lease_untrusted, oci_cleanup_unconfirmed, oci_lease_error,
 * oci_runtime_missing, oci_runtime_failed.
 */
OTA_API OTA_NODISCARD ota_err ota_oci_cleanup(const ota_oci_run_opts *opts, json_t **report,
                                              ota_error *err);

/*
 * The start time of process pid (clock ticks since boot: field 22 of
 * /proc/PID/stat, parsed as untrusted text by oci_proc_stat_parse), as a
 * lease records its runner's ("runner_start" is this number in decimal);
 * 0 when the process is gone or its stat does not parse.
 */
OTA_API unsigned long long ota_oci_proc_start_time(long pid);

/* Lists leases (all, or only open ones) as a JSON array (new). */
OTA_API OTA_NODISCARD ota_err ota_oci_lease_list(const char *lease_db, bool open_only,
                                                 json_t **out, ota_error *err);

/* Capability descriptor of oci_local (ota.capability_descriptor/v1), new. */
OTA_API json_t *ota_oci_capability_descriptor(ota_oci_runtime_kind kind);

#ifdef __cplusplus
}
#endif
#endif
