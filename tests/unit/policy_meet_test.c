/*
 * The effective policy is the meet of the canonical policy and every overlay
 * (docs/policy.md section 5): order-independent, monotone (an added overlay
 * never widens), never wider than any single overlay; a restriction never
 * turns an authoritative destination advisory; admission sees the controls
 * that only overlays add.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/policy.h"

#define HEAD "version: 1\nproject: {name: m}\n"
#define OCI_EXEC                                                                              \
	"execution:\n  supported: [container]\n  lifecycle: ephemeral\n"                       \
	"  backends: {container: {image: \"debian:bookworm-slim\", platform: linux/amd64}}\n"

static ota_contract *contract(const char *y)
{
	return test_contract_load(y, "m.yaml");
}

static ota_overlay *overlay(const char *y, ota_overlay_source src)
{
	ota_overlay *o = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_overlay_load(ota_bytes_make(y, strlen(y)), "o.yaml", src, &o, &e);
	if (rc != OTA_OK)
		fail_msg("overlay: %s %s %s\n%s", ota_err_name(rc), e.where, e.what, y);
	return o;
}

static ota_err compile(const ota_contract *c, const char *task, const ota_overlay *const *ovs,
                       size_t n, ota_policy **p, ota_error *e)
{
	ota_policy_options o = test_policy_amd64();
	ota_error_clear(e);
	return ota_policy_compile(c, OTA_LANE_TASK, task, &o, ovs, n, p, e);
}

static ota_policy *compile_ok(const ota_contract *c, const char *task,
                              const ota_overlay *const *ovs, size_t n)
{
	return test_policy_compile(c, OTA_LANE_TASK, task, ovs, n);
}

/* effective runtime_boundary of segment i (borrowed) */
static const json_t *eff_rb(const ota_policy *p, size_t i)
{
	return json_object_get(json_array_get(json_object_get(ota_policy_effective_json(p),
	                                                       "segments"),
	                                      i),
	                       "runtime_boundary");
}

static const json_t *can_rb(const ota_policy *p, size_t i)
{
	return json_object_get(json_array_get(json_object_get(ota_policy_canonical_json(p),
	                                                       "segments"),
	                                      i),
	                       "runtime_boundary");
}

static char *dump(const json_t *j)
{
	return ota_json_dumps(j, false);
}

/* ---- t8: org read_only and a user writable list, in either order ---- */

static void test_readonly_org_and_user_writable(void **state)
{
	(void)state;
	ota_contract *c = contract(HEAD OCI_EXEC
	                           "tasks:\n  build:\n    run: make\n    safe_for_agent: true\n"
	                           "    runtime_boundary:\n      network: {default: deny}\n");
	/* several org policies (nonces move their identities, and so their sort
	 * position relative to the user overlay) */
	ota_overlay *user =
		overlay("policies:\n  sandbox:\n    filesystem: {writable_paths: [src]}\n",
		        OTA_OVERLAY_FILE);
	bool before = false, after = false;
	for (int nonce = 0; nonce < 64 && !(before && after && nonce >= 8); nonce++) {
		char y[200];
		snprintf(y, sizeof y,
		         "metadata: {nonce: %d}\npolicies:\n  sandbox:\n"
		         "    filesystem: {repo_root_mode: read_only}\n",
		         nonce);
		ota_overlay *org = overlay(y, OTA_OVERLAY_ORG_POLICY);
		if (strcmp(ota_overlay_identity(org), ota_overlay_identity(user)) < 0)
			before = true;
		else
			after = true;
		const ota_overlay *ab[2] = {org, user}, *ba[2] = {user, org}, *a1[1] = {org};
		ota_policy *pa = compile_ok(c, "build", a1, 1);
		ota_policy *p1 = compile_ok(c, "build", ab, 2);
		ota_policy *p2 = compile_ok(c, "build", ba, 2);
		const json_t *fs = json_object_get(eff_rb(p1, 0), "filesystem");
		/* the org policy alone leaves nothing writable; adding an overlay cannot add reach */
		assert_int_equal(json_array_size(json_object_get(
					 json_object_get(eff_rb(pa, 0), "filesystem"), "writable_paths")),
		                 0);
		assert_string_equal(json_string_value(json_object_get(fs, "repo_root_mode")),
		                    "read_only");
		assert_true(json_is_array(json_object_get(fs, "writable_paths")));
		assert_int_equal(json_array_size(json_object_get(fs, "writable_paths")), 0);
		assert_string_equal(ota_policy_effective_identity(p1), ota_policy_effective_identity(p2));
		ota_policy_free(pa);
		ota_policy_free(p1);
		ota_policy_free(p2);
		ota_overlay_free(org);
	}
	/* both sort orders of the identities were exercised */
	assert_true(before && after);
	/* the user overlay alone narrows the whole repository to src */
	const ota_overlay *u1[1] = {user};
	ota_policy *pu = compile_ok(c, "build", u1, 1);
	char *s = dump(json_object_get(eff_rb(pu, 0), "filesystem"));
	assert_string_equal(s, "{\"repo_root_mode\":\"read_only\",\"writable_paths\":[\"src\"],"
	                       "\"protected_paths\":[]}");
	free(s);
	ota_policy_free(pu);
	ota_overlay_free(user);
	ota_contract_free(c);
}

