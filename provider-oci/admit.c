/*
 * Admission of a segment plan: path canonicalization with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), refusal of aliases (symlinks,
 * hardlinks, nested mounts) that could make protected content writable, of
 * writable paths outside the repo and of runtime-control sockets inside the
 * boundary.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "oci_internal.h"
#include "ota/limits.h"

int oci_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = flags;
	how.resolve = resolve;
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

bool oci_path_within(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return p[0] == '/';
	if (strncmp(p, dir, n) != 0)
		return false;
	return p[n] == '\0' || p[n] == '/';
}

/* Normalizes a repo-relative path: drops empty and "." components; refuses
 * "..", absolute paths and the empty result. *out new. */
static ota_err normalize_rel(const char *in, char **out, ota_err abs_code, ota_error *err)
{
	*out = NULL;
	if (in == NULL || in[0] == '\0')
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "path", "empty path");
	if (strlen(in) >= OTA_MAX_PATH_BYTES)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, in, "path too long");
	if (in[0] == '/')
		return ota_error_set(err, abs_code, in, "absolute path; paths are repo-relative");
	char *res = malloc(strlen(in) + 1);
	if (res == NULL)
		return OTA_ERR_NOMEM;
	size_t o = 0;
	const char *p = in;
	while (*p != '\0') {
		const char *e = strchr(p, '/');
		size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			free(res);
			return ota_error_set(err, OTA_ERR_OCI_PATH_ESCAPE, in, "'..' component");
		}
		if (len > 0 && !(len == 1 && p[0] == '.')) {
			if (o > 0)
				res[o++] = '/';
			memcpy(res + o, p, len);
			o += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	res[o] = '\0';
	if (o == 0) {
		free(res);
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, in,
		                     "path names the repository root itself");
	}
	*out = res;
	return OTA_OK;
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *r = malloc(n);
	if (r == NULL)
		return NULL;
	if (strcmp(a, "/") == 0)
		snprintf(r, n, "/%s", b);
	else
		snprintf(r, n, "%s/%s", a, b);
	return r;
}

static void path_free(oci_path *p)
{
	free(p->rel);
	free(p->host);
	free(p->dest);
}

void ota_oci_admitted_free(ota_oci_admitted *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < a->n_writable; i++)
		path_free(&a->writable[i]);
	for (size_t i = 0; i < a->n_prot; i++)
		path_free(&a->prot[i]);
	for (size_t i = 0; i < a->n_pins; i++)
		path_free(&a->pins[i]);
	free(a->writable);
	free(a->prot);
	free(a->pins);
	if (a->repo_fd >= 0)
		close(a->repo_fd);
	free(a->repo);
	free(a->rootfs);
	free(a);
}

const char *ota_oci_admitted_repo(const ota_oci_admitted *a)
{
	return a != NULL ? a->repo : NULL;
}

