/*
 * The hygiene of the files the toolkit keeps on the operator's machine:
 * private keys written 0600 whatever the umask and never over anything
 * (ota_file_write_new); a private key readable by others or owned by
 * another user refused when loaded (key_permissions_unsafe); databases and
 * the trust state made 0600 in 0700 directories, and refused when a
 * symlink, owned by another user or writable by group or others
 * (file_permissions_unsafe), their -wal/-shm/-journal files too. Runs as
 * root in CI: "another user" is uid 65534 through chown; as a non-root
 * user those cases are skipped (chown needs root).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ota/archive.h"
#include "ota/common.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/trust.h"
#include "provider-oci/oci_internal.h"
#include "test_util.h"

#define NOBODY 65534

static unsigned mode_of(const char *p)
{
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	return (unsigned)(st.st_mode & 07777);
}

static void put(const char *p, const char *text, unsigned mode)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, (mode_t)mode), 0);
	close(fd);
}

static char *private_pem(void)
{
	ota_key *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	char *pem = NULL;
	size_t n = 0;
	assert_ota(ota_key_private_pem(k, &pem, &n), OTA_OK);
	ota_key_free(k);
	return pem;
}

/* A new key file is 0600 under umask 0, is never written over a file or
 * through a symlink, and the file already there is left as it was. */
static void test_write_new(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], link[512], target[512];
	snprintf(p, sizeof p, "%s/key.pem", dir);
	mode_t old = umask(0);
	assert_ota(ota_file_write_new(p, ota_bytes_make("secret\n", 7), 0600, NULL), OTA_OK);
	assert_int_equal(mode_of(p), 0600);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_file_write_new(p, ota_bytes_make("other\n", 6), 0600, &e), OTA_ERR_EXISTS);
	uint8_t *b = NULL;
	size_t n = 0;
	assert_ota(ota_file_read(p, 64, &b, &n, NULL), OTA_OK);
	assert_int_equal(n, 7);
	assert_memory_equal(b, "secret\n", 7);
	free(b);
	/* a symlink (even to nothing) is not written through */
	snprintf(link, sizeof link, "%s/link.pem", dir);
	snprintf(target, sizeof target, "%s/target.pem", dir);
	assert_int_equal(symlink(target, link), 0);
	assert_ota(ota_file_write_new(link, ota_bytes_make("x", 1), 0600, NULL), OTA_ERR_EXISTS);
	assert_int_equal(access(target, F_OK), -1);
	umask(old);
	/* no temporary file left behind: key.pem and link.pem only */
	assert_int_equal(test_count_entries(dir, false), 2);
	test_rmtree(dir);
	free(dir);
}

/* A private key file with any group or other bit, or owned by another
 * user, is refused by name; a public key is read from any file. */
static void test_key_permissions(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], pub[512];
	snprintf(p, sizeof p, "%s/key.pem", dir);
	snprintf(pub, sizeof pub, "%s/key.pub", dir);
	char *pem = private_pem();
	ota_key *k = NULL;
	static const unsigned bad[] = {0640, 0604, 0644, 0660, 0606, 0610, 0601};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put(p, pem, bad[i]);
		ota_error e;
		ota_error_clear(&e);
		assert_ota(ota_key_load_file(p, &k, &e), OTA_ERR_KEY_PERMISSIONS);
		assert_null(k);
		assert_string_equal(e.where, p);
	}
	put(p, pem, 0600);
	assert_ota(ota_key_load_file(p, &k, NULL), OTA_OK);
	ota_key_free(k);
	put(p, pem, 0400);
	assert_ota(ota_key_load_file(p, &k, NULL), OTA_OK);
	ota_key_free(k);
	k = NULL;
	if (geteuid() == 0) {
		/* 0600 but another user's: they hold (or can replace) the key */
		put(p, pem, 0600);
		assert_int_equal(chown(p, NOBODY, NOBODY), 0);
		assert_ota(ota_key_load_file(p, &k, NULL), OTA_ERR_KEY_PERMISSIONS);
		assert_null(k);
		assert_int_equal(chown(p, 0, 0), 0);
		assert_ota(ota_key_load_file(p, &k, NULL), OTA_OK);
		ota_key_free(k);
		k = NULL;
	}
	/* the public half of the same key: 0644 and another owner are fine */
	assert_ota(ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &k, NULL), OTA_OK);
	char *pubpem = NULL;
	assert_ota(ota_key_public_pem(k, &pubpem), OTA_OK);
	ota_key_free(k);
	k = NULL;
	put(pub, pubpem, 0644);
	if (geteuid() == 0)
		assert_int_equal(chown(pub, NOBODY, NOBODY), 0);
	assert_ota(ota_key_load_file(pub, &k, NULL), OTA_OK);
	assert_false(ota_key_has_private(k));
	ota_key_free(k);
	free(pubpem);
	ota_wipe(pem, strlen(pem));
	free(pem);
	test_rmtree(dir);
	free(dir);
}

/* Created by us: the file 0600 under umask 0; a missing directory is
 * not_found and nothing is made. */
