/*
 * Dry-run admission and the real run share one decision (seeds: "dry-run and
 * real execution return the same admission decision"): whatever
 * ota_policy_admit admits for oci_local, the runner maps onto a plan, and
 * for every network posture the runner cannot apply, admission refuses
 * first. The runner also refuses any admission that is not an oci_local
 * admission of the same effective policy.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/policy.h"
#include "ota/runner.h"

#define HEAD "version: 1\nproject: {name: agree}\n"
#define OCI_EXEC                                                                              \
	"execution:\n  supported: [container]\n  lifecycle: ephemeral\n"                       \
	"  backends: {container: {image: \"debian:bookworm-slim\", platform: linux/amd64}}\n"

static const struct {
	const char *boundary; /* the task's runtime_boundary (flow) */
	bool exact;           /* the runner refuses exactly when admission does */
} cases[] = {
	{"{filesystem: {repo_root_mode: read_only}, network: {default: deny}}", true},
	{"{filesystem: {repo_root_mode: read_only, writable_paths: [out], protected_paths: [ota.yaml]}, network: {default: deny}}", true},
	/* t2: network allow, or no network control at all */
	{"{filesystem: {repo_root_mode: read_only}, network: {default: allow}}", true},
	{"{filesystem: {repo_root_mode: read_only}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {default: deny, outbound_targets: [{kind: host, value: h}]}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {default: allow, outbound_targets: [{kind: host, value: h}]}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {outbound_targets: [{kind: host, value: h}]}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {default: allow, outbound_targets: [{kind: host, value: h, destination_constraint: {kind: downstream_host_allowlist, values: [h], source_posture: non_authoritative, enforcement: advisory_only}}]}}", true},
	{"{filesystem: {repo_root_mode: read_only}, network: {default: deny, outbound_targets: [{kind: host, value: h, destination_constraint: {kind: downstream_host_allowlist, values: [h], source_posture: non_authoritative, enforcement: advisory_only}}]}}", true},
	{"{network: {default: deny}}", true},
	/* admission is stricter than the plan here (an explicit read-only root) */
	{"{filesystem: {repo_root_mode: writable}, network: {default: deny}}", false},
};

static ota_capability_descriptor oci(const ota_platform *host)
{
	ota_capability_descriptor d;
	const char *t = ota_policy_builtin_descriptor("oci_local");
	assert_ota(ota_capability_descriptor_parse(ota_bytes_make(t, strlen(t)), host, &d, NULL),
	           OTA_OK);
	return d;
}

/* OTA_OK when the runner maps every segment of p onto a plan */
static ota_err plans(const ota_policy *p, ota_error *e)
{
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = "/nonexistent-repo";
	ro.rootfs = "/nonexistent-rootfs"; /* no image resolution: the plan only */
	const json_t *cs = json_object_get(ota_policy_canonical_json(p), "segments");
	const json_t *es = json_object_get(ota_policy_effective_json(p), "segments");
	for (size_t i = 0; i < json_array_size(es); i++) {
		ota_runner_plan *plan = NULL;
		ota_error_clear(e);
		ota_err rc = ota_runner_plan_new(json_array_get(cs, i), json_array_get(es, i), &ro, &plan,
		                                 e);
		ota_runner_plan_free(plan);
		if (rc != OTA_OK)
			return rc;
	}
	return OTA_OK;
}

