/*
 * Strict parser of ota.archive/v1 (docs/archive.md): size cap first, one
 * JSON document without duplicate members, a depth cap, every member known
 * and typed, canonical base64, identity shapes, integer ranges, count caps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive_internal.h"
#include "ota/json.h"

static ota_err bad(ota_error *err, const char *where, const char *what)
{
	return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where, "%s", what);
}

static ota_err depth_ok(const json_t *v, unsigned d, ota_error *err)
{
	if (d > OTA_MAX_JSON_DEPTH)
		return ota_error_set(err, OTA_ERR_TOO_DEEP, "archive", "nesting deeper than %u",
		                     OTA_MAX_JSON_DEPTH);
	size_t i;
	const char *k;
	json_t *m;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)(uintptr_t)v, k, m) {
			ota_err rc = depth_ok(m, d + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m) {
			ota_err rc = depth_ok(m, d + 1, err);
			if (rc != OTA_OK)
				return rc;
		}
	} else if (json_is_real(v)) {
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "archive", "floats are refused");
	} else if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x > OTA_JSON_MAX_SAFE_INT || x < -OTA_JSON_MAX_SAFE_INT)
			return ota_error_set(err, OTA_ERR_JSON_NUMBER_RANGE, "archive",
			                     "integer beyond 2^53-1");
	}
	return OTA_OK;
}

/* Every member of o is in names; every required one (bit i) present. */
static ota_err members(const json_t *o, const char *where, const char *const *names, size_t n,
                       unsigned required, ota_error *err)
{
	if (!json_is_object(o))
		return bad(err, where, "not an object");
	const char *k;
	json_t *m;
	json_object_foreach((json_t *)(uintptr_t)o, k, m) {
		size_t i = 0;
		while (i < n && strcmp(k, names[i]) != 0)
			i++;
		if (i == n)
			return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where, "unknown member %s",
			                     k);
	}
	for (size_t i = 0; i < n; i++)
		if ((required & (1u << i)) != 0 && json_object_get(o, names[i]) == NULL)
			return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where, "missing member %s",
			                     names[i]);
	return OTA_OK;
}

static ota_err get_str(const json_t *o, const char *k, const char *where, const char **out,
                       ota_error *err)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4096)
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where, "%s: not a string", k);
	*out = json_string_value(v);
	return OTA_OK;
}

static ota_err get_id(const json_t *o, const char *k, const char *where, const char **out,
                      ota_error *err)
{
	ota_err rc = get_str(o, k, where, out, err);
	if (rc == OTA_OK && !ota_id_is_valid(*out))
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where, "%s: not a sha256 identity",
		                     k);
	return rc;
}

/* get_id, copied into out (a lean parse drops the member afterwards). */
static ota_err get_id_copy(const json_t *o, const char *k, const char *where,
                           char out[OTA_ID_LEN + 1], ota_error *err)
{
	const char *s = NULL;
	ota_err rc = get_id(o, k, where, &s, err);
	if (rc == OTA_OK)
		memcpy(out, s, OTA_ID_LEN + 1); /* ota_id_is_valid: exactly OTA_ID_LEN */
	return rc;
}

static ota_err get_int(const json_t *o, const char *k, const char *where, int64_t *out,
                       ota_error *err)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, where,
		                     "%s: not a non-negative integer", k);
	*out = json_integer_value(v);
	return OTA_OK;
}

