/* Small helpers: hex, base64, files, SHA-256 identities, secret hygiene. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ota/common.h"
#include "ota/limits.h"
#include "md.h"

#ifndef OTA_VERSION_STRING
#define OTA_VERSION_STRING "0.0.0"
#endif

const char *ota_version(void)
{
	return OTA_VERSION_STRING;
}

void ota_wipe(void *p, size_t n)
{
	if (p != NULL && n > 0)
		OPENSSL_cleanse(p, n);
}

bool ota_ct_equal(ota_bytes a, ota_bytes b)
{
	if (a.len != b.len)
		return false;
	if (a.len == 0)
		return true;
	return CRYPTO_memcmp(a.ptr, b.ptr, a.len) == 0;
}

void ota_hex_encode(ota_bytes in, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < in.len; i++) {
		out[2 * i] = digits[in.ptr[i] >> 4];
		out[2 * i + 1] = digits[in.ptr[i] & 15];
	}
	out[2 * in.len] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ota_err ota_hex_decode(const char *hex, size_t hex_len, ota_buf out, size_t *out_len)
{
	*out_len = 0;
	if (hex_len % 2 != 0)
		return OTA_ERR_BAD_HEX;
	if (hex_len / 2 > out.cap)
		return OTA_ERR_TOO_LARGE;
	for (size_t i = 0; i < hex_len; i += 2) {
		int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
		if (hi < 0 || lo < 0)
			return OTA_ERR_BAD_HEX;
		out.ptr[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*out_len = hex_len / 2;
	return OTA_OK;
}

/* Reads fd to its end into a new buffer of at most max bytes (NUL-terminated
 * beyond *out_len); size_hint (0: unknown) sizes the first allocation. */
