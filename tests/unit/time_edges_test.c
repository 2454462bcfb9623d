/*
 * Time and integer edges of evidence verification: the time text of --at
 * (RFC 3339 forms, offsets, leap second, year limits, junk), the CBOR
 * decoding of iat/exp (integers above INT64_MAX, negative, floats, tagged
 * dates), the boundaries of admission (exactly at exp, at the edge of
 * max_age and max_skew), of the nonce store (exactly at expires_at, a clock
 * that went back before the issue) and of key validity, and that the
 * endpoint admits nothing `ota-verify archive` would later call not fresh
 * (iat before the challenge, a skew above the archive's 30 s).
 */
#include "attestd_client.h"
#include "test_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/attestd.h"
#include "ota/cose.h"
#include "ota/trust.h"

#define NOW 1800000000

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

/* ---------- CBOR claims: iat/exp as anything but a uint seconds ---------- */

#define IAT_MARK 0x01234567 /* encoded 1a 01 23 45 67 after key 06 */

/* A payload with every required claim, its iat replaced by the CBOR item
 * repl (n bytes); parsed. */
static ota_err parse_with_iat(const uint8_t *repl, size_t n, ota_attestation *out)
{
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "issuer:acme");
	snprintf(a.kind, sizeof a.kind, "initial_application");
	snprintf(a.txn, sizeof a.txn, "txn-1");
	snprintf(a.trust_root, sizeof a.trust_root, "sha256:%064d", 1);
	snprintf(a.provider, sizeof a.provider, "oci_remote");
	snprintf(a.boundary, sizeof a.boundary, "b1");
	a.nonce_len = 16;
	a.iat = IAT_MARK;
	a.exp = IAT_MARK + 60;
	uint8_t *p = NULL;
	size_t len = 0;
	assert_ota(ota_attestation_encode(&a, &p, &len), OTA_OK);
	static const uint8_t mark[] = {0x06, 0x1a, 0x01, 0x23, 0x45, 0x67};
	size_t at = SIZE_MAX;
	for (size_t i = 0; i + sizeof mark <= len; i++)
		if (memcmp(p + i, mark, sizeof mark) == 0) {
			assert_true(at == SIZE_MAX);
			at = i;
		}
	assert_true(at != SIZE_MAX);
	uint8_t *q = malloc(len + n);
	assert_non_null(q);
	memcpy(q, p, at + 1);
	memcpy(q + at + 1, repl, n);
	memcpy(q + at + 1 + n, p + at + sizeof mark, len - at - sizeof mark);
	ota_error e = {0};
	ota_err rc = ota_attestation_parse(ota_bytes_make(q, len - (sizeof mark - 1) + n), out, &e);
	if (rc != OTA_OK) {
		assert_int_equal(e.code, rc);
	}
	free(q);
	free(p);
	return rc;
}

