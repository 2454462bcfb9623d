/*
 * runtime_boundary parsing, canonical JSON and the restriction meet
 * (docs/policy.md, "Meet algebra").
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const k_rb[] = {"filesystem", "network", NULL};
static const char *const k_fs[] = {"repo_root_mode", "writable_paths", "protected_paths", NULL};
static const char *const k_net[] = {"default", "outbound_targets", NULL};
static const char *const k_tgt[] = {"kind", "value", "destination_shape", "destination_constraint",
                                    NULL};
static const char *const k_con[] = {"kind", "values", "source_posture", "enforcement",
                                    "shared_pin", NULL};
static const char *const k_pin[] = {"ref", "freshness", NULL};
static const char *const v_root[] = {"read_only", "writable", "read_write", NULL};
static const char *const v_def[] = {"deny", "allow", NULL};
static const char *const v_tkind[] = {"host", "domain", "service_alias", NULL};
static const char *const v_shape[] = {"single_purpose_host", "multi_tenant_host", "relay_host",
                                      "send_host", NULL};
static const char *const v_ckind[] = {"callback_host_allowlist", "recipient_domain_allowlist",
                                      "downstream_host_allowlist", "bucket_scope", "tenant_scope",
                                      "sms_destination_allowlist", NULL};
static const char *const v_post[] = {"repo_local_authoritative", "shared_pinned_authoritative",
                                     "non_authoritative", NULL};
static const char *const v_enf[] = {"authoritative_runtime_enforced", "authoritative_app_enforced",
                                    "advisory_only", NULL};
static const char *const v_fresh[] = {"fresh", "warning", "blocking", NULL};

void boundary_free(boundary *b)
{
	strv_free(&b->writable);
	strv_free(&b->protected_);
	for (size_t i = 0; i < b->ntargets; i++)
		strv_free(&b->targets[i].c_values);
	free(b->targets);
	memset(b, 0, sizeof *b);
}

static bool strv_copy(strv *d, const strv *s)
{
	memset(d, 0, sizeof *d);
	for (size_t i = 0; i < s->n; i++)
		if (!strv_push(d, s->v[i]))
			return false;
	return true;
}

static bool target_copy(otarget *d, const otarget *s)
{
	*d = *s;
	return strv_copy(&d->c_values, &s->c_values);
}

static bool push_target(boundary *b, const otarget *t)
{
	if (b->ntargets == b->ctargets) {
		size_t nc = b->ctargets ? b->ctargets * 2 : 4;
		otarget *nt = realloc(b->targets, nc * sizeof *nt);
		if (nt == NULL)
			return false;
		b->targets = nt;
		b->ctargets = nc;
	}
	if (!target_copy(&b->targets[b->ntargets], t))
		return false;
	b->ntargets++;
	return true;
}

bool boundary_copy(boundary *dst, const boundary *src)
{
	boundary t = *src;
	t.targets = NULL;
	t.ntargets = t.ctargets = 0;
	if (!strv_copy(&t.writable, &src->writable) || !strv_copy(&t.protected_, &src->protected_))
		goto fail;
	for (size_t i = 0; i < src->ntargets; i++)
		if (!push_target(&t, &src->targets[i]))
			goto fail;
	*dst = t;
	return true;
fail:
	boundary_free(&t);
	memset(dst, 0, sizeof *dst);
	return false;
}

static int cmp_target(const void *a, const void *b)
{
	const otarget *x = a, *y = b;
	int c = strcmp(x->kind, y->kind);
	return c != 0 ? c : strcmp(x->value, y->value);
}

static bool str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool strv_eq(const strv *a, const strv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

static bool target_eq(const otarget *a, const otarget *b)
{
	return str_eq(a->shape, b->shape) && a->has_constraint == b->has_constraint &&
	       str_eq(a->c_kind, b->c_kind) && str_eq(a->c_posture, b->c_posture) &&
	       str_eq(a->c_enforcement, b->c_enforcement) && str_eq(a->pin_ref, b->pin_ref) &&
	       str_eq(a->pin_freshness, b->pin_freshness) && strv_eq(&a->c_values, &b->c_values);
}

static ota_err parse_paths(const ydoc *d, const ynode *fs, const char *key, pool *pl, strv *out,
                           bool *has, ota_error *err)
{
	strv raw = {0};
	ota_err rc = y_strv(d, fs, key, &raw, err);
	if (rc != OTA_OK)
		goto out;
	const ynode *list = yn_get(fs, key);
	*has = list != NULL && !yn_is_null(list);
	for (size_t i = 0; i < raw.n; i++) {
		char w[300];
		yn_where(d, list->items[i], w, sizeof w);
		const char *p;
		rc = path_normalize(raw.v[i], pl, &p, w, err);
		if (rc != OTA_OK)
			goto out;
		if (!strv_push(out, p)) {
			rc = ota_error_set(err, OTA_ERR_NOMEM, w, "out of memory");
			goto out;
		}
	}
	strv_sort_unique(out);
out:
	strv_free(&raw);
	return rc;
}

/* One DNS label: 1..63 of [a-z0-9-], not beginning or ending with '-'. */
static bool ldh_label(const char *s, size_t n)
{
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* A lower-case DNS name of LDH labels, at most 253 bytes, whose last label is
 * not all digits (that would be a malformed IPv4 address). */
static bool host_name(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > 253)
		return false;
	const char *p = s, *last = s;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (!ldh_label(p, n))
			return false;
		last = p;
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	return strspn(last, "0123456789") != strlen(last);
}

