/*
 * Acceptances in the batch form (include/ota/acceptance.h,
 * docs/attestation.md): one signature over an RFC 9162 Merkle tree of the
 * batch's payloads, each acceptance carrying its payload and its inclusion
 * proof. Every size from 1 to 70 (and larger) verifies leaf by leaf and
 * matches the RFC's recursive tree hash; every tampering is refused:
 * payload, salt, path hashes, leaf index, tree size, path length, proof
 * shape, a proof moved to another payload, an interior node passed off as
 * a leaf, the vds value, a proof without vds, a batch payload without salt
 * and a single-form payload with one.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/cbor.h"
#include "ota/cose.h"

#define NOW 1800000000
#define MAXN 300

typedef struct world {
	test_admission_world base; /* root and signer (test_util.c); no store */
	ota_key *issuer_key;
	ota_acceptance_cache *cache; /* warmed with the batch under test */
	ota_admission adm[MAXN];
	const ota_admission *ptr[MAXN];
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "batch.test", NOW - 86400,
	                                                NOW + 86400);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->issuer_key), OTA_OK);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->issuer_key,
	               NOW - 86400);
	test_admission_world_finish(&w->base, d, NULL);
	for (int i = 0; i < MAXN; i++) {
		ota_admission *a = &w->adm[i];
		a->judged_at = NOW;
		for (size_t k = 0; k < 32; k++)
			a->claims.nonce[k] = (uint8_t)(i * 7 + (int)k);
		a->claims.nonce_len = 32;
		snprintf(a->record_id, sizeof a->record_id, "sha256:%064x", i + 1);
		snprintf(a->challenge_id, sizeof a->challenge_id, "sha256:%064x", 100000 + i);
		snprintf(a->issuer_principal, sizeof a->issuer_principal, "issuer:acme");
		snprintf(a->claims.txn, sizeof a->claims.txn, "txn-1");
		snprintf(a->claims.boundary, sizeof a->claims.boundary, "boundary-%04d", i);
		if (i % 3 == 1) {
			a->claims.has_prior = true;
			snprintf(a->claims.prior, sizeof a->claims.prior, "sha256:%064x", 200000 + i);
		}
		snprintf(a->trust_root_id, sizeof a->trust_root_id, "%s",
		         ota_trust_root_identity(w->base.root));
		w->ptr[i] = a;
	}
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	ota_acceptance_cache_free(w->cache);
	test_admission_world_free(&w->base);
	ota_key_free(w->issuer_key);
	free(w);
	return 0;
}

static void free_all(uint8_t **m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i]);
}

/* ---- the parts of a batch acceptance, and messages made from parts ---- */

typedef struct parts {
	uint8_t prot[128];
	size_t prot_len;
	uint8_t proof[1024];
	size_t proof_len;
	uint8_t payload[2048];
	size_t payload_len;
	uint8_t sig[132];
	size_t sig_len;
} parts;

static size_t head(const uint8_t *p, unsigned *mt, uint64_t *v)
{
	*mt = p[0] >> 5;
	unsigned ai = p[0] & 31u;
	if (ai < 24) {
		*v = ai;
		return 1;
	}
	size_t n = ai == 24 ? 1 : ai == 25 ? 2 : ai == 26 ? 4 : 8;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v = (*v << 8) | p[1 + i];
	return 1 + n;
}

static void split(const uint8_t *m, size_t len, parts *out)
{
	ota_cose_sign1 c;
	assert_ota(ota_cose_sign1_decode(ota_bytes_make(m, len), NULL, &c, NULL), OTA_OK);
	memcpy(out->prot, c.protected_bytes.ptr, c.protected_bytes.len);
	out->prot_len = c.protected_bytes.len;
	memcpy(out->payload, c.payload.ptr, c.payload.len);
	out->payload_len = c.payload.len;
	memcpy(out->sig, c.signature.ptr, c.signature.len);
	out->sig_len = c.signature.len;
	/* d2 84 bstr(prot) a1 19 01 8c a1 20 81 bstr(proof) */
	size_t off = 2;
	unsigned mt;
	uint64_t v;
	off += head(m + off, &mt, &v);
	off += (size_t)v;
	assert_memory_equal(m + off, "\xa1\x19\x01\x8c\xa1\x20\x81", 7);
	off += 7;
	off += head(m + off, &mt, &v);
	assert_int_equal(mt, 2);
	memcpy(out->proof, m + off, (size_t)v);
	out->proof_len = (size_t)v;
}