/* ---- t7: deny and an added destination, in either order ---- */

static void test_deny_and_added_destination(void **state)
{
	(void)state;
	ota_contract *c = contract(HEAD OCI_EXEC
	                           "tasks:\n  build:\n    run: make\n    safe_for_agent: true\n"
	                           "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only}\n");
	ota_overlay *d = overlay("policies:\n  sandbox:\n    network:\n      outbound_targets: "
	                         "[{kind: host, value: exfil.example.net}]\n",
	                         OTA_OVERLAY_FILE);
	bool before = false, after = false;
	for (int nonce = 0; nonce < 64 && !(before && after && nonce >= 8); nonce++) {
		char y[200];
		snprintf(y, sizeof y,
		         "metadata: {nonce: %d}\npolicies:\n  sandbox:\n    network: {default: deny}\n",
		         nonce);
		ota_overlay *deny = overlay(y, OTA_OVERLAY_FILE);
		if (strcmp(ota_overlay_identity(deny), ota_overlay_identity(d)) < 0)
			before = true;
		else
			after = true;
		const ota_overlay *ab[2] = {deny, d}, *ba[2] = {d, deny};
		ota_policy *p1 = compile_ok(c, "build", ab, 2);
		ota_policy *p2 = compile_ok(c, "build", ba, 2);
		char *s = dump(json_object_get(eff_rb(p1, 0), "network"));
		assert_string_equal(s, "{\"default\":\"deny\",\"scope\":\"none\",\"outbound_targets\":[]}");
		free(s);
		assert_string_equal(ota_policy_effective_identity(p1), ota_policy_effective_identity(p2));
		ota_policy_free(p1);
		ota_policy_free(p2);
		ota_overlay_free(deny);
	}
	assert_true(before && after);
	ota_overlay_free(d);
	ota_contract_free(c);
}

/*
 * One overlay {default: deny, outbound_targets: [h1]} (deny with one
 * exception) over a broad canonical reach (no network control, or allow):
 * the reach narrows to that exception, as {default: allow, outbound_targets:
 * [h1]} (the same reach, an allowlist) narrows it. boundary_meet set the
 * default to deny before looking at the restriction's destinations and then
 * took the canonical reach for denied: the exception was dropped and h1
 * denied (deny, scope none), while the allowlist form kept it.
 */