/* af's address in its one canonical spelling (inet_ntop's). */
static bool ip_canonical(int af, const char *s, bool *parses)
{
	unsigned char a[16];
	char back[INET6_ADDRSTRLEN];
	*parses = inet_pton(af, s, a) == 1;
	return *parses && inet_ntop(af, a, back, sizeof back) != NULL && strcmp(back, s) == 0;
}

/*
 * An outbound target's value by its kind (docs/policy.md, "Outbound
 * targets"): host = a host name or an IPv4 / IPv6 address (canonical
 * spelling), domain = a host name, service_alias = one lower-case name of
 * [a-z0-9._-]. No scheme, path, port, CIDR range, wildcard, upper case,
 * trailing dot or non-ASCII byte: one destination has one spelling, and
 * nothing reads as "anywhere". NULL when valid, else why not.
 */
static const char *target_value_invalid(const char *kind, const char *v)
{
	size_t len = strlen(v);
	if (len > 253)
		return "it is longer than 253 characters";
	if (strstr(v, "://") != NULL)
		return "it is a URL; give the bare host name (no scheme, port or path)";
	if (strchr(v, '*') != NULL)
		return "it is a wildcard; name each destination (a '*' would read as any destination)";
	if (strchr(v, '/') != NULL)
		return "it holds a '/' (a CIDR range or a path); give one host name or address";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c >= 0x80)
			return "it holds a non-ASCII character; give the name's IDNA (xn--) form";
		if (c >= 'A' && c <= 'Z')
			return "it holds upper-case letters; write it in lower case (names are "
			       "case-insensitive and a destination has one spelling)";
		if (c == ' ')
			return "it holds a space";
	}
	if (len > 1 && v[len - 1] == '.')
		return "it ends in a dot; write the name without it";
	if (strcmp(kind, "service_alias") == 0) {
		if (len == 0 || len > 63 || !((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= '0' && v[0] <= '9')) ||
		    strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789._-") != len)
			return "a service alias is one name of 1..63 characters of [a-z0-9._-], starting "
			       "with a letter or digit";
		return NULL;
	}
	bool is_host = strcmp(kind, "host") == 0, parses = false;
	if (strchr(v, ':') != NULL || v[0] == '[') {
		if (!is_host)
			return "a domain is a name, not an address or a port";
		if (ip_canonical(AF_INET6, v, &parses))
			return strcmp(v, "::") == 0 ? "the unspecified address names no destination (it "
			                              "reads as any address)"
			                            : NULL;
		if (parses)
			return "write the IPv6 address in its canonical form (RFC 5952: lower case, "
			       "zeros compressed)";
		return "it is not an IPv6 address (written without brackets); a port (host:port, "
		       "[v6]:port) is not part of a destination";
	}
	if (strspn(v, "0123456789.") == len) {
		if (!is_host)
			return "a domain is a name, not an address";
		if (ip_canonical(AF_INET, v, &parses))
			return strcmp(v, "0.0.0.0") == 0 ? "the unspecified address names no destination "
			                                   "(it reads as any address)"
			                                 : NULL;
		return "it is not an IPv4 address in dotted-decimal form (four numbers 0..255, no "
		       "leading zeros)";
	}
	if (!host_name(v))
		return "it is not a host name (labels of 1..63 characters of [a-z0-9-], not "
		       "starting or ending with '-', separated by single dots)";
	return NULL;
}

/*
 * The target grammar a destination constraint's values take: hosts for the
 * host allowlists (a host name or an address), domains for the recipient
 * domain allowlist; NULL for the kinds whose values are not host names
 * (bucket_scope, tenant_scope, sms_destination_allowlist).
 */
