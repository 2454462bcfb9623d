/*
 * Capability descriptors (plain data) and the one admission function.
 * policy/ never depends on provider code: a provider is only a descriptor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ota/json.h"
#include "ota/limits.h"

static const char *const control_names[OTA_CTL_COUNT] = {
	"filesystem.repo_root.read_only",
	"filesystem.writable_paths",
	"filesystem.protected_paths",
	"filesystem.protected_paths_under_writable",
	"filesystem.managed_isolated_paths",
	"network.external_connectivity.deny",
	"network.target_allowlist",
	"network.destination_constraints",
	"network.inherited_service_network",
	"secret.binding",
	"process.isolation",
	"lifecycle.cleanup",
	"network.external_connectivity.allow",
};

/*
 * Controls of the first descriptors. A control added later appears in the
 * descriptor JSON (and its identity) only when not unsupported, so the
 * identity of a descriptor that does not declare it never moves (archives
 * bind capability identities).
 */
#define CTL_FIRST_COUNT ((int)OTA_CTL_LIFECYCLE_CLEANUP + 1)

static const char *const state_names[] = {"unsupported", "advisory", "enforced"};

const char *ota_control_name(ota_control c)
{
	return (unsigned)c < OTA_CTL_COUNT ? control_names[c] : "unknown";
}

/* ---- descriptor JSON ---- */

static ota_err bad(ota_error *err, const char *where, const char *what)
{
	return ota_error_set(err, OTA_ERR_POLICY_DESCRIPTOR, where, "%s", what);
}

/* a member name as the error's where ("" names no place: say whose it is) */
static const char *member_where(const char *k, const char *whose)
{
	return k[0] != '\0' ? k : whose;
}

static ota_err str_field(const json_t *o, const char *k, char *dst, size_t cap, ota_error *err)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
		return bad(err, k, "must be a non-empty short string");
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return OTA_OK;
}

static ota_err flags(const json_t *o, const char *k, const char *const *names, bool *const *dst,
                     ota_error *err)
{
	const json_t *a = json_object_get(o, k);
	if (!json_is_array(a))
		return bad(err, k, "must be an array of strings");
	size_t i;
	const json_t *v;
	json_array_foreach(a, i, v) {
		bool ok = false;
		for (size_t n = 0; names[n] != NULL; n++)
			if (json_is_string(v) && strcmp(json_string_value(v), names[n]) == 0) {
				*dst[n] = true;
				ok = true;
			}
		if (!ok)
			return bad(err, k, "holds an unknown value");
	}
	return OTA_OK;
}

static ota_err opt_bool(const json_t *o, const char *k, bool *dst, ota_error *err)
{
	const json_t *v = json_object_get(o, k);
	if (v == NULL)
		return OTA_OK;
	if (!json_is_boolean(v))
		return bad(err, k, "must be a boolean");
	*dst = json_is_true(v);
	return OTA_OK;
}