/* The value of each standard base64 character; -1 for every other byte. */
static const int8_t B64[256] = {
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,
	-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1,
	-1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/*
 * Canonical standard base64 (padded, the standard alphabet, '=' only at the
 * end, unused bits zero) of at most max decoded bytes, in one pass: every
 * quantum but the last by table, the last one with its padding.
 */
static ota_err get_b64(const json_t *v, const char *where, size_t max, arc_blob *out,
                       ota_error *err)
{
	out->ptr = NULL;
	out->len = 0;
	if (!json_is_string(v))
		return bad(err, where, "not a base64 string");
	const unsigned char *s = (const unsigned char *)json_string_value(v);
	size_t sl = json_string_length(v);
	if (sl / 4 * 3 > max)
		return ota_error_set(err, OTA_ERR_ARCHIVE_TOO_LARGE, where, "too large");
	if (sl % 4 != 0)
		return ota_error_set(err, OTA_ERR_ARCHIVE_BASE64, where, "not padded standard base64");
	size_t pad = sl >= 1 && s[sl - 1] == '=' ? (sl >= 2 && s[sl - 2] == '=' ? 2u : 1u) : 0u;
	uint8_t *b = malloc(sl / 4 * 3 + 1);
	if (b == NULL)
		return OTA_ERR_NOMEM;
	size_t o = 0, i = 0;
	for (; i + 4 < sl; i += 4) {
		int32_t q0 = B64[s[i]], q1 = B64[s[i + 1]], q2 = B64[s[i + 2]], q3 = B64[s[i + 3]];
		if ((q0 | q1 | q2 | q3) < 0) {
			free(b);
			return ota_error_set(err, OTA_ERR_ARCHIVE_BASE64, where, "not base64");
		}
		uint32_t w = (uint32_t)q0 << 18 | (uint32_t)q1 << 12 | (uint32_t)q2 << 6 | (uint32_t)q3;
		b[o] = (uint8_t)(w >> 16);
		b[o + 1] = (uint8_t)(w >> 8);
		b[o + 2] = (uint8_t)w;
		o += 3;
	}
	if (i < sl) { /* the last quantum: its last pad characters count as zero */
		int8_t q[4];
		for (size_t j = 0; j < 4; j++) {
			q[j] = j >= 4 - pad ? 0 : B64[s[i + j]];
			if (q[j] < 0) {
				free(b);
				return ota_error_set(err, OTA_ERR_ARCHIVE_BASE64, where, "not base64");
			}
		}
		uint32_t w = (uint32_t)q[0] << 18 | (uint32_t)q[1] << 12 | (uint32_t)q[2] << 6 |
		             (uint32_t)q[3];
		b[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			b[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			b[o++] = (uint8_t)w;
		if ((pad == 1 && (w & 0xffu) != 0) || (pad == 2 && (w & 0xffffu) != 0)) {
			free(b);
			return ota_error_set(err, OTA_ERR_ARCHIVE_BASE64, where, "not canonical base64");
		}
	}
	out->ptr = b;
	out->len = o;
	return OTA_OK;
}

static ota_err get_array(const json_t *o, const char *k, size_t max, const json_t **out,
                         ota_error *err)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_array(v))
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, k, "not an array");
	if (json_array_size(v) > max)
		return ota_error_set(err, OTA_ERR_ARCHIVE_TOO_LARGE, k, "more than %zu entries", max);
	*out = v;
	return OTA_OK;
}

void ota_archive_free(ota_archive *a)
{
	if (a == NULL)
		return;
	free(a->contract.ptr);
	for (size_t i = 0; a->ov != NULL && i < a->nov; i++)
		free(a->ov[i].bytes.ptr);
	free(a->ov);
	for (size_t i = 0; a->chain != NULL && i < a->nchain; i++)
		free(a->chain[i].ptr);
	free(a->chain);
	for (size_t i = 0; a->ch != NULL && i < a->nch; i++)
		free(a->ch[i].strings);
	free(a->ch);
	for (size_t i = 0; a->att != NULL && i < a->natt; i++)
		free(a->att[i].cose.ptr);
	free(a->att);
	for (size_t i = 0; a->acc != NULL && i < a->nacc; i++)
		free(a->acc[i].cose.ptr);
	free(a->acc);
	free(a->receipt.ptr);
	json_decref(a->doc);
	free(a);
}

size_t ota_archive_attestation_count(const ota_archive *a)
{
	return a != NULL ? a->natt : 0;
}

size_t ota_archive_acceptance_count(const ota_archive *a)
{
	return a != NULL ? a->nacc : 0;
}

size_t ota_archive_evidence_count(const ota_archive *a)
{
	return a != NULL ? json_array_size(a->evidence) : 0;
}

const json_t *ota_archive_json(const ota_archive *a)
{
	return a != NULL ? a->doc : NULL;
}

