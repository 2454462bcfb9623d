/* provider-oci internals: shared between admit, render, inspect, driver, lease. */
#ifndef OTA_OCI_INTERNAL_H
#define OTA_OCI_INTERNAL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "ota/oci.h"

/* One declared path of an admitted plan. */
typedef struct oci_path {
	char *rel;   /* normalized, relative to the repo ("a/b") */
	char *host;  /* repo + "/" + rel */
	char *dest;  /* "/workspace/" + rel */
	bool exists;
	bool is_dir;
	dev_t dev;
	ino_t ino;
} oci_path;

struct ota_oci_admitted {
	char *repo;
	dev_t repo_dev;
	ino_t repo_ino;
	int repo_fd; /* O_PATH descriptor of repo (its dev and ino), -1 when none */
	char *rootfs;
	bool repo_writable;
	oci_path *writable;
	size_t n_writable;
	oci_path *prot;
	size_t n_prot;
	/* pins: each directory strictly between a protected path and the
	 * writable mount above it (a carve-out, or the repository when
	 * writable), bound read-write over itself so that it is a mount point
	 * the task cannot rename: Linux refuses to rename a mount point but
	 * not its parent, and moving the parent would move the protected
	 * mount away and let the task put its own file at the protected path
	 * (oci_pin_parents; shallow first) */
	oci_path *pins;
	size_t n_pins;
	size_t scanned_entries;
};

/* A parsed mountinfo line (strings point into a private copy). */
typedef struct oci_mount {
	char *root;
	char *point;
	char *opts;     /* per-mount options */
	char *optional; /* optional fields joined by ' ', may be "" */
	char *fstype;
	char *source;
	char *super;    /* super options (after the source), may be "" */
	unsigned major, minor;
} oci_mount;

/* Parses mountinfo text; *out new array of *n (free with oci_mounts_free). */
ota_err oci_mountinfo_parse(ota_bytes text, char **buf_out, oci_mount **out, size_t *n,
                            ota_error *err);
/* true when the comma-separated opts list holds word. */
bool oci_opts_has(const char *opts, const char *word);
/* true when p equals dir or lies below it (component-wise). */
bool oci_path_within(const char *p, const char *dir);

/* openat2(2) through syscall(2); *how has flags and resolve. */
int oci_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve);

/*
 * Fingerprint (sha256 hex of stat fields and contents) of the protected
 * path rel (normalised, relative) of the repository whose descriptor is
 * repo_fd (borrowed), resolved beneath it without following any symlink:
 * "absent" when missing, a digest no content can have when a symlink (or
 * a non-directory) is on its path now. Stops when *cancel (may be NULL)
 * becomes non-zero: oci_interrupted, out "".
 */
ota_err oci_fingerprint(int repo_fd, const char *rel, volatile sig_atomic_t *cancel, char out[65],
                        ota_error *err);

/*
 * The runner's own files (o's lease database, state directory and
 * private_paths) must lie outside a's repository and root filesystem,
 * where the task would read them (a signing key) or write them (a
 * carve-out): oci_runtime_socket (where = the path as given) otherwise.
 */
ota_err oci_admit_private(const ota_oci_admitted *a, const ota_oci_run_opts *o, ota_error *err);

/* ---- runtime CLI driver ---- */
typedef struct oci_rt {
	ota_oci_runtime_kind kind;
	char bin[256];
	char root[512];
	dev_t root_dev; /* the root oci_rt_init checked: every runtime command */
	ino_t root_ino; /* is run only while root still stat()s to it */
	/* 0: each command's default deadline (oci_rt_deadline_seconds); else
	 * every command's, in seconds. Set by the caller after oci_rt_init. */
	int timeout_seconds;
	/* The caller's SIGINT/SIGTERM flag (may be NULL): a forward command
	 * (run, create, start, exec, --version) still running when it becomes
	 * non-zero is killed and is oci_interrupted. */
	volatile sig_atomic_t *cancel;
} oci_rt;

/* The deadline of the runtime command args[0] under rt, in seconds. */
int oci_rt_deadline_seconds(const oci_rt *rt, const char *cmd);

