/* ota.yaml (upstream version 1) -> contract model, with static validation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ota/json.h"
#include "ota/limits.h"

static const char *const k_top[] = {
	"version", "project", "workspace", "execution", "tasks", "workflows", "agent", "runtimes",
	"tools", "toolchains", "orchestrators", "native_prerequisites", "env", "services", "readiness",
	"surfaces", "checks", "artifacts", "extensions", "exports", "policies", "metadata",
	"governance", "resource_bindings", "effect_definitions", "secret_requirements", NULL};
static const char *const k_exec[] = {"preferred", "supported", "lifecycle", "backends",
                                     "default_context", "contexts", "runtime_boundary",
                                     "shared_backends", "default_mode", NULL};
static const char *const k_ctx[] = {"extends", "backend", "lifecycle", "fulfillment", "only_on",
                                    "only_arch", "env", "container", "remote", "requirements",
                                    "attachments", "description", NULL};
static const char *const k_container[] = {"image", "platform", "engines", "resources", "rootfs",
                                          NULL};
static const char *const k_attach[] = {"compose", "isolated_paths", NULL};
static const char *const k_task[] = {
	"description", "notes", "category", "context", "runtime_boundary", "env", "env_files",
	"env_bindings", "adapter_inputs", "inputs", "replay_inputs", "witnessed_observations",
	"targets", "effects", "requirements", "depends_on", "requires_services", "requires_artifacts",
	"runtime", "after_success", "after_failure", "after_always", "safe_for_agent", "only_on",
	"internal", "variants", "execution", "when", "run", "script", "command", "aggregate",
	"prepare", "action", "launch", "compose", NULL};
/*
 * Inside a task: execution, its mode branches, variants, and what those may
 * hold. A branch or variant overrides the task's body and its environment;
 * keys that only the task level is read for (the graph edges, the boundary,
 * safe_for_agent, ...) are refused there rather than ignored: a
 * runtime_boundary or depends_on that silently did nothing would be a
 * narrowing or a step the user believes in and the policy does not have.
 */
static const char *const k_task_exec[] = {"default_mode", "orchestrator", "modes", NULL};
#define K_OVERRIDE                                                                            \
	"description", "notes", "category", "context", "env", "env_files", "env_bindings",    \
	    "adapter_inputs", "inputs", "replay_inputs", "witnessed_observations", "targets",  \
	    "effects", "requirements", "requires_artifacts", "runtime", "run", "script",        \
	    "command", "aggregate", "prepare", "action", "launch", "compose"
static const char *const k_branch[] = {K_OVERRIDE, "lifecycle", "orchestrator", NULL};
static const char *const k_orchestrator_ref[] = {"ref", "mode", NULL};
static const char *const v_orchestrator_mode[] = {"task", "exec", NULL};
static const char *const k_variant[] = {K_OVERRIDE, "when", NULL};
static const char *const k_variant_when[] = {"os", NULL};
static const char *const k_phase[] = {"task", "action", NULL};
static const char *const k_wf_services[] = {"required", NULL};
static const char *const k_command[] = {"exe", "args", "cwd", "interaction", "runtime_projection",
                                        NULL};
static const char *const k_wf[] = {"intent", "description", "notes", "runtime_boundary", "env",
                                   "prepare", "setup", "run", "attach", "services", "readiness",
                                   "proof", "exposes", "adapter_inputs", "instances", NULL};
static const char *const v_backend[] = {"native", "container", "remote", NULL};
static const char *const v_lifecycle[] = {"persistent", "ephemeral", NULL};
static const char *const v_interaction[] = {"auto", "forbidden", "required", NULL};
static const char *const body_keys[] = {"run", "script", "command", "aggregate",
                                        "prepare", "action", "launch", "compose", NULL};
static const char *const phase_names[PH_COUNT] = {"prepare", "setup", "run", "attach"};

static ota_err where_err(const ota_contract *c, const ynode *n, ota_err code, ota_error *err,
                         const char *fmt, ...) OTA_PRINTF(5, 6);
