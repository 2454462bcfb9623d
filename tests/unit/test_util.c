#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ota/key.h"
#include "ota/trust.h"

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

static void write_secret(const char *path, const void *p, size_t n)
{
	assert_ota(ota_file_write_atomic(path, ota_bytes_make(p, n), 0600, NULL), OTA_OK);
}

void test_endpoint_root_make(test_endpoint_root *w, const char *domain, int64_t now,
                             int with_runner)
{
	memset(w, 0, sizeof *w);
	w->dir = test_tmpdir();
	snprintf(w->root_path, sizeof w->root_path, "%s/root.json", w->dir);
	snprintf(w->key_path, sizeof w->key_path, "%s/verifier-FIXTURE.pem", w->dir);
	snprintf(w->db_path, sizeof w->db_path, "%s/attestd.db", w->dir);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->root_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->issuer_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->verifier_key), OTA_OK);
	ota_error e = {0};
	ota_trust_draft *d = NULL;
	const ota_key *rk[1] = {w->root_key};
	const char *remote[1] = {"oci_remote"}, *any[1] = {"*"};
	assert_ota(ota_trust_draft_new(domain, rk, 1, 1, now - 3600, now + 86400, &d, &e), OTA_OK);
	assert_ota(ota_trust_draft_add_principal(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, NULL, 0,
	                                         NULL, 0, remote, 1, &e),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "issuer:acme", w->issuer_key, OTA_ALG_NONE, now - 3600,
	                                   0, &e),
	           OTA_OK);
	if (with_runner)
		assert_ota(ota_trust_draft_add_principal(d, "runner:ci", OTA_TRUST_ROLE_RUNNER, NULL, 0,
		                                         NULL, 0, any, 1, &e),
		           OTA_OK);
	assert_ota(ota_trust_draft_add_principal(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER,
	                                         NULL, 0, NULL, 0, any, 1, &e),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "verifier:endpoint", w->verifier_key, OTA_ALG_NONE,
	                                   now - 3600, 0, &e),
	           OTA_OK);
	assert_ota(ota_trust_draft_finish(d, &w->root, &e), OTA_OK);
	ota_trust_draft_free(d);
	assert_ota(ota_trust_root_sign(w->root, w->root_key, NULL, &e), OTA_OK);
	char *json = NULL, *pem = NULL;
	size_t jl = 0, pl = 0;
	assert_ota(ota_trust_root_serialize(w->root, &json, &jl, &e), OTA_OK);
	write_secret(w->root_path, json, jl);
	free(json);
	assert_ota(ota_key_private_pem(w->verifier_key, &pem, &pl), OTA_OK);
	write_secret(w->key_path, pem, pl);
	ota_wipe(pem, pl);
	free(pem);
}

void test_endpoint_root_free(test_endpoint_root *w)
{
	ota_trust_root_free(w->root);
	ota_key_free(w->root_key);
	ota_key_free(w->issuer_key);
	ota_key_free(w->verifier_key);
	if (w->dir != NULL)
		test_rmtree(w->dir);
	free(w->dir);
	memset(w, 0, sizeof *w);
}
