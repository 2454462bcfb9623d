/*
 * Host-side inspection: the container's mountinfo against the plan, its
 * network namespace, fingerprints of protected content.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "oci_internal.h"
#include "ota/limits.h"

/* Decodes the \ooo escapes of mountinfo in place. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p != '\0'; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

/* Splits s at sep in place into at most max fields; returns the count. */
static size_t split_fields(char *s, char sep, char **f, size_t max)
{
	size_t n = 0;
	char *p = s;
	while (*p != '\0' && n < max) {
		while (*p == sep)
			p++;
		if (*p == '\0')
			break;
		f[n++] = p;
		while (*p != '\0' && *p != sep)
			p++;
		if (*p == sep)
			*p++ = '\0';
	}
	return n;
}

/* Next line of a NUL-terminated buffer (in place); NULL at the end. */
static char *next_line(char **cursor)
{
	char *p = *cursor;
	if (p == NULL || *p == '\0')
		return NULL;
	char *e = strchr(p, '\n');
	if (e != NULL) {
		*e = '\0';
		*cursor = e + 1;
	} else {
		*cursor = p + strlen(p);
	}
	return p;
}

ota_err oci_mountinfo_parse(ota_bytes text, char **buf_out, oci_mount **out, size_t *n,
                            ota_error *err)
{
	*buf_out = NULL;
	*out = NULL;
	*n = 0;
	if (text.len > OTA_OCI_MAX_MOUNTINFO_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "mountinfo", "mountinfo too large");
	/* one entry per line (at most OTA_OCI_MAX_MOUNTS: more are refused below) */
	size_t lines = 1;
	for (size_t i = 0; i < text.len; i++)
		lines += text.ptr[i] == '\n';
	if (lines > OTA_OCI_MAX_MOUNTS)
		lines = OTA_OCI_MAX_MOUNTS;
	char *buf = malloc(text.len + 1);
	oci_mount *m = calloc(lines, sizeof *m);
	if (buf == NULL || m == NULL) {
		free(buf);
		free(m);
		return OTA_ERR_NOMEM;
	}
	if (text.len > 0)
		memcpy(buf, text.ptr, text.len);
	buf[text.len] = '\0';
	if (strlen(buf) != text.len) {
		free(buf);
		free(m);
		return ota_error_set(err, OTA_ERR_OCI_MOUNT_UNEXPECTED, "mountinfo", "NUL byte in mountinfo");
	}
	size_t count = 0;
	char *cur = buf;
	for (char *line = next_line(&cur); line != NULL; line = next_line(&cur)) {
		if (line[0] == '\0')
			continue;
		if (count >= lines) { /* lines is OTA_OCI_MAX_MOUNTS when capped */
			free(buf);
			free(m);
			return ota_error_set(err, OTA_ERR_TOO_LARGE, "mountinfo", "too many mounts");
		}
		char *f[64];
		size_t nf = split_fields(line, ' ', f, 64);
		/* id parent maj:min root point opts [optional...] - fstype source super */
		size_t dash = 0;
		for (size_t i = 6; i < nf; i++)
			if (strcmp(f[i], "-") == 0) {
				dash = i;
				break;
			}
		if (nf < 9 || dash == 0 || dash + 2 >= nf) {
			free(buf);
			free(m);
			return ota_error_set(err, OTA_ERR_OCI_MOUNT_UNEXPECTED, "mountinfo",
			                     "malformed mountinfo line %zu", count + 1);
		}
		oci_mount *x = &m[count++];
		char *colon = NULL;
		unsigned long maj = strtoul(f[2], &colon, 10);
		unsigned long min = (colon != NULL && *colon == ':') ? strtoul(colon + 1, NULL, 10) : 0;
		x->major = (unsigned)maj;
		x->minor = (unsigned)min;
		x->root = f[3];
		x->point = f[4];
		x->opts = f[5];
		/* optional fields were separate tokens: re-join them with ',' */
		x->optional = dash > 6 ? f[6] : f[dash] + 1; /* "" when none */
		for (size_t i = 7; i < dash; i++)
			f[i][-1] = ',';
		x->fstype = f[dash + 1];
		x->source = f[dash + 2];
		x->super = dash + 3 < nf ? f[dash + 3] : f[dash + 2] + strlen(f[dash + 2]);
		unescape(x->root);
		unescape(x->point);
		unescape(x->source);
	}
	*buf_out = buf;
	*out = m;
	*n = count;
	return OTA_OK;
}

