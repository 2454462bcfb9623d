/*
 * bench_trust: trust-root figures, each with a baseline from the same run.
 *
 *  1. trust_chain_verify_1000_3of5: ota_trust_chain_verify over a pinned
 *     version 1 and 999 successors, 5 ES256 root keys, threshold 3 (every
 *     version signed by 3 holders, rotating among the 5). Baseline: only the
 *     raw signature verifications that chain needs (3 per version, 3000 in
 *     all) with ota_key_verify over the same JCS bytes and signatures. Value
 *     and baseline in ms (best of ROUNDS); ratio = ours / raw (overhead
 *     factor: parsing, JCS, hashing, the rotation rule).
 *  2. trust_lookup_10k: ota_trust_lookup (kid + alg + role + scope + window)
 *     among 10,000 principal keys, lookups/s. Baseline: a raw bsearch over
 *     the same 10,000 sorted 32-byte kids with memcmp, same kid sequence.
 *     ratio = ours / bsearch.
 *  3. trust_parse_10k_keys: parsing that 10,000-key snapshot (strict, keys
 *     loaded and checked canonical), ms. Baseline: OpenSSL's own
 *     PEM_read_bio_PUBKEY of the same 10,000 PEMs (nothing checked), one
 *     round. ratio = ours / OpenSSL. key_load_pem_10k: ota_key_load_pem of
 *     those PEMs alone (kid, curve check, prepared verification) against
 *     the same OpenSSL figure.
 *
 *   bench_trust [ROUNDS]   default 3
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "ota/json.h"
#include "ota/key.h"
#include "ota/trust.h"

#define CHAIN 1000
#define NROOT 5
#define THRESHOLD 3
#define NKEYS 10000
#define LOOKUPS 1000000

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, ota_err rc)
{
	fprintf(stderr, "bench_trust: %s: %s\n", what, ota_err_name(rc));
	exit(1);
}

static void emit(const char *bench, double value, const char *unit, const char *baseline,
                 double base)
{
	printf("{\"bench\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"baseline\": \"%s\", "
	       "\"baseline_value\": %.3f, \"ratio\": %.3f}\n",
	       bench, value, unit, baseline, base, base > 0 ? value / base : 0.0);
	fflush(stdout);
}

/* Raw material of one signature: JCS(signed), key, signature bytes. */
typedef struct {
	char *tbs;
	size_t tbs_len;
	const ota_key *key;
	uint8_t sig[64];
	size_t sig_len;
} raw_sig;

