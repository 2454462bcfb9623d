/*
 * tests/unit/archive_mutate.h - the generated mutation walk shared by the archive
 * tamper tests (real runs: archive_tamper_test; committed vectors:
 * archive_vectors_test). Static functions over one fixture per test.
 */
#ifndef OTA_TEST_ARCHIVE_MUTATE_H
#define OTA_TEST_ARCHIVE_MUTATE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"

typedef struct fixture {
	char *dir;
	json_t *a, *b;        /* the two archives */
	json_t *broken;       /* a third run, broken before its second segment's initial record */
	json_t *refused;      /* a fourth, refused before anything (its image is missing) */
	json_t *ra, *rb;      /* their signed receipts (payloads) */
	uint8_t *pin_a, *pin_b;
	size_t pin_a_len, pin_b_len;
	ota_key *runner_a;
	/* the revision fx.ra records, required of every verification (NULL:
	 * none required: archives written before the member existed) */
	char revision[72];
	/* the worktree fx.ra records ("": none required). Each run of the
	 * fixture saw the outputs of the runs before it, so each recorded its
	 * own: a verification requires the one the run of the receipt's txn
	 * recorded (runs[]), fx.ra's for a txn none of them had. */
	char worktree[72];
	struct {
		char txn[128];
		char worktree[72];
	} runs[4];
	size_t nruns;
} fixture;

static fixture fx;
static bool have_fixture;

static inline json_t *load_json(const char *path)
{
	uint8_t *b = NULL;
	size_t n = 0;
	if (ota_file_read(path, OTA_MAX_ARCHIVE_BYTES, &b, &n, NULL) != OTA_OK)
		return NULL;
	json_t *j = json_loadb((const char *)b, n, JSON_REJECT_DUPLICATES, NULL);
	free(b);
	return j;
}

static inline json_t *receipt_of(const json_t *ar)
{
	const char *b64 = json_string_value(json_object_get(json_object_get(ar, "receipt"), "cose_sign1"));
	uint8_t *m = NULL;
	size_t ml = 0;
	if (b64 == NULL || ota_base64_decode(b64, strlen(b64), &m, &ml) != OTA_OK)
		return NULL;
	ota_cose_sign1 d;
	json_t *r = NULL;
	if (ota_cose_sign1_decode(ota_bytes_make(m, ml), NULL, &d, NULL) == OTA_OK)
		r = json_loadb((const char *)d.payload.ptr, d.payload.len, 0, NULL);
	free(m);
	return r;
}

/* The worktree a verification of doc requires (see fixture.runs), NULL: none. */
static inline const char *required_worktree(const json_t *doc)
{
	if (fx.worktree[0] == '\0')
		return NULL;
	json_t *r = receipt_of(doc);
	const char *txn = json_string_value(json_object_get(r, "txn")), *want = fx.worktree;
	for (size_t i = 0; txn != NULL && i < fx.nruns; i++)
		if (strcmp(fx.runs[i].txn, txn) == 0)
			want = fx.runs[i].worktree;
	json_decref(r);
	return want;
}

/* Records the txn and worktree of the fixture run whose receipt is r. */
static inline void fixture_run(const json_t *r)
{
	const char *txn = json_string_value(json_object_get(r, "txn"));
	const char *wt = json_string_value(json_object_get(r, "worktree"));
	if (txn == NULL || wt == NULL || fx.nruns == sizeof fx.runs / sizeof fx.runs[0])
		return;
	snprintf(fx.runs[fx.nruns].txn, sizeof fx.runs[0].txn, "%s", txn);
	snprintf(fx.runs[fx.nruns].worktree, sizeof fx.runs[0].worktree, "%s", wt);
	fx.nruns++;
}

static inline ota_err verify_doc(const json_t *doc, const uint8_t *pin, size_t pin_len, const char *ledger,
                          ota_err *first)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(text);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.pinned = ota_bytes_make(pin, pin_len);
	o.ledger = ledger;
	o.ledger_init = true; /* the tests' ledgers are made on first use */
	o.require_revision = fx.revision[0] != '\0' ? fx.revision : NULL;
	o.require_worktree = required_worktree(doc);
	ota_archive_report *r = NULL;
	ota_err rc = ota_archive_verify(ota_bytes_make(text, strlen(text)), &o, &r, NULL);
	if (first != NULL)
		*first = ota_archive_report_failure(r, 0, NULL, NULL);
	ota_archive_report_free(r);
	free(text);
	return rc;
}

