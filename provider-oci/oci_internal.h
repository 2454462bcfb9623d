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
} oci_rt;

ota_err oci_rt_init(oci_rt *rt, const ota_oci_runtime_opts *o, ota_error *err);
const char *oci_rt_name(ota_oci_runtime_kind kind);
/*
 * Runs the runtime with args (NULL-terminated, without binary and --root).
 * stdin_fd/out_fd/err_fd: -1 = /dev/null (out/err captured into cap_out/cap_err
 * when those are non-NULL). *status: exit code (or 128+sig).
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
ota_err oci_lease_begin(oci_lease_db *db, const char *id, const char *txn, const oci_rt *rt,
                        const char *bundle, const char *plan_id, int64_t now, ota_error *err);
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
 * Removes the bundle STATE/bundles/ID of a valid container id: STATE is
 * opened as given (the operator's directory), "bundles" and ID beneath it
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS),
 * so a symlink there is never followed; the entries in it are unlinked
 * (never followed), then the directory. True when no bundle is left
 * (removed, or never made); false for an invalid id, a symlink or
 * non-directory on the way, or a bundle that could not be emptied.
 */
bool oci_bundle_remove(const char *state_dir, const char *id);

/* Reads a /proc file (size 0 to stat) whole, at most max bytes, as
 * ota_file_read does (same errors, *buf NUL-terminated, new) but in large
 * reads: one or two read calls instead of a dozen doubling ones. */
ota_err oci_proc_read(const char *path, size_t max, uint8_t **buf, size_t *len, ota_error *err);

/* Finalize one container after the fact: kill, delete, confirm. */
ota_err oci_finalize_container(const oci_rt *rt, const char *id, long pid,
                               const char *known_status, json_t **cleanup_out, ota_error *err);

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
