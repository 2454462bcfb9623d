/*
 * Strict COSE_Sign1 decoding and verification (see include/ota/cose.h).
 *
 * A small allocation-free CBOR reader: a cursor over the input that never
 * reads past its end. libcbor is not used here because cbor_load accepts
 * duplicate map keys and trailing bytes silently, and allocates per item.
 */
#include <stdio.h>
#include <string.h>

#include "ota/cose.h"
#include "ota/limits.h"

enum { MT_UINT = 0, MT_NINT = 1, MT_BSTR = 2, MT_TSTR = 3, MT_ARRAY = 4, MT_MAP = 5,
       MT_TAG = 6, MT_SIMPLE = 7 };

typedef struct {
	const uint8_t *start, *p, *end;
	size_t base; /* offset of start in the whole message, for messages */
	const char *part;
} reader;

typedef struct {
	unsigned major;
	uint64_t val; /* argument: value, length or count */
	bool indef;
	size_t off; /* offset of the head in the message */
	unsigned ai;
} head;

static size_t roff(const reader *r)
{
	return r->base + (size_t)(r->p - r->start);
}

static ota_err fail_at(ota_error *err, ota_err code, const reader *r, size_t off,
                       const char *what)
{
	char where[96];
	snprintf(where, sizeof where, "%s at byte %zu", r->part, off);
	return ota_error_set(err, code, where, "%s", what);
}

/* Trailing zero bits of v (v != 0). */
static unsigned ctz64(uint64_t v)
{
	unsigned n = 0;
	while ((v & 1u) == 0) {
		v >>= 1;
		n++;
	}
	return n;
}

/*
 * Whether a float of the next smaller width holds the same value: a
 * float64 (wide) a float32, a float32 a float16. Infinities, NaNs and zeros
 * always fit (RFC 8949 section 4.2.1 writes them as float16).
 * bits: the raw value; ebits, mbits: its exponent and fraction widths;
 * nemin, nemax: the smaller format's normal exponent range; nmbits: its
 * fraction width.
 */
static bool float_fits_smaller(uint64_t bits, unsigned ebits, unsigned mbits, int nemin,
                               int nemax, unsigned nmbits)
{
	uint64_t emask = ((uint64_t)1 << ebits) - 1;
	uint64_t e = (bits >> mbits) & emask;
	uint64_t m = bits & (((uint64_t)1 << mbits) - 1);
	if (e == emask || (e == 0 && m == 0))
		return true; /* infinity, NaN, zero */
	if (e == 0)
		return false; /* subnormal: below the smaller format's range */
	int bias = (int)(emask >> 1);
	int x = (int)e - bias;                /* value = sig * 2^(x - mbits) */
	uint64_t sig = m | (uint64_t)1 << mbits;
	if (x > nemax)
		return false;
	if (x >= nemin) /* normal in the smaller format: its fraction holds the bits */
		return ctz64(sig) >= mbits - nmbits;
	/* subnormal in the smaller format: a multiple of 2^(nemin - nmbits) */
	int lowest = nemin - (int)nmbits;
	if (x < lowest)
		return false;
	return (int)ctz64(sig) >= (int)mbits - (x - lowest);
}

/*
 * RFC 8949 section 4.2.1 (deterministic encoding): an argument (integer,
 * length, count, tag) in as few bytes as it needs, a float in the smallest
 * width that keeps its value.
 */
static bool head_is_shortest(const head *h)
{
	if (h->ai < 24 || h->ai == 31)
		return true;
	if (h->major == MT_SIMPLE) {
		if (h->ai == 26)
			return !float_fits_smaller(h->val, 8, 23, -14, 15, 10);
		if (h->ai == 27)
			return !float_fits_smaller(h->val, 11, 52, -126, 127, 23);
		return true; /* ai 24: a simple value >= 32 (checked by the caller); 25: float16 */
	}
	switch (h->ai) {
	case 24: return h->val >= 24;
	case 25: return h->val > 0xff;
	case 26: return h->val > 0xffff;
	default: return h->val > 0xffffffffu;
	}
}