/*
 * The runtime of o: its binary (found in PATH) and root (o->root, default
 * /run/ota/runc or /run/ota/crun). The root is opened component by
 * component by oci_dir_walk (no symlink followed, missing components made
 * 0700) and must be a directory owned by root (by root or the caller when
 * not root) that neither group nor others may write. Errors:
 * oci_runtime_missing, usage (not absolute, too long),
 * oci_runtime_dir_unsafe (where = the offending component), io_error.
 */
ota_err oci_rt_init(oci_rt *rt, const ota_oci_runtime_opts *o, ota_error *err);
/*
 * Opens the directory path (absolute, or relative to the working
 * directory) beneath descriptors, one component at a time, each with
 * O_DIRECTORY | O_NOFOLLOW: a symlink anywhere in the path is never
 * followed. With create, a missing component is made with mkdirat(0700).
 * Repeated and trailing slashes are ignored ("." and ".." are entries
 * like any other, never symlinks). *fd is new (O_RDONLY | O_DIRECTORY), -1 on failure. Errors:
 * oci_runtime_dir_unsafe (a component is a symlink or not a directory;
 * where = the path up to it), not_found (without create), usage, io_error.
 * Only the path's shape is checked: owners and modes are the caller's.
 */
ota_err oci_dir_walk(const char *path, bool create, int *fd, ota_error *err);
const char *oci_rt_name(ota_oci_runtime_kind kind);
/*
 * Runs the runtime with args (NULL-terminated, without binary and --root).
 * stdin_fd/out_fd/err_fd: -1 = /dev/null (out/err captured into cap_out/cap_err
 * when those are non-NULL). *status: exit code (or 128+sig). The command
 * runs in its own process group, under the deadline
 * oci_rt_deadline_seconds(rt, args[0]); at the deadline (or at rt->cancel
 * for a forward command) the group is killed (SIGKILL), the command reaped
 * (waited for at most 5 s more) and the result is oci_runtime_timeout
 * (or oci_interrupted), where = args[0], *status -1.
 */
ota_err oci_rt_cmd(const oci_rt *rt, const char *const *args, int out_fd, int err_fd,
                   char *cap_out, size_t cap_out_len, char *cap_err, size_t cap_err_len,
                   int *status, ota_error *err);
/* oci_rt_cmd, and extra[0..n_extra) (n_extra <= 8) become the command's
 * descriptors 3.. (for `--preserve-fds N`); the caller keeps its copies. */
ota_err oci_rt_cmd_fds(const oci_rt *rt, const char *const *args, int out_fd, int err_fd,
                       const int *extra, size_t n_extra, char *cap_out, size_t cap_out_len,
                       char *cap_err, size_t cap_err_len, int *status, ota_error *err);
/*
 * `state ID`: *exists false when the runtime does not know the id (it
 * exits non-zero saying so); otherwise its output is checked with
 * oci_rt_state_parse and *exists is true, status_out the status, *pid_out
 * (may be NULL) the pid. Errors: oci_runtime_failed (any other failure),
 * oci_runtime_state_invalid; on error *exists is false, status_out "",
 * *pid_out 0.
 */
ota_err oci_rt_state(const oci_rt *rt, const char *id, bool *exists, char status_out[32],
                     long *pid_out, ota_error *err);
/*
 * Checks the output of `state ID` (untrusted bytes): at most
 * OTA_OCI_MAX_STATE_BYTES, strict JSON (ota_json_parse: one value, no
 * duplicate member, valid UTF-8, nothing after it), an object whose "id"
 * is id, whose "status" is one of creating, created, running, pausing,
 * paused, stopped, and whose "pid" is an integer in 1..INT_MAX (0..INT_MAX
 * when stopped). Other members are ignored. Error:
 * oci_runtime_state_invalid (where: id, state.id, state.status or
 * state.pid); status_out "" and *pid_out 0 then.
 */
ota_err oci_rt_state_parse(ota_bytes text, const char *id, char status_out[32], long *pid_out,
                           ota_error *err);
