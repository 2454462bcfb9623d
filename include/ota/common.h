/*
 * ota/common.h - byte spans, errors, clock and secret hygiene shared by every
 * module of the Ota sandbox evidence toolkit.
 *
 * Ownership vocabulary (jansson's): "borrowed" = caller keeps it; "new" =
 * caller frees; "takes ownership" = callee frees, even on failure; "points
 * into input" = valid only while the input is.
 */
#ifndef OTA_COMMON_H
#define OTA_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define OTA_API __attribute__((visibility("default")))
#define OTA_NODISCARD __attribute__((warn_unused_result))
#define OTA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OTA_API
#define OTA_NODISCARD
#define OTA_PRINTF(f, a)
#endif

/* Read-only view of bytes we do not own. Untrusted input enters only so. */
typedef struct {
	const uint8_t *ptr;
	size_t len;
} ota_bytes;

/* Caller's writable space: ptr with capacity cap. */
typedef struct {
	uint8_t *ptr;
	size_t cap;
} ota_buf;

static inline ota_bytes ota_bytes_make(const void *p, size_t n)
{
	ota_bytes b;
	b.ptr = (const uint8_t *)p;
	b.len = n;
	return b;
}

#include "ota/err.h"

/*
 * Detail for one refusal: the stable code, where it happened (file:line:col,
 * a JSON pointer, a CBOR position or a field name) and what was wrong, in
 * words. Functions that parse untrusted input take an optional ota_error *
 * (NULL allowed) and fill it on failure; the first error set wins.
 */
typedef struct ota_error {
	ota_err code;
	char where[256];
	char what[256];
	/* the policy control a refusal concerns ("network.default",
	 * "filesystem.repo_root_mode", ...), as admission refusals name it in
	 * refusals[].control; "" when the error is about no single control */
	char control[64];
} ota_error;

/* Clears e (if not NULL) to OTA_OK and empty strings. */
OTA_API void ota_error_clear(ota_error *e);

/*
 * Records code, where and a printf-formatted what into e (if e is not NULL
 * and no error was recorded yet) and returns code, so callers can write
 * `return ota_error_set(err, OTA_ERR_X, "path", "...")`.
 */
OTA_API ota_err ota_error_set(ota_error *e, ota_err code, const char *where,
                              const char *fmt, ...) OTA_PRINTF(4, 5);
OTA_API ota_err ota_error_vset(ota_error *e, ota_err code, const char *where,
                               const char *fmt, va_list ap) OTA_PRINTF(4, 0);
/* ota_error_set that also names the control concerned (e->control). */
OTA_API ota_err ota_error_set_control(ota_error *e, ota_err code, const char *control,
                                      const char *where, const char *fmt, ...) OTA_PRINTF(5, 6);

/* ---- clock (injected; no module reads the system time on its own) ---- */

typedef struct ota_clock {
	/* Seconds since the Unix epoch. */
	int64_t (*now)(void *ctx);
	void *ctx;
} ota_clock;

/* The system's real-time clock. */
OTA_API ota_clock ota_clock_system(void);
/* A clock that always answers *t (borrowed; tests move it). */
OTA_API ota_clock ota_clock_fixed(const int64_t *t);
/* c->now(c->ctx), or the system time when c is NULL. */
OTA_API int64_t ota_clock_now(const ota_clock *c);

/* ---- secrets ---- */

/* Wipes n bytes at p in a way the compiler cannot elide. */
OTA_API void ota_wipe(void *p, size_t n);
/* Constant-time equality of two equal-length spans; false if lengths differ. */
OTA_API bool ota_ct_equal(ota_bytes a, ota_bytes b);

/* ---- small helpers ---- */

/*
 * Lowercase hex of in into out (must hold 2*in.len+1 bytes); NUL-terminated.
 */
OTA_API void ota_hex_encode(ota_bytes in, char *out);
/*
 * Decodes hex (either case, even length) into out (capacity out.cap);
 * *out_len receives the byte count. OTA_ERR_BAD_HEX on bad input,
 * OTA_ERR_TOO_LARGE when out is too small.
 */
