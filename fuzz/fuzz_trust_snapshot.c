/*
 * libFuzzer target: trust-root snapshot parsing (ota_trust_root_parse) and
 * everything that runs on a parsed snapshot: chain verification as a pinned
 * snapshot, self-verification, the rotation rule against itself,
 * serialization round trip (the identity must survive), summary and lookup.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ota/trust.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_trust_root *r = NULL;
	ota_error err;
	ota_error_clear(&err);
	/* as a pinned chain (deferred principal loading after the self-threshold) */
	ota_trust_verify_opts o = {.at = 1800000000};
	if (ota_trust_chain_verify(ota_bytes_make(data, size), NULL, 0, &o, &r, NULL) == OTA_OK) {
		if (r == NULL)
			abort();
		ota_trust_root_free(r);
		r = NULL;
	} else if (r != NULL) {
		abort();
	}
	if (ota_trust_root_parse(ota_bytes_make(data, size), &r, &err) != OTA_OK) {
		if (r != NULL || err.code == OTA_OK)
			abort(); /* outputs cleared, error recorded */
		return 0;
	}
	(void)ota_trust_root_verify_self(r, NULL);
	bool same = false;
	if (ota_trust_root_accept_next(r, r, &same, NULL) != OTA_OK || !same)
		abort();
	char *text = NULL;
	size_t len = 0;
	if (ota_trust_root_serialize(r, &text, &len, NULL) == OTA_OK) {
		ota_trust_root *back = NULL;
		if (ota_trust_root_parse(ota_bytes_make(text, len), &back, NULL) != OTA_OK ||
		    strcmp(ota_trust_root_identity(back), ota_trust_root_identity(r)) != 0 ||
		    ota_trust_root_signature_count(back) != ota_trust_root_signature_count(r))
			abort();
		ota_trust_root_free(back);
		free(text);
	}
	json_decref((json_t *)ota_trust_root_summary(r, 1800000000));
	uint8_t kid[32] = {0};
	if (size >= 32)
		memcpy(kid, data + size - 32, 32);
	ota_trust_scope_req sc = {"acme/x", "ci", "oci_local"};
	const ota_key *k = NULL;
	(void)ota_trust_lookup(r, ota_bytes_make(kid, 32), OTA_ALG_ES256, OTA_TRUST_ROLE_RUNNER, &sc,
	                       1800000000, &k, NULL, NULL);
	ota_trust_root_free(r);
	return 0;
}
