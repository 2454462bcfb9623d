/*
 * The lane status rule (ota_archive_lane_status), which the runner writes
 * into receipt.sandbox_policy.status and ota-verify archive re-derives:
 * once execution started, a lane is enforced_through_completion only when
 * every segment was, enforcement_unknown_after_interruption when a segment
 * was interrupted, and enforcement_lost otherwise, including a later
 * segment that was refused or never started after an earlier one ran
 * (before the fix such a lane said not_started or refused while its receipt
 * said execution_started: true). Before a start: refused or not_started.
 */
#include "test_util.h"

#include <string.h>

#include "ota/archive.h"

static const char *const enforced = "enforced_through_completion";
static const char *const lost = "enforcement_lost";
static const char *const unknown = "enforcement_unknown_after_interruption";

static void test_started(void **state)
{
	(void)state;
	/* every segment enforced (or no process segment at all) */
	assert_string_equal(ota_archive_lane_status(enforced, true), enforced);
	/* a later segment that never started, or was refused at its own
	 * admission, after an earlier segment ran: lost, not its own state */
	assert_string_equal(ota_archive_lane_status("not_started", true), lost);
	assert_string_equal(ota_archive_lane_status("refused", true), lost);
	assert_string_equal(ota_archive_lane_status(lost, true), lost);
	assert_string_equal(ota_archive_lane_status(unknown, true), unknown);
	/* a name the runner never writes cannot read as enforced */
	assert_string_equal(ota_archive_lane_status("bogus", true), lost);
	assert_string_equal(ota_archive_lane_status("", true), lost);
}

static void test_not_started(void **state)
{
	(void)state;
	assert_string_equal(ota_archive_lane_status(NULL, false), "not_started");
	assert_string_equal(ota_archive_lane_status(enforced, false), "not_started");
	assert_string_equal(ota_archive_lane_status("not_started", false), "not_started");
	assert_string_equal(ota_archive_lane_status("refused", false), "refused");
	assert_string_equal(ota_archive_lane_status(lost, false), lost);
	assert_string_equal(ota_archive_lane_status(unknown, false), unknown);
	assert_string_equal(ota_archive_lane_status("bogus", false), "refused");
}

/* The result is always one of the five lane statuses, never NULL. */
static void test_closed(void **state)
{
	(void)state;
	static const char *const names[] = {"enforced_through_completion", "not_started",
	                                    "enforcement_unknown_after_interruption",
	                                    "enforcement_lost", "refused", "x", NULL};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		for (int s = 0; s < 2; s++) {
			const char *r = ota_archive_lane_status(names[i], s == 1);
			assert_non_null(r);
			bool known = false;
			for (size_t k = 0; k < 5; k++)
				known = known || strcmp(r, names[k]) == 0;
			assert_true(known);
			/* started never yields not_started or refused */
			if (s == 1)
				assert_true(strcmp(r, "not_started") != 0 && strcmp(r, "refused") != 0);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_started),
		cmocka_unit_test(test_not_started),
		cmocka_unit_test(test_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
