/*
 * verify/admission_claims.c - strict parser and deterministic encoder of
 * attestation payloads (a CBOR map of CWT/EAT and text claims). A small
 * allocation-free reader: libcbor 0.8 accepts duplicate map keys silently.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"
#include "ota/cbor.h"
#include "ota/json.h"
#include "admission_cbor.h"


#define W "attestation"

ota_err bad(ota_error *err, ota_err code, const rd *r, const char *what)
{
	char where[64];
	snprintf(where, sizeof where, "payload@%zu", r->off);
	return ota_error_set(err, code, where, "%s", what);
}

/* One definite, shortest-form head. Major 7 heads report their simple
 * value / float bits in arg. */
ota_err rd_head(rd *r, unsigned *mt, uint64_t *arg, ota_error *err)
{
	if (r->off >= r->len)
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "truncated CBOR");
	uint8_t ib = r->p[r->off];
	unsigned ai = ib & 0x1fu;
	*mt = ib >> 5;
	size_t n;
	if (ai < 24)
		n = 0;
	else if (ai <= 27)
		n = (size_t)1 << (ai - 24);
	else if (ai == 31)
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "indefinite length");
	else
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "reserved additional information");
	if (r->len - r->off - 1 < n)
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "truncated CBOR head");
	uint64_t v = ai < 24 ? ai : 0;
	for (size_t i = 0; i < n; i++)
		v = (v << 8) | r->p[r->off + 1 + i];
	if (*mt != 7 && n > 0) {
		uint64_t min = n == 1 ? 24 : n == 2 ? 0x100 : n == 4 ? 0x10000 : 0x100000000ull;
		if (v < min)
			return bad(err, OTA_ERR_ATT_MALFORMED, r, "non-shortest CBOR head");
	}
	if (*mt == 7 && ai == 24 && v < 32)
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "invalid simple value");
	r->off += 1 + n;
	*arg = v;
	return OTA_OK;
}

ota_err rd_span(rd *r, uint64_t n, ota_bytes *out, ota_error *err)
{
	if (n > r->len - r->off)
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "string runs past the end");
	*out = ota_bytes_make(r->p + r->off, (size_t)n);
	r->off += (size_t)n;
	return OTA_OK;
}