static void test_claim_integers(void **state)
{
	(void)state;
	ota_attestation a;
	/* the marker itself round-trips */
	static const uint8_t same[] = {0x1a, 0x01, 0x23, 0x45, 0x67};
	assert_ota(parse_with_iat(same, sizeof same, &a), OTA_OK);
	assert_int_equal(a.iat, IAT_MARK);
	/* 0 */
	static const uint8_t zero[] = {0x00};
	assert_ota(parse_with_iat(zero, sizeof zero, &a), OTA_OK);
	assert_int_equal(a.iat, 0);
	/* the largest taken: INT64_MAX / 2 (so that exp - iat and iat + skew
	 * never overflow) */
	static const uint8_t half[] = {0x1b, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_ota(parse_with_iat(half, sizeof half, &a), OTA_OK);
	assert_int_equal(a.iat, INT64_MAX / 2);
	static const uint8_t half1[] = {0x1b, 0x40, 0, 0, 0, 0, 0, 0, 0};
	assert_ota(parse_with_iat(half1, sizeof half1, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* INT64_MAX, INT64_MAX + 1 and UINT64_MAX */
	static const uint8_t i64max[] = {0x1b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_ota(parse_with_iat(i64max, sizeof i64max, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t above[] = {0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0};
	assert_ota(parse_with_iat(above, sizeof above, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t u64max[] = {0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_ota(parse_with_iat(u64max, sizeof u64max, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* negative: -1 and -2^64 */
	static const uint8_t neg1[] = {0x20};
	assert_ota(parse_with_iat(neg1, sizeof neg1, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t negmax[] = {0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_ota(parse_with_iat(negmax, sizeof negmax, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* floats: 1.5 (half), 1800000000.0 (single), 1800000000.5 (double) */
	static const uint8_t fhalf[] = {0xf9, 0x3e, 0x00};
	assert_ota(parse_with_iat(fhalf, sizeof fhalf, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t fsingle[] = {0xfa, 0x4e, 0xd6, 0x93, 0xa4};
	assert_ota(parse_with_iat(fsingle, sizeof fsingle, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t fdouble[] = {0xfb, 0x41, 0xda, 0xd2, 0x74, 0x80, 0x20, 0x00, 0x00};
	assert_ota(parse_with_iat(fdouble, sizeof fdouble, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* tagged dates: tag 1 (epoch) over a uint, tag 0 over RFC 3339 text */
	static const uint8_t tag1[] = {0xc1, 0x1a, 0x6b, 0x49, 0xd2, 0x00};
	assert_ota(parse_with_iat(tag1, sizeof tag1, &a), OTA_ERR_ATT_CLAIM_TYPE);
	static const uint8_t tag0[] = {0xc0, 0x74, '2', '0', '2', '6', '-', '0', '1', '-', '0', '1',
	                               'T', '0', '0', ':', '0', '0', ':', '0', '0', 'Z'};
	assert_ota(parse_with_iat(tag0, sizeof tag0, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* simple values and a text */
	static const uint8_t fls[] = {0xf4}, nul[] = {0xf6}, txt[] = {0x61, '1'};
	assert_ota(parse_with_iat(fls, sizeof fls, &a), OTA_ERR_ATT_CLAIM_TYPE);
	assert_ota(parse_with_iat(nul, sizeof nul, &a), OTA_ERR_ATT_CLAIM_TYPE);
	assert_ota(parse_with_iat(txt, sizeof txt, &a), OTA_ERR_ATT_CLAIM_TYPE);
	/* a non-shortest head of a small value is malformed, not a time */
	static const uint8_t longhead[] = {0x1b, 0, 0, 0, 0, 0, 0, 0, 0x05};
	assert_ota(parse_with_iat(longhead, sizeof longhead, &a), OTA_ERR_ATT_MALFORMED);
}

/* ---------- admission boundaries ---------- */

typedef struct world {
	test_admission_world base;
	ota_key *issuer_key;
	int seq;
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "edges.test", NOW - 86400,
	                                                NOW + 86400 * 30);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->issuer_key), OTA_OK);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->issuer_key,
	               NOW - 86400);
	test_admission_world_finish(&w->base, d, "edges.db");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_admission_world_free(&w->base);
	ota_key_free(w->issuer_key);
	free(w);
	return 0;
}

/* A fresh challenge issued at `issued` living ttl seconds (0: default), on
 * its own txn; claims for it with iat and exp. */
static ota_challenge issue_at(world *w, int64_t issued, int64_t ttl, char txn[32])
{
	snprintf(txn, 32, "txn-%d", ++w->seq);
	ota_nonce_binding b = {txn, "issuer:acme", "oci_remote"};
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(w->base.store, &b, 0, ttl, issued, &c, NULL), OTA_OK);
	return c;
}

/* Admits (at now) an attestation for a new challenge issued at `issued`
 * with iat and exp. */
static ota_err admit(world *w, int64_t issued, int64_t ttl, int64_t iat, int64_t exp, int64_t now)
{
	char txn[32];
	ota_challenge c = issue_at(w, issued, ttl, txn);
	ota_attestation a;
	test_attestation_claims(&a, w->base.root, "issuer:acme", txn, "b1", NULL);
	memcpy(a.nonce, c.nonce, c.nonce_len);
	a.nonce_len = c.nonce_len;
	a.iat = iat;
	a.exp = exp;
	size_t len = 0;
	uint8_t *msg = test_attestation_sign(&a, w->issuer_key, true, &len);
	ota_err rc = test_admission_admit(&w->base, ota_bytes_make(msg, len), now, NULL);
	free(msg);
	return rc;
}

/* exp, max_age, max_skew and max_lifetime at their edges. */
static void test_admission_window_edges(void **state)
{
	world *w = *state;
	/* exactly at exp: expired; one second before: fine */
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW, NOW), OTA_ERR_ATT_EXPIRED);
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW + 1, NOW), OTA_OK);
	/* iat exactly max_age (300) old: fine; one more: stale */
	assert_ota(admit(w, NOW - 320, 3600, NOW - 300, NOW + 60, NOW), OTA_OK);
	assert_ota(admit(w, NOW - 320, 3600, NOW - 301, NOW + 60, NOW), OTA_ERR_ATT_STALE);
	/* iat exactly max_skew (30) ahead: fine; one more: from the future */
	assert_ota(admit(w, NOW - 10, 0, NOW + 30, NOW + 60, NOW), OTA_OK);
	assert_ota(admit(w, NOW - 10, 0, NOW + 31, NOW + 60, NOW), OTA_ERR_ATT_NOT_YET_VALID);
	/* exp - iat exactly max_lifetime (900): fine; one more, or 0: refused */
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW + 895, NOW), OTA_OK);
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW + 896, NOW), OTA_ERR_ATT_LIFETIME);
	assert_ota(admit(w, NOW - 10, 0, NOW + 5, NOW + 5, NOW), OTA_ERR_ATT_LIFETIME);
	/* the largest claims: from the future, no overflow on the way */
	assert_ota(admit(w, NOW - 10, 0, INT64_MAX / 2, INT64_MAX / 2, NOW),
	           OTA_ERR_ATT_NOT_YET_VALID);
	assert_ota(admit(w, NOW - 10, 0, 0, INT64_MAX / 2, NOW), OTA_ERR_ATT_STALE);
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, INT64_MAX / 2, NOW), OTA_ERR_ATT_LIFETIME);
}

/*
 * ota-verify archive judges an external attestation fresh when its iat is
 * within 30 s of [challenge issued, accepted]. The endpoint admitted any iat
 * within max_age (300 s) of now, so an attester whose clock was 31..300 s
 * behind got an acceptance for an archive that could never verify
 * (archive_not_fresh). Now such an iat is attestation_before_challenge.
 */
static void test_admission_iat_before_challenge(void **state)
{
	world *w = *state;
	assert_ota(admit(w, NOW - 10, 0, NOW - 40, NOW + 60, NOW), OTA_OK); /* 30 s before */
	assert_ota(admit(w, NOW - 10, 0, NOW - 41, NOW + 60, NOW), OTA_ERR_ATT_BEFORE_CHALLENGE);
	assert_ota(admit(w, NOW - 10, 0, NOW - 200, NOW + 60, NOW), OTA_ERR_ATT_BEFORE_CHALLENGE);
	/* with a smaller skew, that skew */
	w->base.ctx.opts.max_skew = 5;
	assert_ota(admit(w, NOW - 10, 0, NOW - 15, NOW + 60, NOW), OTA_OK);
	assert_ota(admit(w, NOW - 10, 0, NOW - 16, NOW + 60, NOW), OTA_ERR_ATT_BEFORE_CHALLENGE);
	assert_ota(admit(w, NOW - 10, 0, NOW + 6, NOW + 60, NOW), OTA_ERR_ATT_NOT_YET_VALID);
	w->base.ctx.opts.max_skew = 0;
	assert_ota(admit(w, NOW - 10, 0, NOW - 10, NOW + 60, NOW), OTA_OK);
	assert_ota(admit(w, NOW - 10, 0, NOW - 11, NOW + 60, NOW), OTA_ERR_ATT_BEFORE_CHALLENGE);
	assert_ota(admit(w, NOW - 10, 0, NOW + 1, NOW + 60, NOW), OTA_ERR_ATT_NOT_YET_VALID);
	w->base.ctx.opts.max_skew = 30;
}

/*
 * A skew above the 30 s ota-verify archive allows (or a negative one) is a
 * usage error of the options, not an admission of what the archive check
 * refuses (an iat 31..max_skew s ahead of the acceptance).
 */
static void test_admission_skew_cap(void **state)
{
	world *w = *state;
	w->base.ctx.opts.max_skew = OTA_ATT_MAX_SKEW + 1;
	assert_ota(admit(w, NOW - 10, 0, NOW + 31, NOW + 60, NOW), OTA_ERR_USAGE);
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW + 60, NOW), OTA_ERR_USAGE);
	w->base.ctx.opts.max_skew = -1;
	assert_ota(admit(w, NOW - 10, 0, NOW - 5, NOW + 60, NOW), OTA_ERR_USAGE);
	w->base.ctx.opts.max_skew = OTA_ATT_MAX_SKEW;
	assert_ota(admit(w, NOW - 10, 0, NOW + 30, NOW + 60, NOW), OTA_OK);
}

/*
 * The endpoint's clock went back between the issue of a challenge and the
 * answer: admitted, the acceptance (accepted_at before issued_at) is one
 * ota-verify archive calls not fresh. The store refuses to judge a
 * challenge before its issue (nonce_not_yet_issued), in peek and consume.
 */
static void test_clock_went_back(void **state)
{
	world *w = *state;
	assert_ota(admit(w, NOW, 0, NOW - 1, NOW + 60, NOW - 1), OTA_ERR_NONCE_NOT_YET_ISSUED);
	assert_ota(admit(w, NOW, 0, NOW, NOW + 60, NOW), OTA_OK); /* at the issue second */
	char txn[32];
	ota_challenge c = issue_at(w, NOW, 0, txn);
	ota_challenge out;
	ota_error e = {0};
	ota_bytes n = ota_bytes_make(c.nonce, c.nonce_len);
	assert_ota(ota_nonce_store_peek(w->base.store, n, NOW - 1, &out, &e),
	           OTA_ERR_NONCE_NOT_YET_ISSUED);
	assert_string_equal(e.where, "eat_nonce");
	assert_ota(ota_nonce_store_consume(w->base.store, n, NULL, NOW - 1, &out, &e),
	           OTA_ERR_NONCE_NOT_YET_ISSUED);
	/* not consumed by the refusal: it is still live at its issue time */
	assert_ota(ota_nonce_store_consume(w->base.store, n, NULL, NOW, &out, &e), OTA_OK);
	assert_int_equal(out.consumed_at, NOW);
}

/* A challenge is live for issued_at <= t < expires_at. */
static void test_nonce_expiry_edge(void **state)
{
	world *w = *state;
	char txn[32];
	ota_challenge c = issue_at(w, NOW, 60, txn);
	assert_int_equal(c.expires_at, NOW + 60);
	ota_challenge out;
	ota_error e = {0};
	ota_bytes n = ota_bytes_make(c.nonce, c.nonce_len);
	assert_ota(ota_nonce_store_peek(w->base.store, n, NOW + 60, &out, &e), OTA_ERR_NONCE_EXPIRED);
	assert_ota(ota_nonce_store_consume(w->base.store, n, NULL, NOW + 60, &out, &e),
	           OTA_ERR_NONCE_EXPIRED);
	assert_ota(ota_nonce_store_peek(w->base.store, n, NOW + 59, &out, &e), OTA_OK);
	assert_ota(ota_nonce_store_consume(w->base.store, n, NULL, NOW + 59, &out, &e), OTA_OK);
	/* an attestation answering at the last live second, exp one later */
	assert_ota(admit(w, NOW - 60, 60, NOW - 5, NOW + 1, NOW - 1), OTA_OK);
	assert_ota(admit(w, NOW - 60, 60, NOW - 5, NOW + 1, NOW), OTA_ERR_NONCE_EXPIRED);
}

/* Key windows: valid_from <= at < valid_until, revoked from revoked_at on. */
static void test_key_window_edges(void **state)
{
	(void)state;
	ota_key *root = NULL, *k = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &root), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &k), OTA_OK);
	ota_trust_draft *d = test_trust_draft("keys.test", root, 1000, 100000);
	ota_error e = {0};
	uint8_t kid[32];
	assert_ota(ota_key_kid(k, kid), OTA_OK);
	test_trust_add(d, "issuer:a", OTA_TRUST_ROLE_ISSUER, "*", NULL, 0);
	assert_ota(ota_trust_draft_add_key(d, "issuer:a", k, OTA_ALG_NONE, 2000, 3000, &e), OTA_OK);
	ota_trust_root *r = test_trust_finish(d, root);
	ota_bytes kb = ota_bytes_make(kid, 32);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 1999, NULL,
	                            NULL, &e),
	           OTA_ERR_TRUST_KEY_NOT_YET_VALID);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 2000, NULL,
	                            NULL, &e),
	           OTA_OK);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 2999, NULL,
	                            NULL, &e),
	           OTA_OK);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 3000, NULL,
	                            NULL, &e),
	           OTA_ERR_TRUST_KEY_EXPIRED);
	ota_trust_root_free(r);
	d = test_trust_draft("keys.test", root, 1000, 100000);
	test_trust_add(d, "issuer:a", OTA_TRUST_ROLE_ISSUER, "*", k, 2000);
	assert_ota(ota_trust_draft_revoke_key(d, kb, 2500, &e), OTA_OK);
	r = test_trust_finish(d, root);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 2499, NULL,
	                            NULL, &e),
	           OTA_OK);
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, 2500, NULL,
	                            NULL, &e),
	           OTA_ERR_TRUST_KEY_REVOKED);
	/* revocation is judged first: at INT64_MAX it is still "revoked" */
	assert_ota(ota_trust_lookup(r, kb, OTA_ALG_ES256, OTA_TRUST_ROLE_ISSUER, NULL, INT64_MAX,
	                            NULL, NULL, &e),
	           OTA_ERR_TRUST_KEY_REVOKED);
	ota_trust_root_free(r);
	ota_key_free(k);
	ota_key_free(root);
}