static void test_deny_exceptions_narrow_broad(void **state)
{
	(void)state;
	ota_contract *c = contract(HEAD OCI_EXEC
	                           "tasks:\n"
	                           "  open:\n    run: make\n    runtime_boundary:\n"
	                           "      filesystem: {repo_root_mode: read_only}\n"
	                           "  allow:\n    run: make\n    runtime_boundary:\n"
	                           "      filesystem: {repo_root_mode: read_only}\n"
	                           "      network: {default: allow}\n"
	                           "  shut:\n    run: make\n    runtime_boundary:\n"
	                           "      filesystem: {repo_root_mode: read_only}\n"
	                           "      network: {default: deny}\n"
	                           "  two:\n    run: make\n    runtime_boundary:\n"
	                           "      filesystem: {repo_root_mode: read_only}\n"
	                           "      network: {default: deny, outbound_targets: "
	                           "[{kind: host, value: h1}, {kind: host, value: h2}]}\n");
	ota_overlay *x = overlay("policies:\n  sandbox:\n    network: {default: deny, outbound_targets: "
	                         "[{kind: host, value: h1}]}\n",
	                         OTA_OVERLAY_FILE);
	ota_overlay *y = overlay("policies:\n  sandbox:\n    network: {default: allow, outbound_targets: "
	                         "[{kind: host, value: h1}]}\n",
	                         OTA_OVERLAY_FILE);
	static const char *const h1 =
		"[{\"kind\":\"host\",\"value\":\"h1\",\"destination_shape\":null,\"destination_constraint\":null}]";
	char want[512];
	for (int t = 0; t < 2; t++) {
		const char *task = t == 0 ? "open" : "allow";
		const ota_overlay *ox[1] = {x}, *oy[1] = {y}, *xy[2] = {x, y}, *yx[2] = {y, x};
		ota_policy *px = compile_ok(c, task, ox, 1);
		char *s = dump(json_object_get(eff_rb(px, 0), "network"));
		snprintf(want, sizeof want,
		         "{\"default\":\"deny\",\"scope\":\"targeted\",\"outbound_targets\":%s}", h1);
		assert_string_equal(s, want);
		free(s);
		ota_policy *py = compile_ok(c, task, oy, 1);
		const json_t *ny = json_object_get(eff_rb(py, 0), "network");
		assert_string_equal(json_string_value(json_object_get(ny, "scope")), "targeted");
		s = dump(json_object_get(ny, "outbound_targets"));
		assert_string_equal(s, h1);
		free(s);
		/* both: the one destination, denied otherwise, in either order */
		ota_policy *p1 = compile_ok(c, task, xy, 2), *p2 = compile_ok(c, task, yx, 2);
		s = dump(json_object_get(eff_rb(p1, 0), "network"));
		snprintf(want, sizeof want,
		         "{\"default\":\"deny\",\"scope\":\"targeted\",\"outbound_targets\":%s}", h1);
		assert_string_equal(s, want);
		free(s);
		assert_string_equal(ota_policy_effective_identity(p1), ota_policy_effective_identity(p2));
		ota_policy_free(px);
		ota_policy_free(py);
		ota_policy_free(p1);
		ota_policy_free(p2);
	}
	/* a denied canonical reach stays denied; a targeted one is intersected */
	const ota_overlay *ox[1] = {x};
	ota_policy *ps = compile_ok(c, "shut", ox, 1);
	char *s = dump(json_object_get(eff_rb(ps, 0), "network"));
	assert_string_equal(s, "{\"default\":\"deny\",\"scope\":\"none\",\"outbound_targets\":[]}");
	free(s);
	ota_policy *pt = compile_ok(c, "two", ox, 1);
	s = dump(json_object_get(eff_rb(pt, 0), "network"));
	snprintf(want, sizeof want,
	         "{\"default\":\"deny\",\"scope\":\"targeted\",\"outbound_targets\":%s}", h1);
	assert_string_equal(s, want);
	free(s);
	ota_policy_free(ps);
	ota_policy_free(pt);
	/* the allowlist form over a denied reach is the same meet, not a
	 * widening (it was policy_overlay_widens: allow over deny); a broad
	 * allow (no destinations) over deny still is */
	const ota_overlay *oy[1] = {y};
	pt = compile_ok(c, "two", oy, 1);
	s = dump(json_object_get(eff_rb(pt, 0), "network"));
	assert_string_equal(s, want);
	free(s);
	ps = compile_ok(c, "shut", oy, 1);
	s = dump(json_object_get(eff_rb(ps, 0), "network"));
	assert_string_equal(s, "{\"default\":\"deny\",\"scope\":\"none\",\"outbound_targets\":[]}");
	free(s);
	ota_policy_free(ps);
	ota_policy_free(pt);
	ota_overlay *broad = overlay("policies:\n  sandbox:\n    network: {default: allow}\n",
	                             OTA_OVERLAY_FILE);
	const ota_overlay *ob[1] = {broad};
	for (int t = 0; t < 2; t++) {
		ota_policy *pw = NULL;
		ota_error e;
		assert_ota(compile(c, t == 0 ? "two" : "shut", ob, 1, &pw, &e),
		           OTA_ERR_POLICY_OVERLAY_WIDENS);
		assert_null(pw);
	}
	ota_overlay_free(broad);
	ota_overlay_free(x);
	ota_overlay_free(y);
	ota_contract_free(c);
}

/* ---- t1: an advisory_only constraint never demotes an authoritative destination ---- */

#define T1_CONTRACT                                                                           \
	HEAD OCI_EXEC "tasks:\n  fetch:\n    run: curl https://api.example.com/x\n"             \
	              "    safe_for_agent: true\n    runtime_boundary:\n"                       \
	              "      filesystem: {repo_root_mode: read_only, writable_paths: [out]}\n"   \
	              "      network:\n        outbound_targets:\n"                             \
	              "          - kind: host\n            value: api.example.com\n"

#define DEMOTE                                                                                \
	"policies:\n  sandbox:\n    network:\n      outbound_targets:\n"                          \
	"        - kind: host\n          value: api.example.com\n"                                \
	"          destination_constraint:\n            kind: downstream_host_allowlist\n"       \
	"            values: [api.example.com]\n            source_posture: non_authoritative\n" \
	"            enforcement: advisory_only\n"

