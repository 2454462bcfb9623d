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

static char *pem_of_der(const uint8_t *der, size_t n)
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

/* {kid, alg, public_key} of the SPKI der, kid = SHA-256(der) (new). */
static json_t *entry_der(const uint8_t *der, size_t n, const char *alg)
{
	uint8_t kid[32];
	char kh[65];
	assert_ota(ota_sha256(ota_bytes_make(der, n), kid), OTA_OK);
	ota_hex_encode(ota_bytes_make(kid, 32), kh);
	char *pem = pem_of_der(der, n);
	json_t *e = json_pack("{s:s, s:s, s:s}", "kid", kh, "alg", alg, "public_key", pem);
	assert_non_null(e);
	free(pem);
	return e;
}

static json_t *entry_key(const ota_key *k, ota_alg alg)
{
	uint8_t *der = NULL;
	size_t n = 0;
	assert_ota(ota_key_spki_der(k, &der, &n), OTA_OK);
	json_t *e = entry_der(der, n, ota_alg_name(alg));
	free(der);
	return e;
}

/* The signed body (new); root_keys and principals stolen; prev may be NULL. */
static json_t *body(int64_t version, const char *prev, unsigned threshold, json_t *root_keys,
                    json_t *principals)
{
	json_t *s = json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:I, s:o}, s:o}", "kind",
	                      OTA_TRUST_KIND, "trust_domain", "acme.example", "version",
	                      (json_int_t)version, "issued_at", (json_int_t)(T0 + version),
	                      "expires", (json_int_t)TEXP, "root", "threshold",
	                      (json_int_t)threshold, "keys", root_keys, "principals", principals);
	assert_non_null(s);
	if (prev != NULL)
		json_object_set_new(s, "prev", json_string(prev));
	return s;
}

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

/* The snapshot text {signed, signatures} (new); signed_ stolen. */
static char *snapshot(json_t *signed_, json_t *sigs, size_t *len)
{
	json_t *doc = json_pack("{s:o, s:o}", "signed", signed_, "signatures",
	                        sigs != NULL ? sigs : json_array());
	assert_non_null(doc);
	char *text = NULL;
	assert_ota(ota_jcs_serialize(doc, &text, len, NULL), OTA_OK);
	json_decref(doc);
	return text;
}

/* ---- 3. an RSA root key whose alg changes between versions ---- */

static ota_key *rsa_private(void)
{
	EVP_PKEY *p = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	assert_non_null(p);
	BIO *b = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PrivateKey(b, p, NULL, NULL, 0, NULL, NULL), 1);
	char *text = NULL;
	long tl = BIO_get_mem_data(b, &text);
	ota_key *k = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(text, (size_t)tl), &k, NULL), OTA_OK);
	BIO_free(b);
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
	json_t *s1 = body(1, NULL, 1,
	                  json_pack("[o, o]", entry_key(a, OTA_ALG_PS256), entry_key(b, OTA_ALG_ES256)),
	                  json_array());
	json_t *g1 = json_array();
	add_sig(g1, s1, a, OTA_ALG_PS256);
	char *tbs = NULL;
	size_t tl = 0, l1 = 0;
	assert_ota(ota_jcs_serialize(s1, &tbs, &tl, NULL), OTA_OK);
	char id1[OTA_ID_LEN + 1];
	assert_ota(ota_sha256_id(ota_bytes_make(tbs, tl), id1), OTA_OK);
	free(tbs);
	char *v1 = snapshot(s1, g1, &l1);
	/* v2: [a PS512, b ES256], 2 of 2; a signs with its new alg, PS512 (what
	 * `ota trust sign` does): accepted, in either signature order */
	for (int order = 0; order < 2; order++) {
		json_t *s2 = body(2, id1, 2,
		                  json_pack("[o, o]", entry_key(a, OTA_ALG_PS512),
		                            entry_key(b, OTA_ALG_ES256)),
		                  json_array());
		json_t *g2 = json_array();
		if (order == 0)
			add_sig(g2, s2, a, OTA_ALG_PS512);
		add_sig(g2, s2, b, OTA_ALG_ES256);
		if (order == 1)
			add_sig(g2, s2, a, OTA_ALG_PS512);
		size_t l2 = 0;
		char *v2 = snapshot(s2, g2, &l2);
		assert_ota(chain(v1, l1, v2, l2), OTA_OK);
		free(v2);
	}
	/* a signs v2 with its old alg, PS256: v2's own threshold (a is PS512
	 * there) is not met, as when v2 is judged alone */
	json_t *s3 = body(2, id1, 2,
	                  json_pack("[o, o]", entry_key(a, OTA_ALG_PS512), entry_key(b, OTA_ALG_ES256)),
	                  json_array());
	json_t *g3 = json_array();
	add_sig(g3, s3, a, OTA_ALG_PS256);
	add_sig(g3, s3, b, OTA_ALG_ES256);
	size_t l3 = 0;
	char *v3 = snapshot(s3, g3, &l3);
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
