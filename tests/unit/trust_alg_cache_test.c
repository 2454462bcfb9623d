/*
 * A root key's declared alg may change between versions (an RSA key PS256
 * in version N, PS512 in N+1). Chain verification verifies each signature
 * once for both thresholds (trust/rotate.c count_signers); the result was
 * cached by kid alone, so N+1's own threshold was counted with a result
 * computed under N's alg: a rotation signed with the new alg was refused
 * (trust_threshold_new), and one signed with the old alg was accepted
 * although N+1 judged alone does not meet its own threshold. A result now
 * holds only for the alg it was computed under.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "ota/json.h"
#include "ota/trust.h"
#include "test_util.h"

static const int64_t T0 = 1000, TEXP = 100000, AT = 2000;

/* ---- building snapshots by hand ---- */

/* Appends the signature of k under alg over JCS(signed) to sigs. */
static void add_sig(json_t *sigs, const json_t *signed_, const ota_key *k, ota_alg alg)
{
	char *tbs = NULL;
	size_t tl = 0;
	assert_ota(ota_jcs_serialize(signed_, &tbs, &tl, NULL), OTA_OK);
	uint8_t sig[OTA_MAX_SIG_BYTES], kid[32];
	size_t sl = 0;
	assert_ota(ota_key_sign(k, alg, ota_bytes_make(tbs, tl), (ota_buf){sig, sizeof sig}, &sl),
	           OTA_OK);
	free(tbs);
	assert_ota(ota_key_kid(k, kid), OTA_OK);
	char kh[65], *sh = malloc(2 * sl + 1);
	assert_non_null(sh);
	ota_hex_encode(ota_bytes_make(kid, 32), kh);
	ota_hex_encode(ota_bytes_make(sig, sl), sh);
	json_array_append_new(sigs, json_pack("{s:s, s:s}", "keyid", kh, "sig", sh));
	free(sh);
}

/* ---- 3. an RSA root key whose alg changes between versions ---- */

static ota_key *rsa_private(void)
{
	EVP_PKEY *p = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	assert_non_null(p);
	ota_key *k = test_key_from_pkey(p);
	EVP_PKEY_free(p);
	return k;
}

/* Chain v1 -> v2 through ota_trust_chain_verify and ota_trust_root_accept_next. */
static ota_err chain(const char *v1, size_t l1, const char *v2, size_t l2)
{
	ota_trust_verify_opts o = {.at = AT, .state = NULL, .max_chain = 0};
	ota_trust_root *latest = NULL, *r1 = NULL, *r2 = NULL;
	ota_bytes c = ota_bytes_make(v2, l2);
	ota_err rc = ota_trust_chain_verify(ota_bytes_make(v1, l1), &c, 1, &o, &latest, NULL);
	ota_trust_root_free(latest);
	assert_ota(ota_trust_root_parse(ota_bytes_make(v1, l1), &r1, NULL), OTA_OK);
	assert_ota(ota_trust_root_parse(ota_bytes_make(v2, l2), &r2, NULL), OTA_OK);
	bool same = false;
	ota_err rc2 = ota_trust_root_accept_next(r1, r2, &same, NULL);
	if (rc2 != rc)
		fail_msg("chain verify %s, accept_next %s", ota_err_name(rc), ota_err_name(rc2));
	ota_trust_root_free(r1);
	ota_trust_root_free(r2);
	return rc;
}

static void test_rotation_alg_change(void **s)
{
	(void)s;
	ota_key *a = rsa_private(), *b = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &b), OTA_OK);
	/* v1: [a PS256, b ES256], 1 of 2, signed by a */
	json_t *s1 = test_snap_body(1, NULL, 1,
	                            json_pack("[o, o]", test_snap_key(a, OTA_ALG_PS256),
	                                      test_snap_key(b, OTA_ALG_ES256)),
	                            json_array(), T0, TEXP);
	json_t *g1 = json_array();
	add_sig(g1, s1, a, OTA_ALG_PS256);
	char *tbs = NULL;
	size_t tl = 0, l1 = 0;
	assert_ota(ota_jcs_serialize(s1, &tbs, &tl, NULL), OTA_OK);
	char id1[OTA_ID_LEN + 1];
	assert_ota(ota_sha256_id(ota_bytes_make(tbs, tl), id1), OTA_OK);
	free(tbs);
	char *v1 = test_snap_text(s1, g1, &l1);
	/* v2: [a PS512, b ES256], 2 of 2; a signs with its new alg, PS512 (what
	 * `ota trust sign` does): accepted, in either signature order */
	for (int order = 0; order < 2; order++) {
		json_t *s2 = test_snap_body(2, id1, 2,
		                            json_pack("[o, o]", test_snap_key(a, OTA_ALG_PS512),
		                                      test_snap_key(b, OTA_ALG_ES256)),
		                            json_array(), T0, TEXP);
		json_t *g2 = json_array();
		if (order == 0)
			add_sig(g2, s2, a, OTA_ALG_PS512);
		add_sig(g2, s2, b, OTA_ALG_ES256);
		if (order == 1)
			add_sig(g2, s2, a, OTA_ALG_PS512);
		size_t l2 = 0;
		char *v2 = test_snap_text(s2, g2, &l2);
		assert_ota(chain(v1, l1, v2, l2), OTA_OK);
		free(v2);
	}
	/* a signs v2 with its old alg, PS256: v2's own threshold (a is PS512
	 * there) is not met, as when v2 is judged alone */
	json_t *s3 = test_snap_body(2, id1, 2,
	                            json_pack("[o, o]", test_snap_key(a, OTA_ALG_PS512),
	                                      test_snap_key(b, OTA_ALG_ES256)),
	                            json_array(), T0, TEXP);
	json_t *g3 = json_array();
	add_sig(g3, s3, a, OTA_ALG_PS256);
	add_sig(g3, s3, b, OTA_ALG_ES256);
	size_t l3 = 0;
	char *v3 = test_snap_text(s3, g3, &l3);
	ota_trust_root *alone = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(v3, l3), &alone, NULL), OTA_OK);
	assert_ota(ota_trust_root_verify_self(alone, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_free(alone);
	assert_ota(chain(v1, l1, v3, l3), OTA_ERR_TRUST_THRESHOLD_NEW);
	free(v3);
	free(v1);
	ota_key_free(a);
	ota_key_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rotation_alg_change),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