/* Version string (first line of --version). */
void oci_rt_version(const oci_rt *rt, char *out, size_t cap);

/* ---- lease (sqlite) ---- */
typedef struct oci_lease_db oci_lease_db;
ota_err oci_lease_open(const char *path, oci_lease_db **out, ota_error *err);
void oci_lease_close(oci_lease_db *db);
/* A passive checkpoint of the log into the database (committed data is
 * durable either way; this keeps the log, and each later open, short). */
void oci_lease_checkpoint(oci_lease_db *db);
/* cgroups (may be NULL: the column stays NULL) is the JSON array of the
 * container's cgroup directories (oci_cgroup_dirs), stored as text. */
ota_err oci_lease_begin(oci_lease_db *db, const char *id, const char *txn, const oci_rt *rt,
                        const char *bundle, const char *plan_id, const json_t *cgroups,
                        int64_t now, ota_error *err);
ota_err oci_lease_phase(oci_lease_db *db, const char *id, const char *phase, long pid,
                        ota_error *err);
ota_err oci_lease_finalize(oci_lease_db *db, const char *id, const char *terminal,
                           const char *cleanup, const char *detail, int64_t now, ota_error *err);
/* Open leases as a JSON array of objects (new). */
ota_err oci_lease_rows(oci_lease_db *db, bool open_only, json_t **out, ota_error *err);
/* Start time (field 22 of /proc/PID/stat) of pid; 0 when gone. */
unsigned long long oci_proc_start_time(long pid);

/* ---- container ids and bundles ---- */

/* A container id is exactly what ota_oci_run makes: "ota-" and the
 * lowercase hex of 12 random bytes. */
#define OCI_ID_PREFIX "ota-"
#define OCI_ID_HEX_LEN 24
/* true when id has exactly that form (so it is one plain path component
 * and never a runtime option). */
bool oci_container_id_valid(const char *id);
/* The configured state directory: o->state_dir, else OTA_OCI_DEFAULT_STATE_DIR. */
const char *oci_state_dir(const ota_oci_run_opts *o);
/* STATE/bundles/ID into out (cap bytes); false (out "") when it does not fit. */
bool oci_bundle_path(const char *state_dir, const char *id, char *out, size_t cap);
/*
 * Opens STATE/bundles for the bundles of the state directory state_dir
 * (the operator's: --state-dir, default /run/ota). STATE is opened with
 * O_DIRECTORY | O_NOFOLLOW (trailing slashes dropped first), "bundles"
 * beneath its descriptor the same way; each must be a directory owned by
 * root (by root or the caller when not root) and not writable by group or
 * others. With create, a missing STATE is made (mkdir 0700; its parent must
 * exist) and a missing bundles (mkdirat 0700 beneath STATE). *bundles_fd
 * is new (O_RDONLY | O_DIRECTORY), -1 on failure. Errors:
 * oci_state_dir_unsafe (a symlink, not a directory, another owner, group-
 * or other-writable; where = STATE or STATE/bundles), not_found (without
 * create, or STATE's parent missing), usage (empty or too long), io_error.
 */
ota_err oci_state_open(const char *state_dir, bool create, int *bundles_fd, ota_error *err);
/*
 * Makes the bundle directory id (a valid container id) beneath bundles_fd:
 * mkdirat 0700 (an existing entry of that name, whatever it is, is
 * oci_state_dir_unsafe: a fresh id never exists), opened O_NOFOLLOW and
 * checked as oci_state_open checks, bundles_fd fsync()ed. bundle (the
 * path STATE/bundles/ID) names it in errors. *dir_fd new.
 */
ota_err oci_bundle_create(int bundles_fd, const char *bundle, const char *id, int *dir_fd,
                          ota_error *err);
/*
 * Creates the file name in dir_fd with openat(O_CREAT | O_EXCL |
 * O_NOFOLLOW | O_CLOEXEC, 0600), writes data fully, fsync()s it and
 * dir_fd. An existing entry (a file, a symlink, anything) is
 * oci_state_dir_unsafe and is not touched; io_error otherwise. where
 * names the file in errors.
 */