static ota_err read_all(int fd, const char *name, size_t max, size_t size_hint, uint8_t **out,
                        size_t *out_len, ota_error *err)
{
	/* Room for max + 1 bytes at most: reading one byte past max proves "too large". */
	size_t cap = size_hint > 0 ? size_hint + 2 : 4096;
	if (cap > max + 2)
		cap = max + 2;
	uint8_t *buf = malloc(cap);
	if (buf == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, name, NULL);
	size_t len = 0;
	for (;;) {
		if (len + 1 >= cap) {
			size_t ncap = cap * 2;
			if (ncap > max + 2)
				ncap = max + 2;
			uint8_t *nb = realloc(buf, ncap);
			if (nb == NULL) {
				free(buf);
				return ota_error_set(err, OTA_ERR_NOMEM, name, NULL);
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			free(buf);
			return ota_error_set(err, OTA_ERR_IO, name, "read failed: %s", strerror(saved));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max) {
			free(buf);
			return ota_error_set(err, OTA_ERR_TOO_LARGE, name,
			                     "input exceeds the limit of %zu bytes", max);
		}
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return OTA_OK;
}

/* The opened fd must be a regular file of at most max bytes; then read it. */
static ota_err read_regular(int fd, const char *name, size_t max, uint8_t **out,
                            size_t *out_len, ota_error *err)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ota_error_set(err, OTA_ERR_IO, name, "cannot stat: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return ota_error_set(err, OTA_ERR_IO, name, "is a directory");
	if (!S_ISREG(st.st_mode))
		return ota_error_set(err, OTA_ERR_NOT_REGULAR, name,
		                     "not a regular file (%s); not read",
		                     S_ISFIFO(st.st_mode)   ? "a FIFO"
		                     : S_ISSOCK(st.st_mode) ? "a socket"
		                     : S_ISCHR(st.st_mode)  ? "a character device"
		                     : S_ISBLK(st.st_mode)  ? "a block device"
		                                            : "not a file");
	if ((uint64_t)st.st_size > max)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, name, "file has %lld bytes, limit is %zu",
		                     (long long)st.st_size, max);
	return read_all(fd, name, max, (size_t)st.st_size, out, out_len, err);
}

ota_err ota_file_read(const char *path, size_t max, uint8_t **out, size_t *out_len,
                      ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	/* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer;
	 * read_regular refuses it before any read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open: %s", strerror(errno));
	ota_err rc = read_regular(fd, path, max, out, out_len, err);
	close(fd);
	return rc;
}

ota_err ota_fd_read(int fd, const char *name, size_t max, uint8_t **out, size_t *out_len,
                    ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	return read_all(fd, name, max, 0, out, out_len, err);
}

/* ---- beneath a directory descriptor ---- */

static int sys_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = flags;
	how.resolve = resolve;
	for (int tries = 0;; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		/* EAGAIN: a concurrent rename somewhere; the kernel asks to retry */
		if (fd >= 0 || errno != EAGAIN || tries == 8)
			return fd;
	}
}

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* where = base_name + "/" + rel[0..n) for error messages. */
static const char *where_of(char *buf, size_t cap, const char *base_name, const char *rel,
                            size_t n)
{
	if (base_name != NULL && base_name[0] != '\0')
		snprintf(buf, cap, "%s%s%.*s", base_name,
		         base_name[strlen(base_name) - 1] == '/' ? "" : "/", (int)n, rel);
	else
		snprintf(buf, cap, "%.*s", (int)n, rel);
	return buf;
}

/* The error of an openat2 beneath that failed with e. */
static ota_err beneath_error(int e, const char *where, bool dir, ota_error *err)
{
	switch (e) {
	case ELOOP:
		return ota_error_set(err, OTA_ERR_PATH_SYMLINK, where,
		                     "is a symlink (or a symlink is on its path): not followed");
	case ENOTDIR:
		return ota_error_set(err, OTA_ERR_NOT_DIRECTORY, where,
		                     dir ? "exists and is not a directory"
		                         : "a component on its path is not a directory");
	case ENOENT:
		return ota_error_set(err, OTA_ERR_NOT_FOUND, where, "does not exist");
	case EXDEV:
		return ota_error_set(err, OTA_ERR_PATH_SYMLINK, where,
		                     "resolves outside its base directory");
	default:
		return ota_error_set(err, OTA_ERR_IO, where, "cannot open: %s", strerror(e));
	}
}

/* Checks rel: relative, no ".." component, at least one name. */
static ota_err rel_check(const char *rel, const char *base_name, ota_error *err)
{
	if (rel == NULL || rel[0] == '\0' || rel[0] == '/')
		return ota_error_set(err, OTA_ERR_USAGE, rel != NULL ? rel : "path",
		                     "not a relative path beneath %s",
		                     base_name != NULL ? base_name : "its base");
	bool name = false;
	for (const char *p = rel; *p != '\0';) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return ota_error_set(err, OTA_ERR_USAGE, rel, "'..' component");
		if (n > 0 && !(n == 1 && p[0] == '.'))
			name = true;
		p += n;
		while (*p == '/')
			p++;
	}
	return name ? OTA_OK : ota_error_set(err, OTA_ERR_USAGE, rel, "names no entry");
}