/*
 * The verifier's trust root expires while the endpoint runs: an admission
 * at or after its expires signed acceptances whose archives are refused
 * (the archive judges the latest snapshot's expiry at the receipt's time,
 * the last acceptance: trust_expired). ota_admission_prepare refuses it
 * (trust_expired); one second before is admitted.
 */
static void test_admission_root_expired(void **state)
{
	world *w = *state;
	int64_t exp = ota_trust_root_expires(w->base.root);
	assert_int_equal(exp, NOW + 86400 * 30);
	assert_ota(admit(w, exp - 10, 0, exp - 5, exp + 60, exp - 1), OTA_OK);
	assert_ota(admit(w, exp - 10, 0, exp - 5, exp + 60, exp), OTA_ERR_TRUST_EXPIRED);
	assert_ota(admit(w, exp + 10, 0, exp + 15, exp + 60, exp + 20), OTA_ERR_TRUST_EXPIRED);
}

/* ---------- the endpoint's own verifier key, judged at each admission ---------- */

static _Atomic int64_t g_clock;

static int64_t moving_now(void *ctx)
{
	(void)ctx;
	return atomic_load(&g_clock);
}

/* Signs (issuer:acme) an attestation for a challenge of txn taken at the
 * current test clock, iat = clock - 5, exp = iat + 120. */