static void test_private_create(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], d1[512];
	snprintf(d1, sizeof d1, "%s/a", dir);
	snprintf(p, sizeof p, "%s/a/x.db", dir);
	mode_t old = umask(0);
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_ERR_NOT_FOUND);
	assert_int_equal(access(d1, F_OK), -1);
	assert_int_equal(mkdir(d1, 0700), 0);
	assert_ota(ota_private_file_check(p, 0, NULL), OTA_ERR_NOT_FOUND);
	assert_int_equal(access(p, F_OK), -1); /* nothing made without the flag */
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_OK);
	umask(old);
	assert_int_equal(mode_of(p), 0600);
	/* an existing 0644 file of ours is accepted as it is */
	assert_int_equal(chmod(p, 0644), 0);
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_OK);
	assert_int_equal(mode_of(p), 0644);
	test_rmtree(dir);
	free(dir);
}

/* Symlinks, group/other-writable files, other owners and unsafe
 * directories are refused, the database's side files as well. */
static void test_private_refused(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], side[512], t[512], sub[512], q[512];
	snprintf(p, sizeof p, "%s/x.db", dir);
	snprintf(t, sizeof t, "%s/elsewhere.db", dir);
	put(t, "", 0600);
	assert_int_equal(symlink(t, p), 0);
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_ERR_PATH_SYMLINK);
	assert_int_equal(unlink(p), 0);
	/* a dangling symlink: nothing is created through it */
	snprintf(q, sizeof q, "%s/nothing.db", dir);
	assert_int_equal(symlink(q, p), 0);
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_ERR_PATH_SYMLINK);
	assert_int_equal(access(q, F_OK), -1);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_ota(ota_private_file_check(p, OTA_PRIVATE_CREATE, NULL), OTA_ERR_NOT_REGULAR);
	assert_int_equal(rmdir(p), 0);
	put(p, "", 0600);
	assert_ota(ota_private_file_check(p, 0, NULL), OTA_OK);
	static const unsigned bad[] = {0620, 0602, 0666, 0622};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(chmod(p, bad[i]), 0);
		assert_ota(ota_private_file_check(p, 0, NULL), OTA_ERR_FILE_UNSAFE);
	}
	assert_int_equal(chmod(p, 0600), 0);
	static const char *const sfx[] = {"-wal", "-shm", "-journal"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(side, sizeof side, "%s%s", p, sfx[i]);
		put(side, "", 0666);
		ota_error e;
		ota_error_clear(&e);
		assert_ota(ota_private_file_check(p, 0, &e), OTA_ERR_FILE_UNSAFE);
		assert_string_equal(e.where, side);
		assert_int_equal(unlink(side), 0);
		assert_int_equal(symlink(t, side), 0);
		assert_ota(ota_private_file_check(p, 0, NULL), OTA_ERR_PATH_SYMLINK);
		assert_int_equal(unlink(side), 0);
		if (geteuid() == 0) {
			put(side, "", 0600);
			assert_int_equal(chown(side, NOBODY, NOBODY), 0);
			assert_ota(ota_private_file_check(p, 0, NULL), OTA_ERR_FILE_UNSAFE);
			assert_int_equal(unlink(side), 0);
		}
	}
	assert_ota(ota_private_file_check(p, 0, NULL), OTA_OK);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, NOBODY, NOBODY), 0);
		assert_ota(ota_private_file_check(p, 0, NULL), OTA_ERR_FILE_UNSAFE);
		assert_int_equal(chown(p, 0, 0), 0);
	}
	/* the directory: group/other-writable without the sticky bit is refused,
	 * with it (as /tmp) accepted; another user's directory is refused */
	snprintf(sub, sizeof sub, "%s/d", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(q, sizeof q, "%s/d/y.db", dir);
	assert_int_equal(chmod(sub, 0777), 0);
	assert_ota(ota_private_file_check(q, OTA_PRIVATE_CREATE, NULL), OTA_ERR_FILE_UNSAFE);
	assert_int_equal(access(q, F_OK), -1);
	assert_int_equal(chmod(sub, 0770), 0);
	assert_ota(ota_private_file_check(q, OTA_PRIVATE_CREATE, NULL), OTA_ERR_FILE_UNSAFE);
	assert_int_equal(chmod(sub, 01777), 0);
	assert_ota(ota_private_file_check(q, OTA_PRIVATE_CREATE, NULL), OTA_OK);
	assert_int_equal(chmod(sub, 0755), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(sub, NOBODY, NOBODY), 0);
		assert_ota(ota_private_file_check(q, 0, NULL), OTA_ERR_FILE_UNSAFE);
	}
	test_rmtree(dir);
	free(dir);
}

/* The nonce store: made 0600 (its -wal and -shm too) under umask 022; one
 * another user owns or others may write is refused before sqlite opens it. */
