/*
 * Contract loading rules that keep names and execution truth honest: no NUL
 * or control character in keys and names, a documented cap on names (never
 * truncated into another's id), the selected execution mode as the backend,
 * typed workflow services, refused extends cycles, strings where strings
 * are required, an OCI target that never re-modes a native lane, and no key
 * inside a task or workflow that would be ignored (a boundary, an edge).
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/limits.h"
#include "ota/policy.h"

#define HEAD "version: 1\nproject: {name: c}\n"
#define OCI_EXEC                                                                              \
	"execution:\n  supported: [container]\n  lifecycle: ephemeral\n"                       \
	"  backends: {container: {image: \"debian:bookworm-slim\", platform: linux/amd64}}\n"
#define RB "runtime_boundary: {filesystem: {repo_root_mode: read_only}, network: {default: deny}}"

static ota_err load(const char *y, size_t n, ota_contract **c, ota_error *e)
{
	ota_error_clear(e);
	return ota_contract_load(ota_bytes_make(y, n), "c.yaml", c, e);
}

/* rc is want, and e names where (when where is not NULL); y: the contract */
static void is_refusal(ota_err rc, const ota_error *e, ota_err want, const char *where,
                       const char *y)
{
	if (rc != want)
		fail_msg("want %s, got %s (%s %s)\n%s", ota_err_name(want), ota_err_name(rc), e->where,
		         e->what, y);
	if (where != NULL && strcmp(e->where, where) != 0)
		fail_msg("where '%s', want '%s'", e->where, where);
}

static void refused(const char *y, size_t n, ota_err want, const char *where)
{
	ota_contract *c = NULL;
	ota_error e;
	ota_err rc = load(y, n, &c, &e);
	is_refusal(rc, &e, want, where, y);
	assert_null(c);
}

#define REFUSED(y, want, where) refused((y), strlen(y), (want), (where))

static ota_contract *loaded(const char *y)
{
	return test_contract_load(y, "c.yaml");
}

static ota_policy *compile(const ota_contract *c, ota_lane_kind k, const char *lane)
{
	return test_policy_compile(c, k, lane, NULL, 0);
}

/* p is refused by oci_local before its boundary (a pre-boundary action) */
static void refused_pre_boundary(const ota_policy *p)
{
	ota_capability_descriptor d = test_policy_oci_descriptor();
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *out = NULL;
	bool ok = true;
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_false(ok);
	assert_true(test_policy_has_refusal(out, "execution.pre_boundary_actions"));
	json_decref(out);
}

static const json_t *seg_exec(const ota_policy *p, size_t i)
{
	return json_object_get(json_array_get(json_object_get(ota_policy_canonical_json(p),
	                                                      "segments"),
	                                      i),
	                       "execution");
}

/* ---- t5: NUL and control characters ---- */

