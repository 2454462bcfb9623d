/*
 * fuzz_cbor_seq: the framing of a batch of attestations (ota_cbor_seq_split,
 * common/cbor.c; POST /v1/attestations with application/cbor-seq), on the
 * bytes of any client's body.
 *
 * Input: one byte (low 4 bits: the nesting limit, bits 4-7: the item cap
 * minus one), then the sequence.
 *
 * Invariants: accepted parts tile the input exactly, in order, each at
 * least one byte and each one whole item at the same nesting limit; past
 * the cap the answer is too_large with the cap framed; a malformed answer
 * names the offset where the first bad item starts, the items before it
 * frame on their own, and the item there does not skip.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/cbor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool whole(const uint8_t *p, size_t n, unsigned depth)
{
	ota_cbor_rd r = {p, n, 0};
	return ota_cbor_rd_skip(&r, depth) && r.off == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	unsigned depth = data[0] & 15u;
	size_t max = (size_t)(data[0] >> 4) + 1;
	const uint8_t *seq = data + 1;
	size_t len = size - 1, n = 99, bad = 99;
	ota_bytes part[16];
	ota_err rc = ota_cbor_seq_split(ota_bytes_make(seq, len), depth, part, max, &n, &bad);
	FZ_CHECK(n <= max);
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		FZ_CHECK(part[i].ptr == seq + off);
		FZ_CHECK(part[i].len >= 1 && part[i].len <= len - off);
		FZ_CHECK(whole(part[i].ptr, part[i].len, depth));
		off += part[i].len;
	}
	switch (rc) {
	case OTA_OK:
		FZ_CHECK(off == len && bad == 0);
		FZ_CHECK(len == 0 ? n == 0 : n >= 1);
		break;
	case OTA_ERR_TOO_LARGE:
		FZ_CHECK(n == max && off < len);
		break;
	case OTA_ERR_ATT_BATCH_MALFORMED: {
		FZ_CHECK(bad == off && off < len);
		ota_cbor_rd r = {seq + off, len - off, 0};
		FZ_CHECK(!ota_cbor_rd_skip(&r, depth));
		/* the whole items before it frame on their own */
		ota_bytes again[16];
		size_t n2 = 0, bad2 = 0;
		FZ_CHECK(ota_cbor_seq_split(ota_bytes_make(seq, off), depth, again, max, &n2, &bad2) ==
		         OTA_OK);
		FZ_CHECK(n2 == n);
		break;
	}
	default:
		/* no other answer is in the contract */
		FZ_CHECK(rc == OTA_OK || rc == OTA_ERR_TOO_LARGE || rc == OTA_ERR_ATT_BATCH_MALFORMED);
	}
	return 0;
}