bool oci_opts_has(const char *opts, const char *word)
{
	size_t wl = strlen(word);
	const char *p = opts;
	while (p != NULL && *p != '\0') {
		const char *e = strchr(p, ',');
		size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
		if (len == wl && strncmp(p, word, wl) == 0)
			return true;
		p = e != NULL ? e + 1 : NULL;
	}
	return false;
}

static const char *const masked_paths[] = {
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
};

static bool is_masked(const char *p)
{
	for (size_t i = 0; i < sizeof masked_paths / sizeof masked_paths[0]; i++)
		if (strcmp(p, masked_paths[i]) == 0)
			return true;
	return false;
}

typedef struct expect {
	const char *dest;
	const char *role; /* "carve_out", "protected" */
	bool seen;
} expect;

ota_err ota_oci_check_mountinfo(const ota_oci_admitted *a, ota_bytes mountinfo, json_t **report,
                                ota_error *err)
{
	*report = NULL;
	char *buf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_err rc = oci_mountinfo_parse(mountinfo, &buf, &m, &n, err);
	if (rc != OTA_OK)
		return rc;
	size_t ne = a->n_writable + a->n_prot + a->n_pins;
	expect *ex = calloc(ne + 1, sizeof *ex);
	json_t *mounts = json_array();
	if (ex == NULL || mounts == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < a->n_writable; i++)
		ex[k++] = (expect){a->writable[i].dest, "carve_out", false};
	for (size_t i = 0; i < a->n_prot; i++)
		if (a->prot[i].exists)
			ex[k++] = (expect){a->prot[i].dest, "protected", false};
	for (size_t i = 0; i < a->n_pins; i++)
		ex[k++] = (expect){a->pins[i].dest, "pin", false};
	ne = k;
	bool saw_root = false, saw_ws = false, saw_proc = false;
	for (size_t i = 0; i < n; i++) {
		const oci_mount *x = &m[i];
		bool ro = oci_opts_has(x->opts, "ro");
		const char *role = NULL;
		const char *bad = NULL;
		if (strstr(x->optional, "shared:") != NULL || strstr(x->optional, "master:") != NULL)
			bad = "mount propagates to or from the host (shared/master)";
		else if (strcmp(x->fstype, "cgroup") == 0 || strcmp(x->fstype, "cgroup2") == 0) {
			/* none is rendered (the container has its own cgroup
			 * namespace and no cgroup file system) */
			role = "cgroup";
			bad = "cgroup file system mounted, none is rendered";
		} else if (strcmp(x->point, "/") == 0) {
			role = "rootfs";
			saw_root = true;
			if (!ro)
				bad = "root filesystem is writable";
		} else if (oci_path_within(x->point, "/workspace")) {
			role = "repo_submount";
			if (strcmp(x->point, "/workspace") == 0) {
				role = "repo";
				saw_ws = true;
				if (!ro && !a->repo_writable)
					bad = "repository root is writable";
			}
			for (size_t j = 0; j < ne; j++)
				if (strcmp(ex[j].dest, x->point) == 0) {
					role = ex[j].role;
					ex[j].seen = true;
				}
			if (strcmp(role, "carve_out") == 0 || strcmp(role, "pin") == 0) {
				/* rw expected; ro would only narrow (canaries witness it);
				 * a pin's point is that it is a mount at all */
			} else if (strcmp(role, "protected") == 0 || strcmp(role, "repo_submount") == 0) {
				if (!ro)
					bad = strcmp(role, "protected") == 0 ? "protected path is writable"
					                                     : "nested mount under the repository is writable";
			}
			/* every mount of the repository is rendered nosuid,nodev
			 * (recursively: a host mount nested in it kept its own
			 * flags under the plain options, and a device node there
			 * opened for a root task under crun, which has no device
			 * cgroup); a runtime that drops them (MNT-05) is refused */
			if (bad == NULL &&
			    (!oci_opts_has(x->opts, "nosuid") || !oci_opts_has(x->opts, "nodev")))
				bad = "mount under the repository lacks nosuid or nodev";
		} else if (strcmp(x->point, "/proc") == 0) {
			role = "proc";
			saw_proc = true;
			if (strcmp(x->fstype, "proc") != 0 || !oci_opts_has(x->opts, "nosuid") ||
			    !oci_opts_has(x->opts, "nodev") || !oci_opts_has(x->opts, "noexec"))
				bad = "/proc is not a proc mount with nosuid,nodev,noexec";
		} else if (is_masked(x->point)) {
			role = "masked";
			if (!ro && !(strcmp(x->fstype, "tmpfs") == 0 &&
			             (strcmp(x->root, "/null") == 0)) &&
			    !(strcmp(x->fstype, "devtmpfs") == 0 && strcmp(x->root, "/null") == 0))
				bad = "masked path is neither read-only nor /dev/null";
		} else if (oci_path_within(x->point, "/proc") || oci_path_within(x->point, "/sys")) {
			role = "kernel_ro";
			if (!ro)
				bad = "kernel interface mount is writable";
		} else if (strcmp(x->point, "/dev") == 0 || strcmp(x->point, "/dev/shm") == 0 ||
		           strcmp(x->point, "/tmp") == 0) {
			role = "scratch";
			if (!ro && strcmp(x->fstype, "tmpfs") != 0)
				bad = "writable scratch area is host-backed (not tmpfs)";
		} else if (strcmp(x->point, "/dev/pts") == 0) {
			role = "devpts";
			if (!ro && strcmp(x->fstype, "devpts") != 0)
				bad = "/dev/pts is not devpts";
		} else if (strcmp(x->point, "/dev/mqueue") == 0) {
			role = "mqueue";
			if (!ro && strcmp(x->fstype, "mqueue") != 0)
				bad = "/dev/mqueue is not mqueue";
		} else if (strcmp(x->point, OTA_OCI_CANARY_DEST) == 0) {
			role = "runner_canary";
			if (!ro)
				bad = "runner canary binary is writable";
		} else {
			role = "other";
			if (!ro)
				bad = "unexpected writable mount";
		}
		json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "path", x->point, "fstype",
		                      x->fstype, "options", x->opts, "role", role ? role : "invalid",
		                      "root", x->root, "ro", ro);
		if (e == NULL || json_array_append_new(mounts, e) != 0) {
			rc = OTA_ERR_NOMEM;
			goto out;
		}
		if (bad != NULL) {
			rc = ota_error_set(err, OTA_ERR_OCI_MOUNT_UNEXPECTED, x->point, "%s (%s)", bad,
			                   x->opts);
			goto out;
		}
	}
	if (!saw_root || !saw_ws || !saw_proc) {
		rc = ota_error_set(err, OTA_ERR_OCI_MOUNT_MISSING,
		                   !saw_root ? "/" : !saw_ws ? "/workspace" : "/proc",
		                   "required mount absent");
		goto out;
	}
	for (size_t j = 0; j < ne; j++)
		if (!ex[j].seen) {
			rc = ota_error_set(err, OTA_ERR_OCI_MOUNT_MISSING, ex[j].dest, "%s mount absent",
			                   ex[j].role);
			goto out;
		}
	*report = json_pack("{s:b, s:O, s:I}", "ok", 1, "mounts", mounts, "count", (json_int_t)n);
	if (*report == NULL)
		rc = OTA_ERR_NOMEM;
