/*
 * attest/acceptance.c - builds and signs acceptance records (kind
 * acceptance) for prepared admissions: one signature each
 * (ota_acceptance_build), or one signature over the Merkle tree of a batch
 * (ota_acceptance_build_batch). See include/ota/acceptance.h and
 * docs/attestation.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "ota/acceptance.h"
#include "ota/cbor.h"
#include "ota/cose.h"

/* The payload map: 13 claims, or 14 with the batch form's salt (last). */
static void write_payload(ota_cbor_wr *w, const ota_acceptance_signer *s, const ota_admission *a,
                          const uint8_t kid[32], const uint8_t *salt)
{
	ota_cbor_head(w, 5, salt != NULL ? 14 : 13);
	ota_cbor_head(w, 0, 1);
	ota_cbor_text(w, s->verifier_id);
	ota_cbor_head(w, 0, 6);
	ota_cbor_head(w, 0, (uint64_t)(a->judged_at < 0 ? 0 : a->judged_at));
	ota_cbor_head(w, 0, 10);
	ota_cbor_bstr(w, a->claims.nonce, a->claims.nonce_len);
	ota_cbor_text(w, "kind");
	ota_cbor_text(w, "acceptance");
	ota_cbor_text(w, "result");
	ota_cbor_text(w, "accepted");
	ota_cbor_text(w, "attestation");
	ota_cbor_text(w, a->record_id);
	ota_cbor_text(w, "challenge");
	ota_cbor_text(w, a->challenge_id);
	ota_cbor_text(w, "issuer");
	ota_cbor_text(w, a->issuer_principal);
	ota_cbor_text(w, "txn");
	ota_cbor_text(w, a->claims.txn);
	ota_cbor_text(w, "boundary");
	ota_cbor_text(w, a->claims.boundary);
	ota_cbor_text(w, "prior");
	if (a->claims.has_prior)
		ota_cbor_text(w, a->claims.prior);
	else
		ota_cbor_head(w, 7, 22); /* null */
	ota_cbor_text(w, "trust_root");
	ota_cbor_text(w, a->trust_root_id);
	ota_cbor_text(w, "verifier");
	ota_cbor_head(w, 5, 3);
	ota_cbor_text(w, "id");
	ota_cbor_text(w, s->verifier_id);
	ota_cbor_text(w, "version");
	ota_cbor_text(w, ota_version());
	ota_cbor_text(w, "kid");
	ota_cbor_bstr(w, kid, 32);
	if (salt != NULL) {
		ota_cbor_text(w, "salt");
		ota_cbor_bstr(w, salt, OTA_ACCEPTANCE_SALT_BYTES);
	}
}

ota_err ota_acceptance_build(void *ctx, const ota_admission *a, uint8_t **out, size_t *out_len,
                             ota_error *err)
{
	const ota_acceptance_signer *s = ctx;
	if (out == NULL || out_len == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no output");
	*out = NULL;
	*out_len = 0;
	if (s == NULL || s->key == NULL || s->verifier_id == NULL || a == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no signer or admission");
	uint8_t kid[32];
	ota_err e = ota_key_kid(s->key, kid);
	if (e != OTA_OK)
		return ota_error_set(err, e, "acceptance", "verifier kid");
	ota_cbor_wr w = {0};
	write_payload(&w, s, a, kid, NULL);
	if (w.oom) {
		free(w.p);
		return ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "payload");
	}
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	e = ota_cose_sign1_sign(s->key, ota_bytes_make(w.p, w.len), &so, out, out_len, err);
	free(w.p);
	return e;
}

/* ---- the batch form: RFC 9162 Merkle tree, one signature over its root ---- */

/* levels of the tree: at most 16 below (lvl_off, lvl_n) */
_Static_assert(OTA_ACCEPTANCE_MAX_BATCH <= 32768u, "tree levels");

/* SHA-256(prefix || a || b) on one reused context (a tree hashes 2n times) */
typedef struct hasher {
	EVP_MD_CTX *c;
	EVP_MD *md; /* fetched once per batch */
} hasher;

static ota_err hash3(hasher *hs, uint8_t prefix, const uint8_t *a, size_t al, const uint8_t *b,
                     size_t bl, uint8_t out[32])
{
	unsigned int n = 0;
	EVP_MD_CTX *c = hs->c;
	if (EVP_DigestInit_ex(c, hs->md, NULL) != 1 || EVP_DigestUpdate(c, &prefix, 1) != 1 ||
	    EVP_DigestUpdate(c, a, al) != 1 || (bl > 0 && EVP_DigestUpdate(c, b, bl) != 1) ||
	    EVP_DigestFinal_ex(c, out, &n) != 1 || n != 32)
		return OTA_ERR_CRYPTO;
	return OTA_OK;
}

static ota_err leaf_hash(hasher *hs, const uint8_t *payload, size_t n, uint8_t out[32])
{
	return hash3(hs, 0x00, payload, n, NULL, 0, out);
}

static ota_err node_hash(hasher *hs, const uint8_t l[32], const uint8_t r[32], uint8_t out[32])
{
	return hash3(hs, 0x01, l, 32, r, 32, out);
}

/* A writer with room for about n bytes (fewer reallocations). */
static void wr_reserve(ota_cbor_wr *w, size_t n)
{
	w->p = malloc(n);
	w->cap = w->p != NULL ? n : 0;
	w->len = 0;
	w->oom = w->p == NULL;
}

static ota_err fill_random(uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return OTA_ERR_CRYPTO;
		}
		p += r;
		n -= (size_t)r;
	}
	return OTA_OK;
}

