/*
 * ota-verify archive: re-derive the policy from the embedded contract,
 * verify every signature with keys of the trust-root chain judged at
 * acceptance time, check challenges, reconcile every identity and derive
 * the status from the evidence (docs/archive.md lists every check).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "archive_internal.h"
#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/cbor.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/oci.h" /* OTA_OCI_CANARY_DEST: where oci_local mounts its canary */
#include "ota/sqlite.h"
#include "ota/trust.h"

struct ota_archive_report {
	json_t *failures;
	size_t nfail;
	size_t max;
	ota_err first;
	char status[64];
	size_t sigs;
	json_t *checks;
	json_t *ids;
};

void ota_archive_report_free(ota_archive_report *r)
{
	if (r == NULL)
		return;
	json_decref(r->failures);
	json_decref(r->checks);
	json_decref(r->ids);
	free(r);
}

size_t ota_archive_report_failure_count(const ota_archive_report *r)
{
	return r != NULL ? r->nfail : 0;
}

ota_err ota_archive_report_failure(const ota_archive_report *r, size_t i, const char **where,
                                   const char **what)
{
	const json_t *f = r != NULL ? json_array_get(r->failures, i) : NULL;
	if (f == NULL)
		return OTA_OK;
	if (where != NULL)
		*where = json_string_value(json_object_get(f, "where"));
	if (what != NULL)
		*what = json_string_value(json_object_get(f, "message"));
	ota_err e = OTA_OK;
	(void)ota_err_from_name(json_string_value(json_object_get(f, "code")), &e);
	return e;
}

const char *ota_archive_report_status(const ota_archive_report *r)
{
	return r != NULL ? r->status : "";
}

size_t ota_archive_report_signatures(const ota_archive_report *r)
{
	return r != NULL ? r->sigs : 0;
}

json_t *ota_archive_report_json(const ota_archive_report *r)
{
	if (r == NULL)
		return NULL;
	/* a refused archive has no status: what its evidence would give is no
	 * answer a gate may read (the status_not_required message names it) */
	return json_pack("{s:b, s:s?, s:O, s:O, s:O, s:I}", "ok", r->nfail == 0, "status",
	                 r->nfail == 0 ? r->status : NULL, "failures", r->failures, "checks",
	                 r->checks, "identities", r->ids, "signatures_verified",
	                 (json_int_t)r->sigs);
}

OTA_PRINTF(4, 5)
static void fail(ota_archive_report *r, ota_err code, const char *where, const char *fmt, ...)
{
	if (r->first == OTA_OK)
		r->first = code;
	r->nfail++;
	if (json_array_size(r->failures) >= r->max)
		return;
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	json_array_append_new(r->failures, json_pack("{s:s, s:s, s:s}", "code", ota_err_name(code),
	                                             "where", where, "message", what));
}

static void fail_e(ota_archive_report *r, const ota_error *e, const char *ctx)
{
	char where[sizeof e->where + 128];
	snprintf(where, sizeof where, "%.100s%s%s", ctx, e->where[0] ? ": " : "", e->where);
	fail(r, e->code != OTA_OK ? e->code : OTA_ERR_INTERNAL, where, "%s", e->what);
}

/* ---- small helpers ---- */

static const char *sget(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool seq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

typedef struct idx_entry {
	const char *id;
	size_t i;
} idx_entry;

static int idx_cmp(const void *a, const void *b)
{
	return strcmp(((const idx_entry *)a)->id, ((const idx_entry *)b)->id);
}

static size_t idx_find(const idx_entry *v, size_t n, const char *id)
{
	if (id == NULL || v == NULL)
		return SIZE_MAX;
	idx_entry key = {id, 0};
	const idx_entry *e = bsearch(&key, v, n, sizeof *v, idx_cmp);
	return e != NULL ? e->i : SIZE_MAX;
}

/* The iat (key 6) of an acceptance payload, unverified (to pick the time). */
static bool acceptance_time(ota_bytes payload, int64_t *at)
{
	ota_cbor_rd r = {payload.ptr, payload.len, 0};
	unsigned mt;
	uint64_t n;
	if (payload.ptr == NULL || !ota_cbor_rd_head(&r, &mt, &n) || mt != OTA_CBOR_MAP || n > 64)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		ota_cbor_rd key = r;
		uint64_t k;
		if (!ota_cbor_rd_head(&r, &mt, &k))
			return false;
		if (mt == OTA_CBOR_UINT && k == 6) {
			uint64_t v;
			if (!ota_cbor_rd_head(&r, &mt, &v) || mt != OTA_CBOR_UINT || v > INT64_MAX)
				return false;
			*at = (int64_t)v;
			return true;
		}
		r = key;
		if (!ota_cbor_rd_skip(&r, 16) || !ota_cbor_rd_skip(&r, 16))
			return false;
	}
	return false;
}

/* body = CBOR text of an identity (0x78 0x47 "sha256:...") */
static bool body_id(ota_bytes body, char out[OTA_ID_LEN + 1])
{
	if (body.len != 2 + OTA_ID_LEN || body.ptr[0] != 0x78 || body.ptr[1] != OTA_ID_LEN)
		return false;
	memcpy(out, body.ptr + 2, OTA_ID_LEN);
	out[OTA_ID_LEN] = '\0';
	return ota_id_is_valid(out);
}

/* true when JCS identity of list equals the string want. */
static bool digest_is(const json_t *list, const json_t *want)
{
	char id[OTA_ID_LEN + 1];
	return list != NULL && json_is_string(want) && ota_jcs_identity(list, id, NULL) == OTA_OK &&
	       strcmp(id, json_string_value(want)) == 0;
}

/*
 * The JCS text of a list of identities (or of {"consumed_at", "identity"}
 * objects), written directly: every item is an identity the parse checked
 * (sha256:<64 hex>) or an evidence placeholder (invalid:N), characters JCS
 * writes as they are, and the integers are within 2^53. Its identity is
 * ota_jcs_identity of the same list as JSON, without building it (tens of
 * thousands of jansson values for a large archive).
 */
typedef struct jcs_list {
	char *p;
	size_t len;
	size_t cap;
	bool bad; /* out of memory, or an item JCS would escape */
} jcs_list;

static void jl_put(jcs_list *l, const char *s, size_t n)
{
	if (l->bad)
		return;
	if (l->len + n + 1 > l->cap) {
		size_t cap = l->cap != 0 ? l->cap : 4096;
		while (cap < l->len + n + 1)
			cap *= 2;
		char *p = realloc(l->p, cap);
		if (p == NULL) {
			l->bad = true;
			return;
		}
		l->p = p;
		l->cap = cap;
	}
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* Appends "id" (after a comma unless first); consumed_at >= -1: as the object. */
static void jl_item(jcs_list *l, const char *id, bool object, int64_t consumed_at)
{
	size_t n = strlen(id);
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') || id[i] == ':'))
			l->bad = true;
	jl_put(l, l->len > 1 ? "," : "", l->len > 1 ? 1 : 0);
	if (object) {
		char num[80];
		int k = snprintf(num, sizeof num, "{\"consumed_at\":%lld,\"identity\":",
		                 (long long)consumed_at);
		jl_put(l, num, (size_t)k);
	}
	jl_put(l, "\"", 1);
	jl_put(l, id, n);
	jl_put(l, object ? "\"}" : "\"", object ? 2 : 1);
}

/* true when the identity of the list's text (closed here) is the string want. */
static bool jl_digest_is(jcs_list *l, const json_t *want)
{
	jl_put(l, "]", 1);
	char id[OTA_ID_LEN + 1];
	bool ok = !l->bad && json_is_string(want) &&
	          ota_sha256_id(ota_bytes_make(l->p, l->len), id) == OTA_OK &&
	          strcmp(id, json_string_value(want)) == 0;
	free(l->p);
	memset(l, 0, sizeof *l);
	return ok;
}

static void jl_open(jcs_list *l)
{
	memset(l, 0, sizeof *l);
	jl_put(l, "[", 1);
}

/* ---- the verification ---- */

/*
 * What the structural walk reads of an attestation's claims, kept per
 * attestation (the whole ota_attestation, 3.3 KB of fixed buffers, lives only
 * while its attestation is checked). The strings are exact copies, never
 * truncated; "" until the claims parse.
 */
typedef struct att_claims {
	char kind[32];
	bool has_prior;
	const char *segment;
	const char *policy_canonical;
	const char *policy_effective;
	const char *boundary;
	const char *prior;
} att_claims;

typedef struct att_info {
	att_claims claims;
	char *strings;   /* owned: the strings of claims, one allocation */
	char record[OTA_ID_LEN + 1];
	size_t rec;      /* index into evidence or SIZE_MAX */
	bool ok;         /* signature and bindings verified */
	bool used;       /* consumed by the structural walk */
} att_info;

typedef struct vctx {
	ota_archive_report *r;
	ota_archive *a;
	const ota_archive_verify_opts *o;
	ota_trust_root *root;
	const char *root_id;
	ota_trust_root *current; /* the verifier's newer chain's latest, else NULL */
	int64_t *chain_versions; /* of the archive's embedded chain, in its order */
	json_t *receipt;
	const json_t *sp;
	const char *txn;
	const char *lane; /* the receipt's selection.lane: the scope its signers need */
	char runner[OTA_ATT_TEXT_MAX + 1];
	int64_t signed_at;
	ota_contract *contract;
	ota_policy *policy;
	json_t *adm;
	idx_entry *ev_idx;
	char (*ev_ids)[OTA_ID_LEN + 1];
	char (*ev_cfg)[OTA_ID_LEN + 1]; /* a rendered policy record's config identity, else "" */
	bool *ev_ref;
	size_t nev;
	idx_entry *ch_idx;
	bool ch_dup; /* a challenge identity listed twice */
	size_t *ch_uses;
	att_info *ai;
	size_t nai;
	idx_entry *att_idx;
	ota_acceptance *acc;
	ota_alg *acc_alg; /* the algorithm each acceptance is signed with */
	bool *acc_ok;
	idx_entry *acc_idx; /* by attestation identity */
	size_t nacc_idx;
} vctx;

static const json_t *ev_rec(vctx *v, size_t i)
{
	return i < v->nev ? json_array_get(v->a->evidence, i) : NULL;
}

/*
 * The position in ev_idx of the first record with identity id (lower
 * bound: one platform check may be listed for every segment, and equal
 * records are one record), or SIZE_MAX. One search serves the lookup and
 * the marking (it was a bsearch, then this search again to mark).
 */
static size_t ev_first(vctx *v, const char *id)
{
	if (id == NULL || v->ev_idx == NULL)
		return SIZE_MAX;
	size_t lo = 0, hi = v->nev;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v->ev_idx[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->nev && strcmp(v->ev_idx[lo].id, id) == 0 ? lo : SIZE_MAX;
}

/* Marks the records equal to ev_idx[pos] referenced (together, once). */
static void ev_mark_at(vctx *v, size_t pos)
{
	const idx_entry *e = &v->ev_idx[pos];
	if (v->ev_ref[e->i])
		return;
	const char *id = e->id;
	for (; e < v->ev_idx + v->nev && strcmp(e->id, id) == 0; e++)
		v->ev_ref[e->i] = true;
}

/* The record with identity id and of this kind (any with NULL), marked
 * referenced, and its index in *at; NULL if absent. Equal records have
 * one identity, hence one content: which of them is returned is moot. */
static const json_t *ev_get_at(vctx *v, const char *id, const char *kind, size_t *at)
{
	size_t pos = ev_first(v, id);
	if (pos == SIZE_MAX)
		return NULL;
	size_t i = v->ev_idx[pos].i;
	const json_t *rec = ev_rec(v, i);
	if (kind != NULL && !seq(sget(rec, "kind"), kind))
		return NULL;
	ev_mark_at(v, pos);
	*at = i;
	return rec;
}

static const json_t *ev_get(vctx *v, const char *id, const char *kind)
{
	size_t at;
	return ev_get_at(v, id, kind, &at);
}

/*
 * The verifier's current chain (opts current): verified from the pinned
 * snapshot, compared with the archive's embedded chain at every version
 * both hold, and kept in v->current when its latest is newer than the
 * archive's (current_judge then judges every key there too).
 */
static ota_err current_setup(vctx *v)
{
	ota_archive_report *r = v->r;
	const ota_archive_verify_opts *o = v->o;
	ota_error e;
	ota_error_clear(&e);
	ota_trust_verify_opts to;
	memset(&to, 0, sizeof to);
	to.at = o->have_at ? o->at : v->signed_at;
	ota_trust_root *cur = NULL;
	ota_err rc = ota_trust_chain_verify(o->pinned, o->current, o->n_current, &to, &cur, &e);
	if (rc != OTA_OK) {
		fail_e(r, &e, "current");
		return rc;
	}
	/* the same domain's history: one identity per version */
	const json_t *ids = json_object_get(v->receipt, "trust_chain_identities");
	ota_trust_root *prev = NULL; /* the entry before, whose keys the next shares */
	for (size_t i = 0; rc == OTA_OK && i < o->n_current; i++) {
		ota_trust_root *s = NULL;
		rc = ota_trust_root_parse_unloaded(o->current[i], prev, &s, &e);
		if (rc != OTA_OK) {
			fail_e(r, &e, "current");
			break;
		}
		int64_t ver = ota_trust_root_version(s);
		for (size_t k = 0; k < v->a->nchain && k < json_array_size(ids); k++) {
			if (v->chain_versions[k] == ver &&
			    !seq(json_string_value(json_array_get(ids, k)), ota_trust_root_identity(s))) {
				rc = OTA_ERR_TRUST_EQUIVOCATION;
				fail(r, rc, "trust_chain",
				     "version %lld of the archive's chain is not the current chain's (%s)",
				     (long long)ver, ota_trust_root_identity(s));
			}
		}
		ota_trust_root_free(prev);
		prev = s;
	}
	ota_trust_root_free(prev);
	if (rc == OTA_OK && ota_trust_root_version(cur) > ota_trust_root_version(v->root)) {
		v->current = cur;
		cur = NULL;
	}
	ota_trust_root_free(cur);
	return rc;
}

/* The key kid (alg) of role judged at `at`, for scope (NULL: none), in the
 * verifier's newer chain too (opts current): OTA_OK without one. A key
 * revoked since, or narrowed since to a scope that no longer covers the
 * archive, is refused there. */
static ota_err current_judge(vctx *v, ota_bytes kid, ota_alg alg, ota_trust_role role,
                             const ota_trust_scope_req *scope, int64_t at, const char *where)
{
	if (v->current == NULL)
		return OTA_OK;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_trust_lookup(v->current, kid, alg, role, scope, at, NULL, NULL, &e);
	if (rc != OTA_OK) {
		char w[300];
		snprintf(w, sizeof w, "%s: current v%lld", where,
		         (long long)ota_trust_root_version(v->current));
		fail(v->r, rc, w, "%s: %s", e.where, e.what);
	}
	return rc;
}

/*
 * The pinned snapshot is parsed once (and handed on to the chain walk); a
 * chain entry of the very pinned bytes is that parse, any other is parsed
 * whole, sharing the keys of the entry before it (the pinned snapshot for
 * the first), which loads only the keys that differ.
 */
static ota_err trust_setup(vctx *v)
{
	ota_archive_report *r = v->r;
	ota_error e;
	ota_error_clear(&e);
	ota_trust_root *pinned = NULL;
	ota_err rc = ota_trust_root_parse(v->o->pinned, &pinned, &e);
	if (rc != OTA_OK) {
		fail_e(r, &e, "pinned");
		return rc;
	}
	int64_t pv = ota_trust_root_version(pinned);
	ota_bytes *chain = calloc(v->a->nchain + 1, sizeof *chain);
	size_t n = 0;
	if (chain == NULL) {
		ota_trust_root_free(pinned);
		return OTA_ERR_NOMEM;
	}
	json_t *ids = json_array();
	v->chain_versions = calloc(v->a->nchain + 1, sizeof *v->chain_versions);
	if (v->chain_versions == NULL) {
		free(chain);
		json_decref(ids);
		ota_trust_root_free(pinned);
		return OTA_ERR_NOMEM;
	}
	int64_t prev_version = 0;
	ota_trust_root *prev = NULL;      /* the last entry parsed here (owned) */
	const ota_trust_root *last = pinned; /* the entry before, whose keys the next shares */
	for (size_t i = 0; rc == OTA_OK && i < v->a->nchain; i++) {
		ota_trust_root *parsed = NULL;
		ota_bytes b = ota_bytes_make(v->a->chain[i].ptr, v->a->chain[i].len);
		const ota_trust_root *s = pinned; /* the pinned bytes again: their parse */
		if (b.len != v->o->pinned.len || memcmp(b.ptr, v->o->pinned.ptr, b.len) != 0) {
			/* versions and identities only: the principals' keys are
			 * loaded by the chain walk, once a snapshot has shown its
			 * predecessor's threshold (an edited archive must not make
			 * the verifier load thousands of keys first) */
			rc = ota_trust_root_parse_unloaded(b, last, &parsed, &e);
			if (rc != OTA_OK) {
				fail_e(r, &e, "trust_chain");
				break;
			}
			s = parsed;
		}
		int64_t ver = ota_trust_root_version(s);
		v->chain_versions[i] = ver;
		json_array_append_new(ids, json_string(ota_trust_root_identity(s)));
		if (ver <= prev_version) {
			rc = OTA_ERR_ARCHIVE_TRUST_UNPINNED;
			fail(r, rc, "trust_chain", "versions are not strictly ascending");
		}
		prev_version = ver;
		if (rc != OTA_OK) {
		} else if (ver == pv && strcmp(ota_trust_root_identity(s), ota_trust_root_identity(pinned)) != 0) {
			rc = OTA_ERR_ARCHIVE_TRUST_UNPINNED;
			fail(r, rc, "trust_chain", "version %lld differs from the pinned snapshot",
			     (long long)ver);
		} else if (ver > pv) {
			chain[n++] = b;
		}
		if (parsed != NULL) {
			ota_trust_root_free(prev);
			prev = parsed;
		}
		last = s;
	}
	ota_trust_root_free(prev);
	if (rc == OTA_OK && !json_equal(ids, json_object_get(v->receipt, "trust_chain_identities"))) {
		rc = OTA_ERR_ARCHIVE_TRUST_UNPINNED;
		fail(r, rc, "trust_chain", "the embedded chain is not the one the receipt signs");
	}
	json_decref(ids);
	if (rc == OTA_OK) {
		ota_trust_verify_opts to;
		memset(&to, 0, sizeof to);
		to.at = v->o->have_at ? v->o->at : v->signed_at;
		rc = ota_trust_chain_verify_from(pinned, chain, n, &to, &v->root, &e);
		pinned = NULL; /* taken */
		if (rc != OTA_OK)
			fail_e(r, &e, "trust_chain");
		else
			v->root_id = ota_trust_root_identity(v->root);
	}
	ota_trust_root_free(pinned);
	free(chain);
	if (rc == OTA_OK && v->o->n_current > 0)
		rc = current_setup(v);
	return rc;
}

/* A commit or tree id as the runner records it: 40 (SHA-1) or 64 (SHA-256) lowercase hex. */
static bool revision_ok(const char *s)
{
	if (s == NULL)
		return false;
	size_t n = strlen(s);
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* --require-revision / --require-worktree: the receipt's member (got,
 * NULL when absent) must be the required id. */
static void require_id(ota_archive_report *r, const json_t *got, const char *want, ota_err code,
                       const char *member, const char *why_null)
{
	if (want == NULL || seq(json_string_value(got), want))
		return;
	char where[32];
	snprintf(where, sizeof where, "receipt.%s", member);
	if (json_is_string(got))
		fail(r, code, where, "the receipt records %s %s, required %s", member,
		     json_string_value(got), want);
	else
		fail(r, code, where, "the receipt records no %s (%s%s), required %s", member,
		     got != NULL ? "null: " : "",
		     got != NULL ? why_null : "an archive written before the member existed", want);
}

/* Exactly these members, of these JSON types (s string, o object, a array,
 * b boolean, i integer, n null, ? any); a name prefixed with '-' is optional. */
static bool shape_ok(ota_archive_report *r, const json_t *o, const char *where,
                     const char *const *names, const char *types)
{
	if (!json_is_object(o)) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, where, "not an object");
		return false;
	}
	size_t n = strlen(types), seen = 0;
	for (size_t i = 0; i < n; i++) {
		bool opt = names[i][0] == '-';
		const json_t *m = json_object_get(o, names[i] + (opt ? 1 : 0));
		if (m == NULL) {
			if (opt)
				continue;
			fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, where, "missing member %s", names[i]);
			return false;
		}
		seen++;
		char t = types[i];
		bool ok = t == '?' || (t == 's' && json_is_string(m)) || (t == 'o' && json_is_object(m)) ||
		          (t == 'a' && json_is_array(m)) || (t == 'b' && json_is_boolean(m)) ||
		          (t == 'i' && json_is_integer(m)) || (t == 'n' && json_is_null(m));
		if (!ok) {
			fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, where, "member %s has the wrong type",
			     names[i] + (opt ? 1 : 0));
			return false;
		}
	}
	if (seen != json_object_size(o)) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, where, "unknown members");
		return false;
	}
	return true;
}