static uint8_t *attestation_now(const test_endpoint_root *r, const char *url, const char *txn,
                                size_t *len)
{
	ota_nonce_binding b = {txn, "issuer:acme", "oci_remote"};
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nl = 0;
	assert_ota(test_attestd_challenge(url, &b, nonce, &nl), OTA_OK);
	ota_attestation a;
	test_attestation_claims(&a, r->root, "issuer:acme", txn, "b1", NULL);
	memcpy(a.nonce, nonce, nl);
	a.nonce_len = nl;
	a.iat = atomic_load(&g_clock) - 5;
	a.exp = a.iat + 120;
	return test_attestation_sign(&a, r->issuer_key, true, len);
}

static ota_err submit_to(const char *url, const uint8_t *msg, size_t len, ota_error *e)
{
	char *out = NULL;
	ota_error_clear(e);
	ota_err rc = ota_attest_client_submit(url, ota_bytes_make(msg, len), &out, e);
	free(out);
	return rc;
}

/*
 * The endpoint checked its verifier key against the trust root once, at
 * start. A key whose valid_until (or revoked_at) passed while it ran kept
 * signing acceptances that ota-verify archive refuses (the acceptance is
 * judged at its own accepted_at: trust_key_expired). Each admission now
 * judges the verifier key at its own time; at valid_until - 1 it is fine.
 */
