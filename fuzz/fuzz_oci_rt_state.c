/*
 * fuzz_oci_rt_state: the output of `runc state ID` / `crun state ID`
 * (oci_rt_state_parse, provider-oci/driver.c), which oci_local reads before
 * it kills, deletes or confirms the removal of a container: untrusted bytes
 * of a runtime binary. The input is the whole output.
 *
 * Invariants: a refusal is oci_runtime_state_invalid, names itself and
 * leaves status "" and pid 0; an accepted output is strict JSON (the
 * general parser agrees), an object whose id is the container's, whose
 * status is one the runtimes print and copied whole, whose pid is the
 * document's, in 1..INT_MAX (0..INT_MAX stopped); over the cap is refused.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_util.h"
#include "ota/json.h"
#include "ota/limits.h"

#include "../provider-oci/oci_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ID "ota-0123456789abcdef01234567"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > OTA_OCI_MAX_STATE_BYTES + 16)
		return 0;
	char status[32] = "x";
	long pid = -7;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = oci_rt_state_parse(ota_bytes_make(data, size), ID, status, &pid, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(rc == OTA_ERR_OCI_RUNTIME_STATE_INVALID);
		FZ_CHECK(status[0] == '\0' && pid == 0);
		return 0;
	}
	FZ_CHECK(size <= OTA_OCI_MAX_STATE_BYTES);
	json_t *v = NULL;
	FZ_CHECK(ota_json_parse(ota_bytes_make(data, size), &v, NULL) == OTA_OK);
	FZ_CHECK(json_is_object(v));
	FZ_CHECK(strcmp(json_string_value(json_object_get(v, "id")), ID) == 0);
	FZ_CHECK(strcmp(json_string_value(json_object_get(v, "status")), status) == 0);
	static const char *const known[] = {"creating", "created", "running",
	                                    "pausing",  "paused",  "stopped"};
	bool is_known = false;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		is_known = is_known || strcmp(status, known[i]) == 0;
	FZ_CHECK(is_known);
	FZ_CHECK(json_integer_value(json_object_get(v, "pid")) == (json_int_t)pid);
	FZ_CHECK(pid <= INT_MAX && pid >= (strcmp(status, "stopped") == 0 ? 0 : 1));
	json_decref(v);
	/* no pid out: the same verdict */
	ota_error_clear(&e);
	FZ_CHECK(oci_rt_state_parse(ota_bytes_make(data, size), ID, status, NULL, &e) == OTA_OK);
	return 0;
}