static ota_err parse_platform(const json_t *p, ota_platform *out, ota_error *err)
{
	static const char *const n[] = {"os", "architecture", "variant"};
	ota_err rc = members(p, "selection.native_platform", n, 3, 7u, err);
	if (rc != OTA_OK)
		return rc;
	const char *v[3];
	for (int i = 0; i < 3; i++) {
		const json_t *s = json_object_get(p, n[i]);
		if (!json_is_string(s) || json_string_length(s) >= sizeof out->os)
			return bad(err, "selection.native_platform", "not a short string");
		v[i] = json_string_value(s);
	}
	snprintf(out->os, sizeof out->os, "%s", v[0]);
	snprintf(out->architecture, sizeof out->architecture, "%s", v[1]);
	snprintf(out->variant, sizeof out->variant, "%s", v[2]);
	return OTA_OK;
}

static ota_err parse_challenge(const json_t *c, arc_ch *out, ota_error *err)
{
	static const char *const n[] = {"identity", "nonce",  "txn",        "issuer",     "scope",
	                                "epoch",    "issued_at", "expires_at", "consumed_at"};
	ota_err rc = members(c, "challenges[]", n, 9, 0x1ffu, err);
	if (rc != OTA_OK)
		return rc;
	rc = get_id_copy(c, "identity", "challenges[]", out->id, err);
	arc_blob nb = {NULL, 0};
	if (rc == OTA_OK)
		rc = get_b64(json_object_get(c, "nonce"), "challenges[].nonce", OTA_NONCE_MAX_BYTES,
		             &nb, err);
	if (rc != OTA_OK)
		return rc;
	if (nb.len < OTA_NONCE_MIN_BYTES || nb.len > OTA_NONCE_MAX_BYTES) {
		free(nb.ptr);
		return bad(err, "challenges[].nonce", "nonce length out of range");
	}
	memcpy(out->c.nonce, nb.ptr, nb.len);
	out->c.nonce_len = nb.len;
	free(nb.ptr);
	const char *s[3];
	static const char *const sn[] = {"txn", "issuer", "scope"};
	static const size_t caps[] = {OTA_MAX_TXN_BYTES, OTA_MAX_ISSUER_BYTES, OTA_MAX_SCOPE_BYTES};
	for (int i = 0; i < 3; i++) {
		rc = get_str(c, sn[i], "challenges[]", &s[i], err);
		if (rc == OTA_OK && strlen(s[i]) > caps[i])
			rc = bad(err, "challenges[]", "binding too long");
		if (rc != OTA_OK)
			return rc;
	}
	if ((rc = get_int(c, "epoch", "challenges[]", &out->c.epoch, err)) != OTA_OK ||
	    (rc = get_int(c, "issued_at", "challenges[]", &out->c.issued_at, err)) != OTA_OK ||
	    (rc = get_int(c, "expires_at", "challenges[]", &out->c.expires_at, err)) != OTA_OK ||
	    (rc = get_int(c, "consumed_at", "challenges[]", &out->c.consumed_at, err)) != OTA_OK)
		return rc;
	/* the strings last: nothing fails after they are allocated */
	size_t len[3], total = 0;
	for (int i = 0; i < 3; i++) {
		len[i] = strlen(s[i]);
		total += len[i] + 1;
	}
	char *buf = malloc(total);
	if (buf == NULL)
		return OTA_ERR_NOMEM;
	const char **dst[3] = {&out->c.txn, &out->c.issuer, &out->c.scope};
	size_t off = 0;
	for (int i = 0; i < 3; i++) {
		memcpy(buf + off, s[i], len[i] + 1);
		*dst[i] = buf + off;
		off += len[i] + 1;
	}
	out->strings = buf;
	return OTA_OK;
}