ota_err oci_bundle_write(int dir_fd, const char *name, ota_bytes data, const char *where,
                         ota_error *err);
/*
 * The runtime is handed the bundle by path: checks that the path bundle
 * (followed as the runtime will follow it) is the directory dir_fd
 * (st_dev and st_ino). oci_state_dir_unsafe when it is not or no longer
 * resolves.
 */
ota_err oci_bundle_verify_path(int dir_fd, const char *bundle, ota_error *err);
/*
 * Removes the bundle id (a valid container id) beneath bundles_fd: opened
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), its entries unlinked (never followed), then the
 * directory, and bundles_fd fsync()ed. True when no bundle is left
 * (removed, or never made); false for an invalid id, a symlink or
 * non-directory there, or a bundle that could not be emptied.
 */
bool oci_bundle_remove_at(int bundles_fd, const char *id);
/*
 * oci_bundle_remove_at beneath the state directory state_dir opened and
 * checked by oci_state_open (without create). True also when there is no
 * state or bundles directory; false when either is unsafe.
 */
bool oci_bundle_remove(const char *state_dir, const char *id);

/* ---- the container's pid namespace (pidns.c) ---- */
#define OCI_PIDNS_LEN 64
/*
 * The pid namespace (the link /proc/PID/ns/pid reads, "pid:[INODE]") of
 * the process pid behind pidfd pfd, read while pfd shows it alive, so the
 * pid was not reused. False (ns "") when it cannot be read or when it is
 * this process's own namespace.
 */
bool oci_pidns_of(int pfd, long pid, char ns[OCI_PIDNS_LEN]);
/*
 * SIGKILL through a pidfd to every process under /proc but except (the
 * init, which the caller kills through the pidfd it holds) whose pid
 * namespace reads ns before and after its pidfd is opened (a pid reused in
 * between is left alone); never in this process's own namespace. Forks
 * nothing. Returns how many were signalled.
 */
size_t oci_pidns_kill(const char *ns, long except);
/*
 * Kills the container id whose init the caller believes is pid (a lease
 * row's container_pid, untrusted), without the runtime and without
 * forking: only once pid is proved to be a process of that container (a
 * pidfd opened on it, then its /proc/PID/cgroup read with a path ending in
 * "/ID", then its pid namespace read, then the pidfd's process found
 * alive: both reads were its, and its namespace is not this process's),
 * which sets *proved. Then, every 100 ms until the pidfd reports the
 * process gone or wait_ms have passed: oci_pidns_kill over that namespace
 * (*swept counts the signals) and SIGKILL through the pidfd. True when the
 * process is gone.
 */
bool oci_pidns_kill_container(const char *id, long pid, int wait_ms, size_t *swept,
                              bool *proved);

/* Reads a /proc file (size 0 to stat) whole, at most max bytes, as
 * ota_file_read does (same errors, *buf NUL-terminated, new) but in large
 * reads: one or two read calls instead of a dozen doubling ones. */
ota_err oci_proc_read(const char *path, size_t max, uint8_t **buf, size_t *len, ota_error *err);

/* ---- the container's cgroup directories (runc) ----
 *
 * runc (its cgroupfs manager; the rendered config sets no cgroupsPath)
 * makes the container's cgroup at OWN/ID in every hierarchy, OWN being the
 * cgroup runc itself runs in there (the runner's: /ota-ID in most of this
 * host's hierarchies, /process_api/<hex>/ota-ID in memory, and in the
 * cgroup2 hierarchy of a hybrid host too). A runc killed while creating
 * leaves them (empty); `runc delete` removes them otherwise.
 */
#define OCI_CGROUP_MAX_DIRS 32
/*
 * The directories runc makes for container id, from /proc/self/cgroup and
 * /proc/self/mountinfo: for each hierarchy (cgroup v1 by its controllers
 * or name=, the cgroup2 one for "0::") mounted here, mount point + own
 * cgroup below the mount's root + "/" + id. *out new JSON array of
 * absolute paths (possibly empty). Errors: io_error, too_large,
 * out_of_memory, oci_mount_unexpected (mountinfo unparsable).
 */
