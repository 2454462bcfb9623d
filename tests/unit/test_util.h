/* Helpers shared by the cmocka unit tests. */
#ifndef OTA_TEST_UTIL_H
#define OTA_TEST_UTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/common.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/policy.h"
#include "ota/trust.h"

/* Absolute path of a file under the source tree (static buffer per call site not shared: returns new string). */
char *test_src_path(const char *rel);
/* Reads a file under the source tree; fails the test when unreadable. *len may be NULL. */
uint8_t *test_read_src(const char *rel, size_t *len);
/* A fresh temporary directory (new string); removed by test_rmtree. */
char *test_tmpdir(void);
void test_rmtree(const char *path);
/* out = a/b; fails the test when it does not fit. */
void test_pathf(char *out, size_t cap, const char *a, const char *b);
/* Writes text to path (created or truncated), then sets its mode. */
void test_put(const char *path, const char *text, mode_t mode);
/* Something is at path (lstat: a dangling symlink counts). */
bool test_lexists(const char *path);
/* The integer the first row of sql gives on the sqlite file at path
 * (opened read-only), -1 when there is no row; fails the test when it
 * cannot open or prepare. */
int64_t test_db_int(const char *path, const char *sql);
/* PRAGMA integrity_check of the sqlite file at path says "ok". */
void test_db_integrity_ok(const char *path);
/* Runs a shell command; fails the test on any other status than 0. */
void test_sh(const char *fmt, ...) OTA_PRINTF(1, 2);
/* Runs a shell command (at most 8 KiB) and returns system()'s status. */
int test_sh_status(const char *fmt, ...) OTA_PRINTF(1, 2);
/* git in a clean environment, for a shell command: no user or system
 * config, no GIT_DIR, a fixed identity, main as the first branch. */
#define TEST_GIT                                                                             \
	"env -u GIT_DIR -u GIT_WORK_TREE HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "            \
	"GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t " \
	"git -c init.defaultBranch=main -c safe.directory=*"
/*
 * A fake OCI runtime at path (mode 0755): appends its arguments to log,
 * answers `state` as an unknown container, refuses `run`, succeeds at
 * anything else (kill, delete). For tests that must see which runtime
 * commands were (not) run.
 */
void test_fake_runtime(const char *path, const char *log);
/*
 * A fresh temporary directory with an empty DIR/repo in it, repo opened as
 * a directory (open_flags | O_DIRECTORY | O_CLOEXEC); _free closes repo_fd
 * and removes DIR.
 */
typedef struct test_repo_world {
	char *tmp;
	char repo[512];
	int repo_fd;
} test_repo_world;
void test_repo_world_make(test_repo_world *w, int open_flags);
void test_repo_world_free(test_repo_world *w);
/* Makes the directory dir/name (0755); its path into out (cap bytes). */
void test_mkdir_in(const char *dir, const char *name, char *out, size_t cap);
/* How many names dir holds: its own entries (ls -A), or with recursive
 * every path find lists beneath it, dir itself included. */
size_t test_count_entries(const char *dir, bool recursive);
/* Asserts rc == want and prints both stable names when not. */
#define assert_ota(rc, want) test_assert_ota((rc), (want), __FILE__, __LINE__)
void test_assert_ota(ota_err rc, ota_err want, const char *file, int line);

/* ---- trust roots ---- */

/* A draft for domain with the one root key root_key (threshold 1), valid
 * from `from` to until (new; test_trust_finish frees it). */
ota_trust_draft *test_trust_draft(const char *domain, const ota_key *root_key, int64_t from,
                                  int64_t until);
/* Adds principal id with role and the one target; with k not NULL, also k
 * as its key (its own algorithm), valid from key_from without end. */
void test_trust_add(ota_trust_draft *d, const char *id, ota_trust_role role, const char *target,
                    const ota_key *k, int64_t key_from);
/* Adds k as one more key of principal id, valid from key_from without end. */
void test_trust_add_key(ota_trust_draft *d, const char *id, const ota_key *k, int64_t key_from);
/* Finishes d (freed) and signs the root with root_key: the root (new). */
ota_trust_root *test_trust_finish(ota_trust_draft *d, const ota_key *root_key);

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

/* ---- keys in other encodings ---- */

/* SPKI DER (new) of a copy of the EC key p with the point form set
 * ("uncompressed", "compressed", "hybrid") and, enc not NULL, the parameter
 * encoding ("named_curve", "explicit"). */
uint8_t *test_ec_spki_as(const EVP_PKEY *p, const char *form, const char *enc, size_t *len);
/* p's private key written as PEM and loaded with ota_key_load_pem (new);
 * the test fails when it is refused. p stays the caller's. */
ota_key *test_key_from_pkey(EVP_PKEY *p);

/* ---- trust snapshots built by hand (JSON, not through the draft API) ---- */

