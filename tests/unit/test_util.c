#include "test_util.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "ota/cose.h"
#include "ota/json.h"

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

void test_repo_world_make(test_repo_world *w, int open_flags)
{
	memset(w, 0, sizeof *w);
	w->tmp = test_tmpdir();
	test_mkdir_in(w->tmp, "repo", w->repo, sizeof w->repo);
	w->repo_fd = open(w->repo, open_flags | O_DIRECTORY | O_CLOEXEC);
	assert_true(w->repo_fd >= 0);
}

void test_repo_world_free(test_repo_world *w)
{
	close(w->repo_fd);
	test_rmtree(w->tmp);
	free(w->tmp);
	memset(w, 0, sizeof *w);
}

void test_mkdir_in(const char *dir, const char *name, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	assert_true(n > 0 && (size_t)n < cap);
	assert_int_equal(mkdir(out, 0755), 0);
}

size_t test_count_entries(const char *dir, bool recursive)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, recursive ? "find '%s' | wc -l" : "ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	unsigned long n = 0;
	assert_int_equal(fscanf(p, "%lu", &n), 1);
	pclose(p);
	return n;
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

uint8_t *test_ec_spki_as(const EVP_PKEY *p, const char *form, const char *enc, size_t *len)
{
	EVP_PKEY *d = EVP_PKEY_dup((EVP_PKEY *)(uintptr_t)p);
	assert_non_null(d);
	assert_int_equal(
	    EVP_PKEY_set_utf8_string_param(d, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, form), 1);
	if (enc != NULL)
		assert_int_equal(EVP_PKEY_set_utf8_string_param(d, OSSL_PKEY_PARAM_EC_ENCODING, enc),
		                 1);
	int n = i2d_PUBKEY(d, NULL);
	assert_true(n > 0);
	uint8_t *der = malloc((size_t)n), *w = der;
	assert_non_null(der);
	assert_int_equal(i2d_PUBKEY(d, &w), n);
	EVP_PKEY_free(d);
	*len = (size_t)n;
	return der;
}

ota_key *test_key_from_pkey(EVP_PKEY *p)
{
	BIO *b = BIO_new(BIO_s_mem());
	assert_non_null(b);
	assert_int_equal(PEM_write_bio_PrivateKey(b, p, NULL, NULL, 0, NULL, NULL), 1);
	char *text = NULL;
	long tl = BIO_get_mem_data(b, &text);
	ota_key *k = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(text, (size_t)tl), &k, NULL), OTA_OK);
	BIO_free(b);
	return k;
}

char *test_pem_of_der(const uint8_t *der, size_t n)
{
	char *b64 = NULL;
	assert_ota(ota_base64_encode(ota_bytes_make(der, n), &b64), OTA_OK);
	static const char head[] = "-----BEGIN PUBLIC KEY-----\n", tail[] = "-----END PUBLIC KEY-----\n";
	size_t bl = strlen(b64);
	char *p = malloc(sizeof head + bl + bl / 64 + 1 + sizeof tail);
	assert_non_null(p);
	size_t w = sizeof head - 1;
	memcpy(p, head, w);
	for (size_t i = 0; i < bl; i += 64) {
		size_t c = bl - i < 64 ? bl - i : 64;
		memcpy(p + w, b64 + i, c);
		w += c;
		p[w++] = '\n';
	}
	memcpy(p + w, tail, sizeof tail);
	free(b64);
	return p;
}

json_t *test_snap_key_der(const uint8_t *der, size_t n, const char *alg)
{
	uint8_t kid[32];
	char kh[65];
	assert_ota(ota_sha256(ota_bytes_make(der, n), kid), OTA_OK);
	ota_hex_encode(ota_bytes_make(kid, 32), kh);
	char *pem = test_pem_of_der(der, n);
	json_t *e = json_pack("{s:s, s:s, s:s}", "kid", kh, "alg", alg, "public_key", pem);
	assert_non_null(e);
	free(pem);
	return e;
}

json_t *test_snap_key(const ota_key *k, ota_alg alg)
{
	uint8_t *der = NULL;
	size_t n = 0;
	assert_ota(ota_key_spki_der(k, &der, &n), OTA_OK);
	json_t *e = test_snap_key_der(der, n, ota_alg_name(alg));
	free(der);
	return e;
}

json_t *test_snap_body(int64_t version, const char *prev, unsigned threshold,
                      json_t *root_keys, json_t *principals, int64_t t0, int64_t expires)
{
	json_t *s = json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:I, s:o}, s:o}", "kind",
	                      OTA_TRUST_KIND, "trust_domain", "acme.example", "version",
	                      (json_int_t)version, "issued_at", (json_int_t)(t0 + version),
	                      "expires", (json_int_t)expires, "root", "threshold",
	                      (json_int_t)threshold, "keys", root_keys, "principals", principals);
	assert_non_null(s);
	if (prev != NULL)
		json_object_set_new(s, "prev", json_string(prev));
	return s;
}

