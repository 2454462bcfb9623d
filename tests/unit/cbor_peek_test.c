/*
 * The bounded CBOR peek (ota_cbor_rd_*, common/cbor.c) that archive
 * verification and the nonce store's schema migration use to pick a value
 * before or without a strict parse: it walks what the writer writes, never
 * reads past the end, and refuses indefinite lengths, counts that cannot fit
 * (a map head of 2^63 entries, whose doubled count wraps to 0 in 64 bits)
 * and nesting past its limit.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#include "ota/cbor.h"

static bool skips(const uint8_t *p, size_t n, unsigned depth, size_t *end)
{
	ota_cbor_rd r = {p, n, 0};
	bool ok = ota_cbor_rd_skip(&r, depth);
	*end = r.off;
	return ok;
}

static void test_walks_what_the_writer_writes(void **state)
{
	(void)state;
	ota_cbor_wr w = {0};
	ota_cbor_head(&w, OTA_CBOR_TAG, 18);
	ota_cbor_head(&w, OTA_CBOR_MAP, 3);
	ota_cbor_int(&w, 6);
	ota_cbor_int(&w, 1800000000);
	ota_cbor_text(&w, "issuer");
	ota_cbor_text(&w, "issuer:acme");
	ota_cbor_int(&w, -7);
	ota_cbor_head(&w, OTA_CBOR_ARRAY, 2);
	ota_cbor_bstr(&w, (const uint8_t *)"\x01\x02", 2);
	ota_cbor_null(&w);
	ota_cbor_int(&w, 42); /* the next item */
	assert_false(w.oom);
	size_t end = 0;
	assert_true(skips(w.p, w.len, 16, &end));
	assert_int_equal(end, w.len - 2); /* stops before the next item (0x18 0x2a) */
	ota_cbor_rd r = {w.p, w.len, end};
	unsigned mt = 9;
	uint64_t v = 0;
	assert_true(ota_cbor_rd_head(&r, &mt, &v));
	assert_int_equal(mt, OTA_CBOR_UINT);
	assert_int_equal(v, 42);
	assert_false(ota_cbor_rd_head(&r, &mt, &v)); /* at the end */
	/* take: in bounds only */
	ota_cbor_rd t = {w.p, w.len, w.len - 1};
	ota_bytes b;
	assert_true(ota_cbor_rd_take(&t, 1, &b));
	assert_int_equal(b.len, 1);
	assert_false(ota_cbor_rd_take(&t, 1, &b));
	free(w.p);
}

