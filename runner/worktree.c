/*
 * The work tree a run was admitted on, as one git tree object id: what
 * `git add -A && git write-tree` would print for REPO if nothing were
 * ignored, computed without running git (its config, hooks and filters are
 * the task author's to write). A merge gate compares it with
 * `git rev-parse REV^{tree}`: equal exactly when the run's repository held
 * the commit's files and nothing else. Uncommitted edits, untracked and
 * ignored files, outputs of an earlier run in a writable path, a changed
 * executable bit: each makes it differ.
 *
 * How each entry is hashed (git's loose object format, SHA-1 or SHA-256
 * as the repository's commit ids are long):
 *   - a regular file: blob "blob SIZE\0" + content, mode 100755 when the
 *     owner may execute it, else 100644 (git's ce_permissions);
 *   - a symlink, never followed: a blob of its target, mode 120000;
 *   - a directory: a tree of its entries, mode 40000, left out when it has
 *     none (git stores no empty tree in another);
 *   - a directory holding ".git": a gitlink (mode 160000) to the commit its
 *     HEAD resolves to, as git records a submodule or an embedded
 *     repository: a ".git" directory is resolved as REPO/.git is
 *     (revision.c), a ".git" file (a submodule's "gitdir: ../.git/modules/
 *     NAME") only when it points into REPO/.git/modules; and only once the
 *     directory's files, hashed the same way, are that commit's tree (read
 *     from its object store: gitobj.c), where git would record the commit
 *     whatever the files;
 *   - a tree's entries sorted as git sorts them (a directory's name
 *     compared as if it ended in "/").
 * Left out: REPO/.git itself, and what the toolkit writes into the
 * repository (regular files NAME.json directly in .ota/archives and
 * .ota/cleanup: toolkit_output). Anything else (a FIFO, a
 * socket, a device, a file that changes while it is hashed, a gitdir
 * pointer elsewhere, more than OTA_MAX_WORKTREE_ENTRIES entries or
 * OTA_MAX_WORKTREE_BYTES of content, deeper than OTA_MAX_WORKTREE_DEPTH)
 * is an error: the work tree is then not recorded, never approximated.
 * Every entry is opened relative to its directory's descriptor with
 * O_NOFOLLOW, so a symlink swapped in is never followed.
 */
#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "git_internal.h"
#include "ota/limits.h"
#include "ota/runner.h"

#define READ_CHUNK (256u * 1024u)

typedef struct {
	char *name;
	size_t len;
	unsigned mode; /* 0100644, 0100755, 0120000, 040000, 0160000 */
	uint8_t oid[32];
} entry;

typedef struct {
	int rootfd;
	const EVP_MD *md;
	size_t oid_len; /* 20 or 32 bytes */
	EVP_MD_CTX *ctx;
	uint8_t *buf; /* READ_CHUNK */
	uint64_t entries, bytes;
	volatile sig_atomic_t *cancel; /* may be NULL */
	ota_error *err;
	/* gitlinks: the commits' trees looked up so far, and what their
	 * lookups may still inflate */
	struct {
		dev_t dev;
		ino_t ino;
		uint8_t oid[32], tree[32];
	} seen[64];
	size_t nseen;
	uint64_t inflate_budget;
} walk;

/* The caller's SIGINT/SIGTERM flag is set: stop at the next entry or chunk. */
static bool cancelled(walk *w, const char *path)
{
	if (w->cancel == NULL || *w->cancel == 0)
		return false;
	ota_error_set(w->err, OTA_ERR_OCI_INTERRUPTED, path[0] != '\0' ? path : ".",
	              "interrupted while the work tree was hashed");
	return true;
}

static ota_err fail(walk *w, ota_err code, const char *path, const char *what)
{
	return ota_error_set(w->err, code, path[0] != '\0' ? path : ".", "%s", what);
}

/* path + "/" + name, for errors (cut short at cap: the walk checks the
 * lengths of the paths it descends into before it joins them) */
static void join(char *out, size_t cap, const char *path, const char *name)
{
	int n = snprintf(out, cap, "%s%s%s", path, path[0] != '\0' ? "/" : "", name);
	if (n < 0)
		out[0] = '\0';
}

