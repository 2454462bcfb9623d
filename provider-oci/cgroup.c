/*
 * The container's cgroup directories (runc). runc's cgroupfs manager, with
 * no cgroupsPath in the config (none is rendered: the container's cgroup
 * stays below the runner's own, under whatever limits the operator put
 * the runner in), makes OWN/ID in every hierarchy, OWN being the cgroup
 * runc runs in there. A runc killed while creating leaves those
 * directories behind, empty; they are removed here, by rmdir only, once
 * the container is confirmed gone: a cgroup that still holds a process or
 * a child cgroup cannot be removed (EBUSY), which is the safety property.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "oci_internal.h"
#include "ota/json.h"
#include "ota/limits.h"

#define CGROUP_FILE_MAX (64u * 1024u) /* /proc/self/cgroup */

/* This process's mounts (free buf and m). */
static ota_err mounts_read(char **buf, oci_mount **m, size_t *n, ota_error *err)
{
	uint8_t *text = NULL;
	size_t len = 0;
	ota_err rc = oci_proc_read("/proc/self/mountinfo", OTA_OCI_MAX_MOUNTINFO_BYTES, &text, &len,
	                           err);
	if (rc != OTA_OK)
		return rc;
	rc = oci_mountinfo_parse(ota_bytes_make(text, len), buf, m, n, err);
	free(text);
	return rc;
}

static bool is_cgroup_fs(const oci_mount *x)
{
	return strcmp(x->fstype, "cgroup") == 0 || strcmp(x->fstype, "cgroup2") == 0;
}

/* The cgroup v1 mount whose super options hold every controller of ctrls
 * ("cpu,cpuacct", "name=systemd"); the cgroup2 mount when ctrls is NULL. */
static const oci_mount *hierarchy_mount(const oci_mount *m, size_t n, const char *ctrls)
{
	for (size_t i = 0; i < n; i++) {
		if (ctrls == NULL) {
			if (strcmp(m[i].fstype, "cgroup2") == 0)
				return &m[i];
			continue;
		}
		if (strcmp(m[i].fstype, "cgroup") != 0)
			continue;
		bool all = true;
		char c[256];
		for (const char *p = ctrls; all && *p != '\0';) {
			size_t k = strcspn(p, ",");
			if (k == 0 || k >= sizeof c) {
				all = false;
				break;
			}
			memcpy(c, p, k);
			c[k] = '\0';
			all = oci_opts_has(m[i].super, c);
			p += k + (p[k] == ',');
		}
		if (all)
			return &m[i];
	}
	return NULL;
}

