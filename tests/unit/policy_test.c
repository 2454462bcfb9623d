/* policy: loader, identities, closure, overlays/meet, admission. */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ota/json.h"
#include "ota/policy.h"
#include "policy/internal.h" /* policy_hook_steps */

static ota_contract *load_src(const char *rel)
{
	size_t n;
	uint8_t *b = test_read_src(rel, &n);
	ota_contract *c = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_contract_load(ota_bytes_make(b, n), rel, &c, &e);
	if (rc != OTA_OK)
		fail_msg("%s: %s %s %s", rel, ota_err_name(rc), e.where, e.what);
	free(b);
	return c;
}

static ota_err load_str(const char *y, ota_contract **c, ota_error *e)
{
	ota_error_clear(e);
	return ota_contract_load(ota_bytes_make(y, strlen(y)), "t.yaml", c, e);
}

static ota_overlay *overlay_src(const char *rel, ota_overlay_source s)
{
	size_t n;
	uint8_t *b = test_read_src(rel, &n);
	ota_overlay *o = NULL;
	assert_ota(ota_overlay_load(ota_bytes_make(b, n), rel, s, &o, NULL), OTA_OK);
	assert_non_null(o);
	free(b);
	return o;
}

/* ---- every upstream example contract loads and every lane compiles ---- */

static void walk(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char p[4096];
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		struct stat st;
		assert_int_equal(lstat(p, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			walk(p, count);
			continue;
		}
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "ota", 3) != 0 || l < 5 || strcmp(de->d_name + l - 5, ".yaml") != 0)
			continue;
		uint8_t *b = NULL;
		size_t n = 0;
		assert_ota(ota_file_read(p, 1u << 24, &b, &n, NULL), OTA_OK);
		ota_contract *c = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_contract_load(ota_bytes_make(b, n), p, &c, &e);
		free(b);
		if (rc != OTA_OK)
			fail_msg("%s: %s %s %s", p, ota_err_name(rc), e.where, e.what);
		assert_true(ota_id_is_valid(ota_contract_identity(c)));
		assert_true(ota_id_is_valid(ota_contract_snapshot_identity(c)));
		for (size_t i = 0; i < ota_contract_task_count(c); i++)
			ota_policy_free(test_policy_compile(c, OTA_LANE_TASK,
			                                    ota_contract_task_name(c, i), NULL, 0));
		for (size_t i = 0; i < ota_contract_workflow_count(c); i++)
			ota_policy_free(test_policy_compile(
			        c, OTA_LANE_WORKFLOW, ota_contract_workflow_name(c, i), NULL, 0));
		ota_contract_free(c);
		(*count)++;
	}
	closedir(d);
}

static void test_upstream_examples(void **state)
{
	(void)state;
	char *dir = test_src_path("vectors/ota-examples");
	int count = 0;
	walk(dir, &count);
	free(dir);
	assert_true(count >= 80);
}

/* ---- loader refusals, each with its name and position ---- */

static void expect_refusal(const char *y, ota_err want, const char *where_prefix)
{
	ota_contract *c = NULL;
	ota_error e;
	ota_err rc = load_str(y, &c, &e);
	if (rc != want)
		fail_msg("want %s got %s (%s %s)", ota_err_name(want), ota_err_name(rc), e.where, e.what);
	assert_null(c);
	if (where_prefix != NULL && strncmp(e.where, where_prefix, strlen(where_prefix)) != 0)
		fail_msg("where '%s' does not start with '%s'", e.where, where_prefix);
}

#define HEAD "version: 1\nproject: {name: x}\n"

static void test_loader_refusals(void **state)
{
	(void)state;
	expect_refusal(HEAD "tasks:\n  a: {run: x}\n  a: {run: y}\n", OTA_ERR_YAML_DUPLICATE_KEY,
	               "t.yaml:5:3");
	expect_refusal(HEAD "bogus: 1\n", OTA_ERR_CONTRACT_UNKNOWN_KEY, "t.yaml:3:1");
	expect_refusal("version: 2\nproject: {name: x}\n", OTA_ERR_CONTRACT_VERSION, "t.yaml:1:10");
	expect_refusal(HEAD "tasks: {a: {run: x, script: y}}\n", OTA_ERR_CONTRACT_BODY, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, depends_on: [b]}}\n", OTA_ERR_CONTRACT_REFERENCE, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, depends_on: [b]}, b: {run: y, after_always: [a]}}\n",
	               OTA_ERR_POLICY_CYCLE, NULL);
	expect_refusal(HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      filesystem: {writable_paths: [/etc]}\n",
	               OTA_ERR_POLICY_PATH_ABSOLUTE, "t.yaml:7:");
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {filesystem: {writable_paths: [a/../../b]}}}}\n",
	               OTA_ERR_POLICY_PATH_ESCAPE, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {filesystem: {writable_paths: [.github/workflows/x], protected_paths: [.github]}}}}\n",
	               OTA_ERR_POLICY_PATH_OVERLAP, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {filesystem: {repo_root_mode: sometimes}}}}\n",
	               OTA_ERR_CONTRACT_VALUE, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {network: {default: deny, outbound_targets: [{kind: domain, value: a.com, destination_constraint: {kind: tenant_scope, values: [], source_posture: repo_local_authoritative, enforcement: authoritative_app_enforced}}]}}}}\n",
	               OTA_ERR_POLICY_DESTINATION, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {network: {outbound_targets: [{kind: domain, value: a.com, destination_constraint: {kind: tenant_scope, values: [t], source_posture: non_authoritative, enforcement: authoritative_runtime_enforced}}]}}}}\n",
	               OTA_ERR_POLICY_DESTINATION, NULL);
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {network: {outbound_targets: [{kind: host, value: h, destination_shape: relay_host}, {kind: host, value: h, destination_shape: send_host}]}}}}\n",
	               OTA_ERR_POLICY_DESTINATION, NULL);
	/* incompatible workflow and task values for one field */
	expect_refusal(HEAD "tasks: {a: {run: x, runtime_boundary: {network: {default: deny}}}}\n"
	                    "workflows: {default: w, w: {run: {task: a}, runtime_boundary: {network: {default: allow}}}}\n",
	               OTA_ERR_POLICY_SCOPE_CONFLICT, NULL);
	expect_refusal(HEAD "execution: {backends: {container: {platform: linux}}}\n", OTA_ERR_POLICY_PLATFORM, NULL);
	expect_refusal(HEAD "a: &x [1]\n", OTA_ERR_CONTRACT_UNKNOWN_KEY, NULL);
	expect_refusal(HEAD "metadata: {<<: {a: 1}}\n", OTA_ERR_YAML_MERGE_KEY, NULL);
	expect_refusal(HEAD "metadata: {a: *nope}\n", OTA_ERR_YAML_ANCHOR_UNKNOWN, NULL);
	expect_refusal(HEAD "metadata: {a: [unclosed\n", OTA_ERR_YAML_SYNTAX, "t.yaml:");
	expect_refusal("---\nversion: 1\n---\nversion: 1\n", OTA_ERR_YAML_MULTI_DOC, NULL);
}