/* Resolves rel beneath the repo fd; fills p. */
static ota_err resolve_one(int repo_fd, const char *repo, const char *raw, bool writable,
                           oci_path *p, ota_error *err)
{
	ota_err rc = normalize_rel(raw, &p->rel, writable ? OTA_ERR_OCI_WRITABLE_OUTSIDE
	                                                  : OTA_ERR_OCI_PATH_ESCAPE, err);
	if (rc != OTA_OK)
		return rc;
	p->host = join(repo, p->rel);
	p->dest = join("/workspace", p->rel);
	if (p->host == NULL || p->dest == NULL)
		return OTA_ERR_NOMEM;
	uint64_t res = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	if (writable)
		res |= RESOLVE_NO_XDEV;
	int fd = oci_openat2(repo_fd, p->rel, O_PATH | O_CLOEXEC, res);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT) {
			/* Distinguish a missing leaf from a symlinked/missing parent. */
			p->exists = false;
			if (writable)
				return ota_error_set(err, OTA_ERR_OCI_PATH_MISSING, p->rel,
				                     "writable path does not exist on the host");
			/* A missing protected path: the parent must still resolve
			 * without symlinks (else a later link could redirect it). */
			char *slash = strrchr(p->rel, '/');
			if (slash != NULL) {
				*slash = '\0';
				int pfd = oci_openat2(repo_fd, p->rel, O_PATH | O_CLOEXEC,
				                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
				                              RESOLVE_NO_MAGICLINKS);
				int pe = errno;
				*slash = '/';
				if (pfd >= 0)
					close(pfd);
				else if (pe == ELOOP)
					return ota_error_set(err, OTA_ERR_OCI_PATH_SYMLINK, p->rel,
					                     "a parent of the protected path is a symlink");
			}
			return OTA_OK;
		}
		if (e == ELOOP)
			return ota_error_set(err, OTA_ERR_OCI_PATH_SYMLINK, p->rel,
			                     "path traverses or is a symlink");
		if (e == EXDEV)
			return ota_error_set(err,
			                     writable ? OTA_ERR_OCI_MOUNT_ALIAS : OTA_ERR_OCI_PATH_ESCAPE,
			                     p->rel,
			                     writable ? "writable path crosses or is a mount point"
			                              : "path escapes the repository");
		if (e == ENOTDIR)
			return ota_error_set(err, OTA_ERR_OCI_PATH_ESCAPE, p->rel,
			                     "a parent component is not a directory");
		return ota_error_set(err, OTA_ERR_IO, p->rel, "openat2: %s", strerror(e));
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return ota_error_set(err, OTA_ERR_IO, p->rel, "fstat: %s", strerror(errno));
	}
	close(fd);
	p->exists = true;
	p->is_dir = S_ISDIR(st.st_mode);
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return ota_error_set(err, S_ISSOCK(st.st_mode) ? OTA_ERR_OCI_RUNTIME_SOCKET
		                                              : OTA_ERR_OCI_PLAN_INVALID,
		                     p->rel, "declared path is neither a directory nor a regular file");
	return OTA_OK; /* hardlinks of writable files: the scan decides */
}

/* ---- tree scan: sockets anywhere, hardlinks under writable regions ---- */

/* A multiply linked regular file seen under a writable path. */
typedef struct link_seen {
	dev_t dev;
	ino_t ino;
	nlink_t nlink;
	char *rel;
} link_seen;

typedef struct scan_ctx {
	const ota_oci_admitted *a;
	size_t entries;
	bool rootfs; /* scanning the rootfs: only sockets matter */
	volatile sig_atomic_t *cancel; /* the caller's flag (SIGINT/SIGTERM); may be NULL */
	ota_error *err;
	link_seen *links;
	size_t nlinks, cap;
} scan_ctx;

static int cmp_link(const void *x, const void *y)
{
	const link_seen *a = x, *b = y;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return 0;
}

/*
 * FS-05: a file under a writable path whose inode has links elsewhere (in a
 * protected or read-only part of the repo, or outside the repo) would make
 * that other name writable. Every link of such an inode must lie under the
 * writable paths, so the task's own hardlinks stay allowed.
 */
static ota_err check_links(scan_ctx *c)
{
	if (c->nlinks == 0)
		return OTA_OK;
	qsort(c->links, c->nlinks, sizeof *c->links, cmp_link);
	for (size_t i = 0; i < c->nlinks;) {
		size_t j = i;
		while (j < c->nlinks && cmp_link(&c->links[i], &c->links[j]) == 0)
			j++;
		if ((nlink_t)(j - i) < c->links[i].nlink)
			return ota_error_set(c->err, OTA_ERR_OCI_HARDLINK_ALIAS, c->links[i].rel,
			                     "file under a writable path has %lu links, %zu of them "
			                     "under writable paths (an alias of other content)",
			                     (unsigned long)c->links[i].nlink, j - i);
		i = j;
	}
	return OTA_OK;
}

static void scan_free(scan_ctx *c)
{
	for (size_t i = 0; i < c->nlinks; i++)
		free(c->links[i].rel);
	free(c->links);
	c->links = NULL;
	c->nlinks = c->cap = 0;
}

/*
 * The rendered config mounts /proc, /dev, /sys, /tmp and /workspace over the
 * image's own entries. The runtime resolves a destination inside the rootfs,
 * so an image whose /tmp is a symlink to /workspace/reports had its tmpfs
 * land there (then hidden by the repository) and the task's /tmp become the
 * host carve-out; one whose /workspace is a symlink moved the repository.
 * Each must be a directory or absent (the runtime then makes it).
 */
