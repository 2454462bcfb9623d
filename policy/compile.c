/*
 * Selected-closure resolution, the canonical SandboxPolicy (ordered segment
 * graph, typed edges, identities), restriction overlays and the effective
 * policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "internal.h"
#include "ota/json.h"
#include "ota/limits.h"

/* ---- platform ---- */

/*
 * a is the architecture[] of an ota_platform. The whole buffer is rewritten:
 * platforms are compared with memcmp (admission, lane platform), so no byte
 * of the alias ("aarch64" -> "arm64\0" + "4") may survive past the NUL.
 */
static void norm_arch(char *a, size_t cap)
{
	const char *to = NULL;
	if (strcmp(a, "x86_64") == 0 || strcmp(a, "x64") == 0)
		to = "amd64";
	else if (strcmp(a, "aarch64") == 0)
		to = "arm64";
	if (to != NULL) {
		memset(a, 0, cap);
		memcpy(a, to, strlen(to));
	}
}

ota_err ota_platform_parse(const char *s, ota_platform *out, ota_error *err)
{
	memset(out, 0, sizeof *out);
	const char *parts[4] = {0};
	size_t lens[4] = {0};
	size_t np = 0;
	const char *p = s;
	while (np < 4) {
		const char *e = strchr(p, '/');
		parts[np] = p;
		lens[np] = e ? (size_t)(e - p) : strlen(p);
		np++;
		if (e == NULL)
			break;
		p = e + 1;
	}
	if (np < 2 || np > 3 || strchr(p, '/') != NULL)
		return ota_error_set(err, OTA_ERR_POLICY_PLATFORM, "platform",
		                     "'%.60s' is not os/architecture[/variant]", s);
	char *dst[3] = {out->os, out->architecture, out->variant};
	for (size_t i = 0; i < np; i++) {
		if (lens[i] == 0 || lens[i] >= sizeof out->os) {
			memset(out, 0, sizeof *out); /* no half-parsed platform on failure */
			return ota_error_set(err, OTA_ERR_POLICY_PLATFORM, "platform",
			                     "'%.60s' has an empty or overlong component", s);
		}
		for (size_t k = 0; k < lens[i]; k++) {
			char ch = parts[i][k];
			if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
			      ch == '-' || ch == '.')) {
				memset(out, 0, sizeof *out);
				return ota_error_set(err, OTA_ERR_POLICY_PLATFORM, "platform",
				                     "'%.60s' has a character outside [a-z0-9_.-]", s);
			}
		}
		memcpy(dst[i], parts[i], lens[i]);
		dst[i][lens[i]] = '\0';
	}
	norm_arch(out->architecture, sizeof out->architecture);
	return OTA_OK;
}

void ota_platform_host(ota_platform *out)
{
	memset(out, 0, sizeof *out);
	struct utsname u;
	strcpy(out->os, "linux");
	if (uname(&u) == 0) {
		snprintf(out->architecture, sizeof out->architecture, "%.31s", u.machine);
		norm_arch(out->architecture, sizeof out->architecture);
	} else {
		strcpy(out->architecture, "unknown");
	}
}

static json_t *platform_json(const ota_platform *p, const char *source)
{
	char full[100];
	if (p->variant[0] != '\0')
		snprintf(full, sizeof full, "%s/%s/%s", p->os, p->architecture, p->variant);
	else
		snprintf(full, sizeof full, "%s/%s", p->os, p->architecture);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "os", p->os, "architecture", p->architecture,
	                      "variant", p->variant, "platform", full);
	if (o != NULL && source != NULL)
		json_object_set_new(o, "source", json_string(source));
	return o;
}

/* ---- overlays ---- */

struct ota_overlay {
	ydoc *doc;
	pool pl;
	boundary b;
	json_t *json;
	ota_overlay_source source;
	char id[OTA_ID_LEN + 1];
	char authority_id[OTA_ID_LEN + 1];
};

static const char *const k_org[] = {"policies", "version", "metadata", NULL};

ota_err ota_overlay_load(ota_bytes yaml, const char *name, ota_overlay_source source,
                         ota_overlay **out, ota_error *err)
{
	*out = NULL;
	ota_overlay *o = calloc(1, sizeof *o);
	if (o == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "overlay", "out of memory");
	o->source = source;
	ota_err rc = ydoc_parse(yaml, name, &o->doc, err);
	if (rc != OTA_OK)
		goto fail;
	const ynode *root = ydoc_root(o->doc);
	rc = y_expect(o->doc, root, YN_MAP, "policy file", err);
	if (rc == OTA_OK)
		rc = y_keys(o->doc, root, k_org, NULL, "policy file", err);
	if (rc != OTA_OK)
		goto fail;
	const ynode *pol = yn_get(root, "policies");
	if (pol != NULL && !yn_is_null(pol)) {
		rc = y_expect(o->doc, pol, YN_MAP, "policies", err);
		if (rc != OTA_OK)
			goto fail;
	}
	const ynode *sb = yn_get(pol, "sandbox");
	if (sb == NULL || yn_is_null(sb)) {
		if (source == OTA_OVERLAY_ORG_POLICY) {
			ota_overlay_free(o);
			return OTA_OK;
		}
		char w[300];
		yn_where(o->doc, root, w, sizeof w);
		rc = ota_error_set(err, OTA_ERR_POLICY_OVERLAY_EMPTY, w,
		                   "overlay file has no policies.sandbox block");
		goto fail;
	}
	rc = boundary_parse(o->doc, sb, &o->pl, &o->b, err);
	if (rc != OTA_OK)
		goto fail;
	const char *src = source == OTA_OVERLAY_ORG_POLICY ? "org_policy" : "overlay_file";
	json_t *snap = yn_to_json(root);
	json_t *auth = snap ? json_pack("{s:s, s:s, s:o}", "kind", "ota.restriction_authority/v1",
	                                "source", src, "policy", snap)
	                    : NULL;
	if (auth == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "overlay", "out of memory");
		goto fail;
	}
	rc = ota_json_identity(auth, o->authority_id, err);
	json_decref(auth);
	if (rc != OTA_OK)
		goto fail;
	json_t *rj = boundary_to_json(&o->b);
	/* an omitted family is neutral: keep only what the overlay states */
	o->json = rj ? json_pack("{s:s, s:s, s:s, s:o}", "kind", "ota.restriction_overlay/v1", "source",
	                         src, "authority_identity", o->authority_id, "restriction", rj)
	             : NULL;
	if (o->json == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "overlay", "out of memory");
		goto fail;
	}
	rc = ota_json_identity(o->json, o->id, err);
	if (rc != OTA_OK)
		goto fail;
	*out = o;
	return OTA_OK;