static void test_nonce_store(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], wal[520], shm[520], d[512];
	snprintf(d, sizeof d, "%s/lib", dir);
	snprintf(p, sizeof p, "%s/lib/nonces.db", dir);
	snprintf(wal, sizeof wal, "%s-wal", p);
	snprintf(shm, sizeof shm, "%s-shm", p);
	assert_int_equal(mkdir(d, 0755), 0);
	mode_t old = umask(022);
	ota_nonce_store *st = NULL;
	assert_ota(ota_nonce_store_open(p, NULL, &st, NULL), OTA_OK);
	umask(old);
	assert_int_equal(mode_of(p), 0600);
	assert_int_equal(mode_of(wal), 0600);
	assert_int_equal(mode_of(shm), 0600);
	ota_nonce_store_close(st);
	st = NULL;
	assert_int_equal(chmod(p, 0666), 0);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_nonce_store_open(p, NULL, &st, &e), OTA_ERR_FILE_UNSAFE);
	assert_null(st);
	assert_string_equal(e.where, p);
	assert_int_equal(chmod(p, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, NOBODY, NOBODY), 0);
		assert_ota(ota_nonce_store_open(p, NULL, &st, NULL), OTA_ERR_FILE_UNSAFE);
		assert_int_equal(chown(p, 0, 0), 0);
	}
	assert_ota(ota_nonce_store_open(p, NULL, &st, NULL), OTA_OK);
	ota_nonce_store_close(st);
	test_rmtree(dir);
	free(dir);
}

/* The lease database: made 0600 (its -wal and -shm too) under umask 022;
 * writable by others, another user's or a symlink is refused. */
static void test_lease_db(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], wal[520], t[512];
	snprintf(p, sizeof p, "%s/leases.db", dir);
	snprintf(wal, sizeof wal, "%s-wal", p);
	mode_t old = umask(022);
	oci_lease_db *db = NULL;
	assert_ota(oci_lease_open(p, &db, NULL), OTA_OK);
	umask(old);
	oci_lease_close(db);
	db = NULL;
	assert_int_equal(mode_of(p), 0600);
	if (access(wal, F_OK) == 0)
		assert_int_equal(mode_of(wal), 0600);
	assert_int_equal(chmod(p, 0664), 0);
	assert_ota(oci_lease_open(p, &db, NULL), OTA_ERR_FILE_UNSAFE);
	assert_null(db);
	assert_int_equal(chmod(p, 0600), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, NOBODY, NOBODY), 0);
		assert_ota(oci_lease_open(p, &db, NULL), OTA_ERR_FILE_UNSAFE);
		assert_int_equal(chown(p, 0, 0), 0);
	}
	snprintf(t, sizeof t, "%s/l.db", dir);
	assert_int_equal(symlink(p, t), 0);
	assert_ota(oci_lease_open(t, &db, NULL), OTA_ERR_PATH_SYMLINK);
	assert_ota(oci_lease_open(p, &db, NULL), OTA_OK);
	oci_lease_close(db);
	test_rmtree(dir);
	free(dir);
}

/* The trust state and the verifier's ledger: writable by others or owned
 * by another user is file_permissions_unsafe. */
static void test_state_and_ledger(void **s)
{
	(void)s;
	char *dir = test_tmpdir();
	char p[512], l[512];
	snprintf(p, sizeof p, "%s/state.json", dir);
	put(p, "{\"kind\": \"" OTA_TRUST_STATE_KIND "\", \"domains\": {}}", 0600);
	ota_trust_state *ts = NULL;
	assert_ota(ota_trust_state_open(p, &ts, NULL), OTA_OK);
	ota_trust_state_close(ts);
	ts = NULL;
	assert_int_equal(chmod(p, 0646), 0);
	assert_ota(ota_trust_state_open(p, &ts, NULL), OTA_ERR_FILE_UNSAFE);
	assert_null(ts);
	assert_int_equal(chmod(p, 0644), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(p, NOBODY, NOBODY), 0);
		assert_ota(ota_trust_state_open(p, &ts, NULL), OTA_ERR_FILE_UNSAFE);
		assert_null(ts);
	}
	snprintf(l, sizeof l, "%s/ledger.db", dir);
	mode_t old = umask(0);
	assert_ota(ota_archive_ledger_prepare(l, true, NULL), OTA_OK);
	umask(old);
	assert_int_equal(mode_of(l), 0600);
	assert_int_equal(chmod(l, 0664), 0);
	assert_ota(ota_archive_ledger_prepare(l, false, NULL), OTA_ERR_FILE_UNSAFE);
	assert_int_equal(chmod(l, 0600), 0);
	assert_ota(ota_archive_ledger_prepare(l, false, NULL), OTA_OK);
	if (geteuid() == 0) {
		assert_int_equal(chown(l, NOBODY, NOBODY), 0);
		assert_ota(ota_archive_ledger_prepare(l, false, NULL), OTA_ERR_FILE_UNSAFE);
	}
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_new),       cmocka_unit_test(test_key_permissions),
		cmocka_unit_test(test_private_create),  cmocka_unit_test(test_private_refused),
		cmocka_unit_test(test_nonce_store),     cmocka_unit_test(test_lease_db),
		cmocka_unit_test(test_state_and_ledger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