static ota_err hash_object(walk *w, const char *type, const uint8_t *body, size_t n,
                           uint8_t oid[32], const char *path)
{
	char head[48];
	int hl = snprintf(head, sizeof head, "%s %zu", type, n);
	if (EVP_DigestInit_ex(w->ctx, w->md, NULL) != 1 ||
	    EVP_DigestUpdate(w->ctx, head, (size_t)hl + 1) != 1 ||
	    (n > 0 && EVP_DigestUpdate(w->ctx, body, n) != 1) ||
	    EVP_DigestFinal_ex(w->ctx, oid, NULL) != 1)
		return fail(w, OTA_ERR_CRYPTO, path, "hash");
	return OTA_OK;
}

/* A regular file's blob, read through fd (its size from fstat, which must
 * still hold at the end: a file that grows or shrinks meanwhile fails). */
static ota_err hash_file(walk *w, int dirfd, const char *name, const char *path, unsigned *mode,
                         uint8_t oid[32])
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return ota_error_set(w->err, errno == ELOOP ? OTA_ERR_UNSUPPORTED : OTA_ERR_IO, path,
		                     "cannot open: %s", strerror(errno));
	struct stat st;
	ota_err rc = OTA_OK;
	if (fstat(fd, &st) != 0) {
		rc = ota_error_set(w->err, OTA_ERR_IO, path, "fstat: %s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(w, OTA_ERR_UNSUPPORTED, path, "changed while the work tree was hashed");
		goto out;
	}
	uint64_t size = (uint64_t)st.st_size;
	w->bytes += size;
	if (w->bytes > OTA_MAX_WORKTREE_BYTES) {
		rc = ota_error_set(w->err, OTA_ERR_TOO_LARGE, path,
		                   "the work tree holds more than %llu bytes of files",
		                   (unsigned long long)OTA_MAX_WORKTREE_BYTES);
		goto out;
	}
	*mode = (st.st_mode & S_IXUSR) ? 0100755u : 0100644u;
	char head[48];
	int hl = snprintf(head, sizeof head, "blob %llu", (unsigned long long)size);
	if (EVP_DigestInit_ex(w->ctx, w->md, NULL) != 1 ||
	    EVP_DigestUpdate(w->ctx, head, (size_t)hl + 1) != 1) {
		rc = fail(w, OTA_ERR_CRYPTO, path, "hash");
		goto out;
	}
	uint64_t left = size;
	for (;;) {
		/* one byte more than is left: a file that grew is seen */
		size_t want = left < READ_CHUNK ? (size_t)left + 1 : READ_CHUNK;
		ssize_t r = read(fd, w->buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = ota_error_set(w->err, OTA_ERR_IO, path, "read: %s", strerror(errno));
			goto out;
		}
		if ((uint64_t)r > left || (r == 0 && left > 0)) {
			rc = fail(w, OTA_ERR_UNSUPPORTED, path, "changed while the work tree was hashed");
			goto out;
		}
		if (r == 0)
			break;
		if (cancelled(w, path)) {
			rc = OTA_ERR_OCI_INTERRUPTED;
			goto out;
		}
		if (EVP_DigestUpdate(w->ctx, w->buf, (size_t)r) != 1) {
			rc = fail(w, OTA_ERR_CRYPTO, path, "hash");
			goto out;
		}
		left -= (uint64_t)r;
	}
	if (EVP_DigestFinal_ex(w->ctx, oid, NULL) != 1)
		rc = fail(w, OTA_ERR_CRYPTO, path, "hash");
out:
	close(fd);
	return rc;
}

static ota_err hash_link(walk *w, int dirfd, const char *name, const char *path, uint8_t oid[32])
{
	char target[OTA_MAX_PATH_BYTES + 1];
	ssize_t n = readlinkat(dirfd, name, target, sizeof target);
	if (n < 0)
		return ota_error_set(w->err, OTA_ERR_IO, path, "readlink: %s", strerror(errno));
	if ((size_t)n >= sizeof target)
		return fail(w, OTA_ERR_TOO_LARGE, path, "symlink target too long");
	return hash_object(w, "blob", (const uint8_t *)target, (size_t)n, oid, path);
}

static ota_err hash_dir(walk *w, int dirfd, const char *path, unsigned depth, bool top,
                        uint8_t oid[32], bool *empty);