static void test_no_demotion(void **state)
{
	(void)state;
	ota_contract *c = contract(T1_CONTRACT);
	ota_overlay *dem = overlay(DEMOTE, OTA_OVERLAY_FILE);
	const ota_overlay *v[1] = {dem};
	ota_policy *p = NULL;
	ota_error e;
	assert_ota(compile(c, "fetch", v, 1, &p, &e), OTA_ERR_POLICY_OVERLAY_DEMOTES);
	assert_null(p);
	assert_non_null(strstr(e.what, "api.example.com"));
	assert_string_equal(e.control, "network.target_allowlist");
	/* without the overlay the lane keeps its authoritative allowlist (and oci_local refuses it) */
	p = compile_ok(c, "fetch", NULL, 0);
	const json_t *ctl = json_object_get(json_array_get(json_object_get(ota_policy_effective_json(p),
	                                                                   "segments"),
	                                                   0),
	                                    "controls");
	char *s = dump(json_object_get(ctl, "authoritative_runtime"));
	assert_non_null(strstr(s, "network.target_allowlist"));
	free(s);
	ota_policy_free(p);

	/* the same through a workflow runtime_boundary: a scope conflict, never a demotion */
	const char *wf = T1_CONTRACT
		"workflows:\n  ci:\n    run: {task: fetch}\n    runtime_boundary:\n      network:\n"
		"        outbound_targets:\n          - kind: host\n            value: api.example.com\n"
		"            destination_constraint:\n              kind: downstream_host_allowlist\n"
		"              values: [api.example.com]\n"
		"              source_posture: non_authoritative\n"
		"              enforcement: advisory_only\n";
	ota_contract *cw = NULL;
	ota_error_clear(&e);
	assert_ota(ota_contract_load(ota_bytes_make(wf, strlen(wf)), "w.yaml", &cw, &e),
	           OTA_ERR_POLICY_SCOPE_CONFLICT);
	assert_null(cw);
	assert_string_equal(e.control, "network.target_allowlist");

	/* two overlays over a broad lane: one makes the destination an enforced
	 * allowlist entry, the other would make it advisory: refused in both orders */
	ota_contract *broad = contract(HEAD OCI_EXEC
	                               "tasks:\n  fetch:\n    run: x\n    runtime_boundary:\n"
	                               "      filesystem: {repo_root_mode: read_only}\n"
	                               "      network: {default: allow}\n");
	ota_overlay *auth = overlay("policies:\n  sandbox:\n    network:\n      outbound_targets: "
	                            "[{kind: host, value: api.example.com}]\n",
	                            OTA_OVERLAY_FILE);
	const ota_overlay *ab[2] = {auth, dem}, *ba[2] = {dem, auth};
	assert_ota(compile(broad, "fetch", ab, 2, &p, &e), OTA_ERR_POLICY_OVERLAY_DEMOTES);
	assert_ota(compile(broad, "fetch", ba, 2, &p, &e), OTA_ERR_POLICY_OVERLAY_DEMOTES);
	/* each alone is fine over a broad lane */
	const ota_overlay *a1[1] = {auth}, *d1[1] = {dem};
	ota_policy_free(compile_ok(broad, "fetch", a1, 1));
	ota_policy_free(compile_ok(broad, "fetch", d1, 1));

	/* an authoritative constraint may be added: the destination stays authoritative */
	ota_overlay *app = overlay(
		"policies:\n  sandbox:\n    network:\n      outbound_targets:\n"
		"        - kind: host\n          value: api.example.com\n"
		"          destination_constraint:\n            kind: downstream_host_allowlist\n"
		"            values: [api.example.com]\n"
		"            source_posture: repo_local_authoritative\n"
		"            enforcement: authoritative_app_enforced\n",
		OTA_OVERLAY_FILE);
	const ota_overlay *p1[1] = {app};
	p = compile_ok(c, "fetch", p1, 1);
	ctl = json_object_get(json_array_get(json_object_get(ota_policy_effective_json(p), "segments"),
	                                     0),
	                      "controls");
	s = dump(ctl);
	assert_non_null(strstr(s, "network.target_allowlist"));
	assert_non_null(strstr(s, "authoritative_app_enforced"));
	free(s);
	ota_policy_free(p);

	/* a contract's own advisory destination stays advisory when an overlay restates it */
	ota_contract *adv = contract(
		HEAD OCI_EXEC "tasks:\n  fetch:\n    run: x\n    runtime_boundary:\n"
		"      filesystem: {repo_root_mode: read_only}\n"
		"      network:\n        default: allow\n        outbound_targets:\n"
		"          - kind: host\n            value: api.example.com\n"
		"            destination_constraint:\n              kind: downstream_host_allowlist\n"
		"              values: [api.example.com]\n"
		"              source_posture: non_authoritative\n"
		"              enforcement: advisory_only\n");
	p = compile_ok(adv, "fetch", a1, 1);
	s = dump(eff_rb(p, 0));
	assert_non_null(strstr(s, "advisory_only"));
	free(s);
	ota_policy_free(p);

	ota_overlay_free(app);
	ota_overlay_free(auth);
	ota_overlay_free(dem);
	ota_contract_free(adv);
	ota_contract_free(broad);
	ota_contract_free(c);
}