static void bench_chain(int rounds)
{
	ota_key *rk[NROOT];
	for (int i = 0; i < NROOT; i++)
		if (ota_key_generate(OTA_ALG_ES256, &rk[i]) != OTA_OK)
			die("keygen", OTA_ERR_CRYPTO);
	ota_trust_draft *d = NULL;
	ota_trust_root *cur = NULL;
	ota_err rc = ota_trust_draft_new("bench.example", (const ota_key *const *)rk, NROOT,
	                                 THRESHOLD, 1000, 4000000000LL, &d, NULL);
	if (rc != OTA_OK || (rc = ota_trust_draft_finish(d, &cur, NULL)) != OTA_OK)
		die("draft", rc);
	ota_trust_draft_free(d);
	char **text = calloc(CHAIN, sizeof *text);
	ota_bytes *spans = calloc(CHAIN, sizeof *spans);
	raw_sig *raw = calloc((size_t)CHAIN * THRESHOLD, sizeof *raw);
	if (text == NULL || spans == NULL || raw == NULL)
		die("alloc", OTA_ERR_NOMEM);
	size_t nraw = 0;
	for (int v = 1; v <= CHAIN; v++) {
		if (v > 1) {
			ota_trust_root *next = NULL;
			if ((rc = ota_trust_draft_next(cur, 1000 + v, 4000000000LL, &d, NULL)) != OTA_OK ||
			    (rc = ota_trust_draft_finish(d, &next, NULL)) != OTA_OK)
				die("next", rc);
			ota_trust_draft_free(d);
			ota_trust_root_free(cur);
			cur = next;
		}
		for (int s = 0; s < THRESHOLD; s++) {
			int k = (v + s) % NROOT;
			if ((rc = ota_trust_root_sign(cur, rk[k], NULL, NULL)) != OTA_OK)
				die("sign", rc);
		}
		size_t len = 0;
		if ((rc = ota_trust_root_serialize(cur, &text[v - 1], &len, NULL)) != OTA_OK)
			die("serialize", rc);
		spans[v - 1] = ota_bytes_make(text[v - 1], len);
		/* the raw signatures: JCS(signed) and each (keyid, sig) */
		json_t *doc = json_loadb(text[v - 1], len, 0, NULL);
		char *tbs = NULL;
		size_t tbs_len = 0;
		if (doc == NULL ||
		    (rc = ota_jcs_serialize(json_object_get(doc, "signed"), &tbs, &tbs_len, NULL)) !=
		            OTA_OK)
			die("jcs", rc);
		size_t i;
		json_t *sj;
		json_array_foreach(json_object_get(doc, "signatures"), i, sj) {
			raw_sig *r = &raw[nraw++];
			r->tbs = i == 0 ? tbs : raw[nraw - 2].tbs;
			r->tbs_len = tbs_len;
			const char *kh = json_string_value(json_object_get(sj, "keyid"));
			const char *sh = json_string_value(json_object_get(sj, "sig"));
			uint8_t kid[32];
			size_t got = 0;
			if (ota_hex_decode(kh, 64, (ota_buf){kid, 32}, &got) != OTA_OK ||
			    ota_hex_decode(sh, strlen(sh), (ota_buf){r->sig, 64}, &r->sig_len) != OTA_OK)
				die("hex", OTA_ERR_BAD_HEX);
			for (int k = 0; k < NROOT; k++) {
				uint8_t kk[32];
				if (ota_key_kid(rk[k], kk) == OTA_OK && memcmp(kk, kid, 32) == 0)
					r->key = rk[k];
			}
		}
		json_decref(doc);
	}
	ota_trust_root_free(cur);
	double best = 1e9, best_raw = 1e9;
	for (int round = 0; round < rounds; round++) {
		ota_trust_verify_opts o = {.at = 2000000000LL};
		ota_trust_root *latest = NULL;
		ota_error err;
		ota_error_clear(&err);
		double t0 = now_s();
		rc = ota_trust_chain_verify(spans[0], spans + 1, CHAIN - 1, &o, &latest, &err);
		double t1 = now_s();
		if (rc != OTA_OK || ota_trust_root_version(latest) != CHAIN) {
			fprintf(stderr, "%s %s\n", err.where, err.what);
			die("chain verify", rc);
		}
		ota_trust_root_free(latest);
		for (size_t i = 0; i < nraw; i++)
			if ((rc = ota_key_verify(raw[i].key, OTA_ALG_ES256,
			                         ota_bytes_make(raw[i].tbs, raw[i].tbs_len),
			                         ota_bytes_make(raw[i].sig, raw[i].sig_len))) != OTA_OK)
				die("raw verify", rc);
		double t2 = now_s();
		if (t1 - t0 < best)
			best = t1 - t0;
		if (t2 - t1 < best_raw)
			best_raw = t2 - t1;
	}
	emit("trust_chain_verify_1000_3of5", best * 1e3, "ms", "raw_es256_verify_3000_sigs",
	     best_raw * 1e3);
	for (size_t i = 0; i < nraw; i += THRESHOLD)
		free(raw[i].tbs);
	for (int v = 0; v < CHAIN; v++)
		free(text[v]);
	free(raw);
	free(spans);
	free(text);
	for (int i = 0; i < NROOT; i++)
		ota_key_free(rk[i]);
}