static ota_err where_err(const ota_contract *c, const ynode *n, ota_err code, ota_error *err,
                         const char *fmt, ...)
{
	char w[300];
	yn_where(c->doc, n, w, sizeof w);
	va_list ap;
	va_start(ap, fmt);
	ota_err rc = ota_error_vset(err, code, w, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * A task, context or workflow name (a mapping key: ytree already refused
 * control characters in it) becomes part of segment ids, edges and refusal
 * ids: non-empty and at most OTA_MAX_NAME_BYTES, never truncated later.
 */
static ota_err check_name(const ota_contract *c, const ynode *key, const char *what,
                          ota_error *err)
{
	if (key->len == 0)
		return where_err(c, key, OTA_ERR_CONTRACT_VALUE, err, "%s names must not be empty%s",
		                 what, "");
	if (key->len > OTA_MAX_NAME_BYTES)
		return where_err(c, key, OTA_ERR_CONTRACT_NAME_TOO_LONG, err,
		                 "%s name of %zu bytes is longer than %u bytes", what, key->len,
		                 OTA_MAX_NAME_BYTES);
	return OTA_OK;
}

/* ---- task index ---- */

static uint64_t h_str(const char *s)
{
	return yn_hash(s, strlen(s));
}

/*
 * An open-addressing hash of the names of n records of stride bytes, each
 * holding its name (a const char *) at offset off; SIZE_MAX marks a free
 * slot. A name given twice is found at its first record.
 */
#define NAME_AT(base, stride, off, i) \
	(*(const char *const *)(const void *)((const char *)(base) + (i) * (stride) + (off)))

static bool index_names(const void *base, size_t n, size_t stride, size_t off, size_t **slots,
                        size_t *cap_out)
{
	size_t cap = 16;
	while (cap < n * 2 + 2)
		cap *= 2;
	size_t *ix = malloc(cap * sizeof *ix);
	if (ix == NULL)
		return false;
	for (size_t i = 0; i < cap; i++)
		ix[i] = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t h = (size_t)(h_str(NAME_AT(base, stride, off, i)) & (cap - 1));
		while (ix[h] != SIZE_MAX)
			h = (h + 1) & (cap - 1);
		ix[h] = i;
	}
	free(*slots);
	*slots = ix;
	*cap_out = cap;
	return true;
}

static size_t find_name(const void *base, size_t stride, size_t off, const size_t *ix, size_t cap,
                        const char *name)
{
	if (ix == NULL || name == NULL)
		return SIZE_MAX;
	size_t h = (size_t)(h_str(name) & (cap - 1));
	while (ix[h] != SIZE_MAX) {
		if (strcmp(NAME_AT(base, stride, off, ix[h]), name) == 0)
			return ix[h];
		h = (h + 1) & (cap - 1);
	}
	return SIZE_MAX;
}

static bool index_tasks(ota_contract *c)
{
	return index_names(c->tasks, c->ntasks, sizeof *c->tasks, offsetof(otask, name),
	                   &c->task_index, &c->task_index_cap);
}

const otask *contract_task(const ota_contract *c, const char *name)
{
	size_t i = find_name(c->tasks, sizeof *c->tasks, offsetof(otask, name), c->task_index,
	                     c->task_index_cap, name);
	return i == SIZE_MAX ? NULL : &c->tasks[i];
}

const ocontext *contract_context(const ota_contract *c, const char *name)
{
	size_t i = find_name(c->contexts, sizeof *c->contexts, offsetof(ocontext, name),
	                     c->context_index, c->context_index_cap, name);
	return i == SIZE_MAX ? NULL : &c->contexts[i];
}

const oworkflow *contract_workflow(const ota_contract *c, const char *name)
{
	size_t i = find_name(c->workflows, sizeof *c->workflows, offsetof(oworkflow, name),
	                     c->workflow_index, c->workflow_index_cap, name);
	return i == SIZE_MAX ? NULL : &c->workflows[i];
}

/* ---- execution ---- */

/*
 * container: {image, platform, rootfs, ...}. rootfs is our one extension: a
 * prepared root filesystem directory, absolute or relative to the contract's
 * directory, used instead of an image (DESIGN.md section 2a).
 */
static ota_err parse_container(ota_contract *c, const ynode *cn, const char **image,
                               const char **platform, const char **rootfs, ota_error *err)
{
	if (cn == NULL || yn_is_null(cn))
		return OTA_OK;
	ota_err rc = y_expect(c->doc, cn, YN_MAP, "container", err);
	if (rc == OTA_OK)
		rc = y_keys(c->doc, cn, k_container, NULL, "container", err);
	if (rc == OTA_OK)
		rc = y_str(c->doc, cn, "image", false, image, err);
	if (rc == OTA_OK)
		rc = y_str(c->doc, cn, "platform", false, platform, err);
	if (rc == OTA_OK)
		rc = y_str(c->doc, cn, "rootfs", false, rootfs, err);
	if (rc == OTA_OK && *rootfs != NULL && ((*rootfs)[0] == '\0' || strlen(*rootfs) >= OTA_MAX_PATH_BYTES))
		rc = where_err(c, yn_get(cn, "rootfs"), OTA_ERR_CONTRACT_VALUE, err,
		               "container.rootfs must be a non-empty path shorter than %u bytes%s",
		               OTA_MAX_PATH_BYTES, "");
	if (rc == OTA_OK && *platform != NULL) {
		ota_platform p;
		char w[300];
		yn_where(c->doc, yn_get(cn, "platform"), w, sizeof w);
		ota_error e2;
		ota_error_clear(&e2);
		if (ota_platform_parse(*platform, &p, &e2) != OTA_OK)
			rc = ota_error_set(err, e2.code, w, "%s", e2.what);
	}
	return rc;
}

/*
 * extends cycles, in one pass: each chain is walked until a context already
 * known to end (mark 2) or one on this walk (mark 1 with this walk's stamp:
 * a cycle, reported at the first context in order whose chain never ends,
 * as before). Contexts a finished walk passed are known to end.
 */
static ota_err check_extends_cycles(ota_contract *c, ota_error *err)
{
	size_t n = c->ncontexts;
	size_t *stamp = malloc((n + 1) * sizeof *stamp);
	uint8_t *mark = calloc(n + 1, 1);
	if (stamp == NULL || mark == NULL) {
		free(stamp);
		free(mark);
		return ota_error_set(err, OTA_ERR_NOMEM, "contexts", "out of memory");
	}
	ota_err rc = OTA_OK;
	for (size_t i = 0; i < n && rc == OTA_OK; i++) {
		const ocontext *x = &c->contexts[i];
		while (x != NULL) {
			size_t k = (size_t)(x - c->contexts);
			if (mark[k] == 2)
				break;
			if (mark[k] == 1) {
				if (stamp[k] == i)
					rc = where_err(c, yn_get(c->contexts[i].node, "extends"),
					               OTA_ERR_POLICY_CYCLE, err,
					               "context '%.60s' extends itself through its extends chain%s",
					               c->contexts[i].name, "");
				break;
			}
			mark[k] = 1;
			stamp[k] = i;
			x = x->parent;
		}
		for (x = &c->contexts[i]; rc == OTA_OK && x != NULL && mark[x - c->contexts] == 1;
		     x = x->parent)
			mark[x - c->contexts] = 2;
	}
	free(stamp);
	free(mark);
	return rc;
}

static ota_err parse_execution(ota_contract *c, const ynode *ex, ota_error *err)
{
	if (ex == NULL || yn_is_null(ex))
		return OTA_OK;
	const ydoc *d = c->doc;
	ota_err rc = y_expect(d, ex, YN_MAP, "execution", err);
	if (rc == OTA_OK)
		rc = y_keys(d, ex, k_exec, NULL, "execution", err);
	if (rc == OTA_OK)
		rc = y_enum(d, ex, "preferred", v_backend, &c->preferred, err);
	if (rc == OTA_OK)
		rc = y_enum(d, ex, "lifecycle", v_lifecycle, &c->lifecycle, err);
	if (rc == OTA_OK)
		rc = y_strv(d, ex, "supported", &c->supported, err);
	if (rc == OTA_OK)
		rc = y_str(d, ex, "default_context", false, &c->default_context, err);
	if (rc != OTA_OK)
		return rc;
	for (size_t i = 0; i < c->supported.n; i++) {
		bool ok = false;
		for (const char *const *v = v_backend; *v; v++)
			ok = ok || strcmp(*v, c->supported.v[i]) == 0;
		if (!ok)
			return where_err(c, yn_get(ex, "supported"), OTA_ERR_CONTRACT_VALUE, err,
			                 "supported backend '%.40s' is not native, container or remote%s",
			                 c->supported.v[i], "");
	}
	if (c->preferred != NULL && c->supported.n > 0 && !strv_has(&c->supported, c->preferred))
		return where_err(c, yn_get(ex, "preferred"), OTA_ERR_CONTRACT_VALUE, err,
		                 "preferred backend '%s' is not in supported%s", c->preferred, "");
	const ynode *be = yn_get(ex, "backends");
	if (be != NULL && !yn_is_null(be)) {
		rc = y_expect(d, be, YN_MAP, "execution.backends", err);
		if (rc == OTA_OK)
			rc = parse_container(c, yn_get(be, "container"), &c->image, &c->platform, &c->rootfs, err);
		if (rc != OTA_OK)
			return rc;
	}
	const ynode *cx = yn_get(ex, "contexts");
	if (cx != NULL && !yn_is_null(cx)) {
		rc = y_expect(d, cx, YN_MAP, "execution.contexts", err);
		if (rc != OTA_OK)
			return rc;
		c->contexts = pool_alloc(&c->pl, (cx->n / 2) * sizeof *c->contexts);
		if (c->contexts == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "contexts", "out of memory");
		for (size_t i = 0; i + 1 < cx->n; i += 2) {
			ocontext *o = &c->contexts[c->ncontexts++];
			const ynode *v = cx->items[i + 1];
			o->name = cx->items[i]->str;
			o->node = v;
			rc = check_name(c, cx->items[i], "context", err);
			if (rc == OTA_OK)
				rc = y_expect(d, v, YN_MAP, "context", err);
			if (rc == OTA_OK)
				rc = y_keys(d, v, k_ctx, NULL, "context", err);
			if (rc == OTA_OK)
				rc = y_str(d, v, "extends", false, &o->extends, err);
			if (rc == OTA_OK)
				rc = y_enum(d, v, "backend", v_backend, &o->backend, err);
			if (rc == OTA_OK)
				rc = y_enum(d, v, "lifecycle", v_lifecycle, &o->lifecycle, err);
			if (rc == OTA_OK)
				rc = parse_container(c, yn_get(v, "container"), &o->image, &o->platform, &o->rootfs, err);
			if (rc != OTA_OK)
				return rc;
			const ynode *req = yn_get(v, "requirements");
			o->has_requirements = req != NULL && !yn_is_null(req) &&
			                      !(req->type == YN_MAP && req->n == 0);
			const ynode *at = yn_get(v, "attachments");
			if (at != NULL && !yn_is_null(at)) {
				rc = y_expect(d, at, YN_MAP, "attachments", err);
				if (rc == OTA_OK)
					rc = y_keys(d, at, k_attach, NULL, "attachments", err);
				if (rc == OTA_OK)
					rc = y_strv(d, at, "compose", &o->compose, err);
				if (rc == OTA_OK)
					rc = y_strv(d, at, "isolated_paths", &o->isolated, err);
				if (rc != OTA_OK)
					return rc;
				for (size_t k = 0; k < o->isolated.n; k++) {
					char w[300];
					yn_where(d, at, w, sizeof w);
					const char *np;
					rc = path_normalize(o->isolated.v[k], &c->pl, &np, w, err);
					if (rc != OTA_OK)
						return rc;
					o->isolated.v[k] = np;
				}
			}
		}
		if (!index_names(c->contexts, c->ncontexts, sizeof *c->contexts,
		                 offsetof(ocontext, name), &c->context_index, &c->context_index_cap))
			return ota_error_set(err, OTA_ERR_NOMEM, "contexts", "out of memory");
		for (size_t i = 0; i < c->ncontexts; i++) {
			ocontext *o = &c->contexts[i];
			if (o->extends != NULL && (o->parent = contract_context(c, o->extends)) == NULL)
				return where_err(c, yn_get(o->node, "extends"), OTA_ERR_CONTRACT_REFERENCE,
				                 err, "context '%s' extends unknown context '%.60s'", o->name,
				                 o->extends);
		}
		rc = check_extends_cycles(c, err);
		if (rc != OTA_OK)
			return rc;
	}
	if (c->default_context != NULL && contract_context(c, c->default_context) == NULL)
		return where_err(c, yn_get(ex, "default_context"), OTA_ERR_CONTRACT_REFERENCE, err,
		                 "default_context '%.60s' is not a context%s", c->default_context, "");
	rc = boundary_parse(d, yn_get(ex, "runtime_boundary"), &c->pl, &c->rb, err);
	c->has_rb = yn_get(ex, "runtime_boundary") != NULL;
	return rc;
}

/* ---- tasks ---- */

static ota_err body_of(ota_contract *c, otask *t, const ynode *m, ota_error *err)
{
	const ydoc *d = c->doc;
	const char *found = NULL;
	const ynode *fn = NULL;
	for (const char *const *k = body_keys; *k; k++) {
		const ynode *v = yn_get(m, *k);
		if (v == NULL || yn_is_null(v))
			continue;
		if (found != NULL)
			return where_err(c, v, OTA_ERR_CONTRACT_BODY, err,
			                 "task has two bodies ('%s' and '%s')", found, *k);
		found = *k;
		fn = v;
	}
	t->body_kind = found;
	t->body = fn;
	if (found == NULL)
		return OTA_OK;
	ota_err rc = OTA_OK;
	if (strcmp(found, "run") == 0 || strcmp(found, "script") == 0) {
		rc = y_expect(d, fn, YN_SCALAR, found, err);
		if (rc == OTA_OK && !yn_is_string(fn))
			rc = where_err(c, fn, OTA_ERR_CONTRACT_TYPE, err,
			               "'%s' must be a string (quote it: it reads as a number or boolean)%s",
			               found, "");
	} else if (strcmp(found, "command") == 0) {
		const char *exe;
		rc = y_expect(d, fn, YN_MAP, "command", err);
		if (rc == OTA_OK)
			rc = y_keys(d, fn, k_command, NULL, "command", err);
		if (rc == OTA_OK)
			rc = y_str(d, fn, "exe", true, &exe, err);
		if (rc == OTA_OK) {
			strv args = {0};
			rc = y_strv_text(d, fn, "args", &args, err);
			strv_free(&args);
		}
		if (rc == OTA_OK)
			rc = y_enum(d, fn, "interaction", v_interaction, &t->interaction, err);
	} else if (strcmp(found, "aggregate") == 0) {
		rc = y_expect(d, fn, YN_MAP, "aggregate", err);
		if (rc == OTA_OK)
			rc = y_strv(d, fn, "tasks", &t->members, err);
		if (rc == OTA_OK && t->members.n == 0)
			rc = where_err(c, fn, OTA_ERR_CONTRACT_MISSING, err,
			               "aggregate needs a non-empty 'tasks' list%s%s", "", "");
	}
	return rc;
}

/* A requirements block that is there and not empty (a pre-boundary refusal). */
static bool requirements_present(const ynode *m)
{
	const ynode *req = yn_get(m, "requirements");
	return req != NULL && !yn_is_null(req) && !(req->type == YN_MAP && req->n == 0);
}

/*
 * An orchestrator reference (`execution.orchestrator`, or a mode branch's):
 * {ref, mode}, both required as upstream's TaskExecutionOrchestratorSpec
 * has them; ref names one of the contract's top-level orchestrators, mode
 * is task or exec. It changes how the task is launched, not its boundary.
 */
static ota_err check_orchestrator_ref(const ota_contract *c, const ynode *m, ota_error *err)
{
	const ynode *o = yn_get(m, "orchestrator");
	if (o == NULL || yn_is_null(o))
		return OTA_OK;
	const ydoc *d = c->doc;
	const char *ref = NULL, *mode = NULL;
	ota_err rc = y_expect(d, o, YN_MAP, "orchestrator", err);
	if (rc == OTA_OK)
		rc = y_keys(d, o, k_orchestrator_ref, NULL, "orchestrator", err);
	if (rc == OTA_OK)
		rc = y_str(d, o, "ref", true, &ref, err);
	if (rc == OTA_OK)
		rc = y_str(d, o, "mode", true, &mode, err);
	if (rc == OTA_OK)
		rc = y_enum(d, o, "mode", v_orchestrator_mode, &mode, err);
	if (rc != OTA_OK)
		return rc;
	const ynode *decl = yn_get(ydoc_root(d), "orchestrators");
	const ynode *named = decl != NULL && decl->type == YN_MAP ? yn_get(decl, ref) : NULL;
	if (named == NULL)
		return where_err(c, yn_get(o, "ref"), OTA_ERR_CONTRACT_REFERENCE, err,
		                 "orchestrator '%.60s' is not declared under orchestrators", ref);
	return OTA_OK;
}

static ota_err parse_task(ota_contract *c, otask *t, const ynode *m, ota_error *err)
{
	const ydoc *d = c->doc;
	ota_err rc = y_expect(d, m, YN_MAP, "task", err);
	if (rc == OTA_OK)
		rc = y_keys(d, m, k_task, NULL, "task", err);
	if (rc == OTA_OK)
		rc = body_of(c, t, m, err);
	if (rc == OTA_OK)
		rc = y_strv(d, m, "depends_on", &t->depends_on, err);
	if (rc == OTA_OK)
		rc = y_strv(d, m, "after_success", &t->after_success, err);
	if (rc == OTA_OK)
		rc = y_strv(d, m, "after_failure", &t->after_failure, err);
	if (rc == OTA_OK)
		rc = y_strv(d, m, "after_always", &t->after_always, err);
	if (rc == OTA_OK)
		rc = y_strv(d, m, "requires_services", &t->requires_services, err);
	if (rc == OTA_OK)
		rc = y_bool(d, m, "safe_for_agent", &t->safe_for_agent, err);
	if (rc == OTA_OK)
		rc = y_str(d, m, "context", false, &t->context, err);
	if (rc != OTA_OK)
		return rc;
	t->has_requirements = requirements_present(m);
	const ynode *when = yn_get(m, "when");
	t->has_when_checks = when != NULL && !yn_is_null(when);
	t->effects = yn_get(m, "effects");
	/*
	 * variants: the first linux variant (or the first) gives the body
	 * kind. Each is a mapping of override keys with an optional
	 * when: {os}; its requirements count as the task's.
	 */
	const ynode *var = yn_get(m, "variants");
	if (var != NULL && !yn_is_null(var)) {
		rc = y_expect(d, var, YN_SEQ, "variants", err);
		if (rc != OTA_OK)
			return rc;
	}
	const ynode *pick = NULL, *first_linux = NULL;
	for (size_t i = 0; var != NULL && var->type == YN_SEQ && i < var->n; i++) {
		const ynode *it = var->items[i];
		rc = y_expect(d, it, YN_MAP, "variant", err);
		if (rc == OTA_OK)
			rc = y_keys(d, it, k_variant, NULL, "variant", err);
		const ynode *vw = yn_get(it, "when");
		if (rc == OTA_OK && vw != NULL && !yn_is_null(vw)) {
			rc = y_expect(d, vw, YN_MAP, "variant when", err);
			if (rc == OTA_OK)
				rc = y_keys(d, vw, k_variant_when, NULL, "variant when", err);
		}
		const char *os = NULL;
		if (rc == OTA_OK && vw != NULL && vw->type == YN_MAP)
			rc = y_str(d, vw, "os", false, &os, err);
		if (rc != OTA_OK)
			return rc;
		if (first_linux == NULL && os != NULL && strcmp(os, "linux") == 0)
			first_linux = it;
		if (pick == NULL)
			pick = it;
		if (requirements_present(it))
			t->has_requirements = true;
	}
	if (first_linux != NULL)
		pick = first_linux;
	if (t->body_kind == NULL && pick != NULL) {
		rc = body_of(c, t, pick, err);
		if (rc != OTA_OK)
			return rc;
	}
	/*
	 * execution.modes: the mode names the backend (native, container,
	 * remote); the default_mode branch gives context, lifecycle, body. The
	 * selected mode is execution truth: no context can change it.
	 */
	const ynode *ex = yn_get(m, "execution");
	if (ex != NULL && !yn_is_null(ex)) {
		rc = y_expect(d, ex, YN_MAP, "task execution", err);
		if (rc == OTA_OK)
			rc = y_keys(d, ex, k_task_exec, NULL, "task execution", err);
		if (rc == OTA_OK)
			rc = check_orchestrator_ref(c, ex, err);
		if (rc != OTA_OK)
			return rc;
	}
	if (ex != NULL && ex->type == YN_MAP) {
		const char *dm = NULL;
		rc = y_enum(d, ex, "default_mode", v_backend, &dm, err);
		if (rc != OTA_OK)
			return rc;
		t->mode = dm;
		const ynode *modes = yn_get(ex, "modes");
		if (modes != NULL && !yn_is_null(modes)) {
			rc = y_expect(d, modes, YN_MAP, "execution.modes", err);
			if (rc == OTA_OK)
				rc = y_keys(d, modes, v_backend, NULL, "execution.modes", err);
			for (size_t i = 1; rc == OTA_OK && i < modes->n; i += 2) {
				const ynode *b = modes->items[i];
				if (yn_is_null(b))
					continue;
				rc = y_expect(d, b, YN_MAP, "execution mode", err);
				if (rc == OTA_OK)
					rc = y_keys(d, b, k_branch, NULL, "execution mode", err);
				if (rc == OTA_OK)
					rc = check_orchestrator_ref(c, b, err);
			}
			if (rc != OTA_OK)
				return rc;
		}
		const ynode *br = dm != NULL ? yn_get(modes, dm) : NULL;
		if (br != NULL && br->type == YN_MAP) {
			const char *ctx = NULL;
			rc = y_str(d, br, "context", false, &ctx, err);
			if (rc == OTA_OK)
				rc = y_enum(d, br, "lifecycle", v_lifecycle, &t->mode_lifecycle, err);
			if (rc != OTA_OK)
				return rc;
			if (t->mode_lifecycle != NULL && strcmp(dm, "container") != 0)
				return where_err(c, yn_get(br, "lifecycle"), OTA_ERR_CONTRACT_VALUE, err,
				                 "a lifecycle applies to container execution only, not to mode %s%s",
				                 dm, "");
			if (ctx != NULL)
				t->context = ctx;
			if (requirements_present(br))
				t->has_requirements = true;
			if (t->body_kind == NULL) {
				rc = body_of(c, t, br, err);
				if (rc != OTA_OK)
					return rc;
			}
		}
	}
	t->has_prepare = t->body_kind != NULL && strcmp(t->body_kind, "prepare") == 0;
	const ynode *rb = yn_get(m, "runtime_boundary");
	t->has_rb = rb != NULL && !yn_is_null(rb);
	return boundary_parse(d, rb, &c->pl, &t->rb, err);
}

/* ---- workflows ---- */

static ota_err parse_workflows(ota_contract *c, const ynode *wn, ota_error *err)
{
	const ydoc *d = c->doc;
	if (wn == NULL || yn_is_null(wn))
		return OTA_OK;
	ota_err rc = y_expect(d, wn, YN_MAP, "workflows", err);
	if (rc != OTA_OK)
		return rc;
	c->workflows = pool_alloc(&c->pl, (wn->n / 2 + 1) * sizeof *c->workflows);
	if (c->workflows == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "workflows", "out of memory");
	for (size_t i = 0; i + 1 < wn->n; i += 2) {
		const ynode *k = wn->items[i], *v = wn->items[i + 1];
		if (strcmp(k->str, "default") == 0) {
			rc = y_expect(d, v, YN_SCALAR, "workflows.default", err);
			if (rc != OTA_OK)
				return rc;
			c->default_workflow = v->str;
			continue;
		}
		oworkflow *w = &c->workflows[c->nworkflows++];
		w->name = k->str;
		w->node = v;
		rc = check_name(c, k, "workflow", err);
		if (rc == OTA_OK)
			rc = y_expect(d, v, YN_MAP, "workflow", err);
		if (rc == OTA_OK)
			rc = y_keys(d, v, k_wf, NULL, "workflow", err);
		if (rc == OTA_OK)
			rc = y_str(d, v, "intent", false, &w->intent, err);
		if (rc != OTA_OK)
			return rc;
		for (int p = 0; p < PH_COUNT; p++) {
			const ynode *ph = yn_get(v, phase_names[p]);
			if (ph == NULL || yn_is_null(ph))
				continue;
			if (ph->type == YN_MAP) {
				rc = y_keys(d, ph, k_phase, NULL, "workflow phase", err);
				if (rc == OTA_OK && (yn_get(ph, "task") == NULL) == (yn_get(ph, "action") == NULL))
					rc = where_err(c, ph, OTA_ERR_CONTRACT_VALUE, err,
					               "workflow phase %s names a task or an action, exactly one%s",
					               phase_names[p], "");
				if (rc != OTA_OK)
					return rc;
			}
			if (ph->type == YN_MAP && yn_get(ph, "task") != NULL) {
				rc = y_str(d, ph, "task", true, &w->phase_task[p], err);
				if (rc != OTA_OK)
					return rc;
			} else if (ph->type == YN_SCALAR) {
				if (!yn_is_string(ph) || yn_has_control(ph))
					return where_err(c, ph, OTA_ERR_CONTRACT_TYPE, err,
					                 "workflow phase %s must name a task or be an action%s",
					                 phase_names[p], "");
				w->phase_task[p] = ph->str;
			} else {
				w->phase_direct[p] = true;
			}
		}
		/* services: {required: [names]}; any other shape would silently drop
		 * the required services (and their pre-boundary refusal) */
		const ynode *sv = yn_get(v, "services");
		if (sv != NULL && !yn_is_null(sv)) {
			rc = y_expect(d, sv, YN_MAP, "workflow services ({required: [...]})", err);
			if (rc == OTA_OK)
				rc = y_keys(d, sv, k_wf_services, NULL, "workflow services", err);
			if (rc == OTA_OK)
				rc = y_strv(d, sv, "required", &w->services, err);
			if (rc != OTA_OK)
				return rc;
		}
		const ynode *rb = yn_get(v, "runtime_boundary");
		w->has_rb = rb != NULL && !yn_is_null(rb);
		rc = boundary_parse(d, rb, &c->pl, &w->rb, err);
		if (rc != OTA_OK)
			return rc;
	}
	if (!index_names(c->workflows, c->nworkflows, sizeof *c->workflows, offsetof(oworkflow, name),
	                 &c->workflow_index, &c->workflow_index_cap))
		return ota_error_set(err, OTA_ERR_NOMEM, "workflows", "out of memory");
	if (c->default_workflow != NULL && contract_workflow(c, c->default_workflow) == NULL)
		return where_err(c, yn_get(wn, "default"), OTA_ERR_CONTRACT_REFERENCE, err,
		                 "workflows.default '%.60s' is not a workflow%s", c->default_workflow, "");
	return OTA_OK;
}

/* ---- references and cycles ---- */

static ota_err check_refs(ota_contract *c, const otask *t, const strv *s, const char *key,
                          ota_error *err)
{
	for (size_t i = 0; i < s->n; i++)
		if (contract_task(c, s->v[i]) == NULL)
			return where_err(c, yn_get(t->node, key) ? yn_get(t->node, key) : t->node,
			                 OTA_ERR_CONTRACT_REFERENCE, err, "unknown task '%.60s' in %s",
			                 s->v[i], key);
	return OTA_OK;
}

/* iterative three-colour DFS over depends_on + members + hooks */
static ota_err check_cycles(ota_contract *c, ota_error *err)
{
	uint8_t *colour = calloc(c->ntasks ? c->ntasks : 1, 1);
	size_t *stack = malloc((c->ntasks + 1) * sizeof *stack);
	size_t *pos = calloc(c->ntasks ? c->ntasks : 1, sizeof *pos);
	ota_err rc = OTA_OK;
	if (colour == NULL || stack == NULL || pos == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "tasks", "out of memory");
		goto out;
	}
	for (size_t s = 0; s < c->ntasks && rc == OTA_OK; s++) {
		if (colour[s] != 0)
			continue;
		size_t sp = 0;
		stack[sp++] = s;
		colour[s] = 1;
		pos[s] = 0;
		while (sp > 0 && rc == OTA_OK) {
			size_t u = stack[sp - 1];
			const otask *t = &c->tasks[u];
			const strv *lists[5] = {&t->depends_on, &t->members, &t->after_success,
			                        &t->after_failure, &t->after_always};
			size_t tot = 0;
			for (int l = 0; l < 5; l++)
				tot += lists[l]->n;
			size_t k = pos[u]++, v = SIZE_MAX;
			if (k >= tot) {
				colour[u] = 2;
				sp--;
				continue;
			}
			for (int l = 0; l < 5; l++) {
				if (k < lists[l]->n) {
					v = contract_task(c, lists[l]->v[k])->index;
					break;
				}
				k -= lists[l]->n;
			}
			if (colour[v] == 1) {
				char w[300];
				yn_where(c->doc, c->tasks[v].node, w, sizeof w);
				rc = ota_error_set(err, OTA_ERR_POLICY_CYCLE, w,
				                   "task '%.60s' depends on itself through '%.60s'",
				                   c->tasks[v].name, t->name);
			} else if (colour[v] == 0) {
				colour[v] = 1;
				pos[v] = 0;
				stack[sp++] = v;
			}
		}
	}
out:
	free(colour);
	free(stack);
	free(pos);
	return rc;
}

