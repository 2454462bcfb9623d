/*
 * provider-oci: the output of `runc state` / `crun state` is untrusted
 * bytes. oci_rt_state bounds it (OTA_OCI_MAX_STATE_BYTES), parses it as
 * strict JSON (ota_json_parse), and takes the container's status and init
 * pid only when the object names this container, a known status and a pid
 * that is an integer in 1..INT_MAX (0 allowed when stopped); anything else
 * is oci_runtime_state_invalid. A pid of -1 or 2^32+1 used to be taken as
 * it came (cast to pid_t), and a "pid gone" that never was could confirm a
 * container's removal.
 *
 * The runtime is a fake one (a script that logs its arguments and answers
 * `state` with the bytes of a file, as runc and crun print them), as in
 * lease_untrusted_test.c; no runc, no root needed.
 */
#include "test_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/limits.h"
#include "provider-oci/oci_internal.h"

#define ID "ota-0123456789abcdef01234567"

typedef struct world {
	char *tmp;
	char fakert[512], out[512], err[512], code[512], log[512], root[512];
	oci_rt rt;
} world;

static void put_bytes(const char *path, const void *p, size_t n, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void put(const char *path, const char *text)
{
	put_bytes(path, text, strlen(text), 0644);
}

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	w->tmp = test_tmpdir();
	test_pathf(w->fakert, sizeof w->fakert, w->tmp, "fakert");
	test_pathf(w->out, sizeof w->out, w->tmp, "state.out");
	test_pathf(w->err, sizeof w->err, w->tmp, "state.err");
	test_pathf(w->code, sizeof w->code, w->tmp, "state.code");
	test_pathf(w->log, sizeof w->log, w->tmp, "rt.log");
	test_pathf(w->root, sizeof w->root, w->tmp, "root");
	char text[4096];
	int n = snprintf(text, sizeof text,
	                 "#!/bin/sh\n"
	                 "echo \"$*\" >> '%s'\n"
	                 "case \" $* \" in\n"
	                 "  *' state '*) cat '%s'; cat '%s' >&2; exit $(cat '%s');;\n"
	                 "esac\n"
	                 "exit 0\n",
	                 w->log, w->out, w->err, w->code);
	assert_true(n > 0 && (size_t)n < sizeof text);
	put_bytes(w->fakert, text, strlen(text), 0755);
	put(w->out, "");
	put(w->err, "");
	put(w->code, "0");
	ota_oci_runtime_opts ro = {OTA_OCI_RUNC, w->fakert, w->root, "fake"};
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_rt_init(&w->rt, &ro, &e), OTA_OK);
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

/* The fake runtime's next `state`: stdout bytes, stderr text, exit code. */
static void answer(world *w, const void *out, size_t n, const char *err, int code)
{
	put_bytes(w->out, out, n, 0644);
	put(w->err, err);
	char c[16];
	snprintf(c, sizeof c, "%d", code);
	put(w->code, c);
}

static void answer_json(world *w, const char *json)
{
	answer(w, json, strlen(json), "", 0);
}

/* oci_rt_state of ID: rc, and on failure everything cleared. */
static ota_err state_of(world *w, bool *exists, char status[32], long *pid, ota_error *e)
{
	ota_error_clear(e);
	*exists = true;
	*pid = 77;
	memcpy(status, "junk", 5);
	ota_err rc = oci_rt_state(&w->rt, ID, exists, status, pid, e);
	if (rc != OTA_OK) {
		assert_false(*exists);
		assert_string_equal(status, "");
		assert_int_equal(*pid, 0);
		assert_int_equal(e->code, rc);
	}
	return rc;
}

static void expect_invalid(world *w, const char *json, const char *where)
{
	bool ex;
	char st[32];
	long pid;
	ota_error e;
	ota_err rc = state_of(w, &ex, st, &pid, &e);
	if (rc != OTA_ERR_OCI_RUNTIME_STATE_INVALID)
		fail_msg("%s: got %s (%s), want oci_runtime_state_invalid", json, ota_err_name(rc),
		         e.what);
	if (where != NULL && strcmp(e.where, where) != 0)
		fail_msg("%s: where %s, want %s (%s)", json, e.where, where, e.what);
}

