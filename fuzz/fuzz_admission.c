/*
 * fuzz_admission: the body of POST /v1/attestations as ota-attestd handles
 * it, without the HTTP server: ota_admission_prepare on the COSE bytes,
 * then (when it prepares) ota_admission_admit, which consumes the
 * challenge, advances the (txn, boundary) head and stores the acceptance in
 * one sqlite transaction (docs/attestation.md). The world is made at
 * start-up: a trust root with an issuer principal (issuer:acme, target
 * oci_remote) and a verifier, a scratch nonce store, one live challenge.
 *
 * The first input byte picks what the rest is:
 *   even: the request body as is;
 *   odd:  an attestation payload, signed here with the issuer's key (kid in
 *         the protected header) so the strict payload parser and every
 *         later check see fuzzed claims. Before signing, the 16 bytes
 *         "NONCE_PLACEHOLD!" become the live challenge's nonce and
 *         "sha256:" + 64 zeros the trust root's identity.
 *
 * Invariants: a refusal names itself and leaves the admission zeroed;
 * preparing changes nothing (twice, same answer); an admitted attestation's
 * record identity is sha256 over its bytes, its acceptance verifies against
 * the root and names it, and the same bytes are then refused (single use).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/cose.h"
#include "ota/trust.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1800000000
#define NONCE_MARK "NONCE_PLACEHOLD!"
#define ROOT_MARK "sha256:0000000000000000000000000000000000000000000000000000000000000000"

static ota_key *g_root_key, *g_issuer, *g_verifier;
static ota_trust_root *g_root;
static ota_nonce_store *g_store;
static ota_admission_ctx g_ctx;
static ota_acceptance_signer g_signer;
static ota_challenge g_ch;
static char g_dir[64], g_db[128];

static void issue(void)
{
	static const ota_nonce_binding b = {"txn-1", "issuer:acme", "oci_remote"};
	FZ_CHECK(ota_nonce_store_issue(g_store, &b, 16, 0, NOW - 10, &g_ch, NULL) == OTA_OK);
}

static void cleanup(void)
{
	ota_nonce_store_close(g_store);
	g_store = NULL;
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; i < 4; i++) {
		char p[160];
		snprintf(p, sizeof p, "%s%s", g_db, sfx[i]);
		unlink(p);
	}
	rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ota_trust_draft *d = NULL;
	const char *oci_remote[1] = {"oci_remote"}, *any[1] = {"*"};
	FZ_CHECK(ota_key_generate(OTA_ALG_ES256, &g_root_key) == OTA_OK &&
	         ota_key_generate(OTA_ALG_ES256, &g_issuer) == OTA_OK &&
	         ota_key_generate(OTA_ALG_ES256, &g_verifier) == OTA_OK);
	const ota_key *rk[1] = {g_root_key};
	FZ_CHECK(ota_trust_draft_new("fuzz.test", rk, 1, 1, NOW - 86400, NOW + 86400, &d, NULL) ==
	         OTA_OK);
	FZ_CHECK(ota_trust_draft_add_principal(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, NULL, 0, NULL,
	                                       0, oci_remote, 1, NULL) == OTA_OK);
	FZ_CHECK(ota_trust_draft_add_key(d, "issuer:acme", g_issuer, OTA_ALG_NONE, NOW - 86400, 0,
	                                 NULL) == OTA_OK);
	FZ_CHECK(ota_trust_draft_add_principal(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER, NULL,
	                                       0, NULL, 0, any, 1, NULL) == OTA_OK);
	FZ_CHECK(ota_trust_draft_add_key(d, "verifier:endpoint", g_verifier, OTA_ALG_NONE,
	                                 NOW - 86400, 0, NULL) == OTA_OK);
	FZ_CHECK(ota_trust_draft_finish(d, &g_root, NULL) == OTA_OK);
	FZ_CHECK(ota_trust_root_sign(g_root, g_root_key, NULL, NULL) == OTA_OK);
	ota_trust_draft_free(d);

	snprintf(g_dir, sizeof g_dir, "/tmp/ota-fuzz-admission-XXXXXX");
	FZ_CHECK(mkdtemp(g_dir) != NULL);
	snprintf(g_db, sizeof g_db, "%s/nonces.db", g_dir);
	ota_nonce_opts no;
	ota_nonce_opts_init(&no);
	no.sync = OTA_NONCE_SYNC_NORMAL; /* scratch store: no fsync per commit */
	FZ_CHECK(ota_nonce_store_open(g_db, &no, &g_store, NULL) == OTA_OK);
	atexit(cleanup);
	g_ctx.root = g_root;
	g_ctx.store = g_store;
	ota_admission_opts_init(&g_ctx.opts);
	g_signer.key = g_verifier;
	g_signer.verifier_id = "verifier:endpoint";
	issue();
	return 0;
}

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static ota_err prepare(ota_bytes cose, ota_admission *a)
{
	ota_error e;
	ota_error_clear(&e);
	memset(a, 0xa5, sizeof *a);
	ota_err rc = ota_admission_prepare(&g_ctx, cose, ota_bytes_make(NULL, 0), NOW, a, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(is_zero(a, sizeof *a));
	}
	return rc;
}