/*
 * The tree of commit oid in the object store of gitfd: remembered per
 * (store, commit) for the walk (many submodules may name one store), every
 * lookup of the walk inflating at most OTA_MAX_GIT_INFLATE_BYTES together.
 */
static ota_err commit_tree(walk *w, int gitfd, const uint8_t oid[32], uint8_t tree[32])
{
	struct stat st;
	if (fstat(gitfd, &st) != 0)
		return ota_error_set(w->err, OTA_ERR_IO, "git objects", "stat: %s", strerror(errno));
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i].dev == st.st_dev && w->seen[i].ino == st.st_ino &&
		    memcmp(w->seen[i].oid, oid, w->oid_len) == 0) {
			memcpy(tree, w->seen[i].tree, w->oid_len);
			return OTA_OK;
		}
	ota_err rc = ota_git_commit_tree(gitfd, oid, w->oid_len, &w->inflate_budget, tree, w->err);
	if (rc == OTA_OK && w->nseen < sizeof w->seen / sizeof w->seen[0]) {
		w->seen[w->nseen].dev = st.st_dev;
		w->seen[w->nseen].ino = st.st_ino;
		memcpy(w->seen[w->nseen].oid, oid, w->oid_len);
		memcpy(w->seen[w->nseen].tree, tree, w->oid_len);
		w->nseen++;
	}
	return rc;
}

/*
 * The gitlink of the directory subfd at path (it holds ".git", of type
 * gtype): the commit its HEAD resolves to, of the outer repository's id
 * length, once the directory's files (hashed as a tree, its .git left out)
 * are found to be that commit's tree: a submodule whose files were changed,
 * added to or removed is an error (the work tree is then not recorded), as
 * git would record its commit alone.
 */
static ota_err gitlink(walk *w, int subfd, const char *path, unsigned depth, uint8_t oid[32])
{
	char where[OTA_MAX_PATH_BYTES];
	join(where, sizeof where, path, ".git");
	int gitfd = -1;
	struct stat st;
	if (fstatat(subfd, ".git", &st, AT_SYMLINK_NOFOLLOW) != 0)
		return ota_error_set(w->err, OTA_ERR_IO, where, "stat: %s", strerror(errno));
	ota_err rc;
	if (S_ISDIR(st.st_mode)) {
		rc = ota_dir_open_beneath(subfd, path, ".git", 0, &gitfd, w->err);
	} else if (S_ISREG(st.st_mode)) {
		/* a submodule: "gitdir: ../.git/modules/NAME", one "../" per
		 * component of path, into the outer repository's .git/modules */
		uint8_t *b = NULL;
		size_t n = 0;
		rc = ota_file_read_beneath(subfd, path, ".git", OTA_MAX_GIT_REF_FILE_BYTES, &b, &n,
		                           w->err);
		if (rc != OTA_OK)
			return rc;
		char rel[OTA_MAX_GIT_REFNAME_BYTES];
		rc = ota_git_gitdir_parse(b, n, where, depth, rel, w->err);
		free(b);
		if (rc != OTA_OK)
			return rc;
		rc = ota_dir_open_beneath(w->rootfd, "", rel, 0, &gitfd, w->err);
	} else {
		return fail(w, OTA_ERR_UNSUPPORTED, where, "neither a directory nor a gitdir file");
	}
	if (rc != OTA_OK)
		return rc;
	char rev[OTA_RUNNER_REVISION_MAX + 1];
	rc = ota_git_resolve_head(gitfd, rev, w->err);
	if (rc == OTA_OK && strlen(rev) != w->oid_len * 2)
		rc = fail(w, OTA_ERR_UNSUPPORTED, where,
		          "its commit ids are not as long as the repository's");
	for (size_t i = 0; rc == OTA_OK && i < w->oid_len; i++) {
		unsigned v;
		if (sscanf(rev + 2 * i, "%2x", &v) != 1)
			rc = fail(w, OTA_ERR_UNSUPPORTED, where, "commit id");
		oid[i] = (uint8_t)v;
	}
	uint8_t tree[32];
	if (rc == OTA_OK)
		rc = commit_tree(w, gitfd, oid, tree);
	close(gitfd);
	if (rc != OTA_OK)
		return rc;
	/* the directory's files against the commit's tree */
	uint8_t files[32];
	bool empty = false;
	rc = hash_dir(w, subfd, path, depth, true, files, &empty);
	if (rc == OTA_OK && empty)
		rc = hash_object(w, "tree", NULL, 0, files, path);
	if (rc == OTA_OK && memcmp(files, tree, w->oid_len) != 0)
		rc = fail(w, OTA_ERR_UNSUPPORTED, path,
		          "its files are not those of the commit its HEAD names (a changed, added or "
		          "removed file in a submodule or embedded repository)");
	return rc;
}

