/*
 * provider-oci: a creation the runtime never finished (the runner killed
 * during `runc run`, runc dying with it before it writes state.json) leaves
 * ROOT/ID holding only exec.fifo, which runc neither knows nor deletes.
 * oci_finalize_container removes exactly that and confirms the cleanup;
 * a state directory holding anything else is left alone and the cleanup
 * stays unconfirmed. Needs runc (skipped without it).
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "provider-oci/oci_internal.h"

static bool have_runc(void)
{
	return system("command -v runc >/dev/null 2>&1") == 0;
}

static void make_state(const char *root, const char *id, bool extra)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", root, id);
	assert_int_equal(mkdir(p, 0711), 0);
	snprintf(p, sizeof p, "%s/%s/exec.fifo", root, id);
	assert_int_equal(mkfifo(p, 0622), 0);
	if (extra) {
		snprintf(p, sizeof p, "%s/%s/state.json.tmp", root, id);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fclose(f);
	}
}

static bool present(const char *root, const char *id)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", root, id);
	return lstat(p, &st) == 0;
}

static void test_half_built(void **state)
{
	(void)state;
	if (!have_runc())
		skip();
	char *dir = test_tmpdir();
	ota_oci_runtime_opts ro = {OTA_OCI_RUNC, NULL, dir, NULL};
	oci_rt rt;
	ota_error e = {0};
	assert_ota(oci_rt_init(&rt, &ro, &e), OTA_OK);
	/* only exec.fifo: removed, confirmed */
	const char *id = "ota-000000000000000000000001";
	make_state(dir, id, false);
	json_t *cl = NULL;
	assert_ota(oci_finalize_container(&rt, id, 0, NULL, &cl, &e), OTA_OK);
	assert_true(json_is_true(json_object_get(cl, "half_built_removed")));
	assert_true(json_is_true(json_object_get(cl, "confirmed")));
	assert_false(present(dir, id));
	json_decref(cl);
	/* anything else in it: left alone, not confirmed */
	const char *id2 = "ota-000000000000000000000002";
	make_state(dir, id2, true);
	cl = NULL;
	ota_error_clear(&e);
	assert_ota(oci_finalize_container(&rt, id2, 0, NULL, &cl, &e),
	           OTA_ERR_OCI_CLEANUP_UNCONFIRMED);
	assert_false(json_is_true(json_object_get(cl, "half_built_removed")));
	assert_false(json_is_true(json_object_get(cl, "confirmed")));
	assert_true(present(dir, id2));
	json_decref(cl);
	/* an id that is not a plain name is never used as a path */
	cl = NULL;
	ota_error_clear(&e);
	(void)oci_finalize_container(&rt, "../x", 0, NULL, &cl, &e);
	assert_false(json_is_true(json_object_get(cl, "half_built_removed")));
	json_decref(cl);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_built),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