/* tag 18 [prot, {396: {-1: [proof]}} (or {} when proof is NULL), payload, sig] */
static uint8_t *join(const parts *p, const uint8_t *proof, size_t proof_len, size_t *len)
{
	ota_cbor_wr w = {0};
	ota_cbor_head(&w, 6, 18);
	ota_cbor_head(&w, 4, 4);
	ota_cbor_bstr(&w, p->prot, p->prot_len);
	if (proof != NULL) {
		ota_cbor_head(&w, 5, 1);
		ota_cbor_head(&w, 0, 396);
		ota_cbor_head(&w, 5, 1);
		ota_cbor_int(&w, -1);
		ota_cbor_head(&w, 4, 1);
		ota_cbor_bstr(&w, proof, proof_len);
	} else {
		ota_cbor_head(&w, 5, 0);
	}
	ota_cbor_bstr(&w, p->payload, p->payload_len);
	ota_cbor_bstr(&w, p->sig, p->sig_len);
	assert_false(w.oom);
	*len = w.len;
	return w.p;
}

static ota_err verify_parts(world *w, const parts *p, const uint8_t *proof, size_t proof_len,
                            ota_error *e)
{
	size_t len = 0;
	uint8_t *m = join(p, proof, proof_len, &len);
	ota_acceptance a;
	ota_error_clear(e);
	ota_err rc = ota_acceptance_verify(ota_bytes_make(m, len), w->base.root, NOW, &a, e);
	/* the same answer through a cache that already holds the batch's
	 * signature (verify_parts' callers start from a valid batch) */
	if (w->cache != NULL) {
		ota_acceptance b;
		ota_err rc2 = ota_acceptance_verify_cached(ota_bytes_make(m, len), w->base.root,
		                                           NOW, w->cache, &b, NULL);
		assert_int_equal(rc2 == OTA_OK, rc == OTA_OK);
		if (rc == OTA_OK)
			assert_memory_equal(&a, &b, sizeof a);
	}
	free(m);
	return rc;
}

static uint8_t *proof_of(uint64_t size, uint64_t index, uint8_t (*path)[32], size_t np,
                         size_t *len)
{
	ota_cbor_wr w = {0};
	ota_cbor_head(&w, 4, 3);
	ota_cbor_head(&w, 0, size);
	ota_cbor_head(&w, 0, index);
	ota_cbor_head(&w, 4, np);
	for (size_t i = 0; i < np; i++)
		ota_cbor_bstr(&w, path[i], 32);
	assert_false(w.oom);
	*len = w.len;
	return w.p;
}

/* The path of a proof (parsed back). */
static size_t path_of(const parts *p, uint64_t *size, uint64_t *index, uint8_t (*path)[32])
{
	size_t off = 0;
	unsigned mt;
	uint64_t v, np;
	off += head(p->proof + off, &mt, &v);
	off += head(p->proof + off, &mt, size);
	off += head(p->proof + off, &mt, index);
	off += head(p->proof + off, &mt, &np);
	for (uint64_t i = 0; i < np; i++) {
		off += head(p->proof + off, &mt, &v);
		assert_int_equal(v, 32);
		memcpy(path[i], p->proof + off, 32);
		off += 32;
	}
	assert_int_equal(off, p->proof_len);
	return (size_t)np;
}

/* RFC 9162 section 2.1.1 MTH, recursively */
static void mth(uint8_t (*leaves)[32], size_t n, uint8_t out[32])
{
	if (n == 1) {
		memcpy(out, leaves[0], 32);
		return;
	}
	size_t k = 1;
	while (k * 2 < n)
		k *= 2;
	uint8_t buf[65];
	buf[0] = 0x01;
	mth(leaves, k, buf + 1);
	mth(leaves + k, n - k, buf + 33);
	assert_ota(ota_sha256(ota_bytes_make(buf, sizeof buf), out), OTA_OK);
}