static const char *constraint_value_kind(const char *ckind)
{
	if (strcmp(ckind, "callback_host_allowlist") == 0 ||
	    strcmp(ckind, "downstream_host_allowlist") == 0)
		return "host";
	if (strcmp(ckind, "recipient_domain_allowlist") == 0)
		return "domain";
	return NULL;
}

static ota_err parse_target(const ydoc *d, const ynode *tn, size_t index, otarget *t,
                            ota_error *err)
{
	memset(t, 0, sizeof *t);
	ota_err rc = y_expect(d, tn, YN_MAP, "outbound target", err);
	if (rc == OTA_OK)
		rc = y_keys(d, tn, k_tgt, NULL, "outbound target", err);
	if (rc == OTA_OK)
		rc = y_enum(d, tn, "kind", v_tkind, &t->kind, err);
	if (rc == OTA_OK && t->kind == NULL) {
		char w[300];
		yn_where(d, tn, w, sizeof w);
		rc = ota_error_set(err, OTA_ERR_CONTRACT_MISSING, w, "outbound target needs 'kind'");
	}
	if (rc == OTA_OK)
		rc = y_str(d, tn, "value", true, &t->value, err);
	if (rc == OTA_OK) {
		const char *why = target_value_invalid(t->kind, t->value);
		if (why != NULL) {
			char w[300];
			yn_where(d, yn_get(tn, "value"), w, sizeof w);
			rc = ota_error_set(err, OTA_ERR_POLICY_TARGET_INVALID, w,
			                   "outbound_targets[%zu].value '%.80s' is not a %s: %s", index,
			                   t->value, t->kind, why);
		}
	}
	if (rc == OTA_OK)
		rc = y_enum(d, tn, "destination_shape", v_shape, &t->shape, err);
	if (rc != OTA_OK)
		return rc;
	const ynode *cn = yn_get(tn, "destination_constraint");
	if (cn == NULL || yn_is_null(cn))
		return OTA_OK;
	char w[300];
	yn_where(d, cn, w, sizeof w);
	t->has_constraint = true;
	rc = y_expect(d, cn, YN_MAP, "destination_constraint", err);
	if (rc == OTA_OK)
		rc = y_keys(d, cn, k_con, NULL, "destination_constraint", err);
	if (rc == OTA_OK)
		rc = y_enum(d, cn, "kind", v_ckind, &t->c_kind, err);
	if (rc == OTA_OK)
		rc = y_enum(d, cn, "source_posture", v_post, &t->c_posture, err);
	if (rc == OTA_OK)
		rc = y_enum(d, cn, "enforcement", v_enf, &t->c_enforcement, err);
	if (rc == OTA_OK)
		rc = y_strv(d, cn, "values", &t->c_values, err);
	if (rc != OTA_OK)
		return rc;
	if (t->c_kind == NULL || t->c_posture == NULL || t->c_enforcement == NULL)
		return ota_error_set(err, OTA_ERR_CONTRACT_MISSING, w,
		                     "destination_constraint needs kind, values, source_posture and enforcement");
	/* values that name hosts or domains take the outbound targets' grammar
	 * (the others, bucket and tenant scopes, SMS destinations, are not
	 * host names and stay free strings) */
	const char *vkind = constraint_value_kind(t->c_kind);
	const ynode *vn = yn_get(cn, "values");
	for (size_t i = 0; vkind != NULL && vn != NULL && vn->type == YN_SEQ && i < vn->n; i++) {
		const char *why = vn->items[i]->str[0] != '\0' /* empty: below */
		                          ? target_value_invalid(vkind, vn->items[i]->str)
		                          : NULL;
		if (why != NULL) {
			char vw[300];
			yn_where(d, vn->items[i], vw, sizeof vw);
			return ota_error_set(err, OTA_ERR_POLICY_TARGET_INVALID, vw,
			                     "outbound_targets[%zu].destination_constraint.values[%zu] "
			                     "'%.80s' is not a %s (a %s names %ss): %s",
			                     index, i, vn->items[i]->str, vkind, t->c_kind, vkind, why);
		}
	}
	strv_sort_unique(&t->c_values);
	if (t->c_values.n == 0)
		return ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
		                     "destination_constraint allows no value at all");
	for (size_t i = 0; i < t->c_values.n; i++)
		if (t->c_values.v[i][0] == '\0')
			return ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
			                     "destination_constraint has an empty value");
	const ynode *pin = yn_get(cn, "shared_pin");
	if (pin != NULL && !yn_is_null(pin)) {
		rc = y_expect(d, pin, YN_MAP, "shared_pin", err);
		if (rc == OTA_OK)
			rc = y_keys(d, pin, k_pin, NULL, "shared_pin", err);
		if (rc == OTA_OK)
			rc = y_str(d, pin, "ref", true, &t->pin_ref, err);
		if (rc == OTA_OK)
			rc = y_enum(d, pin, "freshness", v_fresh, &t->pin_freshness, err);
		if (rc != OTA_OK)
			return rc;
	}
	bool shared = strcmp(t->c_posture, "shared_pinned_authoritative") == 0;
	if (shared && t->pin_ref == NULL)
		return ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
		                     "shared_pinned_authoritative needs a shared_pin");
	if (!shared && t->pin_ref != NULL)
		return ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
		                     "shared_pin given but source_posture is %s", t->c_posture);
	if (strcmp(t->c_posture, "non_authoritative") == 0 &&
	    strcmp(t->c_enforcement, "advisory_only") != 0)
		return ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
		                     "a non_authoritative source cannot carry %s enforcement",
		                     t->c_enforcement);
	return OTA_OK;
}