/* Walks the directories rel[0..end) beneath base, one component at a time. */
static ota_err walk_dirs(int base, const char *base_name, const char *rel, size_t end,
                         unsigned flags, int *out_fd, ota_error *err)
{
	char where[OTA_MAX_PATH_BYTES];
	char comp[256];
	*out_fd = -1;
	int cur = fcntl(base, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return ota_error_set(err, OTA_ERR_IO, where_of(where, sizeof where, base_name, "", 0),
		                     "dup: %s", strerror(errno));
	size_t i = 0;
	while (i < end) {
		size_t n = strcspn(rel + i, "/");
		if (i + n > end)
			n = end - i;
		if (n == 0 || (n == 1 && rel[i] == '.')) {
			i += n + (i + n < end);
			continue;
		}
		if (n >= sizeof comp) {
			close(cur);
			return ota_error_set(err, OTA_ERR_TOO_LARGE,
			                     where_of(where, sizeof where, base_name, rel, i + n),
			                     "path component too long");
		}
		memcpy(comp, rel + i, n);
		comp[n] = '\0';
		int fd = -1;
		for (int tries = 0; tries < 4; tries++) {
			fd = sys_openat2(cur, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			                 BENEATH);
			if (fd >= 0 || errno != ENOENT || (flags & OTA_BENEATH_CREATE) == 0)
				break;
			if (mkdirat(cur, comp, 0755) != 0 && errno != EEXIST)
				break; /* reported below from the mkdirat's errno */
		}
		if (fd < 0) {
			int e = errno;
			close(cur);
			return beneath_error(e, where_of(where, sizeof where, base_name, rel, i + n), true,
			                     err);
		}
		close(cur);
		cur = fd;
		i += n + (i + n < end);
	}
	*out_fd = cur;
	return OTA_OK;
}

ota_err ota_dir_open_beneath(int base, const char *base_name, const char *rel, unsigned flags,
                             int *out_fd, ota_error *err)
{
	*out_fd = -1;
	ota_err rc = rel_check(rel, base_name, err);
	if (rc != OTA_OK)
		return rc;
	return walk_dirs(base, base_name, rel, strlen(rel), flags, out_fd, err);
}

/* Splits rel into its directory part [0..*dir_end) and its last name. */
static const char *last_name(const char *rel, size_t *dir_end)
{
	size_t n = strlen(rel);
	while (n > 0 && rel[n - 1] == '/')
		n--;
	size_t s = n;
	while (s > 0 && rel[s - 1] != '/')
		s--;
	*dir_end = s;
	return rel + s;
}

ota_err ota_file_read_beneath(int base, const char *base_name, const char *rel, size_t max,
                              uint8_t **out, size_t *out_len, ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	ota_err rc = rel_check(rel, base_name, err);
	if (rc != OTA_OK)
		return rc;
	size_t dend = 0;
	const char *name = last_name(rel, &dend);
	char where[OTA_MAX_PATH_BYTES];
	where_of(where, sizeof where, base_name, rel, strlen(rel));
	if (name[0] == '\0' || strcmp(name, ".") == 0 || strchr(name, '/') != NULL)
		return ota_error_set(err, OTA_ERR_USAGE, where, "names no file");
	int dfd = -1;
	rc = walk_dirs(base, base_name, rel, dend, 0, &dfd, err);
	if (rc != OTA_OK)
		return rc;
	int fd = sys_openat2(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
	                     BENEATH);
	int e = errno;
	close(dfd);
	if (fd < 0)
		return beneath_error(e, where, false, err);
	rc = read_regular(fd, where, max, out, out_len, err);
	close(fd);
	return rc;
}

static ota_err write_atomic_at(int dirfd, const char *name, ota_bytes data, unsigned mode,
                               bool noreplace, const char *where, ota_error *err)
{
	const char *w = where != NULL ? where : name;
	if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return ota_error_set(err, OTA_ERR_USAGE, w, "not a single file name");
	size_t n = strlen(name);
	if (n + 24 > 255)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, w, "file name too long");
	/* The name itself is never followed: a symlink there is refused, as is
	 * anything but a regular file, before anything is written (renameat
	 * would replace a symlink rather than write through it either way). */
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (noreplace)
			return ota_error_set(err, OTA_ERR_EXISTS, w, "refusing to overwrite an existing file");
		if (S_ISLNK(st.st_mode))
			return ota_error_set(err, OTA_ERR_PATH_SYMLINK, w,
			                     "is a symlink: not followed, not replaced");
		if (!S_ISREG(st.st_mode))
			return ota_error_set(err, OTA_ERR_NOT_REGULAR, w,
			                     "exists and is not a regular file");
	} else if (errno != ENOENT) {
		return ota_error_set(err, errno == ENOTDIR ? OTA_ERR_NOT_DIRECTORY : OTA_ERR_IO, w,
		                     "cannot stat: %s", strerror(errno));
	}
	char tmp[256];
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		uint8_t rnd[6];
		char hex[13];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			return ota_error_set(err, OTA_ERR_CRYPTO, w, "getrandom: %s", strerror(errno));
		ota_hex_encode(ota_bytes_make(rnd, sizeof rnd), hex);
		snprintf(tmp, sizeof tmp, "%s.tmp.%s", name, hex);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, w, "cannot create temporary file: %s",
		                     strerror(errno));
	ota_err rc = OTA_OK;
	if (fchmod(fd, (mode_t)mode) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, w, "chmod: %s", strerror(errno));
		goto out_unlink;
	}
	size_t off = 0;
	while (off < data.len) {
		ssize_t wr = write(fd, data.ptr + off, data.len - off);
		if (wr < 0) {
			if (errno == EINTR)
				continue;
			rc = ota_error_set(err, OTA_ERR_IO, w, "write: %s", strerror(errno));
			goto out_unlink;
		}
		off += (size_t)wr;
	}
	if (fsync(fd) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, w, "fsync: %s", strerror(errno));
		goto out_unlink;
	}
	int c = close(fd);
	fd = -1;
	if (c != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, w, "close: %s", strerror(errno));
		goto out_unlink;
	}
	int moved;
	if (noreplace) {
		moved = renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE);
		/* a file system without RENAME_NOREPLACE: a hard link never
		 * replaces either; the temporary name is removed below or after */
		if (moved != 0 && errno == EINVAL) {
			moved = linkat(dirfd, tmp, dirfd, name, 0);
			if (moved == 0)
				unlinkat(dirfd, tmp, 0);
		}
	} else {
		moved = renameat(dirfd, tmp, dirfd, name);
	}
	if (moved != 0) {
		rc = errno == EEXIST && noreplace
		         ? ota_error_set(err, OTA_ERR_EXISTS, w, "refusing to overwrite an existing file")
		         : ota_error_set(err, OTA_ERR_IO, w, "rename: %s", strerror(errno));
		goto out_unlink;
	}
	if (fsync(dirfd) != 0)
		rc = ota_error_set(err, OTA_ERR_IO, w, "fsync of directory: %s", strerror(errno));
	return rc;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return rc;
}