static bool receipt_shape(ota_archive_report *r, const json_t *rc)
{
	static const char *const top[] = {"kind", "txn", "execution_started", "all_segments_ran",
	                                  "exit_status", "sandbox_policy",
	                                  "sandbox_admission_identity",
	                                  "contract_snapshot_identity", "selection",
	                                  "attestations_digest", "challenges_digest",
	                                  "evidence_digest", "signed_at", "acceptances_digest",
	                                  "trust_chain_identities", "-error", "-revision",
	                                  "-worktree"};
	static const char *const sp[] = {
		"canonical_identity", "restriction_overlay_identities", "effective_identity",
		"target_platform", "provider_target", "provider_adapter_identity",
		"capability_identity", "status", "segments", "transition_identities",
		"runtime_controls", "application_obligations", "attestation"};
	static const char *const seg[] = {
		"id", "canonical_policy_identity", "effective_policy_identity",
		"-platform_check_identity", "-initial_attestation_identity",
		"-terminal_attestation_identity", "status", "-container_id", "-exit_status",
		"-timed_out", "-rendered_policy_identity", "-applied_policy_identity",
		"-initial_application_identity", "-terminal_application_identity",
		"-boundary_lease_identity", "-boundary_identity", "-error"};
	if (!shape_ok(r, rc, "receipt", top, "ssbbiossosssisao??") ||
	    !shape_ok(r, json_object_get(rc, "sandbox_policy"), "receipt.sandbox_policy", sp,
	              "sasossssaaaao"))
		return false;
	/* the revision the runner read at admission: a commit id or null (none
	 * resolved); absent in archives written before the member existed */
	const json_t *rev = json_object_get(rc, "revision");
	if (rev != NULL && !json_is_null(rev) && !revision_ok(json_string_value(rev))) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, "receipt.revision",
		     "neither null nor a commit id (40 or 64 lowercase hex digits)");
		return false;
	}
	/* the work tree the runner hashed at admission (runner/worktree.c): a
	 * git tree id of the revision's length, or null (none recorded); it is
	 * hashed only in a repository whose revision resolved */
	const json_t *wt = json_object_get(rc, "worktree");
	if (wt != NULL && !json_is_null(wt) &&
	    (!revision_ok(json_string_value(wt)) || !json_is_string(rev) ||
	     strlen(json_string_value(wt)) != strlen(json_string_value(rev)))) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, "receipt.worktree",
		     "neither null nor a git tree id as long as the receipt's revision");
		return false;
	}
	const json_t *segs = json_object_get(json_object_get(rc, "sandbox_policy"), "segments");
	for (size_t i = 0; i < json_array_size(segs); i++) {
		const json_t *s = json_array_get(segs, i);
		/* values are reconciled one by one in walk_segment */
		if (!shape_ok(r, s, "receipt.sandbox_policy.segments[]", seg, "sss????s?????????"))
			return false;
	}
	return true;
}

/*
 * Receipts and attestations have one envelope: the kid in the protected
 * header, nothing unprotected and, for ECDSA, a low-S signature (what
 * ota_cose_sign1_sign writes and admission demands), so nobody without the
 * key re-wraps or re-signs-by-negation one under another identity (the
 * decoder already refuses non-shortest heads).
 */
static ota_err one_form(const ota_cose_sign1 *m, ota_error *e)
{
	if (!m->kid_protected || m->unprotected_labels != 0)
		return ota_error_set(e, OTA_ERR_ARCHIVE_ENVELOPE, "cose_sign1",
		                     "%s", !m->kid_protected ? "the kid is not in the protected header"
		                                              : "the unprotected header is not empty");
	if (ota_key_sig_is_high_s(m->alg, m->signature))
		return ota_error_set(e, OTA_ERR_ARCHIVE_ENVELOPE, "cose_sign1",
		                     "an ECDSA signature with s in the upper half (signers write low-S)");
	return OTA_OK;
}

/* Receipt: signature by a runner at signed_at, canonical payload. */
static ota_err receipt_setup(vctx *v)
{
	ota_archive_report *r = v->r;
	ota_archive *a = v->a;
	if (a->receipt_unsigned) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_UNSIGNED, "receipt", "the receipt carries no signature");
		return OTA_ERR_ARCHIVE_RECEIPT_UNSIGNED;
	}
	ota_error e;
	ota_error_clear(&e);
	ota_bytes cb = ota_bytes_make(a->receipt.ptr, a->receipt.len);
	char id[OTA_ID_LEN + 1];
	if (ota_sha256_id(cb, id) != OTA_OK || strcmp(id, a->receipt_id) != 0)
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, "receipt.identity",
		     "not the identity of the receipt bytes");
	ota_cose_sign1 m;
	ota_err rc = ota_cose_sign1_decode(cb, NULL, &m, &e);
	if (rc == OTA_OK)
		rc = one_form(&m, &e);
	if (rc != OTA_OK) {
		fail_e(r, &e, "receipt");
		return rc;
	}
	rc = ota_json_parse(m.payload, &v->receipt, &e);
	if (rc != OTA_OK) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, "receipt", "payload: %s", e.what);
		return OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL;
	}
	char *jcs = NULL;
	size_t jl = 0;
	rc = ota_jcs_serialize(v->receipt, &jcs, &jl, NULL);
	bool canon = rc == OTA_OK && jl == m.payload.len && memcmp(jcs, m.payload.ptr, jl) == 0;
	free(jcs);
	const json_t *sa = json_object_get(v->receipt, "signed_at");
	if (!canon || !seq(sget(v->receipt, "kind"), "ota.receipt/v1") || !json_is_integer(sa) ||
	    !json_is_object(json_object_get(v->receipt, "sandbox_policy"))) {
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL, "receipt",
		     "payload is not the canonical JSON of an ota.receipt/v1 with signed_at");
		return OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL;
	}
	v->signed_at = json_integer_value(sa);
	if (!receipt_shape(r, v->receipt))
		return OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL;
	v->sp = json_object_get(v->receipt, "sandbox_policy");
	v->txn = sget(v->receipt, "txn");
	v->lane = sget(json_object_get(v->receipt, "selection"), "lane");
	if (trust_setup(v) != OTA_OK)
		return OTA_ERR_ARCHIVE_TRUST_UNPINNED;
	const ota_key *key = NULL;
	const ota_trust_principal *who = NULL;
	/* the runner is trusted for its scope only: the lane it ran, the
	 * provider target it ran it on, and the gate's repository when named
	 * (a receipt without a lane or target matches no pattern: "" is
	 * refused by every one but "*") */
	const char *target = sget(v->sp, "provider_target");
	ota_trust_scope_req scope = {v->o->repo, v->lane != NULL ? v->lane : "",
	                             target != NULL ? target : ""};
	rc = ota_trust_lookup(v->root, m.kid, m.alg, OTA_TRUST_ROLE_RUNNER, &scope, v->signed_at,
	                      &key, &who, &e);
	if (rc == OTA_OK) {
		rc = ota_cose_sign1_check(&m, key, ota_bytes_make(NULL, 0), &e);
		r->sigs++;
	}
	if (rc != OTA_OK) {
		fail_e(r, &e, "receipt");
		return rc;
	}
	if ((rc = current_judge(v, m.kid, m.alg, OTA_TRUST_ROLE_RUNNER, &scope, v->signed_at,
	                        "receipt")) != OTA_OK)
		return rc;
	snprintf(v->runner, sizeof v->runner, "%s", ota_trust_principal_id(who));
	return OTA_OK;
}

/* "task" or "workflow": the kind of a's lane, as --require-lane and the
 * report's identities.lane spell it */
static const char *lane_kind_name(const ota_archive *a)
{
	return a->lane_kind == OTA_LANE_WORKFLOW ? "workflow" : "task";
}

/* The name of a required lane (NAME, task:NAME or workflow:NAME) and in
 * *kind (when not NULL) "task", "workflow" or NULL (either). */
static const char *lane_split(const char *req, const char **kind)
{
	const char *k = NULL;
	if (strncmp(req, "task:", 5) == 0) {
		k = "task";
		req += 5;
	} else if (strncmp(req, "workflow:", 9) == 0) {
		k = "workflow";
		req += 9;
	}
	if (kind != NULL)
		*kind = k;
	return req;
}

/* NULL when the gate's --require-lane/-overlay/-effective are well formed,
 * else what is wrong (usage, before anything is read). */
static const char *require_usage(const ota_archive_verify_opts *o)
{
	if (o->repo != NULL) {
		size_t n = strnlen(o->repo, OTA_MAX_NAME_BYTES + 1);
		bool printable = n > 0 && n <= OTA_MAX_NAME_BYTES;
		for (size_t i = 0; printable && i < n; i++)
			printable = (unsigned char)o->repo[i] > 0x20 && (unsigned char)o->repo[i] < 0x7f;
		if (!printable)
			return "repo: a repository is 1..256 printable ASCII bytes without spaces";
	}
	if (o->require_lane != NULL) {
		size_t n = strnlen(lane_split(o->require_lane, NULL), OTA_MAX_NAME_BYTES + 1);
		if (n == 0 || n > OTA_MAX_NAME_BYTES)
			return "require_lane: a lane is NAME, task:NAME or workflow:NAME (1..256 bytes)";
	}
	if (o->n_require_overlays > OTA_MAX_OVERLAYS ||
	    (o->n_require_overlays > 0 && o->require_overlays == NULL))
		return "require_overlays: at most 64 overlay identities";
	for (size_t i = 0; i < o->n_require_overlays; i++)
		if (!ota_id_is_valid(o->require_overlays[i]))
			return "require_overlays: an overlay identity is sha256: and 64 lowercase hex digits";
	if (o->require_effective != NULL && !ota_id_is_valid(o->require_effective))
		return "require_effective: a policy identity is sha256: and 64 lowercase hex digits";
	return NULL;
}

/* The gate's requirements on the run, against what was re-derived (the
 * selection reconciled with the receipt, the overlays from their embedded
 * bytes, the effective policy compiled from the contract). */
static void require_checks(vctx *v)
{
	const ota_archive_verify_opts *o = v->o;
	ota_archive_report *r = v->r;
	const ota_archive *a = v->a;
	const char *kind = lane_kind_name(a);
	if (o->require_lane != NULL) {
		const char *want_kind = NULL, *want = lane_split(o->require_lane, &want_kind);
		if (!seq(a->lane, want) || (want_kind != NULL && strcmp(kind, want_kind) != 0))
			fail(r, OTA_ERR_ARCHIVE_LANE_NOT_REQUIRED, "selection.lane",
			     "the run's lane is %s %.256s, required %.300s", kind,
			     a->lane != NULL ? a->lane : "(none)", o->require_lane);
	}
	if (v->policy == NULL) /* refused already: nothing re-derived to compare */
		return;
	const json_t *applied = json_object_get(ota_policy_effective_json(v->policy),
	                                        "restriction_overlay_identities");
	for (size_t i = 0; i < o->n_require_overlays; i++) {
		bool found = false;
		size_t k;
		json_t *id;
		json_array_foreach(applied, k, id)
		{
			if (seq(json_string_value(id), o->require_overlays[i]))
				found = true;
		}
		if (!found)
			fail(r, OTA_ERR_ARCHIVE_OVERLAY_NOT_APPLIED, "overlays",
			     "%s was not applied (the run applied %zu restriction overlay%s)",
			     o->require_overlays[i], json_array_size(applied),
			     json_array_size(applied) == 1 ? "" : "s");
	}
	if (o->require_effective != NULL &&
	    !seq(ota_policy_effective_identity(v->policy), o->require_effective))
		fail(r, OTA_ERR_ARCHIVE_EFFECTIVE_NOT_REQUIRED, "effective",
		     "re-derived %s, required %s", ota_policy_effective_identity(v->policy),
		     o->require_effective);
}

/* Contract -> canonical -> overlays -> effective -> admission, compared. */
static void policy_checks(vctx *v)
{
	ota_archive_report *r = v->r;
	ota_archive *a = v->a;
	ota_error e;
	ota_error_clear(&e);
	char snap[OTA_ID_LEN + 1];
	bool bound = true;
	if (ota_sha256_id(ota_bytes_make(a->contract.ptr, a->contract.len), snap) != OTA_OK ||
	    strcmp(snap, a->contract_snapshot) != 0) {
		fail(r, OTA_ERR_ARCHIVE_CONTRACT_MISMATCH, "contract.snapshot_identity",
		     "the bytes hash to %s", snap);
		bound = false;
	}
	if (!seq(sget(v->receipt, "contract_snapshot_identity"), snap)) {
		fail(r, OTA_ERR_ARCHIVE_CONTRACT_MISMATCH, "receipt.contract_snapshot_identity",
		     "not the embedded contract");
		bound = false;
	}
	if (!json_equal(json_object_get(v->receipt, "selection"), (json_t *)(uintptr_t)a->selection))
		fail(r, OTA_ERR_ARCHIVE_SELECTION, "receipt.selection", "differs from the archive's");
	/* bytes the signed receipt does not name are nobody's contract: they
	 * are not parsed or compiled (an edited archive would otherwise choose
	 * what the verifier spends its time and memory on) */
	if (!bound)
		return;
	ota_err rc = ota_contract_load(ota_bytes_make(a->contract.ptr, a->contract.len),
	                               a->contract_name, &v->contract, &e);
	if (rc != OTA_OK) {
		fail_e(r, &e, "contract");
		return;
	}
	ota_overlay *ovs[ARC_MAX_OVERLAYS + 1];
	size_t nov = 0;
	for (size_t i = 0; i < a->nov; i++) {
		ota_overlay *ov = NULL;
		rc = ota_overlay_load(ota_bytes_make(a->ov[i].bytes.ptr, a->ov[i].bytes.len),
		                      a->ov[i].name, a->ov[i].source, &ov, &e);
		if (rc != OTA_OK) {
			fail(r, OTA_ERR_ARCHIVE_OVERLAY_MISMATCH, "overlays", "%s: %s", ota_err_name(rc),
			     e.what);
			goto out;
		}
		if (ov != NULL)
			ovs[nov++] = ov;
	}
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	po.native_platform = a->native;
	rc = ota_policy_compile(v->contract, a->lane_kind, a->lane, &po,
	                        (const ota_overlay *const *)ovs, nov, &v->policy, &e);
	if (rc != OTA_OK) {
		fail(r, OTA_ERR_ARCHIVE_SELECTION, "selection", "%s: %s", ota_err_name(rc), e.what);
		goto out;
	}
	const json_t *eff = ota_policy_effective_json(v->policy);
	const json_t *sp = v->sp;
	if (!seq(sget(sp, "canonical_identity"), ota_policy_canonical_identity(v->policy)))
		fail(r, OTA_ERR_ARCHIVE_CANONICAL_MISMATCH, "receipt.sandbox_policy.canonical_identity",
		     "re-derived %s", ota_policy_canonical_identity(v->policy));
	if (!json_equal(json_object_get(sp, "restriction_overlay_identities"),
	                json_object_get(eff, "restriction_overlay_identities")))
		fail(r, OTA_ERR_ARCHIVE_OVERLAY_MISMATCH,
		     "receipt.sandbox_policy.restriction_overlay_identities",
		     "differs from the overlays re-derived from the embedded bytes");
	if (!seq(sget(sp, "effective_identity"), ota_policy_effective_identity(v->policy)))
		fail(r, OTA_ERR_ARCHIVE_EFFECTIVE_MISMATCH, "receipt.sandbox_policy.effective_identity",
		     "re-derived %s", ota_policy_effective_identity(v->policy));
	if (!json_equal(json_object_get(sp, "target_platform"),
	                json_object_get(eff, "target_platform")))
		fail(r, OTA_ERR_ARCHIVE_PLATFORM_MISMATCH, "receipt.sandbox_policy.target_platform",
		     "differs from the re-derived target platform");
	/* admission, as the runner did it */
	ota_capability_descriptor desc;
	const char *target = sget(sp, "provider_target");
	const char *txt = target != NULL ? ota_policy_builtin_descriptor(target) : NULL;
	ota_platform host = a->native;
	if (txt == NULL ||
	    ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &host, &desc, &e) !=
	            OTA_OK) {
		fail(r, OTA_ERR_ARCHIVE_CAPABILITY_MISMATCH, "receipt.sandbox_policy.provider_target",
		     "no descriptor for this target");
		goto out;
	}
	ota_admission_request req = {a->agent, a->target, &desc, 1};
	bool admitted = false;
	rc = ota_policy_admit(v->policy, &req, &v->adm, &admitted, &e);
	if (rc != OTA_OK || !admitted) {
		fail(r, OTA_ERR_ARCHIVE_ADMISSION_MISMATCH, "selection",
		     "the re-derived admission refuses this lane");
	} else if (!digest_is(v->adm, json_object_get(v->receipt, "sandbox_admission_identity"))) {
		fail(r, OTA_ERR_ARCHIVE_ADMISSION_MISMATCH, "receipt.sandbox_admission_identity",
		     "differs from the re-derived admission");
	}
	if (v->adm != NULL &&
	    !seq(sget(sp, "capability_identity"),
	         sget(json_object_get(v->adm, "provider_evaluation"), "capability_identity")))
		fail(r, OTA_ERR_ARCHIVE_CAPABILITY_MISMATCH, "receipt.sandbox_policy.capability_identity",
		     "not the capability the admission evaluated");
	if (v->adm != NULL &&
	    !json_equal(json_object_get(sp, "application_obligations"),
	                json_object_get(v->adm, "application_obligations")))
		fail(r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, "receipt.sandbox_policy.application_obligations",
		     "differs from the admission's obligations");