ota_err boundary_parse(const ydoc *d, const ynode *node, pool *pl, boundary *out, ota_error *err)
{
	memset(out, 0, sizeof *out);
	if (node == NULL || yn_is_null(node))
		return OTA_OK;
	char w[300];
	ota_err rc = y_expect(d, node, YN_MAP, "runtime_boundary", err);
	if (rc == OTA_OK)
		rc = y_keys(d, node, k_rb, NULL, "runtime_boundary", err);
	if (rc != OTA_OK)
		return rc;
	const ynode *fs = yn_get(node, "filesystem");
	if (fs != NULL && !yn_is_null(fs)) {
		out->has_fs = true;
		const char *root = NULL;
		rc = y_expect(d, fs, YN_MAP, "runtime_boundary.filesystem", err);
		if (rc == OTA_OK)
			rc = y_keys(d, fs, k_fs, NULL, "runtime_boundary.filesystem", err);
		if (rc == OTA_OK)
			rc = y_enum(d, fs, "repo_root_mode", v_root, &root, err);
		if (rc == OTA_OK)
			rc = parse_paths(d, fs, "writable_paths", pl, &out->writable, &out->has_writable, err);
		if (rc == OTA_OK)
			rc = parse_paths(d, fs, "protected_paths", pl, &out->protected_, &out->has_protected,
			                 err);
		if (rc != OTA_OK)
			goto fail;
		out->root = root == NULL ? RM_UNSET : strcmp(root, "read_only") == 0 ? RM_READ_ONLY : RM_WRITABLE;
		size_t i, j;
		if (paths_first_within(&out->writable, &out->protected_, &i, &j)) {
			yn_where(d, fs, w, sizeof w);
			rc = ota_error_set(err, OTA_ERR_POLICY_PATH_OVERLAP, w,
			                   "writable path '%.80s' equals or lies inside protected path '%.80s'",
			                   out->writable.v[i], out->protected_.v[j]);
			goto fail;
		}
	}
	const ynode *net = yn_get(node, "network");
	if (net != NULL && !yn_is_null(net)) {
		out->has_net = true;
		const char *def = NULL;
		rc = y_expect(d, net, YN_MAP, "runtime_boundary.network", err);
		if (rc == OTA_OK)
			rc = y_keys(d, net, k_net, NULL, "runtime_boundary.network", err);
		if (rc == OTA_OK)
			rc = y_enum(d, net, "default", v_def, &def, err);
		if (rc != OTA_OK)
			goto fail;
		out->def = def == NULL ? ND_UNSET : strcmp(def, "deny") == 0 ? ND_DENY : ND_ALLOW;
		const ynode *tl = yn_get(net, "outbound_targets");
		if (tl != NULL && !yn_is_null(tl)) {
			out->has_targets = true;
			rc = y_expect(d, tl, YN_SEQ, "outbound_targets", err);
			if (rc != OTA_OK)
				goto fail;
			for (size_t i = 0; i < tl->n; i++) {
				otarget t;
				rc = parse_target(d, tl->items[i], i, &t, err);
				if (rc == OTA_OK && !push_target(out, &t))
					rc = ota_error_set(err, OTA_ERR_NOMEM, "outbound_targets", "out of memory");
				strv_free(&t.c_values);
				if (rc != OTA_OK)
					goto fail;
			}
			if (out->ntargets > 1)
				qsort(out->targets, out->ntargets, sizeof *out->targets, cmp_target);
			/* the same destination twice: identical is folded, differing is contradictory */
			size_t o = 0;
			for (size_t i = 0; i < out->ntargets; i++) {
				if (o > 0 && cmp_target(&out->targets[o - 1], &out->targets[i]) == 0) {
					if (!target_eq(&out->targets[o - 1], &out->targets[i])) {
						yn_where(d, tl, w, sizeof w);
						rc = ota_error_set(err, OTA_ERR_POLICY_DESTINATION, w,
						                   "%s '%.80s' is declared twice with different constraints",
						                   out->targets[i].kind, out->targets[i].value);
						goto fail;
					}
					strv_free(&out->targets[i].c_values);
					continue;
				}
				out->targets[o++] = out->targets[i];
			}
			out->ntargets = o;
		}
	}
	return OTA_OK;
fail:
	boundary_free(out);
	return rc;
}

