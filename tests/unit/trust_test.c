/*
 * Trust roots (trust/): snapshot format, the rotation rule, every attack of
 * issue 3 item 5 with its own error name, the verifier state across a
 * restart, key lookup, drafts, and the data-driven vectors in vectors/trust/.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "ota/json.h"
#include "ota/limits.h"
#include "ota/trust.h"
#include "test_util.h"

/* Keys generated once per run: RK = root holders, PK = principal keys. */
#define NRK 6
#define NPK 4
static ota_key *RK[NRK];
static ota_key *PK[NPK];

static const int64_t T0 = 1000;      /* issued_at of the base snapshots */
static const int64_t TEXP = 100000;  /* expires of the base snapshots */
static const int64_t AT = 2000;      /* verifier's time in most tests */

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < NRK; i++)
		if (ota_key_generate(OTA_ALG_ES256, &RK[i]) != OTA_OK)
			return -1;
	if (ota_key_generate(OTA_ALG_ES256, &PK[0]) != OTA_OK ||
	    ota_key_generate(OTA_ALG_EDDSA, &PK[1]) != OTA_OK ||
	    ota_key_generate(OTA_ALG_ES384, &PK[2]) != OTA_OK ||
	    ota_key_generate(OTA_ALG_ES256, &PK[3]) != OTA_OK)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NRK; i++)
		ota_key_free(RK[i]);
	for (int i = 0; i < NPK; i++)
		ota_key_free(PK[i]);
	return 0;
}

static void kid_of(const ota_key *k, uint8_t kid[32])
{
	assert_ota(ota_key_kid(k, kid), OTA_OK);
}

/* Signs r with each RK[i] whose bit is in mask (prev allows old holders). */
static void sign_mask(ota_trust_root *r, const ota_trust_root *prev, unsigned mask)
{
	for (int i = 0; i < NRK; i++)
		if (mask & (1u << i)) {
			ota_error e;
			ota_error_clear(&e);
			ota_err rc = ota_trust_root_sign(r, RK[i], prev, &e);
			if (rc != OTA_OK)
				fail_msg("sign with RK[%d]: %s %s", i, ota_err_name(rc), e.what);
		}
}

static ota_trust_root *finish(ota_trust_draft *d)
{
	ota_trust_root *r = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_trust_draft_finish(d, &r, &e);
	if (rc != OTA_OK)
		fail_msg("finish: %s %s %s", ota_err_name(rc), e.where, e.what);
	ota_trust_draft_free(d);
	return r;
}

/*
 * Version 1: root RK0..RK2 threshold 2; principal "runner-1" (runner,
 * acme/<star>, ci, oci_local) with PK0 valid 1000..9000 and PK2 (ES384);
 * principal "prov" (issuer) with PK1 (EdDSA) revoked at 5000. Signed by
 * RK0 and RK1.
 */
static ota_trust_root *base_v1(const char *domain)
{
	const ota_key *roots[3] = {RK[0], RK[1], RK[2]};
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_new(domain, roots, 3, 2, T0, TEXP, &d, NULL), OTA_OK);
	const char *repos[] = {"acme/*"}, *lanes[] = {"ci"}, *targets[] = {"oci_local"};
	const char *any[] = {"*"};
	assert_ota(ota_trust_draft_add_principal(d, "runner-1", OTA_TRUST_ROLE_RUNNER, repos, 1,
	                                         lanes, 1, targets, 1, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_principal(d, "prov", OTA_TRUST_ROLE_ISSUER, any, 1, any, 1,
	                                         targets, 1, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "runner-1", PK[0], OTA_ALG_NONE, 1000, 9000, NULL),
	           OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "runner-1", PK[2], OTA_ALG_ES384, 0, 0, NULL), OTA_OK);
	assert_ota(ota_trust_draft_add_key(d, "prov", PK[1], OTA_ALG_NONE, 1000, 0, NULL), OTA_OK);
	uint8_t kid[32];
	kid_of(PK[1], kid);
	assert_ota(ota_trust_draft_revoke_key(d, ota_bytes_make(kid, 32), 5000, NULL), OTA_OK);
	ota_trust_root *r = finish(d);
	sign_mask(r, NULL, 0x3);
	return r;
}

/* Version cur+1 with the same content, signed by mask (holders of cur or next). */
static ota_trust_root *next_of(const ota_trust_root *cur, int64_t expires, unsigned mask)
{
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_next(cur, ota_trust_root_issued_at(cur) + 1, expires, &d, NULL),
	           OTA_OK);
	ota_trust_root *r = finish(d);
	sign_mask(r, cur, mask);
	return r;
}

static char *ser(const ota_trust_root *r, size_t *len)
{
	char *s = NULL;
	assert_ota(ota_trust_root_serialize(r, &s, len, NULL), OTA_OK);
	return s;
}

/*
 * ota_trust_chain_verify_from over the pinned snapshot parsed whole agrees
 * with ota_trust_chain_verify: the same error (code, where, what) or the
 * same latest version. A pinned snapshot that does not parse whole fails
 * ota_trust_chain_verify too.
 */
static void from_agrees(ota_bytes pinned, const ota_bytes *chain, size_t n,
                        const ota_trust_verify_opts *o, ota_err want, const ota_error *want_e,
                        const ota_trust_root *want_latest)
{
	ota_trust_root *p = NULL, *latest = NULL;
	if (ota_trust_root_parse(pinned, &p, NULL) != OTA_OK) {
		assert_true(want != OTA_OK);
		return;
	}
	ota_error e;
	ota_error_clear(&e);
	ota_err got = ota_trust_chain_verify_from(p, chain, n, o, &latest, &e);
	if (got != want)
		fail_msg("from: got %s (%s: %s), want %s", ota_err_name(got), e.where, e.what,
		         ota_err_name(want));
	if (got != OTA_OK) {
		assert_null(latest);
		assert_string_equal(e.where, want_e->where);
		assert_string_equal(e.what, want_e->what);
	} else {
		assert_string_equal(ota_trust_root_identity(latest),
		                    ota_trust_root_identity(want_latest));
	}
	ota_trust_root_free(latest);
}

/* Verifies pinned + chain (roots) at time at; returns the error, frees all. */
static ota_err verify_roots(const ota_trust_root *pinned, ota_trust_root *const *chain, size_t n,
                            int64_t at, ota_trust_state *st, int64_t *version_out)
{
	size_t pl;
	char *ps = ser(pinned, &pl);
	char **cs = calloc(n + 1, sizeof *cs);
	ota_bytes *cb = calloc(n + 1, sizeof *cb);
	assert_non_null(cs);
	assert_non_null(cb);
	for (size_t i = 0; i < n; i++) {
		size_t l;
		cs[i] = ser(chain[i], &l);
		cb[i] = ota_bytes_make(cs[i], l);
	}
	ota_trust_verify_opts o = {.at = at, .state = st};
	ota_trust_root *latest = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_trust_chain_verify(ota_bytes_make(ps, pl), cb, n, &o, &latest, &e);
	if (st == NULL)
		from_agrees(ota_bytes_make(ps, pl), cb, n, &o, rc, &e, latest);
	if (rc == OTA_OK) {
		assert_non_null(latest);
		if (version_out != NULL)
			*version_out = ota_trust_root_version(latest);
	} else {
		assert_null(latest);
		assert_int_equal(e.code, rc);
	}
	ota_trust_root_free(latest);
	for (size_t i = 0; i < n; i++)
		free(cs[i]);
	free(cs);
	free(cb);
	free(ps);
	return rc;
}