fail:
	ota_overlay_free(o);
	return rc;
}

void ota_overlay_free(ota_overlay *o)
{
	if (o == NULL)
		return;
	boundary_free(&o->b);
	json_decref(o->json);
	ydoc_free(o->doc);
	pool_free(&o->pl);
	free(o);
}

const char *ota_overlay_identity(const ota_overlay *o)
{
	return o->id;
}

const char *ota_overlay_authority_identity(const ota_overlay *o)
{
	return o->authority_id;
}

const json_t *ota_overlay_json(const ota_overlay *o)
{
	return o->json;
}

/* ---- policy ---- */

static const char *const phase_names[PH_COUNT] = {"prepare", "setup", "run", "attach"};

/*
 * The tasks a walk has reached, by task index: IN_PROGRESS while its
 * closure is placed, then its segment index + 1. A map the size of the
 * lane's closure, not of the contract: compiling every workflow lane of a
 * contract costs their closures, not workflows x tasks.
 */
#define IN_PROGRESS SIZE_MAX
typedef struct {
	size_t *key, *val;
	size_t n, cap;
} tmap;

static size_t tmap_get(const tmap *m, size_t k)
{
	if (m->cap == 0)
		return 0;
	for (size_t h = (k * 0x9e3779b97f4a7c15ull) & (m->cap - 1); m->val[h] != 0;
	     h = (h + 1) & (m->cap - 1))
		if (m->key[h] == k)
			return m->val[h];
	return 0;
}

static bool tmap_set(tmap *m, size_t k, size_t v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 64;
		size_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
		if (nk == NULL || nv == NULL) {
			free(nk);
			free(nv);
			return false;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->val[i] != 0) {
				size_t h = (m->key[i] * 0x9e3779b97f4a7c15ull) & (nc - 1);
				while (nv[h] != 0)
					h = (h + 1) & (nc - 1);
				nk[h] = m->key[i];
				nv[h] = m->val[i];
			}
		free(m->key);
		free(m->val);
		m->key = nk;
		m->val = nv;
		m->cap = nc;
	}
	size_t h = (k * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
	while (m->val[h] != 0 && m->key[h] != k)
		h = (h + 1) & (m->cap - 1);
	if (m->val[h] == 0)
		m->n++;
	m->key[h] = k;
	m->val[h] = v;
	return true;
}

