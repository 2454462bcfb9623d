/*
 * verify/admission_acceptance.c - verification and strict parsing of
 * acceptance records (include/ota/acceptance.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_cbor.h"
#include "ota/acceptance.h"
#include "ota/cose.h"

static ota_err malformed(ota_error *err, const char *where, const char *what)
{
	return ota_error_set(err, OTA_ERR_ACCEPTANCE_MALFORMED, where, "%s", what);
}

/* The payload's claims, in the order of the k of parse_payload. */
static const char *const claim_names[14] = {
	"iss",    "iat", "eat_nonce", "kind",  "result",     "attestation", "challenge",
	"issuer", "txn", "boundary",  "prior", "trust_root", "verifier",    "salt",
};

/* The payload: 13 claims, or 14 (the last key "salt", 16 bytes) in the
 * batch form, each exactly once; "result" is "accepted"; "verifier" is
 * exactly {"id", "version", "kid"}, each once, its id equal to iss. */
static ota_err parse_payload(ota_bytes p, bool batch, ota_acceptance *a, ota_error *err)
{
	const uint64_t want = batch ? 14 : 13;
	rd r = {p.ptr, p.len, 0};
	unsigned mt = 0;
	uint64_t n = 0, kv = 0;
	ota_error sub;
	ota_error_clear(&sub);
	if (rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 5 || n != want)
		return malformed(err, "acceptance",
		                 batch ? "payload is not a map of 14 claims (batch form)"
		                       : "payload is not a map of 13 claims");
	uint32_t seen = 0;
	char vid[OTA_ATT_TEXT_MAX + 1] = ""; /* verifier.id, compared with iss at the end */
	for (uint64_t i = 0; i < n; i++) {
		char key[32] = "";
		int k = -1;
		if (rd_head(&r, &mt, &kv, &sub) != OTA_OK)
			return malformed(err, "acceptance", sub.what);
		if (mt == 0) {
			k = kv == 1 ? 0 : kv == 6 ? 1 : kv == 10 ? 2 : -1;
		} else if (mt == 3) {
			ota_bytes t = {NULL, 0};
			if (rd_span(&r, kv, &t, &sub) != OTA_OK || t.len >= sizeof key)
				return malformed(err, "acceptance", "claim key");
			memcpy(key, t.ptr, t.len);
			static const char *const names[] = {"kind", "result", "attestation", "challenge",
			                                    "issuer", "txn", "boundary", "prior",
			                                    "trust_root", "verifier", "salt"};
			for (int j = 0; j < (batch ? 11 : 10); j++)
				if (strcmp(key, names[j]) == 0)
					k = 3 + j;
		}
		if (k < 0)
			return malformed(err, "acceptance", "unknown claim");
		if (seen & (1u << k))
			return malformed(err, claim_names[k], "claim twice");
		seen |= 1u << k;
		ota_err e = OTA_OK;
		char kind[32];
		switch (k) {
		case 0: e = rd_text(&r, "iss", a->verifier_id, sizeof a->verifier_id, true, &sub); break;
		case 1: e = rd_uint(&r, "iat", &a->accepted_at, &sub); break;
		case 2: e = rd_bstr(&r, "eat_nonce", a->nonce, OTA_NONCE_MIN_BYTES, OTA_NONCE_MAX_BYTES,
		                    &a->nonce_len, &sub); break;
		case 3:
			e = rd_text(&r, "kind", kind, sizeof kind, true, &sub);
			if (e == OTA_OK && strcmp(kind, "acceptance") != 0)
				return malformed(err, "kind", "not an acceptance");
			break;
		case 4:
			e = rd_text(&r, "result", a->result, sizeof a->result, true, &sub);
			if (e == OTA_OK && strcmp(a->result, "accepted") != 0)
				return malformed(err, "result", "not \"accepted\"");
			break;
		case 5: e = rd_id(&r, "attestation", a->attestation, sizeof a->attestation, &sub); break;
		case 6: e = rd_id(&r, "challenge", a->challenge, sizeof a->challenge, &sub); break;
		case 7: e = rd_text(&r, "issuer", a->issuer, sizeof a->issuer, true, &sub); break;
		case 8: e = rd_text(&r, "txn", a->txn, sizeof a->txn, true, &sub); break;
		case 9: e = rd_text(&r, "boundary", a->boundary, sizeof a->boundary, true, &sub); break;
		case 10:
			if (r.off < r.len && r.p[r.off] == 0xf6)
				r.off++;
			else
				e = rd_id(&r, "prior", a->prior, sizeof a->prior, &sub);
			break;
		case 11: e = rd_id(&r, "trust_root", a->trust_root, sizeof a->trust_root, &sub); break;
		case 12: {
			/* exactly {"id", "version", "kid"}, each once */
			static const char *const vnames[3] = {"id", "version", "kid"};
			uint64_t m = 0;
			if (rd_head(&r, &mt, &m, &sub) != OTA_OK || mt != 5 || m != 3)
				return malformed(err, "verifier", "must be a map of id, version, kid");
			size_t kl = 0;
			unsigned vseen = 0;
			for (int j = 0; j < 3 && e == OTA_OK; j++) {
				if ((e = rd_text(&r, "verifier", key, sizeof key, true, &sub)) != OTA_OK)
					break;
				int f = 0;
				while (f < 3 && strcmp(key, vnames[f]) != 0)
					f++;
				if (f == 3)
					return malformed(err, "verifier", "unknown member");
				if (vseen & (1u << f))
					return ota_error_set(err, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier",
					                     "member %s twice", vnames[f]);
				vseen |= 1u << f;
				if (f == 0)
					e = rd_text(&r, "verifier.id", vid, sizeof vid, true, &sub);
				else if (f == 1)
					e = rd_text(&r, "verifier.version", a->verifier_version,
					            sizeof a->verifier_version, true, &sub);
				else
					e = rd_bstr(&r, "verifier.kid", a->verifier_kid, 32, 32, &kl, &sub);
			}
			if (e != OTA_OK)
				break;
			for (int f = 0; f < 3; f++)
				if (!(vseen & (1u << f)))
					return ota_error_set(err, OTA_ERR_ACCEPTANCE_MALFORMED, "verifier",
					                     "member %s missing", vnames[f]);
			break;
		}
		case 13: {
			uint8_t salt[OTA_ACCEPTANCE_SALT_BYTES];
			size_t sl = 0;
			e = rd_bstr(&r, "salt", salt, OTA_ACCEPTANCE_SALT_BYTES, OTA_ACCEPTANCE_SALT_BYTES,
			            &sl, &sub);
			break;
		}
		default: break;
		}
		if (e != OTA_OK)
			return malformed(err, sub.where, sub.what);
	}
	if (r.off != r.len)
		return malformed(err, "acceptance", "trailing bytes");
	for (int k = 0; k < (int)want; k++)
		if (!(seen & (1u << k)))
			return malformed(err, claim_names[k], "claim missing");
	if (strcmp(vid, a->verifier_id) != 0)
		return malformed(err, "verifier", "id differs from iss");
	return OTA_OK;
}

