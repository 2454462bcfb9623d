/*
 * fuzz_policy_yaml: ota.yaml bytes -> loader -> closure/canonical policy ->
 * admission, and the same bytes as a restriction overlay. Invariants: a
 * loaded contract yields valid identities; the normalised identity does not
 * depend on formatting (the same document re-emitted as YAML flow text
 * loads to the same contract identity); recompiling a lane gives the same
 * identity; admission always decides without starting anything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "../policy/ytree.h"
#include "ota/json.h"
#include "ota/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the same document as YAML flow text loads to the same contract identity */
static void reformatted(ota_bytes in, const ota_contract *c)
{
	ydoc *d = NULL;
	FZ_CHECK(ydoc_parse(in, "fz", &d, NULL) == OTA_OK); /* the loader parsed it */
	json_t *j = yn_to_json(ydoc_root(d));
	ydoc_free(d);
	FZ_CHECK(j != NULL);
	size_t n = 0;
	char *flow = fz_yaml_flow(j, &n);
	json_decref(j);
	FZ_CHECK(flow != NULL);
	if (n <= 1024u * 1024u) { /* alias expansions can be large: skip those */
		ota_contract *back = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_contract_load(ota_bytes_make(flow, n), "fuzz.yaml", &back, &e);
		if (rc != OTA_OK) {
			fprintf(stderr, "flow text refused (%s at %s: %s):\n%s\n", ota_err_name(rc),
			        e.where, e.what, flow);
			abort();
		}
		FZ_CHECK(strcmp(ota_contract_identity(back), ota_contract_identity(c)) == 0);
		ota_contract_free(back);
	}
	free(flow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_bytes in = ota_bytes_make(data, size);
	ota_contract *c = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_policy_options o;
	memset(&o, 0, sizeof o);
	strcpy(o.native_platform.os, "linux");
	strcpy(o.native_platform.architecture, "amd64");
	ota_overlay *ov = NULL;
	if (ota_overlay_load(in, "fuzz", OTA_OVERLAY_FILE, &ov, &e) == OTA_OK && ov != NULL &&
	    !ota_id_is_valid(ota_overlay_identity(ov)))
		abort();
	if (ota_contract_load(in, "fuzz.yaml", &c, &e) != OTA_OK) {
		if (c != NULL || e.code == OTA_OK)
			abort(); /* outputs cleared, an error named */
		ota_overlay_free(ov);
		return 0;
	}
	if (!ota_id_is_valid(ota_contract_identity(c)))
		abort();
	reformatted(in, c);
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	ota_capability_descriptor d;
	if (ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &o.native_platform, &d,
	                                    NULL) != OTA_OK)
		abort();
	size_t n = ota_contract_task_count(c);
	for (size_t i = 0; i < n && i < 8; i++) {
		const ota_overlay *ovs[1] = {ov};
		ota_policy *p = NULL, *q = NULL;
		ota_err r1 = ota_policy_compile(c, OTA_LANE_TASK, ota_contract_task_name(c, i), &o, ovs,
		                                ov ? 1 : 0, &p, NULL);
		ota_err r2 = ota_policy_compile(c, OTA_LANE_TASK, ota_contract_task_name(c, i), &o, ovs,
		                                ov ? 1 : 0, &q, NULL);
		if (r1 != r2)
			abort();
		if (r1 == OTA_OK) {
			if (strcmp(ota_policy_effective_identity(p), ota_policy_effective_identity(q)) != 0)
				abort();
			ota_admission_request r = {true, NULL, &d, 1};
			json_t *adm = NULL;
			bool ok = false;
			if (ota_policy_admit(p, &r, &adm, &ok, NULL) != OTA_OK)
				abort();
			if (!json_is_false(json_object_get(adm, "execution_started")))
				abort();
			json_decref(adm);
		}
		ota_policy_free(p);
		ota_policy_free(q);
	}
	for (size_t i = 0; i < ota_contract_workflow_count(c) && i < 4; i++) {
		ota_policy *p = NULL;
		if (ota_policy_compile(c, OTA_LANE_WORKFLOW, ota_contract_workflow_name(c, i), &o, NULL, 0,
		                       &p, NULL) == OTA_OK &&
		    !ota_id_is_valid(ota_policy_canonical_identity(p)))
			abort();
		ota_policy_free(p);
	}
	ota_overlay_free(ov);
	ota_contract_free(c);
	return 0;
}