static int cmp_kid(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

static void bench_lookup(int rounds)
{
	ota_key *rk = NULL;
	if (ota_key_generate(OTA_ALG_EDDSA, &rk) != OTA_OK)
		die("keygen", OTA_ERR_CRYPTO);
	ota_trust_draft *d = NULL;
	ota_trust_root *base = NULL;
	ota_err rc = ota_trust_draft_new("bench.example", (const ota_key *const *)&rk, 1, 1, 1000,
	                                 4000000000LL, &d, NULL);
	if (rc != OTA_OK || (rc = ota_trust_draft_finish(d, &base, NULL)) != OTA_OK)
		die("draft", rc);
	ota_trust_draft_free(d);
	char *btext = NULL;
	size_t blen = 0;
	if ((rc = ota_trust_root_serialize(base, &btext, &blen, NULL)) != OTA_OK)
		die("serialize", rc);
	ota_trust_root_free(base);
	/* 1,000 principals x 10 Ed25519 keys, written straight into the JSON */
	json_t *doc = json_loadb(btext, blen, 0, NULL);
	free(btext);
	json_t *ps = json_object_get(json_object_get(doc, "signed"), "principals");
	uint8_t(*kids)[32] = malloc((size_t)NKEYS * 32);
	char **pems = calloc(NKEYS, sizeof *pems);
	if (doc == NULL || ps == NULL || kids == NULL || pems == NULL)
		die("alloc", OTA_ERR_NOMEM);
	for (int p = 0; p < NKEYS / 10; p++) {
		char id[32];
		snprintf(id, sizeof id, "runner-%d", p);
		json_t *keys = json_array();
		for (int j = 0; j < 10; j++) {
			int i = p * 10 + j;
			ota_key *k = NULL;
			char kh[65];
			if (ota_key_generate(OTA_ALG_EDDSA, &k) != OTA_OK ||
			    ota_key_kid(k, kids[i]) != OTA_OK || ota_key_public_pem(k, &pems[i]) != OTA_OK)
				die("keygen", OTA_ERR_CRYPTO);
			ota_hex_encode(ota_bytes_make(kids[i], 32), kh);
			json_array_append_new(keys, json_pack("{s:s, s:s, s:s, s:I, s:I}", "kid", kh, "alg",
			                                      "EdDSA", "public_key", pems[i], "valid_from",
			                                      (json_int_t)1000, "valid_until",
			                                      (json_int_t)4000000000LL));
			ota_key_free(k);
		}
		json_array_append_new(ps, json_pack("{s:s, s:s, s:{s:[s], s:[s], s:[s]}, s:o}", "id", id,
		                                    "role", "runner", "scopes", "repos", "acme/*",
		                                    "lanes", "ci", "provider_targets", "oci_local",
		                                    "keys", keys));
	}
	char *big = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (big == NULL)
		die("dump", OTA_ERR_NOMEM);
	size_t big_len = strlen(big);
	/* parse vs raw PEM loads */
	double best_parse = 1e9, best_pem = 1e9, best_ossl = 1e9;
	ota_trust_root *r = NULL;
	for (int round = 0; round < 1; round++) { /* seconds per round: once */
		ota_trust_root_free(r);
		r = NULL;
		ota_error err;
		ota_error_clear(&err);
		double t0 = now_s();
		rc = ota_trust_root_parse(ota_bytes_make(big, big_len), &r, &err);
		double t1 = now_s();
		if (rc != OTA_OK) {
			fprintf(stderr, "%s %s\n", err.where, err.what);
			die("parse 10k", rc);
		}
		for (int i = 0; i < NKEYS; i++) {
			ota_key *k = NULL;
			if (ota_key_load_pem(ota_bytes_make(pems[i], strlen(pems[i])), &k, NULL) != OTA_OK)
				die("pem", OTA_ERR_KEY_FORMAT);
			ota_key_free(k);
		}
		double t2 = now_s();
		/* the peer: OpenSSL's own decoder of the same PEMs */
		for (int i = 0; i < NKEYS; i++) {
			BIO *b = BIO_new_mem_buf(pems[i], (int)strlen(pems[i]));
			EVP_PKEY *pk = b != NULL ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
			if (pk == NULL)
				die("openssl pem", OTA_ERR_KEY_FORMAT);
			EVP_PKEY_free(pk);
			BIO_free(b);
		}
		double t3 = now_s();
		if (t1 - t0 < best_parse)
			best_parse = t1 - t0;
		if (t2 - t1 < best_pem)
			best_pem = t2 - t1;
		if (t3 - t2 < best_ossl)
			best_ossl = t3 - t2;
	}
	emit("trust_parse_10k_keys", best_parse * 1e3, "ms", "openssl_pem_read_pubkey_10k",
	     best_ossl * 1e3);
	emit("key_load_pem_10k", best_pem * 1e3, "ms", "openssl_pem_read_pubkey_10k",
	     best_ossl * 1e3);
	/* lookups: the same pseudo-random kid sequence for both sides */
	uint32_t *seq = malloc(LOOKUPS * sizeof *seq);
	uint8_t(*sorted)[32] = malloc((size_t)NKEYS * 32);
	if (seq == NULL || sorted == NULL)
		die("alloc", OTA_ERR_NOMEM);
	uint32_t x = 2463534242u;
	for (int i = 0; i < LOOKUPS; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		seq[i] = x % NKEYS;
	}
	memcpy(sorted, kids, (size_t)NKEYS * 32);
	qsort(sorted, NKEYS, 32, cmp_kid);
	ota_trust_scope_req sc = {"acme/widgets", "ci", "oci_local"};
	double best_l = 0, best_b = 0;
	size_t sink = 0;
	for (int round = 0; round < rounds; round++) {
		double t0 = now_s();
		for (int i = 0; i < LOOKUPS; i++) {
			const ota_key *k = NULL;
			if (ota_trust_lookup(r, ota_bytes_make(kids[seq[i]], 32), OTA_ALG_EDDSA,
			                     OTA_TRUST_ROLE_RUNNER, &sc, 2000000000LL, &k, NULL,
			                     NULL) != OTA_OK)
				die("lookup", OTA_ERR_INTERNAL);
			sink += (size_t)(k != NULL);
		}
		double t1 = now_s();
		for (int i = 0; i < LOOKUPS; i++) {
			const void *hit = bsearch(kids[seq[i]], sorted, NKEYS, 32, cmp_kid);
			sink += (size_t)(hit != NULL);
		}
		double t2 = now_s();
		double l = LOOKUPS / (t1 - t0), b = LOOKUPS / (t2 - t1);
		if (l > best_l)
			best_l = l;
		if (b > best_b)
			best_b = b;
	}
	if (sink != (size_t)2 * LOOKUPS * (size_t)rounds)
		die("lookup count", OTA_ERR_INTERNAL);
	emit("trust_lookup_10k", best_l, "lookups/s", "raw_bsearch_10k_kids", best_b);
	ota_trust_root_free(r);
	for (int i = 0; i < NKEYS; i++)
		free(pems[i]);
	free(pems);
	free(kids);
	free(sorted);
	free(seq);
	free(big);
	ota_key_free(rk);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 3;
	if (rounds < 1)
		rounds = 1;
	bench_chain(rounds);
	bench_lookup(rounds);
	return 0;
}