/* ---- the batch form ---- */

/* Whether the protected header declares the RFC 9162 tree (label 395,
 * value 1; any other value is refused) and the signed tree size (label
 * "tree_size", required with 395 and only with it). */
static ota_err protected_vds(ota_bytes prot, bool *batch, uint64_t *tree_size, ota_error *err)
{
	rd r = {prot.ptr, prot.len, 0};
	unsigned mt = 0;
	uint64_t n = 0, v = 0;
	ota_error sub;
	ota_error_clear(&sub);
	*batch = false;
	*tree_size = 0;
	bool has_size = false;
	if (rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 5)
		return malformed(err, "protected", "not a map");
	for (uint64_t i = 0; i < n; i++) {
		if (rd_head(&r, &mt, &v, &sub) != OTA_OK)
			return malformed(err, "protected", sub.what);
		bool vds = mt == 0 && v == OTA_COSE_HEADER_VDS, size = false;
		if (mt == 3) {
			ota_bytes t;
			if (rd_span(&r, v, &t, &sub) != OTA_OK)
				return malformed(err, "protected", sub.what);
			size = t.len == strlen(OTA_COSE_HEADER_TREE_SIZE) &&
			       memcmp(t.ptr, OTA_COSE_HEADER_TREE_SIZE, t.len) == 0;
		} else if (mt != 0 && mt != 1) {
			return malformed(err, "protected", "label type");
		}
		if (vds) {
			if (rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 0 || v != OTA_VDS_RFC9162_SHA256)
				return malformed(err, "protected", "vds (395) is not 1 (RFC9162_SHA256)");
			*batch = true;
		} else if (size) {
			if (rd_head(&r, &mt, tree_size, &sub) != OTA_OK || mt != 0 || *tree_size == 0 ||
			    *tree_size > OTA_ACCEPTANCE_MAX_BATCH)
				return malformed(err, "protected", "tree_size out of range");
			has_size = true;
		} else if (rd_skip(&r, 0, &sub) != OTA_OK) {
			return malformed(err, "protected", sub.what);
		}
	}
	if (*batch != has_size)
		return malformed(err, "protected", "vds (395) and tree_size go together");
	return OTA_OK;
}