static ota_err rootfs_mount_points(int rootfd, ota_error *err)
{
	static const char *const points[] = {"proc", "dev", "sys", "tmp", "workspace"};
	for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
		struct stat st;
		if (fstatat(rootfd, points[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			return ota_error_set(err, OTA_ERR_IO, points[i], "rootfs: fstatat: %s",
			                     strerror(errno));
		}
		if (!S_ISDIR(st.st_mode))
			return ota_error_set(err, OTA_ERR_OCI_ROOTFS_MOUNT_POINT, points[i],
			                     "the root filesystem's /%s is a %s, not a directory: the "
			                     "rendered mount would land elsewhere",
			                     points[i], S_ISLNK(st.st_mode) ? "symlink" : "non-directory");
	}
	return OTA_OK;
}

/*
 * runc's init opens the container's /etc/passwd and /etc/group (to find the
 * process user's home and groups) before it execs the container's process,
 * with nothing to bound the wait: a FIFO there (or a symlink to one, e.g.
 * in a carve-out of the repository) blocked `runc run` and with it the
 * runner, which SIGINT/SIGTERM did not end. /etc must be a directory or
 * absent, the two files regular files or absent, none a symlink.
 */
static ota_err rootfs_user_db(int rootfd, ota_error *err)
{
	static const char *const files[] = {"etc", "etc/passwd", "etc/group"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct stat st;
		if (fstatat(rootfd, files[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT || (i > 0 && errno == ENOTDIR))
				continue;
			return ota_error_set(err, OTA_ERR_IO, files[i], "rootfs: fstatat: %s",
			                     strerror(errno));
		}
		bool ok = i == 0 ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
		if (!ok)
			return ota_error_set(err, OTA_ERR_OCI_ROOTFS_USER_DB, files[i],
			                     "the root filesystem's /%s is a %s, not a %s: the runtime "
			                     "reads it before the task starts",
			                     files[i],
			                     S_ISLNK(st.st_mode)    ? "symlink"
			                     : S_ISFIFO(st.st_mode) ? "FIFO"
			                     : S_ISDIR(st.st_mode)  ? "directory"
			                     : S_ISREG(st.st_mode)  ? "regular file"
			                                            : "socket or device",
			                     i == 0 ? "directory" : "regular file");
	}
	return OTA_OK;
}

static bool rel_in_list(const char *rel, const oci_path *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (oci_path_within(rel, v[i].rel))
			return true;
	return false;
}

/* The index of the path of v whose rel is exactly rel, or SIZE_MAX. */
static size_t rel_index(const char *rel, const oci_path *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].rel, rel) == 0)
			return i;
	return SIZE_MAX;
}

/*
 * a->pins: for each protected path P that exists under a writable mount W
 * (the repository when it is writable, else the outermost carve-out at or
 * above it), every directory strictly between W and P that is neither a
 * carve-out nor a protected path (those are mounts already), resolved as a
 * writable path is (beneath the repository, no symlink, no other file
 * system), at most OTA_OCI_MAX_PATHS of them; sorted shallow first.
 */
static ota_err pin_parents(ota_oci_admitted *a, int repo_fd, ota_error *err)
{
	for (size_t i = 0; i < a->n_prot; i++) {
		const oci_path *p = &a->prot[i];
		if (!p->exists)
			continue;
		/* W is the OUTERMOST writable mount above P: a directory between
		 * an outer carve-out and an inner one is renameable too (a
		 * directory holding mounts can be moved), and with it the inner
		 * carve-out and P's mount */
		size_t wl = a->repo_writable ? 0 : SIZE_MAX; /* length of W's rel; 0: the repository */
		for (size_t j = 0; j < a->n_writable && wl != 0; j++)
			if (oci_path_within(p->rel, a->writable[j].rel) &&
			    (wl == SIZE_MAX || strlen(a->writable[j].rel) < wl))
				wl = strlen(a->writable[j].rel);
		if (wl == SIZE_MAX)
			continue; /* under a read-only parent: nothing to rename */
		char *rel = strdup(p->rel);
		if (rel == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "pins", "out of memory");
		ota_err rc = OTA_OK;
		/* each '/' after W ends one directory strictly between W and P */
		for (size_t k = wl == 0 ? 0 : wl + 1; rc == OTA_OK && rel[k] != '\0'; k++) {
			if (rel[k] != '/')
				continue;
			rel[k] = '\0';
			/* inside a protected directory (a read-only mount of its
			 * own) nothing can be renamed: no pin there, nor below */
			if (rel_index(rel, a->prot, a->n_prot) != SIZE_MAX) {
				rel[k] = '/';
				break;
			}
			if (rel_index(rel, a->writable, a->n_writable) == SIZE_MAX &&
			    rel_index(rel, a->pins, a->n_pins) == SIZE_MAX) {
				if (a->n_pins == OTA_OCI_MAX_PATHS)
					rc = ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, p->rel,
					                   "more than %u directories to pin above protected "
					                   "paths",
					                   OTA_OCI_MAX_PATHS);
				else
					rc = resolve_one(repo_fd, a->repo, rel, true, &a->pins[a->n_pins++],
					                 err);
				if (rc == OTA_OK && !a->pins[a->n_pins - 1].is_dir)
					rc = ota_error_set(err, OTA_ERR_OCI_PATH_ESCAPE, rel,
					                   "a parent of a protected path is not a directory");
			}
			rel[k] = '/';
		}
		free(rel);
		if (rc != OTA_OK)
			return rc;
	}
	/* shallow first: a pin is mounted after the pins above it */
	for (size_t i = 1; i < a->n_pins; i++)
		for (size_t j = i; j > 0 && strlen(a->pins[j - 1].rel) > strlen(a->pins[j].rel); j--) {
			oci_path t = a->pins[j];
			a->pins[j] = a->pins[j - 1];
			a->pins[j - 1] = t;
		}
	return OTA_OK;
}