bool boundary_authoritative(const boundary *b)
{
	if (b->has_fs)
		return true;
	if (b->has_net && b->def != ND_UNSET)
		return true;
	for (size_t i = 0; i < b->ntargets; i++)
		if (!b->targets[i].has_constraint ||
		    strcmp(b->targets[i].c_enforcement, "advisory_only") != 0)
			return true;
	return false;
}

static json_t *strv_json(const strv *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < s->n; i++)
		json_array_append_new(a, json_string(s->v[i]));
	return a;
}

static json_t *target_json(const otarget *t)
{
	json_t *o = json_pack("{s:s, s:s}", "kind", t->kind, "value", t->value);
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "destination_shape", t->shape ? json_string(t->shape) : json_null());
	if (t->has_constraint) {
		json_t *c = json_pack("{s:s, s:o, s:s, s:s}", "kind", t->c_kind, "values",
		                      strv_json(&t->c_values), "source_posture", t->c_posture,
		                      "enforcement", t->c_enforcement);
		if (c != NULL && t->pin_ref != NULL)
			json_object_set_new(c, "shared_pin",
			                    json_pack("{s:s, s:s?}", "ref", t->pin_ref, "freshness",
			                              t->pin_freshness));
		json_object_set_new(o, "destination_constraint", c);
	} else {
		json_object_set_new(o, "destination_constraint", json_null());
	}
	return o;
}

json_t *boundary_to_json(const boundary *b)
{
	json_t *o = json_object();
	if (o == NULL)
		return NULL;
	if (b->has_fs) {
		const char *root = b->root == RM_READ_ONLY ? "read_only"
		                   : b->root == RM_WRITABLE ? "writable" : "unspecified";
		json_t *fs = json_pack("{s:s}", "repo_root_mode", root);
		if (b->root == RM_READ_ONLY || b->has_writable)
			json_object_set_new(fs, "writable_paths", strv_json(&b->writable));
		else
			json_object_set_new(fs, "writable_paths", json_null()); /* the whole repository */
		json_object_set_new(fs, "protected_paths", strv_json(&b->protected_));
		json_object_set_new(o, "filesystem", fs);
	} else {
		json_object_set_new(o, "filesystem", json_null());
	}
	if (b->has_net) {
		const char *def = b->def == ND_DENY ? "deny" : b->def == ND_ALLOW ? "allow" : "unspecified";
		const char *scope = b->ntargets > 0 ? "targeted" : b->def == ND_DENY ? "none" : "broad";
		json_t *net = json_pack("{s:s, s:s}", "default", def, "scope", scope);
		json_t *ts = json_array();
		for (size_t i = 0; i < b->ntargets; i++)
			json_array_append_new(ts, target_json(&b->targets[i]));
		json_object_set_new(net, "outbound_targets", ts);
		json_object_set_new(o, "network", net);
	} else {
		json_object_set_new(o, "network", json_null());
	}
	return o;
}

/* ---- meet ---- */

/*
 * Drops from w every path inside one of by (proper: strictly inside; else
 * equal to or inside). by may be w itself: a path dropped is inside one
 * that stays, so the paths still listed answer for it.
 */
static void drop_covered(strv *w, const strv *by, bool proper)
{
	pathset s;
	bool fast = pathset_build(&s, by);
	size_t o = 0;
	for (size_t i = 0; i < w->n; i++) {
		bool inside = false;
		if (fast)
			inside = pathset_covers(&s, w->v[i], proper);
		else
			for (size_t j = 0; j < by->n && !inside; j++)
				inside = path_within(w->v[i], by->v[j]) &&
				         (!proper || strcmp(w->v[i], by->v[j]) != 0);
		if (!inside)
			w->v[o++] = w->v[i];
	}
	pathset_free(&s);
	w->n = o;
}

/* minimal form of a reachability region: sorted, unique, no entry inside another */
static void region_minimize(strv *r)
{
	strv_sort_unique(r);
	drop_covered(r, r, true);
}

/* drops from w every path equal to or inside one of prot */
static void drop_within(strv *w, const strv *prot)
{
	drop_covered(w, prot, false);
}

