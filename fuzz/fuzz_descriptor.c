/*
 * fuzz_descriptor: capability descriptors as external providers hand them
 * in (ota_capability_descriptor_parse, `--descriptor FILE`; docs/policy.md
 * section 7), then admission of fixed lanes against what parses.
 *
 * Invariants: a refusal names itself and leaves *out zeroed; what parses
 * re-emits (ota_capability_descriptor_json) to JSON that parses back to the
 * same descriptor with the same identity; admission with it, alone or
 * beside oci_local's, explicit or automatic, always decides (OTA_OK, a
 * decision object, execution_started false) and admits only when the
 * descriptor enforces what it is judged on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/json.h"
#include "ota/policy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char contract_yaml[] =
	"version: 1\n"
	"project: {name: fz}\n"
	"execution:\n"
	"  preferred: container\n"
	"  lifecycle: ephemeral\n"
	"  backends:\n"
	"    container: {image: debian:bookworm-slim, platform: linux/amd64}\n"
	"tasks:\n"
	"  build:\n"
	"    run: make\n"
	"    safe_for_agent: true\n"
	"    runtime_boundary:\n"
	"      filesystem: {repo_root_mode: read_only, writable_paths: [build],\n"
	"                   protected_paths: [build/keep]}\n"
	"      network: {default: deny}\n"
	"  fetch:\n"
	"    command: {exe: curl, args: [https://example.org]}\n"
	"    safe_for_agent: true\n"
	"    runtime_boundary:\n"
	"      filesystem: {repo_root_mode: read_only}\n"
	"      network:\n"
	"        default: allow\n"
	"        outbound_targets:\n"
	"          - {kind: host, value: example.org, destination_shape: single_purpose_host}\n"
	"  plain:\n"
	"    run: \"true\"\n"
	"    safe_for_agent: true\n";

static ota_policy *g_lanes[3];
static ota_capability_descriptor g_oci;
static ota_platform g_host;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static ota_contract *c; /* lives as long as the policies that borrow it */
	ota_policy_options o;
	memset(&o, 0, sizeof o);
	strcpy(g_host.os, "linux");
	strcpy(g_host.architecture, "amd64");
	o.native_platform = g_host;
	FZ_CHECK(ota_contract_load(ota_bytes_make(contract_yaml, strlen(contract_yaml)), "fz.yaml",
	                           &c, NULL) == OTA_OK);
	static const char *const lanes[3] = {"build", "fetch", "plain"};
	for (size_t i = 0; i < 3; i++)
		FZ_CHECK(ota_policy_compile(c, OTA_LANE_TASK, lanes[i], &o, NULL, 0, &g_lanes[i],
		                            NULL) == OTA_OK);
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	FZ_CHECK(ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &g_host, &g_oci,
	                                         NULL) == OTA_OK);
	return 0;
}

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* true when admitted */
static bool admit(const ota_policy *p, const ota_admission_request *r)
{
	json_t *adm = NULL;
	bool ok = true;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_policy_admit(p, r, &adm, &ok, &e);
	if (rc != OTA_OK) {
		/* only a request naming two targets alike may fail, and by name */
		fz_refusal(rc, &e);
		FZ_CHECK(adm == NULL);
		return false;
	}
	FZ_CHECK(json_is_object(adm));
	FZ_CHECK(json_is_false(json_object_get(adm, "execution_started")));
	json_decref(adm);
	return ok;
}

static bool enforces(const ota_capability_descriptor *d, ota_control c)
{
	return d->controls[c] == OTA_CAP_ENFORCED;
}

static bool runs_amd64(const ota_capability_descriptor *d)
{
	for (size_t i = 0; i < d->nplatforms; i++)
		if (strcmp(d->platforms[i].os, "linux") == 0 &&
		    strcmp(d->platforms[i].architecture, "amd64") == 0)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_capability_descriptor d, back;
	ota_error e;
	ota_error_clear(&e);
	memset(&d, 0xa5, sizeof d);
	ota_err rc = ota_capability_descriptor_parse(ota_bytes_make(data, size), &g_host, &d, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(is_zero(&d, sizeof d));
		return 0;
	}
	char id[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	FZ_CHECK(ota_capability_descriptor_identity(&d, id, NULL) == OTA_OK && ota_id_is_valid(id));

	/* the identified JSON parses back to the same descriptor */
	json_t *j = ota_capability_descriptor_json(&d);
	FZ_CHECK(j != NULL);
	char *text = NULL;
	size_t n = 0;
	FZ_CHECK(ota_jcs_serialize(j, &text, &n, NULL) == OTA_OK);
	json_decref(j);
	rc = ota_capability_descriptor_parse(ota_bytes_make(text, n), NULL, &back, &e);
	if (rc != OTA_OK) {
		fprintf(stderr, "re-emitted descriptor refused (%s at %s: %s): %s\n",
		        ota_err_name(rc), e.where, e.what, text);
		abort();
	}
	free(text);
	FZ_CHECK(memcmp(&d, &back, sizeof d) == 0);
	FZ_CHECK(ota_capability_descriptor_identity(&back, id2, NULL) == OTA_OK);
	FZ_CHECK(strcmp(id, id2) == 0);

	/* admission decides, whatever the descriptor says */
	ota_capability_descriptor two[2] = {g_oci, d};
	for (size_t i = 0; i < 3; i++) {
		ota_admission_request alone = {true, NULL, &d, 1};
		ota_admission_request named = {true, d.target, two, 2};
		ota_admission_request human = {false, d.target, &d, 1};
		ota_admission_request both = {true, NULL, two, 2};
		bool ok = admit(g_lanes[i], &alone);
		/* fail closed: admitted alone, the descriptor enforces the lane */
		if (ok && i < 2)
			FZ_CHECK(d.backend_container && d.lifecycle_ephemeral && runs_amd64(&d) &&
			         enforces(&d, OTA_CTL_FS_READ_ONLY_ROOT) &&
			         (i == 0 ? d.kind_run && enforces(&d, OTA_CTL_FS_WRITABLE_PATHS) &&
			                           enforces(&d, OTA_CTL_FS_PROTECTED_PATHS) &&
			                           enforces(&d, OTA_CTL_FS_PROTECTED_UNDER_WRITABLE) &&
			                           enforces(&d, OTA_CTL_NET_EXTERNAL_DENY)
			                 : d.kind_command && enforces(&d, OTA_CTL_NET_TARGET_ALLOWLIST)));
		admit(g_lanes[i], &named);
		admit(g_lanes[i], &human);
		admit(g_lanes[i], &both);
	}
	return 0;
}
