/*
 * fuzz_oci_cgroups: a lease row's cgroups column (oci_cgroup_column_parse,
 * provider-oci/cgroup.c). The lease database is data anyone with access to
 * the file can write; the column names directories `ota cleanup` rmdir()s,
 * so it is untrusted text: at most 64 KiB, strict JSON, an array of at most
 * 32 absolute paths without ".", ".." or empty components, each ending in
 * "/" + the row's container id and lying below a cgroup or cgroup2 mount.
 * The input is the column's text; the mounts are a fixed mountinfo of a
 * hybrid host (cgroup v1 controllers, name=systemd, cgroup2 "unified") with
 * a tmpfs above them and an unrelated mount.
 *
 * Invariants: an accepted column is an array of at most 32 strings, each
 * NUL-free, starting with a cgroup mount point and "/", ending in "/" + id,
 * with no "//", "/./" or "/../" in it; a refusal says why and gives no
 * list; more than 64 KiB is always refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

#include "../provider-oci/oci_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ID "ota-0123456789abcdef01234567"

static const char MOUNTINFO[] =
	"23 1 0:21 / / rw,relatime - ext4 /dev/root rw\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	"42 23 0:39 / /run rw,nosuid - tmpfs tmpfs rw\n";

static char *g_buf;
static oci_mount *g_m;
static size_t g_n;

static bool below_cgroup_mount(const char *d)
{
	for (size_t i = 0; i < g_n; i++) {
		size_t pl = strlen(g_m[i].point);
		if ((strcmp(g_m[i].fstype, "cgroup") == 0 || strcmp(g_m[i].fstype, "cgroup2") == 0) &&
		    strncmp(d, g_m[i].point, pl) == 0 && d[pl] == '/')
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (g_m == NULL) {
		ota_error e;
		ota_error_clear(&e);
		FZ_CHECK(oci_mountinfo_parse(ota_bytes_make(MOUNTINFO, sizeof MOUNTINFO - 1), &g_buf,
		                             &g_m, &g_n, &e) == OTA_OK);
	}
	json_t *dirs = NULL;
	const char *why = NULL;
	bool ok = oci_cgroup_column_parse(ota_bytes_make(data, size), ID, g_m, g_n, &dirs, &why);
	if (!ok) {
		FZ_CHECK(dirs == NULL);
		FZ_CHECK(why != NULL && why[0] != '\0');
		return 0;
	}
	FZ_CHECK(size <= OCI_CGROUP_MAX_COLUMN_BYTES);
	FZ_CHECK(json_is_array(dirs) && json_array_size(dirs) <= OCI_CGROUP_MAX_DIRS);
	size_t i;
	json_t *v;
	json_array_foreach(dirs, i, v)
	{
		const char *d = json_string_value(v);
		FZ_CHECK(d != NULL && strlen(d) == json_string_length(v));
		size_t dl = strlen(d), il = strlen(ID);
		FZ_CHECK(dl > il && strcmp(d + dl - il, ID) == 0 && d[dl - il - 1] == '/');
		FZ_CHECK(below_cgroup_mount(d));
		FZ_CHECK(strstr(d, "//") == NULL && strstr(d, "/./") == NULL &&
		         strstr(d, "/../") == NULL);
	}
	json_decref(dirs);
	return 0;
}