/*
 * A set-user-ID (or set-group-ID, group-executable) file, or one with file
 * capabilities, under a writable path: write() clears the bits and the
 * capabilities of a task without CAP_FSETID, but a write through a shared
 * writable mapping keeps both (Linux 6.18 here), so the task (uid 0 of the
 * host) could replace a root-owned set-user-ID binary's content with its
 * own and leave it to any local user who can reach the repository.
 */
static bool setid_or_caps(int dfd, const char *name, const struct stat *st)
{
	if ((st->st_mode & S_ISUID) != 0 ||
	    (st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return true;
	char p[64 + NAME_MAX];
	int n = snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dfd, name);
	if (n < 0 || (size_t)n >= sizeof p)
		return true; /* cannot tell: refuse */
	ssize_t r = lgetxattr(p, "security.capability", NULL, 0);
	return r >= 0 || (errno != ENODATA && errno != ENOTSUP && errno != ENOENT);
}

static ota_err repo_device(scan_ctx *c, const char *rel)
{
	return ota_error_set(c->err, OTA_ERR_OCI_REPO_DEVICE, rel,
	                     "device node in the repository (a root task may open it wherever a "
	                     "mount lacks nodev, e.g. a host mount nested in the repository)");
}

static ota_err scan_dir(scan_ctx *c, int dfd, const char *rel, bool in_writable, unsigned depth)
{
	if (depth > 256)
		return ota_error_set(c->err, OTA_ERR_OCI_SCAN_LIMIT, rel[0] ? rel : ".",
		                     "directory nesting deeper than 256");
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return ota_error_set(c->err, OTA_ERR_IO, rel, "fdopendir: %s", strerror(errno));
	}
	ota_err rc = OTA_OK;
	struct dirent *de;
	char sub[OTA_MAX_PATH_BYTES];
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* checked at every entry, as the fingerprint walk does: a scan of
		 * up to OTA_OCI_MAX_SCAN_ENTRIES stops at once on SIGINT/SIGTERM */
		if (c->cancel != NULL && *c->cancel != 0) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_INTERRUPTED, rel[0] ? rel : ".",
			                   "admission scan of the %s interrupted after %zu entries",
			                   c->rootfs ? "rootfs" : "repository", c->entries);
			break;
		}
		if (++c->entries > OTA_OCI_MAX_SCAN_ENTRIES) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_SCAN_LIMIT, rel,
			                   "more than %u entries", OTA_OCI_MAX_SCAN_ENTRIES);
			break;
		}
		int n = rel[0] ? snprintf(sub, sizeof sub, "%s/%s", rel, de->d_name)
		               : snprintf(sub, sizeof sub, "%s", de->d_name);
		if (n < 0 || (size_t)n >= sizeof sub) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_SCAN_LIMIT, rel, "path too long");
			break;
		}
		/* The directory entry's type (the same inode type stat would
		 * give) spares a stat of each entry that needs nothing more:
		 * only sockets, directories, entries of unknown type and regular
		 * files under a writable path (their link count) are stat'ed. */
		bool w = !c->rootfs &&
		         (in_writable || rel_in_list(sub, c->a->writable, c->a->n_writable));
		/* a device node the image brings along (its layers are unpacked
		 * as root) outside /dev, which the rendered /dev tmpfs hides: a
		 * root task with no capabilities may still open it as far as its
		 * mode goes, and crun runs here with no device cgroup
		 * (--cgroup-manager=disabled): /dev/kmsg, ttys, input devices.
		 * The repository's binds are nodev. */
		bool dev_top = c->rootfs && depth == 0 && strcmp(de->d_name, "dev") == 0;
		if (c->rootfs && (de->d_type == DT_CHR || de->d_type == DT_BLK)) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_ROOTFS_DEVICE, sub,
			                   "device node in the root filesystem outside /dev");
			break;
		}
		/* a device node in the repository: the binds are rendered
		 * nodev (recursively), but a host mount nested in the repository
		 * kept its own flags under the non-recursive nodev, and under
		 * crun (no device cgroup) a 0666 /dev/kmsg node there let the
		 * task write into the host's kernel log. The repository's
		 * content is the task author's: no node is admitted. */
		if (!c->rootfs && (de->d_type == DT_CHR || de->d_type == DT_BLK)) {
			rc = repo_device(c, sub);
			break;
		}
		if (de->d_type == DT_LNK || de->d_type == DT_CHR || de->d_type == DT_BLK ||
		    de->d_type == DT_FIFO || (de->d_type == DT_REG && !w))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* vanished */
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			rc = c->rootfs ? ota_error_set(c->err, OTA_ERR_OCI_ROOTFS_DEVICE, sub,
			                               "device node in the root filesystem outside /dev")
			               : repo_device(c, sub);
			break;
		}
		if (S_ISSOCK(st.st_mode)) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_RUNTIME_SOCKET, sub,
			                   "socket file inside the boundary (%s)",
			                   c->rootfs ? "rootfs" : "repository");
			break;
		}
		if (c->rootfs) {
			if (S_ISDIR(st.st_mode) && !dev_top) {
				int fd = openat(dirfd(d), de->d_name,
				                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd < 0)
					continue;
				rc = scan_dir(c, fd, sub, false, depth + 1);
				if (rc != OTA_OK)
					break;
			}
			continue;
		}
		bool prot = rel_in_list(sub, c->a->prot, c->a->n_prot);
		if (S_ISREG(st.st_mode) && w && !prot && setid_or_caps(dirfd(d), de->d_name, &st)) {
			rc = ota_error_set(c->err, OTA_ERR_OCI_WRITABLE_SETID, sub,
			                   "file under a writable path is %s: the task could rewrite "
			                   "its content through a shared mapping, which keeps %s",
			                   (st.st_mode & S_ISUID) != 0   ? "set-user-ID"
			                   : (st.st_mode & S_ISGID) != 0 ? "set-group-ID"
			                                                 : "file-capable",
			                   (st.st_mode & (S_ISUID | S_ISGID)) != 0 ? "the bit"
			                                                           : "the capabilities");
			break;
		}
		if (S_ISREG(st.st_mode) && w && !prot && st.st_nlink > 1) {
			if (c->nlinks == c->cap) {
				size_t ncap = c->cap ? c->cap * 2 : 64;
				link_seen *nl = realloc(c->links, ncap * sizeof *nl);
				if (nl == NULL) {
					rc = OTA_ERR_NOMEM;
					break;
				}
				c->links = nl;
				c->cap = ncap;
			}
			link_seen *l = &c->links[c->nlinks];
			l->dev = st.st_dev;
			l->ino = st.st_ino;
			l->nlink = st.st_nlink;
			l->rel = strdup(sub);
			if (l->rel == NULL) {
				rc = OTA_ERR_NOMEM;
				break;
			}
			c->nlinks++;
		}
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name,
			                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			rc = scan_dir(c, fd, sub, w, depth + 1);
			if (rc != OTA_OK)
				break;
		}
	}
	closedir(d);
	return rc;
}