ota_err ota_capability_descriptor_parse(ota_bytes in, const ota_platform *host,
                                        ota_capability_descriptor *out, ota_error *err)
{
	memset(out, 0, sizeof *out);
	if (in.len > OTA_MAX_DESCRIPTOR_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "descriptor", "descriptor too large");
	json_t *j = NULL;
	ota_err rc = ota_json_parse(in, &j, err);
	if (rc != OTA_OK)
		return rc;
	ota_capability_descriptor d;
	memset(&d, 0, sizeof d);
	static const char *const top[] = {"kind", "target", "adapter_version", "target_platforms",
	                                  "controls", "execution", "description", NULL};
	const char *k;
	json_t *v;
	if (!json_is_object(j)) {
		rc = bad(err, "descriptor", "must be an object");
		goto out;
	}
	json_object_foreach(j, k, v) {
		bool ok = false;
		for (size_t i = 0; top[i]; i++)
			ok = ok || strcmp(top[i], k) == 0;
		if (!ok) {
			rc = bad(err, member_where(k, "descriptor"), "unknown descriptor field");
			goto out;
		}
	}
	const json_t *kind = json_object_get(j, "kind");
	if (kind != NULL && (!json_is_string(kind) ||
	                     strcmp(json_string_value(kind), "ota.capability_descriptor/v1") != 0)) {
		rc = bad(err, "kind", "must be ota.capability_descriptor/v1");
		goto out;
	}
	if ((rc = str_field(j, "target", d.target, sizeof d.target, err)) != OTA_OK ||
	    (rc = str_field(j, "adapter_version", d.adapter_version, sizeof d.adapter_version, err)) !=
	        OTA_OK)
		goto out;
	const json_t *tp = json_object_get(j, "target_platforms");
	if (json_is_string(tp) && strcmp(json_string_value(tp), "host") == 0 && host != NULL) {
		d.platforms[0] = *host;
		d.nplatforms = 1;
	} else if (json_is_array(tp) && json_array_size(tp) <= OTA_CAP_MAX_PLATFORMS) {
		size_t i;
		json_array_foreach(tp, i, v) {
			const char *s = json_string_value(v);
			/* the descriptor's own refusal, not the platform parser's:
			 * the code returned is the code recorded */
			if (s == NULL || ota_platform_parse(s, &d.platforms[d.nplatforms++], NULL) != OTA_OK) {
				rc = bad(err, "target_platforms", "entries must be os/arch[/variant]");
				goto out;
			}
		}
	} else {
		rc = bad(err, "target_platforms", "must be \"host\" or a list of platforms");
		goto out;
	}
	const json_t *ctl = json_object_get(j, "controls");
	if (!json_is_object(ctl)) {
		rc = bad(err, "controls", "must be an object");
		goto out;
	}
	json_object_foreach((json_t *)(uintptr_t)ctl, k, v) {
		int ci = -1, si = -1;
		for (int i = 0; i < OTA_CTL_COUNT; i++)
			if (strcmp(control_names[i], k) == 0)
				ci = i;
		for (int i = 0; i < 3; i++)
			if (json_is_string(v) && strcmp(state_names[i], json_string_value(v)) == 0)
				si = i;
		if (ci < 0 || si < 0) {
			rc = bad(err, member_where(k, "controls"),
			         "unknown control or state (enforced|advisory|unsupported)");
			goto out;
		}
		d.controls[ci] = (ota_cap_state)si;
	}
	const json_t *ex = json_object_get(j, "execution");
	if (!json_is_object(ex)) {
		rc = bad(err, "execution", "must be an object");
		goto out;
	}
	static const char *const exkeys[] = {"backends", "lifecycles", "kinds",
	                                     "requires_declared_platform", "requires_read_only_root",
	                                     "pre_boundary_actions", "failure_hooks", NULL};
	json_object_foreach((json_t *)(uintptr_t)ex, k, v) {
		bool ok = false;
		for (size_t i = 0; exkeys[i]; i++)
			ok = ok || strcmp(exkeys[i], k) == 0;
		if (!ok) {
			/* a misspelt requirement must not be dropped silently */
			rc = bad(err, member_where(k, "execution"), "unknown execution field");
			goto out;
		}
	}
	static const char *const backends[] = {"native", "container", "remote", NULL};
	bool *const bdst[] = {&d.backend_native, &d.backend_container, &d.backend_remote};
	static const char *const lcs[] = {"ephemeral", "persistent", NULL};
	bool *const ldst[] = {&d.lifecycle_ephemeral, &d.lifecycle_persistent};
	static const char *const kinds[] = {"run", "script", "command", "aggregate", "typed", NULL};
	bool *const kdst[] = {&d.kind_run, &d.kind_script, &d.kind_command, &d.kind_aggregate,
	                      &d.kind_typed};
	if ((rc = flags(ex, "backends", backends, bdst, err)) != OTA_OK ||
	    (rc = flags(ex, "lifecycles", lcs, ldst, err)) != OTA_OK ||
	    (rc = flags(ex, "kinds", kinds, kdst, err)) != OTA_OK ||
	    (rc = opt_bool(ex, "requires_declared_platform", &d.requires_declared_platform, err)) !=
	        OTA_OK ||
	    (rc = opt_bool(ex, "requires_read_only_root", &d.requires_read_only_root, err)) != OTA_OK ||
	    (rc = opt_bool(ex, "pre_boundary_actions", &d.pre_boundary_actions, err)) != OTA_OK ||
	    (rc = opt_bool(ex, "failure_hooks", &d.failure_hooks, err)) != OTA_OK)
		goto out;
	*out = d;
out:
	json_decref(j);
	return rc;
}

static json_t *plat_str(const ota_platform *p)
{
	char s[100];
	if (p->variant[0])
		snprintf(s, sizeof s, "%s/%s/%s", p->os, p->architecture, p->variant);
	else
		snprintf(s, sizeof s, "%s/%s", p->os, p->architecture);
	return json_string(s);
}