/* Re-signs receipt rc with the runner key into archive ar (in place). */
static inline void resign(json_t *ar, const json_t *rc)
{
	char *jcs = NULL;
	size_t jl = 0;
	assert_ota(ota_jcs_serialize(rc, &jcs, &jl, NULL), OTA_OK);
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	uint8_t *m = NULL;
	size_t ml = 0;
	assert_ota(ota_cose_sign1_sign(fx.runner_a, ota_bytes_make(jcs, jl), &so, &m, &ml, NULL),
	           OTA_OK);
	char id[OTA_ID_LEN + 1], *b64 = NULL;
	assert_ota(ota_sha256_id(ota_bytes_make(m, ml), id), OTA_OK);
	assert_ota(ota_base64_encode(ota_bytes_make(m, ml), &b64), OTA_OK);
	json_object_set_new(ar, "receipt", json_pack("{s:s, s:s}", "identity", id, "cose_sign1", b64));
	free(b64);
	free(m);
	free(jcs);
}

/* ---- paths and mutations ---- */

typedef struct pseg {
	const char *key; /* NULL: index */
	size_t idx;
} pseg;

typedef struct path {
	pseg s[48];
	size_t n;
} path;

static inline json_t *child(json_t *v, const pseg *s)
{
	return s->key != NULL ? json_object_get(v, s->key) : json_array_get(v, s->idx);
}

static inline json_t *at(json_t *root, const path *p, size_t upto)
{
	json_t *v = root;
	for (size_t i = 0; v != NULL && i < upto; i++)
		v = child(v, &p->s[i]);
	return v;
}

static inline void path_str(const path *p, char *out, size_t cap)
{
	size_t off = 0;
	out[0] = '\0';
	for (size_t i = 0; i < p->n && off < cap; i++) {
		int w = p->s[i].key != NULL ? snprintf(out + off, cap - off, "/%s", p->s[i].key)
		                            : snprintf(out + off, cap - off, "/%zu", p->s[i].idx);
		off += w > 0 ? (size_t)w : 0;
	}
}

enum { M_FLIP, M_DROP, M_SWAP, M_REORDER, M_KINDS };
static const char *const kind_name[M_KINDS] = {"flip", "drop", "swap", "reorder"};

static inline char flip_char(char c)
{
	if (c >= '0' && c <= '8')
		return (char)(c + 1);
	if (c == '9')
		return '0';
	if (c >= 'a' && c <= 'e')
		return (char)(c + 1);
	if (c == 'f')
		return 'a';
	if (c >= 'g' && c < 'z')
		return (char)(c + 1);
	if (c >= 'A' && c < 'Z')
		return (char)(c + 1);
	return c == 'x' ? 'y' : 'x';
}

static inline json_t *flipped(const json_t *v)
{
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		if (n == 0)
			return json_string("x");
		char *s = strdup(json_string_value(v));
		s[n / 2] = flip_char(s[n / 2]);
		json_t *r = json_stringn(s, n);
		free(s);
		return r;
	}
	if (json_is_integer(v))
		return json_integer(json_integer_value(v) + 1);
	if (json_is_boolean(v))
		return json_boolean(!json_is_true(v));
	if (json_is_null(v))
		return json_string("x");
	return NULL;
}

/* Applies mutation k at p inside root; false when not applicable. */
static inline bool mutate(json_t *root, const path *p, int k, json_t *other)
{
	if (p->n == 0)
		return false;
	json_t *parent = at(root, p, p->n - 1);
	const pseg *last = &p->s[p->n - 1];
	json_t *node = child(parent, last);
	if (node == NULL)
		return false;
	json_t *repl = NULL;
	switch (k) {
	case M_FLIP:
		repl = flipped(node);
		break;
	case M_DROP:
		return last->key != NULL ? json_object_del(parent, last->key) == 0
		                         : json_array_remove(parent, last->idx) == 0;
	case M_SWAP: {
		json_t *o = at(other, p, p->n);
		if (o == NULL || json_equal(o, node))
			return false;
		repl = json_deep_copy(o);
		break;
	}
	case M_REORDER: {
		size_t n = json_array_size(node);
		for (size_t i = 0; i + 1 < n; i++) {
			json_t *x = json_array_get(node, i), *y = json_array_get(node, i + 1);
			if (!json_equal(x, y)) {
				json_incref(x);
				json_array_set(node, i, y);
				json_array_set_new(node, i + 1, x);
				return true;
			}
		}
		return false;
	}
	default:
		return false;
	}
	if (repl == NULL)
		return false;
	return last->key != NULL ? json_object_set_new(parent, last->key, repl) == 0
	                         : json_array_set_new(parent, last->idx, repl) == 0;
}