bool utf8_ok(ota_bytes s)
{
	uint32_t cp;
	for (size_t i = 0; i < s.len;) {
		size_t k = ota_utf8_next(s.ptr + i, s.len - i, &cp);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* ---- one item (a body, a header value): valid deterministic CBOR ---- */

/* Whether single-precision bits f name a value that half precision holds
 * exactly (infinities and zeros included; not NaN). */
static bool single_fits_half(uint32_t f)
{
	uint32_t exp = (f >> 23) & 0xffu, mant = f & 0x7fffffu;
	if (exp == 0xffu)
		return mant == 0; /* infinity */
	if (exp == 0)
		return mant == 0; /* zero; single subnormals are far below half's range */
	int e = (int)exp - 127;
	if (e >= -14 && e <= 15) /* a half normal: 10 mantissa bits */
		return (mant & 0x1fffu) == 0;
	if (e >= -24 && e < -14) { /* a half subnormal: k * 2^-24, k < 1024 */
		uint32_t sig = mant | 0x800000u;
		unsigned shift = (unsigned)(-(e + 1)); /* 14..23 */
		return (sig & ((1u << shift) - 1u)) == 0;
	}
	return false;
}

/* Whether double-precision bits d name a value that single precision
 * holds exactly (infinities and zeros included; not NaN). */
static bool double_fits_single(uint64_t d)
{
	uint64_t exp = (d >> 52) & 0x7ffu, mant = d & 0xfffffffffffffull;
	if (exp == 0x7ffu)
		return mant == 0;
	if (exp == 0)
		return mant == 0;
	int e = (int)exp - 1023;
	if (e >= -126 && e <= 127) /* a single normal: 23 mantissa bits */
		return (mant & 0x1fffffffull) == 0;
	if (e >= -149 && e < -126) { /* a single subnormal: k * 2^-149 */
		uint64_t sig = mant | 0x10000000000000ull;
		unsigned shift = (unsigned)(-(e + 97)); /* 30..52 */
		return (sig & ((1ull << shift) - 1u)) == 0;
	}
	return false;
}

/* A float head (additional information ai 25, 26 or 27, bits v) in the
 * deterministic form of RFC 8949 section 4.2.1 (the shortest of half,
 * single and double that keeps the value; section 4.2.2: NaN only as the
 * half f97e00). */
static ota_err float_check(unsigned ai, uint64_t v, const rd *r, ota_error *err)
{
	bool nan;
	if (ai == 25)
		nan = ((v >> 10) & 0x1fu) == 0x1fu && (v & 0x3ffu) != 0;
	else if (ai == 26)
		nan = ((v >> 23) & 0xffu) == 0xffu && (v & 0x7fffffu) != 0;
	else
		nan = ((v >> 52) & 0x7ffu) == 0x7ffu && (v & 0xfffffffffffffull) != 0;
	if (nan)
		return ai == 25 && v == 0x7e00u
			       ? OTA_OK
			       : bad(err, OTA_ERR_ATT_MALFORMED, r, "body: a NaN other than f97e00");
	if ((ai == 26 && single_fits_half((uint32_t)v)) || (ai == 27 && double_fits_single(v)))
		return bad(err, OTA_ERR_ATT_MALFORMED, r, "body: non-shortest float");
	return OTA_OK;
}

typedef struct key_span {
	const uint8_t *p;
	size_t n;
} key_span;

static int key_span_cmp(const void *a, const void *b)
{
	const key_span *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return memcmp(x->p, y->p, x->n);
}

/*
 * Skips one item (an attestation's body, a header value of an
 * acceptance), depth-capped, and refuses what is not valid deterministic
 * CBOR: besides what rd_head refuses, invalid UTF-8, a map with two equal
 * keys, at any depth (RFC 8949 section 5.6), and a float not in its
 * shortest form. With shortest heads and shortest floats, two keys are
 * equal exactly when their encodings are, so keys are compared as bytes.
 */
ota_err rd_skip(rd *r, unsigned depth, ota_error *err)
{
	if (depth > OTA_MAX_ATTESTATION_DEPTH)
		return bad(err, OTA_ERR_TOO_DEEP, r, "body nests too deep");
	size_t start = r->off;
	unsigned mt = 0;
	uint64_t v = 0;
	ota_err e = rd_head(r, &mt, &v, err);
	if (e != OTA_OK)
		return e;
	ota_bytes s = {NULL, 0};
	switch (mt) {
	case 0:
	case 1:
		return OTA_OK;
	case 2:
		return rd_span(r, v, &s, err);
	case 3:
		if ((e = rd_span(r, v, &s, err)) != OTA_OK)
			return e;
		return utf8_ok(s) ? OTA_OK : bad(err, OTA_ERR_ATT_MALFORMED, r, "invalid UTF-8");
	case 4:
		if (v > r->len - r->off)
			return bad(err, OTA_ERR_ATT_MALFORMED, r, "container longer than the input");
		for (uint64_t i = 0; i < v; i++)
			if ((e = rd_skip(r, depth + 1, err)) != OTA_OK)
				return e;
		return OTA_OK;
	case 5: {
		if (v > r->len - r->off || v * 2 > r->len - r->off)
			return bad(err, OTA_ERR_ATT_MALFORMED, r, "container longer than the input");
		if (v == 0)
			return OTA_OK;
		key_span *keys = malloc((size_t)v * sizeof *keys);
		if (keys == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "body", "map keys");
		for (uint64_t i = 0; i < v && e == OTA_OK; i++) {
			size_t k0 = r->off;
			if ((e = rd_skip(r, depth + 1, err)) != OTA_OK)
				break;
			keys[i] = (key_span){r->p + k0, r->off - k0};
			e = rd_skip(r, depth + 1, err);
		}
		if (e == OTA_OK) {
			qsort(keys, (size_t)v, sizeof *keys, key_span_cmp);
			for (uint64_t i = 1; i < v; i++)
				if (key_span_cmp(&keys[i - 1], &keys[i]) == 0) {
					rd at = {r->p, r->len, (size_t)(keys[i].p - r->p)};
					e = bad(err, OTA_ERR_ATT_MALFORMED, &at, "body: a map key twice");
					break;
				}
		}
		free(keys);
		return e;
	}
	case 6:
		return rd_skip(r, depth + 1, err);
	default: { /* 7: simple values and floats (their bytes were consumed) */
		unsigned ai = r->p[start] & 0x1fu;
		if (ai >= 25 && ai <= 27) {
			rd at = {r->p, r->len, start};
			return float_check(ai, v, &at, err);
		}
		return OTA_OK;
	}
	}
}

ota_err rd_text(rd *r, const char *claim, char *out, size_t cap, bool printable,
                       ota_error *err)
{
	unsigned mt = 0;
	uint64_t v = 0;
	ota_bytes s = {NULL, 0};
	ota_err e = rd_head(r, &mt, &v, err);
	if (e != OTA_OK)
		return e;
	if (mt != 3)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "must be a text string");
	if ((e = rd_span(r, v, &s, err)) != OTA_OK)
		return e;
	if (s.len == 0 || s.len >= cap)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "empty or longer than %zu bytes",
		                     cap - 1);
	if (!utf8_ok(s))
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "invalid UTF-8");
	for (size_t i = 0; i < s.len; i++)
		if (s.ptr[i] == 0 || (printable && (s.ptr[i] < 0x20 || s.ptr[i] == 0x7f)))
			return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "control character");
	memcpy(out, s.ptr, s.len);
	out[s.len] = '\0';
	return OTA_OK;
}