ota_err oci_cgroup_dirs(const char *id, json_t **out, ota_error *err)
{
	*out = NULL;
	if (!oci_container_id_valid(id))
		return ota_error_set(err, OTA_ERR_USAGE, "id", "not a container id");
	char *mbuf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_err rc = mounts_read(&mbuf, &m, &n, err);
	if (rc != OTA_OK)
		return rc;
	uint8_t *text = NULL;
	size_t len = 0;
	rc = oci_proc_read("/proc/self/cgroup", CGROUP_FILE_MAX, &text, &len, err);
	json_t *arr = rc == OTA_OK ? json_array() : NULL;
	if (rc == OTA_OK && arr == NULL)
		rc = OTA_ERR_NOMEM;
	/* lines "H:controllers:/path" */
	char *cur = rc == OTA_OK ? (char *)text : NULL;
	while (rc == OTA_OK && cur != NULL && *cur != '\0') {
		char *line = cur;
		char *nl = strchr(cur, '\n');
		if (nl != NULL) {
			*nl = '\0';
			cur = nl + 1;
		} else {
			cur = NULL;
		}
		char *c1 = strchr(line, ':');
		char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL || c2[1] != '/')
			continue;
		*c1 = *c2 = '\0';
		const char *ctrls = c1 + 1, *own = c2 + 1;
		bool v2 = strcmp(line, "0") == 0 && ctrls[0] == '\0';
		if (!v2 && ctrls[0] == '\0')
			continue;
		const oci_mount *x = hierarchy_mount(m, n, v2 ? NULL : ctrls);
		if (x == NULL)
			continue; /* not mounted here: runc does not use it either */
		/* own below the mount's root */
		const char *rel;
		if (strcmp(x->root, "/") == 0)
			rel = own;
		else if (oci_path_within(own, x->root))
			rel = own + strlen(x->root);
		else
			continue;
		while (*rel == '/')
			rel++;
		char dir[OTA_MAX_PATH_BYTES];
		int k = snprintf(dir, sizeof dir, "%s%s%s/%s", x->point, rel[0] != '\0' ? "/" : "",
		                 rel, id);
		if (k < 0 || (size_t)k >= sizeof dir) {
			rc = ota_error_set(err, OTA_ERR_TOO_LARGE, x->point, "cgroup path too long");
			break;
		}
		bool dup = false;
		size_t i;
		json_t *v;
		json_array_foreach(arr, i, v) dup = dup || strcmp(json_string_value(v), dir) == 0;
		if (!dup && json_array_size(arr) < OCI_CGROUP_MAX_DIRS &&
		    json_array_append_new(arr, json_string(dir)) != 0)
			rc = OTA_ERR_NOMEM;
	}
	free(text);
	free(mbuf);
	free(m);
	if (rc != OTA_OK) {
		json_decref(arr);
		return rc;
	}
	*out = arr;
	return OTA_OK;
}

/* The cgroup file system mount dir lies strictly below (the deepest one). */
static const oci_mount *mount_above(const oci_mount *m, size_t n, const char *dir)
{
	const oci_mount *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (is_cgroup_fs(&m[i]) && strcmp(m[i].point, dir) != 0 &&
		    oci_path_within(dir, m[i].point) &&
		    (best == NULL || strlen(m[i].point) > strlen(best->point)))
			best = &m[i];
	return best;
}

/* The shape of a stored directory: absolute, bounded, no ".", ".." or
 * empty component, last component id. */
static bool dir_shape_ok(const char *dir, const char *id, const char **why)
{
	size_t len = strlen(dir), il = strlen(id);
	if (dir[0] != '/' || len >= OTA_MAX_PATH_BYTES) {
		*why = "not an absolute path of at most 4095 bytes";
		return false;
	}
	for (const char *p = dir + 1;;) {
		size_t k = strcspn(p, "/");
		if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.')) {
			*why = "an empty, '.' or '..' component";
			return false;
		}
		if (p[k] == '\0')
			break;
		p += k + 1;
	}
	if (len < il + 1 || strcmp(dir + len - il, id) != 0 || dir[len - il - 1] != '/') {
		*why = "its last component is not the container id";
		return false;
	}
	return true;
}

static bool dirs_valid_in(const json_t *dirs, const char *id, const oci_mount *m, size_t n,
                          const char **why)
{
	if (!json_is_array(dirs) || json_array_size(dirs) > OCI_CGROUP_MAX_DIRS) {
		*why = "not an array of at most 32 directories";
		return false;
	}
	size_t i;
	json_t *v;
	json_array_foreach(dirs, i, v)
	{
		const char *dir = json_string_value(v);
		if (dir == NULL || strlen(dir) != json_string_length(v)) {
			*why = "an entry is not a string (or holds a NUL)";
			return false;
		}
		if (!dir_shape_ok(dir, id, why))
			return false;
		if (mount_above(m, n, dir) == NULL) {
			*why = "not below a mounted cgroup file system";
			return false;
		}
	}
	return true;
}