static void expect_invalid_json(world *w, const char *json, const char *where)
{
	answer_json(w, json);
	expect_invalid(w, json, where);
}

/* What runc 1.1.5 and crun 1.8.1 print on this host, running and stopped. */
static void test_real_outputs(void **state)
{
	world *w = *state;
	bool ex;
	char st[32];
	long pid;
	ota_error e;
	answer_json(w, "{\n  \"ociVersion\": \"1.0.2-dev\",\n  \"id\": \"" ID "\",\n"
	               "  \"pid\": 1688,\n  \"status\": \"running\",\n"
	               "  \"bundle\": \"/run/ota/bundles/" ID "\",\n"
	               "  \"rootfs\": \"/var/cache/ota/test-rootfs-busybox\",\n"
	               "  \"created\": \"2026-11-30T10:15:42.955797096Z\",\n  \"owner\": \"\"\n}");
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_true(ex);
	assert_string_equal(st, "running");
	assert_int_equal(pid, 1688);
	answer_json(w, "{\n    \"ociVersion\": \"1.0.0\",\n    \"id\": \"" ID "\",\n"
	               "    \"pid\": 0,\n    \"status\": \"stopped\",\n"
	               "    \"bundle\": \"/run/ota/bundles/" ID "\",\n"
	               "    \"rootfs\": \"/var/cache/ota/test-rootfs-busybox\",\n"
	               "    \"created\": \"2026-11-30T10:15:45.022201Z\",\n"
	               "    \"systemd-scope\": \"\",\n    \"owner\": \"root\"\n}\n\n");
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_true(ex);
	assert_string_equal(st, "stopped");
	assert_int_equal(pid, 0);
	/* pid bounds: INT_MAX and 1 are pids; a stopped container may keep one */
	answer_json(w, "{\"id\":\"" ID "\",\"status\":\"created\",\"pid\":2147483647}");
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_int_equal(pid, INT_MAX);
	answer_json(w, "{\"id\":\"" ID "\",\"status\":\"paused\",\"pid\":1}");
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_int_equal(pid, 1);
	answer_json(w, "{\"id\":\"" ID "\",\"status\":\"stopped\",\"pid\":4242}");
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_int_equal(pid, 4242);
	/* pid_out may be NULL */
	bool ex2 = false;
	char st2[32];
	ota_error_clear(&e);
	assert_ota(oci_rt_state(&w->rt, ID, &ex2, st2, NULL, &e), OTA_OK);
	assert_true(ex2);
	assert_string_equal(st2, "stopped");
}

/* The runtime does not know the id: exists false, no error; any other
 * failure of the command is oci_runtime_failed. */
static void test_absent_and_failed(void **state)
{
	world *w = *state;
	bool ex;
	char st[32];
	long pid;
	ota_error e;
	answer(w, "", 0, "time=\"x\" level=error msg=\"container does not exist\"\n", 1);
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_false(ex);
	answer(w, "", 0, "error opening file `/run/ota/crun/x/status`: No such file or directory\n",
	       1);
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_false(ex);
	const char *ok = "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5}";
	answer(w, ok, strlen(ok), "permission denied\n", 1); /* a valid answer, but exit 1 */
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_ERR_OCI_RUNTIME_FAILED);
}

static void test_pid_range(void **state)
{
	world *w = *state;
	const char *bad[] = {
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":-1}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":0}",
		"{\"id\":\"" ID "\",\"status\":\"created\",\"pid\":0}",
		"{\"id\":\"" ID "\",\"status\":\"stopped\",\"pid\":-1}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":2147483648}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":4294967297}", /* (pid_t) 1 */
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":4294967295}", /* (pid_t) -1 */
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":1.0}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":1e3}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":\"1234\"}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":null}",
		"{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":true}",
		"{\"id\":\"" ID "\",\"status\":\"running\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_invalid_json(w, bad[i], "state.pid");
	/* beyond a 64-bit integer: the strict parser refuses it */
	expect_invalid_json(w,
	                    "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":99999999999999999999}",
	                    ID);
}