static ota_err parse_doc(ota_archive *a, bool lean, ota_error *err)
{
	static const char *const top[] = {"kind",       "contract",     "overlays",
	                                  "selection",  "trust_chain",  "challenges",
	                                  "attestations", "acceptances", "evidence", "receipt"};
	json_t *d = a->doc;
	if (!json_is_object(d))
		return bad(err, "archive", "not an object");
	const char *kind = json_string_value(json_object_get(d, "kind"));
	if (kind == NULL || strcmp(kind, OTA_ARCHIVE_KIND) != 0)
		return ota_error_set(err, OTA_ERR_ARCHIVE_KIND, "kind", "not %s", OTA_ARCHIVE_KIND);
	ota_err rc = members(d, "archive", top, 10, 0x3ffu, err);
	if (rc != OTA_OK)
		return rc;
	/* contract */
	static const char *const cn[] = {"snapshot_identity", "bytes"};
	const json_t *c = json_object_get(d, "contract");
	a->contract_name = "ota.yaml";
	if ((rc = members(c, "contract", cn, 2, 3u, err)) != OTA_OK ||
	    (rc = get_id_copy(c, "snapshot_identity", "contract", a->contract_snapshot, err)) !=
	            OTA_OK ||
	    (rc = get_b64(json_object_get(c, "bytes"), "contract.bytes", OTA_MAX_YAML_BYTES,
	                  &a->contract, err)) != OTA_OK)
		return rc;
	if (lean)
		json_object_del((json_t *)(uintptr_t)c, "bytes");
	/* overlays */
	const json_t *ov = NULL;
	if ((rc = get_array(d, "overlays", ARC_MAX_OVERLAYS, &ov, err)) != OTA_OK)
		return rc;
	a->ov = calloc(json_array_size(ov) + 1, sizeof *a->ov);
	if (a->ov == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(ov); i++) {
		static const char *const on[] = {"source", "bytes"};
		const json_t *o = json_array_get(ov, i);
		const char *src = NULL;
		if ((rc = members(o, "overlays[]", on, 2, 3u, err)) != OTA_OK ||
		    (rc = get_str(o, "source", "overlays[]", &src, err)) != OTA_OK)
			return rc;
		a->ov[i].name = "overlay";
		if (strcmp(src, "org_policy") == 0)
			a->ov[i].source = OTA_OVERLAY_ORG_POLICY;
		else if (strcmp(src, "file") == 0)
			a->ov[i].source = OTA_OVERLAY_FILE;
		else
			return bad(err, "overlays[].source", "neither org_policy nor file");
		rc = get_b64(json_object_get(o, "bytes"), "overlays[].bytes", OTA_MAX_YAML_BYTES,
		             &a->ov[i].bytes, err);
		a->nov = i + 1;
		if (rc != OTA_OK)
			return rc;
	}
	/* selection */
	static const char *const sn[] = {"lane_kind", "lane", "agent", "sandbox_target",
	                                 "native_platform"};
	const json_t *s = json_object_get(d, "selection");
	const char *lk = NULL;
	if ((rc = members(s, "selection", sn, 5, 0x17u, err)) != OTA_OK ||
	    (rc = get_str(s, "lane_kind", "selection", &lk, err)) != OTA_OK ||
	    (rc = get_str(s, "lane", "selection", &a->lane, err)) != OTA_OK)
		return rc;
	a->selection = s;
	if (strcmp(lk, "task") == 0)
		a->lane_kind = OTA_LANE_TASK;
	else if (strcmp(lk, "workflow") == 0)
		a->lane_kind = OTA_LANE_WORKFLOW;
	else
		return bad(err, "selection.lane_kind", "neither task nor workflow");
	if (!json_is_boolean(json_object_get(s, "agent")))
		return bad(err, "selection.agent", "not a boolean");
	a->agent = json_is_true(json_object_get(s, "agent"));
	const json_t *t = json_object_get(s, "sandbox_target");
	if (t != NULL && !json_is_null(t) &&
	    (rc = get_str(s, "sandbox_target", "selection", &a->target, err)) != OTA_OK)
		return rc;
	if ((rc = parse_platform(json_object_get(s, "native_platform"), &a->native, err)) != OTA_OK)
		return rc;
	/* trust chain */
	const json_t *ch = NULL;
	if ((rc = get_array(d, "trust_chain", OTA_MAX_TRUST_CHAIN, &ch, err)) != OTA_OK)
		return rc;
	a->chain = calloc(json_array_size(ch) + 1, sizeof *a->chain);
	if (a->chain == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(ch); i++) {
		rc = get_b64(json_array_get(ch, i), "trust_chain[]", OTA_MAX_TRUST_ROOT_BYTES,
		             &a->chain[i], err);
		a->nchain = i + 1;
		if (rc != OTA_OK)
			return rc;
	}
	/* challenges */
	const json_t *chs = NULL;
	if ((rc = get_array(d, "challenges", ARC_MAX_MEMBERS, &chs, err)) != OTA_OK)
		return rc;
	a->ch = calloc(json_array_size(chs) + 1, sizeof *a->ch);
	if (a->ch == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(chs); i++) {
		if ((rc = parse_challenge(json_array_get(chs, i), &a->ch[i], err)) != OTA_OK)
			return rc;
		a->nch = i + 1;
		if (lean)
			json_array_set_new((json_t *)(uintptr_t)chs, i, json_null());
	}
	/* attestations */
	const json_t *at = NULL;
	if ((rc = get_array(d, "attestations", ARC_MAX_MEMBERS, &at, err)) != OTA_OK)
		return rc;
	a->att = calloc(json_array_size(at) + 1, sizeof *a->att);
	if (a->att == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(at); i++) {
		static const char *const an[] = {"identity", "challenge", "cose_sign1"};
		const json_t *x = json_array_get(at, i);
		if ((rc = members(x, "attestations[]", an, 3, 7u, err)) != OTA_OK ||
		    (rc = get_id_copy(x, "identity", "attestations[]", a->att[i].id, err)) != OTA_OK ||
		    (rc = get_id_copy(x, "challenge", "attestations[]", a->att[i].chid, err)) != OTA_OK)
			return rc;
		rc = get_b64(json_object_get(x, "cose_sign1"), "attestations[].cose_sign1",
		             OTA_MAX_COSE_BYTES, &a->att[i].cose, err);
		a->natt = i + 1;
		if (rc != OTA_OK)
			return rc;
		if (lean)
			json_array_set_new((json_t *)(uintptr_t)at, i, json_null());
	}
	/* acceptances */
	const json_t *ac = NULL;
	if ((rc = get_array(d, "acceptances", ARC_MAX_MEMBERS, &ac, err)) != OTA_OK)
		return rc;
	a->acc = calloc(json_array_size(ac) + 1, sizeof *a->acc);
	if (a->acc == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < json_array_size(ac); i++) {
		static const char *const an[] = {"identity", "cose_sign1"};
		const json_t *x = json_array_get(ac, i);
		if ((rc = members(x, "acceptances[]", an, 2, 3u, err)) != OTA_OK ||
		    (rc = get_id_copy(x, "identity", "acceptances[]", a->acc[i].id, err)) != OTA_OK)
			return rc;
		rc = get_b64(json_object_get(x, "cose_sign1"), "acceptances[].cose_sign1",
		             OTA_MAX_COSE_BYTES, &a->acc[i].cose, err);
		a->nacc = i + 1;
		if (rc != OTA_OK)
			return rc;
		if (lean)
			json_array_set_new((json_t *)(uintptr_t)ac, i, json_null());
	}
	/* evidence: identified objects */
	const json_t *ev = NULL;
	if ((rc = get_array(d, "evidence", ARC_MAX_MEMBERS, &ev, err)) != OTA_OK)
		return rc;
	for (size_t i = 0; i < json_array_size(ev); i++) {
		const char *k = json_string_value(json_object_get(json_array_get(ev, i), "kind"));
		if (k == NULL || strncmp(k, "ota.", 4) != 0)
			return bad(err, "evidence[]", "not an identified object");
	}
	a->evidence = ev;
	/* receipt */
	const json_t *r = json_object_get(d, "receipt");
	static const char *const rn[] = {"identity", "cose_sign1", "unsigned"};
	if ((rc = members(r, "receipt", rn, 3, 2u, err)) != OTA_OK)
		return rc;
	if (json_is_null(json_object_get(r, "cose_sign1"))) {
		if (!json_is_object(json_object_get(r, "unsigned")) ||
		    json_object_get(r, "identity") != NULL)
			return bad(err, "receipt", "neither signed nor an unsigned receipt");
		a->receipt_unsigned = true;
		return OTA_OK;
	}
	if (json_object_get(r, "unsigned") != NULL)
		return bad(err, "receipt", "a signed receipt has no unsigned member");
	if ((rc = get_id_copy(r, "identity", "receipt", a->receipt_id, err)) != OTA_OK ||
	    (rc = get_b64(json_object_get(r, "cose_sign1"), "receipt.cose_sign1",
	                  OTA_MAX_COSE_BYTES, &a->receipt, err)) != OTA_OK)
		return rc;
	if (lean)
		json_object_del((json_t *)(uintptr_t)r, "cose_sign1");
	return OTA_OK;
}