/* Refuses when dir is "/" or an ancestor-or-equal of a runtime/control path. */
static ota_err check_not_ancestor(const char *dir, const char *what, const char *runtime_root,
                                  ota_error *err)
{
	const char *fixed[] = {"/run", "/var/run", "/proc", "/sys", "/dev", "/var/lib/docker",
	                       "/var/lib/containerd", "/var/lib/containers", "/run/ota"};
	if (strcmp(dir, "/") == 0)
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, what,
		                     "the host root cannot be the %s", what);
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (oci_path_within(fixed[i], dir) || oci_path_within(dir, fixed[i]))
			return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, dir,
			                     "%s overlaps runtime state or control sockets (%s)", what,
			                     fixed[i]);
	const char *envs[] = {"SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "DOCKER_HOST", "CONTAINER_HOST"};
	for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
		const char *v = getenv(envs[i]);
		if (v == NULL)
			continue;
		if (strncmp(v, "unix://", 7) == 0)
			v += 7;
		if (v[0] == '/' && oci_path_within(v, dir))
			return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, dir,
			                     "%s contains %s (%s)", what, envs[i], v);
	}
	if (runtime_root != NULL && runtime_root[0] == '/') {
		char real[PATH_MAX];
		const char *rr = realpath(runtime_root, real) != NULL ? real : runtime_root;
		if (oci_path_within(rr, dir) || oci_path_within(dir, rr))
			return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, dir,
			                     "%s overlaps the runtime state directory %s", what, rr);
	}
	return OTA_OK;
}