static void test_fields(void **state)
{
	world *w = *state;
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":\"exploded\",\"pid\":5}",
	                    "state.status");
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":\"\",\"pid\":5}", "state.status");
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":1,\"pid\":5}", "state.status");
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"pid\":5}", "state.status");
	expect_invalid_json(w, "{\"id\":\"ota-ffffffffffffffffffffffff\",\"status\":\"running\","
	                       "\"pid\":5}",
	                    "state.id");
	expect_invalid_json(w, "{\"status\":\"running\",\"pid\":5}", "state.id");
	expect_invalid_json(w, "[{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5}]", ID);
	expect_invalid_json(w, "\"running\"", ID);
	expect_invalid_json(w, "", ID);
}

/* Strict JSON: what jansson's json_loads(out, 0) let through or the NUL
 * terminator hid. */
static void test_strict(void **state)
{
	world *w = *state;
	/* a duplicate member: the later pid would have won */
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5,\"pid\":1}", ID);
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":\"stopped\",\"status\":\"running\","
	                       "\"pid\":5}",
	                    ID);
	/* something after the value, also behind a NUL byte */
	expect_invalid_json(w, "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5} {}", ID);
	const char nul[] = "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5}\0{\"pid\":1}";
	answer(w, nul, sizeof nul - 1, "", 0);
	expect_invalid(w, "NUL after the value", ID);
	/* invalid UTF-8 in a member the runner does not even use */
	const char utf[] = "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5,\"owner\":\"\xc3\x28\"}";
	answer(w, utf, sizeof utf - 1, "", 0);
	expect_invalid(w, "invalid UTF-8", ID);
}

/* At most OTA_OCI_MAX_STATE_BYTES: exactly that is read, one byte more is
 * refused; a runtime printing megabytes is drained, not waited on. */
static void test_size(void **state)
{
	world *w = *state;
	const char *obj = "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":5}";
	size_t n = OTA_OCI_MAX_STATE_BYTES;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, ' ', n + 1);
	memcpy(big, obj, strlen(obj)); /* the object, then spaces up to n */
	bool ex;
	char st[32];
	long pid;
	ota_error e;
	answer(w, big, n, "", 0);
	assert_ota(state_of(w, &ex, st, &pid, &e), OTA_OK);
	assert_int_equal(pid, 5);
	answer(w, big, n + 1, "", 0);
	expect_invalid(w, "one byte over", ID);
	free(big);
	/* 16 MiB of output */
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "head -c 16777216 /dev/zero | tr '\\0' ' ' > '%s'", w->out);
	assert_int_equal(system(cmd), 0);
	put(w->code, "0");
	expect_invalid(w, "16 MiB", ID);
}

/*
 * Finalization trusts nothing of an invalid answer: no kill, no delete,
 * and no confirmation. Before, "running" with pid -1 passed pid_exited
 * (pid <= 0), and with no state directory in the runtime root the
 * removal of a container the runtime still reported running was
 * "confirmed".
 */
static void test_finalize(void **state)
{
	world *w = *state;
	answer_json(w, "{\"id\":\"" ID "\",\"status\":\"running\",\"pid\":-1}");
	put(w->log, "");
	json_t *cl = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_finalize_container(&w->rt, ID, 0, NULL, NULL, &cl, &e),
	           OTA_ERR_OCI_RUNTIME_STATE_INVALID);
	/* what was done without the runtime (nothing: pid 0), nothing confirmed */
	assert_non_null(cl);
	assert_true(json_is_false(json_object_get(cl, "confirmed")));
	assert_true(json_is_false(json_object_get(cl, "pidns_proved")));
	json_decref(cl);
	assert_string_equal(e.where, "state.pid");
	FILE *f = fopen(w->log, "r");
	assert_non_null(f);
	char line[512];
	size_t lines = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		lines++;
		assert_non_null(strstr(line, " state " ID)); /* nothing but `state` ran */
	}
	fclose(f);
	assert_int_equal(lines, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_real_outputs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absent_and_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finalize, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
