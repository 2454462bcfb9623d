#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *test_src_path(const char *rel)
{
	const char *root = getenv("OTA_SOURCE_DIR");
	if (root == NULL)
		root = OTA_SOURCE_DIR;
	size_t n = strlen(root) + strlen(rel) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", root, rel);
	return p;
}

uint8_t *test_read_src(const char *rel, size_t *len)
{
	char *p = test_src_path(rel);
	uint8_t *buf = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(p, 64u * 1024u * 1024u, &buf, &n, NULL);
	if (rc != OTA_OK)
		fail_msg("cannot read %s: %s", p, ota_err_name(rc));
	free(p);
	if (len != NULL)
		*len = n;
	return buf;
}

char *test_tmpdir(void)
{
	char tmpl[] = "/tmp/ota-test-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

void test_rmtree(const char *path)
{
	char cmd[4096];
	int n = snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", path);
	assert_true(n > 0 && (size_t)n < sizeof cmd);
	assert_int_equal(system(cmd), 0);
}

void test_assert_ota(ota_err rc, ota_err want, const char *file, int line)
{
	if (rc != want)
		fail_msg("%s:%d: got %s, want %s", file, line, ota_err_name(rc), ota_err_name(want));
}