/* Host mounts strictly below a writable path (or anywhere below a writable
 * repo root) could alias other content through the writable bind. */
static ota_err check_host_mounts(const ota_oci_admitted *a, ota_error *err)
{
	uint8_t *text = NULL;
	size_t len = 0;
	ota_err rc = oci_proc_read("/proc/self/mountinfo", OTA_OCI_MAX_MOUNTINFO_BYTES, &text, &len,
	                           err);
	if (rc != OTA_OK)
		return rc;
	char *buf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	rc = oci_mountinfo_parse(ota_bytes_make(text, len), &buf, &m, &n, err);
	free(text);
	if (rc != OTA_OK)
		return rc;
	for (size_t i = 0; i < n && rc == OTA_OK; i++) {
		if (!oci_path_within(m[i].point, a->repo) || strcmp(m[i].point, a->repo) == 0)
			continue;
		if (a->repo_writable) {
			rc = ota_error_set(err, OTA_ERR_OCI_MOUNT_ALIAS, m[i].point,
			                   "host mount below a writable repository root");
			break;
		}
		for (size_t j = 0; j < a->n_writable; j++) {
			if (oci_path_within(m[i].point, a->writable[j].host)) {
				rc = ota_error_set(err, OTA_ERR_OCI_MOUNT_ALIAS, m[i].point,
				                   "host mount at or below writable path %s",
				                   a->writable[j].rel);
				break;
			}
		}
	}
	free(m);
	free(buf);
	return rc;
}

/* realpath of in, or of its longest existing ancestor with the rest
 * appended (a file or directory the runner creates later); false when it
 * does not fit. */
static bool real_or_ancestor(const char *in, char out[PATH_MAX])
{
	size_t len = strlen(in);
	if (len == 0 || len >= PATH_MAX)
		return false;
	for (;;) {
		char head[PATH_MAX], buf[PATH_MAX];
		if (len == 0)
			snprintf(head, sizeof head, "%s", in[0] == '/' ? "/" : ".");
		else
			snprintf(head, sizeof head, "%.*s", (int)len, in);
		if (realpath(head, buf) != NULL) {
			const char *tail = in + len; /* "", "/rest" or (after "/" or ".") "rest" */
			bool sep = tail[0] != '\0' && tail[0] != '/' && strcmp(buf, "/") != 0;
			int n = snprintf(out, PATH_MAX, "%s%s%s", buf, sep ? "/" : "", tail);
			return n > 0 && n < PATH_MAX;
		}
		if (len == 0)
			return false;
		while (len > 0 && in[len - 1] != '/') /* drop the last component */
			len--;
		while (len > 1 && in[len - 1] == '/') /* and its slashes, "/" stays */
			len--;
	}
}