/*
 * Reads one head. Indefinite lengths are reported, not refused, here; a
 * head that is not in its shortest form is refused (one item, one
 * encoding: nobody can re-encode a message into other bytes).
 */
static ota_err read_head(reader *r, head *h, ota_error *err)
{
	h->off = roff(r);
	if (r->p >= r->end)
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, "truncated CBOR");
	uint8_t ib = *r->p++;
	h->major = ib >> 5;
	h->ai = ib & 31u;
	h->indef = false;
	h->val = 0;
	if (h->ai < 24) {
		h->val = h->ai;
		return OTA_OK;
	}
	if (h->ai == 31) {
		if (h->major == MT_BSTR || h->major == MT_TSTR || h->major == MT_ARRAY ||
		    h->major == MT_MAP) {
			h->indef = true;
			return OTA_OK;
		}
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, h->major == MT_SIMPLE ? "unexpected break" : "reserved encoding");
	}
	if (h->ai > 27)
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, "reserved additional information");
	size_t n = (size_t)1 << (h->ai - 24);
	if ((size_t)(r->end - r->p) < n)
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, "truncated CBOR head");
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | r->p[i];
	r->p += n;
	h->val = v;
	if (h->major == MT_SIMPLE && h->ai == 24 && v < 32)
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, "two-byte simple value below 32");
	if (!head_is_shortest(h))
		return fail_at(err, OTA_ERR_COSE_NOT_SHORTEST, r, h->off,
		               h->major == MT_SIMPLE ? "float not in its shortest width"
		                                     : "head argument not in its shortest form");
	return OTA_OK;
}

/* The content of a definite string whose head was just read. */
static ota_err take_bytes(reader *r, const head *h, ota_bytes *out, ota_error *err)
{
	if (h->val > (uint64_t)(r->end - r->p))
		return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h->off, "string runs past the end");
	out->ptr = r->p;
	out->len = (size_t)h->val;
	r->p += out->len;
	return OTA_OK;
}

/* Skips one complete item; indefinite lengths refused anywhere inside. */
static ota_err skip_item(reader *r, unsigned depth, ota_error *err)
{
	if (depth > OTA_MAX_COSE_DEPTH)
		return fail_at(err, OTA_ERR_COSE_TOO_DEEP, r, roff(r), "header value nests too deep");
	head h = {0};
	ota_err rc = read_head(r, &h, err);
	if (rc != OTA_OK)
		return rc;
	if (h.indef)
		return fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, r, h.off, "indefinite-length item in a header");
	ota_bytes b;
	switch (h.major) {
	case MT_UINT:
	case MT_NINT:
	case MT_SIMPLE:
		return OTA_OK;
	case MT_BSTR:
	case MT_TSTR:
		return take_bytes(r, &h, &b, err);
	case MT_TAG:
		return skip_item(r, depth + 1, err);
	case MT_ARRAY:
	case MT_MAP: {
		uint64_t n = h.val;
		if (h.major == MT_MAP) {
			if (n > UINT64_MAX / 2)
				return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h.off, "map too large");
			n *= 2;
		}
		if (n > (uint64_t)(r->end - r->p))
			return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h.off, "container runs past the end");
		for (uint64_t i = 0; i < n; i++) {
			rc = skip_item(r, depth + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
		return OTA_OK;
	}
	}
	return fail_at(err, OTA_ERR_COSE_MALFORMED, r, h.off, "unknown major type");
}

/* ---- header buckets ---- */

typedef struct {
	bool is_int;
	bool neg;     /* integer label: -1 - u when neg, else u */
	uint64_t u;
	ota_bytes t;  /* text label */
} label;

typedef struct {
	label labels[OTA_MAX_COSE_HEADERS];
	size_t n;
	/* alg */
	bool has_alg, alg_is_int, alg_is_text;
	int64_t alg;
	size_t alg_off;
	/* crit (protected only) */
	bool has_crit;
	label crit[OTA_MAX_COSE_CRIT];
	size_t ncrit;
	size_t crit_off;
	/* kid */
	bool has_kid;
	ota_bytes kid;
} bucket;