static void tmap_free(tmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

typedef struct {
	ota_policy *p;
	const ota_policy_options *o;
	const oworkflow *wf;
	int cur_phase; /* workflow phase index, -1 for task lanes */
	unsigned depth; /* recursion depth of visit */
	tmap seen;
	ota_error *err;
} walker;

static ota_err add_edge(walker *w, size_t src, size_t dst, const char *cond)
{
	ota_policy *p = w->p;
	/* duplicates are removed once the walk is done (dedupe_edges) */
	if (p->nedges == p->cedges) {
		size_t nc = p->cedges ? p->cedges * 2 : 8;
		edge *ne = realloc(p->edges, nc * sizeof *ne);
		if (ne == NULL)
			return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
		p->edges = ne;
		p->cedges = nc;
	}
	edge *e = &p->edges[p->nedges++];
	memset(e, 0, sizeof *e);
	e->src = src;
	e->dst = dst;
	e->cond = cond;
	return OTA_OK;
}

static int cmp_edge_idx(const void *a, const void *b, void *ctx)
{
	const edge *edges = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const edge *ex = &edges[x], *ey = &edges[y];
	if (ex->src != ey->src)
		return ex->src < ey->src ? -1 : 1;
	if (ex->dst != ey->dst)
		return ex->dst < ey->dst ? -1 : 1;
	int c = strcmp(ex->cond, ey->cond);
	if (c != 0)
		return c;
	return x < y ? -1 : x > y ? 1 : 0;
}

/* keeps the first occurrence of every (source, destination, condition) */
static bool dedupe_edges(ota_policy *p)
{
	if (p->nedges < 2)
		return true;
	size_t *idx = malloc(p->nedges * sizeof *idx);
	bool *drop = calloc(p->nedges, sizeof *drop);
	if (idx == NULL || drop == NULL) {
		free(idx);
		free(drop);
		return false;
	}
	for (size_t i = 0; i < p->nedges; i++)
		idx[i] = i;
	qsort_r(idx, p->nedges, sizeof *idx, cmp_edge_idx, p->edges);
	for (size_t i = 1; i < p->nedges; i++) {
		const edge *a = &p->edges[idx[i - 1]], *b = &p->edges[idx[i]];
		if (a->src == b->src && a->dst == b->dst && strcmp(a->cond, b->cond) == 0)
			drop[idx[i]] = true;
	}
	size_t o = 0;
	for (size_t i = 0; i < p->nedges; i++)
		if (!drop[i])
			p->edges[o++] = p->edges[i];
	p->nedges = o;
	free(idx);
	free(drop);
	return true;
}

static ota_err visit(walker *w, const otask *t, const char *phase, size_t *seg_out);
static ota_err visit_body(walker *w, const otask *t, const char *phase, size_t *seg_out);

static ota_err visit_list(walker *w, const strv *l, const char *phase, size_t to, bool dep_edge,
                          const char *cond)
{
	for (size_t i = 0; i < l->n; i++) {
		size_t s;
		ota_err rc = visit(w, contract_task(w->p->c, l->v[i]), phase, &s);
		if (rc != OTA_OK)
			return rc;
		/*
		 * A hook already placed (a dependency of its parent, a phase
		 * task or another task's hook before it) would sit before the
		 * task it follows in the ordered segments: refused rather than
		 * an edge the order contradicts.
		 */
		if (!dep_edge && s <= to) {
			const otask *pt = w->p->segs[to].t;
			char wh[300];
			const ynode *at = yn_get(pt->node, strcmp(cond, "on_success") == 0   ? "after_success"
			                                   : strcmp(cond, "on_failure") == 0 ? "after_failure"
			                                                                     : "after_always");
			yn_where(w->p->c->doc, at != NULL ? at : pt->node, wh, sizeof wh);
			return ota_error_set(w->err, OTA_ERR_POLICY_HOOK_ORDER, wh,
			                     "hook '%.60s' of task '%.60s' is already placed before it (a dependency of it, an earlier phase's task or an earlier hook): it would not run after it",
			                     l->v[i], pt->name);
		}
		rc = dep_edge ? add_edge(w, s, to, cond) : add_edge(w, to, s, cond);
		if (rc != OTA_OK)
			return rc;
	}
	return OTA_OK;
}

/* seg index of task t, placing it (and its closure) when first seen */
static ota_err visit(walker *w, const otask *t, const char *phase, size_t *seg_out)
{
	ota_policy *p = w->p;
	size_t v = tmap_get(&w->seen, t->index);
	if (v != 0 && v != IN_PROGRESS) {
		size_t si = v - 1;
		/* a dependency already run by an earlier phase is reused, not re-run */
		*seg_out = si;
		return OTA_OK;
	}
	if (v == IN_PROGRESS) {
		char wh[300];
		yn_where(p->c->doc, t->node, wh, sizeof wh);
		return ota_error_set(w->err, OTA_ERR_POLICY_CYCLE, wh, "task '%.60s' is in a cycle",
		                     t->name);
	}
	if (w->depth >= OTA_MAX_CLOSURE_DEPTH) {
		char wh[300];
		yn_where(p->c->doc, t->node, wh, sizeof wh);
		return ota_error_set(w->err, OTA_ERR_TOO_DEEP, wh,
		                     "closure nests deeper than %u tasks", OTA_MAX_CLOSURE_DEPTH);
	}
	w->depth++;
	ota_err vrc = visit_body(w, t, phase, seg_out);
	w->depth--;
	return vrc;
}

static ota_err visit_body(walker *w, const otask *t, const char *phase, size_t *seg_out)
{
	ota_policy *p = w->p;
	if (!tmap_set(&w->seen, t->index, IN_PROGRESS))
		return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	/* dependencies first; their edges point dependency -> requester */
	size_t *deps = NULL;
	ota_err rc = OTA_OK;
	size_t ndeps = t->depends_on.n + t->members.n;
	if (ndeps > 0) {
		deps = malloc(ndeps * sizeof *deps);
		if (deps == NULL)
			return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	}
	for (size_t i = 0; i < t->depends_on.n && rc == OTA_OK; i++)
		rc = visit(w, contract_task(p->c, t->depends_on.v[i]), "dependency", &deps[i]);
	for (size_t i = 0; i < t->members.n && rc == OTA_OK; i++)
		rc = visit(w, contract_task(p->c, t->members.v[i]), "dependency",
		           &deps[t->depends_on.n + i]);
	if (rc != OTA_OK) {
		free(deps);
		return rc;
	}
	if (p->nsegs == p->csegs) {
		size_t nc = p->csegs ? p->csegs * 2 : 8;
		seg *ns = realloc(p->segs, nc * sizeof *ns);
		if (ns == NULL) {
			free(deps);
			return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
		}
		p->segs = ns;
		p->csegs = nc;
	}
	size_t si = p->nsegs++;
	memset(&p->segs[si], 0, sizeof p->segs[si]);
	p->segs[si].t = t;
	p->segs[si].phase = phase;
	p->segs[si].owner_phase = w->cur_phase;
	if (!tmap_set(&w->seen, t->index, si + 1)) {
		free(deps);
		return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	}
	for (size_t i = 0; i < ndeps && rc == OTA_OK; i++)
		rc = add_edge(w, deps[i], si, "unconditional");
	/* aggregate members run in their declared order */
	for (size_t i = 1; i < t->members.n && rc == OTA_OK; i++)
		rc = add_edge(w, deps[t->depends_on.n + i - 1], deps[t->depends_on.n + i],
		              "unconditional");
	free(deps);
	if (rc == OTA_OK)
		rc = visit_list(w, &t->after_success, "hook", si, false, "on_success");
	if (rc == OTA_OK)
		rc = visit_list(w, &t->after_failure, "hook", si, false, "on_failure");
	if (rc == OTA_OK)
		rc = visit_list(w, &t->after_always, "hook", si, false, "always");
	*seg_out = si;
	return rc;
}

static bool strv_add_unique(strv *s, const char *x)
{
	return strv_has(s, x) || strv_push(s, x);
}

/* resolve execution truth and the canonical boundary of one segment */
static ota_err resolve_segment(walker *w, seg *s)
{
	const ota_contract *c = w->p->c;
	const otask *t = s->t;
	const char *ctxname = t->context != NULL ? t->context : c->default_context;
	const ocontext *ctx = contract_context(c, ctxname);
	if (t->mode != NULL && ctx != NULL) {
		/* a context of another backend family does not apply to the selected mode */
		const char *cb = NULL;
		unsigned h = 0;
		for (const ocontext *x = ctx; x != NULL && cb == NULL && h <= c->ncontexts;
		     x = x->parent, h++)
			cb = x->backend;
		if (cb != NULL && strcmp(cb, t->mode) != 0) {
			ctx = NULL;
			ctxname = NULL;
		}
	}
	const char *backend = NULL, *lifecycle = NULL, *image = NULL, *platform = NULL, *rootfs = NULL;
	bool ctx_req = false;
	unsigned hops = 0;
	/* extends cycles were refused at load: a chain visits each context at most once */
	for (const ocontext *x = ctx; x != NULL && hops <= c->ncontexts;
	     x = x->parent, hops++) {
		if (backend == NULL)
			backend = x->backend;
		if (lifecycle == NULL)
			lifecycle = x->lifecycle;
		if (image == NULL)
			image = x->image;
		if (rootfs == NULL)
			rootfs = x->rootfs;
		if (platform == NULL)
			platform = x->platform;
		ctx_req = ctx_req || x->has_requirements;
		for (size_t i = 0; i < x->compose.n; i++)
			if (!strv_add_unique(&s->nets, x->compose.v[i]))
				return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
		for (size_t i = 0; i < x->isolated.n; i++)
			if (!strv_add_unique(&s->iso, x->isolated.v[i]))
				return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	}
	/* the task's selected execution mode is its backend: a context (or the
	 * contract default) never turns a native-mode task into a container lane */
	if (t->mode != NULL)
		backend = t->mode;
	if (backend == NULL)
		backend = c->preferred;
	if (backend == NULL && c->supported.n == 1)
		backend = c->supported.v[0];
	if (backend == NULL)
		backend = "native";
	s->backend = backend;
	s->context = ctxname;
	if (strcmp(backend, "container") == 0) {
		if (t->mode_lifecycle != NULL)
			lifecycle = t->mode_lifecycle;
		if (lifecycle == NULL)
			lifecycle = c->lifecycle;
		s->lifecycle = lifecycle != NULL ? lifecycle : "unspecified";
		s->image = image != NULL ? image : c->image;
		s->rootfs = rootfs != NULL ? rootfs : c->rootfs;
		if (platform == NULL)
			platform = c->platform;
		if (platform != NULL) {
			if (ota_platform_parse(platform, &s->plat, w->err) != OTA_OK)
				return w->err ? w->err->code : OTA_ERR_POLICY_PLATFORM;
			s->plat_source = "declared";
		} else {
			s->plat = w->o->native_platform;
			s->plat_source = "undeclared_host_default";
		}
	} else {
		s->lifecycle = "not_applicable";
		s->plat = w->o->native_platform;
		s->plat_source = strcmp(backend, "native") == 0 ? "native" : "remote_unresolved";
	}
	s->interaction = t->interaction != NULL ? t->interaction : "auto";
	s->kind = t->body_kind != NULL ? t->body_kind : "none";
	/* pre-boundary actions (upstream's names) */
	const char *pre[6];
	size_t np = 0;
	if (ctx_req)
		pre[np++] = "context_requirements";
	if (t->requires_services.n > 0 || (w->wf != NULL && w->wf->services.n > 0))
		pre[np++] = "required_services";
	if (t->has_prepare)
		pre[np++] = "task_prepare";
	if (t->has_requirements)
		pre[np++] = "task_requirements";
	if (t->has_when_checks)
		pre[np++] = "task_when_checks";
	for (size_t i = 0; i < np; i++)
		if (!strv_push(&s->pre, pre[i]))
			return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	strv_sort_unique(&s->nets);
	strv_sort_unique(&s->iso);
	/* boundary: repo baseline, task families replace wholesale, workflow restricts */
	if (!boundary_copy(&s->canon, &c->rb))
		return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
	if (t->rb.has_fs || t->rb.has_net) {
		boundary tc;
		if (!boundary_copy(&tc, &t->rb))
			return ota_error_set(w->err, OTA_ERR_NOMEM, "policy", "out of memory");
		if (tc.has_fs) {
			strv_free(&s->canon.writable);
			strv_free(&s->canon.protected_);
			s->canon.has_fs = true;
			s->canon.root = tc.root;
			s->canon.has_writable = tc.has_writable;
			s->canon.writable = tc.writable;
			s->canon.has_protected = tc.has_protected;
			s->canon.protected_ = tc.protected_;
			memset(&tc.writable, 0, sizeof tc.writable);
			memset(&tc.protected_, 0, sizeof tc.protected_);
		}
		if (tc.has_net) {
			for (size_t i = 0; i < s->canon.ntargets; i++)
				strv_free(&s->canon.targets[i].c_values);
			free(s->canon.targets);
			s->canon.has_net = true;
			s->canon.def = tc.def;
			s->canon.has_targets = tc.has_targets;
			s->canon.targets = tc.targets;
			s->canon.ntargets = tc.ntargets;
			s->canon.ctargets = tc.ctargets;
			tc.targets = NULL;
			tc.ntargets = tc.ctargets = 0;
		}
		boundary_free(&tc);
	}
	if (w->wf != NULL && w->wf->has_rb) {
		char who[300];
		yn_where(c->doc, yn_get(w->wf->node, "runtime_boundary"), who, sizeof who);
		ota_error e2;
		ota_error_clear(&e2);
		ota_err rc = boundary_meet(&s->canon, &w->wf->rb, true, who, &e2);
		if (rc == OTA_ERR_POLICY_OVERLAY_WIDENS || rc == OTA_ERR_POLICY_INCOMPARABLE ||
		    rc == OTA_ERR_POLICY_OVERLAY_DEMOTES)
			return ota_error_set_control(w->err, OTA_ERR_POLICY_SCOPE_CONFLICT, e2.control, who,
			                             "workflow '%.40s' and task '%.40s': %s", w->wf->name,
			                             t->name, e2.what);
		if (rc != OTA_OK)
			return ota_error_set(w->err, rc, e2.where, "%s", e2.what);
	}
	return OTA_OK;
}

static json_t *strv_json(const strv *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < s->n; i++)
		json_array_append_new(a, json_string(s->v[i]));
	return a;
}