/* Re-parses r after fn edits its serialized document (signatures kept). */
static ota_err edit_doc(const ota_trust_root *r, void (*fn)(json_t *doc, void *ctx), void *ctx,
                        ota_trust_root **out)
{
	size_t l;
	char *s = ser(r, &l);
	json_t *doc = json_loadb(s, l, 0, NULL);
	free(s);
	assert_non_null(doc);
	fn(doc, ctx);
	char *t = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	assert_non_null(t);
	ota_err rc = ota_trust_root_parse(ota_bytes_make(t, strlen(t)), out, NULL);
	free(t);
	return rc;
}

/* Edits signed, drops the signatures and re-signs with mask. */
static ota_trust_root *edit_signed(const ota_trust_root *r, const ota_trust_root *prev,
                                   void (*fn)(json_t *doc, void *ctx), void *ctx, unsigned mask)
{
	ota_trust_root *out = NULL;
	assert_ota(edit_doc(r, fn, ctx, &out), OTA_OK);
	ota_trust_root_clear_signatures(out);
	sign_mask(out, prev, mask);
	return out;
}

/* ---------- format ---------- */

static void test_roundtrip(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	assert_int_equal(ota_trust_root_version(v1), 1);
	assert_null(ota_trust_root_prev(v1));
	assert_true(ota_id_is_valid(ota_trust_root_identity(v1)));
	assert_int_equal(ota_trust_root_root_key_count(v1), 3);
	assert_int_equal(ota_trust_root_principal_count(v1), 2);
	assert_int_equal(ota_trust_root_key_count(v1), 3);
	assert_int_equal(ota_trust_root_signature_count(v1), 2);
	assert_ota(ota_trust_root_verify_self(v1, NULL), OTA_OK);
	size_t l;
	char *s = ser(v1, &l);
	ota_trust_root *back = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(s, l), &back, NULL), OTA_OK);
	assert_string_equal(ota_trust_root_identity(back), ota_trust_root_identity(v1));
	assert_ota(ota_trust_root_verify_self(back, NULL), OTA_OK);
	/* identity = sha256 over JCS(signed), independent of formatting/signatures */
	json_t *doc = json_loadb(s, l, 0, NULL);
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity(json_object_get(doc, "signed"), id, NULL), OTA_OK);
	assert_string_equal(id, ota_trust_root_identity(v1));
	json_decref(doc);
	json_t *sum = ota_trust_root_summary(back, AT);
	assert_non_null(sum);
	assert_int_equal(json_integer_value(json_object_get(sum, "version")), 1);
	json_decref(sum);
	free(s);
	ota_trust_root_free(back);
	ota_trust_root_free(v1);
}

