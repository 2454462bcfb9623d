/*
 * fuzz_archive: the strict ota.archive/v1 parser, then (when it parses) the
 * whole offline verification, pinned to the archive's own first trust-root
 * snapshot so that mutated archives reach the policy, trust, COSE,
 * challenge and reconciliation checks. Invariants: no crash, no leak, a
 * verdict with at least one named failure whenever it is not OTA_OK.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ota/archive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_archive *a = NULL;
	ota_error e;
	ota_error_clear(&e);
	if (ota_archive_parse(ota_bytes_make(data, size), &a, &e) != OTA_OK) {
		if (a != NULL || e.code == OTA_OK)
			abort();
		return 0;
	}
	const json_t *chain = json_object_get(ota_archive_json(a), "trust_chain");
	const char *first = json_string_value(json_array_get(chain, 0));
	uint8_t *pin = NULL;
	size_t pin_len = 0;
	if (first != NULL && ota_base64_decode(first, strlen(first), &pin, &pin_len) == OTA_OK) {
		ota_archive_verify_opts o;
		memset(&o, 0, sizeof o);
		o.pinned = ota_bytes_make(pin, pin_len);
		ota_archive_report *r = NULL;
		ota_err rc = ota_archive_verify(ota_bytes_make(data, size), &o, &r, NULL);
		if (r == NULL || (rc != OTA_OK && ota_archive_report_failure_count(r) == 0) ||
		    (rc == OTA_OK && ota_archive_report_failure_count(r) != 0))
			abort();
		json_t *j = ota_archive_report_json(r);
		json_decref(j);
		ota_archive_report_free(r);
	}
	free(pin);
	ota_archive_free(a);
	return 0;
}