/*
 * The unprotected header of a message the strict decoder accepted (tag 18
 * [protected, unprotected, payload, signature]). Single form: no 396.
 * Batch form: exactly {396: {-1: [bstr]}}; *proof is that bstr.
 */
static ota_err unprotected_proof(ota_bytes cose, bool batch, ota_bytes *proof, ota_error *err)
{
	rd r = {cose.ptr, cose.len, 0};
	unsigned mt = 0;
	uint64_t n = 0, v = 0;
	ota_bytes t = {NULL, 0};
	ota_error sub;
	ota_error_clear(&sub);
	if (rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 6 || v != OTA_COSE_SIGN1_TAG ||
	    rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 4 || v != 4 ||
	    rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 2 || rd_span(&r, v, &t, &sub) != OTA_OK ||
	    rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 5)
		return malformed(err, "acceptance", "not a tagged COSE_Sign1");
	if (!batch) {
		for (uint64_t i = 0; i < n; i++) {
			if (rd_head(&r, &mt, &v, &sub) != OTA_OK)
				return malformed(err, "unprotected", sub.what);
			if (mt == 0 && v == OTA_COSE_HEADER_VDP)
				return malformed(err, "unprotected",
				                 "an inclusion proof (396) without vds (395) protected");
			if (mt == 3 && rd_span(&r, v, &t, &sub) != OTA_OK)
				return malformed(err, "unprotected", sub.what);
			if (rd_skip(&r, 0, &sub) != OTA_OK)
				return malformed(err, "unprotected", sub.what);
		}
		return OTA_OK;
	}
	if (n != 1 || rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 0 || v != OTA_COSE_HEADER_VDP)
		return malformed(err, "unprotected", "the batch form's unprotected header is {396: ...}");
	if (rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 5 || v != 1 ||
	    rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 1 || v != 0 ||
	    rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 4 || v != 1 ||
	    rd_head(&r, &mt, &v, &sub) != OTA_OK || mt != 2 || rd_span(&r, v, proof, &sub) != OTA_OK)
		return malformed(err, "unprotected", "vdp (396) is not {-1: [one inclusion proof]}");
	return OTA_OK;
}

static ota_err hash2(uint8_t prefix, const uint8_t *a, size_t al, const uint8_t *b, size_t bl,
                     uint8_t out[32])
{
	uint8_t buf[65];
	if (1 + al + bl > sizeof buf)
		return OTA_ERR_INTERNAL;
	buf[0] = prefix;
	memcpy(buf + 1, a, al);
	memcpy(buf + 1 + al, b, bl);
	return ota_sha256(ota_bytes_make(buf, 1 + al + bl), out);
}

/*
 * proof = [tree_size, leaf_index, [path: bstr 32...]] (shortest heads, no
 * trailing bytes); folds the leaf hash of payload to *root (RFC 9162
 * section 2.1.3.2: a path of the wrong length for its tree is refused).
 */