static void test_unsigned_initial_root(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root_clear_signatures(v1);
	sign_mask(v1, NULL, 0x1); /* 1 of threshold 2 */
	assert_ota(verify_roots(v1, NULL, 0, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_clear_signatures(v1);
	assert_ota(verify_roots(v1, NULL, 0, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_free(v1);
}

static void set_version(json_t *doc, void *ctx)
{
	json_object_set_new(json_object_get(doc, "signed"), "version",
	                    json_integer(*(json_int_t *)ctx));
}

static void test_absurd_version(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example"), *bad = NULL;
	json_int_t v = (json_int_t)1 << 62;
	assert_ota(edit_doc(v1, set_version, &v, &bad), OTA_ERR_TRUST_VERSION_ABSURD);
	v = OTA_MAX_TRUST_VERSION + 1;
	assert_ota(edit_doc(v1, set_version, &v, &bad), OTA_ERR_TRUST_VERSION_ABSURD);
	v = 0;
	assert_ota(edit_doc(v1, set_version, &v, &bad), OTA_ERR_TRUST_VERSION_ABSURD);
	/* 2^63 does not even fit the JSON parser's integers */
	const char big[] = "{\"signed\":{\"version\":9223372036854775808},\"signatures\":[]}";
	assert_ota(ota_trust_root_parse(ota_bytes_make(big, strlen(big)), &bad, NULL),
	           OTA_ERR_JSON_NUMBER_RANGE);
	assert_null(bad);
	ota_trust_root_free(v1);
}

static void test_oversize_and_long_chain_refused_before_parsing(void **state)
{
	(void)state;
	/* Oversized: garbage bytes are never parsed, the size alone refuses. */
	size_t big = OTA_MAX_TRUST_ROOT_BYTES + 1;
	uint8_t *junk = malloc(big);
	assert_non_null(junk);
	memset(junk, 'x', big);
	ota_trust_root *r = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_trust_root_parse(ota_bytes_make(junk, big), &r, &e), OTA_ERR_TRUST_TOO_LARGE);
	ota_trust_verify_opts o = {.at = AT};
	ota_bytes small = ota_bytes_make("not json", 8);
	ota_bytes huge = ota_bytes_make(junk, big);
	assert_ota(ota_trust_chain_verify(small, &huge, 1, &o, &r, NULL), OTA_ERR_TRUST_TOO_LARGE);
	assert_ota(ota_trust_chain_verify(huge, &small, 1, &o, &r, NULL), OTA_ERR_TRUST_TOO_LARGE);
	/* Over-long chain: the count refuses before any of the (garbage) entries is parsed. */
	size_t n = OTA_MAX_TRUST_CHAIN + 1;
	ota_bytes *chain = calloc(n, sizeof *chain);
	assert_non_null(chain);
	for (size_t i = 0; i < n; i++)
		chain[i] = small;
	assert_ota(ota_trust_chain_verify(small, chain, n, &o, &r, NULL),
	           OTA_ERR_TRUST_CHAIN_TOO_LONG);
	o.max_chain = 3;
	assert_ota(ota_trust_chain_verify(small, chain, 4, &o, &r, NULL),
	           OTA_ERR_TRUST_CHAIN_TOO_LONG);
	/* at the cap, parsing starts (and refuses the garbage as JSON) */
	assert_ota(ota_trust_chain_verify(small, chain, 3, &o, &r, NULL), OTA_ERR_JSON_SYNTAX);
	assert_null(r);
	free(chain);
	free(junk);
}

static void add_member(json_t *doc, void *ctx)
{
	(void)ctx;
	json_object_set_new(json_object_get(doc, "signed"), "extra", json_true());
}

static void dup_principal(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *ps = json_object_get(json_object_get(doc, "signed"), "principals");
	json_t *p = json_deep_copy(json_array_get(ps, 0));
	json_object_set_new(p, "keys", json_array());
	json_array_append_new(ps, p);
}

static void wrong_kid(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *k = json_array_get(
		json_object_get(json_object_get(json_object_get(doc, "signed"), "root"), "keys"), 0);
	json_object_set_new(k, "kid", json_string("00000000000000000000000000000000"
	                                          "00000000000000000000000000000000"));
}

static void wrong_alg(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *k = json_array_get(
		json_object_get(json_object_get(json_object_get(doc, "signed"), "root"), "keys"), 0);
	json_object_set_new(k, "alg", json_string("ES384"));
}

static void private_pem(json_t *doc, void *ctx)
{
	json_t *k = json_array_get(
		json_object_get(json_object_get(json_object_get(doc, "signed"), "root"), "keys"), 0);
	json_object_set_new(k, "public_key", json_string((const char *)ctx));
}

static void test_strict_format(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example"), *bad = NULL;
	assert_ota(edit_doc(v1, add_member, NULL, &bad), OTA_ERR_TRUST_MALFORMED);
	assert_ota(edit_doc(v1, dup_principal, NULL, &bad), OTA_ERR_TRUST_DUPLICATE_PRINCIPAL);
	assert_ota(edit_doc(v1, wrong_kid, NULL, &bad), OTA_ERR_TRUST_KID_MISMATCH);
	assert_ota(edit_doc(v1, wrong_alg, NULL, &bad), OTA_ERR_ALG_KEY_MISMATCH);
	/* a private key never belongs in a trust root */
	char *priv = NULL;
	size_t pl = 0;
	assert_ota(ota_key_private_pem(RK[0], &priv, &pl), OTA_OK);
	assert_ota(edit_doc(v1, private_pem, priv, &bad), OTA_ERR_TRUST_MALFORMED);
	ota_wipe(priv, pl);
	free(priv);
	/* duplicate member names are refused by the strict JSON parser */
	const char dup[] = "{\"signed\":{},\"signed\":{},\"signatures\":[]}";
	assert_ota(ota_trust_root_parse(ota_bytes_make(dup, strlen(dup)), &bad, NULL),
	           OTA_ERR_JSON_DUPLICATE_KEY);
	assert_null(bad);
	ota_trust_root_free(v1);
}

/* ---------- rotation ---------- */

static void rotate_roots(json_t *doc, void *ctx)
{
	(void)ctx;
	(void)doc;
}

static ota_trust_root *rotated_v2(const ota_trust_root *v1, unsigned mask)
{
	/* v2: root RK2, RK3, RK4 with threshold 2 */
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_next(v1, T0 + 1, TEXP, &d, NULL), OTA_OK);
	ota_trust_draft_clear_root_keys(d);
	for (int i = 2; i <= 4; i++)
		assert_ota(ota_trust_draft_add_root_key(d, RK[i], NULL), OTA_OK);
	assert_ota(ota_trust_draft_set_threshold(d, 2, NULL), OTA_OK);
	ota_trust_root *v2 = finish(d);
	sign_mask(v2, v1, mask);
	return v2;
}

static void test_rotation_accepted(void **state)
{
	(void)state;
	(void)rotate_roots;
	ota_trust_root *v1 = base_v1("acme.example");
	/* old holders RK0, RK1; new holders RK3, RK4 */
	ota_trust_root *v2 = rotated_v2(v1, 0x1b);
	int64_t v = 0;
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, &v), OTA_OK);
	assert_int_equal(v, 2);
	/* RK2 is in both sets: RK1 + RK2 satisfy old, RK2 + RK3 satisfy new */
	ota_trust_root *v2b = rotated_v2(v1, 0x0e);
	assert_ota(verify_roots(v1, &v2b, 1, AT, NULL, &v), OTA_OK);
	ota_trust_root_free(v2b);
	/* v3 by v2's holders only (RK3, RK4) */
	ota_trust_root *v3 = next_of(v2, TEXP, 0x18);
	ota_trust_root *chain[2] = {v2, v3};
	assert_ota(verify_roots(v1, chain, 2, AT, NULL, &v), OTA_OK);
	assert_int_equal(v, 3);
	ota_trust_root_free(v3);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_missing_old_threshold(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = rotated_v2(v1, 0x19); /* RK0 (old) + RK3, RK4 (new) */
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_OLD);
	ota_trust_root_free(v2);
	v2 = rotated_v2(v1, 0x18); /* new only */
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_OLD);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_missing_new_threshold(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = rotated_v2(v1, 0x03); /* old only */
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_free(v2);
	v2 = rotated_v2(v1, 0x0b); /* old RK0, RK1 + new RK3 only */
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void dup_signature(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *sigs = json_object_get(doc, "signatures");
	json_array_append_new(sigs, json_deep_copy(json_array_get(sigs, 0)));
}

static void dup_root_key(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *keys =
		json_object_get(json_object_get(json_object_get(doc, "signed"), "root"), "keys");
	json_array_append_new(keys, json_deep_copy(json_array_get(keys, 0)));
}

/* SPKI PEM of k with a compressed point: the same key, another kid. */
static char *compressed_pem(const ota_key *k)
{
	EVP_PKEY *p = EVP_PKEY_dup((EVP_PKEY *)ota_key_evp(k));
	assert_non_null(p);
	assert_int_equal(EVP_PKEY_set_utf8_string_param(p, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
	                                                "compressed"),
	                 1);
	BIO *b = BIO_new(BIO_s_mem());
	assert_int_equal(PEM_write_bio_PUBKEY(b, p), 1);
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	char *s = strndup(data, (size_t)n);
	BIO_free(b);
	EVP_PKEY_free(p);
	return s;
}

static void same_key_compressed(json_t *doc, void *ctx)
{
	json_t *keys =
		json_object_get(json_object_get(json_object_get(doc, "signed"), "root"), "keys");
	json_t *e = json_deep_copy(json_array_get(keys, 0));
	json_object_set_new(e, "public_key", json_string((const char *)ctx));
	json_array_append_new(keys, e);
}

static void test_attack_key_counted_twice(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example"), *bad = NULL;
	/* the same key signing twice */
	assert_ota(edit_doc(v1, dup_signature, NULL, &bad), OTA_ERR_TRUST_DUPLICATE_SIGNATURE);
	/* the same SPKI under two root entries */
	assert_ota(edit_doc(v1, dup_root_key, NULL, &bad), OTA_ERR_TRUST_DUPLICATE_KEY);
	/* the same key in another encoding (compressed point) would get another kid */
	char *pem = compressed_pem(RK[0]);
	assert_ota(edit_doc(v1, same_key_compressed, pem, &bad), OTA_ERR_TRUST_KEY_NONCANONICAL);
	free(pem);
	/* one key signing a 2-of-3 snapshot counts once, never twice */
	ota_trust_root *one = NULL;
	assert_ota(edit_doc(v1, set_version, &(json_int_t){1}, &one), OTA_OK);
	ota_trust_root_clear_signatures(one);
	sign_mask(one, NULL, 0x1);
	sign_mask(one, NULL, 0x1); /* re-signing replaces, never adds */
	assert_int_equal(ota_trust_root_signature_count(one), 1);
	unsigned c = 9;
	assert_ota(ota_trust_root_count_signers(one, one, &c, NULL), OTA_OK);
	assert_int_equal(c, 1);
	assert_ota(ota_trust_root_verify_self(one, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	ota_trust_root_free(one);
	ota_trust_root_free(v1);
}

static void test_attack_version_skip(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = next_of(v1, TEXP, 0x3);
	ota_trust_root *v3 = next_of(v2, TEXP, 0x3);
	assert_ota(verify_roots(v1, &v3, 1, AT, NULL, NULL), OTA_ERR_TRUST_VERSION_SKIP);
	ota_trust_root_free(v3);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_rollback(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = next_of(v1, TEXP, 0x3);
	ota_trust_root *v3 = next_of(v2, TEXP, 0x3);
	ota_trust_root *chain[3] = {v2, v3, v2};
	assert_ota(verify_roots(v1, chain, 3, AT, NULL, NULL), OTA_ERR_TRUST_ROLLBACK);
	/* across a restart: the state file remembers version 3 */
	char *dir = test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/state.json", dir);
	ota_trust_state *st = NULL;
	assert_ota(ota_trust_state_open(path, &st, NULL), OTA_OK);
	int64_t v = 0;
	assert_ota(verify_roots(v1, chain, 2, AT, st, &v), OTA_OK);
	assert_int_equal(v, 3);
	ota_trust_state_close(st); /* "restart" */
	st = NULL;
	assert_ota(ota_trust_state_open(path, &st, NULL), OTA_OK);
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_trust_state_get(st, "acme.example", &v, id), OTA_OK);
	assert_int_equal(v, 3);
	assert_string_equal(id, ota_trust_root_identity(v3));
	/* the files swapped for an older chain before the restart */
	assert_ota(verify_roots(v1, chain, 1, AT, st, NULL), OTA_ERR_TRUST_ROLLBACK);
	assert_ota(verify_roots(v1, NULL, 0, AT, st, NULL), OTA_ERR_TRUST_ROLLBACK);
	/* the real latest is still fine, and the state never moves back */
	assert_ota(verify_roots(v1, chain, 2, AT, st, NULL), OTA_OK);
	assert_ota(ota_trust_state_record(st, "acme.example", 2, ota_trust_root_identity(v2), NULL),
	           OTA_ERR_TRUST_ROLLBACK);
	ota_trust_state_close(st);
	/* a corrupt state file is refused, never treated as empty */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"kind\":\"ota.trust_state/v1\",\"domains\":{\"x\":{\"version\":\"3\"}}}", f);
	fclose(f);
	assert_ota(ota_trust_state_open(path, &st, NULL), OTA_ERR_TRUST_STATE_CORRUPT);
	assert_null(st);
	test_rmtree(dir);
	free(dir);
	ota_trust_root_free(v3);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_equivocation(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = next_of(v1, TEXP, 0x3);
	ota_trust_root *v2b = next_of(v1, TEXP - 1, 0x3); /* a different, validly signed v2 */
	assert_string_not_equal(ota_trust_root_identity(v2), ota_trust_root_identity(v2b));
	ota_trust_root *chain[2] = {v2, v2b};
	assert_ota(verify_roots(v1, chain, 2, AT, NULL, NULL), OTA_ERR_TRUST_EQUIVOCATION);
	/* the very same v2 again is harmless */
	ota_trust_root *again[2] = {v2, v2};
	int64_t v = 0;
	assert_ota(verify_roots(v1, again, 2, AT, NULL, &v), OTA_OK);
	assert_int_equal(v, 2);
	/* against the durable state: v2 accepted earlier, v2b offered later */
	char *dir = test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/state.json", dir);
	ota_trust_state *st = NULL;
	assert_ota(ota_trust_state_open(path, &st, NULL), OTA_OK);
	assert_ota(verify_roots(v1, &v2, 1, AT, st, NULL), OTA_OK);
	ota_trust_state_close(st);
	assert_ota(ota_trust_state_open(path, &st, NULL), OTA_OK);
	assert_ota(verify_roots(v1, &v2b, 1, AT, st, NULL), OTA_ERR_TRUST_EQUIVOCATION);
	ota_trust_state_close(st);
	test_rmtree(dir);
	free(dir);
	ota_trust_root_free(v2b);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_prev_mismatch(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v1b = base_v1("acme.example"); /* another v1 (new signatures, same body?) */
	/* make v1b really different: another expiry */
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_from(v1b, &d, NULL), OTA_OK);
	assert_ota(ota_trust_draft_set_times(d, T0, TEXP + 5, NULL), OTA_OK);
	ota_trust_root_free(v1b);
	v1b = finish(d);
	sign_mask(v1b, NULL, 0x3);
	ota_trust_root *v2 = next_of(v1b, TEXP, 0x3); /* prev = identity(v1b) */
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_PREV_MISMATCH);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1b);
	ota_trust_root_free(v1);
}

static void test_attack_freeze_and_expired_intermediate(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = next_of(v1, 3000, 0x3); /* expires at 3000 */
	ota_trust_root *v3 = next_of(v2, 50000, 0x3);
	assert_ota(verify_roots(v1, &v2, 1, 2999, NULL, NULL), OTA_OK);
	assert_ota(verify_roots(v1, &v2, 1, 3000, NULL, NULL), OTA_ERR_TRUST_EXPIRED);
	assert_ota(verify_roots(v1, &v2, 1, 40000, NULL, NULL), OTA_ERR_TRUST_EXPIRED);
	/* the expired v2 as an intermediate is fine when the latest is valid */
	ota_trust_root *chain[2] = {v2, v3};
	int64_t v = 0;
	assert_ota(verify_roots(v1, chain, 2, 40000, NULL, &v), OTA_OK);
	assert_int_equal(v, 3);
	/* and the pinned one alone, expired */
	assert_ota(verify_roots(v1, NULL, 0, TEXP, NULL, NULL), OTA_ERR_TRUST_EXPIRED);
	/* an expired pinned root still leads to a valid successor (TUF test_expired_local_root) */
	ota_trust_root *v3b = next_of(v2, 90000, 0x3);
	assert_ota(verify_roots(v2, &v3b, 1, 40000, NULL, &v), OTA_OK);
	assert_int_equal(v, 3);
	ota_trust_root_free(v3b);
	ota_trust_root_free(v3);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void unrevoke(json_t *doc, void *ctx)
{
	json_t *ps = json_object_get(doc, "signed");
	ps = json_object_get(ps, "principals");
	json_t *k = json_array_get(json_object_get(json_array_get(ps, 1), "keys"), 0);
	if (ctx == NULL)
		json_object_del(k, "revoked_at");
	else
		json_object_set_new(k, "revoked_at", json_integer(*(json_int_t *)ctx));
}

static void drop_prov_keys(json_t *doc, void *ctx)
{
	(void)ctx;
	json_t *ps = json_object_get(json_object_get(doc, "signed"), "principals");
	json_object_set_new(json_array_get(ps, 1), "keys", json_array());
}

static void test_attack_revocation_dropped(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = next_of(v1, TEXP, 0x0);
	ota_trust_root *v2a = edit_signed(v2, v1, unrevoke, NULL, 0x3);
	assert_ota(verify_roots(v1, &v2a, 1, AT, NULL, NULL), OTA_ERR_TRUST_REVOCATION_DROPPED);
	json_int_t later = 6000, earlier = 4000;
	ota_trust_root *v2b = edit_signed(v2, v1, unrevoke, &later, 0x3);
	assert_ota(verify_roots(v1, &v2b, 1, AT, NULL, NULL), OTA_ERR_TRUST_REVOCATION_DROPPED);
	ota_trust_root *v2c = edit_signed(v2, v1, drop_prov_keys, NULL, 0x3);
	assert_ota(verify_roots(v1, &v2c, 1, AT, NULL, NULL), OTA_ERR_TRUST_REVOCATION_DROPPED);
	ota_trust_root *v2d = edit_signed(v2, v1, unrevoke, &earlier, 0x3);
	assert_ota(verify_roots(v1, &v2d, 1, AT, NULL, NULL), OTA_OK);
	ota_trust_root_free(v2d);
	ota_trust_root_free(v2c);
	ota_trust_root_free(v2b);
	ota_trust_root_free(v2a);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_attack_other_domain(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *o1 = base_v1("evil.example");
	ota_trust_root *o2 = next_of(o1, TEXP, 0x3);
	assert_ota(verify_roots(v1, &o2, 1, AT, NULL, NULL), OTA_ERR_TRUST_DOMAIN_MISMATCH);
	ota_trust_root_free(o2);
	ota_trust_root_free(o1);
	ota_trust_root_free(v1);
}

static void test_sign_needs_root_key(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_root *v2 = rotated_v2(v1, 0);
	assert_ota(ota_trust_root_sign(v2, RK[5], v1, NULL), OTA_ERR_TRUST_SIGNER_NOT_ROOT);
	assert_ota(ota_trust_root_sign(v2, PK[0], v1, NULL), OTA_ERR_TRUST_SIGNER_NOT_ROOT);
	assert_ota(ota_trust_root_sign(v2, RK[0], NULL, NULL), OTA_ERR_TRUST_SIGNER_NOT_ROOT);
	assert_ota(ota_trust_root_sign(v2, RK[0], v1, NULL), OTA_OK);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

/* ---------- lookup ---------- */

static ota_err look(const ota_trust_root *r, const ota_key *k, ota_alg alg, ota_trust_role role,
                    const char *repo, const char *lane, const char *target, int64_t at)
{
	uint8_t kid[32];
	kid_of(k, kid);
	ota_trust_scope_req sc = {repo, lane, target};
	const ota_key *got = NULL;
	const ota_trust_principal *who = NULL;
	ota_err rc = ota_trust_lookup(r, ota_bytes_make(kid, 32), alg, role, &sc, at, &got, &who,
	                              NULL);
	if (rc == OTA_OK) {
		uint8_t gk[32];
		kid_of(got, gk);
		assert_memory_equal(gk, kid, 32);
		assert_non_null(who);
	} else {
		assert_null(got);
		assert_null(who);
	}
	return rc;
}

static void test_lookup(void **state)
{
	(void)state;
	ota_trust_root *r = base_v1("acme.example");
	const ota_trust_role RUN = OTA_TRUST_ROLE_RUNNER, ISS = OTA_TRUST_ROLE_ISSUER;
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, "acme/widgets", "ci", "oci_local", AT), OTA_OK);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, AT), OTA_OK);
	/* unknown kid, short kid */
	assert_ota(look(r, RK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, AT),
	           OTA_ERR_TRUST_KEY_UNKNOWN);
	assert_ota(ota_trust_lookup(r, ota_bytes_make("11", 2), OTA_ALG_ES256, RUN, NULL, AT, NULL,
	                            NULL, NULL),
	           OTA_ERR_TRUST_KEY_UNKNOWN);
	/* alg that is not the key's declared alg */
	assert_ota(look(r, PK[0], OTA_ALG_ES384, RUN, NULL, NULL, NULL, AT),
	           OTA_ERR_TRUST_ALG_MISMATCH);
	assert_ota(look(r, PK[2], OTA_ALG_ES256, RUN, NULL, NULL, NULL, AT),
	           OTA_ERR_TRUST_ALG_MISMATCH);
	assert_ota(look(r, PK[2], OTA_ALG_ES384, RUN, NULL, NULL, NULL, AT), OTA_OK);
	/* role */
	assert_ota(look(r, PK[0], OTA_ALG_ES256, ISS, NULL, NULL, NULL, AT),
	           OTA_ERR_TRUST_ROLE_MISMATCH);
	/* principal outside its scope */
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, "evil/widgets", NULL, NULL, AT),
	           OTA_ERR_TRUST_SCOPE_MISMATCH);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, "acme/a/b", NULL, NULL, AT),
	           OTA_ERR_TRUST_SCOPE_MISMATCH);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, "acme", NULL, NULL, AT),
	           OTA_ERR_TRUST_SCOPE_MISMATCH);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, "release", NULL, AT),
	           OTA_ERR_TRUST_SCOPE_MISMATCH);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, "remote_vm", AT),
	           OTA_ERR_TRUST_SCOPE_MISMATCH);
	/* validity window: [1000, 9000) */
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, 999),
	           OTA_ERR_TRUST_KEY_NOT_YET_VALID);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, 1000), OTA_OK);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, 8999), OTA_OK);
	assert_ota(look(r, PK[0], OTA_ALG_ES256, RUN, NULL, NULL, NULL, 9000),
	           OTA_ERR_TRUST_KEY_EXPIRED);
	/* revoked at 5000: a signer's backdated iat (say 4000) never helps, only the
	 * verifier's acceptance time counts */
	assert_ota(look(r, PK[1], OTA_ALG_EDDSA, ISS, "any/repo", "ci", "oci_local", 4999), OTA_OK);
	assert_ota(look(r, PK[1], OTA_ALG_EDDSA, ISS, "any/repo", "ci", "oci_local", 5000),
	           OTA_ERR_TRUST_KEY_REVOKED);
	assert_ota(look(r, PK[1], OTA_ALG_EDDSA, ISS, NULL, NULL, NULL, 7000),
	           OTA_ERR_TRUST_KEY_REVOKED);
	ota_trust_root_free(r);
}