out:
	for (size_t i = 0; i < nov; i++)
		ota_overlay_free(ovs[i]);
}

/* Identities of the evidence, challenges; order lists of the receipt. */
static int nonce_cmp(const void *x, const void *y)
{
	const arc_chal *a = *(const arc_chal *const *)x, *b = *(const arc_chal *const *)y;
	if (a->nonce_len != b->nonce_len)
		return a->nonce_len < b->nonce_len ? -1 : 1;
	return memcmp(a->nonce, b->nonce, a->nonce_len);
}

/* ota_challenge_identity of a parsed challenge (its content as ota_challenge). */
static ota_err ch_identity(const arc_chal *x, char id[OTA_ID_LEN + 1])
{
	ota_challenge c;
	memset(&c, 0, sizeof c);
	memcpy(c.nonce, x->nonce, x->nonce_len);
	c.nonce_len = x->nonce_len;
	c.epoch = x->epoch;
	c.issued_at = x->issued_at;
	c.expires_at = x->expires_at;
	c.consumed_at = x->consumed_at;
	/* the parse refused longer ones: nothing is truncated */
	snprintf(c.txn, sizeof c.txn, "%s", x->txn);
	snprintf(c.issuer, sizeof c.issuer, "%s", x->issuer);
	snprintf(c.scope, sizeof c.scope, "%s", x->scope);
	return ota_challenge_identity(&c, id);
}

static ota_err index_members(vctx *v)
{
	ota_archive_report *r = v->r;
	ota_archive *a = v->a;
	v->nev = json_array_size(a->evidence);
	v->ev_idx = calloc(v->nev + 1, sizeof *v->ev_idx);
	v->ev_ids = calloc(v->nev + 1, sizeof *v->ev_ids);
	v->ev_cfg = calloc(v->nev + 1, sizeof *v->ev_cfg);
	v->ev_ref = calloc(v->nev + 1, sizeof *v->ev_ref);
	v->ch_idx = calloc(a->nch + 1, sizeof *v->ch_idx);
	v->ch_uses = calloc(a->nch + 1, sizeof *v->ch_uses);
	v->ai = calloc(a->natt + 1, sizeof *v->ai);
	for (size_t i = 0; v->ai != NULL && i < a->natt + 1; i++) {
		att_claims *c = &v->ai[i].claims;
		c->segment = c->policy_canonical = c->policy_effective = c->boundary = c->prior = "";
	}
	v->nai = v->ai != NULL ? a->natt : 0;
	v->att_idx = calloc(a->natt + 1, sizeof *v->att_idx);
	v->acc = calloc(a->nacc + 1, sizeof *v->acc);
	v->acc_ok = calloc(a->nacc + 1, sizeof *v->acc_ok);
	v->acc_alg = calloc(a->nacc + 1, sizeof *v->acc_alg);
	v->acc_idx = calloc(a->nacc + 1, sizeof *v->acc_idx);
	if (v->ev_idx == NULL || v->ev_ids == NULL || v->ev_cfg == NULL || v->ev_ref == NULL ||
	    v->ch_idx == NULL ||
	    v->ch_uses == NULL || v->ai == NULL || v->att_idx == NULL || v->acc == NULL ||
	    v->acc_ok == NULL || v->acc_alg == NULL || v->acc_idx == NULL)
		return OTA_ERR_NOMEM;
	jcs_list ev_list;
	jl_open(&ev_list);
	for (size_t i = 0; i < v->nev; i++) {
		/* a rendered policy's config identity is checked in the walk: it
		 * is hashed here, with the record that carries it */
		const json_t *rec = json_array_get(a->evidence, i);
		ota_err ir = seq(sget(rec, "kind"), "ota.rendered_policy/v1")
		                     ? ota_json_identity_and(rec, v->ev_ids[i], "config", v->ev_cfg[i], NULL)
		                     : ota_json_identity(rec, v->ev_ids[i], NULL);
		if (ir != OTA_OK) {
			fail(r, OTA_ERR_ARCHIVE_MALFORMED, "evidence[]", "record %zu has no identity", i);
			snprintf(v->ev_ids[i], sizeof v->ev_ids[i], "invalid:%zu", i);
		}
		v->ev_idx[i] = (idx_entry){v->ev_ids[i], i};
		jl_item(&ev_list, v->ev_ids[i], false, 0);
	}
	/* the same record may appear more than once (one platform check per
	 * segment); the receipt signs the whole list in order */
	qsort(v->ev_idx, v->nev, sizeof *v->ev_idx, idx_cmp);
	if (!jl_digest_is(&ev_list, json_object_get(v->receipt, "evidence_digest")))
		fail(r, OTA_ERR_ARCHIVE_ORDER, "receipt.evidence_digest",
		     "the archive's evidence is not the list the receipt signs, in order");
	for (size_t i = 0; i < a->nch; i++) {
		char id[OTA_ID_LEN + 1];
		if (ch_identity(&a->ch[i].c, id) != OTA_OK || strcmp(id, a->ch[i].id) != 0)
			fail(r, OTA_ERR_ARCHIVE_CHALLENGE_IDENTITY, "challenges[]",
			     "challenge %zu: stated identity is not its content's", i);
		v->ch_idx[i] = (idx_entry){a->ch[i].id, i};
	}
	qsort(v->ch_idx, a->nch, sizeof *v->ch_idx, idx_cmp);
	for (size_t i = 1; i < a->nch; i++)
		if (strcmp(v->ch_idx[i].id, v->ch_idx[i - 1].id) == 0) {
			v->ch_dup = true;
			fail(r, OTA_ERR_ARCHIVE_DUPLICATE, "challenges[]", "challenge %s appears twice",
			     v->ch_idx[i].id);
		}
	/* single use is the nonce's: two challenge records with one nonce (say,
	 * of two epochs) are one challenge answered twice */
	const arc_chal **by_nonce = calloc(a->nch + 1, sizeof *by_nonce);
	if (by_nonce == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < a->nch; i++)
		by_nonce[i] = &a->ch[i].c;
	qsort(by_nonce, a->nch, sizeof *by_nonce, nonce_cmp);
	for (size_t i = 1; i < a->nch; i++)
		if (nonce_cmp(&by_nonce[i], &by_nonce[i - 1]) == 0) {
			fail(r, OTA_ERR_ARCHIVE_CHALLENGE_REUSED, "challenges[]",
			     "two challenges carry the same nonce");
			break;
		}
	free(by_nonce);
	jcs_list att_list, ch_list;
	jl_open(&att_list);
	jl_open(&ch_list);
	int64_t last = 0;
	for (size_t i = 0; i < a->natt; i++) {
		v->att_idx[i] = (idx_entry){a->att[i].id, i};
		jl_item(&att_list, a->att[i].id, false, 0);
		size_t ci = idx_find(v->ch_idx, a->nch, a->att[i].chid);
		int64_t used = ci != SIZE_MAX ? a->ch[ci].c.consumed_at : -1;
		if (used > last)
			last = used;
		jl_item(&ch_list, a->att[i].chid, true, used);
	}
	for (size_t i = 0; i < a->nch; i++)
		if (i >= a->natt || strcmp(a->ch[i].id, a->att[i].chid) != 0) {
			fail(r, OTA_ERR_ARCHIVE_ORDER, "challenges",
			     "challenge %zu is not the challenge of attestation %zu", i, i);
			break;
		}
	if (a->natt > 0 && last != v->signed_at)
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, "receipt.signed_at",
		     "the receipt is not signed as of its last acceptance (%lld)", (long long)last);
	qsort(v->att_idx, a->natt, sizeof *v->att_idx, idx_cmp);
	for (size_t i = 1; i < a->natt; i++)
		if (strcmp(v->att_idx[i].id, v->att_idx[i - 1].id) == 0)
			fail(r, OTA_ERR_ARCHIVE_DUPLICATE, "attestations[]", "attestation %s appears twice",
			     v->att_idx[i].id);
	if (!jl_digest_is(&att_list, json_object_get(v->receipt, "attestations_digest")))
		fail(r, OTA_ERR_ARCHIVE_ORDER, "receipt.attestations_digest",
		     "the archive's attestations are not the list the receipt signs, in order");
	if (!jl_digest_is(&ch_list, json_object_get(v->receipt, "challenges_digest")))
		fail(r, OTA_ERR_ARCHIVE_ORDER, "receipt.challenges_digest",
		     "the attestations' challenges are not the ones the receipt signs, in order");
	jcs_list acc_list;
	jl_open(&acc_list);
	for (size_t i = 0; i < a->nacc; i++)
		jl_item(&acc_list, a->acc[i].id, false, 0);
	if (!jl_digest_is(&acc_list, json_object_get(v->receipt, "acceptances_digest")))
		fail(r, OTA_ERR_ARCHIVE_ORDER, "receipt.acceptances_digest",
		     "the archive's acceptances are not the ones the receipt signs, in order");
	return OTA_OK;
}

/* Acceptances: each verified by a verifier key at its own acceptance time. */
static void acceptance_checks(vctx *v)
{
	ota_archive *a = v->a;
	size_t n = 0;
	/* a batch's shared signature is checked once (NULL cache: each time) */
	ota_acceptance_cache *cache = a->nacc > 1 ? ota_acceptance_cache_new() : NULL;
	for (size_t i = 0; i < a->nacc; i++) {
		ota_bytes cb = ota_bytes_make(a->acc[i].cose.ptr, a->acc[i].cose.len);
		char id[OTA_ID_LEN + 1];
		if (ota_sha256_id(cb, id) != OTA_OK || strcmp(id, a->acc[i].id) != 0) {
			fail(v->r, OTA_ERR_ARCHIVE_ATTESTATION_IDENTITY, "acceptances[]",
			     "acceptance %zu: stated identity is not the hash of its bytes", i);
			continue;
		}
		ota_cose_sign1 m;
		ota_error e;
		ota_error_clear(&e);
		int64_t at = 0;
		ota_err rc = ota_cose_sign1_decode(cb, NULL, &m, &e);
		if (rc == OTA_OK && !acceptance_time(m.payload, &at))
			rc = ota_error_set(&e, OTA_ERR_ACCEPTANCE_MALFORMED, "acceptance", "no iat");
		if (rc == OTA_OK)
			rc = ota_acceptance_verify_cached(cb, v->root, at, cache, &v->acc[i], &e);
		v->r->sigs++;
		if (rc == OTA_OK && (v->acc[i].accepted_at != at || strcmp(v->acc[i].result, "accepted") != 0))
			rc = ota_error_set(&e, OTA_ERR_ARCHIVE_ACCEPTANCE_MISMATCH, "acceptance",
			                   "not an acceptance at its own time");
		if (rc != OTA_OK) {
			fail_e(v->r, &e, "acceptances[]");
			continue;
		}
		if (current_judge(v, ota_bytes_make(v->acc[i].verifier_kid, 32), m.alg,
		                  OTA_TRUST_ROLE_VERIFIER, NULL, at, "acceptances[]") != OTA_OK)
			continue;
		v->acc_ok[i] = true;
		v->acc_alg[i] = m.alg;
		v->acc_idx[n++] = (idx_entry){v->acc[i].attestation, i};
	}
	ota_acceptance_cache_free(cache);
	qsort(v->acc_idx, n, sizeof *v->acc_idx, idx_cmp);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v->acc_idx[i].id, v->acc_idx[i - 1].id) == 0)
			fail(v->r, OTA_ERR_ARCHIVE_DUPLICATE, "acceptances[]",
			     "two acceptances of attestation %s", v->acc_idx[i].id);
	v->nacc_idx = n;
}

static bool platform_is(const ota_attestation *c, const json_t *tp)
{
	const char *var = sget(tp, "variant");
	return seq(c->platform_os, sget(tp, "os")) && seq(c->platform_arch, sget(tp, "architecture")) &&
	       seq(c->platform_variant, var != NULL ? var : "");
}

_Static_assert(sizeof(((att_claims *)0)->kind) == sizeof(((ota_attestation *)0)->kind),
               "att_claims.kind holds an attestation kind");

/* Keeps what the walk reads of claims c in ai (exact copies). */
static ota_err att_keep(att_info *ai, const ota_attestation *c, ota_error *e)
{
	const char *src[5] = {c->segment, c->policy_canonical, c->policy_effective, c->boundary,
	                      c->prior};
	size_t len[5], total = 0;
	for (int k = 0; k < 5; k++) {
		len[k] = strlen(src[k]);
		total += len[k] + 1;
	}
	char *buf = malloc(total);
	if (buf == NULL)
		return ota_error_set(e, OTA_ERR_NOMEM, "attestation", "out of memory");
	const char **dst[5] = {&ai->claims.segment, &ai->claims.policy_canonical,
	                       &ai->claims.policy_effective, &ai->claims.boundary, &ai->claims.prior};
	size_t off = 0;
	for (int k = 0; k < 5; k++) {
		memcpy(buf + off, src[k], len[k] + 1);
		*dst[k] = buf + off;
		off += len[k] + 1;
	}
	memcpy(ai->claims.kind, c->kind, sizeof ai->claims.kind);
	ai->claims.has_prior = c->has_prior;
	free(ai->strings);
	ai->strings = buf;
	return OTA_OK;
}