OTA_API OTA_NODISCARD ota_err ota_hex_decode(const char *hex, size_t hex_len,
                                             ota_buf out, size_t *out_len);

/*
 * Reads a whole regular file of at most max bytes. The file is opened with
 * O_NONBLOCK | O_NOCTTY | O_CLOEXEC and fstat()ed before any read, so a
 * FIFO, socket or device never blocks the caller: not_regular_file. *out
 * is new (caller frees with free()), NUL-terminated beyond *out_len.
 * Errors: io_error (unreadable, or a directory), not_regular_file,
 * too_large beyond max (checked before reading it all), out_of_memory.
 */
OTA_API OTA_NODISCARD ota_err ota_file_read(const char *path, size_t max,
                                            uint8_t **out, size_t *out_len,
                                            ota_error *err);

/*
 * Reads the stream fd (borrowed; e.g. standard input, which may be a pipe)
 * to its end, at most max bytes; name is for errors. *out new, as
 * ota_file_read. Errors: io_error, too_large, out_of_memory.
 */
OTA_API OTA_NODISCARD ota_err ota_fd_read(int fd, const char *name, size_t max,
                                          uint8_t **out, size_t *out_len,
                                          ota_error *err);

/*
 * Writes data to path atomically: a temporary file created O_EXCL in the
 * same directory, fsync, rename, fsync of the directory. mode is the file's
 * permission (0600 for secrets). Never leaves a partial file under path.
 * The directory part of path is the caller's (its symlinks are followed);
 * the last component is never followed: an existing symlink there is
 * path_symlink, anything but a regular file not_regular_file, both before
 * anything is written. Errors: io_error (e.g. no such directory),
 * path_symlink, not_regular_file, too_large, crypto_error (getrandom).
 */
OTA_API OTA_NODISCARD ota_err ota_file_write_atomic(const char *path,
                                                    ota_bytes data,
                                                    unsigned mode,
                                                    ota_error *err);

/*
 * Writes data to path as a new file, atomically and without ever replacing
 * anything: a temporary file created O_EXCL | O_NOFOLLOW (0600) in the same
 * directory, fchmod to mode, written, fsync()ed, then renameat2(
 * RENAME_NOREPLACE) onto path and the directory fsync()ed. A file, symlink
 * or anything else already at path is already_exists, and nothing is
 * written; a crash leaves either no file at path or the whole file. For
 * private keys. Errors: already_exists, io_error, too_large, crypto_error.
 */
OTA_API OTA_NODISCARD ota_err ota_file_write_new(const char *path, ota_bytes data,
                                                 unsigned mode, ota_error *err);

/* ota_private_file_check flag: create a missing file (0600, O_EXCL); its
 * directory must exist (the caller makes it, 0700). */
#define OTA_PRIVATE_CREATE 1u

/*
 * The hygiene of a durable file only its owner may change (a sqlite
 * database: the nonce store, the lease database, the verifier's ledger; the
 * trust state file), checked before it is opened:
 *  - its directory (opened by path: the operator's symlinks are followed)
 *    is owned by the caller or root, and is not writable by group or
 *    others unless sticky;
 *  - path itself is not a symlink (path_symlink) and is a regular file
 *    (not_regular_file), owned by the caller's effective uid and not
 *    writable by group or others (file_permissions_unsafe);
 *  - the same for path-wal, path-shm and path-journal where they exist
 *    (sqlite creates them with the database's mode and reads them as part
 *    of the database).
 * Missing: with OTA_PRIVATE_CREATE the file is created empty, 0600,
 * O_CREAT | O_EXCL | O_NOFOLLOW, whatever the umask (sqlite then gives its
 * -wal and -shm the same mode); without it, not_found. A missing directory
 * is not_found (nothing is made). Errors: file_permissions_unsafe,
 * path_symlink, not_regular_file, not_found, io_error.
 */