static void test_scope_match(void **state)
{
	(void)state;
	assert_true(ota_trust_scope_match("*", "anything/at/all"));
	assert_true(ota_trust_scope_match("acme/*", "acme/x"));
	assert_false(ota_trust_scope_match("acme/*", "acme/"));
	assert_false(ota_trust_scope_match("acme/*", "acme/x/y"));
	assert_false(ota_trust_scope_match("acme/*", "acmex/y"));
	assert_true(ota_trust_scope_match("ci-*", "ci-linux"));
	assert_true(ota_trust_scope_match("ci", "ci"));
	assert_false(ota_trust_scope_match("ci", "ci2"));
	assert_false(ota_trust_scope_match("ci", NULL));
}

static void test_drafts(void **state)
{
	(void)state;
	ota_trust_root *v1 = base_v1("acme.example");
	ota_trust_draft *d = NULL;
	assert_ota(ota_trust_draft_next(v1, T0 + 1, TEXP, &d, NULL), OTA_OK);
	const char *any[] = {"*"}, *bad[] = {"a*b"};
	assert_ota(ota_trust_draft_add_principal(d, "prov", OTA_TRUST_ROLE_ISSUER, any, 1, any, 1,
	                                         any, 1, NULL),
	           OTA_ERR_EXISTS);
	assert_ota(ota_trust_draft_add_principal(d, "x", OTA_TRUST_ROLE_ISSUER, bad, 1, NULL, 0,
	                                         NULL, 0, NULL),
	           OTA_ERR_USAGE);
	assert_ota(ota_trust_draft_add_key(d, "nobody", PK[3], OTA_ALG_NONE, 0, 0, NULL),
	           OTA_ERR_NOT_FOUND);
	assert_ota(ota_trust_draft_add_key(d, "prov", PK[0], OTA_ALG_NONE, 0, 0, NULL),
	           OTA_ERR_TRUST_DUPLICATE_KEY);
	assert_ota(ota_trust_draft_add_key(d, "prov", PK[3], OTA_ALG_ES384, 0, 0, NULL),
	           OTA_ERR_ALG_KEY_MISMATCH);
	assert_ota(ota_trust_draft_add_root_key(d, RK[0], NULL), OTA_ERR_TRUST_DUPLICATE_KEY);
	uint8_t kid[32];
	kid_of(PK[1], kid);
	/* a revocation is never moved later */
	assert_ota(ota_trust_draft_revoke_key(d, ota_bytes_make(kid, 32), 8000, NULL), OTA_OK);
	kid_of(PK[3], kid);
	assert_ota(ota_trust_draft_revoke_key(d, ota_bytes_make(kid, 32), 8000, NULL),
	           OTA_ERR_NOT_FOUND);
	assert_ota(ota_trust_draft_set_threshold(d, 4, NULL), OTA_OK);
	ota_trust_root *r = NULL;
	assert_ota(ota_trust_draft_finish(d, &r, NULL), OTA_ERR_TRUST_MALFORMED); /* 4 of 3 */
	assert_ota(ota_trust_draft_set_threshold(d, 3, NULL), OTA_OK);
	ota_trust_root *v2 = finish(d);
	sign_mask(v2, v1, 0x7);
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_OK);
	/* 2 of the now 3-of-3 are not enough for the new threshold */
	ota_trust_root_clear_signatures(v2);
	sign_mask(v2, v1, 0x3);
	assert_ota(verify_roots(v1, &v2, 1, AT, NULL, NULL), OTA_ERR_TRUST_THRESHOLD_NEW);
	assert_ota(look(v2, PK[1], OTA_ALG_EDDSA, OTA_TRUST_ROLE_ISSUER, NULL, NULL, NULL, 5000),
	           OTA_ERR_TRUST_KEY_REVOKED);
	ota_trust_root_free(v2);
	ota_trust_root_free(v1);
}