/* SPKI DER as "PUBLIC KEY" PEM, 64-column base64 (new). */
char *test_pem_of_der(const uint8_t *der, size_t n);
/* {kid, alg, public_key} of the SPKI der, kid = SHA-256(der) (new). */
json_t *test_snap_key_der(const uint8_t *der, size_t n, const char *alg);
/* test_snap_key_der of k's SPKI under alg (new). */
json_t *test_snap_key(const ota_key *k, ota_alg alg);
/* The signed body of trust domain acme.example (new): version, issued_at
 * t0 + version, expires, the root threshold and keys; root_keys and
 * principals stolen; prev (the previous version's id) may be NULL. */
json_t *test_snap_body(int64_t version, const char *prev, unsigned threshold,
                      json_t *root_keys, json_t *principals, int64_t t0, int64_t expires);
/* The snapshot text {signed, signatures} as JCS (new); signed_ and sigs
 * stolen, sigs NULL for none; *len its length. */
char *test_snap_text(json_t *signed_, json_t *sigs, size_t *len);

/* ---- policy: contracts, compilation, admission ---- */

/* Options with linux/amd64 as the native platform, nothing else set. */
ota_policy_options test_policy_amd64(void);
/* The contract y (named name in errors): loaded, or the test fails (new). */
ota_contract *test_contract_load(const char *y, const char *name);
/* Compiles lane of kind k of c with the overlays ovs[n] under
 * test_policy_amd64: the policy, or the test fails (new). */
ota_policy *test_policy_compile(const ota_contract *c, ota_lane_kind k, const char *lane,
                                const ota_overlay *const *ovs, size_t n);
/* The contract yaml's lane of kind k compiled for this host's platform and
 * admitted for oci_local with the builtin descriptor (agent run): the
 * policy, *adm the admission (new) and *admitted its decision, or the test
 * fails. For real runs. */
ota_policy *test_policy_admit_host(const char *yaml, ota_lane_kind k, const char *lane,
                                   json_t **adm, bool *admitted);
/* The builtin oci_local descriptor parsed for linux/amd64. */
ota_capability_descriptor test_policy_oci_descriptor(void);
/* Whether admission output a has a refusal of control. */
bool test_policy_has_refusal(const json_t *a, const char *control);
/* The paths random overlays pick from: the first five outside .github and
 * docs protection, then src, docs, .github. */
#define TEST_POLICY_NPATHS 8
extern const char *const test_policy_paths[TEST_POLICY_NPATHS];
/* xorshift64 step of *state: a number below n (state never 0). */
unsigned test_rnd(uint64_t *state, unsigned n);

/* ---- admission: trust root, nonce store, context and signer ---- */

/*
 * What the admission tests share; a test's own world holds it and adds its
 * issuers' keys. root_key and verifier_key (ES256) are generated by _begin;
 * the root has the issuers the test adds, then verifier:endpoint
 * (verifier_key, any target). With a db_name, the store is DIR/db_name
 * (DIR a fresh temporary directory) and ctx judges against root and store
 * with the default options; signer signs as verifier:endpoint.
 */
typedef struct test_admission_world {
	int64_t from; /* the root's and the keys' start of validity */
	char *dir;    /* NULL without a store */
	char db[512]; /* the store's path, "" without one */
	ota_key *root_key, *verifier_key;
	ota_trust_root *root;
	ota_nonce_store *store; /* NULL without a db_name */
	ota_admission_ctx ctx;
	ota_acceptance_signer signer;
} test_admission_world;
/* Generates the root and verifier keys; returns the draft of domain, valid
 * from `from` to until, for the test to add its issuers to. */
ota_trust_draft *test_admission_world_begin(test_admission_world *w, const char *domain,
                                            int64_t from, int64_t until);
/* Adds verifier:endpoint to d, finishes and signs the root; opens the store
 * DIR/db_name unless db_name is NULL; sets ctx and signer. */
void test_admission_world_finish(test_admission_world *w, ota_trust_draft *d, const char *db_name);
/* Closes the store, frees the root and both keys, removes DIR. */
void test_admission_world_free(test_admission_world *w);
/* ota_admission_admit of msg at now (prepare and commit at the same time,
 * no expected nonce, no group committer); a refusal's error detail must
 * name the same refusal; on success id_out (OTA_ID_LEN + 1 bytes, may be
 * NULL) receives the record id. */
ota_err test_admission_admit(test_admission_world *w, ota_bytes msg, int64_t now, char *id_out);

/* ---- attestations ---- */

/*
 * a cleared, then the claims every test attestation has: iss, txn and
 * boundary, the trust root's identity, provider oci_remote, and kind
 * initial_application, or transition naming prior (prior not NULL). The
 * caller adds nonce, iat and exp.
 */
void test_attestation_claims(ota_attestation *a, const ota_trust_root *root, const char *iss,
                             const char *txn, const char *boundary, const char *prior);
/* a encoded and signed by k with ota_cose_sign1_sign, the kid protected
 * (as a provider signs) or, kid false, absent: the COSE bytes (new). */
uint8_t *test_attestation_sign(const ota_attestation *a, const ota_key *k, bool kid, size_t *len);
#endif