ota_err ota_file_write_atomic_at(int dirfd, const char *name, ota_bytes data, unsigned mode,
                                 const char *where, ota_error *err)
{
	return write_atomic_at(dirfd, name, data, mode, false, where, err);
}

static ota_err write_atomic_path(const char *path, ota_bytes data, unsigned mode, bool noreplace,
                                 ota_error *err)
{
	size_t dend = 0;
	const char *name = last_name(path, &dend);
	if (name[0] == '\0')
		return ota_error_set(err, OTA_ERR_IO, path, "names no file");
	char dir[OTA_MAX_PATH_BYTES];
	if (dend >= sizeof dir)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, path, "path too long");
	if (dend == 0)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)dend, path);
	char nm[256];
	size_t nl = strcspn(name, "/");
	if (nl >= sizeof nm)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, path, "file name too long");
	memcpy(nm, name, nl);
	nm[nl] = '\0';
	/* The directory is the caller's path (its symlinks are the caller's
	 * choice); the last component is never followed. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open its directory: %s",
		                     strerror(errno));
	ota_err rc = write_atomic_at(dfd, nm, data, mode, noreplace, path, err);
	close(dfd);
	return rc;
}

ota_err ota_file_write_atomic(const char *path, ota_bytes data, unsigned mode, ota_error *err)
{
	return write_atomic_path(path, data, mode, false, err);
}

ota_err ota_file_write_new(const char *path, ota_bytes data, unsigned mode, ota_error *err)
{
	return write_atomic_path(path, data, mode, true, err);
}

/* One file of ota_private_file_check, stat()ed without following it. */
static ota_err private_stat_check(const struct stat *st, const char *where, ota_error *err)
{
	if (S_ISLNK(st->st_mode))
		return ota_error_set(err, OTA_ERR_PATH_SYMLINK, where,
		                     "is a symlink: a database or state file is never followed");
	if (!S_ISREG(st->st_mode))
		return ota_error_set(err, OTA_ERR_NOT_REGULAR, where, "is not a regular file");
	if (st->st_uid != geteuid())
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, where,
		                     "is owned by uid %lu, not by uid %lu running this: whoever owns it "
		                     "can rewrite its records (chown it)",
		                     (unsigned long)st->st_uid, (unsigned long)geteuid());
	if ((st->st_mode & 022) != 0)
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, where,
		                     "mode %04o: writable by group or others, who could rewrite its "
		                     "records (chmod 600)",
		                     (unsigned)(st->st_mode & 07777));
	return OTA_OK;
}