static void test_time_text(void **state)
{
	(void)state;
	int64_t t = 0;
	assert_ota(ota_trust_time_parse("1767225600", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(ota_trust_time_parse("2026-01-01T00:00:00Z", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(ota_trust_time_parse("2026-01-01T01:00:00+01:00", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(ota_trust_time_parse("2024-02-29T00:00:00Z", &t), OTA_OK);
	assert_ota(ota_trust_time_parse("2025-02-29T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(ota_trust_time_parse("2026-01-01", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(ota_trust_time_parse("2026-01-01T00:00:00.5Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(ota_trust_time_parse("-5", &t), OTA_ERR_TIME_FORMAT);
	char buf[32];
	ota_trust_time_format(1767225600, buf);
	assert_string_equal(buf, "2026-01-01T00:00:00Z");
}

/* ---------- vectors/trust/<case>/case.json ---------- */

static void run_vector(const char *dir, const char *name)
{
	char rel[512];
	snprintf(rel, sizeof rel, "vectors/trust/%s/%s/case.json", dir, name);
	size_t n = 0;
	uint8_t *text = test_read_src(rel, &n);
	json_t *c = json_loadb((const char *)text, n, 0, NULL);
	free(text);
	assert_non_null(c);
	const char *expect = json_string_value(json_object_get(c, "expect"));
	json_int_t at = json_integer_value(json_object_get(c, "at"));
	const json_t *files = json_object_get(c, "files");
	assert_non_null(expect);
	assert_true(json_array_size(files) >= 1);
	size_t nf = json_array_size(files);
	uint8_t **bufs = calloc(nf, sizeof *bufs);
	ota_bytes *spans = calloc(nf, sizeof *spans);
	assert_non_null(bufs);
	assert_non_null(spans);
	for (size_t i = 0; i < nf; i++) {
		snprintf(rel, sizeof rel, "vectors/trust/%s/%s/%s", dir, name,
		         json_string_value(json_array_get(files, i)));
		size_t l = 0;
		bufs[i] = test_read_src(rel, &l);
		spans[i] = ota_bytes_make(bufs[i], l);
	}
	ota_trust_verify_opts o = {.at = (int64_t)at};
	ota_trust_root *latest = NULL;
	ota_error e;
	ota_error_clear(&e);
	const char *mode = json_string_value(json_object_get(c, "mode"));
	ota_err rc = mode != NULL && strcmp(mode, "parse") == 0
	                     ? ota_trust_root_parse(spans[0], &latest, &e)
	                     : ota_trust_chain_verify(spans[0], spans + 1, nf - 1, &o, &latest, &e);
	if (strcmp(ota_err_name(rc), expect) != 0)
		fail_msg("vector %s/%s: got %s (%s: %s), want %s", dir, name, ota_err_name(rc), e.where,
		         e.what, expect);
	if (mode == NULL || strcmp(mode, "parse") != 0)
		from_agrees(spans[0], spans + 1, nf - 1, &o, rc, &e, latest);
	const json_t *lv = json_object_get(c, "latest_version");
	if (rc == OTA_OK && lv != NULL)
		assert_int_equal(ota_trust_root_version(latest), json_integer_value(lv));
	ota_trust_root_free(latest);
	for (size_t i = 0; i < nf; i++)
		free(bufs[i]);
	free(bufs);
	free(spans);
	json_decref(c);
}

static void test_vectors(void **state)
{
	(void)state;
	static const char *const dirs[] = {"chains", "parse"};
	for (size_t k = 0; k < 2; k++) {
		char rel[64];
		snprintf(rel, sizeof rel, "vectors/trust/%s", dirs[k]);
		char *root = test_src_path(rel);
		DIR *d = opendir(root);
		free(root);
		assert_non_null(d);
		struct dirent *de;
		int count = 0;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			run_vector(dirs[k], de->d_name);
			count++;
		}
		closedir(d);
		assert_true(count >= 10);
	}
}

/* vectors/trust/lookup/cases.json: ota_trust_lookup on one fixture snapshot. */
static void test_lookup_vectors(void **state)
{
	(void)state;
	size_t n = 0;
	uint8_t *text = test_read_src("vectors/trust/lookup/cases.json", &n);
	json_t *doc = json_loadb((const char *)text, n, 0, NULL);
	free(text);
	assert_non_null(doc);
	uint8_t *snap = test_read_src("vectors/trust/lookup/root.json", &n);
	ota_trust_root *r = NULL;
	assert_ota(ota_trust_root_parse(ota_bytes_make(snap, n), &r, NULL), OTA_OK);
	free(snap);
	assert_ota(ota_trust_root_verify_self(r, NULL), OTA_OK);
	size_t i;
	json_t *c;
	const json_t *cases = json_object_get(doc, "cases");
	assert_true(json_array_size(cases) >= 10);
	json_array_foreach(cases, i, c) {
		const char *kh = json_string_value(json_object_get(c, "kid"));
		uint8_t kid[32];
		size_t got = 0;
		assert_ota(ota_hex_decode(kh, strlen(kh), (ota_buf){kid, 32}, &got), OTA_OK);
		ota_alg alg = OTA_ALG_NONE;
		ota_trust_role role = OTA_TRUST_ROLE_RUNNER;
		assert_ota(ota_alg_from_name(json_string_value(json_object_get(c, "alg")), &alg), OTA_OK);
		assert_ota(ota_trust_role_from_name(json_string_value(json_object_get(c, "role")), &role),
		           OTA_OK);
		const char *f[3];
		static const char *const names[3] = {"repo", "lane", "provider_target"};
		for (int k = 0; k < 3; k++) {
			f[k] = json_string_value(json_object_get(c, names[k]));
			if (f[k] != NULL && f[k][0] == '\0')
				f[k] = NULL;
		}
		ota_trust_scope_req sc = {f[0], f[1], f[2]};
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_trust_lookup(r, ota_bytes_make(kid, got), alg, role, &sc,
		                              (int64_t)json_integer_value(json_object_get(c, "at")), NULL,
		                              NULL, &e);
		const char *want = json_string_value(json_object_get(c, "expect"));
		if (strcmp(ota_err_name(rc), want) != 0)
			fail_msg("lookup case %zu (%s): got %s (%s), want %s", i,
			         json_string_value(json_object_get(c, "note")), ota_err_name(rc), e.what,
			         want);
	}
	/* the FIXTURE private key "a" is the key of the first case (its bytes:
	 * the checked-out file is 0644, which ota_key_load_file refuses for a
	 * private key) */
	size_t kl = 0;
	uint8_t *kb = test_read_src("vectors/trust/keys/lookup-a-FIXTURE.pem", &kl);
	ota_key *k = NULL;
	assert_ota(ota_key_load_pem(ota_bytes_make(kb, kl), &k, NULL), OTA_OK);
	free(kb);
	uint8_t kid[32];
	char hex[65];
	kid_of(k, kid);
	ota_hex_encode(ota_bytes_make(kid, 32), hex);
	assert_string_equal(hex, json_string_value(json_object_get(json_array_get(cases, 0), "kid")));
	ota_key_free(k);
	ota_trust_root_free(r);
	json_decref(doc);
}

/* ---------- tuf-conformance test_root_rotation, ported (same 15 cases) ---------- */

typedef struct {
	int keys[10], nkeys, threshold, sigs[10], nsigs;
} md_version;

typedef struct {
	const char *name;
	md_version v[4];
	int n;
	ota_err want; /* of the whole chain */
} rotation_case;

#define MDV(K, T, S) {K, sizeof((int[])K) / sizeof(int), T, S, sizeof((int[])S) / sizeof(int)}
#define L(...) {__VA_ARGS__}

static const rotation_case rotation_cases[] = {
	{"1-of-1-key-rotation",
	 {MDV(L(1), 1, L(1)), MDV(L(2), 1, L(2, 1)), MDV(L(2), 1, L(2))}, 3, OTA_OK},
	{"1-of-1-key-rotation-unused-signatures",
	 {MDV(L(1), 1, L(3, 1, 4)), MDV(L(2), 1, L(3, 2, 1, 4)), MDV(L(2), 1, L(3, 2, 4))}, 3, OTA_OK},
	{"3-of-5-sign-with-different-keycombos",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(0, 1, 2, 3, 4), 3, L(0, 4, 1)),
	  MDV(L(0, 1, 2, 3, 4), 3, L(0, 1, 3)), MDV(L(0, 1, 2, 3, 4), 3, L(0, 1, 3))},
	 4, OTA_OK},
	{"3-of-5-one-key-rotated",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(0, 1, 3, 4, 5), 3, L(0, 4, 1))}, 2, OTA_OK},
	{"3-of-5-one-key-rotated-with-intermediate-step",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(0, 1, 3, 4, 5), 3, L(0, 2, 4, 5)),
	  MDV(L(0, 1, 3, 4, 5), 3, L(0, 4, 5))},
	 3, OTA_OK},
	{"3-of-5-all-keys-rotated-with-intermediate-step",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(5, 6, 7, 8, 9), 3, L(0, 2, 4, 5, 6, 7)),
	  MDV(L(5, 6, 7, 8, 9), 3, L(5, 6, 7))},
	 3, OTA_OK},
	{"1-of-3-threshold-increase-to-2-of-3",
	 {MDV(L(1, 2, 3), 1, L(1)), MDV(L(1, 2, 3), 2, L(1, 2))}, 2, OTA_OK},
	{"2-of-3-threshold-decrease-to-1-of-3",
	 {MDV(L(1, 2, 3), 2, L(1, 2)), MDV(L(1, 2, 3), 1, L(1, 2)), MDV(L(1, 2, 3), 1, L(1))}, 3,
	 OTA_OK},
	{"1-of-2-threshold-increase-to-2-of-2",
	 {MDV(L(1), 1, L(1)), MDV(L(1, 2), 2, L(1, 2))}, 2, OTA_OK},
	{"1-of-1-key-rotation-fail-not-signed-with-old-key",
	 {MDV(L(1), 1, L(1)), MDV(L(2), 1, L(2, 3, 4))}, 2, OTA_ERR_TRUST_THRESHOLD_OLD},
	{"1-of-1-key-rotation-fail-not-signed-with-new-key",
	 {MDV(L(1), 1, L(1)), MDV(L(2), 1, L(1, 3, 4))}, 2, OTA_ERR_TRUST_THRESHOLD_NEW},
	{"3-of-5-one-key-rotate-fails-not-signed-with-3-new-keys",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(0, 1, 3, 4, 5), 3, L(0, 2, 4))}, 2,
	 OTA_ERR_TRUST_THRESHOLD_NEW},
	{"3-of-5-one-key-rotate-fails-not-signed-with-3-old-keys",
	 {MDV(L(0, 1, 2, 3, 4), 3, L(0, 2, 4)), MDV(L(0, 1, 3, 4, 5), 3, L(0, 4, 5))}, 2,
	 OTA_ERR_TRUST_THRESHOLD_OLD},
	{"1-of-3-threshold-bump-to-2-of-3-fails-new-threshold-not-reached",
	 {MDV(L(1, 2, 3), 1, L(1)), MDV(L(1, 2, 3), 2, L(2))}, 2, OTA_ERR_TRUST_THRESHOLD_NEW},
	{"2-of-3-threshold-decr-to-1-of-3-fails-old-threshold-not-reached",
	 {MDV(L(1, 2, 3), 2, L(1, 2)), MDV(L(1, 2, 3), 1, L(1))}, 2, OTA_ERR_TRUST_THRESHOLD_OLD},
};

