/*
 * fuzz_oci_inspect: the host-side parsers of oci_local over untrusted
 * /proc text: a container's mountinfo (checked against a fixed admitted
 * plan) and its network namespace files. The first byte selects the target;
 * for the network the rest is split at NUL bytes into dev, route, ipv6_route.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ota/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_tmp[] = "/tmp/ota-fuzz-oci-XXXXXX";

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path); /* best effort: remove what can be */
	return 0;
}

/* the fixture's directory goes at exit (it was left in /tmp by every run) */
static void cleanup(void)
{
	(void)nftw(g_tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static ota_oci_admitted *admitted_plan(void)
{
	static ota_oci_admitted *a; /* fuzzer-process fixture, built once */
	if (a != NULL)
		return a;
	char *d = mkdtemp(g_tmp);
	if (d == NULL)
		abort();
	atexit(cleanup);
	char repo[256], rootfs[256], p[300];
	snprintf(repo, sizeof repo, "%s/repo", d);
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", d);
	mkdir(repo, 0755);
	mkdir(rootfs, 0755);
	snprintf(p, sizeof p, "%s/work", repo);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/work/cfg", repo);
	mkdir(p, 0755);
	static const char *const w[] = {"work"};
	static const char *const pr[] = {"work/cfg", ".git"};
	static const char *const argv[] = {"/bin/true"};
	ota_oci_plan plan;
	memset(&plan, 0, sizeof plan);
	plan.repo = repo;
	plan.rootfs = rootfs;
	plan.writable = w;
	plan.n_writable = 1;
	plan.protected_paths = pr;
	plan.n_protected = 2;
	plan.argv = argv;
	plan.argc = 1;
	if (ota_oci_admit(&plan, NULL, &a, NULL) != OTA_OK)
		abort();
	return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	json_t *rep = NULL;
	if (data[0] & 1) {
		(void)ota_oci_check_mountinfo(admitted_plan(), ota_bytes_make(data + 1, size - 1), &rep,
		                              NULL);
	} else {
		const uint8_t *p = data + 1, *end = data + size;
		ota_bytes part[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
		for (int i = 0; i < 3; i++) {
			const uint8_t *z = memchr(p, 0, (size_t)(end - p));
			const uint8_t *e = z != NULL ? z : end;
			part[i] = ota_bytes_make(p, (size_t)(e - p));
			p = z != NULL ? z + 1 : end;
		}
		(void)ota_oci_check_netns(part[0], part[1], part[2], &rep, NULL);
	}
	json_decref(rep);
	return 0;
}