/* ---- t3: controls that only overlays add are evaluated by admission ---- */

static void test_overlay_controls_reach_admission(void **state)
{
	(void)state;
	ota_contract *c = contract(HEAD "execution:\n  supported: [native]\n"
	                                "tasks:\n  build:\n    run: make\n    safe_for_agent: true\n");
	ota_overlay *org = overlay("policies:\n  sandbox:\n"
	                           "    filesystem: {repo_root_mode: read_only, protected_paths: [.git]}\n"
	                           "    network: {default: deny}\n",
	                           OTA_OVERLAY_ORG_POLICY);
	ota_capability_descriptor d = test_policy_oci_descriptor();
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *out = NULL;
	bool ok = false;
	/* no contract boundary, no overlay: plain agent admission */
	ota_policy *p = compile_ok(c, "build", NULL, 0);
	assert_false(ota_policy_has_authoritative_controls(p));
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_true(ok);
	assert_string_equal(json_string_value(json_object_get(out, "decision")), "not_required");
	json_decref(out);
	ota_policy_free(p);
	/* the org policy adds authoritative controls: the lane must find an enforcing target */
	const ota_overlay *v[1] = {org};
	p = compile_ok(c, "build", v, 1);
	assert_true(ota_policy_has_authoritative_controls(p));
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_false(ok);
	assert_string_equal(json_string_value(json_object_get(out, "decision")), "refused");
	assert_string_equal(json_string_value(json_object_get(out, "kind")),
	                    "sandbox_no_enforcing_target");
	bool backend = false;
	size_t i;
	json_t *rf;
	json_array_foreach(json_object_get(out, "refusals"), i, rf)
		backend = backend ||
		          strcmp(json_string_value(json_object_get(rf, "control")), "execution.backend") == 0;
	assert_true(backend);
	json_decref(out);
	ota_policy_free(p);
	ota_overlay_free(org);
	ota_contract_free(c);
}

/* ---- properties over random contracts and overlays ---- */

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static unsigned rnd(unsigned n)
{
	return test_rnd(&rng, n);
}

static const char *const hosts[] = {"h1", "h2", "h3"};

static void cat(char *b, size_t cap, const char *s)
{
	size_t l = strlen(b);
	if (l + strlen(s) + 1 > cap)
		fail_msg("buffer too small");
	memcpy(b + l, s, strlen(s) + 1);
}

static void rand_list(char *b, size_t cap, const char *const *pool, unsigned npool)
{
	unsigned k = rnd(4);
	cat(b, cap, "[");
	for (unsigned i = 0; i < k; i++) {
		if (i > 0)
			cat(b, cap, ", ");
		cat(b, cap, pool[rnd(npool)]);
	}
	cat(b, cap, "]");
}

static void rand_target(char *b, size_t cap)
{
	char t[300];
	snprintf(t, sizeof t, "{kind: host, value: %s", hosts[rnd(3)]);
	cat(b, cap, t);
	switch (rnd(5)) {
	case 0:
		cat(b, cap, ", destination_constraint: {kind: downstream_host_allowlist, values: ");
		rand_list(b, cap, hosts, 3);
		cat(b, cap, ", source_posture: repo_local_authoritative, enforcement: authoritative_app_enforced}");
		break;
	case 1:
		cat(b, cap, ", destination_constraint: {kind: downstream_host_allowlist, values: [h1, h2], "
		            "source_posture: non_authoritative, enforcement: advisory_only}");
		break;
	case 2:
		cat(b, cap, ", destination_shape: single_purpose_host");
		break;
	default:
		break;
	}
	cat(b, cap, "}");
}

