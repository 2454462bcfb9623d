/*
 * The error table (include/ota/errors/<module>.def): every stable name is unique and
 * snake_case, every number unique and inside its module's range, names and
 * messages round-trip through the lookup functions.
 */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_ERRORS 2000

typedef struct {
	ota_err code[MAX_ERRORS];
	const char *name[MAX_ERRORS];
	const char *msg[MAX_ERRORS];
	size_t n;
} table;

static void collect(ota_err e, const char *name, const char *msg, void *ctx)
{
	table *t = ctx;
	assert_true(t->n < MAX_ERRORS);
	t->code[t->n] = e;
	t->name[t->n] = name;
	t->msg[t->n] = msg;
	t->n++;
}

static table *load(void)
{
	table *t = calloc(1, sizeof *t);
	assert_non_null(t);
	ota_err_foreach(collect, t);
	return t;
}

static bool is_snake_case(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || s[0] < 'a' || s[0] > 'z' || s[n - 1] == '_')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
		if (!ok || (c == '_' && s[i + 1] == '_'))
			return false;
	}
	return true;
}

static void test_names_snake_case_and_unique(void **state)
{
	(void)state;
	table *t = load();
	assert_true(t->n > 30);
	for (size_t i = 0; i < t->n; i++) {
		if (!is_snake_case(t->name[i]))
			fail_msg("error %d: name \"%s\" is not snake_case", (int)t->code[i], t->name[i]);
		for (size_t j = i + 1; j < t->n; j++)
			if (strcmp(t->name[i], t->name[j]) == 0)
				fail_msg("errors %d and %d share the name \"%s\"", (int)t->code[i],
				         (int)t->code[j], t->name[i]);
	}
	free(t);
}

static void test_numbers_unique_ordered_in_range(void **state)
{
	(void)state;
	table *t = load();
	assert_int_equal(t->code[0], OTA_OK);
	assert_string_equal(t->name[0], "ok");
	for (size_t i = 0; i < t->n; i++) {
		int c = (int)t->code[i];
		assert_true(c >= 0 && c < 1000);
		if (i > 0 && c <= (int)t->code[i - 1])
			fail_msg("error numbers not strictly increasing: %d after %d (%s)", c,
			         (int)t->code[i - 1], t->name[i]);
		for (size_t j = i + 1; j < t->n; j++)
			if (t->code[i] == t->code[j])
				fail_msg("number %d used by %s and %s", c, t->name[i], t->name[j]);
	}
	free(t);
}

static void test_lookups_round_trip(void **state)
{
	(void)state;
	table *t = load();
	for (size_t i = 0; i < t->n; i++) {
		assert_string_equal(ota_err_name(t->code[i]), t->name[i]);
		assert_string_equal(ota_err_message(t->code[i]), t->msg[i]);
		assert_true(strlen(t->msg[i]) > 0);
		ota_err back = OTA_ERR_INTERNAL;
		assert_true(ota_err_from_name(t->name[i], &back));
		assert_int_equal(back, t->code[i]);
	}
	ota_err x = OTA_OK;
	assert_false(ota_err_from_name("no_such_error_name", &x));
	assert_false(ota_err_from_name("", &x));
	/* unknown numbers still give a non-NULL name and message */
	assert_non_null(ota_err_name((ota_err)99999));
	assert_non_null(ota_err_message((ota_err)99999));
	free(t);
}

/* The names the JCS vectors rely on exist with these exact spellings. */
static void test_json_names_stable(void **state)
{
	(void)state;
	static const struct {
		ota_err e;
		const char *name;
	} pinned[] = {
		{OTA_ERR_JSON_SYNTAX, "json_syntax"},
		{OTA_ERR_JSON_DUPLICATE_KEY, "json_duplicate_key"},
		{OTA_ERR_JSON_FLOAT, "json_float_refused"},
		{OTA_ERR_JSON_INVALID_UTF8, "json_invalid_utf8"},
		{OTA_ERR_JSON_NUMBER_RANGE, "json_number_range"},
		{OTA_ERR_TOO_DEEP, "too_deep"},
		{OTA_ERR_TOO_LARGE, "too_large"},
	};
	for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
		assert_string_equal(ota_err_name(pinned[i].e), pinned[i].name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_snake_case_and_unique),
		cmocka_unit_test(test_numbers_unique_ordered_in_range),
		cmocka_unit_test(test_lookups_round_trip),
		cmocka_unit_test(test_json_names_stable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