static void test_admission_matches_runner(void **state)
{
	(void)state;
	ota_platform host;
	ota_platform_host(&host);
	ota_capability_descriptor d = oci(&host);
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	po.native_platform = host;
	size_t refused_both = 0, admitted_both = 0;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char y[2048];
		snprintf(y, sizeof y, HEAD OCI_EXEC "tasks:\n  t: {run: x, safe_for_agent: true, runtime_boundary: %s}\n",
		         cases[k].boundary);
		ota_contract *c = NULL;
		assert_ota(ota_contract_load(ota_bytes_make(y, strlen(y)), "a.yaml", &c, NULL), OTA_OK);
		ota_policy *p = NULL;
		assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "t", &po, NULL, 0, &p, NULL), OTA_OK);
		for (int agent = 0; agent < 2; agent++) {
			ota_admission_request r = {agent != 0, agent ? NULL : "oci_local", &d, 1};
			json_t *adm = NULL;
			bool admitted = false;
			assert_ota(ota_policy_admit(p, &r, &adm, &admitted, NULL), OTA_OK);
			ota_error e;
			ota_err prc = plans(p, &e);
			if (admitted && prc != OTA_OK)
				fail_msg("case %zu: dry run admits, the runner refuses: %s %s %s", k,
				         ota_err_name(prc), e.where, e.what);
			if (cases[k].exact && !admitted && prc == OTA_OK)
				fail_msg("case %zu: dry run refuses what the runner would run", k);
			if (admitted)
				admitted_both++;
			else if (prc != OTA_OK)
				refused_both++;
			json_decref(adm);
		}
		ota_policy_free(p);
		ota_contract_free(c);
	}
	/* linux/amd64 hosts admit the deny lanes; elsewhere everything is refused */
	if (strcmp(host.architecture, "amd64") == 0)
		assert_true(admitted_both >= 4);
	assert_true(refused_both >= 10);
}

/* the runner runs nothing that is not an oci_local admission of this policy */
static void test_runner_requires_admission(void **state)
{
	(void)state;
	ota_platform host = {"linux", "amd64", ""};
	ota_capability_descriptor d = oci(&host);
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	po.native_platform = host;
	const char *y = HEAD OCI_EXEC "tasks:\n"
		"  t: {run: x, safe_for_agent: true, runtime_boundary: {filesystem: {repo_root_mode: read_only}, network: {default: deny}}}\n"
		"  plain: {run: x, safe_for_agent: true}\n";
	ota_contract *c = NULL;
	assert_ota(ota_contract_load(ota_bytes_make(y, strlen(y)), "a.yaml", &c, NULL), OTA_OK);
	ota_policy *p = NULL, *plain = NULL;
	assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "t", &po, NULL, 0, &p, NULL), OTA_OK);
	assert_ota(ota_policy_compile(c, OTA_LANE_TASK, "plain", &po, NULL, 0, &plain, NULL), OTA_OK);
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = "/nonexistent-repo";
	ro.rootfs = "/nonexistent-rootfs";
	ro.oci.txn = "txn-agree";
	json_t *receipt = NULL;
	int status = 0;
	ota_error e;
	/* plain agent admission (not_required) is no oci_local admission */
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *adm = NULL;
	bool ok = false;
	assert_ota(ota_policy_admit(plain, &r, &adm, &ok, NULL), OTA_OK);
	assert_true(ok);
	assert_string_equal(json_string_value(json_object_get(adm, "decision")), "not_required");
	ota_error_clear(&e);
	assert_ota(ota_runner_run(plain, adm, &ro, &receipt, &status, &e), OTA_ERR_POLICY_REFUSED);
	assert_null(receipt);
	json_decref(adm);
	/* a refused admission */
	assert_ota(ota_policy_admit(plain, &(ota_admission_request){false, "oci_local", &d, 1}, &adm,
	                            &ok, NULL),
	           OTA_OK);
	assert_false(ok);
	ota_error_clear(&e);
	assert_ota(ota_runner_run(p, adm, &ro, &receipt, &status, &e), OTA_ERR_POLICY_REFUSED);
	assert_null(receipt);
	json_decref(adm);
	json_t *good = NULL;
	assert_ota(ota_policy_admit(p, &r, &good, &ok, NULL), OTA_OK);
	assert_true(ok);
	ota_error_clear(&e);
	assert_ota(ota_runner_run(plain, good, &ro, &receipt, &status, &e), OTA_ERR_ID_MISMATCH);
	assert_null(receipt);
	/* a forged decision without an admitted provider evaluation */
	json_t *forged = json_deep_copy(good);
	json_object_set_new(json_object_get(forged, "provider_evaluation"), "admitted", json_false());
	ota_error_clear(&e);
	assert_ota(ota_runner_run(p, forged, &ro, &receipt, &status, &e), OTA_ERR_POLICY_REFUSED);
	assert_null(receipt);
	json_decref(forged);
	json_decref(good);
	ota_policy_free(p);
	ota_policy_free(plain);
	ota_contract_free(c);
}

