/*
 * fuzz_acceptance: ota_acceptance_verify (single and batch forms, see
 * docs/attestation.md) against a trust root made at start-up with one
 * verifier key. The first input byte picks what the rest is:
 *   0: an acceptance as is (structure, protected/unprotected headers,
 *      inclusion proof folding, all before any signature could pass);
 *   1: a payload, signed here in the single form with the verifier key, so
 *      that the strict payload parser sees arbitrary bytes;
 *   2: a real batch of 1..16 acceptances made here (ota_acceptance_build_batch);
 *      every one must verify, and the one whose byte the input flips (any
 *      position, any xor) must then be refused, also through a cache that
 *      has verified the batch's signature: no other encoding of a valid
 *      acceptance may verify.
 * Invariants: no crash, no leak, a refusal always names itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/cbor.h"
#include "ota/cose.h"
#include "ota/trust.h"

#define NOW 1800000000

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ota_trust_root *g_root;
static ota_key *g_root_key, *g_verifier;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ota_trust_draft *d = NULL;
	const char *any[1] = {"*"};
	if (ota_key_generate(OTA_ALG_ES256, &g_root_key) != OTA_OK ||
	    ota_key_generate(OTA_ALG_ES256, &g_verifier) != OTA_OK)
		abort();
	const ota_key *rk[1] = {g_root_key};
	if (ota_trust_draft_new("fuzz.test", rk, 1, 1, NOW - 86400, NOW + 86400, &d, NULL) !=
	            OTA_OK ||
	    ota_trust_draft_add_principal(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER, NULL, 0,
	                                  NULL, 0, any, 1, NULL) != OTA_OK ||
	    ota_trust_draft_add_key(d, "verifier:endpoint", g_verifier, OTA_ALG_NONE, NOW - 86400, 0,
	                            NULL) != OTA_OK ||
	    ota_trust_draft_finish(d, &g_root, NULL) != OTA_OK ||
	    ota_trust_root_sign(g_root, g_root_key, NULL, NULL) != OTA_OK)
		abort();
	ota_trust_draft_free(d);
	return 0;
}

static void check(ota_bytes cose, bool must_pass, bool must_fail)
{
	ota_acceptance a;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_acceptance_verify(cose, g_root, NOW, &a, &e);
	if (rc != OTA_OK && e.code == OTA_OK)
		abort(); /* a refusal names itself */
	if (rc == OTA_OK && strcmp(a.verifier_id, "verifier:endpoint") != 0)
		abort();
	if ((must_pass && rc != OTA_OK) || (must_fail && rc == OTA_OK))
		abort();
}

static void batch(const uint8_t *d, size_t n)
{
	size_t leaves = n > 0 ? 1 + d[0] % 16 : 1;
	size_t which = n > 1 ? d[1] % leaves : 0;
	size_t pos = n > 3 ? (size_t)d[2] << 8 | d[3] : 0;
	uint8_t flip = n > 4 && d[4] != 0 ? d[4] : 1;
	ota_admission adm[16];
	const ota_admission *ptr[16];
	memset(adm, 0, sizeof adm);
	for (size_t i = 0; i < leaves; i++) {
		ota_admission *a = &adm[i];
		a->judged_at = NOW;
		a->claims.nonce_len = 16 + (n > 5 ? d[5] % 49 : 0);
		for (size_t k = 0; k < a->claims.nonce_len; k++)
			a->claims.nonce[k] = (uint8_t)(i * 31 + k + (n > 6 ? d[6] : 0));
		snprintf(a->record_id, sizeof a->record_id, "sha256:%064zx", i + 1);
		snprintf(a->challenge_id, sizeof a->challenge_id, "sha256:%064zx", 1000 + i);
		snprintf(a->issuer_principal, sizeof a->issuer_principal, "issuer:acme");
		snprintf(a->claims.txn, sizeof a->claims.txn, "txn-%u", n > 7 ? d[7] : 0u);
		snprintf(a->claims.boundary, sizeof a->claims.boundary, "b-%zu", i);
		if (i % 2 == 1) {
			a->claims.has_prior = true;
			snprintf(a->claims.prior, sizeof a->claims.prior, "sha256:%064zx", 5000 + i);
		}
		snprintf(a->trust_root_id, sizeof a->trust_root_id, "%s",
		         ota_trust_root_identity(g_root));
		ptr[i] = a;
	}
	ota_acceptance_signer s = {g_verifier, "verifier:endpoint"};
	uint8_t *outs[16] = {0};
	size_t lens[16] = {0};
	if (ota_acceptance_build_batch(&s, ptr, leaves, outs, lens, NULL) != OTA_OK)
		abort();
	ota_acceptance_cache *cache = ota_acceptance_cache_new();
	if (cache == NULL)
		abort();
	for (size_t i = 0; i < leaves; i++) {
		check(ota_bytes_make(outs[i], lens[i]), true, false);
		ota_acceptance a;
		if (ota_acceptance_verify_cached(ota_bytes_make(outs[i], lens[i]), g_root, NOW, cache,
		                                 &a, NULL) != OTA_OK)
			abort();
	}
	uint8_t *m = outs[which];
	m[pos % lens[which]] ^= flip;
	check(ota_bytes_make(m, lens[which]), false, true);
	/* nor through a cache that has verified the batch's signature */
	ota_acceptance a;
	if (ota_acceptance_verify_cached(ota_bytes_make(m, lens[which]), g_root, NOW, cache, &a,
	                                 NULL) == OTA_OK)
		abort();
	ota_acceptance_cache_free(cache);
	for (size_t i = 0; i < leaves; i++)
		free(outs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	uint8_t mode = data[0] % 3;
	const uint8_t *d = data + 1;
	size_t n = size - 1;
	if (mode == 0) {
		check(ota_bytes_make(d, n), false, false);
	} else if (mode == 1) {
		ota_cose_sign_opts so;
		memset(&so, 0, sizeof so);
		so.include_kid = true;
		uint8_t *m = NULL;
		size_t ml = 0;
		if (ota_cose_sign1_sign(g_verifier, ota_bytes_make(d, n), &so, &m, &ml, NULL) ==
		    OTA_OK)
			check(ota_bytes_make(m, ml), false, false);
		free(m);
	} else {
		batch(d, n);
	}
	return 0;
}