static void test_alias_bomb_and_depth(void **state)
{
	(void)state;
	/* billion laughs: 9 levels of 10 aliases each */
	char *y = malloc(8192);
	assert_non_null(y);
	strcpy(y, HEAD "metadata:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < 10; i++) {
		char line[200];
		snprintf(line, sizeof line,
		         "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i,
		         i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
		strcat(y, line);
	}
	ota_contract *c = NULL;
	ota_error e;
	ota_err rc = load_str(y, &c, &e);
	assert_true(rc == OTA_ERR_YAML_TOO_LARGE || rc == OTA_ERR_YAML_ALIAS_LIMIT);
	assert_null(c);
	free(y);
	/* few nodes, many bytes: one 64 KiB scalar, 3 levels of 8 aliases
	 * (512 copies, 32 MiB once turned into JSON): 584 nodes and 73
	 * aliases, far below their caps, refused for its expanded bytes */
	size_t big = 64u * 1024u;
	y = malloc(big + 4096);
	assert_non_null(y);
	strcpy(y, HEAD "metadata:\n  s: &s ");
	memset(y + strlen(y), 'a', big);
	y[strlen(HEAD "metadata:\n  s: &s ") + big] = '\0';
	strcat(y, "\n  l0: &l0 [*s, *s, *s, *s, *s, *s, *s, *s]\n"
	          "  l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n");
	char *two = strdup(y); /* 64 copies (4 MiB): taken */
	assert_non_null(two);
	strcat(y, "  l2: [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n");
	ota_error_clear(&e);
	assert_ota(load_str(y, &c, &e), OTA_ERR_YAML_TOO_LARGE);
	assert_non_null(strstr(e.what, "bytes of scalars"));
	assert_null(c);
	assert_ota(load_str(two, &c, &e), OTA_OK);
	ota_contract_free(c);
	c = NULL;
	free(two);
	free(y);
	/* many aliases */
	size_t cap = 1u << 16;
	y = malloc(cap);
	assert_non_null(y);
	strcpy(y, HEAD "metadata:\n  a: &a x\n  b: [");
	for (int i = 0; i < 1500; i++)
		strcat(y, "*a, ");
	strcat(y, "x]\n");
	assert_ota(load_str(y, &c, &e), OTA_ERR_YAML_ALIAS_LIMIT);
	free(y);
	/* depth */
	y = malloc(cap);
	assert_non_null(y);
	strcpy(y, HEAD "metadata: ");
	for (int i = 0; i < 200; i++)
		strcat(y, "[");
	for (int i = 0; i < 200; i++)
		strcat(y, "]");
	strcat(y, "\n");
	assert_ota(load_str(y, &c, &e), OTA_ERR_YAML_TOO_DEEP);
	/* an alias nests as deep as its anchor: refused where it stands, not
	 * later and without a position (40 levels anchored, used 20 down) */
	strcpy(y, HEAD "metadata:\n  a: &a ");
	for (int i = 0; i < 40; i++)
		strcat(y, "[");
	for (int i = 0; i < 40; i++)
		strcat(y, "]");
	strcat(y, "\n  b: ");
	for (int i = 0; i < 20; i++)
		strcat(y, "[");
	strcat(y, "*a");
	for (int i = 0; i < 20; i++)
		strcat(y, "]");
	strcat(y, "\n");
	assert_ota(load_str(y, &c, &e), OTA_ERR_YAML_TOO_DEEP);
	assert_string_equal(e.where, "t.yaml:5:26");
	assert_null(c);
	/* the same alias used shallower loads */
	strcpy(y, HEAD "metadata:\n  a: &a ");
	for (int i = 0; i < 40; i++)
		strcat(y, "[");
	for (int i = 0; i < 40; i++)
		strcat(y, "]");
	strcat(y, "\n  b: [[*a]]\n");
	assert_ota(load_str(y, &c, &e), OTA_OK);
	ota_contract_free(c);
	c = NULL;
	/* just under the cap loads, and its identity (one level deeper) computes */
	strcpy(y, HEAD "metadata: ");
	for (int i = 0; i < 53; i++)
		strcat(y, "[");
	for (int i = 0; i < 53; i++)
		strcat(y, "]");
	strcat(y, "\n");
	assert_ota(load_str(y, &c, &e), OTA_OK);
	ota_contract_free(c);
	c = NULL;
	/* a 5,000-task depends_on chain: refused as too deep, never a stack overflow */
	free(y);
	y = malloc(1u << 20);
	assert_non_null(y);
	strcpy(y, HEAD "tasks:\n  t0: {run: x}\n");
	size_t len = strlen(y);
	for (int i = 1; i < 5000; i++)
		len += (size_t)snprintf(y + len, (1u << 20) - len, "  t%d: {run: x, depends_on: [t%d]}\n", i, i - 1);
	assert_ota(load_str(y, &c, &e), OTA_OK);
	ota_policy_options po = test_policy_amd64();
	ota_policy *p = NULL;
	assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "t4999", &po, NULL, 0, &p, &e), OTA_ERR_TOO_DEEP);
	assert_null(p);
	assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "t3000", &po, NULL, 0, &p, &e), OTA_OK);
	assert_int_equal(ota_policy_segment_count(p), 3001);
	ota_policy_free(p);
	ota_contract_free(c);
	c = NULL;
	free(y);
	/* size cap before parsing */
	assert_ota(ota_contract_load(ota_bytes_make("x", (size_t)9 * 1024 * 1024), "big", &c, &e),
	           OTA_ERR_YAML_TOO_LARGE);
}

/* ---- identities ---- */