static ota_err parse_tasks(ota_contract *c, const ynode *tn, ota_error *err)
{
	const ydoc *d = c->doc;
	if (tn == NULL || yn_is_null(tn))
		return OTA_OK;
	ota_err rc = y_expect(d, tn, YN_MAP, "tasks", err);
	if (rc != OTA_OK)
		return rc;
	if (tn->n / 2 > OTA_MAX_TASKS)
		return where_err(c, tn, OTA_ERR_YAML_TOO_LARGE, err, "more than %s tasks%s", "100000", "");
	c->tasks = calloc(tn->n / 2 + 1, sizeof *c->tasks);
	if (c->tasks == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "tasks", "out of memory");
	for (size_t i = 0; i + 1 < tn->n; i += 2) {
		otask *t = &c->tasks[c->ntasks];
		t->name = tn->items[i]->str;
		t->node = tn->items[i + 1];
		t->index = c->ntasks++;
		rc = check_name(c, tn->items[i], "task", err);
		if (rc == OTA_OK)
			rc = parse_task(c, t, t->node, err);
		if (rc != OTA_OK)
			return rc;
	}
	if (!index_tasks(c))
		return ota_error_set(err, OTA_ERR_NOMEM, "tasks", "out of memory");
	for (size_t i = 0; i < c->ntasks; i++) {
		const otask *t = &c->tasks[i];
		rc = check_refs(c, t, &t->depends_on, "depends_on", err);
		if (rc == OTA_OK)
			rc = check_refs(c, t, &t->members, "aggregate", err);
		if (rc == OTA_OK)
			rc = check_refs(c, t, &t->after_success, "after_success", err);
		if (rc == OTA_OK)
			rc = check_refs(c, t, &t->after_failure, "after_failure", err);
		if (rc == OTA_OK)
			rc = check_refs(c, t, &t->after_always, "after_always", err);
		if (rc != OTA_OK)
			return rc;
		if (t->context != NULL && contract_context(c, t->context) == NULL)
			return where_err(c, yn_get(t->node, "context") ? yn_get(t->node, "context") : t->node,
			                 OTA_ERR_CONTRACT_REFERENCE, err,
			                 "task '%.60s' names unknown context '%.60s'", t->name, t->context);
	}
	return check_cycles(c, err);
}