/* control classification of one boundary (seeds: authoritative, advisory, obligations) */
static json_t *controls_json(const boundary *b)
{
	json_t *rt = json_array(), *ob = json_array(), *adv = json_array();
	if (b->has_fs) {
		json_array_append_new(rt, json_string("filesystem.repo_root_mode"));
		if (b->writable.n > 0)
			json_array_append_new(rt, json_string("filesystem.writable_paths"));
		if (b->protected_.n > 0)
			json_array_append_new(rt, json_string("filesystem.protected_paths"));
	}
	if (b->has_net && b->def != ND_UNSET)
		json_array_append_new(rt, json_string("network.default"));
	bool allow = false, dest = false;
	for (size_t i = 0; i < b->ntargets; i++) {
		const otarget *t = &b->targets[i];
		if (!t->has_constraint) {
			allow = true;
		} else if (strcmp(t->c_enforcement, "authoritative_runtime_enforced") == 0) {
			allow = dest = true;
		} else if (strcmp(t->c_enforcement, "authoritative_app_enforced") == 0) {
			allow = true;
			json_array_append_new(ob, json_pack("{s:o, s:s}", "id",
			                                    json_sprintf("network.destination.%s:%s",
			                                                 t->kind, t->value),
			                                    "required", "authoritative_app_enforced"));
		} else {
			json_array_append_new(adv, json_pack("{s:o, s:s}", "id",
			                                     json_sprintf("network.destination.%s:%s",
			                                                  t->kind, t->value),
			                                     "required", "advisory_only"));
		}
	}
	if (allow)
		json_array_append_new(rt, json_string("network.target_allowlist"));
	if (dest)
		json_array_append_new(rt, json_string("network.destination_constraints"));
	return json_pack("{s:o, s:o, s:o, s:s}", "authoritative_runtime", rt,
	                 "application_obligations", ob, "advisory", adv, "enforcement_locus",
	                 json_array_size(rt) > 0 ? "runtime" : json_array_size(ob) > 0 ? "application" : "advisory");
}