bool oci_cgroup_column_parse(ota_bytes text, const char *id, const oci_mount *m, size_t n,
                             json_t **dirs, const char **why)
{
	*dirs = NULL;
	*why = "";
	if (text.len > OCI_CGROUP_MAX_COLUMN_BYTES) {
		*why = "longer than 64 KiB";
		return false;
	}
	if (!oci_container_id_valid(id)) {
		*why = "not a container id";
		return false;
	}
	json_t *v = NULL;
	ota_error e;
	ota_error_clear(&e);
	if (ota_json_parse(text, &v, &e) != OTA_OK) {
		*why = "not strict JSON";
		return false;
	}
	if (!dirs_valid_in(v, id, m, n, why)) {
		json_decref(v);
		return false;
	}
	*dirs = v;
	return true;
}

bool oci_cgroup_column_check(ota_bytes text, const char *id, json_t **dirs, const char **why)
{
	*dirs = NULL;
	char *mbuf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_error e;
	ota_error_clear(&e);
	if (mounts_read(&mbuf, &m, &n, &e) != OTA_OK) {
		*why = "mountinfo unreadable";
		return false;
	}
	bool ok = oci_cgroup_column_parse(text, id, m, n, dirs, why);
	free(mbuf);
	free(m);
	return ok;
}

bool oci_cgroup_dirs_valid(const json_t *dirs, const char *id, const char **why)
{
	const char *dummy;
	if (why == NULL)
		why = &dummy;
	*why = "";
	if (!oci_container_id_valid(id)) {
		*why = "not a container id";
		return false;
	}
	char *mbuf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_error e;
	ota_error_clear(&e);
	if (mounts_read(&mbuf, &m, &n, &e) != OTA_OK) {
		*why = "mountinfo unreadable";
		return false;
	}
	bool ok = dirs_valid_in(dirs, id, m, n, why);
	free(mbuf);
	free(m);
	return ok;
}

/* One removal attempt. 0: gone (removed, or absent); EBUSY: the kernel
 * refused (a process or a child cgroup in it); another errno (why set). */