ota_err ota_acceptance_build_batch(const ota_acceptance_signer *s, const ota_admission *const *a,
                                   size_t n, uint8_t **outs, size_t *out_lens, ota_error *err)
{
	if (outs == NULL || out_lens == NULL || n == 0)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no admissions or no output");
	if (n > OTA_ACCEPTANCE_MAX_BATCH)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "more than %u in one batch",
		                     OTA_ACCEPTANCE_MAX_BATCH);
	for (size_t i = 0; i < n; i++) {
		outs[i] = NULL;
		out_lens[i] = 0;
	}
	if (s == NULL || s->key == NULL || s->verifier_id == NULL || a == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no signer or admission");
	for (size_t i = 0; i < n; i++)
		if (a[i] == NULL)
			return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no admission");
	uint8_t kid[32];
	ota_err e = ota_key_kid(s->key, kid);
	if (e != OTA_OK)
		return ota_error_set(err, e, "acceptance", "verifier kid");
	ota_alg alg = ota_key_default_alg(s->key);
	if ((e = ota_key_check_alg(s->key, alg)) != OTA_OK)
		return ota_error_set(err, e, "acceptance", "verifier key");

	/* levels[0] = leaves; each level pairs neighbours, an odd last node is
	 * carried up unchanged: the RFC 9162 tree (largest power of two on
	 * the left) built bottom up */
	size_t total = 0;
	for (size_t m = n;; m = (m + 1) / 2) {
		total += m;
		if (m == 1)
			break;
	}
	uint8_t (*h)[32] = malloc(total * 32);
	uint8_t *salts = malloc(n * OTA_ACCEPTANCE_SALT_BYTES);
	ota_cbor_wr *pw = calloc(n, sizeof *pw);
	hasher hs = {EVP_MD_CTX_new(), EVP_MD_fetch(NULL, "SHA256", NULL)};
	if (h == NULL || salts == NULL || pw == NULL || hs.c == NULL || hs.md == NULL) {
		e = ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "batch");
		goto out;
	}
	if ((e = fill_random(salts, n * OTA_ACCEPTANCE_SALT_BYTES)) != OTA_OK) {
		ota_error_set(err, e, "acceptance", "getrandom");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		wr_reserve(&pw[i], 1024);
		write_payload(&pw[i], s, a[i], kid, salts + i * OTA_ACCEPTANCE_SALT_BYTES);
		if (pw[i].oom) {
			e = ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "payload");
			goto out;
		}
		if ((e = leaf_hash(&hs, pw[i].p, pw[i].len, h[i])) != OTA_OK) {
			ota_error_set(err, e, "acceptance", "leaf hash");
			goto out;
		}
	}
	size_t lvl_off[16], lvl_n[16], nl = 0;
	lvl_off[0] = 0;
	lvl_n[0] = n;
	for (nl = 1; lvl_n[nl - 1] > 1; nl++) {
		size_t pn = lvl_n[nl - 1], po = lvl_off[nl - 1];
		lvl_off[nl] = po + pn;
		lvl_n[nl] = (pn + 1) / 2;
		for (size_t j = 0; j < pn / 2; j++)
			if ((e = node_hash(&hs, h[po + 2 * j], h[po + 2 * j + 1], h[lvl_off[nl] + j])) !=
			    OTA_OK) {
				ota_error_set(err, e, "acceptance", "node hash");
				goto out;
			}
		if (pn % 2 == 1)
			memcpy(h[lvl_off[nl] + pn / 2], h[po + pn - 1], 32);
	}
	const uint8_t *root = h[lvl_off[nl - 1]];

	/* protected {1: alg, 4: kid, 395 (vds): 1 (RFC9162_SHA256),
	 * "tree_size": n} (the proofs' tree size is thus signed too) and the
	 * one signature over Sig_structure with the root as payload */
	ota_cbor_wr pr = {0};
	ota_cbor_head(&pr, 5, 4);
	ota_cbor_head(&pr, 0, 1);
	ota_cbor_int(&pr, (int64_t)alg);
	ota_cbor_head(&pr, 0, 4);
	ota_cbor_bstr(&pr, kid, 32);
	ota_cbor_head(&pr, 0, OTA_COSE_HEADER_VDS);
	ota_cbor_head(&pr, 0, OTA_VDS_RFC9162_SHA256);
	ota_cbor_text(&pr, OTA_COSE_HEADER_TREE_SIZE);
	ota_cbor_head(&pr, 0, n);
	ota_cbor_wr tbs = {0};
	ota_cbor_head(&tbs, 4, 4);
	ota_cbor_text(&tbs, "Signature1");
	ota_cbor_bstr(&tbs, pr.p, pr.len);
	ota_cbor_bstr(&tbs, NULL, 0);
	ota_cbor_bstr(&tbs, root, 32);
	uint8_t sigb[OTA_MAX_SIG_BYTES];
	size_t sl = 0;
	if (pr.oom || tbs.oom) {
		e = ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "signature");
	} else if ((e = ota_key_sign(s->key, alg, ota_bytes_make(tbs.p, tbs.len),
	                             (ota_buf){sigb, sizeof sigb}, &sl)) != OTA_OK) {
		ota_error_set(err, e, "signature", "signing failed");
	}
	free(tbs.p);

	/* each message: tag 18 [protected, {396: {-1: [proof]}}, payload, sig]
	 * with proof = bstr .cbor [tree_size, leaf_index, [path...]] */
	for (size_t i = 0; e == OTA_OK && i < n; i++) {
		ota_cbor_wr pf = {0};
		wr_reserve(&pf, 16 + 34 * 16);
		size_t path = 0;
		for (size_t l = 0, k = i; l + 1 < nl; l++, k /= 2)
			if ((k ^ 1u) < lvl_n[l])
				path++;
		ota_cbor_head(&pf, 4, 3);
		ota_cbor_head(&pf, 0, n);
		ota_cbor_head(&pf, 0, i);
		ota_cbor_head(&pf, 4, path);
		for (size_t l = 0, k = i; l + 1 < nl; l++, k /= 2)
			if ((k ^ 1u) < lvl_n[l])
				ota_cbor_bstr(&pf, h[lvl_off[l] + (k ^ 1u)], 32);
		ota_cbor_wr m = {0};
		wr_reserve(&m, 32 + pr.len + pf.len + pw[i].len + sl);
		ota_cbor_head(&m, 6, OTA_COSE_SIGN1_TAG);
		ota_cbor_head(&m, 4, 4);
		ota_cbor_bstr(&m, pr.p, pr.len);
		ota_cbor_head(&m, 5, 1);
		ota_cbor_head(&m, 0, OTA_COSE_HEADER_VDP);
		ota_cbor_head(&m, 5, 1);
		ota_cbor_int(&m, -1);
		ota_cbor_head(&m, 4, 1);
		ota_cbor_bstr(&m, pf.p, pf.len);
		ota_cbor_bstr(&m, pw[i].p, pw[i].len);
		ota_cbor_bstr(&m, sigb, sl);
		bool oom = pf.oom || m.oom;
		free(pf.p);
		if (oom) {
			free(m.p);
			e = ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "message");
			break;
		}
		outs[i] = m.p;
		out_lens[i] = m.len;
	}
	free(pr.p);
out:
	if (e != OTA_OK)
		for (size_t i = 0; i < n; i++) {
			free(outs[i]);
			outs[i] = NULL;
			out_lens[i] = 0;
		}
	if (pw != NULL)
		for (size_t i = 0; i < n; i++)
			free(pw[i].p);
	free(pw);
	EVP_MD_CTX_free(hs.c);
	EVP_MD_free(hs.md);
	if (salts != NULL)
		ota_wipe(salts, n * OTA_ACCEPTANCE_SALT_BYTES);
	free(salts);
	free(h);
	return e;
}