static void test_identity_stability(void **state)
{
	(void)state;
	ota_contract *a = load_src("vectors/policy/base.yaml");
	ota_contract *b = load_src("vectors/policy/reformatted.yaml");
	ota_contract *s = load_src("vectors/policy/spelling.yaml");
	ota_contract *arm = load_src("vectors/policy/platform-arm64.yaml");
	ota_contract *sw = load_src("vectors/policy/semantic-writable.yaml");
	ota_contract *sb = load_src("vectors/policy/semantic-body.yaml");
	assert_string_not_equal(ota_contract_snapshot_identity(a), ota_contract_snapshot_identity(b));
	assert_string_equal(ota_contract_identity(a), ota_contract_identity(b));
	const char *lanes[] = {"test", "build", "report"};
	for (int l = 0; l < 3; l++) {
		ota_policy *pa = test_policy_compile(a, OTA_LANE_TASK, lanes[l], NULL, 0);
		ota_policy *pb = test_policy_compile(b, OTA_LANE_TASK, lanes[l], NULL, 0);
		ota_policy *ps = test_policy_compile(s, OTA_LANE_TASK, lanes[l], NULL, 0);
		ota_policy *parm = test_policy_compile(arm, OTA_LANE_TASK, lanes[l], NULL, 0);
		assert_string_equal(ota_policy_canonical_identity(pa), ota_policy_canonical_identity(pb));
		assert_string_equal(ota_policy_effective_identity(pa), ota_policy_effective_identity(pb));
		assert_string_not_equal(ota_policy_canonical_identity(pa), ota_policy_canonical_identity(parm));
		assert_int_equal(ota_policy_segment_count(pa), ota_policy_segment_count(ps));
		for (size_t i = 0; i < ota_policy_segment_count(pa); i++) {
			assert_string_equal(ota_policy_segment_canonical_identity(pa, i),
			                    ota_policy_segment_canonical_identity(ps, i));
			assert_string_not_equal(ota_policy_segment_canonical_identity(pa, i),
			                        ota_policy_segment_canonical_identity(parm, i));
		}
		/* no provider name anywhere in canonical or effective policy */
		char *t1 = ota_json_dumps(ota_policy_canonical_json(pa), false);
		char *t2 = ota_json_dumps(ota_policy_effective_json(pa), false);
		assert_null(strstr(t1, "oci_local"));
		assert_null(strstr(t2, "oci_local"));
		assert_null(strstr(t1, "docker"));
		assert_non_null(strstr(t1, "\"architecture\":\"amd64\""));
		free(t1);
		free(t2);
		ota_policy_free(pa);
		ota_policy_free(pb);
		ota_policy_free(ps);
		ota_policy_free(parm);
	}
	/* semantic changes move exactly the affected segment */
	ota_policy *pa = test_policy_compile(a, OTA_LANE_TASK, "test", NULL, 0);
	ota_policy *pw = test_policy_compile(sw, OTA_LANE_TASK, "test", NULL, 0);
	ota_policy *pbody = test_policy_compile(sb, OTA_LANE_TASK, "test", NULL, 0);
	assert_int_equal(ota_policy_segment_count(pa), 3);
	assert_string_equal(ota_policy_segment_id(pa, 0), "task:build");
	assert_string_equal(ota_policy_segment_id(pa, 1), "task:test");
	assert_string_equal(ota_policy_segment_id(pa, 2), "task:report");
	assert_string_equal(ota_policy_segment_canonical_identity(pa, 0),
	                    ota_policy_segment_canonical_identity(pw, 0));
	assert_string_not_equal(ota_policy_segment_canonical_identity(pa, 1),
	                        ota_policy_segment_canonical_identity(pw, 1));
	assert_string_not_equal(ota_policy_segment_canonical_identity(pa, 0),
	                        ota_policy_segment_canonical_identity(pbody, 0));
	assert_string_not_equal(ota_policy_canonical_identity(pa), ota_policy_canonical_identity(pw));
	/* identities recompute from the printed objects (auditor's view) */
	const json_t *segs = json_object_get(ota_policy_canonical_json(pa), "segments");
	json_t *seg0 = json_deep_copy(json_array_get(segs, 0));
	json_object_del(seg0, "identity");
	char id[OTA_ID_LEN + 1];
	assert_ota(ota_json_identity(seg0, id, NULL), OTA_OK);
	assert_string_equal(id, ota_policy_segment_canonical_identity(pa, 0));
	json_decref(seg0);
	json_t *core = json_deep_copy(ota_policy_canonical_json(pa));
	json_object_del(core, "identity");
	json_object_del(core, "segments");
	json_object_del(core, "edges");
	assert_ota(ota_json_identity(core, id, NULL), OTA_OK);
	assert_string_equal(id, ota_policy_canonical_identity(pa));
	json_decref(core);
	/* typed edges: build -> test unconditional, test -> report on_failure */
	const json_t *edges = json_object_get(ota_policy_canonical_json(pa), "edges");
	assert_int_equal(json_array_size(edges), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(edges, 0), "condition")), "unconditional");
	assert_string_equal(json_string_value(json_object_get(json_array_get(edges, 1), "condition")), "on_failure");
	assert_string_equal(json_string_value(json_object_get(json_array_get(edges, 1), "destination")), "task:report");
	/* differing segments are not flattened: each keeps its own writable set */
	const json_t *fs0 = json_object_get(json_object_get(json_array_get(segs, 0), "runtime_boundary"), "filesystem");
	const json_t *fs1 = json_object_get(json_object_get(json_array_get(segs, 1), "runtime_boundary"), "filesystem");
	assert_int_equal(json_array_size(json_object_get(fs0, "writable_paths")), 2);
	assert_int_equal(json_array_size(json_object_get(fs1, "writable_paths")), 1);
	ota_policy_free(pa);
	ota_policy_free(pw);
	ota_policy_free(pbody);
	/* workflow: phases setup, run in order with a phase edge */
	ota_policy *wf = test_policy_compile(a, OTA_LANE_WORKFLOW, "ci", NULL, 0);
	assert_int_equal(ota_policy_segment_count(wf), 3);
	assert_string_equal(ota_policy_segment_id(wf, 0), "task:build");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ota_policy_canonical_json(wf), "segments"), 0), "phase")), "setup");
	ota_policy_free(wf);
	/* golden identities */
	size_t n;
	uint8_t *gj = test_read_src("vectors/policy/expected.json", &n);
	json_t *g = NULL;
	assert_ota(ota_json_parse(ota_bytes_make(gj, n), &g, NULL), OTA_OK);
	pa = test_policy_compile(a, OTA_LANE_TASK, "test", NULL, 0);
	wf = test_policy_compile(a, OTA_LANE_WORKFLOW, "ci", NULL, 0);
	assert_string_equal(json_string_value(json_object_get(g, "task:test")), ota_policy_canonical_identity(pa));
	assert_string_equal(json_string_value(json_object_get(g, "workflow:ci")), ota_policy_canonical_identity(wf));
	assert_string_equal(json_string_value(json_object_get(g, "contract")), ota_contract_identity(a));
	ota_policy_free(pa);
	ota_policy_free(wf);
	json_decref(g);
	free(gj);
	ota_contract_free(a);
	ota_contract_free(b);
	ota_contract_free(s);
	ota_contract_free(arm);
	ota_contract_free(sw);
	ota_contract_free(sb);
}