/* intersection of two reachability regions (minimal sets of subtrees) */
static bool region_intersect(strv *out, const strv *a, const strv *b)
{
	/* the paths of each inside (or equal to) one of the other's */
	strv r = {0};
	pathset sa = {0}, sb = {0};
	bool ok = pathset_build(&sa, a) && pathset_build(&sb, b);
	for (size_t i = 0; ok && i < a->n; i++)
		if (pathset_covers(&sb, a->v[i], false))
			ok = strv_push(&r, a->v[i]);
	for (size_t j = 0; ok && j < b->n; j++)
		if (pathset_covers(&sa, b->v[j], false))
			ok = strv_push(&r, b->v[j]);
	pathset_free(&sa);
	pathset_free(&sb);
	if (!ok) {
		strv_free(&r);
		return false;
	}
	region_minimize(&r);
	strv_free(out);
	*out = r;
	return true;
}

static bool is_advisory(const otarget *t)
{
	return t->has_constraint && strcmp(t->c_enforcement, "advisory_only") == 0;
}

/*
 * Can destination t (one input) and destination r (another input, same kind
 * and value) be conjoined? Shapes must agree; constraints must agree in kind,
 * posture, enforcement and pin (values are intersected later). An
 * advisory_only constraint never lands on an authoritative destination (one
 * without a constraint): the conjunction would turn an enforced allowlist
 * entry advisory. base_may_be_advisory: t is the base (canonical) boundary,
 * whose own advisory constraint stays advisory whatever r says.
 */
static ota_err target_comparable(const otarget *t, const otarget *r, bool base_may_be_advisory,
                                 const char *who, ota_error *err)
{
	if (t->shape != NULL && r->shape != NULL && strcmp(t->shape, r->shape) != 0)
		return ota_error_set_control(err, OTA_ERR_POLICY_INCOMPARABLE, "network.target_allowlist",
		                             who,
		                             "network.target_allowlist: %s '%.80s' has destination_shape %s and %s",
		                     t->kind, t->value, t->shape, r->shape);
	if (t->has_constraint && r->has_constraint) {
		if (strcmp(t->c_kind, r->c_kind) != 0 || strcmp(t->c_posture, r->c_posture) != 0 ||
		    strcmp(t->c_enforcement, r->c_enforcement) != 0 || !str_eq(t->pin_ref, r->pin_ref) ||
		    !str_eq(t->pin_freshness, r->pin_freshness))
			return ota_error_set_control(err, OTA_ERR_POLICY_INCOMPARABLE,
			                             "network.destination_constraints", who,
			                             "network.destination_constraints: %s '%.80s' constraints differ in kind, posture, enforcement or pin",
			                     t->kind, t->value);
		return OTA_OK;
	}
	if ((!t->has_constraint && is_advisory(r)) ||
	    (!base_may_be_advisory && !r->has_constraint && is_advisory(t)))
		return ota_error_set_control(err, OTA_ERR_POLICY_OVERLAY_DEMOTES,
		                             "network.target_allowlist", who,
		                             "network.target_allowlist: %s '%.80s' is an authoritative destination; an advisory_only constraint cannot make it advisory",
		                     t->kind, t->value);
	return OTA_OK;
}

/*
 * t := t meet r for one destination. base: t is the base boundary (a
 * restriction r is being applied to it) rather than a peer of r.
 */
static ota_err target_meet(otarget *t, const otarget *r, bool base, bool *eliminated,
                           const char *who, ota_error *err)
{
	*eliminated = false;
	ota_err rc = target_comparable(t, r, base, who, err);
	if (rc != OTA_OK)
		return rc;
	if (t->shape == NULL)
		t->shape = r->shape;
	if (!r->has_constraint)
		return OTA_OK;
	if (!t->has_constraint) {
		strv keep = t->c_values;
		*t = (otarget){t->kind, t->value, t->shape, true, r->c_kind, r->c_posture,
		               r->c_enforcement, r->pin_ref, r->pin_freshness, {0}};
		strv_free(&keep);
		for (size_t i = 0; i < r->c_values.n; i++)
			if (!strv_push(&t->c_values, r->c_values.v[i]))
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		return OTA_OK;
	}
	strv keep = {0};
	for (size_t i = 0; i < t->c_values.n; i++)
		if (strv_has(&r->c_values, t->c_values.v[i]) && !strv_push(&keep, t->c_values.v[i])) {
			strv_free(&keep);
			return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		}
	strv_free(&t->c_values);
	t->c_values = keep;
	if (keep.n == 0)
		*eliminated = true; /* the conjunction allows nothing: deny that destination */
	return OTA_OK;
}