/* ---- load ---- */

ota_err ota_contract_load(ota_bytes yaml, const char *name, ota_contract **out, ota_error *err)
{
	*out = NULL;
	ota_contract *c = calloc(1, sizeof *c);
	if (c == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "contract", "out of memory");
	ota_err rc = ydoc_parse(yaml, name, &c->doc, err);
	if (rc != OTA_OK)
		goto fail;
	const ydoc *d = c->doc;
	const ynode *root = ydoc_root(d);
	rc = y_expect(d, root, YN_MAP, "the contract", err);
	if (rc == OTA_OK)
		rc = y_keys(d, root, k_top, NULL, "contract", err);
	if (rc != OTA_OK)
		goto fail;
	const ynode *ver = yn_get(root, "version");
	if (ver == NULL || ver->type != YN_SCALAR || !ver->plain || strcmp(ver->str, "1") != 0) {
		char w[300];
		yn_where(d, ver ? ver : root, w, sizeof w);
		rc = ota_error_set(err, ver == NULL ? OTA_ERR_CONTRACT_MISSING : OTA_ERR_CONTRACT_VERSION,
		                   w, "version must be 1");
		goto fail;
	}
	const ynode *proj = yn_get(root, "project");
	if (proj == NULL) {
		char w[300];
		yn_where(d, root, w, sizeof w);
		rc = ota_error_set(err, OTA_ERR_CONTRACT_MISSING, w, "'project' is required");
		goto fail;
	}
	rc = y_expect(d, proj, YN_MAP, "project", err);
	if (rc == OTA_OK)
		rc = y_str(d, proj, "name", true, &c->project, err);
	if (rc == OTA_OK)
		rc = parse_execution(c, yn_get(root, "execution"), err);
	if (rc == OTA_OK)
		rc = parse_tasks(c, yn_get(root, "tasks"), err);
	if (rc == OTA_OK)
		rc = parse_workflows(c, yn_get(root, "workflows"), err);
	if (rc != OTA_OK)
		goto fail;
	for (size_t i = 0; i < c->nworkflows; i++)
		for (int p = 0; p < PH_COUNT; p++) {
			const char *tn = c->workflows[i].phase_task[p];
			if (tn != NULL && contract_task(c, tn) == NULL) {
				rc = where_err(c, yn_get(c->workflows[i].node, phase_names[p]),
				               OTA_ERR_CONTRACT_REFERENCE, err,
				               "workflow phase names unknown task '%.60s'%s", tn, "");
				goto fail;
			}
		}
	const ynode *ag = yn_get(root, "agent");
	if (ag != NULL && !yn_is_null(ag)) {
		rc = y_expect(d, ag, YN_MAP, "agent", err);
		if (rc == OTA_OK)
			rc = y_strv(d, ag, "safe_tasks", &c->agent_safe_tasks, err);
		if (rc == OTA_OK)
			rc = y_strv(d, ag, "writable_paths", &c->agent_writable, err);
		if (rc == OTA_OK)
			rc = y_strv(d, ag, "protected_paths", &c->agent_protected, err);
		if (rc == OTA_OK)
			rc = y_str(d, ag, "posture", false, &c->agent_posture, err);
		if (rc != OTA_OK)
			goto fail;
		for (size_t i = 0; i < c->agent_safe_tasks.n; i++)
			if (contract_task(c, c->agent_safe_tasks.v[i]) == NULL) {
				rc = where_err(c, yn_get(ag, "safe_tasks"), OTA_ERR_CONTRACT_REFERENCE, err,
				               "agent.safe_tasks names unknown task '%.60s'%s",
				               c->agent_safe_tasks.v[i], "");
				goto fail;
			}
	}
	/* workflow lanes: incompatible workflow/task values, phase reuse */
	for (size_t i = 0; i < c->nworkflows; i++) {
		rc = policy_check_lane(c, OTA_LANE_WORKFLOW, c->workflows[i].name, err);
		if (rc != OTA_OK)
			goto fail;
	}
	/* identities: raw bytes, and the normalised contract */
	rc = ota_sha256_id(yaml, c->snapshot_id);
	if (rc != OTA_OK)
		goto fail;
	c->json = yn_to_json(root);
	json_t *wrap = c->json ? json_pack("{s:s, s:O}", "kind", "ota.contract/v1", "contract", c->json)
	                       : NULL;
	if (wrap == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, "contract", "out of memory");
		goto fail;
	}
	rc = ota_json_identity(wrap, c->contract_id, err);
	json_decref(wrap);
	if (rc != OTA_OK) {
		/* floats in the contract are kept as strings; anything else is ours */
		goto fail;
	}
	*out = c;
	return OTA_OK;