out:
	json_decref(mounts);
	free(ex);
	free(m);
	free(buf);
	return rc;
}

/* Splits text into lines (in a private copy) and calls fn per line. */
static ota_err each_line(ota_bytes t, ota_err (*fn)(char *line, size_t idx, void *ctx), void *ctx)
{
	if (t.len > OTA_OCI_MAX_NET_BYTES)
		return OTA_ERR_TOO_LARGE;
	char *b = malloc(t.len + 1);
	if (b == NULL)
		return OTA_ERR_NOMEM;
	if (t.len > 0)
		memcpy(b, t.ptr, t.len);
	b[t.len] = '\0';
	ota_err rc = OTA_OK;
	size_t idx = 0;
	char *cur = b;
	for (char *l = next_line(&cur); l != NULL && rc == OTA_OK; l = next_line(&cur))
		rc = fn(l, idx++, ctx);
	free(b);
	return rc;
}

typedef struct net_ctx {
	json_t *ifaces;
	size_t routes4, routes6;
	char bad[128];
} net_ctx;

static ota_err dev_line(char *l, size_t idx, void *vctx)
{
	net_ctx *c = vctx;
	if (idx < 2)
		return OTA_OK;
	char *colon = strchr(l, ':');
	if (colon == NULL)
		return OTA_OK;
	*colon = '\0';
	while (*l == ' ')
		l++;
	json_array_append_new(c->ifaces, json_string(l));
	if (strcmp(l, "lo") != 0 && c->bad[0] == '\0')
		snprintf(c->bad, sizeof c->bad, "interface %s present", l);
	return OTA_OK;
}