/*
 * One version as text: root keys K[keys] with threshold, signed by K[sigs]
 * (keys outside the root sign too: their signatures must be ignored).
 */
static char *md_text(ota_key *const *K, const md_version *m, const ota_trust_root *prev,
                     ota_trust_root **parsed)
{
	ota_trust_draft *d = NULL;
	const ota_key *keys[10];
	for (int i = 0; i < m->nkeys; i++)
		keys[i] = K[m->keys[i]];
	if (prev == NULL) {
		assert_ota(ota_trust_draft_new("tuf.example", keys, (size_t)m->nkeys,
		                               (unsigned)m->threshold, T0, TEXP, &d, NULL),
		           OTA_OK);
	} else {
		assert_ota(ota_trust_draft_next(prev, T0, TEXP, &d, NULL), OTA_OK);
		ota_trust_draft_clear_root_keys(d);
		for (int i = 0; i < m->nkeys; i++)
			assert_ota(ota_trust_draft_add_root_key(d, keys[i], NULL), OTA_OK);
		assert_ota(ota_trust_draft_set_threshold(d, (unsigned)m->threshold, NULL), OTA_OK);
	}
	ota_trust_root *r = finish(d);
	size_t l;
	char *text = ser(r, &l);
	json_t *doc = json_loadb(text, l, 0, NULL);
	free(text);
	assert_non_null(doc);
	char *tbs = NULL;
	size_t tbs_len = 0;
	assert_ota(ota_jcs_serialize(json_object_get(doc, "signed"), &tbs, &tbs_len, NULL), OTA_OK);
	for (int i = 0; i < m->nsigs; i++) {
		uint8_t sig[64], kid[32];
		size_t sl = 0;
		char kh[65], sh[129];
		assert_ota(ota_key_sign(K[m->sigs[i]], OTA_ALG_EDDSA, ota_bytes_make(tbs, tbs_len),
		                        (ota_buf){sig, sizeof sig}, &sl),
		           OTA_OK);
		kid_of(K[m->sigs[i]], kid);
		ota_hex_encode(ota_bytes_make(kid, 32), kh);
		ota_hex_encode(ota_bytes_make(sig, sl), sh);
		json_array_append_new(json_object_get(doc, "signatures"),
		                      json_pack("{s:s, s:s}", "keyid", kh, "sig", sh));
	}
	free(tbs);
	char *out = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	assert_non_null(out);
	*parsed = r;
	return out;
}