static void test_attestd_verifier_key_expires(void **state)
{
	(void)state;
	int64_t t0 = (int64_t)time(NULL);
	test_endpoint_root r;
	test_endpoint_root_make(&r, "edges-endpoint.test", t0, 0);
	/* the same root, the verifier key valid only until t0 + 100 */
	int64_t until = t0 + 100;
	ota_trust_draft *d = test_trust_draft("edges-endpoint.test", r.root_key, t0 - 3600,
	                                      t0 + 86400);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", r.issuer_key,
	               t0 - 3600);
	test_trust_add(d, "verifier:endpoint", OTA_TRUST_ROLE_VERIFIER, "*", NULL, 0);
	ota_error e = {0};
	assert_ota(ota_trust_draft_add_key(d, "verifier:endpoint", r.verifier_key, OTA_ALG_NONE,
	                                   t0 - 3600, until, &e),
	           OTA_OK);
	ota_trust_root_free(r.root);
	r.root = test_trust_finish(d, r.root_key);
	char *json = NULL;
	size_t jl = 0;
	assert_ota(ota_trust_root_serialize(r.root, &json, &jl, &e), OTA_OK);
	assert_ota(ota_file_write_atomic(r.root_path, ota_bytes_make(json, jl), 0600, &e), OTA_OK);
	free(json);

	atomic_store(&g_clock, t0);
	ota_clock clk = {moving_now, NULL};
	ota_attestd_opts o;
	test_attestd_opts(&r, &o);
	o.clock = &clk;
	ota_attestd *dd = NULL;
	char url[64];
	test_attestd_start(&o, &dd, url, sizeof url);

	size_t l1 = 0, l2 = 0, l3 = 0;
	atomic_store(&g_clock, until - 10);
	uint8_t *m1 = attestation_now(&r, url, "txn-a", &l1);
	uint8_t *m2 = attestation_now(&r, url, "txn-b", &l2);
	uint8_t *m3 = attestation_now(&r, url, "txn-c", &l3);
	atomic_store(&g_clock, until - 1);
	assert_ota(submit_to(url, m1, l1, &e), OTA_OK);
	atomic_store(&g_clock, until);
	assert_ota(submit_to(url, m2, l2, &e), OTA_ERR_TRUST_KEY_EXPIRED);
	assert_string_equal(e.where, "verifier:endpoint");
	atomic_store(&g_clock, until + 30);
	assert_ota(submit_to(url, m3, l3, &e), OTA_ERR_TRUST_KEY_EXPIRED);
	ota_attestd_stop(dd);
	free(m1);
	free(m2);
	free(m3);
	test_endpoint_root_free(&r);
}