ota_err ota_archive_parse(ota_bytes in, ota_archive **out, ota_error *err)
{
	return arc_parse(in, false, out, err);
}

/*
 * The values of a JSON text, counted before jansson builds them: an
 * archive is mostly base64 strings (one value per 24 bytes, one object or
 * array per 190, in the committed vectors), while "[{},{},...]" is one
 * object per 3 bytes, each about 230 bytes of jansson's memory: 10 MiB of
 * it took 800 MB before anything was checked. Outside strings, each ',',
 * ':', '[' and '{' starts at most one value; at most one per 16 bytes, and
 * one object or array per 64 (plus a small allowance), keep the document's
 * memory within about 6 times its size (a genuine archive: one value per
 * 20-29 bytes, one object or array per 170-225, about 2 times).
 */
static bool values_fit(ota_bytes in, size_t *values, size_t *containers)
{
	const uint8_t *p = in.ptr, *end = in.ptr + in.len;
	size_t v = 0, c = 0;
	while (p < end) {
		uint8_t ch = *p++;
		if (ch == '"') {
			/* to the closing quote: a backslash escapes the next byte */
			for (;;) {
				const uint8_t *q = memchr(p, '"', (size_t)(end - p));
				if (q == NULL) {
					p = end;
					break;
				}
				const uint8_t *b = q;
				while (b > p && b[-1] == '\\')
					b--;
				p = q + 1;
				if (((size_t)(q - b) & 1) == 0)
					break;
			}
		} else if (ch == ',' || ch == ':') {
			v++;
		} else if (ch == '[' || ch == '{') {
			v++;
			c++;
		}
	}
	*values = v;
	*containers = c;
	return v <= in.len / 16 + 4096 && c <= in.len / 64 + 1024;
}