ota_err rd_uint(rd *r, const char *claim, int64_t *out, ota_error *err)
{
	unsigned mt = 0;
	uint64_t v = 0;
	ota_err e = rd_head(r, &mt, &v, err);
	if (e != OTA_OK)
		return e;
	if (mt != 0 || v > (uint64_t)INT64_MAX / 2)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim,
		                     "must be a non-negative integer (seconds)");
	*out = (int64_t)v;
	return OTA_OK;
}

ota_err rd_bstr(rd *r, const char *claim, uint8_t *out, size_t min, size_t max,
                       size_t *out_len, ota_error *err)
{
	unsigned mt = 0;
	uint64_t v = 0;
	ota_bytes s = {NULL, 0};
	ota_err e = rd_head(r, &mt, &v, err);
	if (e != OTA_OK)
		return e;
	if (mt != 2)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "must be a byte string");
	if ((e = rd_span(r, v, &s, err)) != OTA_OK)
		return e;
	if (s.len < min || s.len > max)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "%zu bytes, want %zu..%zu",
		                     s.len, min, max);
	memcpy(out, s.ptr, s.len);
	*out_len = s.len;
	return OTA_OK;
}

ota_err rd_id(rd *r, const char *claim, char *out, size_t cap, ota_error *err)
{
	ota_err e = rd_text(r, claim, out, cap, true, err);
	if (e == OTA_OK && !ota_id_is_valid(out))
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim,
		                     "must be sha256: and 64 lowercase hex digits");
	return e;
}

/* A small map of text keys to text values: names[i] -> outs[i]. */
static ota_err rd_submap(rd *r, const char *claim, const char *const *names, char **outs,
                         const size_t *caps, size_t n, bool ids, ota_error *err)
{
	unsigned mt = 0;
	uint64_t v = 0;
	ota_err e = rd_head(r, &mt, &v, err);
	if (e != OTA_OK)
		return e;
	if (mt != 5 || v == 0 || v > n)
		return ota_error_set(err, OTA_ERR_ATT_CLAIM_TYPE, claim, "must be a map of 1..%zu entries", n);
	unsigned seen = 0;
	for (uint64_t i = 0; i < v; i++) {
		char key[32];
		if ((e = rd_text(r, claim, key, sizeof key, true, err)) != OTA_OK)
			return e;
		size_t k = 0;
		while (k < n && strcmp(key, names[k]) != 0)
			k++;
		if (k == n)
			return ota_error_set(err, OTA_ERR_ATT_CLAIM_UNKNOWN, claim, "unknown member %s", key);
		if (seen & (1u << k))
			return ota_error_set(err, OTA_ERR_ATT_CLAIM_DUPLICATE, claim, "member %s twice", key);
		seen |= 1u << k;
		e = ids ? rd_id(r, names[k], outs[k], caps[k], err)
			: rd_text(r, names[k], outs[k], caps[k], true, err);
		if (e != OTA_OK)
			return e;
	}
	return OTA_OK;
}

