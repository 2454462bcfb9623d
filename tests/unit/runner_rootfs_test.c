/*
 * runner: the contract's container.rootfs (our extension) is repository
 * content, so it names only a directory inside the image store or the
 * rootfs cache the runner uses, reached without a symlink; any other
 * directory (the audit's t08: a host directory such as /root, where runc
 * created its mount points and the task read the files) is
 * oci_rootfs_unmanaged before anything is prepared. --rootfs (the
 * operator's ota_runner_opts.rootfs) still takes any directory.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ota/json.h"
#include "ota/policy.h"
#include "ota/runner.h"

/* rootfs cache entries: a complete one (A), one without .ota-complete (B) */
#define DIGEST_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIGEST_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct world {
	char *tmp;
	char store[512], cache[512], host[512], repo[512];
	ota_platform native;
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	w->tmp = test_tmpdir();
	snprintf(w->store, sizeof w->store, "%s/images", w->tmp);
	snprintf(w->cache, sizeof w->cache, "%s/cache", w->tmp);
	snprintf(w->host, sizeof w->host, "%s/victimroot", w->tmp);
	snprintf(w->repo, sizeof w->repo, "%s/repo", w->tmp);
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
	         "mkdir -p '%s/prepared/rootfs' '%s/" DIGEST_A "/rootfs' '%s' '%s' && "
	         "touch '%s/" DIGEST_A "/.ota-complete' && "
	         "mkdir -p '%s/" DIGEST_B "/rootfs' '%s/" DIGEST_A ".tmp-1/rootfs' && "
	         "echo host-private-data > '%s/hostsecret' && "
	         "ln -s '%s' '%s/escape' && mkdir -p '%s/linkdir' && "
	         "ln -s '%s/prepared' '%s/linked' && ln -s ../victimroot '%s/up'",
	         w->store, w->cache, w->host, w->repo, w->cache, w->cache, w->cache, w->host, w->host,
	         w->store, w->store,
	         w->store, w->cache, w->cache);
	assert_int_equal(system(cmd), 0);
	ota_platform_host(&w->native);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_rmtree(w->tmp);
	free(w->tmp);
	free(w);
	return 0;
}

/* Maps the one segment of a contract whose container.rootfs is rootfs;
 * *plan_out (may be NULL) new. */
static ota_err plan_with(const world *w, const char *rootfs, const char *opt_rootfs,
                         ota_runner_plan **plan_out, ota_error *e)
{
	char y[4096];
	snprintf(y, sizeof y,
	         "version: 1\nproject: {name: rootfs}\nexecution:\n  supported: [container]\n"
	         "  lifecycle: ephemeral\n  backends: {container: {platform: %s/%s, rootfs: \"%s\"}}\n"
	         "tasks:\n  t: {run: x, safe_for_agent: true, runtime_boundary: {filesystem: "
	         "{repo_root_mode: read_only}, network: {default: deny}}}\n",
	         w->native.os, w->native.architecture, rootfs);
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	po.native_platform = w->native;
	ota_contract *c = NULL;
	assert_ota(ota_contract_load(ota_bytes_make(y, strlen(y)), "ota.yaml", &c, NULL), OTA_OK);
	ota_policy *p = NULL;
	assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "t", &po, NULL, 0, &p, NULL), OTA_OK);
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = w->repo;
	ro.image_store = w->store;
	ro.rootfs_cache = w->cache;
	ro.rootfs = opt_rootfs;
	const json_t *cs = json_object_get(ota_policy_canonical_json(p), "segments");
	const json_t *es = json_object_get(ota_policy_effective_json(p), "segments");
	assert_int_equal(json_array_size(es), 1);
	ota_runner_plan *plan = NULL;
	ota_error_clear(e);
	ota_err rc = ota_runner_plan_new(json_array_get(cs, 0), json_array_get(es, 0), &ro, &plan, e);
	if (plan_out != NULL)
		*plan_out = plan;
	else
		ota_runner_plan_free(plan);
	ota_policy_free(p);
	ota_contract_free(c);
	return rc;
}