typedef struct tally {
	size_t tried[M_KINDS], rejected[M_KINDS];
	size_t accepted_shown;
	json_t *codes; /* code -> count */
} tally;

typedef struct walker {
	bool receipt;   /* mutate the receipt (re-signed) or the archive */
	tally *t;
	size_t budget;  /* leaves left in the current sampled subtree */
	bool sampling;
	size_t canaries; /* canary lists walked in full */
	size_t resources; /* applied resources and rendered linux.resources walked in full */
} walker;

static inline void count_code(tally *t, ota_err c)
{
	const char *n = ota_err_name(c);
	json_t *v = json_object_get(t->codes, n);
	json_object_set_new(t->codes, n, json_integer(json_integer_value(v) + 1));
}

static inline void try_all(walker *w, const path *p, const json_t *node)
{
	for (int k = 0; k < M_KINDS; k++) {
		if (k == M_REORDER && !json_is_array(node))
			continue;
		if (k == M_FLIP && (json_is_array(node) || json_is_object(node)))
			continue;
		json_t *root = json_deep_copy(w->receipt ? fx.ra : fx.a);
		bool applied = mutate(root, p, k, w->receipt ? fx.rb : fx.b);
		if (!applied) {
			json_decref(root);
			continue;
		}
		json_t *doc = root;
		if (w->receipt) {
			doc = json_deep_copy(fx.a);
			resign(doc, root);
			json_decref(root);
		}
		ota_err first = OTA_OK;
		ota_err rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		json_decref(doc);
		w->t->tried[k]++;
		if (rc != OTA_OK) {
			w->t->rejected[k]++;
			count_code(w->t, first != OTA_OK ? first : rc);
		} else if (w->t->accepted_shown++ < 20) {
			char ps[1024];
			path_str(p, ps, sizeof ps);
			fprintf(stderr, "ACCEPTED: %s %s %s\n", w->receipt ? "receipt" : "archive",
			        kind_name[k], ps);
		}
	}
}

/* Subtrees whose leaves are sampled (they only feed one identity each). */
static inline bool sampled_subtree(const walker *w, const path *p)
{
	if (w->receipt)
		return p->n == 1 && strcmp(p->s[0].key != NULL ? p->s[0].key : "", "sandbox_admission") == 0;
	return p->n == 2 && p->s[0].key != NULL && strcmp(p->s[0].key, "evidence") == 0;
}

/* An applied record's canary results are walked in full, not sampled. */
static inline bool canary_subtree(const walker *w, const path *p)
{
	return !w->receipt && w->sampling && p->n == 3 && p->s[2].key != NULL &&
	       strcmp(p->s[2].key, "canaries") == 0;
}

/* So are an applied record's resources (the limits read back from the
 * cgroups) and a rendered config's linux.resources (the limits asked for). */
static inline bool resources_subtree(const walker *w, const path *p)
{
	if (w->receipt || !w->sampling)
		return false;
	if (p->n == 3)
		return p->s[2].key != NULL && strcmp(p->s[2].key, "resources") == 0;
	return p->n == 5 && p->s[2].key != NULL && strcmp(p->s[2].key, "config") == 0 &&
	       p->s[3].key != NULL && strcmp(p->s[3].key, "linux") == 0 && p->s[4].key != NULL &&
	       strcmp(p->s[4].key, "resources") == 0;
}

static inline void walk(walker *w, path *p, const json_t *node)
{
	bool entered = false, full = false;
	if (!w->sampling && sampled_subtree(w, p)) {
		w->sampling = true;
		w->budget = 12;
		entered = true;
	} else if (canary_subtree(w, p)) {
		w->sampling = false;
		w->canaries++;
		full = true;
	} else if (resources_subtree(w, p)) {
		w->sampling = false;
		w->resources++;
		full = true;
	}
	bool leaf = !json_is_object(node) && !json_is_array(node);
	if (!w->sampling || w->budget > 0 || p->n <= 2 + (w->receipt ? 0u : 1u)) {
		if (w->sampling && leaf && w->budget > 0)
			w->budget--;
		if (!w->sampling || !leaf || w->budget > 0 || p->n <= 3)
			try_all(w, p, node);
	}
	if (p->n < 47) {
		if (json_is_object(node)) {
			const char *k;
			json_t *m;
			json_object_foreach((json_t *)(uintptr_t)node, k, m) {
				p->s[p->n].key = k;
				p->n++;
				walk(w, p, m);
				p->n--;
			}
		} else if (json_is_array(node)) {
			for (size_t i = 0; i < json_array_size(node); i++) {
				p->s[p->n].key = NULL;
				p->s[p->n].idx = i;
				p->n++;
				walk(w, p, json_array_get(node, i));
				p->n--;
			}
		}
	}
	if (entered)
		w->sampling = false;
	if (full)
		w->sampling = true;
}