/* git's order: a tree's name compares as if it ended in "/" */
static int entry_cmp(const void *pa, const void *pb)
{
	const entry *a = pa, *b = pb;
	size_t m = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->name, b->name, m);
	if (c != 0)
		return c;
	unsigned ca = a->len > m ? (unsigned char)a->name[m] : (a->mode == 040000u ? '/' : 0);
	unsigned cb = b->len > m ? (unsigned char)b->name[m] : (b->mode == 040000u ? '/' : 0);
	return (int)ca - (int)cb;
}

static void entries_free(entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* Skipped by name: the .git of the repository or of a gitlink's directory (top). */
static bool skipped(bool top, const char *name)
{
	return top && strcmp(name, ".git") == 0;
}

/*
 * What the toolkit writes into the repository: a regular file named as it
 * names its archives and cleanup reports (NAME.json, NAME of letters,
 * digits, '-', '_', '.', not starting with '.') directly in .ota/archives
 * or .ota/cleanup. Anything else there (another name, a directory, a
 * symlink, an atomic write's leftover) is hashed like the rest: a task that
 * may write .ota cannot hide content from the next run's work tree.
 */
static bool toolkit_output(const char *path, const char *name, const struct stat *st)
{
	if (!S_ISREG(st->st_mode) ||
	    (strcmp(path, ".ota/archives") != 0 && strcmp(path, ".ota/cleanup") != 0))
		return false;
	size_t n = strlen(name);
	if (n <= 5 || n > 105 || name[0] == '.' || strcmp(name + n - 5, ".json") != 0)
		return false;
	for (size_t i = 0; i < n - 5; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

/*
 * The tree of the directory dirfd (borrowed) at path ("" for the root).
 * *empty: it has no entry (then oid is not set).
 */
static ota_err hash_dir(walk *w, int dirfd, const char *path, unsigned depth, bool top,
                        uint8_t oid[32], bool *empty)
{
	*empty = true;
	if (depth > OTA_MAX_WORKTREE_DEPTH)
		return ota_error_set(w->err, OTA_ERR_TOO_LARGE, path, "more than %u directories deep",
		                     OTA_MAX_WORKTREE_DEPTH);
	int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return ota_error_set(w->err, OTA_ERR_IO, path[0] ? path : ".", "opendir: %s",
		                     strerror(errno));
	}
	entry *v = NULL;
	size_t n = 0, cap = 0;
	ota_err rc = OTA_OK;
	char sub[OTA_MAX_PATH_BYTES];
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				rc = ota_error_set(w->err, OTA_ERR_IO, path[0] ? path : ".", "readdir: %s",
				                   strerror(errno));
			break;
		}
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || skipped(top, name))
			continue;
		if (cancelled(w, path)) {
			rc = OTA_ERR_OCI_INTERRUPTED;
			break;
		}
		if (++w->entries > OTA_MAX_WORKTREE_ENTRIES) {
			rc = ota_error_set(w->err, OTA_ERR_TOO_LARGE, path[0] ? path : ".",
			                   "the work tree holds more than %u entries",
			                   OTA_MAX_WORKTREE_ENTRIES);
			break;
		}
		size_t nl = strlen(name);
		if (strlen(path) + 1 + nl >= sizeof sub) {
			rc = fail(w, OTA_ERR_TOO_LARGE, path, "path too long");
			break;
		}
		join(sub, sizeof sub, path, name);
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			rc = ota_error_set(w->err, OTA_ERR_IO, sub, "stat: %s", strerror(errno));
			break;
		}
		if (toolkit_output(path, name, &st))
			continue;
		entry e = {.len = nl};
		bool keep = true;
		if (S_ISREG(st.st_mode)) {
			rc = hash_file(w, dirfd, name, sub, &e.mode, e.oid);
		} else if (S_ISLNK(st.st_mode)) {
			e.mode = 0120000u;
			rc = hash_link(w, dirfd, name, sub, e.oid);
		} else if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0) {
				rc = ota_error_set(w->err, OTA_ERR_IO, sub, "cannot open: %s",
				                   strerror(errno));
				break;
			}
			struct stat gst;
			if (fstatat(sfd, ".git", &gst, AT_SYMLINK_NOFOLLOW) == 0) {
				e.mode = 0160000u;
				rc = gitlink(w, sfd, sub, depth + 1, e.oid);
			} else if (errno != ENOENT) {
				rc = ota_error_set(w->err, OTA_ERR_IO, sub, "stat .git: %s", strerror(errno));
			} else {
				bool sub_empty;
				e.mode = 040000u;
				rc = hash_dir(w, sfd, sub, depth + 1, false, e.oid, &sub_empty);
				keep = !sub_empty;
			}
			close(sfd);
		} else {
			rc = fail(w, OTA_ERR_UNSUPPORTED, sub,
			          "neither a regular file, a symlink nor a directory (git stores none)");
		}
		if (rc != OTA_OK)
			break;
		if (!keep)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			entry *nv = realloc(v, nc * sizeof *nv);
			if (nv == NULL) {
				rc = OTA_ERR_NOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		if ((e.name = malloc(nl + 1)) == NULL) {
			rc = OTA_ERR_NOMEM;
			break;
		}
		memcpy(e.name, name, nl + 1);
		v[n++] = e;
	}
	closedir(d);
	if (rc != OTA_OK || n == 0) {
		entries_free(v, n);
		return rc;
	}
	qsort(v, n, sizeof *v, entry_cmp);
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += 7 + v[i].len + 1 + w->oid_len;
	uint8_t *t = malloc(len);
	if (t == NULL) {
		entries_free(v, n);
		return OTA_ERR_NOMEM;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		o += (size_t)sprintf((char *)t + o, "%o ", v[i].mode);
		memcpy(t + o, v[i].name, v[i].len + 1);
		o += v[i].len + 1;
		memcpy(t + o, v[i].oid, w->oid_len);
		o += w->oid_len;
	}
	rc = hash_object(w, "tree", t, o, oid, path);
	free(t);
	entries_free(v, n);
	if (rc == OTA_OK)
		*empty = false;
	return rc;
}

