/* Helpers shared by the cmocka unit tests. */
#ifndef OTA_TEST_UTIL_H
#define OTA_TEST_UTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ota/common.h"

/* Absolute path of a file under the source tree (static buffer per call site not shared: returns new string). */
char *test_src_path(const char *rel);
/* Reads a file under the source tree; fails the test when unreadable. *len may be NULL. */
uint8_t *test_read_src(const char *rel, size_t *len);
/* A fresh temporary directory (new string); removed by test_rmtree. */
char *test_tmpdir(void);
void test_rmtree(const char *path);
/* Asserts rc == want and prints both stable names when not. */
#define assert_ota(rc, want) test_assert_ota((rc), (want), __FILE__, __LINE__)
void test_assert_ota(ota_err rc, ota_err want, const char *file, int line);

struct ota_key;
struct ota_trust_root;
/*
 * The trust root an ota-attestd test runs with: a root key, issuer:acme
 * (role issuer, provider target oci_remote), verifier:endpoint (role
 * verifier, any target) and, with_runner, runner:ci (role runner, no key),
 * valid from now - 3600 to now + 86400, signed; written to DIR/root.json,
 * the verifier's private key to DIR/verifier-FIXTURE.pem, and db_path set to
 * DIR/attestd.db (DIR a fresh temporary directory, removed by _free).
 */
typedef struct test_endpoint_root {
	char *dir;
	char root_path[512], key_path[512], db_path[512];
	struct ota_key *root_key, *issuer_key, *verifier_key;
	struct ota_trust_root *root;
} test_endpoint_root;
void test_endpoint_root_make(test_endpoint_root *w, const char *domain, int64_t now,
                             int with_runner);
void test_endpoint_root_free(test_endpoint_root *w);
#endif