ota_err oci_cgroup_dirs(const char *id, json_t **out, ota_error *err);
/*
 * Whether dirs (a lease row's, untrusted) may be acted on for container
 * id: a JSON array of at most OCI_CGROUP_MAX_DIRS strings, each an
 * absolute path of at most OTA_MAX_PATH_BYTES without ".", ".." or empty
 * components whose last component is id and which lies below a cgroup or
 * cgroup2 file system mounted here. False otherwise (why says which).
 */
bool oci_cgroup_dirs_valid(const json_t *dirs, const char *id, const char **why);
/*
 * A lease row's cgroups column (untrusted text) for container id: at most
 * OCI_CGROUP_MAX_COLUMN_BYTES, strict JSON (ota_json_parse), then what
 * oci_cgroup_dirs_valid checks, against the mounts m[0..n) (pure: the
 * caller reads mountinfo; fuzz_oci_cgroups). True with *dirs the parsed
 * list (new); false with *dirs NULL and *why saying what is wrong.
 * oci_cgroup_column_check does the same against this process's mounts.
 */
#define OCI_CGROUP_MAX_COLUMN_BYTES (64u * 1024u)
bool oci_cgroup_column_parse(ota_bytes text, const char *id, const oci_mount *m, size_t n,
                             json_t **dirs, const char **why);
bool oci_cgroup_column_check(ota_bytes text, const char *id, json_t **dirs, const char **why);
/*
 * Removes each directory of dirs (checked with oci_cgroup_dirs_valid
 * first) by rmdir only: the cgroup file system's mount point is opened
 * O_NOFOLLOW and must be a cgroup file system (statfs), the parent beneath
 * it without following anything, and id is unlinkat(AT_REMOVEDIR) beneath
 * it. A directory already absent counts as removed; one the kernel refuses
 * (EBUSY: it holds a process or a child cgroup) is retried for 200 ms and
 * then left as it is. *left (new) lists {dir, reason} for each one not
 * removed. True when none is left.
 */
bool oci_cgroup_remove(const char *id, const json_t *dirs, json_t **left);

/*
 * Reads back the limits of the cgroups process pid (the container's init,
 * before the start) is in, from /proc/PID/cgroup and this process's
 * mounts: pids.max of its pids cgroup and memory.limit_in_bytes of its
 * memory cgroup (cgroup v1), else pids.max and memory.max of its cgroup2
 * one. *out (new): {pids_limit, pids_cgroup, memory_limit_bytes,
 * memory_cgroup}, a limit null when none ("max", v1's unlimited) or
 * unreadable. A limit of want (> 0) that is not held exactly is
 * oci_limit_not_applied (where = the cgroup directory); io_error when
 * /proc/PID/cgroup is unreadable.
 */
ota_err oci_cgroup_limits_check(long pid, const ota_oci_limits *want, json_t **out,
                                ota_error *err);

/*
 * Finalize one container after the fact: kill, delete, confirm. With the
 * container confirmed gone, its cgroup directories cgroups (may be NULL:
 * those oci_cgroup_dirs gives for id in this process) are removed
 * (oci_cgroup_remove); one left makes the removal unconfirmed
 * (oci_cleanup_unconfirmed, where = the directory): something outside the
 * container's pid namespace holds it.
 */
ota_err oci_finalize_container(const oci_rt *rt, const char *id, long pid,
                               const char *known_status, const json_t *cgroups,
                               json_t **cleanup_out, ota_error *err);

/*
 * Finalizes the open leases of dead runners in db; appends records to
 * finalized. A lease row is acted upon only when it is one this
 * configuration would have written (oci_lease_check); any other is
 * appended to untrusted (may be NULL: not reported), left open, and makes
 * the result oci_lease_untrusted (unless an earlier row failed first).
 */
ota_err oci_cleanup_db(const ota_oci_run_opts *o, oci_lease_db *db, json_t *finalized,
                       json_t *untrusted, size_t *skipped, ota_error *err);

#endif