fail:
	ota_contract_free(c);
	return rc;
}

void ota_contract_free(ota_contract *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->ntasks; i++) {
		otask *t = &c->tasks[i];
		strv_free(&t->depends_on);
		strv_free(&t->after_success);
		strv_free(&t->after_failure);
		strv_free(&t->after_always);
		strv_free(&t->members);
		strv_free(&t->requires_services);
		boundary_free(&t->rb);
	}
	free(c->tasks);
	free(c->task_index);
	free(c->context_index);
	free(c->workflow_index);
	for (size_t i = 0; i < c->ncontexts; i++) {
		strv_free(&c->contexts[i].compose);
		strv_free(&c->contexts[i].isolated);
	}
	for (size_t i = 0; i < c->nworkflows; i++) {
		strv_free(&c->workflows[i].services);
		boundary_free(&c->workflows[i].rb);
	}
	boundary_free(&c->rb);
	strv_free(&c->supported);
	strv_free(&c->agent_safe_tasks);
	strv_free(&c->agent_writable);
	strv_free(&c->agent_protected);
	json_decref(c->json);
	ydoc_free(c->doc);
	pool_free(&c->pl);
	free(c);
}

const char *ota_contract_snapshot_identity(const ota_contract *c)
{
	return c->snapshot_id;
}