static ota_err route_line(char *l, size_t idx, void *vctx)
{
	net_ctx *c = vctx;
	if (idx < 1 || l[0] == '\0')
		return OTA_OK;
	c->routes4++;
	if (c->bad[0] == '\0')
		snprintf(c->bad, sizeof c->bad, "IPv4 route in the main table");
	return OTA_OK;
}

static ota_err route6_line(char *l, size_t idx, void *vctx)
{
	(void)idx;
	net_ctx *c = vctx;
	size_t n = strlen(l);
	while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\r'))
		l[--n] = '\0';
	if (n == 0)
		return OTA_OK;
	c->routes6++;
	char *dev = strrchr(l, ' ');
	dev = dev != NULL ? dev + 1 : l;
	if (strcmp(dev, "lo") != 0 && c->bad[0] == '\0')
		snprintf(c->bad, sizeof c->bad, "IPv6 route via %s", dev);
	return OTA_OK;
}

ota_err ota_oci_check_netns(ota_bytes dev, ota_bytes route, ota_bytes route6, json_t **report,
                            ota_error *err)
{
	*report = NULL;
	net_ctx c;
	memset(&c, 0, sizeof c);
	c.ifaces = json_array();
	if (c.ifaces == NULL)
		return OTA_ERR_NOMEM;
	ota_err rc = each_line(dev, dev_line, &c);
	if (rc == OTA_OK)
		rc = each_line(route, route_line, &c);
	if (rc == OTA_OK)
		rc = each_line(route6, route6_line, &c);
	if (rc != OTA_OK) {
		json_decref(c.ifaces);
		return ota_error_set(err, rc, "netns", "cannot read network state");
	}
	bool has_lo = false;
	size_t i;
	json_t *v;
	json_array_foreach(c.ifaces, i, v) if (strcmp(json_string_value(v), "lo") == 0) has_lo = true;
	if (c.bad[0] == '\0' && !has_lo)
		snprintf(c.bad, sizeof c.bad, "no loopback interface");
	if (c.bad[0] != '\0') {
		json_decref(c.ifaces);
		return ota_error_set(err, OTA_ERR_OCI_NETWORK_UNEXPECTED, "netns", "%s", c.bad);
	}
	*report = json_pack("{s:b, s:o, s:I, s:I}", "loopback_only", 1, "interfaces", c.ifaces,
	                    "ipv4_main_routes", (json_int_t)c.routes4, "ipv6_routes_on_lo",
	                    (json_int_t)c.routes6);
	return *report != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

/* ---- fingerprints of protected content ---- */

/*
 * The digest covers, in this order: for the protected path itself its stat
 * line (name "."), then its content (a regular file) or its tree (a
 * directory: entries in strcmp order of their names, each a stat line
 * "REL\nMODE INO NLINK SIZE MTIME CTIME UID GID\n", then the content of a
 * regular file or, depth first, a directory's entries). The walk is
 * O(n log n) (qsort per directory; it was an insertion sort, quadratic in
 * a directory's size), capped at OTA_OCI_MAX_SCAN_ENTRIES entries, and it
 * stops at the caller's cancel flag.
 */
typedef struct fp_walk {
	EVP_MD_CTX *md;
	size_t budget;
	volatile sig_atomic_t *cancel;
	bool interrupted;
	/* a part of the tree the walk could not cover (over the entry or
	 * depth cap, out of memory): the fingerprint is refused rather than
	 * computed over what was reached (a change below would go unseen) */
	const char *incomplete;
} fp_walk;

#define FP_MAX_DEPTH 64

static bool fp_cancelled(fp_walk *w)
{
	if (!w->interrupted && w->cancel != NULL && *w->cancel != 0)
		w->interrupted = true;
	return w->interrupted;
}

static void fp_add(EVP_MD_CTX *md, const char *rel, const struct stat *st)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s\n%o %lu %lu %lld %lld.%ld %lld.%ld %u %u\n", rel,
	                 (unsigned)st->st_mode, (unsigned long)st->st_ino,
	                 (unsigned long)st->st_nlink, (long long)st->st_size,
	                 (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	                 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, (unsigned)st->st_uid,
	                 (unsigned)st->st_gid);
	if (n > 0)
		EVP_DigestUpdate(md, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void fp_content(fp_walk *w, int fd)
{
	uint8_t b[16384];
	size_t total = 0;
	ssize_t r;
	while (!fp_cancelled(w) && (r = read(fd, b, sizeof b)) > 0 &&
	       total < OTA_OCI_MAX_HASH_BYTES) {
		EVP_DigestUpdate(w->md, b, (size_t)r);
		total += (size_t)r;
	}
}

static int cmp_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void fp_tree(fp_walk *w, int dfd, const char *rel, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return;
	}
	/* Sorted order: collect names first. */
	char **names = NULL;
	size_t nn = 0, cap = 0;
	struct dirent *de;
	while (!fp_cancelled(w) && w->incomplete == NULL && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (nn == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(names, cap * sizeof *nv);
			if (nv == NULL) {
				w->incomplete = "out of memory";
				break;
			}
			names = nv;
		}
		names[nn] = strdup(de->d_name);
		if (names[nn] == NULL)
			w->incomplete = "out of memory";
		else
			nn++;
	}
	if (nn > 1)
		qsort(names, nn, sizeof *names, cmp_name);
	for (size_t i = 0; i < nn && w->incomplete == NULL; i++) {
		if (fp_cancelled(w))
			break;
		if (w->budget == 0) {
			w->incomplete = "more entries than OTA_OCI_MAX_SCAN_ENTRIES";
			break;
		}
		w->budget--;
		char sub[OTA_MAX_PATH_BYTES];
		snprintf(sub, sizeof sub, "%s/%s", rel, names[i]);
		struct stat st;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			/* in the digest, not left out: an entry that cannot be
			 * looked at now and could later is a change */
			char m[OTA_MAX_PATH_BYTES + 32];
			int n = snprintf(m, sizeof m, "%s\nunreadable %d\n", sub, errno);
			EVP_DigestUpdate(w->md, m, n > 0 && (size_t)n < sizeof m ? (size_t)n : 0);
			continue;
		}
		fp_add(w->md, sub, &st);
		if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd(d), names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0) {
				fp_content(w, fd);
				close(fd);
			} else {
				char m[32];
				int n = snprintf(m, sizeof m, "unopenable %d\n", errno);
				EVP_DigestUpdate(w->md, m, (size_t)n);
			}
		} else if (S_ISDIR(st.st_mode)) {
			if (depth + 1 >= FP_MAX_DEPTH) {
				w->incomplete = "a directory deeper than 64 levels";
				break;
			}
			int fd = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				fp_tree(w, fd, sub, depth + 1);
			} else {
				char m[32];
				int n = snprintf(m, sizeof m, "unopenable %d\n", errno);
				EVP_DigestUpdate(w->md, m, (size_t)n);
			}
		}
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