static bool label_eq(const label *a, const label *b)
{
	if (a->is_int != b->is_int)
		return false;
	if (a->is_int)
		return a->neg == b->neg && a->u == b->u;
	return a->t.len == b->t.len && (a->t.len == 0 || memcmp(a->t.ptr, b->t.ptr, a->t.len) == 0);
}

static bool label_is(const label *l, int64_t v)
{
	if (!l->is_int)
		return false;
	return v >= 0 ? (!l->neg && l->u == (uint64_t)v) : (l->neg && l->u == (uint64_t)(-1 - v));
}

static ota_err read_label(reader *r, label *l, ota_error *err)
{
	head h = {0};
	ota_err rc = read_head(r, &h, err);
	if (rc != OTA_OK)
		return rc;
	memset(l, 0, sizeof *l);
	if (h.major == MT_UINT || h.major == MT_NINT) {
		l->is_int = true;
		l->neg = h.major == MT_NINT;
		l->u = h.val;
		return OTA_OK;
	}
	if (h.major == MT_TSTR) {
		if (h.indef)
			return fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, r, h.off, "indefinite-length label");
		return take_bytes(r, &h, &l->t, err);
	}
	return fail_at(err, OTA_ERR_COSE_LABEL_TYPE, r, h.off, "header label is not an integer or text string");
}

static ota_err read_crit(reader *r, bucket *b, ota_error *err)
{
	head h = {0};
	b->crit_off = roff(r);
	ota_err rc = read_head(r, &h, err);
	if (rc != OTA_OK)
		return rc;
	if (h.major != MT_ARRAY)
		return fail_at(err, OTA_ERR_COSE_CRIT_MALFORMED, r, h.off, "crit is not an array");
	if (h.indef)
		return fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, r, h.off, "indefinite-length crit");
	if (h.val == 0)
		return fail_at(err, OTA_ERR_COSE_CRIT_EMPTY, r, h.off, "crit is empty");
	if (h.val > OTA_MAX_COSE_CRIT)
		return fail_at(err, OTA_ERR_COSE_TOO_MANY_HEADERS, r, h.off, "crit has too many entries");
	for (size_t i = 0; i < (size_t)h.val; i++) {
		size_t off = roff(r);
		head eh;
		reader save = *r;
		rc = read_head(r, &eh, err);
		if (rc != OTA_OK)
			return rc;
		if (eh.major != MT_UINT && eh.major != MT_NINT && eh.major != MT_TSTR)
			return fail_at(err, OTA_ERR_COSE_CRIT_MALFORMED, r, off, "crit entry is not an integer or text label");
		*r = save;
		rc = read_label(r, &b->crit[i], err);
		if (rc != OTA_OK)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (label_eq(&b->crit[i], &b->crit[j]))
				return fail_at(err, OTA_ERR_COSE_DUPLICATE_LABEL, r, off, "crit names a label twice");
	}
	b->ncrit = (size_t)h.val;
	b->has_crit = true;
	return OTA_OK;
}