static ota_err fold_proof(ota_bytes proof, uint64_t signed_size, ota_bytes payload,
                          uint8_t root[32], ota_error *err)
{
	rd r = {proof.ptr, proof.len, 0};
	unsigned mt = 0;
	uint64_t n = 0, size = 0, index = 0, np = 0;
	ota_error sub;
	ota_error_clear(&sub);
	if (rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 4 || n != 3 ||
	    rd_head(&r, &mt, &size, &sub) != OTA_OK || mt != 0 ||
	    rd_head(&r, &mt, &index, &sub) != OTA_OK || mt != 0 ||
	    rd_head(&r, &mt, &np, &sub) != OTA_OK || mt != 4)
		return malformed(err, "inclusion_proof", "not [tree_size, leaf_index, [path]]");
	if (size == 0 || size > OTA_ACCEPTANCE_MAX_BATCH)
		return malformed(err, "inclusion_proof", "tree size out of range");
	if (size != signed_size)
		return malformed(err, "inclusion_proof", "tree size differs from the signed tree_size");
	if (index >= size)
		return malformed(err, "inclusion_proof", "leaf index not below the tree size");
	if (np > 64)
		return malformed(err, "inclusion_proof", "path too long");
	/* the leaf hash: 0x00 || payload */
	uint8_t *lb = malloc(payload.len + 1);
	if (lb == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "leaf");
	lb[0] = 0x00;
	memcpy(lb + 1, payload.ptr, payload.len);
	ota_err e = ota_sha256(ota_bytes_make(lb, payload.len + 1), root);
	free(lb);
	if (e != OTA_OK)
		return ota_error_set(err, e, "acceptance", "leaf hash");
	uint64_t fn = index, sn = size - 1;
	for (uint64_t i = 0; i < np; i++) {
		ota_bytes p;
		if (rd_head(&r, &mt, &n, &sub) != OTA_OK || mt != 2 || n != 32 ||
		    rd_span(&r, n, &p, &sub) != OTA_OK)
			return malformed(err, "inclusion_proof", "path entries are 32-byte hashes");
		if (sn == 0)
			return malformed(err, "inclusion_proof", "path longer than its tree");
		uint8_t t[32];
		if ((fn & 1u) == 1u || fn == sn) {
			e = hash2(0x01, p.ptr, 32, root, 32, t);
			if ((fn & 1u) == 0)
				while ((fn & 1u) == 0 && fn != 0) {
					fn >>= 1;
					sn >>= 1;
				}
		} else {
			e = hash2(0x01, root, 32, p.ptr, 32, t);
		}
		if (e != OTA_OK)
			return ota_error_set(err, e, "acceptance", "node hash");
		memcpy(root, t, 32);
		fn >>= 1;
		sn >>= 1;
	}
	if (sn != 0)
		return malformed(err, "inclusion_proof", "path shorter than its tree");
	if (r.off != r.len)
		return malformed(err, "inclusion_proof", "trailing bytes");
	return OTA_OK;
}

/* ---- batch signatures already verified ---- */

#define CACHE_SLOTS 2048u /* open addressing, at most half full */
#define CACHE_MAX 1024u

typedef struct {
	const ota_key *key;
	uint8_t root[32];
	uint8_t sig[132];
	size_t sig_len;
	uint8_t *prot;
	size_t prot_len;
} cache_entry;

struct ota_acceptance_cache {
	cache_entry slot[CACHE_SLOTS];
	size_t n;
};

ota_acceptance_cache *ota_acceptance_cache_new(void)
{
	return calloc(1, sizeof(ota_acceptance_cache));
}

static void cache_clear(ota_acceptance_cache *c)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		free(c->slot[i].prot);
		c->slot[i] = (cache_entry){0};
	}
	c->n = 0;
}

void ota_acceptance_cache_free(ota_acceptance_cache *c)
{
	if (c == NULL)
		return;
	cache_clear(c);
	free(c);
}

/* The slot of (key, root, signature): the root is a SHA-256, well mixed. */
static size_t cache_home(const uint8_t root[32])
{
	size_t h = 0;
	memcpy(&h, root, sizeof h);
	return h % CACHE_SLOTS;
}

static bool cache_same(const cache_entry *e, const ota_key *key, const uint8_t root[32],
                       ota_bytes sig, ota_bytes prot)
{
	return e->key == key && memcmp(e->root, root, 32) == 0 && e->sig_len == sig.len &&
	       memcmp(e->sig, sig.ptr, sig.len) == 0 && e->prot_len == prot.len &&
	       memcmp(e->prot, prot.ptr, prot.len) == 0;
}

static bool cache_has(const ota_acceptance_cache *c, const ota_key *key, const uint8_t root[32],
                      ota_bytes sig, ota_bytes prot)
{
	for (size_t i = cache_home(root), k = 0; k < CACHE_SLOTS; i = (i + 1) % CACHE_SLOTS, k++) {
		const cache_entry *e = &c->slot[i];
		if (e->key == NULL)
			return false;
		if (cache_same(e, key, root, sig, prot))
			return true;
	}
	return false;
}

