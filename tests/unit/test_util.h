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
#endif