ota_err ota_runner_worktree_id(const char *repo, size_t hex_len, volatile sig_atomic_t *cancel,
                               char out[OTA_RUNNER_REVISION_MAX + 1], ota_error *err)
{
	out[0] = '\0';
	if (repo == NULL || (hex_len != 40 && hex_len != 64))
		return ota_error_set(err, OTA_ERR_USAGE, "repo",
		                     "a repository and an id length of 40 or 64");
	walk w = {.oid_len = hex_len / 2, .cancel = cancel, .err = err,
	          .inflate_budget = OTA_MAX_GIT_INFLATE_BYTES};
	w.md = hex_len == 40 ? EVP_sha1() : EVP_sha256();
	w.rootfd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.rootfd < 0)
		return ota_error_set(err, errno == ENOENT ? OTA_ERR_NOT_FOUND : OTA_ERR_IO, repo,
		                     "cannot open the repository: %s", strerror(errno));
	w.ctx = EVP_MD_CTX_new();
	w.buf = malloc(READ_CHUNK);
	ota_err rc;
	uint8_t oid[32];
	bool empty = false;
	if (w.ctx == NULL || w.buf == NULL)
		rc = OTA_ERR_NOMEM;
	else
		rc = hash_dir(&w, w.rootfd, "", 0, true, oid, &empty);
	if (rc == OTA_OK && empty) /* git's empty tree */
		rc = hash_object(&w, "tree", NULL, 0, oid, "");
	if (rc == OTA_OK)
		for (size_t i = 0; i < w.oid_len; i++)
			snprintf(out + 2 * i, 3, "%02x", oid[i]);
	EVP_MD_CTX_free(w.ctx);
	free(w.buf);
	close(w.rootfd);
	return rc;
}