static void cache_put(ota_acceptance_cache *c, const ota_key *key, const uint8_t root[32],
                      ota_bytes sig, ota_bytes prot)
{
	if (sig.len > sizeof c->slot[0].sig)
		return;
	if (c->n >= CACHE_MAX)
		cache_clear(c); /* forget, verify again: never wrong, only slower */
	uint8_t *pc = malloc(prot.len ? prot.len : 1);
	if (pc == NULL)
		return;
	memcpy(pc, prot.ptr, prot.len);
	size_t i = cache_home(root);
	while (c->slot[i].key != NULL)
		i = (i + 1) % CACHE_SLOTS;
	cache_entry *e = &c->slot[i];
	e->key = key;
	memcpy(e->root, root, 32);
	memcpy(e->sig, sig.ptr, sig.len);
	e->sig_len = sig.len;
	e->prot = pc;
	e->prot_len = prot.len;
	c->n++;
}

ota_err ota_acceptance_verify(ota_bytes cose, const ota_trust_root *root, int64_t at,
                              ota_acceptance *out, ota_error *err)
{
	return ota_acceptance_verify_cached(cose, root, at, NULL, out, err);
}

ota_err ota_acceptance_verify_cached(ota_bytes cose, const ota_trust_root *root, int64_t at,
                                     ota_acceptance_cache *cache, ota_acceptance *out,
                                     ota_error *err)
{
	ota_err e;
	if (out == NULL || root == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no output or trust root");
	memset(out, 0, sizeof *out);
	ota_cose_sign1 m;
	if ((e = ota_cose_sign1_decode(cose, NULL, &m, err)) != OTA_OK)
		return e;
	bool batch = false;
	uint64_t tree_size = 0;
	ota_bytes proof = {NULL, 0};
	if ((e = protected_vds(m.protected_bytes, &batch, &tree_size, err)) != OTA_OK ||
	    (e = unprotected_proof(cose, batch, &proof, err)) != OTA_OK)
		return e;
	/* one form, as the endpoint signs it, so that nobody without the key
	 * can give an acceptance other bytes (another identity): kid
	 * protected, nothing else unprotected (the batch form's proof is
	 * checked above), the ECDSA signature low-S (below) */
	if (m.kid.len == 0 || !m.kid_protected)
		return malformed(err, "kid", "an acceptance names its key by kid in the protected header");
	if (!batch && m.unprotected_labels != 0)
		return malformed(err, "unprotected", "the single form's unprotected header is empty");
	if (ota_key_sig_is_high_s(m.alg, m.signature))
		return malformed(err, "signature",
		                 "ECDSA s is above n/2; the endpoint signs in low-S form");
	const ota_key *key = NULL;
	const ota_trust_principal *who = NULL;
	if ((e = ota_trust_lookup(root, m.kid, m.alg, OTA_TRUST_ROLE_VERIFIER, NULL, at, &key, &who,
	                          err)) != OTA_OK)
		return e;
	if (batch) {
		/* the signature is over the tree's root, which the proof
		 * derives from this payload */
		uint8_t tree_root[32];
		if ((e = fold_proof(proof, tree_size, m.payload, tree_root, err)) != OTA_OK)
			return e;
		ota_cose_sign1 signed_root = m;
		signed_root.payload = ota_bytes_make(tree_root, sizeof tree_root);
		if (cache == NULL ||
		    !cache_has(cache, key, tree_root, m.signature, m.protected_bytes)) {
			if ((e = ota_cose_sign1_check(&signed_root, key, ota_bytes_make(NULL, 0),
			                              err)) != OTA_OK)
				return e;
			if (cache != NULL)
				cache_put(cache, key, tree_root, m.signature, m.protected_bytes);
		}
	} else if ((e = ota_cose_sign1_check(&m, key, ota_bytes_make(NULL, 0), err)) != OTA_OK) {
		return e;
	}
	if ((e = parse_payload(m.payload, batch, out, err)) != OTA_OK)
		goto out_clear;
	if (strcmp(ota_trust_principal_id(who), out->verifier_id) != 0 ||
	    memcmp(out->verifier_kid, m.kid.ptr, 32) != 0) {
		e = malformed(err, "iss", "signed by another verifier than it names");
		goto out_clear;
	}
	return OTA_OK;
out_clear:
	memset(out, 0, sizeof *out);
	return e;
}