ota_err ota_private_file_check(const char *path, unsigned flags, ota_error *err)
{
	if (path == NULL || path[0] == '\0')
		return ota_error_set(err, OTA_ERR_USAGE, "path", "no path");
	size_t dend = 0;
	const char *name = last_name(path, &dend);
	char nm[256];
	size_t nl = strcspn(name, "/");
	if (nl == 0 || nl + 10 >= sizeof nm)
		return ota_error_set(err, nl == 0 ? OTA_ERR_USAGE : OTA_ERR_TOO_LARGE, path,
		                     nl == 0 ? "names no file" : "file name too long");
	memcpy(nm, name, nl);
	nm[nl] = '\0';
	char dir[OTA_MAX_PATH_BYTES];
	if (dend >= sizeof dir)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, path, "path too long");
	if (dend == 0)
		snprintf(dir, sizeof dir, ".");
	else if (dend == 1)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(dend - 1), path);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ota_error_set(err, errno == ENOENT ? OTA_ERR_NOT_FOUND : OTA_ERR_IO, path,
		                     "cannot open its directory %s: %s", dir, strerror(errno));
	ota_err rc = OTA_OK;
	struct stat st;
	if (fstat(dfd, &st) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, dir, "cannot stat: %s", strerror(errno));
		goto out;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		rc = ota_error_set(err, OTA_ERR_FILE_UNSAFE, dir,
		                   "the directory of %s is owned by uid %lu, neither uid %lu running "
		                   "this nor root: its owner can replace the file",
		                   path, (unsigned long)st.st_uid, (unsigned long)geteuid());
		goto out;
	}
	if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0) {
		rc = ota_error_set(err, OTA_ERR_FILE_UNSAFE, dir,
		                   "the directory of %s has mode %04o: writable by group or others "
		                   "(and not sticky), who can replace the file",
		                   path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT) {
			rc = ota_error_set(err, OTA_ERR_IO, path, "cannot stat: %s", strerror(errno));
			goto out;
		}
		if ((flags & OTA_PRIVATE_CREATE) == 0) {
			rc = ota_error_set(err, OTA_ERR_NOT_FOUND, path, "does not exist");
			goto out;
		}
		int fd = openat(dfd, nm, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			/* 0600 whatever the umask was (it can only have removed bits) */
			if (fchmod(fd, 0600) != 0 || fsync(fd) != 0 || fsync(dfd) != 0)
				rc = ota_error_set(err, OTA_ERR_IO, path, "cannot create: %s",
				                   strerror(errno));
			close(fd);
			if (rc != OTA_OK)
				goto out;
		} else if (errno != EEXIST) {
			rc = ota_error_set(err, OTA_ERR_IO, path, "cannot create: %s", strerror(errno));
			goto out;
		}
		if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			rc = ota_error_set(err, OTA_ERR_IO, path, "cannot stat: %s", strerror(errno));
			goto out;
		}
	}
	if ((rc = private_stat_check(&st, path, err)) != OTA_OK)
		goto out;
	static const char *const sfx[] = {"-wal", "-shm", "-journal"};
	for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
		char side[sizeof nm], sw[OTA_MAX_PATH_BYTES];
		snprintf(side, sizeof side, "%s%s", nm, sfx[i]);
		snprintf(sw, sizeof sw, "%s%s", path, sfx[i]);
		if (fstatat(dfd, side, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			rc = ota_error_set(err, OTA_ERR_IO, sw, "cannot stat: %s", strerror(errno));
			goto out;
		}
		if ((rc = private_stat_check(&st, sw, err)) != OTA_OK)
			goto out;
	}