/* ---- overlays and the meet ---- */

static const json_t *seg_fs(const ota_policy *p, size_t i, bool eff)
{
	const json_t *j = eff ? ota_policy_effective_json(p) : ota_policy_canonical_json(p);
	return json_object_get(json_object_get(json_array_get(json_object_get(j, "segments"), i),
	                                       "runtime_boundary"), "filesystem");
}

static void test_overlays(void **state)
{
	(void)state;
	ota_contract *a = load_src("vectors/policy/base.yaml");
	ota_overlay *org = overlay_src("vectors/policy/org-narrow.yaml", OTA_OVERLAY_ORG_POLICY);
	ota_overlay *deny = overlay_src("vectors/policy/overlay-deny.yaml", OTA_OVERLAY_FILE);
	ota_overlay *widen = overlay_src("vectors/policy/overlay-widen.yaml", OTA_OVERLAY_FILE);
	assert_true(ota_id_is_valid(ota_overlay_identity(org)));
	assert_true(ota_id_is_valid(ota_overlay_authority_identity(org)));
	const ota_overlay *both[2] = {org, deny};
	const ota_overlay *rev[2] = {deny, org};
	ota_policy *p0 = test_policy_compile(a, OTA_LANE_TASK, "test", NULL, 0);
	ota_policy *p1 = test_policy_compile(a, OTA_LANE_TASK, "test", both, 2);
	ota_policy *p2 = test_policy_compile(a, OTA_LANE_TASK, "test", rev, 2);
	assert_string_equal(ota_policy_canonical_identity(p0), ota_policy_canonical_identity(p1));
	assert_string_not_equal(ota_policy_effective_identity(p0), ota_policy_effective_identity(p1));
	assert_string_equal(ota_policy_effective_identity(p1), ota_policy_effective_identity(p2));
	/* build: writable {build, out} meet {out/reports, build} = {build, out/reports}; .github added */
	const json_t *fs = seg_fs(p1, 0, true);
	const json_t *w = json_object_get(fs, "writable_paths");
	assert_int_equal(json_array_size(w), 2);
	assert_string_equal(json_string_value(json_array_get(w, 0)), "build");
	assert_string_equal(json_string_value(json_array_get(w, 1)), "out/reports");
	const json_t *pr = json_object_get(fs, "protected_paths");
	assert_string_equal(json_string_value(json_array_get(pr, 0)), ".github");
	/* canonical untouched */
	assert_int_equal(json_array_size(json_object_get(seg_fs(p1, 0, false), "protected_paths")), 2);
	ota_policy_free(p0);
	ota_policy_free(p1);
	ota_policy_free(p2);
	/* widening refused, naming the control */
	ota_policy *pw = NULL;
	ota_policy_options o = test_policy_amd64();
	const ota_overlay *wv[1] = {widen};
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_policy_compile(a, OTA_LANE_TASK, "test", &o, wv, 1, &pw, &e),
	           OTA_ERR_POLICY_OVERLAY_WIDENS);
	assert_null(pw);
	assert_non_null(strstr(e.what, "network.default"));
	/* an overlay file without policies.sandbox is refused; an org policy without it is none */
	ota_overlay *none = NULL;
	const char *nos = "policies: {env: {values: {A: b}}}\n";
	assert_ota(ota_overlay_load(ota_bytes_make(nos, strlen(nos)), "o", OTA_OVERLAY_FILE, &none, NULL),
	           OTA_ERR_POLICY_OVERLAY_EMPTY);
	assert_ota(ota_overlay_load(ota_bytes_make(nos, strlen(nos)), "o", OTA_OVERLAY_ORG_POLICY, &none, NULL),
	           OTA_OK);
	assert_null(none);
	const char *unk = "policies: {sandbox: {processes: {}}}\n";
	assert_ota(ota_overlay_load(ota_bytes_make(unk, strlen(unk)), "o", OTA_OVERLAY_FILE, &none, NULL),
	           OTA_ERR_CONTRACT_UNKNOWN_KEY);
	/* the policy owns its effective strings: overlays may go before admission */
	ota_policy *pk = test_policy_compile(a, OTA_LANE_TASK, "test", both, 2);
	ota_overlay_free(org);
	ota_overlay_free(deny);
	ota_overlay_free(widen);
	ota_capability_descriptor dsc = test_policy_oci_descriptor();
	ota_admission_request rq = {true, "oci_local", &dsc, 1};
	json_t *adm = NULL;
	bool adm_ok = false;
	assert_ota(ota_policy_admit(pk, &rq, &adm, &adm_ok, NULL), OTA_OK);
	/* the overlays' restrictions were read after they were freed (report,
	 * with no network control in the contract, is denied by overlay-deny:
	 * no network refusal); the one refusal left is report being test's
	 * after_failure hook, which oci_local cannot select by outcome */
	assert_false(adm_ok);
	assert_int_equal(json_array_size(json_object_get(adm, "refusals")), 1);
	assert_true(test_policy_has_refusal(adm, "execution.hook_condition"));
	json_decref(adm);
	ota_policy_free(pk);
	ota_contract_free(a);
}

/* property test: random overlays in random orders */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(unsigned n)
{
	return test_rnd(&rng, n);
}

static void rand_paths(char *buf, size_t cap)
{
	unsigned k = rnd(4);
	snprintf(buf, cap, "[");
	for (unsigned i = 0; i < k; i++) {
		strncat(buf, test_policy_paths[rnd(TEST_POLICY_NPATHS)], cap - strlen(buf) - 3);
		if (i + 1 < k)
			strncat(buf, ", ", cap - strlen(buf) - 1);
	}
	strncat(buf, "]", cap - strlen(buf) - 1);
}

static ota_overlay *rand_overlay(void)
{
	for (;;) {
		char y[1024], w[200], p[200];
		rand_paths(w, sizeof w);
		rand_paths(p, sizeof p);
		snprintf(y, sizeof y, "policies:\n  sandbox:\n    filesystem: {%s%s%s}\n    network: {%s%s}\n",
		         rnd(2) ? "repo_root_mode: read_only, " : "",
		         rnd(2) ? "writable_paths: " : "protected_paths: ", rnd(2) ? w : p,
		         rnd(2) ? "default: deny, " : "",
		         rnd(2) ? "outbound_targets: [{kind: host, value: h1}]" : "outbound_targets: []");
		ota_overlay *o = NULL;
		if (ota_overlay_load(ota_bytes_make(y, strlen(y)), "r", OTA_OVERLAY_FILE, &o, NULL) == OTA_OK)
			return o; /* overlapping random sets may be refused: draw again */
	}
}