ota_err oci_admit_private(const ota_oci_admitted *a, const ota_oci_run_opts *o, ota_error *err)
{
	const char *fixed[2] = {o->lease_db != NULL ? o->lease_db : OTA_OCI_DEFAULT_LEASE_DB,
	                        oci_state_dir(o)};
	size_t n = 2 + (o->private_paths != NULL ? o->n_private_paths : 0);
	for (size_t i = 0; i < n; i++) {
		const char *p = i < 2 ? fixed[i] : o->private_paths[i - 2];
		if (p == NULL || p[0] == '\0')
			continue;
		char real[PATH_MAX];
		if (!real_or_ancestor(p, real))
			return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, p,
			                     "cannot resolve the runner's file");
		const char *inside = oci_path_within(real, a->repo)     ? "repository"
		                     : oci_path_within(real, a->rootfs) ? "root filesystem"
		                                                        : NULL;
		if (inside != NULL)
			return ota_error_set(err, OTA_ERR_OCI_RUNTIME_SOCKET, p,
			                     "the runner's %s (%s) lies in the %s: the task would "
			                     "reach it",
			                     i == 0 ? "lease database" : i == 1 ? "state directory"
			                                                        : "private file",
			                     real, inside);
	}
	return OTA_OK;
}

static ota_err real_dir(const char *in, const char *what, char **out, dev_t *dev, ino_t *ino,
                        ota_error *err)
{
	*out = NULL;
	if (in == NULL || in[0] != '/')
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, what, "must be an absolute path");
	char buf[PATH_MAX];
	if (realpath(in, buf) == NULL)
		return ota_error_set(err, OTA_ERR_OCI_PATH_MISSING, in, "%s: %s", what,
		                     strerror(errno));
	struct stat st;
	if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, in, "%s is not a directory", what);
	if (dev != NULL)
		*dev = st.st_dev;
	if (ino != NULL)
		*ino = st.st_ino;
	*out = strdup(buf);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

static bool admit_cancelled(const ota_oci_admit_opts *o)
{
	return o->cancel != NULL && *o->cancel != 0;
}

ota_err ota_oci_admit(const ota_oci_plan *plan, const char *runtime_root, ota_oci_admitted **out,
                      ota_error *err)
{
	ota_oci_admit_opts o = {runtime_root, NULL};
	return ota_oci_admit_with(plan, &o, out, err);
}