/* Reads a header map whose head h was just read. */
static ota_err read_bucket(reader *r, const head *h, bool prot, bucket *b, ota_error *err)
{
	memset(b, 0, sizeof *b);
	if (h->indef)
		return fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, r, h->off, "indefinite-length header map");
	if (h->val > OTA_MAX_COSE_HEADERS)
		return fail_at(err, OTA_ERR_COSE_TOO_MANY_HEADERS, r, h->off, "too many header labels");
	ota_err rc;
	for (size_t i = 0; i < (size_t)h->val; i++) {
		size_t off = roff(r);
		label *l = &b->labels[i];
		rc = read_label(r, l, err);
		if (rc != OTA_OK)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (label_eq(l, &b->labels[j]))
				return fail_at(err, OTA_ERR_COSE_DUPLICATE_LABEL, r, off, "duplicate header label");
		b->n = i + 1;
		if (label_is(l, 1)) { /* alg */
			head vh;
			reader save = *r;
			b->alg_off = roff(r);
			rc = read_head(r, &vh, err);
			if (rc != OTA_OK)
				return rc;
			b->has_alg = true;
			if (vh.major == MT_UINT || vh.major == MT_NINT) {
				b->alg_is_int = true;
				if (vh.val > (uint64_t)INT64_MAX)
					b->alg = INT64_MIN; /* never known */
				else
					b->alg = vh.major == MT_UINT ? (int64_t)vh.val
					                             : -1 - (int64_t)vh.val;
			} else {
				b->alg_is_text = vh.major == MT_TSTR;
				*r = save;
				rc = skip_item(r, 1, err);
				if (rc != OTA_OK)
					return rc;
			}
		} else if (label_is(l, 2)) { /* crit */
			if (!prot)
				return fail_at(err, OTA_ERR_COSE_CRIT_UNPROTECTED, r, off, "crit in the unprotected header");
			rc = read_crit(r, b, err);
			if (rc != OTA_OK)
				return rc;
		} else if (label_is(l, 4)) { /* kid */
			head vh;
			rc = read_head(r, &vh, err);
			if (rc != OTA_OK)
				return rc;
			if (vh.major != MT_BSTR)
				return fail_at(err, OTA_ERR_COSE_KID_NOT_BSTR, r, vh.off, "kid is not a byte string");
			if (vh.indef)
				return fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, r, vh.off, "indefinite-length kid");
			rc = take_bytes(r, &vh, &b->kid, err);
			if (rc != OTA_OK)
				return rc;
			b->has_kid = true;
		} else {
			rc = skip_item(r, 1, err);
			if (rc != OTA_OK)
				return rc;
		}
	}
	return OTA_OK;
}

static bool crit_understood(const label *l)
{
	return label_is(l, 1) || label_is(l, 3) || label_is(l, 4);
}