out:
	close(dfd);
	return rc;
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static ota_err b64_encode(ota_bytes in, const char *alphabet, bool pad, char **out)
{
	size_t olen = (in.len + 2) / 3 * 4 + 1;
	char *o = malloc(olen);
	*out = NULL;
	if (o == NULL)
		return OTA_ERR_NOMEM;
	size_t j = 0, i = 0;
	for (; i + 3 <= in.len; i += 3) {
		uint32_t v = (uint32_t)in.ptr[i] << 16 | (uint32_t)in.ptr[i + 1] << 8 | in.ptr[i + 2];
		o[j++] = alphabet[v >> 18 & 63];
		o[j++] = alphabet[v >> 12 & 63];
		o[j++] = alphabet[v >> 6 & 63];
		o[j++] = alphabet[v & 63];
	}
	size_t rem = in.len - i;
	if (rem > 0) {
		uint32_t v = (uint32_t)in.ptr[i] << 16;
		if (rem == 2)
			v |= (uint32_t)in.ptr[i + 1] << 8;
		o[j++] = alphabet[v >> 18 & 63];
		o[j++] = alphabet[v >> 12 & 63];
		if (rem == 2)
			o[j++] = alphabet[v >> 6 & 63];
		else if (pad)
			o[j++] = '=';
		if (pad)
			o[j++] = '=';
	}
	o[j] = '\0';
	*out = o;
	return OTA_OK;
}

ota_err ota_base64_encode(ota_bytes in, char **out)
{
	return b64_encode(in, b64std, true, out);
}

ota_err ota_base64url_encode(ota_bytes in, char **out)
{
	return b64_encode(in, b64url, false, out);
}

static int b64val(char c, bool *url, bool *std)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '/') {
		*std = true;
		return c == '+' ? 62 : 63;
	}
	if (c == '-' || c == '_') {
		*url = true;
		return c == '-' ? 62 : 63;
	}
	return -1;
}

ota_err ota_base64_decode(const char *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t n = in_len;
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (in_len - n > 2 || (in_len != n && in_len % 4 != 0) || n % 4 == 1)
		return OTA_ERR_BAD_BASE64;
	uint8_t *o = malloc(n / 4 * 3 + 3);
	if (o == NULL)
		return OTA_ERR_NOMEM;
	bool url = false, std = false;
	size_t j = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val(in[i], &url, &std);
		if (v < 0 || (url && std)) {
			free(o);
			return OTA_ERR_BAD_BASE64;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[j++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero (canonical encoding). */
	if (acc != 0) {
		free(o);
		return OTA_ERR_BAD_BASE64;
	}
	*out = o;
	*out_len = j;
	return OTA_OK;
}

static EVP_MD *g_sha2[3];
static pthread_once_t g_sha2_once = PTHREAD_ONCE_INIT;

static void sha2_fetch(void)
{
	g_sha2[0] = EVP_MD_fetch(NULL, "SHA256", NULL);
	g_sha2[1] = EVP_MD_fetch(NULL, "SHA384", NULL);
	g_sha2[2] = EVP_MD_fetch(NULL, "SHA512", NULL);
}

const EVP_MD *ota_md_sha2(unsigned bits)
{
	if (pthread_once(&g_sha2_once, sha2_fetch) != 0)
		return NULL;
	return bits == 256 ? g_sha2[0] : bits == 384 ? g_sha2[1] : bits == 512 ? g_sha2[2] : NULL;
}

ota_err ota_sha256(ota_bytes data, uint8_t out[32])
{
	unsigned int n = 0;
	const EVP_MD *md = ota_md_sha2(256);
	if (md == NULL || EVP_Digest(data.ptr, data.len, out, &n, md, NULL) != 1 || n != 32)
		return OTA_ERR_CRYPTO;
	return OTA_OK;
}

ota_err ota_sha256_id(ota_bytes data, char out[OTA_ID_LEN + 1])
{
	uint8_t d[32];
	ota_err rc = ota_sha256(data, d);
	if (rc != OTA_OK) {
		out[0] = '\0';
		return rc;
	}
	memcpy(out, "sha256:", 7);
	ota_hex_encode(ota_bytes_make(d, 32), out + 7);
	return OTA_OK;
}

bool ota_id_is_valid(const char *s)
{
	if (s == NULL || strncmp(s, "sha256:", 7) != 0 || strlen(s) != OTA_ID_LEN)
		return false;
	for (size_t i = 7; i < OTA_ID_LEN; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}