static void test_host_directory_refused(void **state)
{
	world *w = *state;
	size_t before = test_count_entries(w->host, true);
	ota_error e;
	/* the audit's t08, and the host root, and a relative path (the repo) */
	assert_ota(plan_with(w, w->host, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	assert_string_equal(e.where, w->host);
	assert_ota(plan_with(w, "/", NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	assert_ota(plan_with(w, "/root", NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	assert_ota(plan_with(w, "rootfs", NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	/* lexically inside the store, but climbing out, or the store itself */
	char p[1024];
	snprintf(p, sizeof p, "%s/../victimroot", w->store);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	assert_ota(plan_with(w, w->store, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	snprintf(p, sizeof p, "%s/", w->cache);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	/* inside the store through a symlink (absolute, relative, in the middle) */
	snprintf(p, sizeof p, "%s/escape", w->store);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	snprintf(p, sizeof p, "%s/up", w->cache);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	snprintf(p, sizeof p, "%s/linked/rootfs", w->cache);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	/* the store's own layout, and a directory inside an unpacked image:
	 * the runtime would make its mount points there, and the task read
	 * every blob (or change what later containers of that image see) */
	static const char *const inside[] = {"blobs",        "blobs/sha256",   "prepared/rootfs/usr",
	                                      "index.json",   "prepared/other", ".hidden/rootfs",
	                                      "blobs/rootfs", ".hidden"};
	for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", w->store, inside[i]);
		assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
		snprintf(p, sizeof p, "%s/%s", w->cache, inside[i]);
		assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	}
	/* missing inside the store: the old oci_path_missing */
	snprintf(p, sizeof p, "%s/absent/rootfs", w->store);
	assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_PATH_MISSING);
	assert_int_equal(test_count_entries(w->host, true), before);
}

static void test_managed_accepted(void **state)
{
	world *w = *state;
	ota_error e;
	ota_runner_plan *plan = NULL;
	char p[1024], want[1024];
	snprintf(p, sizeof p, "%s//prepared/./rootfs", w->store);
	snprintf(want, sizeof want, "%s/prepared/rootfs", w->store);
	assert_ota(plan_with(w, p, NULL, &plan, &e), OTA_OK);
	assert_string_equal(ota_runner_plan_oci(plan)->rootfs, want);
	const json_t *pc = ota_runner_plan_platform_check(plan);
	assert_string_equal(json_string_value(json_object_get(pc, "rootfs_source")), "contract");
	assert_string_equal(json_string_value(json_object_get(pc, "rootfs")), want);
	ota_runner_plan_free(plan);
	/* the cache: only a complete entry's DIGEST/rootfs */
	snprintf(p, sizeof p, "%s/" DIGEST_A "/rootfs", w->cache);
	assert_ota(plan_with(w, p, NULL, &plan, &e), OTA_OK);
	assert_string_equal(ota_runner_plan_oci(plan)->rootfs, p);
	ota_runner_plan_free(plan);
	static const char *const not_entries[] = {DIGEST_A, DIGEST_B "/rootfs",
	                                          DIGEST_A ".tmp-1/rootfs", "prepared/rootfs"};
	for (size_t i = 0; i < sizeof not_entries / sizeof not_entries[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", w->cache, not_entries[i]);
		assert_ota(plan_with(w, p, NULL, NULL, &e), OTA_ERR_OCI_ROOTFS_UNMANAGED);
	}
}

/* --rootfs is the operator's choice: any directory, also over a contract's */
static void test_command_line_wins(void **state)
{
	world *w = *state;
	ota_error e;
	ota_runner_plan *plan = NULL;
	assert_ota(plan_with(w, w->host, w->host, &plan, &e), OTA_OK);
	assert_string_equal(ota_runner_plan_oci(plan)->rootfs, w->host);
	assert_string_equal(
		json_string_value(json_object_get(ota_runner_plan_platform_check(plan), "rootfs_source")),
		"command_line");
	ota_runner_plan_free(plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_host_directory_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_managed_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_line_wins, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