char *test_snap_text(json_t *signed_, json_t *sigs, size_t *len)
{
	json_t *doc = json_pack("{s:o, s:o}", "signed", signed_, "signatures",
	                        sigs != NULL ? sigs : json_array());
	assert_non_null(doc);
	char *text = NULL;
	assert_ota(ota_jcs_serialize(doc, &text, len, NULL), OTA_OK);
	json_decref(doc);
	return text;
}

ota_policy_options test_policy_amd64(void)
{
	ota_policy_options o;
	memset(&o, 0, sizeof o);
	strcpy(o.native_platform.os, "linux");
	strcpy(o.native_platform.architecture, "amd64");
	return o;
}

ota_contract *test_contract_load(const char *y, const char *name)
{
	ota_contract *c = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_contract_load(ota_bytes_make(y, strlen(y)), name, &c, &e);
	if (rc != OTA_OK)
		fail_msg("contract %s: %s %s %s\n%s", name, ota_err_name(rc), e.where, e.what, y);
	return c;
}

ota_policy *test_policy_compile(const ota_contract *c, ota_lane_kind k, const char *lane,
                                const ota_overlay *const *ovs, size_t n)
{
	ota_policy_options o = test_policy_amd64();
	ota_policy *p = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_policy_compile(c, k, lane, &o, ovs, n, &p, &e);
	if (rc != OTA_OK)
		fail_msg("compile %s: %s %s %s", lane, ota_err_name(rc), e.where, e.what);
	return p;
}

ota_policy *test_policy_admit_host(const char *yaml, ota_lane_kind k, const char *lane,
                                   json_t **adm, bool *admitted)
{
	ota_contract *c = test_contract_load(yaml, "ota.yaml");
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	ota_platform_host(&po.native_platform);
	ota_policy *p = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_policy_compile(c, k, lane, &po, NULL, 0, &p, &e);
	if (rc != OTA_OK)
		fail_msg("compile %s: %s %s %s", lane, ota_err_name(rc), e.where, e.what);
	ota_capability_descriptor d;
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	assert_non_null(txt);
	assert_ota(ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)),
	                                           &po.native_platform, &d, NULL),
	           OTA_OK);
	ota_admission_request req = {true, NULL, &d, 1};
	*admitted = false;
	*adm = NULL;
	assert_ota(ota_policy_admit(p, &req, adm, admitted, NULL), OTA_OK);
	ota_contract_free(c);
	return p;
}

ota_capability_descriptor test_policy_oci_descriptor(void)
{
	ota_capability_descriptor d;
	ota_platform host = {"linux", "amd64", ""};
	const char *t = ota_policy_builtin_descriptor("oci_local");
	assert_non_null(t);
	assert_ota(ota_capability_descriptor_parse(ota_bytes_make(t, strlen(t)), &host, &d, NULL),
	           OTA_OK);
	return d;
}

bool test_policy_has_refusal(const json_t *a, const char *control)
{
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(a, "refusals"), i, r)
		if (strcmp(json_string_value(json_object_get(r, "control")), control) == 0)
			return true;
	return false;
}

const char *const test_policy_paths[TEST_POLICY_NPATHS] = {
	"out", "out/reports", "out/logs", "build", "build/keep", "src", "docs", ".github"};

unsigned test_rnd(uint64_t *state, unsigned n)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return (unsigned)(x % n);
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

void test_pathf(char *out, size_t cap, const char *a, const char *b)
{
	int n = snprintf(out, cap, "%s/%s", a, b);
	assert_true(n > 0 && (size_t)n < cap);
}

void test_put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

bool test_lexists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* the command of fmt, ap in cmd[8192], run: system()'s status */
static int vsh(char cmd[8192], const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static int vsh(char cmd[8192], const char *fmt, va_list ap)
{
	int n = vsnprintf(cmd, 8192, fmt, ap);
	assert_true(n > 0 && n < 8192);
	return system(cmd);
}

void test_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	int rc = vsh(cmd, fmt, ap);
	va_end(ap);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, cmd);
}

int test_sh_status(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	int rc = vsh(cmd, fmt, ap);
	va_end(ap);
	return rc;
}

void test_fake_runtime(const char *path, const char *log)
{
	char text[2048];
	int n = snprintf(text, sizeof text,
	                 "#!/bin/sh\n"
	                 "echo \"$*\" >> '%s'\n"
	                 "case \" $* \" in\n"
	                 "  *' state '*) echo 'container does not exist' >&2; exit 1;;\n"
	                 "  *' run '*) echo 'no containers in this test' >&2; exit 1;;\n"
	                 "esac\n"
	                 "exit 0\n",
	                 log);
	assert_true(n > 0 && (size_t)n < sizeof text);
	test_put(path, text, 0755);
}

int64_t test_db_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = -1;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

void test_db_integrity_ok(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);
}