static bool json_str_in(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
	return false;
}

static bool within(const char *a, const char *b)
{
	size_t n = strlen(b);
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

static void test_meet_properties(void **state)
{
	(void)state;
	const char *y = HEAD
		"tasks:\n"
		"  a: {run: x, runtime_boundary: {filesystem: {repo_root_mode: read_only, writable_paths: [out, build], protected_paths: [build/keep]}, network: {default: allow, outbound_targets: [{kind: host, value: h1}, {kind: host, value: h2}]}}}\n"
		"  b: {run: y, depends_on: [a], runtime_boundary: {filesystem: {repo_root_mode: writable}, network: {default: allow}}}\n";
	ota_contract *c = NULL;
	ota_error e;
	assert_ota(load_str(y, &c, &e), OTA_OK);
	ota_policy *base = test_policy_compile(c, OTA_LANE_TASK, "b", NULL, 0);
	for (int round = 0; round < 200; round++) {
		ota_overlay *ovs[5];
		size_t n = 1 + rnd(4);
		for (size_t i = 0; i < n; i++)
			ovs[i] = rand_overlay();
		const ota_overlay *o1[5], *o2[5];
		for (size_t i = 0; i < n; i++)
			o1[i] = o2[i] = ovs[i];
		for (size_t i = n; i > 1; i--) { /* shuffle */
			size_t j = rnd((unsigned)i);
			const ota_overlay *t = o2[i - 1];
			o2[i - 1] = o2[j];
			o2[j] = t;
		}
		ota_policy_options po = test_policy_amd64();
		ota_policy *p1 = NULL, *p2 = NULL;
		ota_err r1 = ota_policy_compile(c, OTA_LANE_TASK, "b", &po, o1, n, &p1, NULL);
		ota_err r2 = ota_policy_compile(c, OTA_LANE_TASK, "b", &po, o2, n, &p2, NULL);
		assert_int_equal(r1, r2);
		if (r1 == OTA_OK) {
			assert_string_equal(ota_policy_effective_identity(p1), ota_policy_effective_identity(p2));
			assert_string_equal(ota_policy_canonical_identity(p1), ota_policy_canonical_identity(base));
			for (size_t s = 0; s < ota_policy_segment_count(p1); s++) {
				const json_t *cf = seg_fs(p1, s, false), *ef = seg_fs(p1, s, true);
				/* writable reach never grows */
				const json_t *cw = json_object_get(cf, "writable_paths");
				const json_t *ew = json_object_get(ef, "writable_paths");
				if (json_is_array(cw)) {
					assert_true(json_is_array(ew));
					size_t i;
					const json_t *v;
					json_array_foreach(ew, i, v) {
						bool ok = false;
						size_t k;
						const json_t *u;
						json_array_foreach(cw, k, u) ok = ok || within(json_string_value(v), json_string_value(u));
						assert_true(ok);
					}
				}
				/* protection never shrinks */
				size_t i;
				const json_t *v;
				json_array_foreach(json_object_get(cf, "protected_paths"), i, v)
					assert_true(json_str_in(json_object_get(ef, "protected_paths"), json_string_value(v)));
				if (strcmp(json_string_value(json_object_get(cf, "repo_root_mode")), "read_only") == 0)
					assert_string_equal(json_string_value(json_object_get(ef, "repo_root_mode")), "read_only");
				/* destinations never added; deny never relaxed */
				const json_t *seg_c = json_array_get(json_object_get(ota_policy_canonical_json(p1), "segments"), s);
				const json_t *seg_e = json_array_get(json_object_get(ota_policy_effective_json(p1), "segments"), s);
				const json_t *cn = json_object_get(json_object_get(seg_c, "runtime_boundary"), "network");
				const json_t *en = json_object_get(json_object_get(seg_e, "runtime_boundary"), "network");
				if (strcmp(json_string_value(json_object_get(cn, "scope")), "targeted") == 0) {
					size_t k;
					const json_t *t;
					assert_string_not_equal(json_string_value(json_object_get(en, "scope")), "broad");
					json_array_foreach(json_object_get(en, "outbound_targets"), k, t) {
						bool ok = false;
						size_t m;
						const json_t *u;
						json_array_foreach(json_object_get(cn, "outbound_targets"), m, u)
							ok = ok || strcmp(json_string_value(json_object_get(u, "value")),
							                  json_string_value(json_object_get(t, "value"))) == 0;
						assert_true(ok);
					}
				}
				if (strcmp(json_string_value(json_object_get(cn, "default")), "deny") == 0)
					assert_string_equal(json_string_value(json_object_get(en, "default")), "deny");
			}
		}
		ota_policy_free(p1);
		ota_policy_free(p2);
		for (size_t i = 0; i < n; i++)
			ota_overlay_free(ovs[i]);
	}
	ota_policy_free(base);
	ota_contract_free(c);
}

/* ---- admission ---- */

static ota_capability_descriptor oci(void)
{
	ota_capability_descriptor d = test_policy_oci_descriptor();
	assert_int_equal(d.controls[OTA_CTL_NET_TARGET_ALLOWLIST], OTA_CAP_UNSUPPORTED);
	assert_int_equal(d.controls[OTA_CTL_FS_READ_ONLY_ROOT], OTA_CAP_ENFORCED);
	return d;
}

static json_t *admit(const char *rel, ota_lane_kind k, const char *lane, bool agent,
                     const char *target, bool *admitted)
{
	ota_contract *c = load_src(rel);
	ota_policy *p = test_policy_compile(c, k, lane, NULL, 0);
	ota_capability_descriptor d = oci();
	ota_admission_request r = {agent, target, &d, 1};
	json_t *out = NULL;
	assert_ota(ota_policy_admit(p, &r, &out, admitted, NULL), OTA_OK);
	assert_false(json_is_true(json_object_get(out, "execution_started")));
	ota_policy_free(p);
	ota_contract_free(c);
	return out;
}

/*
 * Admission looks for each segment's outcome hooks among that segment's
 * own: a chain of 400 tasks (399 depends_on edges) with an after_failure
 * hook on every 50th (8 hooks, each refused for oci_local, which cannot
 * select by outcome) visits each hook edge once per evaluation, where the
 * old scan of every edge for every segment visited 2 x 408 x 407 (counted,
 * not timed: at 3,333 segments it was 22 million steps per admission).
 */
static void test_admission_hooks_linear(void **state)
{
	(void)state;
	enum { N = 400, EVERY = 50 };
	size_t cap = 1024 + N * 200, off = 0;
	char *y = malloc(cap);
	assert_non_null(y);
	off += (size_t)snprintf(y + off, cap - off,
	                        "version: 1\nproject:\n  name: hooks\nexecution:\n"
	                        "  preferred: container\n  lifecycle: ephemeral\n  backends:\n"
	                        "    container:\n      image: debian:bookworm-slim\n"
	                        "      platform: linux/amd64\ntasks:\n");
	for (int i = 1; i <= N; i++) {
		off += (size_t)snprintf(y + off, cap - off,
		                        "  t%d:\n    run: \"echo %d\"\n    safe_for_agent: true\n"
		                        "    runtime_boundary:\n      filesystem: {repo_root_mode: "
		                        "read_only}\n",
		                        i, i);
		if (i > 1)
			off += (size_t)snprintf(y + off, cap - off, "    depends_on: [t%d]\n", i - 1);
		if (i % EVERY == 0)
			off += (size_t)snprintf(y + off, cap - off,
			                        "    after_failure: [h%d]\n  h%d:\n    run: \"echo h\"\n"
			                        "    safe_for_agent: true\n    runtime_boundary:\n"
			                        "      filesystem: {repo_root_mode: read_only}\n",
			                        i, i);
	}
	assert_true(off < cap);
	ota_contract *c = test_contract_load(y, "hooks.yaml");
	char last[16];
	snprintf(last, sizeof last, "t%d", N);
	ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, last, NULL, 0);
	assert_int_equal(ota_policy_segment_count(p), N + N / EVERY);
	ota_capability_descriptor d = oci();
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *out = NULL;
	bool ok = true;
	policy_hook_steps = 0;
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	/* every hook is still found and refused, once */
	size_t hooks = 0;
	const json_t *refs = json_object_get(out, "refusals");
	for (size_t i = 0; i < json_array_size(refs); i++)
		hooks += strcmp(json_string_value(json_object_get(json_array_get(refs, i), "control")),
		                "execution.hook_condition") == 0;
	assert_false(ok);
	assert_int_equal(hooks, N / EVERY);
	/* each hook edge once per evaluation of a descriptor (automatic
	 * resolution evaluates each, and again the one it picks): linear */
	assert_true(policy_hook_steps > 0);
	assert_true(policy_hook_steps <= 2 * (size_t)(N / EVERY));
	json_decref(out);
	ota_policy_free(p);
	ota_contract_free(c);
	free(y);
}