static void test_refuses_what_cannot_fit(void **state)
{
	(void)state;
	size_t end;
	/* a map of 2^63 entries: 2 * 2^63 wraps to 0 in 64 bits */
	static const uint8_t wrap[] = {0xbb, 0x80, 0, 0, 0, 0, 0, 0, 0};
	assert_false(skips(wrap, sizeof wrap, 16, &end));
	/* an array or map longer than the bytes left, a string past the end */
	static const uint8_t arr[] = {0x9a, 0x00, 0x01, 0x00, 0x00, 0x01};
	assert_false(skips(arr, sizeof arr, 16, &end));
	static const uint8_t map[] = {0xa2, 0x01};
	assert_false(skips(map, sizeof map, 16, &end));
	static const uint8_t str[] = {0x65, 'a', 'b'};
	assert_false(skips(str, sizeof str, 16, &end));
	static const uint8_t big[] = {0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_false(skips(big, sizeof big, 16, &end));
	/* a head cut short, indefinite lengths, reserved additional information */
	static const uint8_t cut[] = {0x19, 0x01};
	assert_false(skips(cut, sizeof cut, 16, &end));
	static const uint8_t indef[] = {0x9f, 0x01, 0xff};
	assert_false(skips(indef, sizeof indef, 16, &end));
	static const uint8_t reserved[] = {0x1c};
	assert_false(skips(reserved, sizeof reserved, 16, &end));
	assert_false(skips(NULL, 0, 16, &end));
}

static void test_depth(void **state)
{
	(void)state;
	uint8_t deep[40];
	for (size_t i = 0; i < 39; i++)
		deep[i] = 0x81; /* [[[ ... */
	deep[39] = 0x00;
	size_t end;
	assert_true(skips(deep, sizeof deep, 39, &end));
	assert_int_equal(end, sizeof deep);
	assert_false(skips(deep, sizeof deep, 38, &end));
	static const uint8_t tags[] = {0xc1, 0xc1, 0xc1, 0x00};
	assert_true(skips(tags, sizeof tags, 3, &end));
	assert_false(skips(tags, sizeof tags, 2, &end));
}

/* RFC 8742 sequences: whole items one after the other, framed without
 * judging them; the count is capped, a cut item names its offset. */
static void test_sequence_framing(void **state)
{
	(void)state;
	ota_bytes part[4];
	size_t n = 9, bad = 9;
	/* 1, "ab", [2, {3: h'04'}], simple 22 (null) */
	static const uint8_t seq[] = {0x01, 0x62, 'a', 'b', 0x82, 0x02, 0xa1, 0x03, 0x41, 0x04, 0xf6};
	assert_ota(ota_cbor_seq_split(ota_bytes_make(seq, sizeof seq), 4, part, 4, &n, &bad), OTA_OK);
	assert_int_equal(n, 4);
	assert_int_equal(bad, 0);
	assert_ptr_equal(part[0].ptr, seq);
	assert_int_equal(part[0].len, 1);
	assert_ptr_equal(part[1].ptr, seq + 1);
	assert_int_equal(part[1].len, 3);
	assert_ptr_equal(part[2].ptr, seq + 4);
	assert_int_equal(part[2].len, 6);
	assert_ptr_equal(part[3].ptr, seq + 10);
	assert_int_equal(part[3].len, 1);
	/* no bytes: an empty sequence (the caller decides whether that is allowed) */
	assert_ota(ota_cbor_seq_split(ota_bytes_make(seq, 0), 4, part, 4, &n, &bad), OTA_OK);
	assert_int_equal(n, 0);
	/* one item more than max: too large, with max framed */
	assert_ota(ota_cbor_seq_split(ota_bytes_make(seq, sizeof seq), 4, part, 3, &n, &bad),
	           OTA_ERR_TOO_LARGE);
	assert_int_equal(n, 3);
	/* the last item cut short: malformed at its offset, the whole ones counted */
	assert_ota(ota_cbor_seq_split(ota_bytes_make(seq, sizeof seq - 2), 4, part, 4, &n, &bad),
	           OTA_ERR_ATT_BATCH_MALFORMED);
	assert_int_equal(n, 2);
	assert_int_equal(bad, 4);
	/* nesting past max_depth: [2, {3: h'04'}] needs 2 levels */
	assert_ota(ota_cbor_seq_split(ota_bytes_make(seq, sizeof seq), 1, part, 4, &n, &bad),
	           OTA_ERR_ATT_BATCH_MALFORMED);
	assert_int_equal(n, 2);
	assert_int_equal(bad, 4);
	/* an indefinite-length item or a lone break byte is never whole */
	static const uint8_t indef[] = {0x01, 0x5f, 0x41, 0x00, 0xff};
	assert_ota(ota_cbor_seq_split(ota_bytes_make(indef, sizeof indef), 4, part, 4, &n, &bad),
	           OTA_ERR_ATT_BATCH_MALFORMED);
	assert_int_equal(bad, 1);
	static const uint8_t brk[] = {0xff};
	assert_ota(ota_cbor_seq_split(ota_bytes_make(brk, 1), 4, part, 4, &n, &bad),
	           OTA_ERR_ATT_BATCH_MALFORMED);
	assert_int_equal(n, 0);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walks_what_the_writer_writes),
		cmocka_unit_test(test_refuses_what_cannot_fit),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_sequence_framing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