static void test_tuf_root_rotation_cases(void **state)
{
	(void)state;
	ota_key *K[10];
	for (int i = 0; i < 10; i++)
		assert_ota(ota_key_generate(OTA_ALG_EDDSA, &K[i]), OTA_OK);
	for (size_t c = 0; c < sizeof rotation_cases / sizeof rotation_cases[0]; c++) {
		const rotation_case *rc = &rotation_cases[c];
		char *text[4] = {NULL};
		ota_bytes spans[4];
		ota_trust_root *prev = NULL;
		for (int v = 0; v < rc->n; v++) {
			ota_trust_root *parsed = NULL;
			text[v] = md_text(K, &rc->v[v], prev, &parsed);
			spans[v] = ota_bytes_make(text[v], strlen(text[v]));
			ota_trust_root_free(prev);
			prev = parsed;
		}
		ota_trust_root_free(prev);
		ota_trust_verify_opts o = {.at = AT};
		ota_trust_root *latest = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err got = ota_trust_chain_verify(spans[0], spans + 1, (size_t)rc->n - 1, &o,
		                                     &latest, &e);
		if (got != rc->want)
			fail_msg("%s: got %s (%s), want %s", rc->name, ota_err_name(got), e.what,
			         ota_err_name(rc->want));
		from_agrees(spans[0], spans + 1, (size_t)rc->n - 1, &o, got, &e, latest);
		if (got == OTA_OK)
			assert_int_equal(ota_trust_root_version(latest), rc->n);
		/* a failed last step leaves the previous version trusted */
		if (got != OTA_OK) {
			ota_trust_root *before = NULL;
			assert_ota(ota_trust_chain_verify(spans[0], spans + 1, (size_t)rc->n - 2, &o,
			                                  &before, NULL),
			           OTA_OK);
			assert_int_equal(ota_trust_root_version(before), rc->n - 1);
			ota_trust_root_free(before);
		}
		ota_trust_root_free(latest);
		for (int v = 0; v < rc->n; v++)
			free(text[v]);
	}
	for (int i = 0; i < 10; i++)
		ota_key_free(K[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_unsigned_initial_root),
		cmocka_unit_test(test_absurd_version),
		cmocka_unit_test(test_oversize_and_long_chain_refused_before_parsing),
		cmocka_unit_test(test_strict_format),
		cmocka_unit_test(test_rotation_accepted),
		cmocka_unit_test(test_attack_missing_old_threshold),
		cmocka_unit_test(test_attack_missing_new_threshold),
		cmocka_unit_test(test_attack_key_counted_twice),
		cmocka_unit_test(test_attack_version_skip),
		cmocka_unit_test(test_attack_rollback),
		cmocka_unit_test(test_attack_equivocation),
		cmocka_unit_test(test_attack_prev_mismatch),
		cmocka_unit_test(test_attack_freeze_and_expired_intermediate),
		cmocka_unit_test(test_attack_revocation_dropped),
		cmocka_unit_test(test_attack_other_domain),
		cmocka_unit_test(test_sign_needs_root_key),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_scope_match),
		cmocka_unit_test(test_drafts),
		cmocka_unit_test(test_time_text),
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_lookup_vectors),
		cmocka_unit_test(test_tuf_root_rotation_cases),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