static void test_admission(void **state)
{
	(void)state;
	bool ok;
	json_t *a = admit("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml", OTA_LANE_TASK,
	                  "verify", true, NULL, &ok);
	assert_true(ok);
	assert_string_equal(json_string_value(json_object_get(a, "decision")), "admitted");
	assert_string_equal(json_string_value(json_object_get(a, "resolution")), "automatic");
	assert_string_equal(json_string_value(json_object_get(a, "provider_target")), "oci_local");
	assert_true(json_is_true(json_object_get(a, "agent_safe")));
	json_decref(a);
	/* same lane, explicit target, human: admitted but never labelled agent-safe */
	a = admit("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml", OTA_LANE_TASK, "verify",
	          false, "oci_local", &ok);
	assert_true(ok);
	assert_false(json_is_true(json_object_get(a, "agent_safe")));
	json_decref(a);
	a = admit("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml", OTA_LANE_WORKFLOW, "verify",
	          true, "oci_local", &ok);
	assert_true(ok);
	json_decref(a);
	/* native lane with targeted egress: refused with upstream's controls */
	a = admit("vectors/ota-examples/reference/runtime-boundary/ota.yaml", OTA_LANE_TASK, "verify",
	          true, "oci_local", &ok);
	assert_false(ok);
	assert_true(test_policy_has_refusal(a, "execution.backend"));
	assert_true(test_policy_has_refusal(a, "execution.lifecycle"));
	assert_true(test_policy_has_refusal(a, "execution.target_platform"));
	assert_true(test_policy_has_refusal(a, "network.target_allowlist"));
	/* the app-enforced constraint is an obligation, not provider enforcement */
	const json_t *ob = json_array_get(json_object_get(a, "application_obligations"), 0);
	assert_string_equal(json_string_value(json_object_get(ob, "evidence")), "not_proved");
	assert_string_equal(json_string_value(json_object_get(a, "canonical_policy_identity")),
	                    json_string_value(json_object_get(json_object_get(a, "canonical_policy"), "identity")));
	json_decref(a);
	/* container lane without a platform */
	a = admit("vectors/ota-examples/reference/replay-baseline-regeneration/ota.yaml", OTA_LANE_TASK,
	          "baseline:replay", false, "oci_local", &ok);
	assert_false(ok);
	assert_true(test_policy_has_refusal(a, "execution.target_platform"));
	assert_true(test_policy_has_refusal(a, "filesystem.repo_root_mode"));
	json_decref(a);
	/* no authoritative controls: plain agent admission without a target */
	a = admit("vectors/ota-examples/reference/safe-agent-execution/ota.yaml", OTA_LANE_TASK, "verify",
	          true, NULL, &ok);
	assert_true(ok);
	assert_string_equal(json_string_value(json_object_get(a, "decision")), "not_required");
	json_decref(a);
	/* agent admission first: unsafe task refused before sandbox evaluation */
	a = admit("vectors/ota-examples/reference/safe-agent-execution/ota.yaml", OTA_LANE_TASK, "publish",
	          true, "oci_local", &ok);
	assert_false(ok);
	assert_string_equal(json_string_value(json_object_get(a, "kind")), "agent_unsafe_closure");
	assert_true(test_policy_has_refusal(a, "agent.safe_for_agent"));
	assert_true(json_is_null(json_object_get(a, "provider_evaluation")));
	json_decref(a);
	/* services refuse as pre-boundary actions */
	a = admit("vectors/ota-examples/reference/managed-lifecycle-proof/ota.yaml", OTA_LANE_TASK,
	          "assert-database", false, "oci_local", &ok);
	assert_false(ok);
	assert_true(test_policy_has_refusal(a, "execution.pre_boundary_actions"));
	json_decref(a);
	/* unknown target */
	a = admit("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml", OTA_LANE_TASK, "verify",
	          true, "nope", &ok);
	assert_false(ok);
	assert_string_equal(json_string_value(json_object_get(a, "kind")), "sandbox_target_unknown");
	json_decref(a);
}