json_t *ota_capability_descriptor_json(const ota_capability_descriptor *d)
{
	json_t *plats = json_array(), *ctl = json_object(), *b = json_array(), *l = json_array(),
	       *k = json_array();
	for (size_t i = 0; i < d->nplatforms; i++)
		json_array_append_new(plats, plat_str(&d->platforms[i]));
	for (int i = 0; i < OTA_CTL_COUNT; i++)
		if (i < CTL_FIRST_COUNT || d->controls[i] != OTA_CAP_UNSUPPORTED)
			json_object_set_new(ctl, control_names[i], json_string(state_names[d->controls[i]]));
	if (d->backend_native)
		json_array_append_new(b, json_string("native"));
	if (d->backend_container)
		json_array_append_new(b, json_string("container"));
	if (d->backend_remote)
		json_array_append_new(b, json_string("remote"));
	if (d->lifecycle_ephemeral)
		json_array_append_new(l, json_string("ephemeral"));
	if (d->lifecycle_persistent)
		json_array_append_new(l, json_string("persistent"));
	const bool kk[] = {d->kind_run, d->kind_script, d->kind_command, d->kind_aggregate, d->kind_typed};
	const char *kn[] = {"run", "script", "command", "aggregate", "typed"};
	for (int i = 0; i < 5; i++)
		if (kk[i])
			json_array_append_new(k, json_string(kn[i]));
	json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:o, s:o, s:o, s:b, s:b, s:b}}", "kind",
	                      "ota.capability_descriptor/v1", "target", d->target, "adapter_version",
	                      d->adapter_version, "target_platforms", plats, "controls", ctl,
	                      "execution", "backends", b, "lifecycles", l, "kinds", k,
	                      "requires_declared_platform", d->requires_declared_platform,
	                      "requires_read_only_root", d->requires_read_only_root,
	                      "pre_boundary_actions", d->pre_boundary_actions);
	/* only when true, so the identity of every descriptor without it
	 * (oci_local's included, which archives bind) is unchanged */
	if (j != NULL && d->failure_hooks &&
	    json_object_set_new(json_object_get(j, "execution"), "failure_hooks", json_true()) != 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

ota_err ota_capability_descriptor_identity(const ota_capability_descriptor *d,
                                           char out[OTA_ID_LEN + 1], ota_error *err)
{
	json_t *j = ota_capability_descriptor_json(d);
	if (j == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "descriptor", "out of memory");
	ota_err rc = ota_json_identity(j, out, err);
	json_decref(j);
	return rc;
}

/* ---- evaluation ---- */

typedef struct {
	json_t *refusals;
	json_t *apps;
	const ota_capability_descriptor *d;
} eval;

static void refuse(eval *e, const char *seg_id, const char *control, const char *required,
                   ota_cap_state cap, const char *reason)
{
	json_array_append_new(e->refusals,
	                      json_pack("{s:s?, s:s, s:s, s:s, s:s}", "segment_id", seg_id, "control",
	                                control, "required", required, "capability",
	                                state_names[cap], "reason", reason));
}

static bool kind_ok(const ota_capability_descriptor *d, const char *k)
{
	if (strcmp(k, "run") == 0)
		return d->kind_run;
	if (strcmp(k, "script") == 0)
		return d->kind_script;
	if (strcmp(k, "command") == 0)
		return d->kind_command;
	if (strcmp(k, "aggregate") == 0)
		return d->kind_aggregate;
	if (strcmp(k, "none") == 0)
		return false;
	return d->kind_typed;
}

/* a runtime control the segment needs: enforced, or a refusal naming it */
static bool need(eval *e, const char *seg_id, ota_control c, const char *control,
                 const char *required, const char *what)
{
	ota_cap_state st = e->d->controls[c];
	if (st == OTA_CAP_ENFORCED)
		return true;
	char reason[400];
	snprintf(reason, sizeof reason, "%s cannot enforce %s (%s is %s)", e->d->target, what,
	         control_names[c], state_names[st]);
	refuse(e, seg_id, control, required, st, reason);
	return false;
}

_Thread_local size_t policy_hook_steps;

static bool hook_cond(const edge *ed)
{
	return strcmp(ed->cond, "on_failure") == 0 || strcmp(ed->cond, "always") == 0;
}

/*
 * The hook edges (on_failure, always) of p by destination segment, each
 * segment's in edge order: at[first[i] .. first[i + 1]) for segment i
 * (first has nsegs + 2 entries). evaluate visits a segment's own hooks
 * instead of every edge for every segment: S segments in a chain have
 * S - 1 edges, S^2 steps (11 million for 3,333 segments, and admission
 * evaluates twice). False when out of memory.
 */
static bool hooks_by_dst(const ota_policy *p, size_t **first, size_t **at)
{
	*first = calloc(p->nsegs + 2, sizeof **first);
	*at = calloc(p->nedges + 1, sizeof **at);
	if (*first == NULL || *at == NULL) {
		free(*first);
		free(*at);
		*first = *at = NULL;
		return false;
	}
	size_t *f = *first;
	for (size_t k = 0; k < p->nedges; k++)
		if (p->edges[k].dst < p->nsegs && hook_cond(&p->edges[k]))
			f[p->edges[k].dst + 2]++;
	for (size_t i = 2; i < p->nsegs + 2; i++)
		f[i] += f[i - 1];
	/* f[i + 1] is where segment i's hooks start; filling moves it to their end */
	for (size_t k = 0; k < p->nedges; k++)
		if (p->edges[k].dst < p->nsegs && hook_cond(&p->edges[k]))
			(*at)[f[p->edges[k].dst + 1]++] = k;
	return true;
}

static void evaluate(const ota_policy *p, const ota_capability_descriptor *d, eval *e)
{
	e->d = d;
	e->refusals = json_array();
	e->apps = json_array();
	char reason[600];
	if (p->lane_pre.n > 0) {
		char req[200] = "";
		json_t *wid = json_sprintf("workflow:%s", p->name);
		for (size_t i = 0; i < p->lane_pre.n; i++)
			snprintf(req + strlen(req), sizeof req - strlen(req), "%s%s", i ? ", " : "",
			         p->lane_pre.v[i]);
		if (!d->pre_boundary_actions)
			refuse(e, json_string_value(wid), "execution.pre_boundary_actions", req,
			       OTA_CAP_UNSUPPORTED,
			       "workflow-level direct actions would run on the host before the boundary exists");
		json_decref(wid);
	}
	/* each segment's hooks (without the index, out of memory: every edge) */
	size_t *hook_first = NULL, *hook_at = NULL;
	bool indexed = !d->failure_hooks && hooks_by_dst(p, &hook_first, &hook_at);
	for (size_t i = 0; i < p->nsegs; i++) {
		const seg *s = &p->segs[i];
		const boundary *b = &s->eff;
		const char *sid = json_string_value(json_object_get(s->cjson, "id"));
		size_t before = json_array_size(e->refusals);
		bool backend_ok = (strcmp(s->backend, "container") == 0 && d->backend_container) ||
		                  (strcmp(s->backend, "native") == 0 && d->backend_native) ||
		                  (strcmp(s->backend, "remote") == 0 && d->backend_remote);
		if (!backend_ok) {
			snprintf(reason, sizeof reason,
			         "%s cannot change a %s task into another execution mode", d->target,
			         s->backend);
			refuse(e, sid, "execution.backend", d->backend_container ? "container" : "native",
			       OTA_CAP_UNSUPPORTED, reason);
		}
		bool lc_ok = (strcmp(s->lifecycle, "ephemeral") == 0 && d->lifecycle_ephemeral) ||
		             (strcmp(s->lifecycle, "persistent") == 0 && d->lifecycle_persistent) ||
		             (strcmp(s->lifecycle, "not_applicable") == 0 && d->backend_native);
		if (!lc_ok) {
			snprintf(reason, sizeof reason, "%s supports only %s lifecycles; the lane is %s",
			         d->target, d->lifecycle_ephemeral ? "ephemeral" : "persistent", s->lifecycle);
			refuse(e, sid, "execution.lifecycle", d->lifecycle_ephemeral ? "ephemeral" : "persistent",
			       OTA_CAP_UNSUPPORTED, reason);
		}
		if (d->requires_declared_platform && strcmp(s->plat_source, "declared") != 0) {
			refuse(e, sid, "execution.target_platform", "explicit_os_and_architecture",
			       OTA_CAP_UNSUPPORTED,
			       "the lane declares no container platform (os/architecture); the target platform must be explicit execution truth");
		} else {
			bool found = false;
			for (size_t k = 0; k < d->nplatforms; k++)
				found = found || memcmp(&d->platforms[k], &s->plat, sizeof s->plat) == 0;
			if (!found) {
				json_t *ps = plat_str(&s->plat);
				snprintf(reason, sizeof reason,
				         "%s cannot run target platform %s here (no emulation)", d->target,
				         json_string_value(ps));
				refuse(e, sid, "execution.target_platform", json_string_value(ps),
				       OTA_CAP_UNSUPPORTED, reason);
				json_decref(ps);
			}
		}
		if (!kind_ok(d, s->kind)) {
			snprintf(reason, sizeof reason, "%s does not run %s task bodies", d->target, s->kind);
			refuse(e, sid, "execution.kind", s->kind, OTA_CAP_UNSUPPORTED, reason);
		}
		/* a hook chosen by its parent's outcome: a runner that runs the
		 * ordered segments and stops at the first failure would run an
		 * after_failure hook after success and skip both kinds after a
		 * failure (execution truth changed, not refused) */
		size_t lo = indexed ? hook_first[i] : 0;
		size_t hi = indexed ? hook_first[i + 1] : d->failure_hooks ? 0 : p->nedges;
		for (size_t x = lo; x < hi; x++) {
			const edge *ed = &p->edges[indexed ? hook_at[x] : x];
			policy_hook_steps++;
			if (ed->dst != i || !hook_cond(ed))
				continue;
			const char *from = json_string_value(json_object_get(p->segs[ed->src].cjson, "id"));
			snprintf(reason, sizeof reason,
			         "%s cannot select a segment by the outcome of another: %s is an %s hook of %s (it runs segments in order and stops at the first failure)",
			         d->target, sid, strcmp(ed->cond, "on_failure") == 0 ? "after_failure" : "after_always",
			         from != NULL ? from : "?");
			refuse(e, sid, "execution.hook_condition", ed->cond, OTA_CAP_UNSUPPORTED, reason);
		}
		if (s->pre.n > 0 && !d->pre_boundary_actions) {
			char req[200] = "";
			for (size_t k = 0; k < s->pre.n; k++)
				snprintf(req + strlen(req), sizeof req - strlen(req), "%s%s", k ? ", " : "",
				         s->pre.v[k]);
			refuse(e, sid, "execution.pre_boundary_actions", req, OTA_CAP_UNSUPPORTED,
			       "the lane needs host actions (services, prepare, requirements or checks) before the boundary exists");
		}
		/* filesystem */
		bool fs_ok = true;
		if (d->requires_read_only_root && (!b->has_fs || b->root != RM_READ_ONLY)) {
			refuse(e, sid, "filesystem.repo_root_mode", "read_only", OTA_CAP_UNSUPPORTED,
			       "the target requires an explicit read_only repository root");
			fs_ok = false;
		}
		if (b->has_fs) {
			if (b->root == RM_READ_ONLY)
				fs_ok &= need(e, sid, OTA_CTL_FS_READ_ONLY_ROOT, "filesystem.repo_root_mode",
				              "read_only", "a read-only repository root");
			if (b->writable.n > 0)
				fs_ok &= need(e, sid, OTA_CTL_FS_WRITABLE_PATHS, "filesystem.path_boundaries",
				              "declared_writable_carveouts", "writable carve-outs");
			if (b->protected_.n > 0)
				fs_ok &= need(e, sid, OTA_CTL_FS_PROTECTED_PATHS, "filesystem.path_boundaries",
				              "protected_path_write_denial", "protected paths");
			size_t pi, wi;
			if (paths_first_within(&b->protected_, &b->writable, &pi, &wi))
				fs_ok &= need(e, sid, OTA_CTL_FS_PROTECTED_UNDER_WRITABLE,
				              "filesystem.path_boundaries", "canonical_non_overlapping_paths",
				              "a protected path under a writable parent");
		}
		if (s->iso.n > 0)
			fs_ok &= need(e, sid, OTA_CTL_FS_ISOLATED_PATHS, "filesystem.isolated_path",
			              "transactionally_evidenced_provider_resource",
			              "attachments.isolated_paths (engine-owned volumes)");
		/* network */
		bool net_req = (b->has_net && b->def != ND_UNSET) || b->ntargets > 0;
		bool net_ok = true;
		/*
		 * Broad reach (no network control, or no default deny and no
		 * destination a runtime must enforce) needs a boundary that can
		 * grant external connectivity; one that cannot would impose its own
		 * denial, a provider default that is not policy.
		 */
		bool adv_only = true;
		for (size_t k = 0; k < b->ntargets; k++)
			adv_only = adv_only && b->targets[k].has_constraint &&
			           strcmp(b->targets[k].c_enforcement, "advisory_only") == 0;
		if (!b->has_net || (b->def != ND_DENY && adv_only)) {
			ota_cap_state st = d->controls[OTA_CTL_NET_EXTERNAL_ALLOW];
			if (st != OTA_CAP_ENFORCED) {
				snprintf(reason, sizeof reason,
				         "%s cannot grant %s (network.external_connectivity.allow is %s): its boundary would deny external networking as a provider default; declare network default deny",
				         d->target,
				         !b->has_net ? "the unrestricted network of a lane without a network control"
				                     : b->def == ND_ALLOW ? "network default allow"
				                                          : "a network without a default",
				         state_names[st]);
				refuse(e, sid, "network.default",
				       !b->has_net ? "unrestricted" : b->def == ND_ALLOW ? "allow" : "unspecified",
				       st, reason);
				net_req = true;
				net_ok = false;
			}
		}
		bool app_only = true, runtime_dest = false;
		for (size_t k = 0; k < b->ntargets; k++) {
			const otarget *t = &b->targets[k];
			if (!t->has_constraint || strcmp(t->c_enforcement, "advisory_only") != 0)
				app_only = false;
			if (t->has_constraint &&
			    strcmp(t->c_enforcement, "authoritative_runtime_enforced") == 0)
				runtime_dest = true;
		}
		if (b->ntargets > 0 && !(app_only && b->def != ND_DENY))
			net_ok &= need(e, sid, OTA_CTL_NET_TARGET_ALLOWLIST, "network.target_allowlist",
			               "authoritative_targeted_egress", "targeted egress (outbound_targets)");
		if (runtime_dest)
			net_ok &= need(e, sid, OTA_CTL_NET_DESTINATION, "network.destination_constraints",
			               "authoritative_runtime_enforced", "runtime-enforced destination constraints");
		if (b->has_net && b->def == ND_DENY && b->ntargets == 0)
			net_ok &= need(e, sid, OTA_CTL_NET_EXTERNAL_DENY, "network.default", "deny",
			               "external IP-network denial");
		if (s->nets.n > 0 && b->has_net && b->def == ND_DENY)
			net_ok &= need(e, sid, OTA_CTL_NET_SERVICE_NETWORKS,
			               "network.inherited_service_network", "no_inherited_service_networks",
			               "compose attachments under network deny");
		/*
		 * What every enforced boundary rests on: a process tree the task
		 * cannot leave (a task that can reach host processes defeats every
		 * control above) and a boundary whose removal is confirmed. A
		 * descriptor (or the doctor's live descriptor) that cannot give
		 * them admits no boundary at all.
		 */
		if (b->has_fs || net_req || s->iso.n > 0) {
			(void)need(e, sid, OTA_CTL_PROCESS_ISOLATION, "process.isolation",
			           "isolated_process_tree", "an isolated process tree");
			(void)need(e, sid, OTA_CTL_LIFECYCLE_CLEANUP, "lifecycle.cleanup",
			           "confirmed_removal", "a confirmed removal of the boundary");
		}
		bool seg_ok = json_array_size(e->refusals) == before;
		json_array_append_new(
			e->apps,
			json_pack("{s:s, s:s, s:s, s:s, s:s}", "segment_id", sid, "segment_policy_identity",
			          s->eid, "filesystem",
			          !b->has_fs ? "not_required" : fs_ok ? "enforced" : "unsupported", "network",
			          !net_req ? "not_required" : net_ok ? "enforced" : "unsupported", "admission",
			          seg_ok ? "admitted" : "refused"));
	}
	free(hook_first);
	free(hook_at);
}

static json_t *obligations(const ota_policy *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->nsegs; i++) {
		const boundary *b = &p->segs[i].eff;
		for (size_t k = 0; k < b->ntargets; k++) {
			const otarget *t = &b->targets[k];
			if (!t->has_constraint || strcmp(t->c_enforcement, "runtime") == 0)
				continue;
			if (strcmp(t->c_enforcement, "authoritative_app_enforced") == 0)
				json_array_append_new(
					a, json_pack("{s:s, s:o, s:s, s:s}", "segment_id",
					             json_string_value(json_object_get(p->segs[i].cjson, "id")),
					             "id", json_sprintf("network.destination.%s:%s", t->kind, t->value),
					             "required", "authoritative_app_enforced", "evidence",
					             "not_proved"));
			else if (strcmp(t->c_enforcement, "advisory_only") == 0)
				json_array_append_new(
					a, json_pack("{s:s, s:o, s:s, s:s}", "segment_id",
					             json_string_value(json_object_get(p->segs[i].cjson, "id")),
					             "id", json_sprintf("network.destination.%s:%s", t->kind, t->value),
					             "required", "advisory_only", "evidence", "advisory"));
		}
	}
	return a;
}