enum {
	C_ISS,
	C_EXP,
	C_IAT,
	C_CTI,
	C_NONCE,
	C_KIND,
	C_TXN,
	C_TRUST_ROOT,
	C_PROVIDER,
	C_ADAPTER,
	C_PLATFORM,
	C_SEGMENT,
	C_POLICY,
	C_BOUNDARY,
	C_PRIOR,
	C_BODY,
	C_COUNT_
};

static const char *const claim_names[C_COUNT_] = {
	"iss", "exp", "iat", "cti", "eat_nonce", "kind", "txn", "trust_root", "provider",
	"adapter", "platform", "segment", "policy", "boundary", "prior", "body",
};

static const char *const admissible_kinds[] = {
	"capability", "initial_application", "transition", "terminal_application", "cleanup",
};

bool ota_attestation_kind_admissible(const char *kind)
{
	if (kind == NULL)
		return false;
	for (size_t i = 0; i < sizeof admissible_kinds / sizeof admissible_kinds[0]; i++)
		if (strcmp(kind, admissible_kinds[i]) == 0)
			return true;
	return false;
}

static ota_err parse_value(rd *r, int c, ota_attestation *a, ota_error *err)
{
	ota_err e;
	switch (c) {
	case C_ISS:
		return rd_text(r, "iss", a->iss, sizeof a->iss, true, err);
	case C_EXP:
		return rd_uint(r, "exp", &a->exp, err);
	case C_IAT:
		return rd_uint(r, "iat", &a->iat, err);
	case C_CTI:
		return rd_bstr(r, "cti", a->cti, 1, sizeof a->cti, &a->cti_len, err);
	case C_NONCE:
		return rd_bstr(r, "eat_nonce", a->nonce, OTA_NONCE_MIN_BYTES, OTA_NONCE_MAX_BYTES,
		               &a->nonce_len, err);
	case C_KIND:
		return rd_text(r, "kind", a->kind, sizeof a->kind, true, err);
	case C_TXN:
		return rd_text(r, "txn", a->txn, sizeof a->txn, true, err);
	case C_TRUST_ROOT:
		return rd_id(r, "trust_root", a->trust_root, sizeof a->trust_root, err);
	case C_PROVIDER:
		return rd_text(r, "provider", a->provider, sizeof a->provider, true, err);
	case C_ADAPTER:
		return rd_text(r, "adapter", a->adapter, sizeof a->adapter, true, err);
	case C_SEGMENT:
		return rd_text(r, "segment", a->segment, sizeof a->segment, true, err);
	case C_BOUNDARY:
		return rd_text(r, "boundary", a->boundary, sizeof a->boundary, true, err);
	case C_PLATFORM: {
		static const char *const names[3] = {"os", "architecture", "variant"};
		char *outs[3] = {a->platform_os, a->platform_arch, a->platform_variant};
		const size_t caps[3] = {sizeof a->platform_os, sizeof a->platform_arch,
		                        sizeof a->platform_variant};
		return rd_submap(r, "platform", names, outs, caps, 3, false, err);
	}
	case C_POLICY: {
		static const char *const names[2] = {"canonical", "effective"};
		char *outs[2] = {a->policy_canonical, a->policy_effective};
		const size_t caps[2] = {sizeof a->policy_canonical, sizeof a->policy_effective};
		return rd_submap(r, "policy", names, outs, caps, 2, true, err);
	}
	case C_PRIOR:
		if (r->off < r->len && r->p[r->off] == 0xf6) { /* null: first record */
			r->off++;
			return OTA_OK;
		}
		if ((e = rd_id(r, "prior", a->prior, sizeof a->prior, err)) != OTA_OK)
			return e;
		a->has_prior = true;
		return OTA_OK;
	case C_BODY: {
		size_t start = r->off;
		if ((e = rd_skip(r, 1, err)) != OTA_OK)
			return e;
		a->body = ota_bytes_make(r->p + start, r->off - start);
		return OTA_OK;
	}
	default:
		return OTA_ERR_INTERNAL;
	}
}

