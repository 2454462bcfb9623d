#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ota/cose.h"

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

ota_trust_draft *test_trust_draft(const char *domain, const ota_key *root_key, int64_t from,
                                  int64_t until)
{
	ota_trust_draft *d = NULL;
	ota_error e = {0};
	const ota_key *rk[1] = {root_key};
	assert_ota(ota_trust_draft_new(domain, rk, 1, 1, from, until, &d, &e), OTA_OK);
	return d;
}

void test_trust_add(ota_trust_draft *d, const char *id, ota_trust_role role, const char *target,
                    const ota_key *k, int64_t key_from)
{
	const char *targets[1] = {target};
	ota_error e = {0};
	assert_ota(ota_trust_draft_add_principal(d, id, role, NULL, 0, NULL, 0, targets, 1, &e),
	           OTA_OK);
	if (k != NULL)
		test_trust_add_key(d, id, k, key_from);
}

void test_trust_add_key(ota_trust_draft *d, const char *id, const ota_key *k, int64_t key_from)
{
	ota_error e = {0};
	assert_ota(ota_trust_draft_add_key(d, id, k, OTA_ALG_NONE, key_from, 0, &e), OTA_OK);
}

ota_trust_root *test_trust_finish(ota_trust_draft *d, const ota_key *root_key)
{
	ota_trust_root *r = NULL;
	ota_error e = {0};
	assert_ota(ota_trust_draft_finish(d, &r, &e), OTA_OK);
	ota_trust_draft_free(d);
	assert_ota(ota_trust_root_sign(r, root_key, NULL, &e), OTA_OK);
	return r;
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
	ota_trust_draft *d = test_trust_draft(domain, w->root_key, now - 3600, now + 86400);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->issuer_key,
	               now - 3600);
	if (with_runner)
		test_trust_add(d, "runner:ci", OTA_TRUST_ROLE_RUNNER, "*", NULL, 0);
	test_trust_add(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER, "*", w->verifier_key,
	               now - 3600);
	w->root = test_trust_finish(d, w->root_key);
	ota_error e = {0};
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

ota_trust_draft *test_admission_world_begin(test_admission_world *w, const char *domain,
                                            int64_t from, int64_t until)
{
	memset(w, 0, sizeof *w);
	w->from = from;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->root_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->verifier_key), OTA_OK);
	return test_trust_draft(domain, w->root_key, from, until);
}

void test_admission_world_finish(test_admission_world *w, ota_trust_draft *d, const char *db_name)
{
	test_trust_add(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER, "*", w->verifier_key,
	               w->from);
	w->root = test_trust_finish(d, w->root_key);
	if (db_name != NULL) {
		ota_error e = {0};
		w->dir = test_tmpdir();
		int n = snprintf(w->db, sizeof w->db, "%s/%s", w->dir, db_name);
		assert_true(n > 0 && (size_t)n < sizeof w->db);
		assert_ota(ota_nonce_store_open(w->db, NULL, &w->store, &e), OTA_OK);
	}
	w->ctx.root = w->root;
	w->ctx.store = w->store;
	ota_admission_opts_init(&w->ctx.opts);
	w->signer.key = w->verifier_key;
	w->signer.verifier_id = "verifier:endpoint";
}

void test_admission_world_free(test_admission_world *w)
{
	ota_nonce_store_close(w->store);
	ota_trust_root_free(w->root);
	ota_key_free(w->root_key);
	ota_key_free(w->verifier_key);
	if (w->dir != NULL)
		test_rmtree(w->dir);
	free(w->dir);
	memset(w, 0, sizeof *w);
}

ota_err test_admission_admit(test_admission_world *w, ota_bytes msg, int64_t now, char *id_out)
{
	ota_admission adm;
	ota_error e = {0};
	ota_err rc = ota_admission_admit(&w->ctx, msg, ota_bytes_make(NULL, 0), now,
	                                 ota_acceptance_build, &w->signer, NULL, &adm, NULL, NULL,
	                                 &e);
	if (rc != OTA_OK)
		assert_int_equal(e.code, rc); /* the detail names the same refusal */
	else if (id_out != NULL)
		snprintf(id_out, OTA_ID_LEN + 1, "%s", adm.record_id);
	return rc;
}

void test_attestation_claims(ota_attestation *a, const ota_trust_root *root, const char *iss,
                             const char *txn, const char *boundary, const char *prior)
{
	memset(a, 0, sizeof *a);
	snprintf(a->iss, sizeof a->iss, "%s", iss);
	snprintf(a->kind, sizeof a->kind, "%s",
	         prior != NULL ? "transition" : "initial_application");
	snprintf(a->txn, sizeof a->txn, "%s", txn);
	snprintf(a->trust_root, sizeof a->trust_root, "%s", ota_trust_root_identity(root));
	snprintf(a->provider, sizeof a->provider, "oci_remote");
	snprintf(a->boundary, sizeof a->boundary, "%s", boundary);
	if (prior != NULL) {
		a->has_prior = true;
		snprintf(a->prior, sizeof a->prior, "%s", prior);
	}
}

uint8_t *test_attestation_sign(const ota_attestation *a, const ota_key *k, bool kid, size_t *len)
{
	uint8_t *p = NULL, *msg = NULL;
	size_t pl = 0;
	assert_ota(ota_attestation_encode(a, &p, &pl), OTA_OK);
	ota_cose_sign_opts o;
	memset(&o, 0, sizeof o);
	o.include_kid = kid;
	ota_error e = {0};
	assert_ota(ota_cose_sign1_sign(k, ota_bytes_make(p, pl), &o, &msg, len, &e), OTA_OK);
	free(p);
	return msg;
}