/* cur.targets := cur.targets meet r.targets (both sorted) */
static ota_err targets_intersect(boundary *cur, const boundary *r, bool base, const char *who,
                                 ota_error *err)
{
	size_t o = 0;
	ota_err rc = OTA_OK;
	for (size_t i = 0; i < cur->ntargets; i++) {
		otarget *t = &cur->targets[i];
		const otarget *m = NULL;
		for (size_t j = 0; j < r->ntargets && m == NULL; j++)
			if (cmp_target(t, &r->targets[j]) == 0)
				m = &r->targets[j];
		bool gone = m == NULL;
		if (m != NULL && rc == OTA_OK)
			rc = target_meet(t, m, base, &gone, who, err);
		if (gone || rc != OTA_OK) {
			strv_free(&t->c_values);
			continue;
		}
		cur->targets[o++] = *t;
	}
	cur->ntargets = o;
	return rc;
}

ota_err boundary_meet(boundary *cur, const boundary *r, bool strict, const char *who,
                     ota_error *err)
{
	ota_err rc;
	if (r->has_fs) {
		if (strict && r->root == RM_WRITABLE && cur->root == RM_READ_ONLY)
			return ota_error_set_control(err, OTA_ERR_POLICY_OVERLAY_WIDENS,
			                             "filesystem.repo_root_mode", who,
			                             "filesystem.repo_root_mode: writable cannot widen read_only");
		bool all = !cur->has_fs || (cur->root != RM_READ_ONLY && !cur->has_writable);
		cur->has_fs = true;
		if (r->root == RM_READ_ONLY && cur->root != RM_READ_ONLY) {
			cur->root = RM_READ_ONLY;
			if (all) { /* no declared carve-outs: nothing stays writable */
				cur->writable.n = 0;
			}
			all = false;
			cur->has_writable = true;
		}
		if (r->has_writable) {
			if (all) {
				strv_free(&cur->writable);
				for (size_t i = 0; i < r->writable.n; i++)
					if (!strv_push(&cur->writable, r->writable.v[i]))
						return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
			} else if (!region_intersect(&cur->writable, &cur->writable, &r->writable)) {
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
			}
			cur->has_writable = true;
			cur->root = RM_READ_ONLY; /* a writable list bounds the reach */
		}
		for (size_t i = 0; i < r->protected_.n; i++)
			if (!strv_push(&cur->protected_, r->protected_.v[i]))
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		cur->has_protected = cur->has_protected || r->has_protected;
		strv_sort_unique(&cur->protected_);
		/* protection wins: writable reach inside protected content is dropped */
		drop_within(&cur->writable, &cur->protected_);
	}
	if (r->has_net) {
		/* broad allow (no destinations) over deny widens; an allowlist
		 * (allow with destinations) is a targeted reach, met with the
		 * denied one below as the same list without a default is */
		if (strict && r->def == ND_ALLOW && r->ntargets == 0 && cur->def == ND_DENY)
			return ota_error_set_control(err, OTA_ERR_POLICY_OVERLAY_WIDENS, "network.default",
			                             who, "network.default: allow cannot widen deny");
		/* the reach before this restriction: broad unless denied (no
		 * control, allow or unspecified, and no destinations) */
		bool was_broad = cur->def != ND_DENY;
		cur->has_net = true;
		if (r->def == ND_DENY)
			cur->def = ND_DENY;
		if (r->has_targets) {
			if (cur->ntargets > 0) {
				rc = targets_intersect(cur, r, true, who, err);
				if (rc != OTA_OK)
					return rc;
				if (cur->ntargets == 0)
					cur->def = ND_DENY; /* every destination eliminated: explicit denial */
			} else if (was_broad) {
				/* broad reach narrowed to the restriction's destinations
				 * (its exceptions under deny, its allowlist under allow) */
				for (size_t i = 0; i < r->ntargets; i++)
					if (!push_target(cur, &r->targets[i]))
						return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
				if (cur->ntargets == 0)
					cur->def = ND_DENY;
			}
			cur->has_targets = true;
		}
	}
	return OTA_OK;
}

/* ---- the lattice meet of restricted boundaries ---- */

static int root_rank(int r)
{
	return r == RM_READ_ONLY ? 0 : r == RM_WRITABLE ? 1 : 2;
}

static int def_rank(int d)
{
	return d == ND_DENY ? 0 : d == ND_ALLOW ? 1 : 2;
}

/* true when b lets the whole repository be written (no filesystem control,
 * or a root that is not read_only without a writable list) */
static bool fs_all(const boundary *b)
{
	return !b->has_fs || (b->root != RM_READ_ONLY && !b->has_writable);
}