/* ota_attestd_start refuses, before it opens anything, a challenge_ttl the
 * store would refuse on every challenge and a skew the archive check would
 * not allow (the defaults and the extremes of the ranges start). */
static void test_attestd_start_ranges(void **state)
{
	(void)state;
	ota_attestd_opts o;
	ota_attestd *d = NULL;
	ota_error e = {0};
	ota_attestd_opts_init(&o);
	o.db_path = "/nonexistent/ota-time-edges/never.db";
	o.trust_root_path = "/nonexistent/ota-time-edges/root.json";
	o.verifier_key_path = "/nonexistent/ota-time-edges/verifier.pem";
	o.challenge_ttl = OTA_NONCE_MAX_TTL + 1;
	assert_ota(ota_attestd_start(&o, &d, &e), OTA_ERR_USAGE);
	assert_string_equal(e.where, "challenge_ttl");
	assert_null(d);
	o.challenge_ttl = -1;
	assert_ota(ota_attestd_start(&o, &d, &e), OTA_ERR_USAGE);
	o.challenge_ttl = OTA_NONCE_MAX_TTL;
	o.admission.max_skew = OTA_ATT_MAX_SKEW + 1;
	ota_error_clear(&e);
	assert_ota(ota_attestd_start(&o, &d, &e), OTA_ERR_USAGE);
	assert_string_equal(e.where, "max_skew");
	/* in range: it goes on, and fails on the missing trust root instead */
	o.admission.max_skew = OTA_ATT_MAX_SKEW;
	ota_error_clear(&e);
	ota_err rc = ota_attestd_start(&o, &d, &e);
	assert_true(rc != OTA_OK && rc != OTA_ERR_USAGE);
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_text_edges),
		cmocka_unit_test(test_time_leap_second),
		cmocka_unit_test(test_claim_integers),
		cmocka_unit_test_setup_teardown(test_admission_window_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admission_iat_before_challenge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admission_skew_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_went_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonce_expiry_edge, setup, teardown),
		cmocka_unit_test(test_key_window_edges),
		cmocka_unit_test(test_attestd_start_ranges),
		cmocka_unit_test_setup_teardown(test_admission_root_expired, setup, teardown),
		cmocka_unit_test(test_attestd_verifier_key_expires),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