static json_t *segment_json(const ota_policy *p, const seg *s, size_t order, const boundary *b)
{
	const otask *t = s->t;
	json_t *exec = json_pack("{s:s, s:s?, s:s, s:s, s:s, s:s?}", "backend", s->backend, "context",
	                         s->context, "lifecycle", s->lifecycle, "interaction", s->interaction,
	                         "kind", s->kind, "image", s->image);
	if (exec != NULL && s->context == NULL)
		json_object_set_new(exec, "context", json_null());
	if (exec != NULL && s->image == NULL)
		json_object_set_new(exec, "image", json_null());
	/* Present only when declared, so contracts without it keep their identities. */
	if (exec != NULL && s->rootfs != NULL)
		json_object_set_new(exec, "rootfs", json_string(s->rootfs));
	json_t *body = t->body ? yn_to_json(t->body) : json_null();
	json_t *eff = t->effects ? yn_to_json(t->effects) : json_null();
	(void)p;
	/* json_sprintf sizes the id: a name is never truncated into another's id */
	return json_pack("{s:s, s:o, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}",
	                 "kind", "ota.sandbox_policy_segment/v1", "id",
	                 json_sprintf("task:%s", t->name), "task", t->name, "phase",
	                 s->phase, "order", (json_int_t)order, "target_platform",
	                 platform_json(&s->plat, s->plat_source), "execution", exec, "body", body,
	                 "pre_boundary_actions", strv_json(&s->pre), "inherited_service_networks",
	                 strv_json(&s->nets), "isolated_paths", strv_json(&s->iso),
	                 "runtime_boundary", boundary_to_json(b), "controls", controls_json(b),
	                 "effects", eff, "safe_for_agent", t->safe_for_agent);
}

/*
 * Adjacent segments (in order) whose effective boundary, execution truth and
 * platform are identical may share one provider boundary; any difference
 * starts a new group (never flattened into a union or an intersection).
 */
static bool same_boundary(const seg *a, const seg *b)
{
	const char *keys[] = {"runtime_boundary", "target_platform", NULL};
	for (size_t i = 0; keys[i] != NULL; i++)
		if (!json_equal(json_object_get(a->ejson, keys[i]), json_object_get(b->ejson, keys[i])))
			return false;
	const json_t *xa = json_object_get(a->cjson, "execution"), *xb = json_object_get(b->cjson, "execution");
	if (!json_equal(xa, xb))
		return false;
	return json_equal(json_object_get(a->cjson, "pre_boundary_actions"),
	                  json_object_get(b->cjson, "pre_boundary_actions")) &&
	       json_equal(json_object_get(a->cjson, "isolated_paths"),
	                  json_object_get(b->cjson, "isolated_paths")) &&
	       json_equal(json_object_get(a->cjson, "inherited_service_networks"),
	                  json_object_get(b->cjson, "inherited_service_networks"));
}