static void leaf(const uint8_t *payload, size_t n, uint8_t out[32])
{
	uint8_t *b = malloc(n + 1);
	assert_non_null(b);
	b[0] = 0x00;
	memcpy(b + 1, payload, n);
	assert_ota(ota_sha256(ota_bytes_make(b, n + 1), out), OTA_OK);
	free(b);
}

/* Signs root with the verifier key as the batch form does. */
static void sign_root(world *w, const uint8_t *prot, size_t prot_len, const uint8_t root[32],
                      uint8_t *sig, size_t *sig_len)
{
	ota_cbor_wr t = {0};
	ota_cbor_head(&t, 4, 4);
	ota_cbor_text(&t, "Signature1");
	ota_cbor_bstr(&t, prot, prot_len);
	ota_cbor_bstr(&t, NULL, 0);
	ota_cbor_bstr(&t, root, 32);
	assert_ota(ota_key_sign(w->base.verifier_key, OTA_ALG_ES256, ota_bytes_make(t.p, t.len),
	                        (ota_buf){sig, 132}, sig_len),
	           OTA_OK);
	free(t.p);
}

/* ---- tests ---- */

static void test_sizes(void **state)
{
	world *w = *state;
	static uint8_t *out[MAXN];
	static size_t lens[MAXN];
	static uint8_t leaves[MAXN][32];
	static const size_t sizes[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  15, 16, 17, 31, 32, 33, 63,
	                               64, 65, 66, 67, 68, 69, 70, 127, 128, 129, 255, 256, 257, 300};
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		size_t n = sizes[si];
		ota_error e = {0};
		assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, n, out, lens, &e),
		           OTA_OK);
		parts p0;
		for (size_t i = 0; i < n; i++) {
			ota_acceptance a;
			assert_ota(ota_acceptance_verify(ota_bytes_make(out[i], lens[i]),
			                                 w->base.root, NOW, &a, &e),
			           OTA_OK);
			assert_string_equal(a.attestation, w->adm[i].record_id);
			assert_string_equal(a.challenge, w->adm[i].challenge_id);
			assert_string_equal(a.boundary, w->adm[i].claims.boundary);
			assert_string_equal(a.prior, w->adm[i].claims.has_prior ? w->adm[i].claims.prior : "");
			assert_string_equal(a.result, "accepted");
			assert_int_equal(a.accepted_at, NOW);
			assert_memory_equal(a.nonce, w->adm[i].claims.nonce, 32);
			parts p;
			split(out[i], lens[i], &p);
			uint64_t size = 0, index = 0;
			uint8_t path[64][32];
			size_t np = path_of(&p, &size, &index, path);
			assert_int_equal(size, n);
			assert_int_equal(index, i);
			size_t want = 0; /* the RFC 9162 path length of leaf i */
			for (size_t lo = 0, hi = n, m = i; hi - lo > 1; want++) {
				size_t k = 1;
				while (k * 2 < hi - lo)
					k *= 2;
				if (m - lo < k)
					hi = lo + k;
				else
					lo += k;
			}
			assert_int_equal(np, want);
			leaf(p.payload, p.payload_len, leaves[i]);
			if (i == 0)
				p0 = p;
			else
				assert_memory_equal(p.sig, p0.sig, p0.sig_len); /* one signature */
		}
		/* the signature is over the RFC's recursive tree hash */
		uint8_t root[32];
		mth(leaves, n, root);
		ota_cose_sign1 m;
		assert_ota(ota_cose_sign1_decode(ota_bytes_make(out[0], lens[0]), NULL, &m, NULL), OTA_OK);
		m.payload = ota_bytes_make(root, 32);
		assert_ota(ota_cose_sign1_check(&m, w->base.verifier_key, ota_bytes_make(NULL, 0),
		                                NULL),
		           OTA_OK);
		/* a generic COSE verifier does not take the batch form */
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(out[0], lens[0]),
		                                 w->base.verifier_key, NULL, NULL, NULL),
		           OTA_ERR_SIG_INVALID);
		free_all(out, n);
	}
	/* limits */
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, 0, out, lens, NULL),
	           OTA_ERR_USAGE);
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, OTA_ACCEPTANCE_MAX_BATCH + 1,
	                                      out, lens, NULL),
	           OTA_ERR_USAGE);
}