ota_err ota_cose_sign1_decode(ota_bytes msg, const ota_cose_verify_opts *o, ota_cose_sign1 *out,
                              ota_error *err)
{
	static const ota_cose_verify_opts defaults;
	if (o == NULL)
		o = &defaults;
	memset(out, 0, sizeof *out);
	if (msg.len > OTA_MAX_COSE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "cose", "message has %zu bytes, limit %u",
		                     msg.len, OTA_MAX_COSE_BYTES);
	reader r = {msg.ptr, msg.ptr, msg.ptr + msg.len, 0, "message"};
	if (msg.ptr == NULL)
		r.start = r.p = r.end = NULL;
	head h = {0};
	ota_err rc = read_head(&r, &h, err);
	if (rc != OTA_OK)
		goto fail;
	bool tagged = false;
	if (h.major == MT_TAG) {
		if (h.val != OTA_COSE_SIGN1_TAG) {
			rc = fail_at(err, OTA_ERR_COSE_TAG_WRONG, &r, h.off, "outer tag is not 18 (COSE_Sign1)");
			goto fail;
		}
		tagged = true;
		rc = read_head(&r, &h, err);
		if (rc != OTA_OK)
			goto fail;
		if (h.major == MT_TAG) {
			rc = fail_at(err, OTA_ERR_COSE_TAG_WRONG, &r, h.off, "more than one tag");
			goto fail;
		}
	} else if (!o->allow_untagged) {
		rc = fail_at(err, OTA_ERR_COSE_TAG_MISSING, &r, h.off, "tag 18 missing and untagged messages not allowed");
		goto fail;
	}
	if (h.major != MT_ARRAY) {
		rc = fail_at(err, OTA_ERR_COSE_NOT_ARRAY, &r, h.off, "not an array");
		goto fail;
	}
	if (h.indef) {
		rc = fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, &r, h.off, "indefinite-length array");
		goto fail;
	}
	if (h.val != 4) {
		rc = fail_at(err, OTA_ERR_COSE_ARRAY_LENGTH, &r, h.off, "array does not have 4 elements");
		goto fail;
	}

	/* [0] protected: bstr wrapping a map (or empty) */
	rc = read_head(&r, &h, err);
	if (rc != OTA_OK)
		goto fail;
	if (h.major != MT_BSTR) {
		rc = fail_at(err, OTA_ERR_COSE_PROTECTED_NOT_BSTR, &r, h.off, "protected header is not a byte string");
		goto fail;
	}
	if (h.indef) {
		rc = fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, &r, h.off, "indefinite-length protected header");
		goto fail;
	}
	ota_bytes prot;
	rc = take_bytes(&r, &h, &prot, err);
	if (rc != OTA_OK)
		goto fail;
	bucket pb, ub;
	memset(&pb, 0, sizeof pb);
	if (prot.len > 0) {
		reader pr = {prot.ptr, prot.ptr, prot.ptr + prot.len,
		             (size_t)(prot.ptr - msg.ptr), "protected header"};
		head ph;
		rc = read_head(&pr, &ph, err);
		if (rc != OTA_OK)
			goto fail;
		if (ph.major != MT_MAP) {
			rc = fail_at(err, OTA_ERR_COSE_PROTECTED_NOT_MAP, &pr, ph.off, "protected header is not a map");
			goto fail;
		}
		rc = read_bucket(&pr, &ph, true, &pb, err);
		if (rc != OTA_OK)
			goto fail;
		if (pr.p != pr.end) {
			rc = fail_at(err, OTA_ERR_COSE_TRAILING_BYTES, &pr, roff(&pr), "bytes after the protected header map");
			goto fail;
		}
	}

	/* [1] unprotected: map */
	rc = read_head(&r, &h, err);
	if (rc != OTA_OK)
		goto fail;
	if (h.major != MT_MAP) {
		rc = fail_at(err, OTA_ERR_COSE_UNPROTECTED_NOT_MAP, &r, h.off, "unprotected header is not a map");
		goto fail;
	}
	r.part = "unprotected header";
	rc = read_bucket(&r, &h, false, &ub, err);
	if (rc != OTA_OK)
		goto fail;
	r.part = "message";

	/* across buckets */
	if (pb.has_alg && ub.has_alg) {
		bool same = pb.alg_is_int && ub.alg_is_int && pb.alg == ub.alg;
		rc = fail_at(err, same ? OTA_ERR_COSE_DUPLICATE_LABEL : OTA_ERR_COSE_ALG_CONFLICT, &r,
		             ub.alg_off, same ? "alg in both headers" : "alg differs between the headers");
		goto fail;
	}
	for (size_t i = 0; i < ub.n; i++) {
		for (size_t j = 0; j < pb.n; j++) {
			if (label_eq(&ub.labels[i], &pb.labels[j])) {
				rc = fail_at(err, OTA_ERR_COSE_DUPLICATE_LABEL, &r, h.off, "label in both the protected and unprotected header");
				goto fail;
			}
		}
	}
	if (!pb.has_alg) {
		rc = fail_at(err, ub.has_alg ? OTA_ERR_COSE_ALG_UNPROTECTED : OTA_ERR_COSE_ALG_MISSING,
		             &r, ub.has_alg ? ub.alg_off : 0, ub.has_alg ? "alg only in the unprotected header" : "no alg");
		goto fail;
	}
	if (!pb.alg_is_int) {
		rc = fail_at(err, pb.alg_is_text ? OTA_ERR_COSE_ALG_TEXT : OTA_ERR_COSE_ALG_UNKNOWN, &r,
		             pb.alg_off, pb.alg_is_text ? "alg is a text string" : "alg is not an integer");
		goto fail;
	}
	if (!ota_alg_is_known(pb.alg)) {
		char what[64];
		snprintf(what, sizeof what, "alg %lld is not allowed", (long long)pb.alg);
		rc = fail_at(err, OTA_ERR_COSE_ALG_UNKNOWN, &r, pb.alg_off, what);
		goto fail;
	}
	if (pb.has_crit) {
		for (size_t i = 0; i < pb.ncrit; i++) {
			bool present = false;
			for (size_t j = 0; j < pb.n; j++)
				present = present || label_eq(&pb.crit[i], &pb.labels[j]);
			if (!present) {
				rc = fail_at(err, OTA_ERR_COSE_CRIT_ABSENT, &r, pb.crit_off, "crit names a label absent from the protected header");
				goto fail;
			}
			if (!crit_understood(&pb.crit[i])) {
				rc = fail_at(err, OTA_ERR_COSE_CRIT_UNKNOWN, &r, pb.crit_off, "crit names a label this verifier does not understand");
				goto fail;
			}
		}
	}

	/* [2] payload: bstr or nil */
	rc = read_head(&r, &h, err);
	if (rc != OTA_OK)
		goto fail;
	bool detached = false;
	ota_bytes payload = {NULL, 0};
	if (h.major == MT_SIMPLE && h.ai == 22) {
		detached = true;
	} else if (h.major == MT_BSTR) {
		if (h.indef) {
			rc = fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, &r, h.off, "indefinite-length payload");
			goto fail;
		}
		rc = take_bytes(&r, &h, &payload, err);
		if (rc != OTA_OK)
			goto fail;
	} else {
		rc = fail_at(err, OTA_ERR_COSE_PAYLOAD_NOT_BSTR, &r, h.off, "payload is neither a byte string nor nil");
		goto fail;
	}

	/* [3] signature: bstr */
	rc = read_head(&r, &h, err);
	if (rc != OTA_OK)
		goto fail;
	if (h.major != MT_BSTR) {
		rc = fail_at(err, OTA_ERR_COSE_SIGNATURE_NOT_BSTR, &r, h.off, "signature is not a byte string");
		goto fail;
	}
	if (h.indef) {
		rc = fail_at(err, OTA_ERR_COSE_INDEFINITE_LENGTH, &r, h.off, "indefinite-length signature");
		goto fail;
	}
	ota_bytes sig;
	rc = take_bytes(&r, &h, &sig, err);
	if (rc != OTA_OK)
		goto fail;
	if (r.p != r.end) {
		rc = fail_at(err, OTA_ERR_COSE_TRAILING_BYTES, &r, roff(&r), "bytes after the COSE_Sign1 array");
		goto fail;
	}

	if (detached && !o->have_detached_payload) {
		rc = ota_error_set(err, OTA_ERR_COSE_DETACHED_MISSING, "payload",
		                   "payload is detached and none was supplied");
		goto fail;
	}
	if (!detached && o->have_detached_payload) {
		rc = ota_error_set(err, OTA_ERR_COSE_PAYLOAD_UNEXPECTED, "payload",
		                   "a detached payload was supplied but the message has one");
		goto fail;
	}
	out->protected_bytes = prot;
	out->alg = (ota_alg)pb.alg;
	if (pb.has_kid) {
		out->kid = pb.kid;
		out->kid_protected = true;
	} else if (ub.has_kid) {
		out->kid = ub.kid;
	}
	out->unprotected_labels = ub.n;
	out->payload = detached ? o->detached_payload : payload;
	out->detached = detached;
	out->signature = sig;
	out->tagged = tagged;
	return OTA_OK;