static json_t *boundary_groups(const ota_policy *p)
{
	json_t *groups = json_array(), *cur = NULL;
	for (size_t i = 0; groups != NULL && i < p->nsegs; i++) {
		if (cur == NULL || !same_boundary(&p->segs[i - 1], &p->segs[i])) {
			cur = json_array();
			json_array_append_new(groups, cur);
		}
		json_array_append(cur, json_object_get(p->segs[i].cjson, "id"));
	}
	return groups;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static ota_err build_json(ota_policy *p, const ota_overlay *const *ovs, size_t nov, ota_error *err)
{
	ota_err rc;
	/* lane platform: one platform, or mixed */
	json_t *lane_plat = NULL;
	bool same = true;
	for (size_t i = 1; i < p->nsegs; i++)
		same = same && memcmp(&p->segs[i].plat, &p->segs[0].plat, sizeof p->segs[0].plat) == 0 &&
		       strcmp(p->segs[i].plat_source, p->segs[0].plat_source) == 0;
	if (p->nsegs > 0 && same)
		lane_plat = platform_json(&p->segs[0].plat, p->segs[0].plat_source);
	else
		lane_plat = json_pack("{s:s, s:s, s:s, s:s}", "os", "mixed", "architecture", "mixed",
		                      "variant", "", "platform", "per_segment");
	json_t *lane = json_pack("{s:s, s:s}", "kind", p->kind == OTA_LANE_TASK ? "task" : "workflow",
	                         "name", p->name);
	json_t *cseg_ids = json_array(), *eseg_ids = json_array(), *edge_ids = json_array();
	json_t *csegs = json_array(), *esegs = json_array(), *edges = json_array();
	/* overlay identities, sorted */
	const char **oids = calloc(nov + 1, sizeof *oids);
	json_t *oid_arr = json_array(), *ov_arr = json_array();
	if (oids == NULL || lane == NULL || lane_plat == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nov; i++)
		oids[i] = ovs[i]->id;
	qsort(oids, nov, sizeof *oids, cmp_id);
	for (size_t i = 0; i < nov; i++) {
		if (i > 0 && strcmp(oids[i], oids[i - 1]) == 0)
			continue;
		json_array_append_new(oid_arr, json_string(oids[i]));
		for (size_t k = 0; k < nov; k++)
			if (ovs[k]->id == oids[i]) {
				json_t *oj = json_deep_copy(ovs[k]->json);
				json_object_set_new(oj, "identity", json_string(ovs[k]->id));
				json_array_append_new(ov_arr, oj);
				break;
			}
	}
	for (size_t i = 0; i < p->nsegs; i++) {
		seg *s = &p->segs[i];
		s->cjson = segment_json(p, s, i, &s->canon);
		if (s->cjson == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
			goto out;
		}
		rc = ota_json_identity(s->cjson, s->cid, err);
		if (rc != OTA_OK)
			goto out;
		/* the effective segment binds its canonical segment (execution truth,
		 * body, effects) by identity and carries the derived boundary */
		s->ejson = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:s, s:O, s:o, s:o}", "kind",
		                     "ota.effective_sandbox_policy_segment/v1", "id",
		                     json_object_get(s->cjson, "id"), "task",
		                     json_object_get(s->cjson, "task"), "phase",
		                     json_object_get(s->cjson, "phase"), "order",
		                     json_object_get(s->cjson, "order"), "target_platform",
		                     json_object_get(s->cjson, "target_platform"), "canonical_identity",
		                     s->cid, "restriction_overlay_identities", oid_arr,
		                     "runtime_boundary", boundary_to_json(&s->eff), "controls",
		                     controls_json(&s->eff));
		if (s->ejson == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
			goto out;
		}
		rc = ota_json_identity(s->ejson, s->eid, err);
		if (rc != OTA_OK)
			goto out;
		json_array_append_new(cseg_ids, json_string(s->cid));
		json_array_append_new(eseg_ids, json_string(s->eid));
		/* the printed segment carries its identity (computed without it) */
		json_object_set_new(s->cjson, "identity", json_string(s->cid));
		json_object_set_new(s->ejson, "identity", json_string(s->eid));
		json_array_append(csegs, s->cjson);
		json_array_append(esegs, s->ejson);
	}
	for (size_t i = 0; i < p->nedges; i++) {
		edge *e = &p->edges[i];
		e->json = json_pack("{s:s, s:O, s:O, s:s, s:I}", "kind", "ota.sandbox_policy_edge/v1",
		                    "source", json_object_get(p->segs[e->src].cjson, "id"),
		                    "destination", json_object_get(p->segs[e->dst].cjson, "id"),
		                    "condition", e->cond, "order", (json_int_t)i);
		if (e->json == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
			goto out;
		}
		rc = ota_json_identity(e->json, e->id, err);
		if (rc != OTA_OK)
			goto out;
		json_array_append_new(edge_ids, json_string(e->id));
		json_object_set_new(e->json, "identity", json_string(e->id));
		json_array_append(edges, e->json);
	}
	/* canonical core: what the identity binds */
	json_t *core = json_pack("{s:s, s:i, s:s, s:O, s:O, s:O, s:O, s:o}", "kind",
	                         "ota.sandbox_policy/v1", "schema_version", 1, "contract_identity",
	                         p->c->contract_id, "lane", lane, "target_platform", lane_plat,
	                         "segment_identities", cseg_ids, "edge_identities", edge_ids,
	                         "lane_pre_boundary_actions", strv_json(&p->lane_pre));
	if (core == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto out;
	}
	rc = ota_json_identity(core, p->canon_id, err);
	if (rc != OTA_OK) {
		json_decref(core);
		goto out;
	}
	p->canon = core;
	json_object_set_new(p->canon, "identity", json_string(p->canon_id));
	json_object_set(p->canon, "segments", csegs);
	json_object_set(p->canon, "edges", edges);
	json_t *ecore = json_pack("{s:s, s:i, s:s, s:O, s:O, s:O, s:O}", "kind",
	                          "ota.effective_sandbox_policy/v1", "schema_version", 1,
	                          "canonical_identity", p->canon_id, "restriction_overlay_identities",
	                          oid_arr, "target_platform", lane_plat, "segment_identities",
	                          eseg_ids, "edge_identities", edge_ids);
	if (ecore == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto out;
	}
	json_object_set_new(ecore, "boundary_groups", boundary_groups(p));
	rc = ota_json_identity(ecore, p->eff_id, err);
	if (rc != OTA_OK) {
		json_decref(ecore);
		goto out;
	}
	p->eff = ecore;
	json_object_set_new(p->eff, "identity", json_string(p->eff_id));
	json_object_set(p->eff, "restriction_overlays", ov_arr);
	json_object_set(p->eff, "segments", esegs);
	json_object_set(p->eff, "edges", edges);
	rc = OTA_OK;