const char *ota_contract_identity(const ota_contract *c)
{
	return c->contract_id;
}

const json_t *ota_contract_json(const ota_contract *c)
{
	return c->json;
}

const char *ota_contract_project(const ota_contract *c)
{
	return c->project;
}

size_t ota_contract_task_count(const ota_contract *c)
{
	return c->ntasks;
}

const char *ota_contract_task_name(const ota_contract *c, size_t i)
{
	return i < c->ntasks ? c->tasks[i].name : NULL;
}

size_t ota_contract_workflow_count(const ota_contract *c)
{
	return c->nworkflows;
}

const char *ota_contract_workflow_name(const ota_contract *c, size_t i)
{
	return i < c->nworkflows ? c->workflows[i].name : NULL;
}

const char *ota_contract_default_workflow(const ota_contract *c)
{
	return c->default_workflow;
}

static json_t *strv_to_json(const strv *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a != NULL && i < s->n; i++)
		json_array_append_new(a, json_string(s->v[i]));
	return a;
}

json_t *ota_contract_task_json(const ota_contract *c, const char *task)
{
	const otask *t = contract_task(c, task);
	if (t == NULL)
		return NULL;
	json_t *o = json_pack("{s:s, s:s?, s:o, s:b}", "name", t->name, "kind", t->body_kind,
	                      "depends_on", strv_to_json(&t->depends_on), "safe_for_agent",
	                      t->safe_for_agent);
	if (o == NULL)
		return NULL;
	if (t->body_kind == NULL)
		json_object_set_new(o, "kind", json_null());
	const ynode *desc = yn_get(t->node, "description");
	if (desc != NULL && desc->type == YN_SCALAR)
		json_object_set_new(o, "description", json_string(desc->str));
	if (t->context != NULL)
		json_object_set_new(o, "context", json_string(t->context));
	if (t->members.n > 0)
		json_object_set_new(o, "aggregate", strv_to_json(&t->members));
	if (t->after_success.n > 0)
		json_object_set_new(o, "after_success", strv_to_json(&t->after_success));
	if (t->after_failure.n > 0)
		json_object_set_new(o, "after_failure", strv_to_json(&t->after_failure));
	if (t->after_always.n > 0)
		json_object_set_new(o, "after_always", strv_to_json(&t->after_always));
	if (t->requires_services.n > 0)
		json_object_set_new(o, "requires_services", strv_to_json(&t->requires_services));
	if (t->has_rb)
		json_object_set_new(o, "runtime_boundary", boundary_to_json(&t->rb));
	return o;
}

json_t *ota_contract_workflow_json(const ota_contract *c, const char *workflow)
{
	const oworkflow *w = contract_workflow(c, workflow);
	if (w == NULL)
		return NULL;
	json_t *o = json_pack("{s:s, s:b}", "name", w->name, "default",
	                      c->default_workflow != NULL && strcmp(c->default_workflow, w->name) == 0);
	if (o == NULL)
		return NULL;
	if (w->intent != NULL)
		json_object_set_new(o, "intent", json_string(w->intent));
	for (int p = 0; p < PH_COUNT; p++) {
		char key[32];
		snprintf(key, sizeof key, "%s_task", phase_names[p]);
		json_object_set_new(o, key, w->phase_task[p] ? json_string(w->phase_task[p]) : json_null());
	}
	json_object_set_new(o, "required_services", strv_to_json(&w->services));
	if (w->has_rb)
		json_object_set_new(o, "runtime_boundary", boundary_to_json(&w->rb));
	return o;
}