enum { NET_BROAD = 0, NET_TARGETED = 1, NET_NONE = 2 };

static int net_reach(const boundary *b)
{
	if (!b->has_net)
		return NET_BROAD;
	if (b->ntargets > 0)
		return NET_TARGETED;
	return b->def == ND_DENY ? NET_NONE : NET_BROAD;
}

static void clear_targets(boundary *b)
{
	for (size_t i = 0; i < b->ntargets; i++)
		strv_free(&b->targets[i].c_values);
	b->ntargets = 0;
}

ota_err boundary_comparable(const boundary *a, const boundary *b, const char *who, ota_error *err)
{
	for (size_t i = 0; i < a->ntargets; i++)
		for (size_t j = 0; j < b->ntargets; j++) {
			if (cmp_target(&a->targets[i], &b->targets[j]) != 0)
				continue;
			ota_err rc = target_comparable(&a->targets[i], &b->targets[j], false, who, err);
			if (rc != OTA_OK)
				return rc;
		}
	return OTA_OK;
}

ota_err boundary_glb(boundary *cur, const boundary *o, const char *who, ota_error *err)
{
	if (o->has_fs) {
		bool ca = fs_all(cur), oa = fs_all(o);
		if (!cur->has_fs) {
			cur->has_fs = true;
			cur->root = o->root;
		} else if (root_rank(o->root) < root_rank(cur->root)) {
			cur->root = o->root;
		}
		if (!ca && !oa) {
			if (!region_intersect(&cur->writable, &cur->writable, &o->writable))
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		} else if (ca && !oa) {
			strv_free(&cur->writable);
			if (!strv_copy(&cur->writable, &o->writable))
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		}
		cur->has_writable = !(ca && oa);
		for (size_t i = 0; i < o->protected_.n; i++)
			if (!strv_push(&cur->protected_, o->protected_.v[i]))
				return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		cur->has_protected = cur->has_protected || o->has_protected;
	}
	if (o->has_net) {
		int rcur = net_reach(cur), ro = net_reach(o);
		int def = !cur->has_net || def_rank(o->def) < def_rank(cur->def) ? o->def : cur->def;
		cur->has_net = true;
		cur->has_targets = cur->has_targets || o->has_targets;
		if (rcur == NET_NONE || ro == NET_NONE) {
			clear_targets(cur);
			def = ND_DENY;
		} else if (rcur == NET_TARGETED && ro == NET_TARGETED) {
			ota_err rc = targets_intersect(cur, o, false, who, err);
			if (rc != OTA_OK)
				return rc;
			if (cur->ntargets == 0)
				def = ND_DENY; /* every destination eliminated: explicit denial */
		} else if (ro == NET_TARGETED) {
			clear_targets(cur);
			for (size_t i = 0; i < o->ntargets; i++)
				if (!push_target(cur, &o->targets[i]))
					return ota_error_set(err, OTA_ERR_NOMEM, who, "out of memory");
		}
		cur->def = def;
	}
	return OTA_OK;
}

void boundary_normalize(boundary *b)
{
	if (b->has_fs) {
		if (b->root == RM_READ_ONLY)
			b->has_writable = true; /* a read-only root: exactly the listed carve-outs */
		region_minimize(&b->writable);
		strv_sort_unique(&b->protected_);
		drop_within(&b->writable, &b->protected_);
	}
	if (b->has_net && b->ntargets > 1)
		qsort(b->targets, b->ntargets, sizeof *b->targets, cmp_target);
}

static bool intern_str(const char **s, pool *pl)
{
	if (*s == NULL)
		return true;
	const char *c = pool_strdup(pl, *s);
	if (c == NULL)
		return false;
	*s = c;
	return true;
}

bool boundary_intern(boundary *b, pool *pl)
{
	for (size_t i = 0; i < b->writable.n; i++)
		if (!intern_str(&b->writable.v[i], pl))
			return false;
	for (size_t i = 0; i < b->protected_.n; i++)
		if (!intern_str(&b->protected_.v[i], pl))
			return false;
	for (size_t i = 0; i < b->ntargets; i++) {
		otarget *t = &b->targets[i];
		if (!intern_str(&t->kind, pl) || !intern_str(&t->value, pl) ||
		    !intern_str(&t->shape, pl) || !intern_str(&t->c_kind, pl) ||
		    !intern_str(&t->c_posture, pl) || !intern_str(&t->c_enforcement, pl) ||
		    !intern_str(&t->pin_ref, pl) || !intern_str(&t->pin_freshness, pl))
			return false;
		for (size_t k = 0; k < t->c_values.n; k++)
			if (!intern_str(&t->c_values.v[k], pl))
				return false;
	}
	return true;
}