out:
	free(oids);
	json_decref(lane);
	json_decref(lane_plat);
	json_decref(cseg_ids);
	json_decref(eseg_ids);
	json_decref(edge_ids);
	json_decref(csegs);
	json_decref(esegs);
	json_decref(edges);
	json_decref(oid_arr);
	json_decref(ov_arr);
	return rc;
}

static ota_err policy_compile(const ota_contract *c, ota_lane_kind kind, const char *name,
                              const ota_policy_options *o, const ota_overlay *const *overlays,
                              size_t noverlays, bool with_json, ota_policy **out, ota_error *err);

static int cmp_overlay(const void *a, const void *b)
{
	const ota_overlay *x = *(const ota_overlay *const *)a, *y = *(const ota_overlay *const *)b;
	return strcmp(x->id, y->id);
}

ota_err policy_check_lane(const ota_contract *c, ota_lane_kind kind, const char *name,
                          ota_error *err)
{
	ota_policy_options o;
	memset(&o, 0, sizeof o);
	strcpy(o.native_platform.os, "linux");
	strcpy(o.native_platform.architecture, "amd64");
	ota_policy *p = NULL;
	ota_err rc = policy_compile(c, kind, name, &o, NULL, 0, false, &p, err);
	ota_policy_free(p);
	return rc;
}

ota_err ota_policy_compile(const ota_contract *c, ota_lane_kind kind, const char *name,
                           const ota_policy_options *o, const ota_overlay *const *overlays,
                           size_t noverlays, ota_policy **out, ota_error *err)
{
	return policy_compile(c, kind, name, o, overlays, noverlays, true, out, err);
}

