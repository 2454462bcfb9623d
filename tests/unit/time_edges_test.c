/*
 * Time and integer edges of evidence verification: the time text of --at
 * (RFC 3339 forms, offsets, leap second, year limits, junk).
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/trust.h"

/* ---------- time text ---------- */

static ota_err tp(const char *s, int64_t *t)
{
	*t = -1;
	return ota_trust_time_parse(s, t);
}

static void test_time_text_edges(void **state)
{
	(void)state;
	int64_t t;
	/* epoch numbers */
	assert_ota(tp("0", &t), OTA_OK);
	assert_int_equal(t, 0);
	assert_ota(tp("999999999999999", &t), OTA_OK); /* 15 digits */
	assert_int_equal(t, 999999999999999LL);
	assert_ota(tp("1000000000000000", &t), OTA_ERR_TIME_FORMAT); /* 16 */
	assert_ota(tp("", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp(" 1767225600", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("1767225600 ", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("+1767225600", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("1767225600s", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("1.5", &t), OTA_ERR_TIME_FORMAT);
	/* RFC 3339 forms */
	assert_ota(tp("2026-01-01t00:00:00z", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(tp("2026-01-01T00:00:00+00:00", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(tp("2026-01-01T00:00:00-00:00", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(tp("2025-12-31T23:30:00-00:30", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(tp("2026-01-01T23:59:00+23:59", &t), OTA_OK);
	assert_int_equal(t, 1767225600);
	assert_ota(tp("2026-01-01 00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00Zjunk", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00Z ", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00.000Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00,5Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00+0100", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00+24:00", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:00+01:60", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T24:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:60:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:61Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-00-01T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-13-01T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-04-31T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-00T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-1-01T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:0xZ", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2000-02-29T00:00:00Z", &t), OTA_OK);       /* 400-year leap */
	assert_ota(tp("2100-02-29T00:00:00Z", &t), OTA_ERR_TIME_FORMAT); /* century */
	/* year limits: before the epoch is refused, 9999 is fine */
	assert_ota(tp("1970-01-01T00:00:00Z", &t), OTA_OK);
	assert_int_equal(t, 0);
	assert_ota(tp("1969-12-31T23:59:59Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("0000-01-01T00:00:00Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("1970-01-01T00:30:00+01:00", &t), OTA_ERR_TIME_FORMAT); /* 23:30 the day before */
	assert_ota(tp("9999-12-31T23:59:59Z", &t), OTA_OK);
	assert_int_equal(t, 253402300799LL);
	char buf[32];
	ota_trust_time_format(253402300799LL, buf);
	assert_string_equal(buf, "9999-12-31T23:59:59Z");
	ota_trust_time_format(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
}

/* A leap second is 23:59:60 UTC on the last day of a month, taken as
 * 23:59:59 (POSIX time has no 60th second); a 60th second anywhere else
 * is not a time. */
static void test_time_leap_second(void **state)
{
	(void)state;
	int64_t t, t59;
	assert_ota(tp("2016-12-31T23:59:59Z", &t59), OTA_OK);
	assert_ota(tp("2016-12-31T23:59:60Z", &t), OTA_OK);
	assert_int_equal(t, t59);
	assert_ota(tp("2017-01-01T00:59:60+01:00", &t), OTA_OK); /* the same second */
	assert_int_equal(t, t59);
	assert_ota(tp("2016-12-31T18:59:60-05:00", &t), OTA_OK);
	assert_int_equal(t, t59);
	assert_ota(tp("2026-06-30T23:59:60Z", &t), OTA_OK);
	assert_ota(tp("2026-02-28T23:59:60Z", &t), OTA_OK);
	/* not the end of a UTC day, or not the last day of a month */
	assert_ota(tp("2026-01-01T12:00:60Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-01-01T00:00:60Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2016-12-31T23:58:60Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2026-06-29T23:59:60Z", &t), OTA_ERR_TIME_FORMAT);
	assert_ota(tp("2016-12-31T23:59:60+01:00", &t), OTA_ERR_TIME_FORMAT); /* 22:59:60Z */
	assert_ota(tp("2024-02-28T23:59:60Z", &t), OTA_ERR_TIME_FORMAT);      /* leap year */
	assert_ota(tp("2024-02-29T23:59:60Z", &t), OTA_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_text_edges),
		cmocka_unit_test(test_time_leap_second),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