static inline void report(const char *what, const tally *t)
{
	size_t tried = 0, rej = 0;
	for (int k = 0; k < M_KINDS; k++) {
		tried += t->tried[k];
		rej += t->rejected[k];
		fprintf(stderr, "  %s %-8s %5zu tried %5zu rejected\n", what, kind_name[k], t->tried[k],
		        t->rejected[k]);
	}
	char *codes = json_dumps(t->codes, JSON_COMPACT | JSON_SORT_KEYS);
	fprintf(stderr, "  %s total %zu/%zu rejected (%.1f%%); first refusal by code: %s\n", what, rej,
	        tried, tried ? 100.0 * (double)rej / (double)tried : 0.0, codes);
	free(codes);
}

/*
 * Every generated mutation of fx.a (receipt false) or of its receipt fx.ra,
 * re-signed (receipt true), must be rejected: more than min tried, and with
 * every_kind each kind of mutation tried at least once.
 */
static inline size_t generated_suite(bool receipt, const char *label, size_t min, bool every_kind)
{
	tally t;
	memset(&t, 0, sizeof t);
	t.codes = json_object();
	walker w = {receipt, &t, 0, false, 0, 0};
	path p;
	memset(&p, 0, sizeof p);
	walk(&w, &p, receipt ? fx.ra : fx.a);
	report(label, &t);
	size_t tried = 0, rej = 0;
	for (int k = 0; k < M_KINDS; k++) {
		tried += t.tried[k];
		rej += t.rejected[k];
		if (every_kind)
			assert_true(t.tried[k] > 0);
	}
	json_decref(t.codes);
	assert_true(tried > min);
	assert_int_equal(rej, tried);
	if (!receipt) {
		fprintf(stderr, "%s: %zu canary lists, %zu resource limit sets mutated in full\n",
		        label, w.canaries, w.resources);
		/* every applied record carries its resources */
		assert_true(w.resources >= w.canaries);
	}
	return w.canaries;
}

static inline void test_generated_archive(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	/* every applied record's canary results and resources, and every
	 * rendered config's linux.resources, each member flipped, dropped,
	 * swapped and reordered, are rejected too */
	assert_true(generated_suite(false, "archive", 300, true) > 0);
}

static inline void test_generated_receipt(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	generated_suite(true, "receipt", 150, true);
}

/*
 * The receipt's runtime_controls of a lane whose process segments share
 * repository-root mode and network default (as every lane oci_local
 * admits): the four controls once each, each naming every process segment
 * of the receipt in order, not only the first.
 */
static inline void controls_name_every_segment(const json_t *receipt, size_t want_segments)
{
	const json_t *sp = json_object_get(receipt, "sandbox_policy");
	const json_t *segs = json_object_get(sp, "segments");
	const json_t *ctl = json_object_get(sp, "runtime_controls");
	json_t *ids = json_array();
	for (size_t i = 0; i < json_array_size(segs); i++) {
		const json_t *g = json_array_get(segs, i);
		const char *st = json_string_value(json_object_get(g, "status"));
		if (st == NULL || strcmp(st, "no_process") != 0)
			json_array_append(ids, json_object_get(g, "id"));
	}
	assert_int_equal(json_array_size(ids), want_segments);
	static const char *const cid[4] = {"filesystem.repo_root", "filesystem.writable_paths",
	                                   "filesystem.protected_paths", "network.default"};
	assert_int_equal(json_array_size(ctl), 4);
	for (size_t i = 0; i < 4; i++) {
		const json_t *c = json_array_get(ctl, i);
		assert_string_equal(json_string_value(json_object_get(c, "id")), cid[i]);
		assert_true(json_equal(json_object_get(c, "segments"), ids));
	}
	json_decref(ids);
}

/* Receipt edited at a path (JSON pointer-ish "a/b/0") to v, re-signed. */
static inline ota_err receipt_edit(const char *const *keys, size_t n, json_t *v, ota_err *first)
{
	json_t *r = json_deep_copy(fx.ra);
	json_t *parent = r;
	for (size_t i = 0; i + 1 < n; i++) {
		char *end = NULL;
		unsigned long ix = strtoul(keys[i], &end, 10);
		parent = *end == '\0' ? json_array_get(parent, ix) : json_object_get(parent, keys[i]);
	}
	char *end = NULL;
	unsigned long ix = strtoul(keys[n - 1], &end, 10);
	if (*end == '\0')
		json_array_set_new(parent, ix, v);
	else
		json_object_set_new(parent, keys[n - 1], v);
	json_t *doc = json_deep_copy(fx.a);
	resign(doc, r);
	ota_err rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, first);
	json_decref(doc);
	json_decref(r);
	return rc;
}