ota_err arc_parse(ota_bytes in, bool lean, ota_archive **out, ota_error *err)
{
	*out = NULL;
	if (in.len > OTA_MAX_ARCHIVE_BYTES)
		return ota_error_set(err, OTA_ERR_ARCHIVE_TOO_LARGE, "archive",
		                     "%zu bytes, at most %u", in.len, OTA_MAX_ARCHIVE_BYTES);
	if (in.ptr == NULL)
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "archive", "empty");
	size_t nv = 0, nc = 0;
	if (!values_fit(in, &nv, &nc))
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "archive",
		                     "%zu values and %zu objects or arrays in %zu bytes: more than one "
		                     "per 16 bytes, or one object or array per 64 (no archive is built "
		                     "like that; refused before it is parsed)",
		                     nv, nc, in.len);
	json_error_t je;
	json_t *doc = json_loadb((const char *)in.ptr, in.len, JSON_REJECT_DUPLICATES, &je);
	if (doc == NULL)
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "archive", "line %d col %d: %s",
		                     je.line, je.column, je.text);
	ota_err rc = depth_ok(doc, 0, err);
	if (rc != OTA_OK) {
		json_decref(doc);
		return rc;
	}
	ota_archive *a = calloc(1, sizeof *a);
	if (a == NULL) {
		json_decref(doc);
		return OTA_ERR_NOMEM;
	}
	a->doc = doc;
	rc = parse_doc(a, lean, err);
	if (rc != OTA_OK) {
		ota_archive_free(a);
		return rc;
	}
	if (lean) { /* their entries are copied or decoded (and nulled) */
		json_object_del(doc, "attestations");
		json_object_del(doc, "challenges");
		json_object_del(doc, "acceptances");
	}
	*out = a;
	return OTA_OK;
}