/* a runtime_boundary-shaped flow map (a task's, or an overlay's policies.sandbox) */
static void rand_boundary(char *b, size_t cap)
{
	b[0] = '\0';
	cat(b, cap, "{");
	bool any = false;
	if (rnd(4) != 0) {
		cat(b, cap, "filesystem: {");
		bool f = false;
		unsigned root = rnd(4);
		if (root == 1 || root == 3) {
			cat(b, cap, root == 1 ? "repo_root_mode: read_only" : "repo_root_mode: writable");
			f = true;
		}
		if (rnd(2)) {
			cat(b, cap, f ? ", writable_paths: " : "writable_paths: ");
			rand_list(b, cap, test_policy_paths, 5); /* never under .github / docs protection */
			f = true;
		}
		if (rnd(2)) {
			cat(b, cap, f ? ", protected_paths: " : "protected_paths: ");
			cat(b, cap, rnd(2) ? "[.github]" : "[docs, .github]");
		}
		cat(b, cap, "}");
		any = true;
	}
	if (rnd(4) != 0) {
		cat(b, cap, any ? ", network: {" : "network: {");
		bool f = false;
		unsigned d = rnd(3);
		if (d != 0) {
			cat(b, cap, d == 1 ? "default: deny" : "default: allow");
			f = true;
		}
		if (rnd(2)) {
			cat(b, cap, f ? ", outbound_targets: [" : "outbound_targets: [");
			unsigned k = rnd(3);
			for (unsigned i = 0; i < k; i++) {
				if (i > 0)
					cat(b, cap, ", ");
				rand_target(b, cap);
			}
			cat(b, cap, "]");
		}
		cat(b, cap, "}");
	}
	cat(b, cap, "}");
}

static ota_contract *rand_contract(void)
{
	for (;;) {
		char rb[2048], y[4096];
		rand_boundary(rb, sizeof rb);
		snprintf(y, sizeof y, HEAD OCI_EXEC "tasks:\n  t: {run: x, runtime_boundary: %s}\n", rb);
		ota_contract *c = NULL;
		if (ota_contract_load(ota_bytes_make(y, strlen(y)), "r.yaml", &c, NULL) == OTA_OK)
			return c; /* a contradictory draw (twice the same host, differently) is drawn again */
	}
}

/* an overlay with restriction rb and a label that only moves its identity */
static ota_overlay *labelled_ov(const char *rb, unsigned label)
{
	char y[4096];
	snprintf(y, sizeof y, "metadata: {n: %u}\npolicies: {sandbox: %s}\n", label, rb);
	ota_overlay *o = NULL;
	if (ota_overlay_load(ota_bytes_make(y, strlen(y)), "r.yaml", OTA_OVERLAY_FILE, &o, NULL) !=
	    OTA_OK)
		return NULL;
	return o;
}

/* a random overlay; its restriction is copied to rb_out */
static ota_overlay *rand_ov(char *rb_out, size_t cap)
{
	for (;;) {
		rand_boundary(rb_out, cap);
		ota_overlay *o = labelled_ov(rb_out, rnd(1000000));
		if (o != NULL)
			return o;
	}
}