static void test_descriptor_refusals(void **state)
{
	(void)state;
	ota_capability_descriptor d;
	const char *bad = "{\"target\":\"x\",\"adapter_version\":\"v\",\"target_platforms\":[],\"controls\":{\"made.up\":\"enforced\"},\"execution\":{\"backends\":[],\"lifecycles\":[],\"kinds\":[]}}";
	assert_ota(ota_capability_descriptor_parse(ota_bytes_make(bad, strlen(bad)), NULL, &d, NULL),
	           OTA_ERR_POLICY_DESCRIPTOR);
	ota_capability_descriptor a = oci(), b = oci();
	char ia[OTA_ID_LEN + 1], ib[OTA_ID_LEN + 1];
	assert_ota(ota_capability_descriptor_identity(&a, ia, NULL), OTA_OK);
	b.controls[OTA_CTL_NET_EXTERNAL_DENY] = OTA_CAP_ADVISORY;
	assert_ota(ota_capability_descriptor_identity(&b, ib, NULL), OTA_OK);
	assert_string_not_equal(ia, ib);
	/* an advisory runtime control fails closed */
	ota_contract *c = load_src("vectors/ota-examples/reference/enforced-oci-sandbox/ota.yaml");
	ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, "verify", NULL, 0);
	ota_admission_request r = {true, NULL, &b, 1};
	json_t *out = NULL;
	bool ok = true;
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_false(ok);
	assert_true(test_policy_has_refusal(out, "network.default"));
	json_decref(out);
	/* no process isolation, or no confirmed cleanup: no boundary is admitted */
	for (int k = 0; k < 2; k++) {
		ota_capability_descriptor n = oci();
		n.controls[k == 0 ? OTA_CTL_PROCESS_ISOLATION : OTA_CTL_LIFECYCLE_CLEANUP] =
			k == 0 ? OTA_CAP_UNSUPPORTED : OTA_CAP_ADVISORY;
		ota_admission_request rn = {true, NULL, &n, 1};
		ok = true;
		assert_ota(ota_policy_admit(p, &rn, &out, &ok, NULL), OTA_OK);
		assert_false(ok);
		assert_true(test_policy_has_refusal(out, k == 0 ? "process.isolation" : "lifecycle.cleanup"));
		json_decref(out);
	}
	/* with both, the same lane is admitted */
	ota_admission_request ra = {true, NULL, &a, 1};
	assert_ota(ota_policy_admit(p, &ra, &out, &ok, NULL), OTA_OK);
	assert_true(ok);
	json_decref(out);
	/* two compatible targets without a default: ambiguous */
	ota_capability_descriptor two[2] = {a, a};
	strcpy(two[1].target, "other_oci");
	ota_admission_request r2 = {true, NULL, two, 2};
	assert_ota(ota_policy_admit(p, &r2, &out, &ok, NULL), OTA_OK);
	assert_false(ok);
	assert_string_equal(json_string_value(json_object_get(out, "kind")), "sandbox_target_ambiguous");
	json_decref(out);
	ota_policy_free(p);
	ota_contract_free(c);
}

static void test_boundary_groups(void **state)
{
	(void)state;
	const char *y = HEAD
		"execution: {preferred: container, lifecycle: ephemeral, backends: {container: {image: i, platform: linux/amd64}}}\n"
		"tasks:\n"
		"  a: {run: x, runtime_boundary: {filesystem: {repo_root_mode: read_only, writable_paths: [out]}}}\n"
		"  b: {run: y, depends_on: [a], runtime_boundary: {filesystem: {repo_root_mode: read_only, writable_paths: [out]}}}\n"
		"  c: {run: z, depends_on: [b], runtime_boundary: {filesystem: {repo_root_mode: read_only, writable_paths: [other]}}}\n";
	ota_contract *c = NULL;
	ota_error e;
	assert_ota(load_str(y, &c, &e), OTA_OK);
	ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, "c", NULL, 0);
	const json_t *g = json_object_get(ota_policy_effective_json(p), "boundary_groups");
	assert_int_equal(json_array_size(g), 2);
	assert_int_equal(json_array_size(json_array_get(g, 0)), 2); /* a and b share */
	assert_string_equal(json_string_value(json_array_get(json_array_get(g, 1), 0)), "task:c");
	/* an overlay that makes c equal to a and b merges the groups */
	const char *ov = "policies: {sandbox: {filesystem: {writable_paths: []}}}\n";
	ota_overlay *o = NULL;
	assert_ota(ota_overlay_load(ota_bytes_make(ov, strlen(ov)), "o", OTA_OVERLAY_FILE, &o, NULL), OTA_OK);
	const ota_overlay *ovs[1] = {o};
	ota_policy *q = test_policy_compile(c, OTA_LANE_TASK, "c", ovs, 1);
	assert_int_equal(json_array_size(json_object_get(ota_policy_effective_json(q), "boundary_groups")), 1);
	ota_policy_free(q);
	ota_overlay_free(o);
	ota_policy_free(p);
	ota_contract_free(c);
}

/* every upstream example lane: the recorded oci_local decision (linux/amd64) */
static void test_admission_vectors(void **state)
{
	(void)state;
	size_t n;
	uint8_t *raw = test_read_src("vectors/policy/admission-oci_local.json", &n);
	json_t *all = NULL;
	assert_ota(ota_json_parse(ota_bytes_make(raw, n), &all, NULL), OTA_OK);
	free(raw);
	ota_capability_descriptor d = oci();
	const char *file;
	json_t *lanes;
	size_t checked = 0;
	json_object_foreach(all, file, lanes) {
		char rel[1024];
		snprintf(rel, sizeof rel, "vectors/ota-examples/%s", file);
		ota_contract *c = load_src(rel);
		const char *key;
		json_t *want;
		json_object_foreach(lanes, key, want) {
			char lane[512];
			const char *colon = strchr(key, ':'), *sp = strchr(key, ' ');
			assert_non_null(colon);
			assert_non_null(sp);
			snprintf(lane, sizeof lane, "%.*s", (int)(sp - colon - 1), colon + 1);
			bool wf = strncmp(key, "workflow:", 9) == 0;
			bool agent = strstr(sp, "--agent") != NULL;
			ota_policy *p = test_policy_compile(
			        c, wf ? OTA_LANE_WORKFLOW : OTA_LANE_TASK, lane, NULL, 0);
			ota_admission_request r = {agent, agent ? NULL : "oci_local", &d, 1};
			json_t *out = NULL;
			bool ok = false;
			assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
			const char *dec = json_string_value(json_object_get(out, "decision"));
			if (strcmp(dec, json_string_value(json_object_get(want, "decision"))) != 0)
				fail_msg("%s %s: decision %s", file, key, dec);
			assert_int_equal(ok ? 0 : 1, json_integer_value(json_object_get(want, "exit")));
			const json_t *wk = json_object_get(want, "kind");
			if (wk != NULL)
				assert_string_equal(json_string_value(json_object_get(out, "kind")), json_string_value(wk));
			/* the sorted set of refused controls */
			{
				const json_t *wc = json_object_get(want, "refused_controls");
				json_t *got = json_array();
				size_t i;
				json_t *rf;
				json_array_foreach(json_object_get(out, "refusals"), i, rf) {
					const char *ctl = json_string_value(json_object_get(rf, "control"));
					bool seen = false;
					size_t k;
					json_t *g;
					json_array_foreach(got, k, g) seen = seen || strcmp(json_string_value(g), ctl) == 0;
					if (!seen)
						json_array_append_new(got, json_string(ctl));
				}
				assert_int_equal(json_array_size(got), wc ? json_array_size(wc) : 0);
				json_array_foreach(got, i, rf) {
					bool found = false;
					size_t k;
					json_t *g;
					json_array_foreach(wc, k, g) found = found || strcmp(json_string_value(g), json_string_value(rf)) == 0;
					if (!found)
						fail_msg("%s %s: unexpected refusal %s", file, key, json_string_value(rf));
				}
				json_decref(got);
			}
			json_decref(out);
			ota_policy_free(p);
			checked++;
		}
		ota_contract_free(c);
	}
	json_decref(all);
	assert_true(checked >= 400);
}