/* Recomputes the receipt's lists from the archive (a consistent forgery). */
static inline void resign_consistent(json_t *doc)
{
	json_t *r = json_deep_copy(fx.ra);
	json_t *att = json_array(), *chs = json_array(), *ev = json_array(), *acc = json_array();
	const json_t *a = json_object_get(doc, "attestations");
	json_int_t last = 0;
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *x = json_array_get(a, i);
		json_array_append(att, json_object_get(x, "identity"));
		const char *chid = json_string_value(json_object_get(x, "challenge"));
		json_int_t used = -1;
		const json_t *cl = json_object_get(doc, "challenges");
		for (size_t j = 0; j < json_array_size(cl); j++)
			if (strcmp(json_string_value(json_object_get(json_array_get(cl, j), "identity")),
			           chid) == 0)
				used = json_integer_value(json_object_get(json_array_get(cl, j), "consumed_at"));
		if (used > last)
			last = used;
		json_array_append_new(chs, json_pack("{s:s, s:I}", "identity", chid, "consumed_at", used));
	}
	const json_t *e = json_object_get(doc, "evidence");
	for (size_t i = 0; i < json_array_size(e); i++) {
		char id[OTA_ID_LEN + 1];
		assert_ota(ota_json_identity(json_array_get(e, i), id, NULL), OTA_OK);
		json_array_append_new(ev, json_string(id));
	}
	const json_t *ac = json_object_get(doc, "acceptances");
	for (size_t i = 0; i < json_array_size(ac); i++)
		json_array_append(acc, json_object_get(json_array_get(ac, i), "identity"));
	json_t *lists[4] = {att, chs, acc, ev};
	static const char *const names[4] = {"attestations_digest", "challenges_digest",
	                                     "acceptances_digest", "evidence_digest"};
	for (int i = 0; i < 4; i++) {
		char id[OTA_ID_LEN + 1];
		assert_ota(ota_jcs_identity(lists[i], id, NULL), OTA_OK);
		json_object_set_new(r, names[i], json_string(id));
		json_decref(lists[i]);
	}
	json_object_set_new(r, "signed_at", json_integer(last));
	resign(doc, r);
	json_decref(r);
}

/*
 * doc with one hex digit of the receipt's member (revision or worktree, of
 * value id) changed inside the signed COSE bytes, not re-signed (its
 * identity recomputed): the signature breaks.
 */
static inline ota_err id_edited_unsigned(const json_t *doc, const char *member, const char *id_value,
                                         ota_err *first)
{
	json_t *d = json_deep_copy(doc);
	json_t *rm = json_object_get(d, "receipt");
	const char *b64 = json_string_value(json_object_get(rm, "cose_sign1"));
	uint8_t *m = NULL;
	size_t ml = 0;
	assert_ota(ota_base64_decode(b64, strlen(b64), &m, &ml), OTA_OK);
	char needle[96];
	snprintf(needle, sizeof needle, "\"%s\":\"%s\"", member, id_value);
	size_t nl = strlen(needle);
	uint8_t *hit = NULL;
	for (size_t i = 0; hit == NULL && i + nl <= ml; i++)
		if (memcmp(m + i, needle, nl) == 0)
			hit = m + i;
	assert_non_null(hit);
	size_t at = strlen(member) + 4; /* the first digit */
	hit[at] = (uint8_t)flip_char((char)hit[at]);
	char id[OTA_ID_LEN + 1], *enc = NULL;
	assert_ota(ota_sha256_id(ota_bytes_make(m, ml), id), OTA_OK);
	assert_ota(ota_base64_encode(ota_bytes_make(m, ml), &enc), OTA_OK);
	json_object_set_new(rm, "identity", json_string(id));
	json_object_set_new(rm, "cose_sign1", json_string(enc));
	free(enc);
	free(m);
	ota_err rc = verify_doc(d, fx.pin_a, fx.pin_a_len, NULL, first);
	json_decref(d);
	return rc;
}

static inline void expect_refused(const char *name, ota_err rc, ota_err first)
{
	fprintf(stderr, "  named %-44s -> %s\n", name, rc == OTA_OK ? "ACCEPTED" : ota_err_name(first));
	assert_int_not_equal(rc, OTA_OK);
}

#endif