ota_err ota_attestation_parse(ota_bytes payload, ota_attestation *out, ota_error *err)
{
	ota_err e;
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, W, "out is NULL");
	memset(out, 0, sizeof *out);
	if (payload.ptr == NULL || payload.len == 0)
		return ota_error_set(err, OTA_ERR_ATT_MALFORMED, W, "empty payload");
	if (payload.len > OTA_MAX_ATTESTATION_BYTES)
		return ota_error_set(err, OTA_ERR_ATT_TOO_LARGE, W, "%zu bytes, limit %u", payload.len,
		                     OTA_MAX_ATTESTATION_BYTES);
	rd r = {payload.ptr, payload.len, 0};
	unsigned mt = 0;
	uint64_t n = 0;
	if ((e = rd_head(&r, &mt, &n, err)) != OTA_OK)
		goto out_clear;
	if (mt != 5) {
		e = bad(err, OTA_ERR_ATT_MALFORMED, &r, "payload is not a CBOR map");
		goto out_clear;
	}
	if (n > OTA_MAX_ATTESTATION_CLAIMS) {
		e = bad(err, OTA_ERR_ATT_MALFORMED, &r, "too many claims");
		goto out_clear;
	}
	uint32_t seen = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t kv = 0;
		if ((e = rd_head(&r, &mt, &kv, err)) != OTA_OK)
			goto out_clear;
		int c = -1;
		if (mt == 0) {
			switch (kv) {
			case OTA_CLAIM_ISS: c = C_ISS; break;
			case OTA_CLAIM_EXP: c = C_EXP; break;
			case OTA_CLAIM_IAT: c = C_IAT; break;
			case OTA_CLAIM_CTI: c = C_CTI; break;
			case OTA_CLAIM_EAT_NONCE: c = C_NONCE; break;
			default: break;
			}
			if (c < 0) {
				e = ota_error_set(err, OTA_ERR_ATT_CLAIM_UNKNOWN, W, "claim key %llu",
				                  (unsigned long long)kv);
				goto out_clear;
			}
		} else if (mt == 3) {
			ota_bytes k = {NULL, 0};
			if ((e = rd_span(&r, kv, &k, err)) != OTA_OK)
				goto out_clear;
			for (int j = C_KIND; j < C_COUNT_; j++)
				if (strlen(claim_names[j]) == k.len &&
				    memcmp(claim_names[j], k.ptr, k.len) == 0)
					c = j;
			if (c < 0) {
				e = ota_error_set(err, OTA_ERR_ATT_CLAIM_UNKNOWN, W, "claim \"%.*s\"",
				                  (int)(k.len > 64 ? 64 : k.len), (const char *)k.ptr);
				goto out_clear;
			}
		} else {
			e = ota_error_set(err, OTA_ERR_ATT_CLAIM_UNKNOWN, W,
			                  "claim keys are unsigned integers or text");
			goto out_clear;
		}
		if (seen & (1u << c)) {
			e = ota_error_set(err, OTA_ERR_ATT_CLAIM_DUPLICATE, claim_names[c], "claim twice");
			goto out_clear;
		}
		seen |= 1u << c;
		if ((e = parse_value(&r, c, out, err)) != OTA_OK)
			goto out_clear;
	}
	if (r.off != r.len) {
		e = bad(err, OTA_ERR_ATT_MALFORMED, &r, "trailing bytes after the payload map");
		goto out_clear;
	}
	static const int required[] = {C_ISS, C_EXP, C_IAT, C_NONCE, C_KIND,
	                               C_TXN, C_TRUST_ROOT, C_PROVIDER, C_BOUNDARY};
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!(seen & (1u << required[i]))) {
			e = ota_error_set(err, OTA_ERR_ATT_CLAIM_MISSING, claim_names[required[i]],
			                  "required claim missing");
			goto out_clear;
		}
	return OTA_OK;