/* vectors/policy/invalid/<case>.yaml: first line "# expect: <error name> <line>:<column>" */
static void test_invalid_vectors(void **state)
{
	(void)state;
	char *dir = test_src_path("vectors/policy/invalid");
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	int count = 0;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".yaml") != 0)
			continue;
		char rel[600];
		snprintf(rel, sizeof rel, "vectors/policy/invalid/%s", de->d_name);
		size_t n;
		uint8_t *b = test_read_src(rel, &n);
		char name[100], pos[40], where[800];
		if (sscanf((const char *)b, "# expect: %99s %39s", name, pos) != 2)
			fail_msg("%s: no expect line", rel);
		ota_err want;
		assert_true(ota_err_from_name(name, &want));
		ota_contract *c = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_contract_load(ota_bytes_make(b, n), rel, &c, &e);
		free(b);
		if (rc != want)
			fail_msg("%s: want %s got %s (%s)", rel, name, ota_err_name(rc), e.what);
		assert_null(c);
		snprintf(where, sizeof where, "%s:%s", rel, pos);
		if (strcmp(e.where, where) != 0)
			fail_msg("%s: where '%s', want '%s'", rel, e.where, where);
		count++;
	}
	closedir(d);
	free(dir);
	assert_true(count >= 19);
}

/* ---- path sets: the same answers as path_within, pair by pair ---- */

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

static void random_paths(strv *v, char (*buf)[32], size_t n, uint32_t *seed)
{
	static const char *const comp[] = {"a", "b", "ab", "a.b"};
	v->n = 0;
	for (size_t i = 0; i < n; i++) {
		buf[i][0] = '\0';
		size_t depth = 1 + lcg(seed) % 4;
		for (size_t k = 0; k < depth; k++) {
			if (k > 0)
				strcat(buf[i], "/");
			strcat(buf[i], comp[lcg(seed) % 4]);
		}
		assert_true(strv_push(v, buf[i]));
	}
}

static void test_pathset_agrees(void **state)
{
	(void)state;
	static char ba[40][32], bb[40][32];
	strv a = {0}, b = {0};
	uint32_t seed = 7;
	for (int round = 0; round < 2000; round++) {
		random_paths(&a, ba, 1 + lcg(&seed) % 40, &seed);
		random_paths(&b, bb, lcg(&seed) % 40, &seed);
		pathset s;
		assert_true(pathset_build(&s, &b));
		for (size_t i = 0; i < a.n; i++) {
			bool any = false, proper = false;
			for (size_t j = 0; j < b.n; j++) {
				any = any || path_within(a.v[i], b.v[j]);
				proper = proper || (path_within(a.v[i], b.v[j]) && strcmp(a.v[i], b.v[j]) != 0);
			}
			assert_int_equal(pathset_covers(&s, a.v[i], false), any);
			assert_int_equal(pathset_covers(&s, a.v[i], true), proper);
		}
		pathset_free(&s);
		size_t wi = SIZE_MAX, wj = SIZE_MAX, fi, fj;
		for (size_t i = 0; i < a.n && wi == SIZE_MAX; i++)
			for (size_t j = 0; j < b.n && wi == SIZE_MAX; j++)
				if (path_within(a.v[i], b.v[j])) {
					wi = i;
					wj = j;
				}
		assert_int_equal(paths_first_within(&a, &b, &fi, &fj), wi != SIZE_MAX);
		if (wi != SIZE_MAX) {
			assert_int_equal(fi, wi);
			assert_int_equal(fj, wj);
		}
	}
	strv_free(&a);
	strv_free(&b);

	/* a boundary of 6,000 writable and 6,000 protected paths: the overlap
	 * of the last writable path is found and named */
	enum { NP = 6000 };
	size_t cap = (size_t)NP * 40 + 4096;
	char *y = malloc(cap);
	assert_non_null(y);
	snprintf(y, cap, HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      filesystem:\n"
	                      "        writable_paths: [");
	for (int i = 0; i < NP; i++)
		snprintf(y + strlen(y), cap - strlen(y), "%sw/%d", i ? ", " : "", i);
	snprintf(y + strlen(y), cap - strlen(y), ", p/%d/x]\n        protected_paths: [", NP - 1);
	for (int i = 0; i < NP; i++)
		snprintf(y + strlen(y), cap - strlen(y), "%sp/%d", i ? ", " : "", i);
	snprintf(y + strlen(y), cap - strlen(y), "]\n");
	ota_contract *c = NULL;
	ota_error e;
	assert_ota(load_str(y, &c, &e), OTA_ERR_POLICY_PATH_OVERLAP);
	assert_non_null(strstr(e.what, "'p/5999/x'"));
	assert_non_null(strstr(e.what, "'p/5999'"));
	free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upstream_examples),
		cmocka_unit_test(test_loader_refusals),
		cmocka_unit_test(test_alias_bomb_and_depth),
		cmocka_unit_test(test_pathset_agrees),
		cmocka_unit_test(test_identity_stability),
		cmocka_unit_test(test_overlays),
		cmocka_unit_test(test_meet_properties),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_admission_hooks_linear),
		cmocka_unit_test(test_descriptor_refusals),
		cmocka_unit_test(test_boundary_groups),
		cmocka_unit_test(test_admission_vectors),
		cmocka_unit_test(test_invalid_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