OTA_API OTA_NODISCARD ota_err ota_private_file_check(const char *path, unsigned flags,
                                                     ota_error *err);

/* ---- files beneath a directory descriptor (never through a symlink) ----
 *
 * For everything a privileged process writes or reads inside a tree that
 * someone else controls (the repository a task ran in): each component is
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS) from the directory before it, so no symlink, "..",
 * or magic link anywhere on the path is followed. base_name (may be NULL)
 * is how the base directory is named in errors ("where" = base_name/rel).
 */

/* ota_dir_open_beneath flag: create missing directories (mkdirat, 0755). */
#define OTA_BENEATH_CREATE 1u

/*
 * Opens the directory rel (relative, no ".." component; "a/b") beneath
 * the directory descriptor base (borrowed). *out_fd is new (O_RDONLY |
 * O_DIRECTORY | O_CLOEXEC; fsync()able), -1 on failure. Errors, each
 * naming the first offending prefix of rel and returned before anything
 * below it is created: path_symlink (a component is a symlink),
 * not_a_directory (a component exists and is not a directory), not_found
 * (missing, without OTA_BENEATH_CREATE), usage (rel absolute, empty or
 * with ".."), io_error.
 */
OTA_API OTA_NODISCARD ota_err ota_dir_open_beneath(int base, const char *base_name,
                                                   const char *rel, unsigned flags,
                                                   int *out_fd, ota_error *err);

/*
 * Reads the regular file rel beneath base as ota_file_read does (the same
 * O_NONBLOCK open and regular-file check), resolving every component as
 * ota_dir_open_beneath does and the last one without following it.
 * Errors: not_found (rel or a directory on its way is missing),
 * path_symlink, not_a_directory, not_regular_file, io_error, too_large,
 * usage, out_of_memory.
 */
OTA_API OTA_NODISCARD ota_err ota_file_read_beneath(int base, const char *base_name,
                                                    const char *rel, size_t max,
                                                    uint8_t **out, size_t *out_len,
                                                    ota_error *err);

/*
 * ota_file_write_atomic inside the directory descriptor dirfd (borrowed):
 * name is one component; the temporary file is created O_EXCL | O_NOFOLLOW
 * in dirfd, written, fsync()ed, renameat()ed onto name within dirfd, and
 * dirfd is fsync()ed. An existing name that is a symlink (path_symlink)
 * or not a regular file (not_regular_file) is refused before anything is
 * written. where (may be NULL: name) names the file in errors.
 */
OTA_API OTA_NODISCARD ota_err ota_file_write_atomic_at(int dirfd, const char *name,
                                                       ota_bytes data, unsigned mode,
                                                       const char *where, ota_error *err);

/* Standard base64 (with padding). *out new, NUL-terminated. */
OTA_API OTA_NODISCARD ota_err ota_base64_encode(ota_bytes in, char **out);
/* Standard or url-safe base64, padding optional. *out new. */
OTA_API OTA_NODISCARD ota_err ota_base64_decode(const char *in, size_t in_len,
                                                uint8_t **out, size_t *out_len);
/* base64url without padding. *out new, NUL-terminated. */
OTA_API OTA_NODISCARD ota_err ota_base64url_encode(ota_bytes in, char **out);

/* "sha256:" + lowercase hex of SHA-256(data); out holds OTA_ID_LEN+1 bytes. */
#define OTA_ID_LEN 71
OTA_API OTA_NODISCARD ota_err ota_sha256_id(ota_bytes data, char out[OTA_ID_LEN + 1]);
/* Raw SHA-256 of data into out[32]. */
OTA_API OTA_NODISCARD ota_err ota_sha256(ota_bytes data, uint8_t out[32]);
/* true when s has the exact shape "sha256:" + 64 lowercase hex digits. */
OTA_API bool ota_id_is_valid(const char *s);

/* The toolkit's version string ("0.1.0"), bound into evidence. */
OTA_API const char *ota_version(void);

#ifdef __cplusplus
}
#endif
#endif