static void body(ota_bytes cose)
{
	ota_admission a, b;
	ota_err rc = prepare(cose, &a);
	FZ_CHECK(prepare(cose, &b) == rc); /* preparing changed nothing */
	if (rc != OTA_OK)
		return;
	char id[OTA_ID_LEN + 1];
	FZ_CHECK(ota_sha256_id(cose, id) == OTA_OK && strcmp(id, a.record_id) == 0);
	FZ_CHECK(strcmp(a.issuer_principal, "issuer:acme") == 0 &&
	         strcmp(a.claims.iss, "issuer:acme") == 0);
	FZ_CHECK(strcmp(a.claims.txn, a.challenge.txn) == 0);
	FZ_CHECK(a.cose.ptr == cose.ptr && a.cose.len == cose.len && a.judged_at == NOW);

	uint8_t *acc = NULL;
	size_t al = 0;
	ota_error e;
	ota_error_clear(&e);
	rc = ota_admission_admit(&g_ctx, cose, ota_bytes_make(NULL, 0), NOW, ota_acceptance_build,
	                         &g_signer, NULL, &b, &acc, &al, &e);
	if (rc != OTA_OK) { /* the transaction may still refuse (prior, lane) */
		fz_refusal(rc, &e);
		FZ_CHECK(acc == NULL);
		return;
	}
	ota_acceptance ap;
	FZ_CHECK(ota_acceptance_verify(ota_bytes_make(acc, al), g_root, NOW, &ap, NULL) == OTA_OK);
	FZ_CHECK(strcmp(ap.attestation, a.record_id) == 0);
	FZ_CHECK(strcmp(ap.challenge, a.challenge_id) == 0);
	free(acc);
	/* single use: the same bytes never pass again */
	FZ_CHECK(prepare(cose, &b) != OTA_OK);
	issue();
}

/* every occurrence of mark (n bytes) in p replaced by with (n bytes) */
static void patch(uint8_t *p, size_t len, const void *mark, const void *with, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(p + i, mark, n) == 0) {
			memcpy(p + i, with, n);
			i += n - 1;
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > OTA_MAX_HTTP_BODY_BYTES)
		return 0;
	size_t n = size - 1;
	uint8_t *p = malloc(n ? n : 1);
	FZ_CHECK(p != NULL);
	if (n)
		memcpy(p, data + 1, n);
	if ((data[0] & 1) == 0) {
		body(ota_bytes_make(p, n));
		free(p);
		return 0;
	}
	FZ_CHECK(sizeof NONCE_MARK - 1 == g_ch.nonce_len);
	patch(p, n, NONCE_MARK, g_ch.nonce, g_ch.nonce_len);
	const char *rid = ota_trust_root_identity(g_root);
	patch(p, n, ROOT_MARK, rid, strlen(rid));
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	uint8_t *m = NULL;
	size_t ml = 0;
	if (ota_cose_sign1_sign(g_issuer, ota_bytes_make(p, n), &so, &m, &ml, NULL) == OTA_OK)
		body(ota_bytes_make(m, ml));
	free(m);
	free(p);
	return 0;
}