static int rmdir_one(const oci_mount *x, const char *dir, const char *id, const char **why)
{
	int mfd = open(x->point, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0) {
		*why = "its cgroup mount point cannot be opened";
		return errno != 0 ? errno : EIO;
	}
	struct statfs sf;
	if (fstatfs(mfd, &sf) != 0 ||
	    (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(mfd);
		*why = "its mount point is not a cgroup file system";
		return EINVAL;
	}
	/* dir = point "/" parent "/" id (shape checked) */
	const char *rel = dir + strlen(x->point);
	while (*rel == '/')
		rel++;
	size_t plen = strlen(rel) - strlen(id);
	int pfd = -1;
	if (plen == 0) {
		pfd = mfd;
		mfd = -1;
	} else {
		char parent[OTA_MAX_PATH_BYTES];
		memcpy(parent, rel, plen - 1); /* without the '/' before id */
		parent[plen - 1] = '\0';
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_dir_open_beneath(mfd, x->point, parent, 0, &pfd, &e);
		close(mfd);
		mfd = -1;
		if (rc == OTA_ERR_NOT_FOUND)
			return 0; /* its parent cgroup is gone: so is it */
		if (rc != OTA_OK) {
			*why = "its parent cgroup cannot be opened beneath the mount";
			return EIO;
		}
	}
	int r = unlinkat(pfd, id, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : errno;
	close(pfd);
	if (r == EBUSY)
		*why = "the kernel refuses its removal (EBUSY): it holds a process or a child cgroup";
	else if (r != 0)
		*why = strerror(r);
	return r;
}

bool oci_cgroup_remove(const char *id, const json_t *dirs, json_t **left)
{
	*left = json_array();
	const char *why = "";
	char *mbuf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_error e;
	ota_error_clear(&e);
	if (*left == NULL)
		return false;
	if (!oci_container_id_valid(id) || !json_is_array(dirs)) {
		json_array_append_new(*left, json_pack("{s:s?, s:s}", "dir", NULL, "reason",
		                                       "not a container id or directory list"));
		return false;
	}
	if (mounts_read(&mbuf, &m, &n, &e) != OTA_OK) {
		json_array_append_new(*left, json_pack("{s:s?, s:s}", "dir", NULL, "reason",
		                                       "mountinfo unreadable"));
		return false;
	}
	if (!dirs_valid_in(dirs, id, m, n, &why)) {
		json_array_append_new(*left,
		                      json_pack("{s:s?, s:s}", "dir", NULL, "reason", why));
		free(mbuf);
		free(m);
		return false;
	}
	size_t cnt = json_array_size(dirs);
	int res[OCI_CGROUP_MAX_DIRS];
	const char *whys[OCI_CGROUP_MAX_DIRS];
	for (size_t i = 0; i < cnt; i++) {
		res[i] = EBUSY; /* not tried yet */
		whys[i] = "";
	}
	/* EBUSY right after the last task exited can be transient (the
	 * kernel releases a dying task's cgroup asynchronously): 20 rounds
	 * of 10 ms, then what is still busy is left as it is */
	for (int round = 0; round < 20; round++) {
		bool busy = false;
		for (size_t i = 0; i < cnt; i++) {
			if (res[i] != EBUSY)
				continue;
			const char *dir = json_string_value(json_array_get(dirs, i));
			res[i] = rmdir_one(mount_above(m, n, dir), dir, id, &whys[i]);
			busy = busy || res[i] == EBUSY;
		}
		if (!busy)
			break;
		usleep(10000);
	}
	bool all = true;
	for (size_t i = 0; i < cnt; i++) {
		if (res[i] == 0)
			continue;
		all = false;
		json_array_append_new(*left,
		                      json_pack("{s:s, s:s}", "dir",
		                                json_string_value(json_array_get(dirs, i)), "reason",
		                                whys[i]));
	}
	free(mbuf);
	free(m);
	return all;
}

/* The directory of cgroup own in the hierarchy x (mount point + own below
 * the mount's root) into dir; false when own is not below it or too long. */
static bool cgroup_dir_of(const oci_mount *x, const char *own, char *dir, size_t cap)
{
	const char *rel;
	if (strcmp(x->root, "/") == 0)
		rel = own;
	else if (oci_path_within(own, x->root))
		rel = own + strlen(x->root);
	else
		return false;
	while (*rel == '/')
		rel++;
	int k = snprintf(dir, cap, "%s%s%s", x->point, rel[0] != '\0' ? "/" : "", rel);
	return k > 0 && (size_t)k < cap;
}

/* A limit file's value: "max" (or cgroup v1's unlimited memory, a page
 * below 2^63) -> 0; a number -> it; anything else -> -1. */
static int64_t limit_value(const char *dir, const char *file)
{
	char path[OTA_MAX_PATH_BYTES + 64];
	if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
		return -1;
	uint8_t *t = NULL;
	size_t len = 0;
	ota_error e;
	ota_error_clear(&e);
	if (oci_proc_read(path, 64, &t, &len, &e) != OTA_OK)
		return -1;
	char *s = (char *)t;
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		s[--len] = '\0';
	int64_t v = -1;
	if (strcmp(s, "max") == 0) {
		v = 0;
	} else if (len > 0 && len <= 19 && strspn(s, "0123456789") == len) {
		unsigned long long u = strtoull(s, NULL, 10);
		v = u >= 0x7FFFFFFFFFFFF000ULL ? 0 : (int64_t)u;
	}
	free(t);
	return v;
}

ota_err oci_cgroup_limits_check(long pid, const ota_oci_limits *want, json_t **out,
                                ota_error *err)
{
	*out = NULL;
	char *mbuf = NULL;
	oci_mount *m = NULL;
	size_t n = 0;
	ota_err rc = mounts_read(&mbuf, &m, &n, err);
	if (rc != OTA_OK)
		return rc;
	char cpath[64];
	snprintf(cpath, sizeof cpath, "/proc/%ld/cgroup", pid);
	uint8_t *text = NULL;
	size_t len = 0;
	rc = oci_proc_read(cpath, CGROUP_FILE_MAX, &text, &len, err);
	/* the container's cgroup of each controller: v1 first, else cgroup2 */
	char pdir[OTA_MAX_PATH_BYTES] = "", mdir[OTA_MAX_PATH_BYTES] = "";
	char v2dir[OTA_MAX_PATH_BYTES] = "";
	char *cur = rc == OTA_OK ? (char *)text : NULL;
	while (cur != NULL && *cur != '\0') {
		char *line = cur;
		char *nl = strchr(cur, '\n');
		if (nl != NULL) {
			*nl = '\0';
			cur = nl + 1;
		} else {
			cur = NULL;
		}
		char *c1 = strchr(line, ':');
		char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL || c2[1] != '/')
			continue;
		*c1 = *c2 = '\0';
		const char *ctrls = c1 + 1, *own = c2 + 1;
		if (strcmp(line, "0") == 0 && ctrls[0] == '\0') {
			const oci_mount *x = hierarchy_mount(m, n, NULL);
			if (x != NULL && !cgroup_dir_of(x, own, v2dir, sizeof v2dir))
				v2dir[0] = '\0';
			continue;
		}
		bool hp = oci_opts_has(ctrls, "pids"), hm = oci_opts_has(ctrls, "memory");
		if (!hp && !hm)
			continue;
		const oci_mount *x = hierarchy_mount(m, n, ctrls);
		if (x == NULL)
			continue;
		if (hp && !cgroup_dir_of(x, own, pdir, sizeof pdir))
			pdir[0] = '\0';
		if (hm && !cgroup_dir_of(x, own, mdir, sizeof mdir))
			mdir[0] = '\0';
	}
	free(text);
	free(mbuf);
	free(m);
	if (rc != OTA_OK)
		return rc;
	const char *pf = "pids.max", *mf = "memory.limit_in_bytes";
	if (pdir[0] == '\0' && v2dir[0] != '\0')
		snprintf(pdir, sizeof pdir, "%s", v2dir);
	if (mdir[0] == '\0' && v2dir[0] != '\0') {
		snprintf(mdir, sizeof mdir, "%s", v2dir);
		mf = "memory.max";
	}
	int64_t pv = pdir[0] != '\0' ? limit_value(pdir, pf) : -1;
	int64_t mv = mdir[0] != '\0' ? limit_value(mdir, mf) : -1;
	if (want->pids > 0 && pv != want->pids)
		return ota_error_set(err, OTA_ERR_OCI_LIMIT_NOT_APPLIED,
		                     pdir[0] != '\0' ? pdir : "pids",
		                     "the container's %s is %s%lld, not the requested %lld", pf,
		                     pv < 0 ? "unreadable " : pv == 0 ? "max " : "", (long long)pv,
		                     (long long)want->pids);
	if (want->memory_bytes > 0 && mv != want->memory_bytes)
		return ota_error_set(err, OTA_ERR_OCI_LIMIT_NOT_APPLIED,
		                     mdir[0] != '\0' ? mdir : "memory",
		                     "the container's %s is %s%lld, not the requested %lld", mf,
		                     mv < 0 ? "unreadable " : mv == 0 ? "unlimited " : "",
		                     (long long)mv, (long long)want->memory_bytes);
	*out = json_pack("{s:o, s:s?, s:o, s:s?}", "pids_limit",
	                 pv > 0 ? json_integer(pv) : json_null(), "pids_cgroup",
	                 pdir[0] != '\0' ? pdir : NULL, "memory_limit_bytes",
	                 mv > 0 ? json_integer(mv) : json_null(), "memory_cgroup",
	                 mdir[0] != '\0' ? mdir : NULL);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}