static void test_salt(void **state)
{
	world *w = *state;
	uint8_t *a[2], *b[2];
	size_t al[2], bl[2];
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, 2, a, al, NULL), OTA_OK);
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, 2, b, bl, NULL), OTA_OK);
	parts pa, pb;
	split(a[0], al[0], &pa);
	split(b[0], bl[0], &pb);
	/* same admission, other salt: other leaf */
	assert_int_equal(pa.payload_len, pb.payload_len);
	assert_memory_not_equal(pa.payload, pb.payload, pa.payload_len);
	/* the salt is what a sibling's proof does not reveal: leaf 1's proof
	 * holds leaf 0's hash, yet leaf 0 with any other salt is refused */
	ota_error e;
	memset(pa.payload + pa.payload_len - OTA_ACCEPTANCE_SALT_BYTES, 0, OTA_ACCEPTANCE_SALT_BYTES);
	assert_ota(verify_parts(w, &pa, pa.proof, pa.proof_len, &e), OTA_ERR_SIG_INVALID);
	free_all(a, 2);
	free_all(b, 2);
}

static void test_tamper(void **state)
{
	world *w = *state;
	enum { N = 7 };
	uint8_t *out[N];
	size_t lens[N];
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, N, out, lens, NULL), OTA_OK);
	/* every tampered form below is also tried through a cache that has
	 * verified this batch's signature: it must refuse the same ones */
	ota_acceptance_cache_free(w->cache);
	w->cache = ota_acceptance_cache_new();
	assert_non_null(w->cache);
	for (int i = 0; i < N; i++) {
		ota_acceptance ca;
		assert_ota(ota_acceptance_verify_cached(ota_bytes_make(out[i], lens[i]),
		                                        w->base.root, NOW, w->cache, &ca, NULL),
		           OTA_OK);
	}
	parts p, q;
	split(out[2], lens[2], &p);
	split(out[5], lens[5], &q);
	uint64_t size = 0, index = 0;
	uint8_t path[64][32];
	size_t np = path_of(&p, &size, &index, path);
	assert_int_equal(np, 3);
	ota_error e;
	size_t pl = 0;
	uint8_t *pr = NULL;

	/* as built */
	assert_ota(verify_parts(w, &p, p.proof, p.proof_len, &e), OTA_OK);
	/* a byte of the payload (inside the boundary text) */
	parts t = p;
	uint8_t *at = memmem(t.payload, t.payload_len, "boundary-0002", 13);
	assert_non_null(at);
	at[12] = '3';
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_SIG_INVALID);
	/* a bit of each path hash */
	for (size_t i = 0; i < np; i++) {
		uint8_t bad[64][32];
		memcpy(bad, path, sizeof bad);
		bad[i][7] ^= 0x10;
		pr = proof_of(size, index, bad, np, &pl);
		assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_SIG_INVALID);
		free(pr);
	}
	/* the proof of another leaf with this payload, and this proof with
	 * another payload */
	assert_ota(verify_parts(w, &p, q.proof, q.proof_len, &e), OTA_ERR_SIG_INVALID);
	assert_ota(verify_parts(w, &q, p.proof, p.proof_len, &e), OTA_ERR_SIG_INVALID);
	/* another index with the same path length */
	pr = proof_of(size, 3, path, np, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_SIG_INVALID);
	free(pr);
	/* index at or past the tree size */
	pr = proof_of(size, size, path, np, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "leaf index"));
	free(pr);
	/* tree sizes 0, larger (same path length: another root), too large */
	pr = proof_of(0, 0, path, np, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	free(pr);
	pr = proof_of(8, index, path, np, &pl); /* folds to the same root: the size is signed */
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "signed tree_size"));
	free(pr);
	pr = proof_of(OTA_ACCEPTANCE_MAX_BATCH + 1, index, path, np, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	free(pr);
	/* exact path length: one more, one less, none */
	memcpy(path[np], path[0], 32);
	pr = proof_of(size, index, path, np + 1, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "longer"));
	free(pr);
	pr = proof_of(size, index, path, np - 1, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "shorter"));
	free(pr);
	pr = proof_of(size, index, path, 0, &pl);
	assert_ota(verify_parts(w, &p, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	free(pr);
	/* proof shapes: trailing byte, a 31-byte hash, not an array, two
	 * proofs, no proof at all */
	uint8_t buf[1100];
	memcpy(buf, p.proof, p.proof_len);
	buf[p.proof_len] = 0x00;
	assert_ota(verify_parts(w, &p, buf, p.proof_len + 1, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	{
		ota_cbor_wr x = {0};
		ota_cbor_head(&x, 4, 3);
		ota_cbor_head(&x, 0, size);
		ota_cbor_head(&x, 0, index);
		ota_cbor_head(&x, 4, np);
		ota_cbor_bstr(&x, path[0], 31);
		for (size_t i = 1; i < np; i++)
			ota_cbor_bstr(&x, path[i], 32);
		assert_ota(verify_parts(w, &p, x.p, x.len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
		free(x.p);
	}
	{
		ota_cbor_wr x = {0};
		ota_cbor_head(&x, 5, 0);
		assert_ota(verify_parts(w, &p, x.p, x.len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
		free(x.p);
	}
	{
		/* [proof, proof] */
		ota_cbor_wr x = {0};
		ota_cbor_head(&x, 6, 18);
		ota_cbor_head(&x, 4, 4);
		ota_cbor_bstr(&x, p.prot, p.prot_len);
		ota_cbor_head(&x, 5, 1);
		ota_cbor_head(&x, 0, 396);
		ota_cbor_head(&x, 5, 1);
		ota_cbor_int(&x, -1);
		ota_cbor_head(&x, 4, 2);
		ota_cbor_bstr(&x, p.proof, p.proof_len);
		ota_cbor_bstr(&x, p.proof, p.proof_len);
		ota_cbor_bstr(&x, p.payload, p.payload_len);
		ota_cbor_bstr(&x, p.sig, p.sig_len);
		ota_acceptance a;
		assert_ota(ota_acceptance_verify(ota_bytes_make(x.p, x.len), w->base.root, NOW, &a,
		                                 &e),
		           OTA_ERR_ACCEPTANCE_MALFORMED);
		free(x.p);
	}
	assert_ota(verify_parts(w, &p, NULL, 0, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	/* the protected header ends with 395: 1, "tree_size": 7 */
	t = p;
	assert_memory_equal(t.prot + t.prot_len - 15, "\x19\x01\x8b\x01\x69tree_size\x07", 15);
	/* vds other than 1 */
	t.prot[t.prot_len - 12] = 0x02;
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "vds"));
	/* another signed size: the proof differs from it; both changed: the
	 * signature (over the protected header) fails */
	t = p;
	t.prot[t.prot_len - 1] = 0x08;
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	pr = proof_of(8, index, path, np, &pl);
	assert_ota(verify_parts(w, &t, pr, pl, &e), OTA_ERR_SIG_INVALID);
	free(pr);
	t.prot[t.prot_len - 1] = 0x00;
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	/* no tree_size: the map says 3 labels, the last one dropped */
	t = p;
	t.prot[0] = 0xa3;
	t.prot_len -= 11;
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "go together"));
	free_all(out, N);
}

/* An interior node's two children passed off as a leaf: the leaf and node
 * hashes are domain-separated (0x00 / 0x01), so the tree of two leaves
 * does not sign a one-leaf tree of their concatenation. */
static void test_domain_separation(void **state)
{
	world *w = *state;
	uint8_t *out[2];
	size_t lens[2];
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, 2, out, lens, NULL), OTA_OK);
	parts a, b;
	split(out[0], lens[0], &a);
	split(out[1], lens[1], &b);
	parts t = a;
	leaf(a.payload, a.payload_len, t.payload);
	leaf(b.payload, b.payload_len, t.payload + 32);
	t.payload_len = 64;
	size_t pl = 0;
	ota_error e;
	/* as a tree of one: refused, the signed size is 2 */
	uint8_t *pr = proof_of(1, 0, NULL, 0, &pl);
	assert_ota(verify_parts(w, &t, pr, pl, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	free(pr);
	/* as either leaf of the tree of two, with the other leaf's hash */
	uint8_t sib[1][32];
	memcpy(sib[0], t.payload + 32, 32);
	pr = proof_of(2, 0, sib, 1, &pl);
	assert_ota(verify_parts(w, &t, pr, pl, &e), OTA_ERR_SIG_INVALID);
	free(pr);
	memcpy(sib[0], t.payload, 32);
	pr = proof_of(2, 1, sib, 1, &pl);
	assert_ota(verify_parts(w, &t, pr, pl, &e), OTA_ERR_SIG_INVALID);
	free(pr);
	/* the root is H(0x01 || h0 || h1); the "leaf" h0 || h1 hashes to
	 * H(0x00 || h0 || h1), never the same */
	uint8_t node[32], asleaf[32], buf[65];
	buf[0] = 0x01;
	memcpy(buf + 1, t.payload, 64);
	assert_ota(ota_sha256(ota_bytes_make(buf, sizeof buf), node), OTA_OK);
	leaf(t.payload, 64, asleaf);
	assert_memory_not_equal(node, asleaf, 32);
	free_all(out, 2);
}

/* The forms are strict: a batch payload needs its salt, a single-form
 * payload may not carry one, and a proof needs vds. */
static void test_forms(void **state)
{
	world *w = *state;
	uint8_t *out[1];
	size_t lens[1];
	assert_ota(ota_acceptance_build_batch(&w->base.signer, w->ptr, 1, out, lens, NULL), OTA_OK);
	parts p;
	split(out[0], lens[0], &p);
	/* the single form of the same admission: its 13-claim payload */
	uint8_t *single = NULL;
	size_t sl = 0;
	ota_error e = {0};
	assert_ota(ota_acceptance_build(&w->base.signer, &w->adm[0], &single, &sl, &e), OTA_OK);
	ota_acceptance acc;
	assert_ota(ota_acceptance_verify(ota_bytes_make(single, sl), w->base.root, NOW, &acc, &e),
	           OTA_OK);
	ota_cose_sign1 sm;
	assert_ota(ota_cose_sign1_decode(ota_bytes_make(single, sl), NULL, &sm, NULL), OTA_OK);
	/* batch form, 13 claims, correctly signed (tree of one) */
	parts t = p;
	memcpy(t.payload, sm.payload.ptr, sm.payload.len);
	t.payload_len = sm.payload.len;
	uint8_t root[32];
	leaf(t.payload, t.payload_len, root);
	sign_root(w, t.prot, t.prot_len, root, t.sig, &t.sig_len);
	assert_ota(verify_parts(w, &t, t.proof, t.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "14 claims"));
	/* single form with the salted payload, correctly signed */
	uint8_t *m = NULL;
	size_t ml = 0;
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	assert_ota(ota_cose_sign1_sign(w->base.verifier_key,
	                               ota_bytes_make(p.payload, p.payload_len), &so, &m, &ml, &e),
	           OTA_OK);
	assert_ota(ota_acceptance_verify(ota_bytes_make(m, ml), w->base.root, NOW, &acc, &e),
	           OTA_ERR_ACCEPTANCE_MALFORMED);
	free(m);
	/* a proof in the single form (no vds) */
	ota_cose_sign1 bm;
	assert_ota(ota_cose_sign1_decode(ota_bytes_make(single, sl), NULL, &bm, NULL), OTA_OK);
	t = p;
	memcpy(t.prot, bm.protected_bytes.ptr, bm.protected_bytes.len);
	t.prot_len = bm.protected_bytes.len;
	memcpy(t.payload, bm.payload.ptr, bm.payload.len);
	t.payload_len = bm.payload.len;
	memcpy(t.sig, bm.signature.ptr, bm.signature.len);
	t.sig_len = bm.signature.len;
	assert_ota(verify_parts(w, &t, NULL, 0, &e), OTA_OK); /* the single form itself */
	assert_ota(verify_parts(w, &t, p.proof, p.proof_len, &e), OTA_ERR_ACCEPTANCE_MALFORMED);
	assert_non_null(strstr(e.what, "without vds"));
	free(single);
	free_all(out, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_salt),
		cmocka_unit_test(test_tamper),
		cmocka_unit_test(test_domain_separation),
		cmocka_unit_test(test_forms),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
