/*
 * fuzz_lane_owner: the issuer claim read back from an acceptance stored in
 * a nonce store of schema 1 (nonce_acceptance_issuer, nonce-store/
 * lane_owner.c), for the migration to schema 2: sqlite rows read back,
 * whatever wrote the database file. The input is the stored blob.
 *
 * Invariants: bounded reads (ASan); a found issuer is NUL-free and fits the
 * buffer; the same bytes give the same issuer with a larger buffer, and a
 * buffer too small for it refuses instead of cutting it.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/limits.h"

#include "../nonce-store/nonce_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > OTA_MAX_HTTP_BODY_BYTES)
		return 0;
	char out[OTA_MAX_ISSUER_BYTES + 1], big[4 * OTA_MAX_ISSUER_BYTES];
	memset(out, 'x', sizeof out);
	bool got = nonce_acceptance_issuer(ota_bytes_make(data, size), out, sizeof out);
	bool got_big = nonce_acceptance_issuer(ota_bytes_make(data, size), big, sizeof big);
	if (got) {
		size_t n = strnlen(out, sizeof out);
		FZ_CHECK(n < sizeof out);
		FZ_CHECK(got_big && strcmp(out, big) == 0);
		char tiny[4];
		bool got_tiny = nonce_acceptance_issuer(ota_bytes_make(data, size), tiny, sizeof tiny);
		FZ_CHECK(got_tiny == (n < sizeof tiny));
		if (got_tiny)
			FZ_CHECK(strcmp(tiny, out) == 0);
	} else {
		FZ_CHECK(out[0] == '\0');
		if (got_big)
			FZ_CHECK(strlen(big) >= sizeof out - 1);
	}
	FZ_CHECK(!nonce_acceptance_issuer(ota_bytes_make(data, size), out, 0));
	return 0;
}