/*
 * A hook chosen by its parent's outcome (after_failure, after_always): the
 * runner runs the ordered segments and stops at the first failure, so it
 * would run an after_failure hook after a success and skip both kinds after
 * a failure. oci_local refuses such a lane before anything is prepared
 * (execution.hook_condition, on the hook's segment); after_success hooks,
 * which that order honours, stay admitted; a descriptor that declares
 * failure_hooks admits them, and oci_local's identity does not change.
 */
static void test_failure_hooks_refused(void **state)
{
	(void)state;
	ota_capability_descriptor d = test_policy_oci_descriptor();
	assert_false(d.failure_hooks);
	const char *y = HEAD OCI_EXEC
		"  runtime_boundary: {filesystem: {repo_root_mode: read_only, writable_paths: [out]}, network: {default: deny}}\n"
		"tasks:\n"
		"  t: {run: x, safe_for_agent: true, after_success: [s], after_failure: [f], after_always: [a]}\n"
		"  ok: {run: x, safe_for_agent: true, after_success: [s]}\n"
		"  only_always: {run: x, safe_for_agent: true, after_always: [a]}\n"
		"  s: {run: x, safe_for_agent: true}\n"
		"  f: {run: x, safe_for_agent: true}\n"
		"  a: {run: x, safe_for_agent: true}\n";
	ota_contract *c = test_contract_load(y, "hooks.yaml");
	static const struct {
		const char *lane;
		bool admitted;
		const char *refused_segment, *required;
	} want[] = {
		{"t", false, "task:f", "on_failure"},
		{"only_always", false, "task:a", "always"},
		{"ok", true, NULL, NULL},
	};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, want[k].lane, NULL, 0);
		for (int agent = 0; agent < 2; agent++) {
			ota_admission_request r = {agent != 0, agent ? NULL : "oci_local", &d, 1};
			json_t *adm = NULL;
			bool admitted = true;
			assert_ota(ota_policy_admit(p, &r, &adm, &admitted, NULL), OTA_OK);
			assert_int_equal(admitted, want[k].admitted);
			assert_int_equal(test_policy_has_refusal(adm, "execution.hook_condition"),
			                 !want[k].admitted);
			bool named = false;
			size_t i;
			json_t *rf;
			json_array_foreach(json_object_get(adm, "refusals"), i, rf) {
				const char *sid = json_string_value(json_object_get(rf, "segment_id"));
				const char *req = json_string_value(json_object_get(rf, "required"));
				assert_string_equal(json_string_value(json_object_get(rf, "capability")),
				                    "unsupported");
				if (want[k].refused_segment != NULL && sid != NULL &&
				    strcmp(sid, want[k].refused_segment) == 0 && req != NULL &&
				    strcmp(req, want[k].required) == 0)
					named = true;
			}
			assert_int_equal(named, !want[k].admitted);
			json_decref(adm);
		}
		ota_policy_free(p);
	}
	/* a target whose runner honours them admits the lane */
	char before[OTA_ID_LEN + 1], after[OTA_ID_LEN + 1];
	assert_ota(ota_capability_descriptor_identity(&d, before, NULL), OTA_OK);
	json_t *dj = ota_capability_descriptor_json(&d);
	assert_null(json_object_get(json_object_get(dj, "execution"), "failure_hooks"));
	json_object_set_new(json_object_get(dj, "execution"), "failure_hooks", json_true());
	char *txt = ota_json_dumps(dj, false);
	json_decref(dj);
	ota_capability_descriptor withh;
	ota_platform host = {"linux", "amd64", ""};
	assert_ota(ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &host, &withh, NULL),
	           OTA_OK);
	free(txt);
	assert_true(withh.failure_hooks);
	assert_ota(ota_capability_descriptor_identity(&withh, after, NULL), OTA_OK);
	assert_string_not_equal(before, after);
	ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, "t", NULL, 0);
	json_t *adm = NULL;
	bool admitted = false;
	assert_ota(ota_policy_admit(p, &(ota_admission_request){true, NULL, &withh, 1}, &adm,
	                            &admitted, NULL),
	           OTA_OK);
	assert_true(admitted);
	json_decref(adm);
	ota_policy_free(p);
	ota_contract_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admission_matches_runner),
		cmocka_unit_test(test_runner_requires_admission),
		cmocka_unit_test(test_failure_hooks_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