fail:
	memset(out, 0, sizeof *out);
	return rc;
}

/* ---- signature ---- */

/* Definite CBOR head of major type mt with argument v into w; returns length. */
static size_t put_head(uint8_t *w, unsigned mt, uint64_t v)
{
	uint8_t m = (uint8_t)(mt << 5);
	if (v < 24) {
		w[0] = (uint8_t)(m | v);
		return 1;
	}
	size_t n = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffffu ? 4 : 8;
	w[0] = (uint8_t)(m | (n == 1 ? 24 : n == 2 ? 25 : n == 4 ? 26 : 27));
	for (size_t i = 0; i < n; i++)
		w[1 + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	return 1 + n;
}

ota_err ota_cose_sign1_check(const ota_cose_sign1 *m, const ota_key *key, ota_bytes external_aad,
                             ota_error *err)
{
	if (m == NULL || key == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "cose", "no message or key");
	ota_err rc;
	if (m->kid.len == 32) {
		uint8_t kid[32];
		rc = ota_key_kid(key, kid);
		if (rc != OTA_OK)
			return ota_error_set(err, rc, "kid", "cannot compute the key's kid");
		if (!ota_ct_equal(m->kid, ota_bytes_make(kid, 32)))
			return ota_error_set(err, OTA_ERR_COSE_KID_MISMATCH, "kid",
			                     "kid names a different key than the verifying key");
	}
	rc = ota_key_check_alg(key, m->alg);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "alg", "alg %s does not fit a %s key",
		                     ota_alg_name(m->alg), ota_key_type_name(key));
	/* Sig_structure = ["Signature1", protected, external_aad, payload] */
	uint8_t h0[1 + 11 + 9], h1[9], h2[9];
	size_t n0 = 0;
	h0[n0++] = 0x84;
	h0[n0++] = 0x6a;
	memcpy(h0 + n0, "Signature1", 10);
	n0 += 10;
	n0 += put_head(h0 + n0, MT_BSTR, m->protected_bytes.len);
	size_t n1 = put_head(h1, MT_BSTR, external_aad.len);
	size_t n2 = put_head(h2, MT_BSTR, m->payload.len);
	ota_bytes parts[6] = {
	    {h0, n0}, m->protected_bytes, {h1, n1}, external_aad, {h2, n2}, m->payload,
	};
	rc = ota_key_verify_parts(key, m->alg, parts, 6, m->signature);
	if (rc == OTA_ERR_SIG_FORMAT)
		return ota_error_set(err, rc, "signature",
		                     "signature has %zu bytes, not the raw size for %s",
		                     m->signature.len, ota_alg_name(m->alg));
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "signature", "%s", ota_err_message(rc));
	return OTA_OK;
}