out_clear:
	memset(out, 0, sizeof *out);
	return e;
}

/* ---- encoder ---- */

static void wr_kv_text(ota_cbor_wr *w, const char *k, const char *v)
{
	ota_cbor_text(w, k);
	ota_cbor_text(w, v);
}

ota_err ota_attestation_encode(const ota_attestation *a, uint8_t **out, size_t *out_len)
{
	if (out == NULL || out_len == NULL)
		return OTA_ERR_USAGE;
	*out = NULL;
	*out_len = 0;
	if (a == NULL || a->exp < 0 || a->iat < 0 || a->nonce_len > sizeof a->nonce ||
	    a->cti_len > sizeof a->cti)
		return OTA_ERR_USAGE;
	size_t n = 9; /* iss exp iat eat_nonce kind txn trust_root provider boundary */
	bool has_platform = a->platform_os[0] || a->platform_arch[0] || a->platform_variant[0];
	bool has_policy = a->policy_canonical[0] || a->policy_effective[0];
	n += (size_t)((a->cti_len > 0) + (a->adapter[0] != 0) + has_platform +
	              (a->segment[0] != 0) + has_policy + (a->has_prior ? 1 : 0) +
	              (a->body.len > 0));
	ota_cbor_wr w = {0};
	ota_cbor_head(&w, 5, n);
	ota_cbor_head(&w, 0, OTA_CLAIM_ISS);
	ota_cbor_text(&w, a->iss);
	ota_cbor_head(&w, 0, OTA_CLAIM_EXP);
	ota_cbor_head(&w, 0, (uint64_t)a->exp);
	ota_cbor_head(&w, 0, OTA_CLAIM_IAT);
	ota_cbor_head(&w, 0, (uint64_t)a->iat);
	if (a->cti_len > 0) {
		ota_cbor_head(&w, 0, OTA_CLAIM_CTI);
		ota_cbor_head(&w, 2, a->cti_len);
		ota_cbor_put(&w, a->cti, a->cti_len);
	}
	ota_cbor_head(&w, 0, OTA_CLAIM_EAT_NONCE);
	ota_cbor_head(&w, 2, a->nonce_len);
	ota_cbor_put(&w, a->nonce, a->nonce_len);
	wr_kv_text(&w, "kind", a->kind);
	wr_kv_text(&w, "txn", a->txn);
	wr_kv_text(&w, "trust_root", a->trust_root);
	wr_kv_text(&w, "provider", a->provider);
	if (a->adapter[0])
		wr_kv_text(&w, "adapter", a->adapter);
	if (has_platform) {
		ota_cbor_text(&w, "platform");
		size_t m = (size_t)((a->platform_os[0] != 0) + (a->platform_arch[0] != 0) +
		                    (a->platform_variant[0] != 0));
		ota_cbor_head(&w, 5, m);
		if (a->platform_os[0])
			wr_kv_text(&w, "os", a->platform_os);
		if (a->platform_arch[0])
			wr_kv_text(&w, "architecture", a->platform_arch);
		if (a->platform_variant[0])
			wr_kv_text(&w, "variant", a->platform_variant);
	}
	if (a->segment[0])
		wr_kv_text(&w, "segment", a->segment);
	if (has_policy) {
		ota_cbor_text(&w, "policy");
		ota_cbor_head(&w, 5, (uint64_t)((a->policy_canonical[0] != 0) + (a->policy_effective[0] != 0)));
		if (a->policy_canonical[0])
			wr_kv_text(&w, "canonical", a->policy_canonical);
		if (a->policy_effective[0])
			wr_kv_text(&w, "effective", a->policy_effective);
	}
	wr_kv_text(&w, "boundary", a->boundary);
	if (a->has_prior)
		wr_kv_text(&w, "prior", a->prior);
	if (a->body.len > 0) {
		ota_cbor_text(&w, "body");
		ota_cbor_put(&w, a->body.ptr, a->body.len);
	}
	if (w.oom) {
		free(w.p);
		return OTA_ERR_NOMEM;
	}
	*out = w.p;
	*out_len = w.len;
	return OTA_OK;
}