/* One attestation: identity, signature at acceptance time, bindings. */
static void attestation_check(vctx *v, size_t i)
{
	ota_archive_report *r = v->r;
	ota_archive *a = v->a;
	att_info *ai = &v->ai[i];
	ai->rec = SIZE_MAX;
	char where[64];
	snprintf(where, sizeof where, "attestations[%zu]", i);
	ota_bytes cb = ota_bytes_make(a->att[i].cose.ptr, a->att[i].cose.len);
	char id[OTA_ID_LEN + 1];
	if (ota_sha256_id(cb, id) != OTA_OK || strcmp(id, a->att[i].id) != 0) {
		fail(r, OTA_ERR_ARCHIVE_ATTESTATION_IDENTITY, where,
		     "stated identity is not the hash of its bytes");
		return;
	}
	ota_error e;
	ota_error_clear(&e);
	ota_cose_sign1 m;
	ota_attestation claims;
	ota_err rc = ota_cose_sign1_decode(cb, NULL, &m, &e);
	if (rc == OTA_OK)
		rc = one_form(&m, &e);
	if (rc == OTA_OK)
		rc = ota_attestation_parse(m.payload, &claims, &e);
	if (rc == OTA_OK)
		rc = att_keep(ai, &claims, &e);
	if (rc != OTA_OK) {
		fail_e(r, &e, where);
		return;
	}
	const ota_attestation *c = &claims;
	/* its challenge: the i-th when it has that identity (the archive lists
	 * them in the attestations' order), which with no identity listed
	 * twice is the one the search finds */
	size_t ci = !v->ch_dup && i < a->nch && strcmp(a->ch[i].id, a->att[i].chid) == 0
	                    ? i
	                    : idx_find(v->ch_idx, a->nch, a->att[i].chid);
	const arc_chal *ch = ci != SIZE_MAX ? &a->ch[ci].c : NULL;
	if (ch == NULL || ch->nonce_len != c->nonce_len ||
	    memcmp(ch->nonce, c->nonce, c->nonce_len) != 0) {
		fail(r, OTA_ERR_ARCHIVE_CHALLENGE_UNBOUND, where,
		     "its nonce is not the challenge the archive names for it");
		return;
	}
	if (++v->ch_uses[ci] > 1)
		fail(r, OTA_ERR_ARCHIVE_CHALLENGE_REUSED, where, "challenge %s answers twice",
		     a->att[i].chid);
	/* external (accepted by a verifier) or runner-owned */
	size_t acc = idx_find(v->acc_idx, v->nacc_idx, a->att[i].id);
	bool external = acc != SIZE_MAX;
	int64_t judged = external ? v->acc[acc].accepted_at : ch->consumed_at;
	const ota_key *key = NULL;
	const ota_trust_principal *who = NULL;
	ota_trust_scope_req scope = {v->o->repo, v->lane != NULL ? v->lane : "", c->provider};
	rc = ota_trust_lookup(v->root, m.kid, m.alg,
	                      external ? OTA_TRUST_ROLE_ISSUER : OTA_TRUST_ROLE_RUNNER, &scope, judged,
	                      &key, &who, &e);
	if (rc == OTA_OK) {
		rc = ota_cose_sign1_check(&m, key, ota_bytes_make(NULL, 0), &e);
		r->sigs++;
	}
	if (rc != OTA_OK) {
		if (!external && rc == OTA_ERR_TRUST_ROLE_MISMATCH)
			fail(r, OTA_ERR_ARCHIVE_ACCEPTANCE_MISSING, where,
			     "signed by an issuer but accepted by no trusted verifier");
		else
			fail_e(r, &e, where);
		return;
	}
	if (current_judge(v, m.kid, m.alg, external ? OTA_TRUST_ROLE_ISSUER : OTA_TRUST_ROLE_RUNNER,
	                  &scope, judged, where) != OTA_OK)
		return;
	bool ok = true;
	const char *pid = ota_trust_principal_id(who);
	if (strcmp(c->iss, pid) != 0 || (!external && strcmp(pid, v->runner) != 0)) {
		fail(r, OTA_ERR_ARCHIVE_ISSUER_MISMATCH, where, "iss %s, signed by %s", c->iss, pid);
		ok = false;
	}
	if (strcmp(c->trust_root, v->root_id) != 0) {
		fail(r, OTA_ERR_ARCHIVE_TRUST_ROOT_MISMATCH, where, "bound to %s", c->trust_root);
		ok = false;
	}
	if (strcmp(ch->txn, c->txn) != 0 || strcmp(ch->issuer, c->iss) != 0 ||
	    strcmp(ch->scope, c->provider) != 0) {
		fail(r, OTA_ERR_ARCHIVE_CHALLENGE_UNBOUND, where,
		     "the challenge is bound to another txn, issuer or scope");
		ok = false;
	}
	if (judged != ch->consumed_at || judged < ch->issued_at || judged >= ch->expires_at ||
	    c->iat < ch->issued_at - OTA_ATT_MAX_SKEW || c->iat > judged + OTA_ATT_MAX_SKEW ||
	    c->exp <= judged ||
	    ch->expires_at - ch->issued_at > OTA_NONCE_MAX_TTL) {
		fail(r, OTA_ERR_ARCHIVE_NOT_FRESH, where,
		     "not fresh at acceptance (issued %lld, accepted %lld, iat %lld, exp %lld)",
		     (long long)ch->issued_at, (long long)judged, (long long)c->iat, (long long)c->exp);
		ok = false;
	}
	if (external) {
		const ota_acceptance *ac = &v->acc[acc];
		if (strcmp(ac->challenge, a->att[i].chid) != 0 || ac->nonce_len != c->nonce_len ||
		    memcmp(ac->nonce, c->nonce, c->nonce_len) != 0 || strcmp(ac->issuer, pid) != 0 ||
		    strcmp(ac->txn, c->txn) != 0 || strcmp(ac->boundary, c->boundary) != 0 ||
		    strcmp(ac->trust_root, v->root_id) != 0 ||
		    strcmp(ac->prior, c->has_prior ? c->prior : "") != 0) {
			fail(r, OTA_ERR_ARCHIVE_ACCEPTANCE_MISMATCH, where,
			     "the acceptance does not bind this attestation's challenge and claims");
			ok = false;
		}
		/* the verifier that accepted it is trusted for this scope too (its
		 * acceptance alone was judged for the role): a verifier scoped to
		 * other providers, lanes or repositories vouches for nothing here */
		ota_bytes vk = ota_bytes_make(ac->verifier_kid, sizeof ac->verifier_kid);
		ota_error ve;
		ota_error_clear(&ve);
		if (ota_trust_lookup(v->root, vk, v->acc_alg[acc], OTA_TRUST_ROLE_VERIFIER, &scope,
		                     judged, NULL, NULL, &ve) != OTA_OK) {
			fail(r, ve.code, where, "its acceptance's verifier %s: %s", ac->verifier_id,
			     ve.what);
			ok = false;
		} else if (current_judge(v, vk, v->acc_alg[acc], OTA_TRUST_ROLE_VERIFIER, &scope,
		                         judged, where) != OTA_OK) {
			ok = false;
		}
	}
	const json_t *sp = v->sp;
	if (!seq(c->txn, v->txn) || !seq(c->provider, sget(sp, "provider_target")) ||
	    !platform_is(c, json_object_get(sp, "target_platform")) ||
	    !seq(c->adapter, sget(sp, "provider_adapter_identity"))) {
		fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, where,
		     "bound to another txn, provider, adapter or platform");
		ok = false;
	}
	if (!body_id(c->body, ai->record)) {
		fail(r, OTA_ERR_ARCHIVE_EVIDENCE_MISSING, where, "its body names no record");
		ok = false;
	} else {
		size_t pos = ev_first(v, ai->record);
		if (pos == SIZE_MAX) {
			fail(r, OTA_ERR_ARCHIVE_EVIDENCE_MISSING, where, "record %s is not in the archive",
			     ai->record);
			ok = false;
		} else {
			ai->rec = v->ev_idx[pos].i;
			ev_mark_at(v, pos);
		}
	}
	ai->ok = ok;
}

/* ---- the structural walk over the receipt's segments ---- */

typedef struct walk {
	size_t next;                     /* next attestation expected */
	char lane_prior[OTA_ID_LEN + 1]; /* capability or last transition attestation */
	char prev_terminal[OTA_ID_LEN + 1];
	size_t ntrans;
	char lane_boundary[OTA_MAX_TXN_BYTES + 8];
	const char *runtime;
	bool counts_exit; /* the last segment's exit status counts (its process ran) */
	const json_t *last_error; /* the error of the last segment's terminal record */
} walk;

/* The next attestation if it has this kind; NULL otherwise (not consumed). */
static att_info *take(vctx *v, walk *w, const char *kind)
{
	if (w->next >= v->a->natt)
		return NULL;
	att_info *ai = &v->ai[w->next];
	if (strcmp(ai->claims.kind, kind) != 0)
		return NULL;
	ai->used = true;
	w->next++;
	return ai;
}

static const char *att_id(vctx *v, const att_info *ai)
{
	return v->a->att[ai - v->ai].id;
}

static bool bound_to_segment(const att_info *ai, const char *sid, const json_t *seg)
{
	return seq(ai->claims.segment, sid) &&
	       seq(ai->claims.policy_canonical, sget(seg, "canonical_policy_identity")) &&
	       seq(ai->claims.policy_effective, sget(seg, "effective_policy_identity"));
}

/* The five statuses a lane can have (--require-status takes only these). */
static bool status_known(const char *s)
{
	static const char *const names[] = {"enforced_through_completion", "not_started",
	                                    "enforcement_unknown_after_interruption",
	                                    "enforcement_lost", "refused"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (seq(s, names[i]))
			return true;
	return false;
}

/* Rank of terminal states: refused > lost > unknown > not_started > enforced. */
static int rank(const char *s)
{
	static const char *const names[] = {"enforced_through_completion", "not_started",
	                                    "enforcement_unknown_after_interruption",
	                                    "enforcement_lost", "refused"};
	for (int i = 0; i < 5; i++)
		if (seq(s, names[i]))
			return i;
	return 4;
}

const char *ota_archive_lane_status(const char *worst, bool execution_started)
{
	static const char *const enforced = "enforced_through_completion";
	static const char *const unknown = "enforcement_unknown_after_interruption";
	static const char *const lost = "enforcement_lost";
	static const char *const refused = "refused";
	static const char *const not_started = "not_started";
	if (execution_started) {
		/* upstream's rule: enforced only if every segment is; else unknown
		 * if a segment is; else lost (a segment refused or not started
		 * after a start included) */
		if (worst == NULL || seq(worst, enforced))
			return enforced;
		return seq(worst, unknown) ? unknown : lost;
	}
	if (worst == NULL || seq(worst, enforced) || seq(worst, not_started))
		return not_started;
	if (seq(worst, lost))
		return lost;
	if (seq(worst, unknown))
		return unknown;
	return refused;
}

/* The mount of a list whose key (destination / path) is dest, or NULL. */
static const json_t *mount_at(const json_t *mounts, const char *key, const char *dest)
{
	for (size_t i = 0; i < json_array_size(mounts); i++) {
		const json_t *m = json_array_get(mounts, i);
		if (seq(sget(m, key), dest))
			return m;
	}
	return NULL;
}

/* the array of strings holds s (a mount's options, a list of paths) */
static bool opt_has(const json_t *opts, const char *o)
{
	for (size_t i = 0; i < json_array_size(opts); i++)
		if (seq(json_string_value(json_array_get(opts, i)), o))
			return true;
	return false;
}

/*
 * A rendered (OCI config) mount is read-only when its options say ro/rro:
 * 1 read-only, 0 writable, -1 absent or contradictory (a read-only and a
 * writable option together: the runtime applies them in order, the
 * renderer never writes both).
 */
static int rendered_ro(const json_t *m)
{
	if (m == NULL)
		return -1;
	const json_t *o = json_object_get(m, "options");
	if (!json_is_array(o))
		return -1;
	bool ro = opt_has(o, "ro") || opt_has(o, "rro");
	bool rw = opt_has(o, "rw") || opt_has(o, "rrw");
	return ro && rw ? -1 : ro ? 1 : 0;
}

static int applied_ro(const json_t *m)
{
	const json_t *ro = json_object_get(m, "ro");
	return json_is_boolean(ro) ? (json_is_true(ro) ? 1 : 0) : -1;
}

static bool within_workspace(const char *p)
{
	return p != NULL && strncmp(p, "/workspace", 10) == 0 && (p[10] == '\0' || p[10] == '/');
}

/* p is /workspace/<one of the paths of list> */
static bool declared_in(const json_t *list, const char *p)
{
	if (p == NULL || strncmp(p, "/workspace/", 11) != 0)
		return false;
	for (size_t i = 0; i < json_array_size(list); i++)
		if (seq(json_string_value(json_array_get(list, i)), p + 11))
			return true;
	return false;
}

/*
 * The outermost writable mount above the relative path rel under boundary
 * fs: 0 for the repository when it is writable, else the length of the
 * shallowest declared carve-out at or above it, SIZE_MAX under a read-only
 * parent (every directory below it, down to rel, could be renamed).
 */
static size_t writable_above(const json_t *fs, bool repo_rw, const char *rel)
{
	const json_t *wp = json_object_get(fs, "writable_paths");
	size_t best = repo_rw ? 0 : SIZE_MAX, rl = strlen(rel);
	for (size_t i = 0; i < json_array_size(wp) && best != 0; i++) {
		const char *w = json_string_value(json_array_get(wp, i));
		size_t n = w != NULL ? strlen(w) : 0;
		if (n > 0 && n <= rl && strncmp(rel, w, n) == 0 && (rel[n] == '\0' || rel[n] == '/') &&
		    (best == SIZE_MAX || n < best))
			best = n;
	}
	return best;
}

/*
 * The pins oci_local mounts (docs/oci-local.md): each directory strictly
 * between a protected path and the writable mount above it, neither a
 * carve-out nor a protected path itself, bound read-write over itself so
 * that the task cannot rename it (and the protected mount with it). fn is
 * called with each pin's /workspace path (a pin of two protected paths
 * more than once) until it returns false; false then.
 */
static bool each_pin(const json_t *fs, bool repo_rw, bool (*fn)(const char *dest, void *ctx),
                     void *ctx)
{
	const json_t *wp = json_object_get(fs, "writable_paths");
	const json_t *pp = json_object_get(fs, "protected_paths");
	for (size_t i = 0; i < json_array_size(pp); i++) {
		const char *p = json_string_value(json_array_get(pp, i));
		size_t pl = p != NULL ? strlen(p) : 0;
		if (pl == 0 || pl > OTA_MAX_PATH_BYTES)
			continue;
		size_t w = writable_above(fs, repo_rw, p);
		if (w == SIZE_MAX)
			continue;
		char dest[OTA_MAX_PATH_BYTES + 16];
		snprintf(dest, sizeof dest, "/workspace/%s", p);
		char *rel = dest + 11;
		for (size_t k = w == 0 ? 0 : w + 1; rel[k] != '\0'; k++) {
			if (rel[k] != '/')
				continue;
			rel[k] = '\0';
			/* inside a protected directory (read-only, a mount of its
			 * own) nothing is pinned: a writable pin there would widen */
			if (opt_has(pp, rel)) {
				rel[k] = '/';
				break;
			}
			bool go = opt_has(wp, rel) || fn(dest, ctx);
			rel[k] = '/';
			if (!go)
				return false;
		}
	}
	return true;
}

static bool pin_differs(const char *dest, void *ctx)
{
	return strcmp(dest, (const char *)ctx) != 0;
}

/* p (a /workspace path) is a pin of boundary fs */
static bool is_pin(const json_t *fs, bool repo_rw, const char *p)
{
	return p != NULL && strncmp(p, "/workspace/", 11) == 0 &&
	       !each_pin(fs, repo_rw, pin_differs, (void *)(uintptr_t)p);
}

typedef struct {
	const json_t *cm, *am;
	const char *missing;
	char buf[OTA_MAX_PATH_BYTES + 16];
} pin_check;

static bool pin_mounted(const char *dest, void *ctx)
{
	pin_check *c = ctx;
	if (mount_at(c->cm, "destination", dest) != NULL && mount_at(c->am, "path", dest) != NULL)
		return true;
	snprintf(c->buf, sizeof c->buf, "%s", dest);
	c->missing = c->buf;
	return false;
}

/* The first key (destination / path) that two mounts of the list share, or NULL. */
static const char *mount_twice(const json_t *mounts, const char *key, bool workspace_only)
{
	size_t n = json_array_size(mounts);
	for (size_t i = 0; i < n; i++) {
		const char *a = sget(json_array_get(mounts, i), key);
		if (workspace_only && !within_workspace(a))
			continue;
		for (size_t j = i + 1; j < n; j++)
			if (seq(a, sget(json_array_get(mounts, j), key)))
				return a;
	}
	return NULL;
}

/*
 * Every mount of the rendered config, beyond the declared ones: no
 * destination twice; host directories (bind mounts) only at the repository,
 * its declared carve-outs and protected paths, and the runner's read-only
 * canary; writable binds only where the boundary allows writing; anything
 * else a kernel or scratch filesystem outside the repository. The root
 * filesystem read-only. NULL when they all hold, else what does not.
 */
static const char *rendered_mounts_bad(const json_t *cfg, const json_t *fs, bool repo_rw,
                                       const char **at)
{
	static const char *const pseudo[] = {"proc", "tmpfs", "devpts", "mqueue", "sysfs"};
	const json_t *mounts = json_object_get(cfg, "mounts");
	*at = NULL;
	if (!json_is_array(mounts))
		return "no mount list";
	if (!json_is_true(json_object_get(json_object_get(cfg, "root"), "readonly")))
		return "the root filesystem is writable";
	if ((*at = mount_twice(mounts, "destination", false)) != NULL)
		return "two mounts at one destination";
	const json_t *wp = json_object_get(fs, "writable_paths");
	const json_t *pp = json_object_get(fs, "protected_paths");
	for (size_t i = 0; i < json_array_size(mounts); i++) {
		const json_t *m = json_array_get(mounts, i);
		const char *d = sget(m, "destination"), *type = sget(m, "type");
		const json_t *o = json_object_get(m, "options");
		*at = d;
		int ro = rendered_ro(m);
		if (d == NULL || type == NULL || ro < 0)
			return "a mount without destination, type or consistent ro/rw options";
		if (strcmp(type, "bind") == 0 || opt_has(o, "bind") || opt_has(o, "rbind")) {
			bool ws = strcmp(d, "/workspace") == 0, carve = declared_in(wp, d);
			/* a pin: writable inside a writable mount already */
			bool pin = !ws && !carve && !declared_in(pp, d) && is_pin(fs, repo_rw, d);
			if (!ws && !carve && !pin && !declared_in(pp, d) &&
			    strcmp(d, OTA_OCI_CANARY_DEST) != 0)
				return "a host directory mounted outside the declared paths";
			if (ro == 0 && !carve && !pin && !(ws && repo_rw))
				return "a writable host mount the boundary does not declare";
			continue;
		}
		bool known = false;
		for (size_t k = 0; k < sizeof pseudo / sizeof pseudo[0]; k++)
			known = known || strcmp(type, pseudo[k]) == 0;
		if (!known || within_workspace(d))
			return "a mount that is neither a declared bind nor a kernel or scratch filesystem";
	}
	/* mounts are made in list order: one at or above a protected path
	 * that comes after that path's own mount would cover it (a carve-out
	 * or a pin over protected content) */
	for (size_t i = 0; i < json_array_size(mounts); i++) {
		const char *pd = sget(json_array_get(mounts, i), "destination");
		if (!declared_in(pp, pd))
			continue;
		size_t pl = strlen(pd);
		for (size_t j = i + 1; j < json_array_size(mounts); j++) {
			const char *d = sget(json_array_get(mounts, j), "destination");
			size_t dl = d != NULL ? strlen(d) : 0;
			if (d != NULL && dl < pl && strncmp(pd, d, dl) == 0 && pd[dl] == '/') {
				*at = d;
				return "a mount above a protected path comes after the protected path's own "
				       "mount, and would cover it";
			}
		}
	}
	*at = NULL;
	return NULL;
}

/*
 * Every mount the inspection found: inside /workspace one mount per path,
 * writable only at the repository root (when the boundary says writable)
 * and the declared carve-outs; outside it, writable only where the config
 * rendered a kernel or scratch filesystem of that type, or masked a path.
 */
static const char *applied_mounts_bad(const json_t *am, const json_t *cfg, const json_t *fs,
                                      bool repo_rw, const char **at)
{
	const json_t *wp = json_object_get(fs, "writable_paths");
	const json_t *cm = json_object_get(cfg, "mounts");
	const json_t *masked = json_object_get(json_object_get(cfg, "linux"), "maskedPaths");
	*at = NULL;
	if (!json_is_array(am))
		return "no mount list";
	if ((*at = mount_twice(am, "path", true)) != NULL)
		return "two mounts at one path of the repository";
	for (size_t i = 0; i < json_array_size(am); i++) {
		const json_t *m = json_array_get(am, i);
		const char *p = sget(m, "path");
		int ro = applied_ro(m);
		*at = p;
		if (p == NULL || ro < 0)
			return "a mount without path or ro";
		if (ro == 1)
			continue;
		if (within_workspace(p)) {
			if (!declared_in(wp, p) && !(strcmp(p, "/workspace") == 0 && repo_rw) &&
			    !is_pin(fs, repo_rw, p))
				return "a writable mount in the repository the boundary does not declare";
			continue;
		}
		const json_t *r = mount_at(cm, "destination", p);
		bool scratch = r != NULL && !seq(sget(r, "type"), "bind") &&
		               !opt_has(json_object_get(r, "options"), "bind") &&
		               !opt_has(json_object_get(r, "options"), "rbind") &&
		               seq(sget(m, "fstype"), sget(r, "type")) && seq(sget(m, "root"), "/");
		bool mask = false;
		for (size_t k = 0; k < json_array_size(masked); k++)
			mask = mask || seq(json_string_value(json_array_get(masked, k)), p);
		if (!scratch && !mask)
			return "a writable mount outside the declared paths";
	}
	*at = NULL;
	return NULL;
}

/*
 * A protected path with no mount of its own (rendered and applied) is read-only
 * when nothing above it is writable: the repository root read-only and no
 * writable carve-out at or above it. The provider mounts only protected paths
 * that exist; one missing under a read-only parent cannot be created
 * (docs/oci-local.md), and one that exists there is read-only through its
 * parent anyway. The mount checks below refuse any undeclared bind or
 * writable mount inside /workspace, so the repository mount covers it.
 */
static bool defended_by_parent(const json_t *fs, const char *rel)
{
	if (rel == NULL || !seq(sget(fs, "repo_root_mode"), "read_only"))
		return false;
	const json_t *wp = json_object_get(fs, "writable_paths");
	size_t rl = strlen(rel);
	for (size_t i = 0; i < json_array_size(wp); i++) {
		const char *w = json_string_value(json_array_get(wp, i));
		size_t n = w != NULL ? strlen(w) : 0;
		if (w == NULL || n == 0 ||
		    (n <= rl && strncmp(rel, w, n) == 0 && (rel[n] == '\0' || rel[n] == '/')))
			return false;
	}
	return true;
}

/*
 * The runtime controls of effective segment j, as rendered and as inspected
 * after apply: repo root read-only or writable, each writable carve-out
 * writable, each protected path read-only (also under a writable parent),
 * no other writable host path, network default deny = a fresh network
 * namespace (and no namespace joined) found loopback-only. Provider output
 * can neither widen nor omit a canonical control.
 */
static void controls_applied(vctx *v, const char *where, size_t j, const json_t *rend,
                             const json_t *appl)
{
	const json_t *eseg =
		json_array_get(json_object_get(ota_policy_effective_json(v->policy), "segments"), j);
	const json_t *rb = json_object_get(eseg, "runtime_boundary");
	const json_t *fs = json_object_get(rb, "filesystem");
	const json_t *net = json_object_get(rb, "network");
	const json_t *cfg = json_object_get(rend, "config");
	const json_t *cm = json_object_get(cfg, "mounts");
	const json_t *am = json_object_get(json_object_get(appl, "mounts"), "mounts");
	int want_ro = seq(sget(fs, "repo_root_mode"), "read_only") ? 1 : 0;
	if (rendered_ro(mount_at(cm, "destination", "/workspace")) != want_ro ||
	    applied_ro(mount_at(am, "path", "/workspace")) != want_ro) {
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where,
		     "filesystem.repo_root_mode %s is not what was rendered and applied",
		     want_ro ? "read_only" : "writable");
		return;
	}
	static const char *const lists[2] = {"writable_paths", "protected_paths"};
	for (int l = 0; l < 2; l++) {
		const json_t *paths = json_object_get(fs, lists[l]);
		for (size_t i = 0; i < json_array_size(paths); i++) {
			char dest[OTA_MAX_PATH_BYTES + 16];
			snprintf(dest, sizeof dest, "/workspace/%s",
			         json_string_value(json_array_get(paths, i)));
			int want = l == 1 ? 1 : 0;
			if (l == 1 && mount_at(cm, "destination", dest) == NULL &&
			    mount_at(am, "path", dest) == NULL &&
			    defended_by_parent(fs, json_string_value(json_array_get(paths, i))))
				continue;
			if (rendered_ro(mount_at(cm, "destination", dest)) != want ||
			    applied_ro(mount_at(am, "path", dest)) != want) {
				fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where,
				     "filesystem.%s %s is not %s as rendered and applied", lists[l], dest,
				     want ? "read-only" : "writable");
				return;
			}
		}
	}
	/* a protected path under a writable mount holds only when no
	 * directory between them can be renamed: each is a mount (a pin) */
	pin_check pc = {cm, am, NULL, ""};
	if (!each_pin(fs, want_ro == 0, pin_mounted, &pc)) {
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where,
		     "filesystem.protected_paths: %s, above a protected path in a writable mount, is "
		     "not a mount as rendered and applied (renaming it would move the protected "
		     "path away)",
		     pc.missing);
		return;
	}
	const char *at = NULL, *bad = rendered_mounts_bad(cfg, fs, want_ro == 0, &at);
	if (bad != NULL) {
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where, "rendered config: %s (%s)", bad,
		     at != NULL ? at : "-");
		return;
	}
	if ((bad = applied_mounts_bad(am, cfg, fs, want_ro == 0, &at)) != NULL) {
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where, "applied mounts: %s (%s)", bad,
		     at != NULL ? at : "-");
		return;
	}
	const json_t *ns = json_object_get(json_object_get(cfg, "linux"), "namespaces");
	size_t nnet = 0;
	bool joined = !json_is_array(ns);
	for (size_t i = 0; i < json_array_size(ns); i++) {
		const json_t *n = json_array_get(ns, i);
		joined = joined || json_object_get(n, "path") != NULL || sget(n, "type") == NULL;
		nnet += seq(sget(n, "type"), "network");
		for (size_t k = i + 1; k < json_array_size(ns); k++)
			joined = joined || seq(sget(n, "type"), sget(json_array_get(ns, k), "type"));
	}
	if (joined) {
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where,
		     "the rendered config joins an existing namespace or lists one twice");
		return;
	}
	if (seq(sget(net, "default"), "deny") &&
	    (nnet != 1 ||
	     !json_is_true(json_object_get(json_object_get(appl, "network"), "loopback_only"))))
		fail(v->r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, where,
		     "network.default deny is not a fresh loopback-only namespace as rendered "
		     "and applied");
}