static json_t *provider_eval_json(const ota_policy *p, const eval *e, const char *cap_id,
                                  char id_out[OTA_ID_LEN + 1], ota_error *err)
{
	json_t *o = json_pack("{s:s, s:b, s:s, s:s, s:s, s:s, s:O, s:O}", "kind",
	                      "ota.provider_application_evaluation/v1", "admitted",
	                      json_array_size(e->refusals) == 0, "provider_target", e->d->target,
	                      "canonical_policy_identity", p->canon_id, "effective_policy_identity",
	                      p->eff_id, "capability_identity", cap_id, "segment_applications",
	                      e->apps, "refusals", e->refusals);
	if (o == NULL || ota_json_identity(o, id_out, err) != OTA_OK) {
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "identity", json_string(id_out));
	return o;
}

ota_err ota_policy_admit(const ota_policy *p, const ota_admission_request *r, json_t **out,
                         bool *admitted, ota_error *err)
{
	*out = NULL;
	*admitted = false;
	if (r->ndescriptors > OTA_MAX_DESCRIPTORS)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "descriptors", "too many descriptors");
	json_t *o = json_object();
	json_t *seg_ids = json_array();
	if (o == NULL || seg_ids == NULL) {
		json_decref(o);
		json_decref(seg_ids);
		return ota_error_set(err, OTA_ERR_NOMEM, "admission", "out of memory");
	}
	for (size_t i = 0; i < p->nsegs; i++)
		json_array_append_new(seg_ids, json_pack("{s:s, s:s, s:s}", "segment_id",
		                                         json_string_value(json_object_get(p->segs[i].cjson, "id")),
		                                         "canonical", p->segs[i].cid, "effective",
		                                         p->segs[i].eid));
	json_t *ids = json_pack("{s:s, s:s, s:s, s:O, s:o}", "contract", p->c->contract_id,
	                        "canonical_policy", p->canon_id, "effective_policy", p->eff_id,
	                        "restriction_overlays",
	                        json_object_get(p->eff, "restriction_overlay_identities"), "segments",
	                        seg_ids);
	json_object_set_new(o, "actor_mode", json_string(r->agent ? "agent" : "human"));
	json_object_set_new(o, "requested_target",
	                    r->requested_target ? json_string(r->requested_target) : json_null());
	json_object_set(o, "canonical_policy", p->canon);
	json_object_set_new(o, "canonical_policy_identity", json_string(p->canon_id));
	json_object_set(o, "restriction_overlay_identities",
	                json_object_get(p->eff, "restriction_overlay_identities"));
	json_object_set(o, "effective_policy", p->eff);
	json_object_set_new(o, "effective_policy_identity", json_string(p->eff_id));
	json_object_set_new(o, "application_obligations", obligations(p));
	json_object_set_new(o, "execution_started", json_false());
	json_t *refusals = json_array(), *alts = json_array();
	const char *decision = "refused", *kind = NULL, *resolution = NULL, *resolved = NULL;
	json_t *peval = json_null();
	char msg[600] = "";
	/* 1. agent admission, before any sandbox evaluation */
	if (r->agent) {
		for (size_t i = 0; i < p->nsegs; i++)
			if (!p->segs[i].t->safe_for_agent) {
				char reason[400];
				snprintf(reason, sizeof reason,
				         "task '%.100s' in the selected closure is not declared safe_for_agent",
				         p->segs[i].t->name);
				json_array_append_new(refusals,
				                      json_pack("{s:s, s:s, s:s, s:s, s:s}", "segment_id",
				                                json_string_value(json_object_get(p->segs[i].cjson, "id")),
				                                "control", "agent.safe_for_agent", "required",
				                                "true", "capability", "not_applicable", "reason",
				                                reason));
			}
		if (json_array_size(refusals) > 0) {
			kind = "agent_unsafe_closure";
			snprintf(msg, sizeof msg, "agent mode refused before sandbox evaluation: the closure holds tasks not declared safe_for_agent");
			goto done;
		}
	}
	/* 2. target resolution and fail-closed evaluation */
	if (r->requested_target != NULL) {
		const ota_capability_descriptor *d = NULL;
		for (size_t i = 0; i < r->ndescriptors; i++)
			if (strcmp(r->descriptors[i].target, r->requested_target) == 0)
				d = &r->descriptors[i];
		resolution = "explicit";
		if (d == NULL) {
			kind = "sandbox_target_unknown";
			json_array_append_new(refusals,
			                      json_pack("{s:n, s:s, s:s, s:s, s:s}", "segment_id", "control",
			                                "sandbox.target", "required", r->requested_target,
			                                "capability", "unsupported", "reason",
			                                "no capability descriptor for the requested target"));
			snprintf(msg, sizeof msg, "sandbox target '%.100s' is not available", r->requested_target);
			goto done;
		}
		eval e;
		char cap_id[OTA_ID_LEN + 1], pe_id[OTA_ID_LEN + 1];
		evaluate(p, d, &e);
		if (ota_capability_descriptor_identity(d, cap_id, err) != OTA_OK) {
			json_decref(e.refusals);
			json_decref(e.apps);
			goto fail;
		}
		json_decref(peval);
		peval = provider_eval_json(p, &e, cap_id, pe_id, err);
		json_array_extend(refusals, e.refusals);
		json_decref(e.refusals);
		json_decref(e.apps);
		if (peval == NULL)
			goto fail;
		resolved = d->target;
		if (json_array_size(refusals) == 0) {
			decision = "admitted";
			json_object_set_new(ids, "capability", json_string(cap_id));
		} else {
			kind = "sandbox_admission_refused";
			snprintf(msg, sizeof msg, "%s cannot enforce every authoritative control of the lane", d->target);
		}
		for (size_t i = 0; i < r->ndescriptors; i++) {
			if (&r->descriptors[i] == d)
				continue;
			eval a;
			evaluate(p, &r->descriptors[i], &a);
			if (json_array_size(a.refusals) == 0)
				json_array_append_new(alts, json_pack("{s:s, s:s}", "target",
				                                      r->descriptors[i].target, "command",
				                                      "--sandbox-target"));
			json_decref(a.refusals);
			json_decref(a.apps);
		}
		goto done;
	}
	if (!r->agent) {
		decision = "not_requested";
		snprintf(msg, sizeof msg, "human run without a sandbox target: no enforcement and never labelled agent-safe");
		goto done;
	}
	if (!p->authoritative) {
		decision = "not_required";
		snprintf(msg, sizeof msg, "no authoritative runtime control in the lane: plain agent admission applies");
		goto done;
	}
	resolution = "automatic";
	{
		size_t ncompat = 0, pick = 0;
		for (size_t i = 0; i < r->ndescriptors; i++) {
			eval e;
			evaluate(p, &r->descriptors[i], &e);
			if (json_array_size(e.refusals) == 0) {
				ncompat++;
				pick = i;
			} else {
				json_array_extend(refusals, e.refusals);
			}
			json_decref(e.refusals);
			json_decref(e.apps);
		}
		if (ncompat == 1) {
			const ota_capability_descriptor *d = &r->descriptors[pick];
			eval e;
			char cap_id[OTA_ID_LEN + 1], pe_id[OTA_ID_LEN + 1];
			evaluate(p, d, &e);
			json_array_clear(refusals);
			if (ota_capability_descriptor_identity(d, cap_id, err) != OTA_OK) {
				json_decref(e.refusals);
				json_decref(e.apps);
				goto fail;
			}
			json_decref(peval);
			peval = provider_eval_json(p, &e, cap_id, pe_id, err);
			json_decref(e.refusals);
			json_decref(e.apps);
			if (peval == NULL)
				goto fail;
			decision = "admitted";
			resolved = d->target;
			json_object_set_new(ids, "capability", json_string(cap_id));
			snprintf(msg, sizeof msg, "resolved the only compatible enforcing target %s", d->target);
		} else if (ncompat == 0) {
			kind = "sandbox_no_enforcing_target";
			snprintf(msg, sizeof msg, "no compatible enforcing sandbox target for a lane with authoritative runtime controls");
		} else {
			json_array_clear(refusals);
			kind = "sandbox_target_ambiguous";
			json_array_append_new(refusals,
			                      json_pack("{s:n, s:s, s:s, s:s, s:s}", "segment_id", "control",
			                                "sandbox.target", "required", "exactly_one_compatible_target",
			                                "capability", "unsupported", "reason",
			                                "more than one compatible enforcing target and no contract-owned default"));
			for (size_t i = 0; i < r->ndescriptors; i++)
				json_array_append_new(alts, json_pack("{s:s, s:s}", "target",
				                                      r->descriptors[i].target, "command",
				                                      "--sandbox-target"));
			snprintf(msg, sizeof msg, "more than one compatible enforcing target: choose one with --sandbox-target");
		}
	}