static void test_nul_and_control_characters(void **state)
{
	(void)state;
	/* "verify\0" would have shadowed verify (t5): refused where the scalar starts */
	const char nul_key[] = HEAD OCI_EXEC "tasks:\n"
	                       "  \"verify\\0\": {run: evil, safe_for_agent: true, " RB "}\n"
	                       "  verify: {run: ok, safe_for_agent: true, " RB "}\n";
	REFUSED(nul_key, OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:8:3");
	/* a NUL in a value too (every consumer reads C strings) */
	REFUSED(HEAD "tasks:\n  a: {run: \"ok\\0; rm -rf /\"}\n", OTA_ERR_YAML_CONTROL_CHAR,
	        "c.yaml:4:12");
	/* a raw NUL byte is not YAML at all */
	const char raw[] = HEAD "tasks:\n  a\0b: {run: x}\n";
	ota_contract *c = NULL;
	ota_error e;
	assert_int_not_equal(load(raw, sizeof raw - 1, &c, &e), OTA_OK);
	assert_null(c);
	/* control characters in keys: tab, escape, DEL, C1 (NEL, CSI) */
	const char *const keys[] = {"\\t", "\\e", "\\x7f", "\\N", "\\x9b"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		char y[300];
		snprintf(y, sizeof y, HEAD "tasks:\n  \"ver%sify\": {run: x}\n", keys[i]);
		REFUSED(y, OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:4:3");
	}
	/* invisible and bidirectional format characters: a name that prints
	 * as another (zero-width space, word joiner, BOM) or reorders what
	 * follows it (RLO, an isolate, RLM, ALM); in keys and in names */
	const char *const fmt[] = {"\u200b", "\u200f", "\u202e", "\u2066", "\u2069",
	                           "\u2060", "\ufeff", "\u061c"};
	for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
		char y[300];
		snprintf(y, sizeof y, HEAD "tasks:\n  \"ver%sify\": {run: x}\n", fmt[i]);
		REFUSED(y, OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:4:3");
		snprintf(y, sizeof y, HEAD "tasks:\n  a: {run: x, depends_on: [\"b%s\"]}\n  b: {run: y}\n",
		         fmt[i]);
		REFUSED(y, OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:4:28");
	}
	/* other non-ASCII letters, and free text with a mark, still load */
	ota_contract *intl = loaded(HEAD "tasks:\n  \"v\u00e9rifier\": {run: x}\n"
	                                 "  \"\u05d1\u05d3\u05d9\u05e7\u05d4\": {run: \"echo \u200f\u05d0\"}\n");
	ota_contract_free(intl);
	/* nested keys as well (a workflow, a context, a boundary field) */
	REFUSED(HEAD "workflows:\n  \"c\\ti\": {run: {task: a}}\ntasks:\n  a: {run: x}\n",
	        OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:4:3");
	REFUSED(HEAD "execution:\n  contexts:\n    \"b\\u0085x\": {backend: container}\n",
	        OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:5:5");
	/* names and identifiers in values: references, destinations, project */
	REFUSED(HEAD "tasks:\n  a: {run: x, depends_on: [\"b\\r\"]}\n  b: {run: y}\n",
	        OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:4:28");
	REFUSED(HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      network:\n"
	             "        outbound_targets: [{kind: host, value: \"evil\\nhost\"}]\n",
	        OTA_ERR_YAML_CONTROL_CHAR, "c.yaml:8:48");
	REFUSED("version: 1\nproject: {name: \"p\\x1b[31m\"}\n", OTA_ERR_YAML_CONTROL_CHAR,
	        "c.yaml:2:17");
	REFUSED(HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary: {filesystem: {writable_paths: [\"o\\nut\"]}}\n",
	        OTA_ERR_YAML_CONTROL_CHAR, NULL);
	/* free text keeps its newlines and tabs: scripts and command arguments */
	ota_contract *ok = loaded(HEAD "tasks:\n  a: {script: \"set -e\\n\\tmake\\n\"}\n"
	                               "  b: {command: {exe: sh, args: [\"-c\", \"a\\nb\"]}}\n");
	ota_contract_free(ok);
	/* overlays go through the same reader */
	const char *ov = "policies: {sandbox: {filesystem: {\"writable\\0_paths\": [x]}}}\n";
	ota_overlay *o = NULL;
	assert_ota(ota_overlay_load(ota_bytes_make(ov, strlen(ov)), "o", OTA_OVERLAY_FILE, &o, NULL),
	           OTA_ERR_YAML_CONTROL_CHAR);
	assert_null(o);
}

/* ---- t4: names are capped, ids never truncated ---- */

static void test_name_cap(void **state)
{
	(void)state;
	char name[OTA_MAX_NAME_BYTES + 2];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0'; /* OTA_MAX_NAME_BYTES + 1 bytes */
	char *y = malloc(4096);
	assert_non_null(y);
	snprintf(y, 4096, HEAD "tasks:\n  %s: {run: x}\n", name);
	REFUSED(y, OTA_ERR_CONTRACT_NAME_TOO_LONG, "c.yaml:4:3");
	snprintf(y, 4096, HEAD "execution:\n  contexts:\n    %s: {backend: container}\n", name);
	REFUSED(y, OTA_ERR_CONTRACT_NAME_TOO_LONG, "c.yaml:5:5");
	snprintf(y, 4096, HEAD "tasks:\n  a: {run: x}\nworkflows:\n  %s: {run: {task: a}}\n", name);
	REFUSED(y, OTA_ERR_CONTRACT_NAME_TOO_LONG, "c.yaml:6:3");
	/* the longest allowed names, two of them sharing a long prefix (t4: once
	 * truncated to the same id): every id and edge keeps the whole name */
	char a[OTA_MAX_NAME_BYTES + 1], b[OTA_MAX_NAME_BYTES + 1];
	memset(a, 'x', OTA_MAX_NAME_BYTES);
	a[OTA_MAX_NAME_BYTES] = '\0';
	memcpy(b, a, sizeof b);
	b[OTA_MAX_NAME_BYTES - 1] = 'y';
	snprintf(y, 4096,
	         HEAD "tasks:\n  %s: {run: x}\n  %s: {run: y}\n  top: {run: z, depends_on: [%s, %s]}\n",
	         a, b, a, b);
	ota_contract *c = loaded(y);
	ota_policy *p = compile(c, OTA_LANE_TASK, "top");
	assert_int_equal(ota_policy_segment_count(p), 3);
	char want[OTA_MAX_NAME_BYTES + 8];
	snprintf(want, sizeof want, "task:%s", a);
	assert_string_equal(ota_policy_segment_id(p, 0), want);
	snprintf(want, sizeof want, "task:%s", b);
	assert_string_equal(ota_policy_segment_id(p, 1), want);
	const json_t *edges = json_object_get(ota_policy_canonical_json(p), "edges");
	assert_int_equal(json_array_size(edges), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(edges, 1), "source")), want);
	assert_string_not_equal(ota_policy_segment_canonical_identity(p, 0),
	                        ota_policy_segment_canonical_identity(p, 1));
	ota_policy_free(p);
	ota_contract_free(c);
	free(y);
}

/* ---- t10: the selected mode is the backend; oci_local never re-modes it ---- */

#define T10_EXEC                                                                              \
	"execution:\n  supported: [container, native]\n  preferred: container\n"               \
	"  lifecycle: ephemeral\n  default_context: box\n"                                      \
	"  backends: {container: {image: \"debian:bookworm-slim\", platform: linux/amd64}}\n"   \
	"  contexts:\n    box: {backend: container, lifecycle: ephemeral}\n"                    \
	"    host: {backend: native}\n"

static void test_native_mode_not_remoded(void **state)
{
	(void)state;
	ota_contract *c = loaded(
		HEAD T10_EXEC "tasks:\n"
		"  dev:\n    safe_for_agent: true\n"
		"    execution: {default_mode: native, modes: {native: {run: ./install-on-host.sh}}}\n"
		"    " RB "\n"
		"  box:\n    safe_for_agent: true\n"
		"    execution: {default_mode: container, modes: {container: {run: make, context: box}, native: {run: make, context: host}}}\n"
		"    " RB "\n");
	ota_policy *p = compile(c, OTA_LANE_TASK, "dev");
	const json_t *x = seg_exec(p, 0);
	assert_string_equal(json_string_value(json_object_get(x, "backend")), "native");
	/* the container default context is not the native mode's context */
	assert_true(json_is_null(json_object_get(x, "context")));
	ota_capability_descriptor d = test_policy_oci_descriptor();
	for (int explicit_target = 0; explicit_target < 2; explicit_target++) {
		ota_admission_request r = {true, explicit_target ? "oci_local" : NULL, &d, 1};
		json_t *out = NULL;
		bool ok = true;
		assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
		assert_false(ok);
		assert_true(test_policy_has_refusal(out, "execution.backend"));
		assert_true(json_is_null(json_object_get(out, "provider_target")));
		json_decref(out);
	}
	ota_policy_free(p);
	/* a container mode stays a container lane and is admitted */
	p = compile(c, OTA_LANE_TASK, "box");
	x = seg_exec(p, 0);
	assert_string_equal(json_string_value(json_object_get(x, "backend")), "container");
	assert_string_equal(json_string_value(json_object_get(x, "context")), "box");
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *out = NULL;
	bool ok = false;
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_true(ok);
	json_decref(out);
	ota_policy_free(p);
	ota_contract_free(c);
	/* modes are backends; a lifecycle belongs to container execution only */
	REFUSED(HEAD "tasks:\n  a: {execution: {default_mode: vm}, run: x}\n", OTA_ERR_CONTRACT_VALUE,
	        "c.yaml:4:33");
	REFUSED(HEAD "tasks:\n  a: {execution: {modes: {vm: {run: x}}}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:4:27");
	REFUSED(HEAD "tasks:\n  a: {execution: {default_mode: native, modes: {native: {run: x, lifecycle: ephemeral}}}}\n",
	        OTA_ERR_CONTRACT_VALUE, NULL);
}

/* ---- minor: workflow services, extends cycles, strings ---- */

static void test_services_cycles_strings(void **state)
{
	(void)state;
	/* t9: a list would silently drop the required services and their refusal */
	REFUSED(HEAD "tasks:\n  t: {run: x}\nworkflows:\n  ci: {services: [db], run: {task: t}}\n",
	        OTA_ERR_CONTRACT_TYPE, "c.yaml:6:18");
	ota_contract *c = loaded(
		HEAD OCI_EXEC "tasks:\n  t: {run: x, safe_for_agent: true, " RB "}\n"
		"workflows:\n  ci: {services: {required: [db]}, run: {task: t}}\n");
	ota_policy *p = compile(c, OTA_LANE_WORKFLOW, "ci");
	refused_pre_boundary(p);
	ota_policy_free(p);
	ota_contract_free(c);
	/* t13: extends cycles (two contexts, and a context extending itself) */
	REFUSED(HEAD "execution:\n  default_context: a\n  contexts:\n    a: {extends: b}\n"
	             "    b: {extends: a, backend: container}\n"
	             "tasks:\n  t: {run: x}\n",
	        OTA_ERR_POLICY_CYCLE, "c.yaml:6:18");
	REFUSED(HEAD "execution:\n  contexts:\n    a: {extends: a}\n", OTA_ERR_POLICY_CYCLE,
	        "c.yaml:5:18");
	/* a long acyclic chain resolves through every link (no silent hop cap) */
	char *y = malloc(16384);
	assert_non_null(y);
	snprintf(y, 16384, HEAD "execution:\n  default_context: c0\n  contexts:\n");
	for (int i = 0; i < 40; i++)
		snprintf(y + strlen(y), 16384 - strlen(y), "    c%d: {extends: c%d}\n", i, i + 1);
	snprintf(y + strlen(y), 16384 - strlen(y),
	         "    c40: {backend: container, lifecycle: ephemeral, container: {image: i, platform: linux/amd64}}\n"
	         "tasks:\n  t: {run: x}\n");
	c = loaded(y);
	p = compile(c, OTA_LANE_TASK, "t");
	assert_string_equal(json_string_value(json_object_get(seg_exec(p, 0), "backend")), "container");
	assert_string_equal(json_string_value(json_object_get(seg_exec(p, 0), "image")), "i");
	ota_policy_free(p);
	ota_contract_free(c);
	free(y);
	/* long chains sharing their tails, each link a lookup: a chain of 3,000
	 * whose far end loops is refused at its first context, every context of
	 * a chain of 3,000 resolves to its root (the cycle check is one pass) */
	enum { LONG = 3000 };
	size_t cap = (size_t)LONG * 96 + 4096;
	y = malloc(cap);
	assert_non_null(y);
	snprintf(y, cap, HEAD "execution:\n  contexts:\n");
	for (int i = 0; i < LONG; i++)
		snprintf(y + strlen(y), cap - strlen(y), "    c%d: {extends: c%d}\n", i,
		         i + 1 < LONG ? i + 1 : LONG - 2);
	REFUSED(y, OTA_ERR_POLICY_CYCLE, "c.yaml:5:19");
	snprintf(y, cap, HEAD "execution:\n  contexts:\n");
	for (int i = 0; i < LONG - 1; i++)
		snprintf(y + strlen(y), cap - strlen(y), "    c%d: {extends: c%d}\n", i, i + 1);
	snprintf(y + strlen(y), cap - strlen(y),
	         "    c%d: {backend: container, lifecycle: ephemeral, container: {image: i, platform: linux/amd64}}\n"
	         "tasks:\n",
	         LONG - 1);
	for (int i = 0; i < LONG; i += 100)
		snprintf(y + strlen(y), cap - strlen(y), "  t%d: {run: x, context: c%d}\n", i, i);
	c = loaded(y);
	for (int i = 0; i < LONG; i += 100) {
		char lane[32];
		snprintf(lane, sizeof lane, "t%d", i);
		p = compile(c, OTA_LANE_TASK, lane);
		assert_string_equal(json_string_value(json_object_get(seg_exec(p, 0), "image")), "i");
		ota_policy_free(p);
	}
	ota_contract_free(c);
	free(y);
	/* strings where strings are required (the runner reads them as strings) */
	REFUSED(HEAD "tasks:\n  a: {run: 42}\n", OTA_ERR_CONTRACT_TYPE, "c.yaml:4:12");
	REFUSED(HEAD "tasks:\n  a: {script: true}\n", OTA_ERR_CONTRACT_TYPE, "c.yaml:4:15");
	REFUSED(HEAD "tasks:\n  a: {command: {exe: srv, args: [--port, 8080]}}\n",
	        OTA_ERR_CONTRACT_TYPE, "c.yaml:4:42");
	REFUSED(HEAD "tasks:\n  a: {command: {exe: 7}}\n", OTA_ERR_CONTRACT_TYPE, "c.yaml:4:22");
	REFUSED(HEAD "tasks:\n  a: {run: x}\nworkflows:\n  w: {run: 12}\n", OTA_ERR_CONTRACT_TYPE,
	        "c.yaml:6:12");
	c = loaded(HEAD "tasks:\n  a: {command: {exe: srv, args: [--port, \"8080\", '9090']}}\n"
	                "  b: {run: \"42\"}\n");
	p = compile(c, OTA_LANE_TASK, "a");
	const json_t *args = json_object_get(
		json_object_get(json_array_get(json_object_get(ota_policy_canonical_json(p), "segments"), 0),
		                "body"),
		"args");
	size_t i;
	const json_t *v;
	json_array_foreach(args, i, v) assert_true(json_is_string(v));
	ota_policy_free(p);
	ota_contract_free(c);
}

/* ---- keys nested in a task and a workflow: refused, never ignored ---- */

static void test_nested_keys_strict(void **state)
{
	(void)state;
	/* a boundary where none is read would be a narrowing that never applies */
	REFUSED(HEAD "tasks:\n  a:\n    run: x\n    execution: {" RB "}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:6:17");
	REFUSED(HEAD "tasks:\n  a:\n    execution:\n      default_mode: native\n"
	             "      modes: {native: {run: x, " RB "}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:7:32");
	REFUSED(HEAD "tasks:\n  a:\n    variants:\n      - {when: {os: linux}, run: x, " RB "}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:6:37");
	/* graph edges are the task's: in a branch or variant they would drop a step */
	REFUSED(HEAD "tasks:\n  b: {run: y}\n  a:\n    variants:\n      - {run: x, depends_on: [b]}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:7:18");
	REFUSED(HEAD "tasks:\n  b: {run: y}\n  a:\n    execution: {default_mode: native, modes: {native: {run: x, after_always: [b]}}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, NULL);
	/* a variant's condition is its os, nothing this loader would not test */
	REFUSED(HEAD "tasks:\n  a:\n    variants:\n      - {when: {os: linux, arch: arm64}, run: x}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:6:28");
	REFUSED(HEAD "tasks:\n  a:\n    variants: {when: {os: linux}, run: x}\n", OTA_ERR_CONTRACT_TYPE,
	        NULL);
	REFUSED(HEAD "tasks:\n  a:\n    variants: [run x]\n", OTA_ERR_CONTRACT_TYPE, NULL);
	/* workflow phases: a task or an action; services: required */
	REFUSED(HEAD "tasks:\n  t: {run: x}\nworkflows:\n  w: {run: {task: t, " RB "}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, "c.yaml:6:22");
	REFUSED(HEAD "tasks:\n  t: {run: x}\nworkflows:\n  w: {run: {task: t, action: ensure_file}}\n",
	        OTA_ERR_CONTRACT_VALUE, NULL);
	REFUSED(HEAD "tasks:\n  t: {run: x}\nworkflows:\n  w: {run: {task: t}, services: {required: [db], optional: [c]}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, NULL);

	/* an orchestrator reference, in execution or a mode branch (upstream's
	 * TaskModeBranchSpec has one too): {ref, mode}, ref declared */
#define ORCH "orchestrators: {devbox: {kind: devbox}}\n"
	REFUSED(HEAD ORCH "tasks:\n  a: {run: x, execution: {orchestrator: {ref: nix, mode: exec}}}\n",
	        OTA_ERR_CONTRACT_REFERENCE, "c.yaml:5:47");
	REFUSED(HEAD "tasks:\n  a: {run: x, execution: {orchestrator: {ref: devbox, mode: exec}}}\n",
	        OTA_ERR_CONTRACT_REFERENCE, NULL);
	REFUSED(HEAD ORCH "tasks:\n  a:\n    execution:\n      default_mode: native\n"
	             "      modes: {native: {run: x, orchestrator: {ref: nix, mode: task}}}\n",
	        OTA_ERR_CONTRACT_REFERENCE, "c.yaml:8:52");
	REFUSED(HEAD ORCH "tasks:\n  a: {run: x, execution: {orchestrator: {ref: devbox}}}\n",
	        OTA_ERR_CONTRACT_MISSING, NULL);
	REFUSED(HEAD ORCH "tasks:\n  a: {run: x, execution: {orchestrator: {mode: task}}}\n",
	        OTA_ERR_CONTRACT_MISSING, NULL);
	REFUSED(HEAD ORCH "tasks:\n  a: {run: x, execution: {orchestrator: {ref: devbox, mode: run}}}\n",
	        OTA_ERR_CONTRACT_VALUE, NULL);
	REFUSED(HEAD ORCH
	        "tasks:\n  a: {run: x, execution: {orchestrator: {ref: devbox, mode: exec, env: {}}}}\n",
	        OTA_ERR_CONTRACT_UNKNOWN_KEY, NULL);
	REFUSED(HEAD ORCH "tasks:\n  a: {run: x, execution: {orchestrator: devbox}}\n",
	        OTA_ERR_CONTRACT_TYPE, NULL);

	/* what upstream's examples hold still loads: variants with env and
	 * adapter_inputs, branches with context, env, runtime, lifecycle and
	 * an orchestrator */
	ota_contract *c = loaded(
		HEAD OCI_EXEC ORCH "tasks:\n"
		"  a:\n    safe_for_agent: true\n    " RB "\n"
		"    variants:\n"
		"      - {when: {os: windows}, command: {exe: py}}\n"
		"      - {when: {os: linux}, run: make, env: {K: v}, adapter_inputs: {}}\n"
		"      - {when: {os: linux}, command: {exe: late}}\n"
		"  b:\n    safe_for_agent: true\n    " RB "\n"
		"    execution:\n      default_mode: container\n      orchestrator: {ref: devbox, mode: task}\n"
		"      modes: {container: {run: make, lifecycle: ephemeral, env: {K: v}, runtime: {kind: service},"
		" orchestrator: {ref: devbox, mode: exec}}}\n"
		"  r:\n    safe_for_agent: true\n    " RB "\n"
		"    variants: [{when: {os: linux}, run: make, requirements: {tools: {make: {}}}}]\n"
		"workflows:\n  w: {prepare: {action: ensure_file}, run: {task: a}, services: {required: []}}\n");
	/* the first linux variant gives the body */
	ota_policy *p = compile(c, OTA_LANE_TASK, "a");
	assert_string_equal(json_string_value(json_object_get(seg_exec(p, 0), "kind")), "run");
	ota_policy_free(p);
	p = compile(c, OTA_LANE_TASK, "b");
	assert_string_equal(json_string_value(json_object_get(seg_exec(p, 0), "kind")), "run");
	ota_policy_free(p);
	/* a variant's requirements are the task's: refused before the boundary */
	p = compile(c, OTA_LANE_TASK, "r");
	refused_pre_boundary(p);
	ota_policy_free(p);
	ota_contract_free(c);
}

/* ---- hooks run after the task they follow, or the lane is refused ---- */

static void compile_refused(const char *y, const char *lane, ota_err want, const char *where)
{
	ota_contract *c = loaded(y);
	ota_policy_options o = test_policy_amd64();
	ota_policy *p = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_policy_compile(c, OTA_LANE_TASK, lane, &o, NULL, 0, &p, &e);
	is_refusal(rc, &e, want, where, y);
	assert_null(p);
	ota_contract_free(c);
}

static void test_hook_order(void **state)
{
	(void)state;
	/* a hook that is also a dependency: placed first, it cannot follow */
	compile_refused(HEAD "tasks:\n  h: {run: y}\n"
	                     "  a: {run: x, depends_on: [h], after_success: [h]}\n",
	                "a", OTA_ERR_POLICY_HOOK_ORDER, "c.yaml:5:47");
	/* through another dependency */
	compile_refused(HEAD "tasks:\n  h: {run: y}\n  b: {run: z, depends_on: [h]}\n"
	                     "  a: {run: x, depends_on: [b], after_always: [h]}\n",
	                "a", OTA_ERR_POLICY_HOOK_ORDER, NULL);
	/* one hook of two parents: it would run after the first only */
	compile_refused(HEAD "tasks:\n  h: {run: y}\n  p1: {run: a, after_success: [h]}\n"
	                     "  p2: {run: b, after_success: [h]}\n"
	                     "  a: {aggregate: {tasks: [p1, p2]}}\n",
	                "a", OTA_ERR_POLICY_HOOK_ORDER, NULL);
	/* a hook alone follows its parent */
	ota_contract *c = loaded(HEAD "tasks:\n  h: {run: y}\n  a: {run: x, after_success: [h]}\n");
	ota_policy *p = compile(c, OTA_LANE_TASK, "a");
	const json_t *segs = json_object_get(ota_policy_canonical_json(p), "segments");
	assert_int_equal(json_array_size(segs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(segs, 0), "task")), "a");
	assert_string_equal(json_string_value(json_object_get(json_array_get(segs, 1), "task")), "h");
	ota_policy_free(p);
	ota_contract_free(c);
}

/* ---- outbound target values: one spelling per destination, nothing "anywhere" ---- */

static char *target_contract(const char *kind, const char *value)
{
	static char y[1024];
	snprintf(y, sizeof y,
	         HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      network:\n"
	              "        outbound_targets: [{kind: %s, value: \"%s\"}]\n",
	         kind, value);
	return y;
}

static void test_outbound_target_values(void **state)
{
	(void)state;
	static const char *const ok[][2] = {
		{"host", "api.example.com"}, {"host", "staging.internal"}, {"host", "localhost"},
		{"host", "h1"}, {"host", "xn--bcher-kva.example"}, {"host", "a-b.c0"},
		{"host", "192.0.2.1"}, {"host", "10.0.0.255"}, {"host", "2001:db8::1"},
		{"host", "::1"}, {"domain", "example.org"}, {"domain", "api.stripe.com"},
		{"service_alias", "postgres"}, {"service_alias", "db_1"}, {"service_alias", "my.svc-2"},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		ota_contract *c = NULL;
		ota_error e;
		const char *y = target_contract(ok[i][0], ok[i][1]);
		ota_err rc = load(y, strlen(y), &c, &e);
		if (rc != OTA_OK)
			fail_msg("%s %s: %s %s %s", ok[i][0], ok[i][1], ota_err_name(rc), e.where, e.what);
		/* the canonical policy keeps the value as written */
		ota_policy *p = compile(c, OTA_LANE_TASK, "a");
		const json_t *t = json_array_get(
			json_object_get(
				json_object_get(
					json_object_get(json_array_get(json_object_get(
									       ota_policy_canonical_json(p),
									       "segments"),
					                               0),
					                "runtime_boundary"),
					"network"),
				"outbound_targets"),
			0);
		assert_string_equal(json_string_value(json_object_get(t, "value")), ok[i][1]);
		ota_policy_free(p);
		ota_contract_free(c);
	}
	static const char *const bad[][2] = {
		/* read as any destination */
		{"host", "*"}, {"host", "*.example.com"}, {"domain", "*"}, {"service_alias", "*"},
		{"host", "0.0.0.0"}, {"host", "::"}, {"host", "0.0.0.0/0"}, {"host", "192.0.2.0/24"},
		/* URLs, ports, paths */
		{"host", "http://a.example/"}, {"domain", "https://a.example"}, {"host", "a.example:443"},
		{"host", "[2001:db8::1]:443"}, {"host", "[::1]"}, {"host", "a.example/x"},
		/* a second spelling of one destination */
		{"host", "A.Example"}, {"domain", "Example.org"}, {"service_alias", "Postgres"},
		{"host", "a.example."}, {"host", "2001:DB8::1"}, {"host", "2001:db8:0:0:0:0:0:1"},
		{"host", "01.2.3.4"}, {"host", "::ffff:192.0.2.1x"},
		/* not a name or an address */
		{"host", "1.2.3"}, {"host", "256.1.1.1"}, {"host", "a.123"}, {"host", "-a.example"},
		{"host", "a-.example"}, {"host", "a..example"}, {"host", ".a.example"},
		{"host", "a_b.example"}, {"host", "a b"}, {"host", "ex\u00e4mple.com"},
		{"host", "@"}, {"host", "."},
		/* an address is a host, not a domain */
		{"domain", "192.0.2.1"}, {"domain", "::1"},
		{"service_alias", "-db"}, {"service_alias", "a/b"}, {"service_alias", "db:5432"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		/* where: the value itself (column 44 + the kind's length) */
		char where[32];
		snprintf(where, sizeof where, "c.yaml:8:%zu", 44 + strlen(bad[i][0]));
		REFUSED(target_contract(bad[i][0], bad[i][1]), OTA_ERR_POLICY_TARGET_INVALID, where);
	}
	/* a label of 64 characters, a name of 254 */
	char lab[80], name[300];
	memset(lab, 'a', 64);
	lab[64] = '\0';
	REFUSED(target_contract("host", lab), OTA_ERR_POLICY_TARGET_INVALID, NULL);
	lab[63] = '\0';
	ota_contract_free(loaded(target_contract("host", lab)));
	name[0] = '\0';
	for (int k = 0; k < 4; k++)
		strcat(strcat(name, k ? "." : ""), lab);  /* 4 * 63 + 3 = 255 */
	REFUSED(target_contract("domain", name), OTA_ERR_POLICY_TARGET_INVALID, NULL);
	name[253] = '\0'; /* 253, ending in a full label */
	ota_contract_free(loaded(target_contract("domain", name)));
	/* the message names the member and its index */
	const char *two = HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      network:\n"
	                       "        outbound_targets:\n          - {kind: host, value: ok.example}\n"
	                       "          - {kind: host, value: \"*\"}\n";
	ota_contract *c = NULL;
	ota_error e;
	assert_ota(load(two, strlen(two), &c, &e), OTA_ERR_POLICY_TARGET_INVALID);
	assert_string_equal(e.where, "c.yaml:10:33");
	assert_non_null(strstr(e.what, "outbound_targets[1].value '*'"));
	/* overlays go through the same reader */
	const char *ov = "policies: {sandbox: {network: {default: deny, outbound_targets: "
	                 "[{kind: host, value: \"http://a.example/\"}]}}}\n";
	ota_overlay *o = NULL;
	ota_error_clear(&e);
	assert_ota(ota_overlay_load(ota_bytes_make(ov, strlen(ov)), "o", OTA_OVERLAY_FILE, &o, &e),
	           OTA_ERR_POLICY_TARGET_INVALID);
	assert_null(o);
	assert_string_equal(e.where, "o:1:86");
	const char *ovok = "policies: {sandbox: {network: {default: deny, outbound_targets: "
	                   "[{kind: host, value: a.example}]}}}\n";
	assert_ota(ota_overlay_load(ota_bytes_make(ovok, strlen(ovok)), "o", OTA_OVERLAY_FILE, &o, NULL),
	           OTA_OK);
	ota_overlay_free(o);
}

/* A contract whose one outbound target carries a destination constraint of
 * kind ckind with the one value v (line 8); *col is the value's column. */
static char *constraint_contract(const char *ckind, const char *v, size_t *col)
{
	static char y[1024];
	snprintf(y, sizeof y,
	         HEAD "tasks:\n  a:\n    run: x\n    runtime_boundary:\n      network:\n"
	              "        outbound_targets: [{kind: domain, value: a.example, "
	              "destination_constraint: {kind: %s, values: [ok.example, \"%s\"], "
	              "source_posture: repo_local_authoritative, "
	              "enforcement: authoritative_app_enforced}}]\n",
	         ckind, v);
	if (col != NULL) {
		const char *line = strstr(y, "        outbound_targets");
		*col = (size_t)(strstr(line, ", \"") + 2 - line) + 1;
	}
	return y;
}

/*
 * Destination-constraint values that name hosts take the outbound targets'
 * grammar: callback_host_allowlist and downstream_host_allowlist values are
 * hosts (a name or a canonical address), recipient_domain_allowlist values
 * domains; wildcards, URLs, ports, ranges and a second spelling are
 * policy_target_invalid at the value. The other kinds (tenant and bucket
 * scopes, SMS destinations) are not host names and keep free strings.
 */
static void test_constraint_values(void **state)
{
	(void)state;
	static const char *const hostk[2] = {"callback_host_allowlist", "downstream_host_allowlist"};
	static const char *const ok_host[] = {"hooks.example.com", "localhost", "192.0.2.1",
	                                      "2001:db8::1", "xn--bcher-kva.example"};
	static const char *const bad_host[] = {
		"*", "*.example.com", "0.0.0.0", "::", "10.0.0.0/8", "https://hooks.example.com/cb",
		"hooks.example.com:443", "[::1]", "Hooks.Example.com", "a.example.", "2001:DB8::1",
		"01.2.3.4", "a_b.example", "a b", "ex\u00e4mple.com", "a..example"};
	static const char *const ok_dom[] = {"example.com", "internal.example", "mail.example.org"};
	static const char *const bad_dom[] = {"*", "*.example.com", "@example.com",
	                                      "user@example.com", "Example.com", "192.0.2.1",
	                                      "::1", "mailto:a@example.com", "example.com."};
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < sizeof ok_host / sizeof ok_host[0]; i++) {
			ota_contract *c = loaded(constraint_contract(hostk[k], ok_host[i], NULL));
			/* kept as written in the canonical policy */
			ota_policy *p = compile(c, OTA_LANE_TASK, "a");
			char *dump = json_dumps(ota_policy_canonical_json(p), JSON_COMPACT);
			char want[128];
			snprintf(want, sizeof want, "\"%s\"", ok_host[i]);
			assert_non_null(strstr(dump, want));
			free(dump);
			ota_policy_free(p);
			ota_contract_free(c);
		}
		for (size_t i = 0; i < sizeof bad_host / sizeof bad_host[0]; i++) {
			size_t col = 0;
			const char *y = constraint_contract(hostk[k], bad_host[i], &col);
			char where[32];
			snprintf(where, sizeof where, "c.yaml:8:%zu", col);
			REFUSED(y, OTA_ERR_POLICY_TARGET_INVALID, where);
		}
		/* an address is a host (not a domain) */
		ota_contract_free(loaded(constraint_contract(hostk[k], "10.1.2.3", NULL)));
	}
	for (size_t i = 0; i < sizeof ok_dom / sizeof ok_dom[0]; i++)
		ota_contract_free(loaded(constraint_contract("recipient_domain_allowlist", ok_dom[i], NULL)));
	for (size_t i = 0; i < sizeof bad_dom / sizeof bad_dom[0]; i++) {
		size_t col = 0;
		const char *y = constraint_contract("recipient_domain_allowlist", bad_dom[i], &col);
		char where[32];
		snprintf(where, sizeof where, "c.yaml:8:%zu", col);
		REFUSED(y, OTA_ERR_POLICY_TARGET_INVALID, where);
	}
	/* the message names the target, the value's index, the kind and why */
	ota_contract *c = NULL;
	ota_error e;
	const char *y = constraint_contract("callback_host_allowlist", "*", NULL);
	assert_ota(load(y, strlen(y), &c, &e), OTA_ERR_POLICY_TARGET_INVALID);
	assert_non_null(strstr(e.what, "outbound_targets[0].destination_constraint.values[1] '*'"));
	assert_non_null(strstr(e.what, "callback_host_allowlist"));
	assert_non_null(strstr(e.what, "wildcard"));
	/* the kinds whose values are not host names keep free strings */
	static const char *const freek[3] = {"tenant_scope", "bucket_scope",
	                                     "sms_destination_allowlist"};
	static const char *const freev[3] = {"acct_1", "s3://Bucket/*", "+15550100"};
	for (int k = 0; k < 3; k++)
		ota_contract_free(loaded(constraint_contract(freek[k], freev[k], NULL)));
	/* an empty value is still the constraint's own refusal */
	REFUSED(constraint_contract("callback_host_allowlist", "", NULL), OTA_ERR_POLICY_DESTINATION,
	        NULL);
	/* overlays go through the same reader */
	const char *ov = "policies: {sandbox: {network: {default: deny, outbound_targets: "
	                 "[{kind: domain, value: a.example, destination_constraint: {kind: "
	                 "downstream_host_allowlist, values: [\"*\"], source_posture: "
	                 "repo_local_authoritative, enforcement: authoritative_app_enforced}}]}}}\n";
	ota_overlay *o = NULL;
	ota_error_clear(&e);
	assert_ota(ota_overlay_load(ota_bytes_make(ov, strlen(ov)), "o", OTA_OVERLAY_FILE, &o, &e),
	           OTA_ERR_POLICY_TARGET_INVALID);
	assert_null(o);
	char ow[32];
	snprintf(ow, sizeof ow, "o:1:%zu", (size_t)(strstr(ov, "[\"*\"]") - ov) + 2);
	assert_string_equal(e.where, ow);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nul_and_control_characters),
		cmocka_unit_test(test_name_cap),
		cmocka_unit_test(test_native_mode_not_remoded),
		cmocka_unit_test(test_services_cycles_strings),
		cmocka_unit_test(test_nested_keys_strict),
		cmocka_unit_test(test_hook_order),
		cmocka_unit_test(test_outbound_target_values),
		cmocka_unit_test(test_constraint_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