/*
 * The runner's canary results of segment j, carried in the applied record
 * (oci_local runs them in the task's own boundary before the go and
 * refuses the run when one does not hold). Every result must hold (ok
 * true, archive_canary_failed), and every authoritative control the segment
 * claims must have its result (archive_canary_missing): the process status
 * (no_new_privs, seccomp, no capabilities), loopback, the forbidden
 * syscalls, the runtime sockets absent; a read_only repository root a
 * denied write to /workspace; each protected path the config mounts (one
 * that exists) a denied write to it; network default deny each external
 * connection unreachable. A carve-out's allow is checked when present (a
 * file carve-out has none). False when a result is missing or failed.
 */
static const char *const canary_syscalls[] = {
	"mount", "unshare_user", "unshare_mnt", "ptrace", "io_uring_setup", "af_vsock",
	"raw_socket", "packet_socket", "chmod_setid", "fchmodat2_setid", "open_setid",
	"mknod_setid"};
static const char *const canary_net[] = {
	"tcp", "192.0.2.1:80", "tcp", "[2001:db8::1]:80", "udp", "192.0.2.1:53",
	"udp", "[2001:db8::1]:53", "tcp", "10.255.255.53:53", "udp", "10.255.255.53:53"};
static const char *const canary_absent[] = {
	"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
	"/run/podman/podman.sock", "/run/runc", "/run/crun", "/run/ota",
	"/var/run/crio/crio.sock"};

/*
 * A segment's canary results as (check, target) pairs sorted by check,
 * then target (strcmp: the strings as seq compares them), so that each of
 * the thirty-odd results required of a segment is a binary search instead
 * of a scan of every result with two member lookups per entry (a scan made
 * it O(results x required) per segment: 64 of 146 ms of the structural
 * walk of 3,333 segments).
 */
typedef struct canary_pair {
	const char *check;
	const char *target;
} canary_pair;

static int canary_cmp(const void *a, const void *b)
{
	const canary_pair *x = a, *y = b;
	int c = strcmp(x->check, y->check);
	return c != 0 ? c : strcmp(x->target, y->target);
}

static bool canary_has(const canary_pair *v, size_t n, const char *check, const char *target)
{
	canary_pair key = {check, target};
	return bsearch(&key, v, n, sizeof *v, canary_cmp) != NULL;
}

static bool canaries_held(vctx *v, const char *where, size_t j, const json_t *rend,
                          const json_t *appl)
{
	const json_t *can = json_object_get(appl, "canaries");
	if (!json_is_array(can) || json_array_size(can) == 0) {
		fail(v->r, OTA_ERR_ARCHIVE_CANARY_MISSING, where,
		     "the applied record carries no canary results");
		return false;
	}
	size_t ncan = json_array_size(can);
	canary_pair small[64];
	canary_pair *pairs = ncan <= sizeof small / sizeof *small ? small : calloc(ncan, sizeof *pairs);
	if (pairs == NULL) {
		fail(v->r, OTA_ERR_NOMEM, where, "out of memory");
		return false;
	}
	for (size_t i = 0; i < ncan; i++) {
		const json_t *c = json_array_get(can, i);
		const char *check = sget(c, "check"), *target = sget(c, "target");
		if (check == NULL || target == NULL || !json_is_true(json_object_get(c, "ok"))) {
			fail(v->r, OTA_ERR_ARCHIVE_CANARY_FAILED, where,
			     "canary %zu (%s %s) did not hold", i, check != NULL ? check : "?",
			     target != NULL ? target : "?");
			if (pairs != small)
				free(pairs);
			return false;
		}
		pairs[i] = (canary_pair){check, target};
	}
	qsort(pairs, ncan, sizeof *pairs, canary_cmp);
	const json_t *eseg =
		json_array_get(json_object_get(ota_policy_effective_json(v->policy), "segments"), j);
	const json_t *rb = json_object_get(eseg, "runtime_boundary");
	const json_t *fs = json_object_get(rb, "filesystem");
	const json_t *cm = json_object_get(json_object_get(rend, "config"), "mounts");
	const char *missing = NULL, *mcheck = NULL;
	char dest[OTA_MAX_PATH_BYTES + 16];
	if (!canary_has(pairs, ncan, "status", "self"))
		mcheck = "status", missing = "self";
	else if (!canary_has(pairs, ncan, "loopback", "127.0.0.1"))
		mcheck = "loopback", missing = "127.0.0.1";
	for (size_t i = 0; mcheck == NULL && i < sizeof canary_syscalls / sizeof *canary_syscalls; i++)
		if (!canary_has(pairs, ncan, "syscall", canary_syscalls[i]))
			mcheck = "syscall", missing = canary_syscalls[i];
	for (size_t i = 0; mcheck == NULL && i < sizeof canary_absent / sizeof *canary_absent; i++)
		if (!canary_has(pairs, ncan, "absent", canary_absent[i]))
			mcheck = "absent", missing = canary_absent[i];
	if (mcheck == NULL && seq(sget(fs, "repo_root_mode"), "read_only") &&
	    !canary_has(pairs, ncan, "deny", "/workspace"))
		mcheck = "deny", missing = "/workspace";
	const json_t *pp = json_object_get(fs, "protected_paths");
	for (size_t i = 0; mcheck == NULL && i < json_array_size(pp); i++) {
		snprintf(dest, sizeof dest, "/workspace/%s", json_string_value(json_array_get(pp, i)));
		if (mount_at(cm, "destination", dest) != NULL && !canary_has(pairs, ncan, "deny", dest))
			mcheck = "deny", missing = dest;
	}
	if (seq(sget(json_object_get(rb, "network"), "default"), "deny"))
		for (size_t i = 0; mcheck == NULL && i < sizeof canary_net / sizeof *canary_net; i += 2)
			if (!canary_has(pairs, ncan, canary_net[i], canary_net[i + 1]))
				mcheck = canary_net[i], missing = canary_net[i + 1];
	if (pairs != small)
		free(pairs);
	if (mcheck != NULL) {
		fail(v->r, OTA_ERR_ARCHIVE_CANARY_MISSING, where, "no canary result %s %s", mcheck,
		     missing);
		return false;
	}
	return true;
}

/*
 * The resource limits of a segment. The applied record's resources are the
 * limits oci_local read back from the container's cgroups before the start
 * (provider-oci/cgroup.c: pids_limit, memory_limit_bytes, each with the
 * cgroup directory it was read from; null when the cgroup holds none); the
 * rendered config's linux.resources (pids.limit, memory.limit) are the ones
 * it asked for, covered by the rendered policy identity. They must be the
 * same: a limit claimed that was not rendered, one rendered and not
 * claimed, or another value is archive_resources_mismatch. linux.resources
 * carries only those two limits, in oci_local's ranges (anything else, say
 * a devices rule, is not what it renders); crun applies none, so a crun
 * segment renders no linux.resources and claims every member null.
 */
static void resources_applied(vctx *v, const char *where, const char *runtime,
                              const json_t *rend, const json_t *appl)
{
	static const char *const kinds[2] = {"pids", "memory"};
	static const char *const claims[2] = {"pids_limit", "memory_limit_bytes"};
	static const char *const cgroups[2] = {"pids_cgroup", "memory_cgroup"};
	const json_t *rr =
		json_object_get(json_object_get(json_object_get(rend, "config"), "linux"), "resources");
	const json_t *ar = json_object_get(appl, "resources");
	if (!json_is_object(ar) || json_object_size(ar) != 4) {
		fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
		     "the applied record's resources are not {pids_limit, pids_cgroup, "
		     "memory_limit_bytes, memory_cgroup}");
		return;
	}
	if (rr != NULL && (!json_is_object(rr) || json_object_size(rr) == 0)) {
		fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
		     "the rendered linux.resources is not an object of limits");
		return;
	}
	if (rr != NULL && seq(runtime, "crun")) {
		fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
		     "the config renders linux.resources for crun, which applies no limit here");
		return;
	}
	size_t known = 0;
	for (int k = 0; k < 2; k++) {
		const json_t *rk = json_object_get(rr, kinds[k]);
		const json_t *lim = json_object_get(rk, "limit");
		json_int_t want = 0; /* 0: none rendered */
		if (rk != NULL) {
			known++;
			json_int_t lo = k == 0 ? OTA_OCI_PIDS_LIMIT_MIN : OTA_OCI_MEMORY_LIMIT_MIN;
			json_int_t hi = k == 0 ? OTA_OCI_PIDS_LIMIT_MAX : OTA_OCI_MEMORY_LIMIT_MAX;
			if (!json_is_object(rk) || json_object_size(rk) != 1 || !json_is_integer(lim) ||
			    json_integer_value(lim) < lo || json_integer_value(lim) > hi ||
			    (k == 1 && json_integer_value(lim) % 4096 != 0)) {
				fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
				     "the rendered linux.resources.%s is not {limit: %lld..%lld}%s",
				     kinds[k], (long long)lo, (long long)hi,
				     k == 1 ? " in multiples of 4096" : "");
				return;
			}
			want = json_integer_value(lim);
		}
		const json_t *got = json_object_get(ar, claims[k]);
		const json_t *cg = json_object_get(ar, cgroups[k]);
		if (got == NULL || cg == NULL || (!json_is_null(got) && !json_is_integer(got)) ||
		    (!json_is_null(cg) && !json_is_string(cg)) ||
		    (json_is_integer(got) && (json_integer_value(got) <= 0 || json_is_null(cg) ||
		                              json_string_length(cg) == 0))) {
			fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
			     "the applied resources' %s is not null or a limit read from a cgroup",
			     claims[k]);
			return;
		}
		json_int_t have = json_is_integer(got) ? json_integer_value(got) : 0;
		if (have != want) {
			char w[32], h[32];
			snprintf(w, sizeof w, want > 0 ? "%lld" : "none", (long long)want);
			snprintf(h, sizeof h, have > 0 ? "%lld" : "none", (long long)have);
			fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
			     "the applied %s is %s, the rendered linux.resources.%s.limit %s", claims[k], h,
			     kinds[k], w);
			return;
		}
	}
	if (rr != NULL && json_object_size(rr) != known)
		fail(v->r, OTA_ERR_ARCHIVE_RESOURCES_MISMATCH, where,
		     "the rendered linux.resources carries more than pids.limit and memory.limit");
}

/* Returns the segment's derived status ("" when no process). */
/* A segment's error names its terminal record's; the lane's error is it. */
static void error_check(vctx *v, walk *w, const char *where, const json_t *seg,
                        const json_t *term)
{
	const json_t *te = json_object_get(term, "error");
	const json_t *se = json_object_get(seg, "error");
	bool has = te != NULL && !json_is_null(te);
	if (has ? !seq(json_string_value(se), sget(te, "code")) : se != NULL)
		fail(v->r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, where,
		     "the segment's error is not its terminal record's");
	w->last_error = has ? te : NULL;
	w->counts_exit = !has; /* as the runner: an errored segment reports no exit status */
}

/* A segment's terminal record: its kind, the receipt's names for it, its binding. */
static void terminal_named(vctx *v, const char *where, const json_t *seg, const char *sid,
                           att_info *ta, const json_t *term)
{
	ota_archive_report *r = v->r;
	if (!seq(sget(term, "kind"), "ota.application/v1") || !seq(sget(term, "phase"), "terminal"))
		fail(r, OTA_ERR_ARCHIVE_EVIDENCE_KIND, where,
		     "the terminal attestation signs another record");
	if (!seq(sget(seg, "terminal_attestation_identity"), att_id(v, ta)) ||
	    !seq(sget(seg, "terminal_application_identity"), ta->record))
		fail(r, OTA_ERR_ARCHIVE_TERMINAL_MISSING, where,
		     "the receipt names another terminal application");
	if (!bound_to_segment(ta, sid, seg) || !seq(sget(term, "segment"), sid) ||
	    !seq(sget(term, "txn"), v->txn))
		fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, where,
		     "the terminal application is bound to another segment or policy");
}