ota_err ota_cose_sign1_verify(ota_bytes msg, const ota_key *key, const ota_cose_verify_opts *o,
                              ota_cose_sign1 *out, ota_error *err)
{
	ota_cose_sign1 m;
	ota_err rc = ota_cose_sign1_decode(msg, o, &m, err);
	if (rc == OTA_OK)
		rc = ota_cose_sign1_check(&m, key, o != NULL ? o->external_aad : (ota_bytes){NULL, 0},
		                          err);
	if (out != NULL) {
		if (rc == OTA_OK)
			*out = m;
		else
			memset(out, 0, sizeof *out);
	}
	return rc;
}

ota_err ota_cose_sign1_verify_with(ota_bytes msg, ota_cose_key_lookup fn, void *ctx,
                                   const ota_cose_verify_opts *o, ota_cose_sign1 *out,
                                   ota_error *err)
{
	ota_cose_sign1 m;
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (fn == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "cose", "no key lookup");
	ota_err rc = ota_cose_sign1_decode(msg, o, &m, err);
	if (rc != OTA_OK)
		return rc;
	if (m.kid.len == 0)
		return ota_error_set(err, OTA_ERR_COSE_KID_MISSING, "kid",
		                     "a key set needs a kid to select the key");
	const ota_key *key = NULL;
	rc = fn(ctx, m.kid, m.alg, &key, err);
	if (rc == OTA_OK && key == NULL)
		rc = ota_error_set(err, OTA_ERR_COSE_KID_UNKNOWN, "kid", "kid selects no key");
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "kid", "%s", ota_err_message(rc));
	rc = ota_cose_sign1_check(&m, key, o != NULL ? o->external_aad : (ota_bytes){NULL, 0}, err);
	if (rc == OTA_OK && out != NULL)
		*out = m;
	return rc;
}