static bool within(const char *a, const char *b)
{
	size_t n = strlen(b);
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

static int root_rank(const json_t *fs)
{
	if (!json_is_object(fs))
		return 2;
	const char *m = json_string_value(json_object_get(fs, "repo_root_mode"));
	return strcmp(m, "read_only") == 0 ? 0 : strcmp(m, "writable") == 0 ? 1 : 2;
}

static int def_rank(const json_t *net)
{
	if (!json_is_object(net))
		return 2;
	const char *m = json_string_value(json_object_get(net, "default"));
	return strcmp(m, "deny") == 0 ? 0 : strcmp(m, "allow") == 0 ? 1 : 2;
}

static bool str_in(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
	return false;
}

/* the target of arr with kind and value, or NULL */
static const json_t *find_target(const json_t *arr, const json_t *t)
{
	size_t i;
	const json_t *u;
	json_array_foreach(arr, i, u) if (json_equal(json_object_get(u, "kind"),
	                                             json_object_get(t, "kind")) &&
	                                  json_equal(json_object_get(u, "value"),
	                                             json_object_get(t, "value"))) return u;
	return NULL;
}

/*
 * n is no wider than w (two runtime_boundary objects): writable reach inside
 * w's, protection a superset, root and network default no broader, reachable
 * destinations a subset, no destination constraint dropped or loosened, no
 * authoritative destination made advisory. why explains a failure.
 */
static bool narrower(const json_t *n, const json_t *w, const char **why)
{
	const json_t *nf = json_object_get(n, "filesystem"), *wf = json_object_get(w, "filesystem");
	const json_t *nw = json_object_get(nf, "writable_paths"), *ww = json_object_get(wf, "writable_paths");
	bool n_all = !json_is_object(nf) || !json_is_array(nw);
	bool w_all = !json_is_object(wf) || !json_is_array(ww);
	*why = "writable reach";
	if (n_all && !w_all)
		return false;
	if (!w_all) {
		size_t i;
		const json_t *a;
		json_array_foreach(nw, i, a) {
			bool ok = false;
			size_t k;
			const json_t *b;
			json_array_foreach(ww, k, b) ok = ok || within(json_string_value(a), json_string_value(b));
			if (!ok)
				return false;
		}
	}
	*why = "protection";
	if (json_is_object(wf)) {
		size_t i;
		const json_t *a;
		json_array_foreach(json_object_get(wf, "protected_paths"), i, a)
			if (!str_in(json_object_get(nf, "protected_paths"), json_string_value(a)))
				return false;
	}
	*why = "root mode";
	if (root_rank(nf) > root_rank(wf))
		return false;
	const json_t *nn = json_object_get(n, "network"), *wn = json_object_get(w, "network");
	*why = "network default";
	if (def_rank(nn) > def_rank(wn))
		return false;
	const char *ns = json_is_object(nn) ? json_string_value(json_object_get(nn, "scope")) : "broad";
	const char *ws = json_is_object(wn) ? json_string_value(json_object_get(wn, "scope")) : "broad";
	*why = "network scope";
	if (strcmp(ws, "none") == 0 && strcmp(ns, "none") != 0)
		return false;
	if (strcmp(ws, "targeted") == 0 && strcmp(ns, "broad") == 0)
		return false;
	if (strcmp(ns, "targeted") == 0) {
		size_t i;
		const json_t *t;
		json_array_foreach(json_object_get(nn, "outbound_targets"), i, t) {
			const json_t *u = find_target(json_object_get(wn, "outbound_targets"), t);
			const json_t *tc = json_object_get(t, "destination_constraint");
			*why = "destination added";
			if (strcmp(ws, "targeted") == 0 && u == NULL)
				return false;
			if (u == NULL)
				continue;
			const json_t *uc = json_object_get(u, "destination_constraint");
			*why = "constraint dropped";
			if (json_is_object(uc) && !json_is_object(tc))
				return false;
			*why = "authoritative destination made advisory";
			if (!json_is_object(uc) && json_is_object(tc) &&
			    strcmp(json_string_value(json_object_get(tc, "enforcement")), "advisory_only") == 0)
				return false;
			if (json_is_object(uc)) {
				*why = "constraint changed";
				if (!json_equal(json_object_get(uc, "enforcement"), json_object_get(tc, "enforcement")) ||
				    !json_equal(json_object_get(uc, "kind"), json_object_get(tc, "kind")))
					return false;
				size_t k;
				const json_t *v;
				*why = "constraint values added";
				json_array_foreach(json_object_get(tc, "values"), k, v)
					if (!str_in(json_object_get(uc, "values"), json_string_value(v)))
						return false;
			}
		}
	}
	return true;
}

static void assert_narrower(const ota_policy *n, const ota_policy *w, bool w_canonical,
                            const char *what)
{
	for (size_t s = 0; s < ota_policy_segment_count(n); s++) {
		const char *why = "";
		const json_t *wr = w_canonical ? can_rb(w, s) : eff_rb(w, s);
		if (!narrower(eff_rb(n, s), wr, &why)) {
			char *a = dump(eff_rb(n, s)), *b = dump(wr);
			fail_msg("%s: %s widens:\n  %s\nover\n  %s", what, why, a, b);
		}
	}
}

static void permute(size_t *idx, size_t n, size_t k, void (*fn)(const size_t *, size_t, void *),
                    void *ctx)
{
	if (k == n) {
		fn(idx, n, ctx);
		return;
	}
	for (size_t i = k; i < n; i++) {
		size_t t = idx[k];
		idx[k] = idx[i];
		idx[i] = t;
		permute(idx, n, k + 1, fn, ctx);
		t = idx[k];
		idx[k] = idx[i];
		idx[i] = t;
	}
}

typedef struct {
	const ota_contract *c;
	ota_overlay **ovs;
	ota_err rc;
	char id[OTA_ID_LEN + 1];
	bool first;
	size_t orders;
} perm_ctx;

static void check_order(const size_t *idx, size_t n, void *ctx)
{
	perm_ctx *pc = ctx;
	const ota_overlay *v[8];
	for (size_t i = 0; i < n; i++)
		v[i] = pc->ovs[idx[i]];
	ota_policy *p = NULL;
	ota_error e;
	ota_err rc = compile(pc->c, "t", v, n, &p, &e);
	if (pc->first) {
		pc->rc = rc;
		if (rc == OTA_OK)
			memcpy(pc->id, ota_policy_effective_identity(p), sizeof pc->id);
		pc->first = false;
	} else {
		if (rc != pc->rc)
			fail_msg("order changed the outcome: %s then %s", ota_err_name(pc->rc), ota_err_name(rc));
		if (rc == OTA_OK)
			assert_string_equal(pc->id, ota_policy_effective_identity(p));
	}
	pc->orders++;
	ota_policy_free(p);
}

static void test_meet_algebra(void **state)
{
	(void)state;
	size_t ok_sets = 0, refused_sets = 0, orders = 0;
	for (int round = 0; round < 250; round++) {
		ota_contract *c = rand_contract();
		ota_policy *canon = compile_ok(c, "t", NULL, 0);
		size_t n = 1 + rnd(4);
		ota_overlay *ovs[5];
		char rbs[5][2048];
		for (size_t i = 0; i <= n; i++)
			ovs[i] = rand_ov(rbs[i], sizeof rbs[i]); /* ovs[n]: the one added for monotonicity */
		/* every order of the set: one outcome, one effective identity */
		size_t idx[4] = {0, 1, 2, 3};
		perm_ctx pc = {c, ovs, OTA_OK, "", true, 0};
		permute(idx, n, 0, check_order, &pc);
		orders += pc.orders;
		/* the set, the set plus one more, and each overlay alone */
		ota_policy *pa = NULL, *pab = NULL;
		ota_error e;
		ota_err ra = compile(c, "t", (const ota_overlay *const *)ovs, n, &pa, &e);
		ota_err rab = compile(c, "t", (const ota_overlay *const *)ovs, n + 1, &pab, &e);
		if (ra != OTA_OK) {
			/* a refused set stays refused when an overlay is added */
			assert_int_not_equal(rab, OTA_OK);
			refused_sets++;
		} else {
			ok_sets++;
			assert_narrower(pa, canon, true, "set over canonical");
			for (size_t i = 0; i < n; i++) {
				ota_policy *pi = NULL;
				/* an overlay the set accepts is accepted alone too */
				assert_ota(compile(c, "t", (const ota_overlay *const *)&ovs[i], 1, &pi, &e),
				           OTA_OK);
				assert_narrower(pa, pi, false, "set over one of its overlays");
				ota_policy_free(pi);
			}
			if (rab == OTA_OK) {
				assert_narrower(pab, pa, false, "set plus one over the set");
				/* the effective identity binds the added overlay */
				assert_string_not_equal(ota_policy_effective_identity(pab),
				                        ota_policy_effective_identity(pa));
			}
			/* the same restrictions under other labels sort in other orders (the
			 * implementation folds in identity order): the same effective
			 * boundaries, segment by segment */
			for (int relabel = 0; relabel < 3; relabel++) {
				ota_overlay *lv[4];
				for (size_t i = 0; i < n; i++) {
					lv[i] = labelled_ov(rbs[i], 1000000 + rnd(1000000));
					assert_non_null(lv[i]);
				}
				ota_policy *pl = NULL;
				assert_ota(compile(c, "t", (const ota_overlay *const *)lv, n, &pl, &e), OTA_OK);
				for (size_t s = 0; s < ota_policy_segment_count(pa); s++)
					if (!json_equal(eff_rb(pl, s), eff_rb(pa, s))) {
						char *x = dump(eff_rb(pl, s)), *y2 = dump(eff_rb(pa, s));
						fail_msg("identity order changed the effective boundary:\n  %s\n  %s", x, y2);
					}
				ota_policy_free(pl);
				for (size_t i = 0; i < n; i++)
					ota_overlay_free(lv[i]);
			}
			/* idempotent: the set twice is the set (identity binds the overlays once) */
			ota_overlay *twice[8];
			for (size_t i = 0; i < n; i++)
				twice[i] = twice[n + i] = ovs[i];
			ota_policy *p2 = NULL;
			assert_ota(compile(c, "t", (const ota_overlay *const *)twice, 2 * n, &p2, &e), OTA_OK);
			assert_string_equal(ota_policy_effective_identity(p2), ota_policy_effective_identity(pa));
			ota_policy_free(p2);
		}
		ota_policy_free(pa);
		ota_policy_free(pab);
		for (size_t i = 0; i <= n; i++)
			ota_overlay_free(ovs[i]);
		ota_policy_free(canon);
		ota_contract_free(c);
	}
	/* the draws exercise both outcomes */
	assert_true(ok_sets > 100);
	assert_true(refused_sets > 0);
	assert_true(orders > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readonly_org_and_user_writable),
		cmocka_unit_test(test_deny_and_added_destination),
		cmocka_unit_test(test_deny_exceptions_narrow_broad),
		cmocka_unit_test(test_no_demotion),
		cmocka_unit_test(test_overlay_controls_reach_admission),
		cmocka_unit_test(test_meet_algebra),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