done:
	*admitted = strcmp(decision, "refused") != 0;
	json_object_set_new(o, "decision", json_string(decision));
	json_object_set_new(o, "kind", kind ? json_string(kind) : json_null());
	json_object_set_new(o, "resolution", resolution ? json_string(resolution) : json_null());
	json_object_set_new(o, "resolved_target", resolved ? json_string(resolved) : json_null());
	json_object_set_new(o, "provider_target",
	                    resolved && *admitted ? json_string(resolved) : json_null());
	json_object_set_new(o, "agent_safe", json_boolean(r->agent && *admitted));
	json_object_set_new(o, "provider_evaluation", peval);
	json_object_set_new(o, "refusals", refusals);
	json_object_set_new(o, "supported_alternatives", alts);
	json_object_set_new(o, "identities", ids);
	json_object_set_new(o, "message", json_string(msg));
	*out = o;
	return OTA_OK;
fail:
	json_decref(o);
	json_decref(ids);
	json_decref(refusals);
	json_decref(alts);
	json_decref(peval);
	*admitted = false;
	return err && err->code != OTA_OK ? err->code : OTA_ERR_INTERNAL;
}

#include "builtin_descriptors.h"

const char *ota_policy_builtin_descriptor(const char *target)
{
	if (target != NULL && strcmp(target, "oci_local") == 0)
		return builtin_oci_local;
	return NULL;
}