#define FP_BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Opens rel beneath repo_fd for reading and checks it is still the object
 * that was stat'ed (st); -1 otherwise. */
static int fp_reopen(int repo_fd, const char *rel, uint64_t flags, const struct stat *st)
{
	int fd = oci_openat2(repo_fd, rel, flags | O_RDONLY | O_CLOEXEC, FP_BENEATH);
	struct stat st2;
	if (fd >= 0 && (fstat(fd, &st2) != 0 || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

ota_err oci_fingerprint(int repo_fd, const char *rel, volatile sig_atomic_t *cancel, char out[65],
                        ota_error *err)
{
	out[0] = '\0';
	fp_walk w = {EVP_MD_CTX_new(), OTA_OCI_MAX_SCAN_ENTRIES, cancel, false, NULL};
	if (w.md == NULL || EVP_DigestInit_ex(w.md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(w.md);
		return OTA_ERR_CRYPTO;
	}
	/* From the repository's descriptor, never through a symlink: a parent
	 * a task replaced by a symlink (inside a writable carve-out) no longer
	 * leads to the original, and the path reads as changed. */
	int pfd = oci_openat2(repo_fd, rel, O_PATH | O_CLOEXEC, FP_BENEATH);
	struct stat st;
	if (pfd < 0 && errno == ENOENT) {
		EVP_DigestUpdate(w.md, "absent", 6);
	} else if (pfd < 0 || fstat(pfd, &st) != 0) {
		/* ELOOP: a symlink on the path now; never equal to a fingerprint
		 * of content (admission refused symlinks on protected paths) */
		char m[64];
		int n = snprintf(m, sizeof m, "unresolvable %d", errno);
		EVP_DigestUpdate(w.md, m, (size_t)n);
	} else {
		fp_add(w.md, ".", &st);
		if (S_ISREG(st.st_mode)) {
			int fd = fp_reopen(repo_fd, rel, O_NONBLOCK, &st);
			if (fd >= 0) {
				fp_content(&w, fd);
				close(fd);
			} else {
				EVP_DigestUpdate(w.md, "replaced", 8);
			}
		} else if (S_ISDIR(st.st_mode)) {
			int fd = fp_reopen(repo_fd, rel, O_DIRECTORY, &st);
			if (fd >= 0)
				fp_tree(&w, fd, ".", 0);
			else
				EVP_DigestUpdate(w.md, "replaced", 8);
		}
	}
	if (pfd >= 0)
		close(pfd);
	if (w.interrupted) {
		EVP_MD_CTX_free(w.md);
		return ota_error_set(err, OTA_ERR_OCI_INTERRUPTED, rel,
		                     "fingerprint of a protected path interrupted");
	}
	if (w.incomplete != NULL) {
		EVP_MD_CTX_free(w.md);
		return ota_error_set(err, OTA_ERR_OCI_SCAN_LIMIT, rel,
		                     "the protected tree cannot be fingerprinted whole: %s",
		                     w.incomplete);
	}
	uint8_t h[32];
	unsigned hl = 0;
	if (EVP_DigestFinal_ex(w.md, h, &hl) != 1 || hl != 32) {
		EVP_MD_CTX_free(w.md);
		return ota_error_set(err, OTA_ERR_CRYPTO, rel, "digest failed");
	}
	EVP_MD_CTX_free(w.md);
	ota_hex_encode(ota_bytes_make(h, 32), out);
	return OTA_OK;
}
