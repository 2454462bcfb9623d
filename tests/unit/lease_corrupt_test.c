/*
 * A lease database with one damaged page: listing the leases (what
 * `ota cleanup` and every run's orphan sweep start from) is an error
 * (oci_lease), never an empty list that lets open leases vanish.
 */
#include "test_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "ota/oci.h"

static void fill(const char *db, int rows)
{
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA journal_mode=DELETE; BEGIN;", NULL, NULL, NULL),
	                 SQLITE_OK);
	for (int i = 0; i < rows; i++) {
		char sql[1024];
		snprintf(sql, sizeof sql,
		         "INSERT INTO oci_lease(id, txn, runtime, runtime_bin, runtime_root, bundle,"
		         " runner_pid, runner_start, phase, created_at, finalized_at, terminal, detail)"
		         " VALUES('ota-%024d', 'txn', 'runc', 'runc', '/run/ota/x', '/tmp/b/%d', 1, '1',"
		         " 'finished', 1, %s, %s, '%0200d')",
		         i, i, i == 0 ? "NULL" : "2", i == 0 ? "NULL" : "'not_started'", i);
		assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	}
	assert_int_equal(sqlite3_exec(h, "COMMIT;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

static void test_damaged_page_is_an_error(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char db[512];
	snprintf(db, sizeof db, "%s/leases.db", dir);
	json_t *rows = NULL;
	ota_error e = {0};
	assert_ota(ota_oci_lease_list(db, true, &rows, &e), OTA_OK); /* creates the table */
	assert_int_equal(json_array_size(rows), 0);
	json_decref(rows);
	fill(db, 400);
	assert_ota(ota_oci_lease_list(db, true, &rows, &e), OTA_OK);
	assert_int_equal(json_array_size(rows), 1); /* the one open lease */
	json_decref(rows);
	assert_ota(ota_oci_lease_list(db, false, &rows, &e), OTA_OK);
	assert_int_equal(json_array_size(rows), 400);
	json_decref(rows);
	/* damage the middle page of the file (a leaf of the table) */
	int fd = open(db, O_RDWR);
	assert_true(fd >= 0);
	off_t size = lseek(fd, 0, SEEK_END);
	assert_true(size > 16 * 4096);
	off_t page = (size / 4096 / 2) * 4096;
	uint8_t junk[4096];
	memset(junk, 0xa5, sizeof junk);
	assert_int_equal(pwrite(fd, junk, sizeof junk, page), (ssize_t)sizeof junk);
	close(fd);
	rows = NULL;
	ota_error_clear(&e);
	assert_ota(ota_oci_lease_list(db, false, &rows, &e), OTA_ERR_OCI_LEASE);
	assert_null(rows);
	assert_non_null(strstr(e.what, "malformed"));
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_damaged_page_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