/* The segment's exit status, timeout and error are the terminal record's. */
static void terminal_outcome(vctx *v, walk *w, const char *where, const json_t *seg,
                             const json_t *term)
{
	const json_t *es = json_object_get(term, "exit_status");
	if (!json_is_integer(es) || json_integer_value(es) < -1 || json_integer_value(es) > 255)
		fail(v->r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, where,
		     "the terminal record's exit_status is not -1 (none) or 0..255");
	if (!json_equal(json_object_get(seg, "exit_status"), es) ||
	    !json_equal(json_object_get(seg, "timed_out"), json_object_get(term, "timed_out")))
		fail(v->r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, where,
		     "exit status or timeout differs from the terminal record");
	error_check(v, w, where, seg, term);
}

/*
 * The terminal inspection shows the boundary held to the end: the container
 * stopped, and every declared protected path fingerprinted before and after
 * with the same result.
 */
static bool inspection_clean(const json_t *ti, const json_t *protected_paths)
{
	const json_t *prot = json_object_get(ti, "protected");
	if (!json_is_object(ti) || !json_is_true(json_object_get(ti, "stopped")) ||
	    !seq(sget(ti, "runtime_status"), "stopped") ||
	    !json_is_true(json_object_get(ti, "protected_unchanged")) || !json_is_array(prot))
		return false;
	for (size_t i = 0; i < json_array_size(prot); i++) {
		const json_t *e = json_array_get(prot, i);
		if (!json_is_true(json_object_get(e, "unchanged")) || sget(e, "before") == NULL ||
		    !seq(sget(e, "before"), sget(e, "after")))
			return false;
	}
	for (size_t i = 0; i < json_array_size(protected_paths); i++) {
		const char *want = json_string_value(json_array_get(protected_paths, i));
		bool seen = false;
		for (size_t k = 0; k < json_array_size(prot) && !seen; k++)
			seen = seq(sget(json_array_get(prot, k), "path"), want);
		if (!seen)
			return false;
	}
	return true;
}

/*
 * The status a terminal record supports, derived as provider-oci derives it
 * and never better than its state: an unknown state or malformed facts fail
 * and count as lost; enforced needs the process started, no interruption
 * (else unknown), cleanup confirmed, a clean terminal inspection and both
 * signatures good (else lost); not_started cannot follow a start.
 */
static const char *terminal_derive(vctx *v, const char *where, const json_t *term,
                                   const json_t *protected_paths, bool sigs_ok)
{
	static const char *const known[] = {"enforced_through_completion", "not_started",
	                                    "enforcement_unknown_after_interruption",
	                                    "enforcement_lost", "refused"};
	const char *state = sget(term, "state");
	bool named = false;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		named = named || seq(state, known[i]);
	const json_t *st = json_object_get(term, "started"), *in = json_object_get(term, "interrupted");
	if (!named || !json_is_boolean(st) || !json_is_boolean(in) ||
	    !json_is_boolean(json_object_get(term, "timed_out"))) {
		fail(v->r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, where,
		     "the terminal record's state, started, interrupted or timed_out is not one the "
		     "runner writes");
		return "enforcement_lost";
	}
	if (seq(state, "not_started") && json_is_true(st))
		return "enforcement_lost";
	if (rank(state) != 0)
		return state;
	if (!json_is_true(st) || !sigs_ok ||
	    !json_is_true(json_object_get(json_object_get(term, "cleanup"), "confirmed")) ||
	    !inspection_clean(json_object_get(term, "terminal_inspection"), protected_paths))
		return "enforcement_lost";
	return json_is_true(in) ? "enforcement_unknown_after_interruption" : state;
}

/* The rendered policy a segment names (it may be rendered before a break). */
static const json_t *rendered_of(vctx *v, const char *where, const json_t *seg, const char *sid,
                                 const char *rid, char cfg[OTA_ID_LEN + 1])
{
	size_t at = SIZE_MAX;
	const json_t *rend = ev_get_at(v, rid, "ota.rendered_policy/v1", &at);
	cfg[0] = '\0';
	if (rend == NULL || !seq(sget(seg, "rendered_policy_identity"), rid) ||
	    !seq(sget(rend, "segment"), sid))
		fail(v->r, OTA_ERR_ARCHIVE_RENDERED_MISMATCH, where,
		     "the rendered policy does not reconcile with the segment");
	/* the config's identity as index_members hashed it with its record,
	 * else (a record that has no identity) hashed here */
	if (rend != NULL && v->ev_cfg[at][0] != '\0')
		memcpy(cfg, v->ev_cfg[at], OTA_ID_LEN + 1);
	else if (rend != NULL &&
	         ota_jcs_identity(json_object_get(rend, "config"), cfg, NULL) != OTA_OK)
		cfg[0] = '\0';
	if (rend != NULL && !seq(sget(rend, "config_identity"), cfg))
		fail(v->r, OTA_ERR_ARCHIVE_RENDERED_MISMATCH, where,
		     "the rendered config does not have its stated identity");
	return rend;
}

/*
 * A segment that broke before its initial application (the runtime failed,
 * the boundary could not be inspected): no initial record, no applied
 * policy, and a signed terminal record, with no prior, that says the
 * process never started. Its status is the terminal record's not_started or
 * refused (never better), and the lane stops there. Without that terminal
 * record the segment is unaccounted for (archive_initial_missing).
 */
static const char *broken_before_initial(vctx *v, walk *w, const json_t *seg, const char *sid,
                                         const char *cid, const char *where)
{
	ota_archive_report *r = v->r;
	att_info *ta = take(v, w, "terminal_application");
	const json_t *term = ta != NULL && ta->rec != SIZE_MAX ? ev_rec(v, ta->rec) : NULL;
	if (ta == NULL || term == NULL) {
		fail(r, OTA_ERR_ARCHIVE_INITIAL_MISSING, where, "no signed initial application");
		return "not_started";
	}
	terminal_named(v, where, seg, sid, ta, term);
	if (json_object_get(seg, "initial_attestation_identity") != NULL ||
	    !json_is_null(json_object_get(seg, "initial_application_identity")) ||
	    !json_is_null(json_object_get(seg, "applied_policy_identity")))
		fail(r, OTA_ERR_ARCHIVE_INITIAL_MISSING, where,
		     "the receipt names an initial application or applied policy the lane does not "
		     "carry");
	if (ta->claims.has_prior || !json_is_null(json_object_get(term, "prior")))
		fail(r, OTA_ERR_ARCHIVE_PRIOR_MISMATCH, where,
		     "a terminal application without an initial one has no prior");
	char bid[160];
	snprintf(bid, sizeof bid, "container:%s:%s", w->runtime != NULL ? w->runtime : "?",
	         cid != NULL ? cid : "");
	if (!seq(sget(term, "container_id"), cid) || !seq(ta->claims.boundary, cid) ||
	    !seq(sget(seg, "boundary_lease_identity"), cid) ||
	    !seq(sget(seg, "boundary_identity"), bid))
		fail(r, OTA_ERR_ARCHIVE_BOUNDARY_MISMATCH, where,
		     "the terminal application is about another boundary");
	const char *rid = sget(seg, "rendered_policy_identity");
	char cfg[OTA_ID_LEN + 1];
	if (rid != NULL)
		(void)rendered_of(v, where, seg, sid, rid, cfg);
	else if (!json_is_null(json_object_get(seg, "rendered_policy_identity")))
		fail(r, OTA_ERR_ARCHIVE_RENDERED_MISMATCH, where, "rendered_policy_identity is malformed");
	const char *state = sget(term, "state");
	const char *derived = "enforcement_lost";
	if (json_is_false(json_object_get(term, "started")) &&
	    (seq(state, "not_started") || seq(state, "refused")))
		derived = state;
	if (!seq(sget(seg, "status"), derived))
		fail(r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, where, "status %s, derived %s",
		     sget(seg, "status") != NULL ? sget(seg, "status") : "(none)", derived);
	terminal_outcome(v, w, where, seg, term);
	snprintf(w->prev_terminal, sizeof w->prev_terminal, "%s", ta->record);
	w->counts_exit = false;
	return derived;
}

static const char *walk_segment(vctx *v, walk *w, size_t j, const json_t *seg, bool *started,
                                bool *any_process)
{
	ota_archive_report *r = v->r;
	char where[96];
	const char *sid = sget(seg, "id");
	snprintf(where, sizeof where, "receipt.sandbox_policy.segments[%zu]", j);
	/* re-derived identities */
	if (j >= ota_policy_segment_count(v->policy) ||
	    !seq(sid, ota_policy_segment_id(v->policy, j)) ||
	    !seq(sget(seg, "canonical_policy_identity"),
	         ota_policy_segment_canonical_identity(v->policy, j)) ||
	    !seq(sget(seg, "effective_policy_identity"),
	         ota_policy_segment_effective_identity(v->policy, j))) {
		fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, where,
		     "not the re-derived segment %zu of the effective policy", j);
		return "refused";
	}
	const json_t *cseg =
		json_array_get(json_object_get(ota_policy_canonical_json(v->policy), "segments"), j);
	bool aggregate = seq(sget(json_object_get(cseg, "execution"), "kind"), "aggregate");
	const char *pcid = sget(seg, "platform_check_identity");
	if (pcid != NULL || !aggregate) {
		const json_t *pc = ev_get(v, pcid, "ota.platform_check/v1");
		const json_t *tp = json_object_get(v->sp, "target_platform");
		const json_t *decl = json_object_get(pc, "declared");
		if (pc == NULL || !json_is_true(json_object_get(pc, "ok")) ||
		    !seq(sget(decl, "os"), sget(tp, "os")) ||
		    !seq(sget(decl, "architecture"), sget(tp, "architecture")))
			fail(r, OTA_ERR_ARCHIVE_PLATFORM_MISMATCH, where,
			     "no platform check record for the target platform");
	}
	if (seq(sget(seg, "status"), "no_process")) {
		if (!aggregate)
			fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, where,
			     "a process segment claims to start no process");
		return "";
	}
	if (aggregate)
		fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, where, "an aggregate segment ran a process");
	/* transition from the previous process segment */
	if (*any_process) {
		att_info *t = take(v, w, "transition");
		const json_t *tr = t != NULL && t->rec != SIZE_MAX ? ev_rec(v, t->rec) : NULL;
		const json_t *tids = json_object_get(v->sp, "transition_identities");
		if (t == NULL || tr == NULL) {
			fail(r, OTA_ERR_ARCHIVE_TRANSITION_MISSING, where,
			     "no signed transition before this segment");
		} else if (!seq(sget(tr, "kind"), "ota.application/v1") ||
		           !seq(sget(tr, "phase"), "transition")) {
			fail(r, OTA_ERR_ARCHIVE_EVIDENCE_KIND, where, "the transition signs another record");
		} else {
			if (!seq(json_string_value(json_array_get(tids, w->ntrans)), t->record))
				fail(r, OTA_ERR_ARCHIVE_TRANSITION_MISSING, where,
				     "transition %zu of the receipt is not this one", w->ntrans);
			if (!seq(sget(tr, "from"), w->prev_terminal) || !seq(sget(tr, "to_segment"), sid) ||
			    !json_is_true(json_object_get(tr, "previous_removed")) ||
			    !seq(sget(tr, "txn"), v->txn) || !seq(t->claims.segment, sid) ||
			    !seq(t->claims.boundary, w->lane_boundary))
				fail(r, OTA_ERR_ARCHIVE_TRANSITION_UNBOUND, where,
				     "the transition does not bind the previous terminal to this segment");
			if (!t->claims.has_prior || !seq(t->claims.prior, w->lane_prior))
				fail(r, OTA_ERR_ARCHIVE_PRIOR_MISMATCH, where,
				     "the transition's prior is not the previous lane record");
			snprintf(w->lane_prior, sizeof w->lane_prior, "%s", att_id(v, t));
		}
		w->ntrans++;
	}
	*any_process = true;
	const char *cid = sget(seg, "container_id");
	/* initial application */
	att_info *ia = take(v, w, "initial_application");
	const json_t *init = ia != NULL && ia->rec != SIZE_MAX ? ev_rec(v, ia->rec) : NULL;
	if (ia == NULL)
		return broken_before_initial(v, w, seg, sid, cid, where);
	if (init == NULL) {
		fail(r, OTA_ERR_ARCHIVE_INITIAL_MISSING, where, "no signed initial application");
		return "not_started";
	}
	if (!seq(sget(init, "kind"), "ota.application/v1") || !seq(sget(init, "phase"), "initial"))
		fail(r, OTA_ERR_ARCHIVE_EVIDENCE_KIND, where, "the initial attestation signs another record");
	if (!seq(sget(seg, "initial_attestation_identity"), att_id(v, ia)) ||
	    !seq(sget(seg, "initial_application_identity"), ia->record))
		fail(r, OTA_ERR_ARCHIVE_INITIAL_MISSING, where,
		     "the receipt names another initial application");
	if (!bound_to_segment(ia, sid, seg) || !seq(sget(init, "segment"), sid) ||
	    !seq(sget(init, "txn"), v->txn))
		fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, where,
		     "the initial application is bound to another segment or policy");
	if (ia->claims.has_prior)
		fail(r, OTA_ERR_ARCHIVE_PRIOR_MISMATCH, where, "an initial application has no prior");
	if (!seq(sget(init, "lease"), cid) || !seq(ia->claims.boundary, cid) ||
	    !seq(sget(seg, "boundary_lease_identity"), cid))
		fail(r, OTA_ERR_ARCHIVE_BOUNDARY_MISMATCH, where,
		     "the lease of the initial application is not the segment's boundary");
	char bid[160];
	snprintf(bid, sizeof bid, "container:%s:%s", w->runtime != NULL ? w->runtime : "?",
	         cid != NULL ? cid : "");
	if (!seq(sget(seg, "boundary_identity"), bid))
		fail(r, OTA_ERR_ARCHIVE_BOUNDARY_MISMATCH, where, "boundary_identity is not %s", bid);
	/* rendered and applied */
	const char *rid = sget(init, "rendered_policy");
	const char *aid = sget(init, "applied_policy");
	char cfg[OTA_ID_LEN + 1];
	const json_t *rend = rendered_of(v, where, seg, sid, rid, cfg);
	const json_t *appl = ev_get(v, aid, "ota.applied_policy/v1");
	bool canaries_ok = true;
	if (appl == NULL || !seq(sget(seg, "applied_policy_identity"), aid) ||
	    !seq(sget(appl, "rendered_policy"), cfg) || !seq(sget(appl, "container_id"), cid) ||
	    !json_is_true(json_object_get(appl, "ok")))
		fail(r, OTA_ERR_ARCHIVE_APPLIED_MISMATCH, where,
		     "the applied policy does not reconcile with the rendered policy and the boundary");
	else if (rend != NULL) {
		controls_applied(v, where, j, rend, appl);
		canaries_ok = canaries_held(v, where, j, rend, appl);
		resources_applied(v, where, w->runtime, rend, appl);
	}
	/* terminal application */
	att_info *ta = take(v, w, "terminal_application");
	const json_t *term = ta != NULL && ta->rec != SIZE_MAX ? ev_rec(v, ta->rec) : NULL;
	if (ta == NULL || term == NULL) {
		fail(r, OTA_ERR_ARCHIVE_TERMINAL_MISSING, where, "no signed terminal application");
		*started = true;
		return "enforcement_unknown_after_interruption";
	}
	terminal_named(v, where, seg, sid, ta, term);
	if (!ta->claims.has_prior || !seq(ta->claims.prior, att_id(v, ia)) ||
	    !seq(sget(term, "prior"), ia->record))
		fail(r, OTA_ERR_ARCHIVE_PRIOR_MISMATCH, where,
		     "the terminal application does not follow its initial application");
	if (!seq(sget(term, "container_id"), cid) || !seq(ta->claims.boundary, cid))
		fail(r, OTA_ERR_ARCHIVE_BOUNDARY_MISMATCH, where,
		     "the terminal application is about another boundary");
	/* the records name the provider and runtime the lane runs on, and time
	 * runs forward through the segment */
	const char *pt = sget(v->sp, "provider_target");
	const json_t *ia_at = json_object_get(init, "at"), *ta_at = json_object_get(term, "at");
	if (!seq(sget(init, "provider"), pt) || !seq(sget(term, "provider"), pt) ||
	    (rend != NULL && (!seq(sget(rend, "provider"), pt) ||
	                      !seq(sget(rend, "runtime"), w->runtime))))
		fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, where,
		     "a record names another provider or runtime than the lane's");
	if (!json_is_integer(ia_at) || !json_is_integer(ta_at) ||
	    json_integer_value(ta_at) < json_integer_value(ia_at))
		fail(r, OTA_ERR_ARCHIVE_ORDER, where,
		     "the initial and terminal records are not timed in order");
	snprintf(w->prev_terminal, sizeof w->prev_terminal, "%s", ta->record);
	/* derived status of the segment */
	*started = *started || json_is_true(json_object_get(term, "started"));
	const json_t *eseg =
		json_array_get(json_object_get(ota_policy_effective_json(v->policy), "segments"), j);
	const char *derived = terminal_derive(
		v, where, term,
		json_object_get(json_object_get(json_object_get(eseg, "runtime_boundary"), "filesystem"),
	                        "protected_paths"),
		ia->ok && ta->ok && canaries_ok);
	if (!seq(sget(seg, "status"), derived))
		fail(r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, where, "status %s, derived %s",
		     sget(seg, "status") != NULL ? sget(seg, "status") : "(none)", derived);
	terminal_outcome(v, w, where, seg, term);
	return derived;
}

/*
 * What ota_archive_runtime_controls groups the segments by: each process
 * segment of p (an aggregate one has no runtime controls), in order, with
 * its id and what each of the four controls requires of it. NULL when out
 * of memory.
 */
typedef struct ctl_seg {
	const char *id;
	const char *req[4];
} ctl_seg;

static const char *const ctl_ids[4] = {"filesystem.repo_root", "filesystem.writable_paths",
                                       "filesystem.protected_paths", "network.default"};