static ota_err policy_compile(const ota_contract *c, ota_lane_kind kind, const char *name,
                              const ota_policy_options *o, const ota_overlay *const *overlays,
                              size_t noverlays, bool with_json, ota_policy **out, ota_error *err)
{
	*out = NULL;
	if (noverlays > OTA_MAX_OVERLAYS)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "overlays", "more than %u overlays",
		                     OTA_MAX_OVERLAYS);
	ota_policy *p = calloc(1, sizeof *p);
	if (p == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
	p->c = c;
	p->kind = kind;
	ota_err rc = OTA_OK;
	walker w = {p, o, NULL, -1, 0, {NULL, NULL, 0, 0}, err};
	const ota_overlay **sorted = calloc(noverlays + 1, sizeof *sorted);
	boundary *restricted = NULL; /* the canonical boundary met with each overlay alone */
	if (sorted == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto fail;
	}
	p->name = pool_strdup(&p->pl, name != NULL ? name : "");
	if (p->name == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto fail;
	}
	if (kind == OTA_LANE_TASK) {
		const otask *t = contract_task(c, name);
		size_t s;
		if (t == NULL) {
			rc = ota_error_set(err, OTA_ERR_POLICY_UNKNOWN_LANE, "task",
			                   "no task named '%.80s'", name ? name : "");
			goto fail;
		}
		rc = visit(&w, t, "run", &s);
		if (rc != OTA_OK)
			goto fail;
	} else {
		const oworkflow *wf = contract_workflow(c, name);
		if (wf == NULL) {
			rc = ota_error_set(err, OTA_ERR_POLICY_UNKNOWN_LANE, "workflow",
			                   "no workflow named '%.80s'", name ? name : "");
			goto fail;
		}
		w.wf = wf;
		size_t prev_root = SIZE_MAX;
		for (int ph = 0; ph < PH_COUNT; ph++) {
			if (wf->phase_direct[ph]) {
				const char *a = ph == PH_PREPARE ? "workflow_prepare_action" : "workflow_direct_action";
				if (!strv_has(&p->lane_pre, a) && !strv_push(&p->lane_pre, a)) {
					rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
					goto fail;
				}
			}
			const otask *t = contract_task(c, wf->phase_task[ph]);
			if (t == NULL)
				continue;
			size_t tv = tmap_get(&w.seen, t->index);
			if (tv != 0 && tv != IN_PROGRESS) {
				char wh[300];
				yn_where(c->doc, yn_get(wf->node, phase_names[ph]), wh, sizeof wh);
				rc = ota_error_set(err, OTA_ERR_POLICY_PHASE_REUSE, wh,
				                   "task '%.60s' of phase %s already runs in an earlier phase; split into distinct task identities",
				                   t->name, phase_names[ph]);
				goto fail;
			}
			size_t first = p->nsegs, root;
			w.cur_phase = ph;
			rc = visit(&w, t, phase_names[ph], &root);
			if (rc != OTA_OK)
				goto fail;
			if (prev_root != SIZE_MAX && first < p->nsegs) {
				rc = add_edge(&w, prev_root, first, "unconditional");
				if (rc != OTA_OK)
					goto fail;
			}
			prev_root = root;
		}
	}
	if (!dedupe_edges(p)) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < p->nsegs; i++) {
		rc = resolve_segment(&w, &p->segs[i]);
		if (rc != OTA_OK)
			goto fail;
		if (boundary_authoritative(&p->segs[i].canon))
			p->authoritative = true;
	}
	/*
	 * effective: the meet of the canonical boundary and every overlay. Each
	 * overlay is first applied alone to the canonical boundary (refused if it
	 * would widen, demote or conflict with it); the effective boundary is then
	 * the lattice meet of those per-overlay restrictions. So the order of the
	 * overlays never matters, adding one never widens, and the result is never
	 * wider than the canonical policy with any single overlay.
	 */
	for (size_t i = 0; i < noverlays; i++)
		sorted[i] = overlays[i];
	qsort(sorted, noverlays, sizeof *sorted, cmp_overlay);
	if (noverlays > 0) {
		restricted = calloc(noverlays, sizeof *restricted);
		if (restricted == NULL) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
			goto fail;
		}
	}
	for (size_t i = 0; i < p->nsegs; i++) {
		seg *s = &p->segs[i];
		char who[OTA_MAX_NAME_BYTES + 16];
		snprintf(who, sizeof who, "task:%s", s->t->name);
		if (noverlays == 0) {
			if (!boundary_copy(&s->eff, &s->canon)) {
				rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
				goto fail;
			}
			continue;
		}
		for (size_t k = 0; k < noverlays; k++) {
			char whok[1000];
			snprintf(whok, sizeof whok, "%s: %s", ydoc_name(sorted[k]->doc), who);
			if (!boundary_copy(&restricted[k], &s->canon)) {
				rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
				goto fail;
			}
			rc = boundary_meet(&restricted[k], &sorted[k]->b, true, whok, err);
			if (rc != OTA_OK)
				goto fail;
		}
		/* every pair first: no refusal may depend on the order of the fold */
		for (size_t k = 0; k < noverlays; k++)
			for (size_t m = k + 1; m < noverlays; m++) {
				char whop[1000];
				snprintf(whop, sizeof whop, "%s and %s: %s", ydoc_name(sorted[k]->doc),
				         ydoc_name(sorted[m]->doc), who);
				rc = boundary_comparable(&restricted[k], &restricted[m], whop, err);
				if (rc != OTA_OK)
					goto fail;
			}
		s->eff = restricted[0];
		memset(&restricted[0], 0, sizeof restricted[0]);
		for (size_t k = 1; k < noverlays; k++) {
			rc = boundary_glb(&s->eff, &restricted[k], who, err);
			if (rc != OTA_OK)
				goto fail;
		}
		boundary_normalize(&s->eff);
		for (size_t k = 0; k < noverlays; k++)
			boundary_free(&restricted[k]);
		/* the policy must not borrow from the overlays: callers may free them */
		if (!boundary_intern(&s->eff, &p->pl)) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, "policy", "out of memory");
			goto fail;
		}
	}
	/* authoritative runtime controls are those of the effective policy: an
	 * overlay may add them where the contract states none */
	for (size_t i = 0; i < p->nsegs; i++)
		if (boundary_authoritative(&p->segs[i].eff))
			p->authoritative = true;
	if (with_json) {
		rc = build_json(p, sorted, noverlays, err);
		if (rc != OTA_OK)
			goto fail;
	}
	tmap_free(&w.seen);
	free(sorted);
	free(restricted);
	*out = p;
	return OTA_OK;
fail:
	for (size_t k = 0; restricted != NULL && k < noverlays; k++)
		boundary_free(&restricted[k]);
	free(restricted);
	tmap_free(&w.seen);
	free(sorted);
	ota_policy_free(p);
	return rc;
}

void ota_policy_free(ota_policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nsegs; i++) {
		seg *s = &p->segs[i];
		strv_free(&s->pre);
		strv_free(&s->nets);
		strv_free(&s->iso);
		boundary_free(&s->canon);
		boundary_free(&s->eff);
		json_decref(s->cjson);
		json_decref(s->ejson);
	}
	for (size_t i = 0; i < p->nedges; i++)
		json_decref(p->edges[i].json);
	free(p->segs);
	free(p->edges);
	strv_free(&p->lane_pre);
	json_decref(p->canon);
	json_decref(p->eff);
	pool_free(&p->pl);
	free(p);
}

const char *ota_policy_canonical_identity(const ota_policy *p)
{
	return p->canon_id;
}

const char *ota_policy_effective_identity(const ota_policy *p)
{
	return p->eff_id;
}

const json_t *ota_policy_canonical_json(const ota_policy *p)
{
	return p->canon;
}

const json_t *ota_policy_effective_json(const ota_policy *p)
{
	return p->eff;
}

size_t ota_policy_segment_count(const ota_policy *p)
{
	return p->nsegs;
}

const char *ota_policy_segment_id(const ota_policy *p, size_t i)
{
	if (i >= p->nsegs)
		return NULL;
	return json_string_value(json_object_get(p->segs[i].cjson, "id"));
}

const char *ota_policy_segment_canonical_identity(const ota_policy *p, size_t i)
{
	return i < p->nsegs ? p->segs[i].cid : NULL;
}

const char *ota_policy_segment_effective_identity(const ota_policy *p, size_t i)
{
	return i < p->nsegs ? p->segs[i].eid : NULL;
}

bool ota_policy_has_authoritative_controls(const ota_policy *p)
{
	return p->authoritative;
}
