/* common/: hex, base64, ids, errors detail, clock, atomic files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

static void test_hex_roundtrip(void **state)
{
	(void)state;
	const uint8_t in[] = {0x00, 0x7f, 0x80, 0xff, 0x12};
	char hex[11];
	ota_hex_encode(ota_bytes_make(in, sizeof in), hex);
	assert_string_equal(hex, "007f80ff12");
	uint8_t out[5];
	size_t n = 0;
	assert_ota(ota_hex_decode("007F80FF12", 10, (ota_buf){out, sizeof out}, &n), OTA_OK);
	assert_int_equal(n, 5);
	assert_memory_equal(out, in, 5);
	assert_ota(ota_hex_decode("0g", 2, (ota_buf){out, sizeof out}, &n), OTA_ERR_BAD_HEX);
	assert_int_equal(n, 0);
	assert_ota(ota_hex_decode("123", 3, (ota_buf){out, sizeof out}, &n), OTA_ERR_BAD_HEX);
	assert_ota(ota_hex_decode("00112233445566", 14, (ota_buf){out, sizeof out}, &n),
	           OTA_ERR_TOO_LARGE);
}

static void test_base64(void **state)
{
	(void)state;
	/* RFC 4648 section 10 vectors. */
	static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *b64[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	static const char *b64u[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
	for (size_t i = 0; i < 7; i++) {
		char *e = NULL;
		assert_ota(ota_base64_encode(ota_bytes_make(plain[i], strlen(plain[i])), &e), OTA_OK);
		assert_string_equal(e, b64[i]);
		free(e);
		assert_ota(ota_base64url_encode(ota_bytes_make(plain[i], strlen(plain[i])), &e), OTA_OK);
		assert_string_equal(e, b64u[i]);
		free(e);
		uint8_t *d = NULL;
		size_t n = 0;
		assert_ota(ota_base64_decode(b64[i], strlen(b64[i]), &d, &n), OTA_OK);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(d, plain[i], n);
		free(d);
		assert_ota(ota_base64_decode(b64u[i], strlen(b64u[i]), &d, &n), OTA_OK);
		assert_int_equal(n, strlen(plain[i]));
		free(d);
	}
	uint8_t *d = NULL;
	size_t n = 0;
	assert_ota(ota_base64_decode("Zg=", 3, &d, &n), OTA_ERR_BAD_BASE64);
	assert_ota(ota_base64_decode("Zh==", 4, &d, &n), OTA_ERR_BAD_BASE64); /* non-zero pad bits */
	assert_ota(ota_base64_decode("Z+_a", 4, &d, &n), OTA_ERR_BAD_BASE64); /* mixed alphabets */
	assert_ota(ota_base64_decode("Zm9v!", 5, &d, &n), OTA_ERR_BAD_BASE64);
	assert_null(d);
}

static void test_ids(void **state)
{
	(void)state;
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_sha256_id(ota_bytes_make("abc", 3), id), OTA_OK);
	assert_string_equal(id, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_true(ota_id_is_valid(id));
	id[8] = 'A';
	assert_false(ota_id_is_valid(id));
	assert_false(ota_id_is_valid("sha256:abc"));
	assert_false(ota_id_is_valid(NULL));
	assert_true(ota_ct_equal(ota_bytes_make("ab", 2), ota_bytes_make("ab", 2)));
	assert_false(ota_ct_equal(ota_bytes_make("ab", 2), ota_bytes_make("ac", 2)));
	assert_false(ota_ct_equal(ota_bytes_make("ab", 2), ota_bytes_make("abc", 3)));
}

static void test_error_first_wins(void **state)
{
	(void)state;
	ota_error e;
	ota_error_clear(&e);
	assert_int_equal(ota_error_set(&e, OTA_ERR_IO, "a.json", "first %d", 1), OTA_ERR_IO);
	assert_int_equal(ota_error_set(&e, OTA_ERR_USAGE, "b", "second"), OTA_ERR_USAGE);
	assert_int_equal(e.code, OTA_ERR_IO);
	assert_string_equal(e.where, "a.json");
	assert_string_equal(e.what, "first 1");
	assert_int_equal(ota_error_set(NULL, OTA_ERR_USAGE, "x", NULL), OTA_ERR_USAGE);
	ota_err back;
	assert_true(ota_err_from_name("io_error", &back));
	assert_int_equal(back, OTA_ERR_IO);
	assert_false(ota_err_from_name("no_such_error", &back));
	assert_string_equal(ota_err_name((ota_err)99999), "unknown_error");
}

static void test_clock(void **state)
{
	(void)state;
	int64_t t = 1700000000;
	ota_clock c = ota_clock_fixed(&t);
	assert_int_equal(ota_clock_now(&c), 1700000000);
	t += 5;
	assert_int_equal(ota_clock_now(&c), 1700000005);
	ota_clock s = ota_clock_system();
	assert_true(ota_clock_now(&s) > 1700000000);
}

static void test_files(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/f.bin", dir);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_file_write_atomic(path, ota_bytes_make("hello", 5), 0600, &e), OTA_OK);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	uint8_t *buf = NULL;
	size_t n = 0;
	assert_ota(ota_file_read(path, 5, &buf, &n, &e), OTA_OK);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(buf[5], 0);
	free(buf);
	ota_error_clear(&e);
	assert_ota(ota_file_read(path, 4, &buf, &n, &e), OTA_ERR_TOO_LARGE);
	assert_null(buf);
	assert_string_equal(e.where, path);
	/* Overwrite replaces whole contents; no temporary file left behind. */
	assert_ota(ota_file_write_atomic(path, ota_bytes_make("x", 1), 0644, NULL), OTA_OK);
	assert_ota(ota_file_read(path, 100, &buf, &n, NULL), OTA_OK);
	assert_int_equal(n, 1);
	free(buf);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
	assert_int_equal(system(cmd), 0);
	ota_error_clear(&e);
	assert_ota(ota_file_read(dir, 100, &buf, &n, &e), OTA_ERR_IO);
	snprintf(path, sizeof path, "%s/missing/f", dir);
	assert_ota(ota_file_write_atomic(path, ota_bytes_make("x", 1), 0600, NULL), OTA_ERR_IO);
	/* A device is no file: refused before any read (it could block or never end). */
	ota_error_clear(&e);
	assert_ota(ota_file_read("/dev/zero", 1000, &buf, &n, &e), OTA_ERR_NOT_REGULAR);
	assert_null(buf);
	/* A stream (no size known in advance, e.g. stdin) is capped while reading. */
	int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(zfd >= 0);
	ota_error_clear(&e);
	assert_ota(ota_fd_read(zfd, "zero", 1000, &buf, &n, &e), OTA_ERR_TOO_LARGE);
	assert_null(buf);
	close(zfd);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hex_roundtrip), cmocka_unit_test(test_base64),
		cmocka_unit_test(test_ids),           cmocka_unit_test(test_error_first_wins),
		cmocka_unit_test(test_clock),         cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
