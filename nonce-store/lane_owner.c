/*
 * nonce-store/lane_owner.c - the issuer named by a stored acceptance, for
 * the schema 1 -> 2 migration (store.c: migrate_v1). A bounded reader over
 * bytes this store wrote itself; it never follows a length past the end and
 * refuses indefinite lengths.
 */
#include <string.h>

#include "nonce_internal.h"
#include "ota/cbor.h"

enum { MAX_DEPTH = 16 };

bool nonce_acceptance_issuer(ota_bytes acceptance, char *out, size_t cap)
{
	if (out == NULL || cap == 0)
		return false;
	out[0] = '\0';
	if (acceptance.ptr == NULL)
		return false;
	ota_cbor_rd c = {acceptance.ptr, acceptance.len, 0};
	unsigned mt;
	uint64_t v;
	ota_bytes payload;
	/* 18([protected, unprotected, payload, signature]) */
	if (!ota_cbor_rd_head(&c, &mt, &v) || mt != OTA_CBOR_TAG || v != 18 ||
	    !ota_cbor_rd_head(&c, &mt, &v) || mt != OTA_CBOR_ARRAY || v != 4 ||
	    !ota_cbor_rd_skip(&c, MAX_DEPTH) || !ota_cbor_rd_skip(&c, MAX_DEPTH) ||
	    !ota_cbor_rd_head(&c, &mt, &v) || mt != OTA_CBOR_BSTR ||
	    !ota_cbor_rd_take(&c, v, &payload))
		return false;
	ota_cbor_rd p = {payload.ptr, payload.len, 0};
	uint64_t n;
	if (!ota_cbor_rd_head(&p, &mt, &n) || mt != OTA_CBOR_MAP)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		ota_bytes key, val;
		ota_cbor_rd save = p;
		if (!ota_cbor_rd_head(&p, &mt, &v))
			return false;
		bool is_issuer = mt == OTA_CBOR_TSTR && ota_cbor_rd_take(&p, v, &key) && key.len == 6 &&
		                 memcmp(key.ptr, "issuer", 6) == 0;
		if (!is_issuer) {
			p = save;
			if (!ota_cbor_rd_skip(&p, MAX_DEPTH) || !ota_cbor_rd_skip(&p, MAX_DEPTH))
				return false;
			continue;
		}
		if (!ota_cbor_rd_head(&p, &mt, &v) || mt != OTA_CBOR_TSTR || !ota_cbor_rd_take(&p, v, &val) ||
		    val.len >= cap || memchr(val.ptr, 0, val.len) != NULL)
			return false;
		memcpy(out, val.ptr, val.len);
		out[val.len] = '\0';
		return true;
	}
	return false;
}