ota_err ota_oci_admit_with(const ota_oci_plan *plan, const ota_oci_admit_opts *opts,
                           ota_oci_admitted **out, ota_error *err)
{
	*out = NULL;
	ota_oci_admit_opts none = {NULL, NULL};
	const ota_oci_admit_opts *o = opts != NULL ? opts : &none;
	const char *runtime_root = o->runtime_root;
	if (plan == NULL || plan->argc == 0 || plan->argv == NULL || plan->argv[0] == NULL)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "argv", "no task argv");
	if (plan->network != OTA_OCI_NET_LOOPBACK_ONLY && plan->network != OTA_OCI_NET_NONE)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "network", "unknown network mode");
	if (plan->n_writable > OTA_OCI_MAX_PATHS || plan->n_protected > OTA_OCI_MAX_PATHS)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "paths", "too many paths");
	if (plan->timeout_seconds < 0)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "timeout", "negative timeout");
	ota_oci_admitted *a = calloc(1, sizeof *a);
	if (a == NULL)
		return OTA_ERR_NOMEM;
	a->repo_fd = -1;
	int repo_fd = -1;
	ota_err rc = real_dir(plan->repo, "repo", &a->repo, &a->repo_dev, &a->repo_ino, err);
	if (rc != OTA_OK)
		goto out_fail;
	rc = real_dir(plan->rootfs, "rootfs", &a->rootfs, NULL, NULL, err);
	if (rc != OTA_OK)
		goto out_fail;
	a->repo_writable = plan->repo_writable;
	rc = check_not_ancestor(a->repo, "repository", runtime_root, err);
	if (rc == OTA_OK)
		rc = check_not_ancestor(a->rootfs, "rootfs", runtime_root, err);
	if (rc != OTA_OK)
		goto out_fail;
	if (oci_path_within(a->repo, a->rootfs) || oci_path_within(a->rootfs, a->repo)) {
		rc = ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, a->rootfs,
		                   "rootfs and repository overlap");
		goto out_fail;
	}
	repo_fd = open(a->repo, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (repo_fd < 0) {
		rc = ota_error_set(err, OTA_ERR_IO, a->repo, "open: %s", strerror(errno));
		goto out_fail;
	}
	{
		/* the descriptor every later look at the repository starts from
		 * (the protected paths' fingerprints): the directory admitted */
		struct stat rst;
		if (fstat(repo_fd, &rst) != 0 || rst.st_dev != a->repo_dev ||
		    rst.st_ino != a->repo_ino) {
			rc = ota_error_set(err, OTA_ERR_OCI_IDENTITY_CHANGED, a->repo,
			                   "the repository changed while it was admitted");
			goto out_fail;
		}
	}
	a->writable = calloc(plan->n_writable + 1, sizeof *a->writable);
	a->prot = calloc(plan->n_protected + 1, sizeof *a->prot);
	a->pins = calloc(OTA_OCI_MAX_PATHS, sizeof *a->pins);
	if (a->writable == NULL || a->prot == NULL || a->pins == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out_fail;
	}
	for (size_t i = 0; i < plan->n_writable; i++) {
		a->n_writable = i + 1;
		rc = resolve_one(repo_fd, a->repo, plan->writable[i], true, &a->writable[i], err);
		if (rc != OTA_OK)
			goto out_fail;
	}
	for (size_t i = 0; i < plan->n_protected; i++) {
		a->n_prot = i + 1;
		rc = resolve_one(repo_fd, a->repo, plan->protected_paths[i], false, &a->prot[i], err);
		if (rc != OTA_OK)
			goto out_fail;
	}
	/* Overlaps: a protected path may sit below a writable one (it wins),
	 * never at or above it; duplicates are refused. */
	for (size_t i = 0; i < a->n_prot; i++) {
		for (size_t j = 0; j < a->n_writable; j++) {
			if (oci_path_within(a->writable[j].rel, a->prot[i].rel)) {
				rc = ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, a->prot[i].rel,
				                   "writable path %s is at or below a protected path",
				                   a->writable[j].rel);
				goto out_fail;
			}
		}
		bool under_w = a->repo_writable ||
		               rel_in_list(a->prot[i].rel, a->writable, a->n_writable);
		if (!a->prot[i].exists && under_w) {
			rc = ota_error_set(err, OTA_ERR_OCI_PROTECTED_UNDEFENDABLE, a->prot[i].rel,
			                   "protected path does not exist under a writable parent; "
			                   "create it before the run");
			goto out_fail;
		}
	}
	for (size_t i = 0; i < a->n_writable; i++)
		for (size_t j = i + 1; j < a->n_writable; j++)
			if (strcmp(a->writable[i].rel, a->writable[j].rel) == 0) {
				rc = ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, a->writable[i].rel,
				                   "duplicate writable path");
				goto out_fail;
			}
	rc = pin_parents(a, repo_fd, err);
	if (rc != OTA_OK)
		goto out_fail;
	if (admit_cancelled(o)) {
		rc = ota_error_set(err, OTA_ERR_OCI_INTERRUPTED, "admission", "admission interrupted");
		goto out_fail;
	}
	rc = check_host_mounts(a, err);
	if (rc != OTA_OK)
		goto out_fail;
	scan_ctx c = {a, 0, false, o->cancel, err, NULL, 0, 0};
	int fd = open(a->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = ota_error_set(err, OTA_ERR_IO, a->repo, "open: %s", strerror(errno));
		goto out_fail;
	}
	rc = scan_dir(&c, fd, "", a->repo_writable, 0);
	if (rc == OTA_OK)
		rc = check_links(&c);
	scan_free(&c);
	if (rc != OTA_OK)
		goto out_fail;
	c.rootfs = true;
	fd = open(a->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = ota_error_set(err, OTA_ERR_IO, a->rootfs, "open: %s", strerror(errno));
		goto out_fail;
	}
	rc = rootfs_mount_points(fd, err);
	if (rc == OTA_OK)
		rc = rootfs_user_db(fd, err);
	if (rc != OTA_OK) {
		close(fd);
		goto out_fail;
	}
	rc = scan_dir(&c, fd, "", false, 0);
	if (rc != OTA_OK)
		goto out_fail;
	a->scanned_entries = c.entries;
	a->repo_fd = repo_fd;
	*out = a;
	return OTA_OK;
out_fail:
	if (repo_fd >= 0)
		close(repo_fd);
	ota_oci_admitted_free(a);
	return rc;
}
