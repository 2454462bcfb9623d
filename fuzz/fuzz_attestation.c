/*
 * fuzz_attestation: the strict attestation payload parser
 * (ota_attestation_parse) and, for what parses, the encoder round trip:
 * encode(parse(x)) must parse again to the same claims.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_attestation a, b;
	ota_error e;
	ota_error_clear(&e);
	if (ota_attestation_parse(ota_bytes_make(data, size), &a, &e) != OTA_OK) {
		if (e.code == OTA_OK)
			abort(); /* a refusal always names itself */
		return 0;
	}
	uint8_t *enc = NULL;
	size_t n = 0;
	if (ota_attestation_encode(&a, &enc, &n) != OTA_OK)
		abort();
	if (ota_attestation_parse(ota_bytes_make(enc, n), &b, NULL) != OTA_OK)
		abort();
	if (strcmp(a.iss, b.iss) != 0 || a.exp != b.exp || a.iat != b.iat ||
	    a.nonce_len != b.nonce_len || memcmp(a.nonce, b.nonce, a.nonce_len) != 0 ||
	    strcmp(a.txn, b.txn) != 0 || strcmp(a.prior, b.prior) != 0 ||
	    a.body.len != b.body.len || memcmp(a.body.ptr, b.body.ptr, a.body.len) != 0)
		abort();
	free(enc);
	return 0;
}