static ctl_seg *ctl_segments(const ota_policy *p, size_t *n)
{
	const json_t *es = json_object_get(ota_policy_effective_json(p), "segments");
	const json_t *cs = json_object_get(ota_policy_canonical_json(p), "segments");
	size_t ns = json_array_size(es);
	ctl_seg *v = calloc(ns + 1, sizeof *v);
	*n = 0;
	if (v == NULL)
		return NULL;
	for (size_t j = 0; j < ns; j++) {
		if (seq(sget(json_object_get(json_array_get(cs, j), "execution"), "kind"),
		        "aggregate"))
			continue;
		const json_t *rb = json_object_get(json_array_get(es, j), "runtime_boundary");
		ctl_seg *s = &v[(*n)++];
		s->id = ota_policy_segment_id(p, j);
		s->req[0] = sget(json_object_get(rb, "filesystem"), "repo_root_mode");
		s->req[1] = "declared_only";
		s->req[2] = "read_only";
		s->req[3] = sget(json_object_get(rb, "network"), "default");
	}
	return v;
}

static bool req_same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

json_t *ota_archive_runtime_controls(const ota_policy *p, bool enforced)
{
	const char *app = enforced ? "enforced" : "not_proved";
	size_t n = 0;
	ctl_seg *v = ctl_segments(p, &n);
	json_t *c = v != NULL ? json_array() : NULL;
	if (c == NULL) {
		free(v);
		return NULL;
	}
	for (int k = 0; k < 4; k++) {
		size_t first = json_array_size(c);
		for (size_t j = 0; j < n; j++) {
			const char *req = v[j].req[k];
			json_t *sid = json_string(v[j].id);
			json_t *e = NULL;
			for (size_t i = first; e == NULL && i < json_array_size(c); i++) {
				json_t *x = json_array_get(c, i);
				if (req_same(sget(x, "required"), req))
					e = x;
			}
			if (e == NULL) {
				e = json_pack("{s:s, s:s?, s:s, s:[]}", "id", ctl_ids[k], "required", req,
				              "application", app, "segments");
				if (json_array_append_new(c, e) != 0)
					e = NULL;
			}
			if (sid == NULL || e == NULL ||
			    json_array_append_new(json_object_get(e, "segments"), sid) != 0) {
				json_decref(sid);
				json_decref(c);
				free(v);
				return NULL;
			}
		}
	}
	free(v);
	return c;
}

/* v is the string s (json_equal of v and json_string(s)). */
static bool str_is(const json_t *v, const char *s)
{
	return s != NULL && json_is_string(v) && json_string_length(v) == strlen(s) &&
	       memcmp(json_string_value(v), s, json_string_length(v)) == 0;
}

/*
 * json_equal(ota_archive_runtime_controls(p, enforced), want), compared as
 * it is derived instead of built: the built list is a string per control
 * and process segment (13,332 for 3,333 segments) and cost 28 ms, most of
 * it allocating and freeing them.
 */
static bool runtime_controls_are(const ota_policy *p, bool enforced, const json_t *want)
{
	const char *app = enforced ? "enforced" : "not_proved";
	size_t n = 0, at = 0; /* at: the next entry of want */
	ctl_seg *v = ctl_segments(p, &n);
	const char **reqs = v != NULL ? calloc(n + 1, sizeof *reqs) : NULL;
	bool ok = reqs != NULL && json_is_array(want);
	for (int k = 0; ok && k < 4; k++) {
		/* the entries of control k: one per value required, in order of
		 * first appearance, each with its segments in order */
		size_t nreq = 0;
		for (size_t j = 0; j < n; j++) {
			size_t r = 0;
			while (r < nreq && !req_same(reqs[r], v[j].req[k]))
				r++;
			if (r == nreq)
				reqs[nreq++] = v[j].req[k];
		}
		for (size_t r = 0; ok && r < nreq; r++) {
			const json_t *e = json_array_get(want, at++);
			const json_t *segs = json_object_get(e, "segments");
			ok = json_is_object(e) && json_object_size(e) == (reqs[r] != NULL ? 4u : 3u) &&
			     str_is(json_object_get(e, "id"), ctl_ids[k]) &&
			     (reqs[r] == NULL || str_is(json_object_get(e, "required"), reqs[r])) &&
			     str_is(json_object_get(e, "application"), app) && json_is_array(segs);
			size_t m = 0;
			for (size_t j = 0; ok && j < n; j++)
				if (req_same(v[j].req[k], reqs[r]))
					ok = str_is(json_array_get(segs, m++), v[j].id);
			ok = ok && m == json_array_size(segs);
		}
	}
	ok = ok && at == json_array_size(want);
	free(reqs);
	free(v);
	return ok;
}

/*
 * A lane refused before anything was prepared (a segment the runner could
 * not plan): after the capability, one terminal record of the lane itself
 * (no segment, no container), signed on the lane boundary after the
 * capability, state refused, nothing started, carrying the refusal's error;
 * the receipt lists no segment. Returns "refused", or NULL when the next
 * attestation is not such a record (the lane is then walked as usual).
 */
static const char *refused_lane(vctx *v, walk *w)
{
	ota_archive_report *r = v->r;
	const json_t *sp = v->sp;
	if (w->next >= v->a->natt || strcmp(v->ai[w->next].claims.kind, "terminal_application") != 0)
		return NULL;
	att_info *rf = take(v, w, "terminal_application");
	const json_t *rec = rf->rec != SIZE_MAX ? ev_rec(v, rf->rec) : NULL;
	const char *where = "attestations[1]";
	if (rec == NULL || !seq(sget(rec, "kind"), "ota.application/v1") ||
	    !seq(sget(rec, "phase"), "terminal") || json_object_get(rec, "segment") != NULL ||
	    json_object_get(rec, "container_id") != NULL) {
		fail(r, OTA_ERR_ARCHIVE_EVIDENCE_KIND, where, "the lane's refusal signs another record");
		return "refused";
	}
	if (!seq(sget(rec, "txn"), v->txn) || rf->claims.segment[0] != '\0' ||
	    !seq(rf->claims.boundary, w->lane_boundary) ||
	    !seq(rf->claims.policy_canonical, sget(sp, "canonical_identity")) ||
	    !seq(rf->claims.policy_effective, sget(sp, "effective_identity")))
		fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, where,
		     "the refusal is bound to another lane or policy");
	if (!rf->claims.has_prior || !seq(rf->claims.prior, w->lane_prior))
		fail(r, OTA_ERR_ARCHIVE_PRIOR_MISMATCH, where, "the refusal does not follow the capability");
	const json_t *er = json_object_get(rec, "error");
	if (!seq(sget(rec, "state"), "refused") || !json_is_false(json_object_get(rec, "started")) ||
	    !json_is_object(er) || !json_is_string(json_object_get(er, "code")))
		fail(r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, where,
		     "the lane's terminal record is not a refusal before anything started");
	snprintf(w->lane_prior, sizeof w->lane_prior, "%s", att_id(v, rf));
	w->last_error = er;
	return "refused";
}

static void structure_checks(vctx *v)
{
	ota_archive_report *r = v->r;
	const json_t *sp = v->sp;
	walk w;
	memset(&w, 0, sizeof w);
	snprintf(w.lane_boundary, sizeof w.lane_boundary, "lane:%s", v->txn != NULL ? v->txn : "");
	/* capability first */
	att_info *cap = take(v, &w, "capability");
	const json_t *desc = cap != NULL && cap->rec != SIZE_MAX ? ev_rec(v, cap->rec) : NULL;
	const json_t *segs = json_object_get(sp, "segments");
	const json_t *rerr = json_object_get(v->receipt, "error");
	if (cap == NULL || desc == NULL) {
		fail(r, OTA_ERR_ARCHIVE_CAPABILITY_MISMATCH, "attestations[0]",
		     "the lane does not begin with a signed capability record");
	} else {
		if (!seq(sget(desc, "kind"), "ota.capability_descriptor/v1") ||
		    !seq(cap->record, sget(sp, "provider_adapter_identity")) ||
		    !seq(sget(desc, "provider"), sget(sp, "provider_target")))
			fail(r, OTA_ERR_ARCHIVE_CAPABILITY_MISMATCH, "attestations[0]",
			     "the capability record is not the receipt's adapter");
		if (cap->claims.has_prior || !seq(cap->claims.boundary, w.lane_boundary) ||
		    !seq(cap->claims.policy_canonical, sget(sp, "canonical_identity")) ||
		    !seq(cap->claims.policy_effective, sget(sp, "effective_identity")))
			fail(r, OTA_ERR_ARCHIVE_BINDING_MISMATCH, "attestations[0]",
			     "the capability is bound to another lane or policy");
		snprintf(w.lane_prior, sizeof w.lane_prior, "%s", att_id(v, cap));
		w.runtime = sget(desc, "runtime");
	}
	const char *refused = json_array_size(segs) == 0 && cap != NULL ? refused_lane(v, &w) : NULL;
	size_t nseg = json_array_size(segs);
	size_t want = ota_policy_segment_count(v->policy);
	if (nseg > want || !json_is_array(segs))
		fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, "receipt.sandbox_policy.segments",
		     "%zu segments, the re-derived policy has %zu", nseg, want);
	bool started = false, any_process = false, stopped = false;
	const char *overall = refused != NULL ? refused : "enforced_through_completion";
	int exit_status = 0;
	for (size_t j = 0; j < nseg && j < want; j++) {
		const json_t *seg = json_array_get(segs, j);
		w.counts_exit = true;
		w.last_error = NULL;
		if (json_object_get(seg, "error") != NULL && seq(sget(seg, "status"), "no_process"))
			fail(r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, "receipt.sandbox_policy.segments",
			     "segment %zu ran no process and names an error", j);
		const char *d = walk_segment(v, &w, j, seg, &started, &any_process);
		if (d[0] != '\0' && rank(d) > rank(overall))
			overall = d;
		const json_t *es = json_object_get(seg, "exit_status");
		if (w.counts_exit && exit_status == 0 && json_is_integer(es) &&
		    json_integer_value(es) != 0)
			exit_status = (int)json_integer_value(es);
		bool last = j + 1 == nseg;
		/* a lane stops at the first segment not enforced or failing */
		stopped = d[0] != '\0' && (rank(d) != 0 || exit_status != 0 || w.last_error != NULL);
		if (!last && stopped)
			fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, "receipt.sandbox_policy.segments",
			     "segments continue after segment %zu stopped the lane", j);
	}
	/* and only there: a lane cut short names the segment that stopped it */
	if (refused == NULL && nseg < want && !stopped)
		fail(r, OTA_ERR_ARCHIVE_SEGMENT_MISMATCH, "receipt.sandbox_policy.segments",
		     "%zu of %zu segments ran and none of them stopped the lane", nseg, want);
	if (w.last_error != NULL ? !json_equal(rerr, w.last_error) : rerr != NULL)
		fail(r, OTA_ERR_ARCHIVE_RECEIPT_MISMATCH, "receipt.error",
		     "not the error of the segment that stopped the lane");
	if (w.ntrans != json_array_size(json_object_get(sp, "transition_identities")))
		fail(r, OTA_ERR_ARCHIVE_TRANSITION_MISSING, "receipt.sandbox_policy.transition_identities",
		     "%zu transitions signed, %zu listed", w.ntrans,
		     json_array_size(json_object_get(sp, "transition_identities")));
	if (w.next != v->a->natt)
		fail(r, OTA_ERR_ARCHIVE_ORDER, "attestations",
		     "attestation %zu (%s) is out of place in the lane", w.next,
		     v->ai[w.next].claims.kind);
	bool all_ran = nseg == want;
	json_object_set_new(r->checks, "exit_status", json_integer(exit_status));
	json_object_set_new(r->checks, "all_segments_ran", json_boolean(all_ran));
	json_object_set_new(r->checks, "execution_started", json_boolean(started));
	overall = ota_archive_lane_status(overall, started);
	snprintf(r->status, sizeof r->status, "%s", overall);
	if (!seq(sget(sp, "status"), overall))
		fail(r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, "receipt.sandbox_policy.status",
		     "claims %s, the evidence derives %s",
		     sget(sp, "status") != NULL ? sget(sp, "status") : "(none)", overall);
	if (json_is_true(json_object_get(v->receipt, "execution_started")) != started ||
	    json_is_true(json_object_get(v->receipt, "all_segments_ran")) != all_ran ||
	    json_integer_value(json_object_get(v->receipt, "exit_status")) != exit_status)
		fail(r, OTA_ERR_ARCHIVE_STATUS_MISMATCH, "receipt",
		     "execution_started, all_segments_ran or exit_status differ from the evidence");
	if (!runtime_controls_are(v->policy, strcmp(overall, "enforced_through_completion") == 0,
	                          json_object_get(sp, "runtime_controls")))
		fail(r, OTA_ERR_ARCHIVE_CONTROL_MISMATCH, "receipt.sandbox_policy.runtime_controls",
		     "differ from the controls of the effective policy and the derived status");
	json_t *att = json_pack("{s:s, s:n, s:s}", "issuer_identity", v->runner,
	                        "challenge_identity", "verification", "runner_owned_cose_sign1");
	bool att_ok = json_equal(att, json_object_get(sp, "attestation"));
	json_decref(att);
	if (!att_ok)
		fail(r, OTA_ERR_ARCHIVE_ISSUER_MISMATCH, "receipt.sandbox_policy.attestation",
		     "not the runner that signed the receipt");
	for (size_t i = 0; i < v->nev; i++)
		if (!v->ev_ref[i])
			fail(r, OTA_ERR_ARCHIVE_EVIDENCE_UNREFERENCED, "evidence[]",
			     "record %s is named by nothing", v->ev_ids[i]);
	for (size_t i = 0; i < v->a->nch; i++)
		if (v->ch_uses[i] == 0)
			fail(r, OTA_ERR_ARCHIVE_CHALLENGE_UNUSED, "challenges[]",
			     "challenge %s answers no attestation", v->a->ch[i].id);
	for (size_t i = 0; i < v->a->nacc; i++)
		if (v->acc_ok[i] && idx_find(v->att_idx, v->a->natt, v->acc[i].attestation) == SIZE_MAX)
			fail(r, OTA_ERR_ARCHIVE_ACCEPTANCE_MISMATCH, "acceptances[]",
			     "acceptance of %s, which is not in the archive", v->acc[i].attestation);
}

/* The ledger's schema (PRAGMA user_version); a ledger of another version is refused. */
#define LEDGER_VERSION 1
#define LEDGER_TABLE                                                                    \
	"CREATE TABLE IF NOT EXISTS used_challenges(nonce BLOB PRIMARY KEY,"               \
	" challenge TEXT NOT NULL, archive TEXT NOT NULL);"                                 \
	"PRAGMA user_version = 1;"

/*
 * The name sqlite is given for a ledger path: a relative path gets "./" in
 * front, so ":memory:" or "" is never sqlite's in-memory or temporary
 * database and "file:..." never a URI (a ledger that would forget).
 */
static bool ledger_sqlite_name(const char *path, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s%s", path[0] == '/' ? "" : "./", path);
	return n > 0 && (size_t)n < cap;
}

/* The file at path is a ledger to open: a regular file of at least one byte. */
static ota_err ledger_stat(const char *path, ota_error *err)
{
	struct stat st, ls;
	if (stat(path, &st) != 0) {
		int e = errno;
		if (e == ENOENT && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode))
			return ota_error_set(err, OTA_ERR_ARCHIVE_LEDGER_MISSING, path,
			                     "a symlink to nothing: no ledger there, and none is made"
			                     " through it");
		if (e == ENOENT)
			return ota_error_set(err, OTA_ERR_ARCHIVE_LEDGER_MISSING, path,
			                     "no ledger there (no such file or directory): a mistyped"
			                     " path would start a ledger that knows no earlier archive;"
			                     " --ledger-init makes a new one");
		return ota_error_set(err, OTA_ERR_IO, path, "cannot stat the ledger: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return ota_error_set(err, OTA_ERR_NOT_REGULAR, path,
		                     "the ledger is not a regular file (%s); not opened",
		                     S_ISDIR(st.st_mode)    ? "a directory"
		                     : S_ISFIFO(st.st_mode) ? "a FIFO"
		                     : S_ISSOCK(st.st_mode) ? "a socket"
		                     : S_ISCHR(st.st_mode)  ? "a character device"
		                     : S_ISBLK(st.st_mode)  ? "a block device"
		                                            : "not a file");
	/* the ledger is what refuses a replayed archive: one that another
	 * user owns or that group or others may write is not trusted */
	if (st.st_uid != geteuid())
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, path,
		                     "the ledger is owned by uid %lu, not by uid %lu running this: its "
		                     "owner can remove the challenges it holds (chown it)",
		                     (unsigned long)st.st_uid, (unsigned long)geteuid());
	if ((st.st_mode & 022) != 0)
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, path,
		                     "the ledger has mode %04o: group or others can write it and remove "
		                     "the challenges it holds (chmod 600)",
		                     (unsigned)(st.st_mode & 07777));
	if (st.st_size == 0)
		return ota_error_set(err, OTA_ERR_ARCHIVE_LEDGER_MISSING, path,
		                     "the file is empty (0 bytes): not a ledger (a ledger is never"
		                     " empty); remove it, or name the ledger");
	return OTA_OK;
}

/* The directory part of path, fsync()ed after a new name is linked in it. */
static void sync_parent(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/*
 * A new ledger at path, only if no file is there: written complete under a
 * temporary name beside it, then linked in place without replacing
 * anything. *made: this call's ledger is the one at path.
 */
static ota_err ledger_create(const char *path, bool *made, ota_error *err)
{
	static unsigned counter;
	*made = false;
	char tmp[PATH_MAX], name[PATH_MAX + 2], side[PATH_MAX + 8];
	unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	int n = snprintf(tmp, sizeof tmp, "%s.init-%ld-%u", path, (long)getpid(), k);
	if (n < 0 || (size_t)n >= sizeof tmp || !ledger_sqlite_name(tmp, name, sizeof name))
		return ota_error_set(err, OTA_ERR_IO, path, "cannot create the ledger: path too long");
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot create the ledger (%s): %s", tmp,
		                     strerror(errno));
	close(fd);
	sqlite3 *db = NULL;
	char why[256] = "";
	bool ok = sqlite3_open_v2(name, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	          sqlite3_exec(db,
	                       "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
	                       "BEGIN IMMEDIATE;" LEDGER_TABLE "COMMIT;",
	                       NULL, NULL, NULL) == SQLITE_OK;
	if (!ok)
		snprintf(why, sizeof why, "%s", db != NULL ? sqlite3_errmsg(db) : "out of memory");
	/* the last connection's close checkpoints the WAL into the file and
	 * removes it: what is linked in place is the whole ledger */
	if (sqlite3_close(db) != SQLITE_OK && ok) {
		ok = false;
		snprintf(why, sizeof why, "cannot close the new ledger");
	}
	if (ok) {
		fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		ok = fd >= 0 && fsync(fd) == 0;
		if (!ok)
			snprintf(why, sizeof why, "cannot sync the new ledger: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	ota_err rc = OTA_OK;
	if (!ok) {
		rc = ota_error_set(err, OTA_ERR_DB, path, "cannot create the ledger: %s", why);
	} else if (link(tmp, path) == 0) {
		*made = true;
	} else if (errno != EEXIST) {
		/* a file system without hard links: a rename that never replaces */
		int e = errno;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
			*made = true;
		else if (errno != EEXIST)
			rc = ota_error_set(err, OTA_ERR_IO, path, "cannot put the new ledger in place: %s",
			                   strerror(e));
	}
	/* EEXIST: another process's ledger (or a file) is there now: it is taken
	 * as it is, this one is dropped */
	(void)unlink(tmp);
	snprintf(side, sizeof side, "%s-wal", tmp);
	(void)unlink(side);
	snprintf(side, sizeof side, "%s-shm", tmp);
	(void)unlink(side);
	if (*made)
		sync_parent(path);
	return rc;
}

ota_err ota_archive_ledger_prepare(const char *path, bool init, ota_error *err)
{
	if (path == NULL || path[0] == '\0')
		return ota_error_set(err, OTA_ERR_USAGE, "ledger", "an empty ledger path");
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ledger_stat(path, &e);
	struct stat ls;
	/* only where nothing is: not over an empty file, not through a symlink;
	 * then the ledger at path is looked at again, whoever made it (another
	 * process may have between the two looks) */
	if (rc == OTA_ERR_ARCHIVE_LEDGER_MISSING && init) {
		bool made = false;
		ota_error_clear(&e);
		if (lstat(path, &ls) != 0 && errno == ENOENT)
			rc = ledger_create(path, &made, &e);
		else
			rc = OTA_OK;
		if (rc == OTA_OK)
			rc = ledger_stat(path, &e);
	}
	if (rc != OTA_OK && err != NULL)
		*err = e;
	return rc;
}

/*
 * Inside the write transaction: a ledger written before the version stamp
 * (user_version 0, only used_challenges) gets the stamp; a ledger of
 * another version, a stamped one without its table or a database holding
 * anything else (another tool's sqlite file) is database_error, and one
 * holding nothing (version 0, no table) archive_ledger_missing: none is
 * started in place (ledger_create makes new ledgers whole), so nothing is
 * written into any of them.
 */
static ota_err ledger_schema(sqlite3 *db, char *why, size_t cap)
{
	sqlite3_stmt *st = NULL;
	bool ok = sqlite3_prepare_v2(db,
	                             "SELECT (SELECT user_version FROM pragma_user_version),"
	                             " (SELECT count(*) FROM sqlite_master WHERE tbl_name <> 'used_challenges'),"
	                             " (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
	                             " AND name = 'used_challenges')",
	                             -1, &st, NULL) == SQLITE_OK &&
	          sqlite3_step(st) == SQLITE_ROW;
	if (!ok) {
		snprintf(why, cap, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return OTA_ERR_DB;
	}
	sqlite3_int64 version = sqlite3_column_int64(st, 0);
	sqlite3_int64 other = sqlite3_column_int64(st, 1), table = sqlite3_column_int64(st, 2);
	sqlite3_finalize(st);
	if (version != 0 && version != LEDGER_VERSION) {
		snprintf(why, cap, "ledger schema version %lld; this ota-verify knows version %d",
		         (long long)version, LEDGER_VERSION);
		return OTA_ERR_DB;
	}
	if (other != 0) {
		snprintf(why, cap, "not an ota-verify ledger: it holds other tables");
		return OTA_ERR_DB;
	}
	if (version == LEDGER_VERSION) {
		if (table == 0)
			snprintf(why, cap, "the ledger's table is missing");
		return table != 0 ? OTA_OK : OTA_ERR_DB;
	}
	/* a database with nothing in it is no ledger: it is not started here
	 * (--ledger-init makes new ledgers whole, never in place) */
	if (table == 0) {
		snprintf(why, cap, "an empty database, not a ledger (no table, no schema version)");
		return OTA_ERR_ARCHIVE_LEDGER_MISSING;
	}
	if (sqlite3_exec(db, LEDGER_TABLE, NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(why, cap, "%s", sqlite3_errmsg(db));
		return OTA_ERR_DB;
	}
	return OTA_OK;
}

/*
 * Records every challenge against this archive; another archive's use is a
 * replay. Nothing is recorded unless the COMMIT succeeds, and a failed COMMIT
 * fails the verification (the next archive with these nonces would pass).
 */
static void ledger_check(vctx *v)
{
	sqlite3 *db = NULL;
	ota_archive_report *r = v->r;
	char why[256] = "", name[PATH_MAX + 2];
	/* never created here: ota_archive_verify checked it exists (and made it
	 * with ledger_init); one removed since is not made again */
	if (!ledger_sqlite_name(v->o->ledger, name, sizeof name) ||
	    sqlite3_open_v2(name, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		ota_error e;
		ota_error_clear(&e);
		if (ledger_stat(v->o->ledger, &e) != OTA_OK)
			fail_e(r, &e, "ledger");
		else
			fail(r, OTA_ERR_DB, "ledger", "cannot open %s: %s", v->o->ledger,
			     db != NULL ? sqlite3_errmsg(db) : "path too long");
		sqlite3_close(db);
		return;
	}
	sqlite3_busy_timeout(db, 10000);
	int rc = ota_sqlite_wal(db);
	sqlite3_stmt *ins = NULL, *sel = NULL;
	bool ok = rc == SQLITE_OK &&
	          sqlite3_exec(db, "PRAGMA synchronous=FULL; BEGIN IMMEDIATE;", NULL, NULL, NULL) ==
	                  SQLITE_OK;
	ota_err schema = ok ? ledger_schema(db, why, sizeof why) : OTA_OK;
	if (schema != OTA_OK) {
		fail(r, schema, "ledger", "%s: %s", v->o->ledger, why);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(db);
		return;
	}
	ok = ok &&
	     sqlite3_prepare_v2(db,
	                        "INSERT OR IGNORE INTO used_challenges(nonce, challenge, archive)"
	                        " VALUES(?1, ?2, ?3)",
	                        -1, &ins, NULL) == SQLITE_OK &&
	     sqlite3_prepare_v2(db, "SELECT archive FROM used_challenges WHERE nonce = ?1", -1, &sel,
	                        NULL) == SQLITE_OK;
	bool replay = false;
	for (size_t i = 0; ok && i < v->a->nch; i++) {
		const arc_chal *c = &v->a->ch[i].c;
		sqlite3_bind_blob(ins, 1, c->nonce, (int)c->nonce_len, SQLITE_STATIC);
		sqlite3_bind_text(ins, 2, v->a->ch[i].id, -1, SQLITE_STATIC);
		sqlite3_bind_text(ins, 3, v->a->receipt_id, -1, SQLITE_STATIC);
		ok = sqlite3_step(ins) == SQLITE_DONE;
		sqlite3_bind_blob(sel, 1, c->nonce, (int)c->nonce_len, SQLITE_STATIC);
		if (ok && sqlite3_step(sel) == SQLITE_ROW) {
			const char *who = (const char *)sqlite3_column_text(sel, 0);
			if (!seq(who, v->a->receipt_id)) {
				replay = true;
				fail(r, OTA_ERR_ARCHIVE_LEDGER_REPLAY, "challenges[]",
				     "challenge %s was used by archive %s", v->a->ch[i].id, who);
			}
		} else {
			ok = false;
		}
		if (!ok)
			snprintf(why, sizeof why, "%s", sqlite3_errmsg(db));
		sqlite3_reset(ins);
		sqlite3_reset(sel);
	}
	if (!ok && why[0] == '\0')
		snprintf(why, sizeof why, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(ins);
	sqlite3_finalize(sel);
	bool committed = false;
	if (ok && !replay && r->nfail == 0) {
		committed = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
		if (!committed) {
			ok = false;
			snprintf(why, sizeof why, "cannot record the challenges: %s", sqlite3_errmsg(db));
		}
	}
	if (!ok)
		fail(r, OTA_ERR_DB, "ledger", "%s", why);
	if (!committed)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);
}

static ota_err verify(ota_bytes in, uint8_t **owned, const ota_archive_verify_opts *o,
                      ota_archive_report **report, ota_error *err);

ota_err ota_archive_verify(ota_bytes in, const ota_archive_verify_opts *o,
                           ota_archive_report **report, ota_error *err)
{
	return verify(in, NULL, o, report, err);
}

ota_err ota_archive_verify_take(uint8_t **in, size_t len, const ota_archive_verify_opts *o,
                                ota_archive_report **report, ota_error *err)
{
	ota_err rc = verify(ota_bytes_make(*in, len), in, o, report, err);
	free(*in); /* a return before the parse */
	*in = NULL;
	return rc;
}

/* owned: the text of in, freed once parsed (NULL: the caller's). */
static ota_err verify(ota_bytes in, uint8_t **owned, const ota_archive_verify_opts *o,
                      ota_archive_report **report, ota_error *err)
{
	*report = NULL;
	ota_archive_report *r = calloc(1, sizeof *r);
	if (r == NULL)
		return OTA_ERR_NOMEM;
	r->failures = json_array();
	r->checks = json_object();
	r->ids = json_object();
	r->max = o != NULL && o->max_failures != 0 ? o->max_failures : 64;
	if (r->failures == NULL || r->checks == NULL || r->ids == NULL) {
		ota_archive_report_free(r);
		return OTA_ERR_NOMEM;
	}
	*report = r;
	if (o == NULL || o->pinned.ptr == NULL) {
		fail(r, OTA_ERR_USAGE, "trust", "a pinned trust root is required");
		return ota_error_set(err, OTA_ERR_USAGE, "trust", "a pinned trust root is required");
	}
	if (o->require_status != NULL && !status_known(o->require_status)) {
		fail(r, OTA_ERR_USAGE, "require_status", "\"%.64s\" is not a status",
		     o->require_status);
		return ota_error_set(err, OTA_ERR_USAGE, "require_status", "\"%.64s\" is not a status",
		                     o->require_status);
	}
	static const struct {
		const char *what, *name;
	} ids[] = {{"a commit id", "require_revision"}, {"a git tree id", "require_worktree"}};
	const char *const idv[] = {o->require_revision, o->require_worktree};
	for (size_t i = 0; i < 2; i++)
		if (idv[i] != NULL && !revision_ok(idv[i])) {
			fail(r, OTA_ERR_USAGE, ids[i].name,
			     "\"%.80s\" is not %s (40 or 64 lowercase hex digits)", idv[i], ids[i].what);
			return ota_error_set(err, OTA_ERR_USAGE, ids[i].name,
			                     "\"%.80s\" is not %s (40 or 64 lowercase hex digits)", idv[i],
			                     ids[i].what);
		}
	const char *bad_req = require_usage(o);
	if (bad_req != NULL) {
		fail(r, OTA_ERR_USAGE, "require", "%s", bad_req);
		return ota_error_set(err, OTA_ERR_USAGE, "require", "%s", bad_req);
	}
	vctx v;
	memset(&v, 0, sizeof v);
	v.r = r;
	v.o = o;
	ota_error e;
	ota_error_clear(&e);
	/* a ledger that is not there is refused before anything is verified:
	 * a mistyped path must not pass as a ledger that knows no archive */
	if (o->ledger != NULL && ota_archive_ledger_prepare(o->ledger, o->ledger_init, &e) != OTA_OK) {
		fail(r, e.code, e.where, "%s", e.what);
		return ota_error_set(err, e.code, e.where, "%s", e.what);
	}
	ota_err rc = arc_parse(in, true, &v.a, &e);
	if (owned != NULL) { /* nothing reads the text again */
		free(*owned);
		*owned = NULL;
		in = ota_bytes_make(NULL, 0);
	}
	if (rc != OTA_OK) {
		fail_e(r, &e, "archive");
		goto out;
	}
	ota_err rs = receipt_setup(&v);
	/* its bytes are read only there (the payload is parsed into v.receipt) */
	free(v.a->receipt.ptr);
	v.a->receipt = (arc_blob){NULL, 0};
	if (rs != OTA_OK)
		goto out;
	policy_checks(&v);
	if (v.policy == NULL)
		goto out;
	if (index_members(&v) != OTA_OK) {
		fail(r, OTA_ERR_NOMEM, "archive", "out of memory");
		goto out;
	}
	acceptance_checks(&v);
	for (size_t i = 0; i < v.a->natt; i++)
		attestation_check(&v, i);
	structure_checks(&v);
	/* a receipt signed after the time it is judged at (--at, else with
	 * --max-age the clock; 300 s of skew) is refused, and with --max-age one
	 * signed too long before it */
	if (o->max_age > 0 || o->have_at) {
		int64_t now = o->have_at ? o->at : ota_clock_now(NULL);
		if (v.signed_at > now + 300 || (o->max_age > 0 && v.signed_at < now - o->max_age))
			fail(r, OTA_ERR_ARCHIVE_STALE, "receipt.signed_at",
			     "signed at %lld, the verifier's time is %lld, at most %lld s old accepted",
			     (long long)v.signed_at, (long long)now, (long long)o->max_age);
	}
	if (o->require_status != NULL && !seq(r->status, o->require_status))
		fail(r, OTA_ERR_ARCHIVE_STATUS_NOT_REQUIRED, "status", "derived %s, required %s",
		     r->status, o->require_status);
	if (o->require_success) {
		const json_t *es = json_object_get(r->checks, "exit_status");
		const json_t *ran = json_object_get(r->checks, "all_segments_ran");
		if (!json_is_integer(es) || json_integer_value(es) != 0 || !json_is_true(ran))
			fail(r, OTA_ERR_ARCHIVE_TASK_FAILED, "exit_status",
			     "exit status %lld, %s segment ran", (long long)json_integer_value(es),
			     json_is_true(ran) ? "every" : "not every");
	}
	const json_t *rev = json_object_get(v.receipt, "revision");
	const json_t *wt = json_object_get(v.receipt, "worktree");
	require_id(r, rev, o->require_revision, OTA_ERR_ARCHIVE_REVISION_MISMATCH, "revision",
	           "none resolved when the run was admitted");
	require_id(r, wt, o->require_worktree, OTA_ERR_ARCHIVE_WORKTREE_MISMATCH, "worktree",
	           "none hashed when the run was admitted");
	require_checks(&v);
	if (o->ledger != NULL && r->nfail == 0)
		ledger_check(&v);
	json_object_set_new(r->ids, "receipt", json_string(v.a->receipt_id));
	json_object_set_new(r->ids, "trust_root", json_string(v.root_id));
	json_object_set_new(r->ids, "contract_snapshot", json_string(v.a->contract_snapshot));
	json_object_set_new(r->ids, "canonical", json_string(ota_policy_canonical_identity(v.policy)));
	json_object_set_new(r->ids, "effective", json_string(ota_policy_effective_identity(v.policy)));
	json_object_set_new(r->ids, "runner", json_string(v.runner));
	json_object_set_new(r->ids, "txn", json_string(v.txn));
	json_object_set_new(r->ids, "revision", json_is_string(rev) ? json_deep_copy(rev) : json_null());
	json_object_set_new(r->ids, "worktree", json_is_string(wt) ? json_deep_copy(wt) : json_null());
	/* what --require-lane and --require-overlay take, as re-derived */
	json_object_set_new(r->ids, "lane",
	                    json_sprintf("%s:%s", lane_kind_name(v.a), v.a->lane != NULL ? v.a->lane : ""));
	json_object_set_new(r->ids, "restriction_overlays",
	                    json_deep_copy(json_object_get(ota_policy_effective_json(v.policy),
	                                                   "restriction_overlay_identities")));
	json_object_set_new(r->checks, "attestations", json_integer((json_int_t)v.a->natt));
	json_object_set_new(r->checks, "acceptances", json_integer((json_int_t)v.a->nacc));
	json_object_set_new(r->checks, "challenges", json_integer((json_int_t)v.a->nch));
	json_object_set_new(r->checks, "evidence", json_integer((json_int_t)v.nev));
	json_object_set_new(r->checks, "segments",
	                    json_integer((json_int_t)ota_policy_segment_count(v.policy)));
	json_object_set_new(r->checks, "trust_chain", json_integer((json_int_t)v.a->nchain));
out:
	if (r->nfail == 0 && r->first == OTA_OK && rc == OTA_OK && v.policy == NULL)
		fail(r, OTA_ERR_INTERNAL, "archive", "verification did not complete");
	free(v.ev_idx);
	free(v.ev_ids);
	free(v.ev_cfg);
	free(v.ev_ref);
	free(v.ch_idx);
	free(v.ch_uses);
	for (size_t i = 0; i < v.nai; i++)
		free(v.ai[i].strings);
	free(v.ai);
	free(v.att_idx);
	free(v.acc);
	free(v.acc_ok);
	free(v.acc_alg);
	free(v.acc_idx);
	json_decref(v.adm);
	json_decref(v.receipt);
	ota_policy_free(v.policy);
	ota_contract_free(v.contract);
	ota_trust_root_free(v.root);
	ota_trust_root_free(v.current);
	free(v.chain_versions);
	ota_archive_free(v.a);
	if (r->nfail != 0) {
		const char *where = NULL, *what = NULL;
		ota_err first = ota_archive_report_failure(r, 0, &where, &what);
		if (first == OTA_OK)
			first = r->first;
		return ota_error_set(err, first, where != NULL ? where : "archive", "%s",
		                     what != NULL ? what : "refused");
	}
	return OTA_OK;
}
