/*
 * provider-oci/procfs.c: /proc/PID/stat (state letter, starttime) and
 * /proc/PID/status (capability sets, no_new_privs) as oci_local parses
 * them, on this process's own files and on texts a task's comm can shape;
 * the runtime's pid file (was strtol: trailing garbage, a sign and values
 * beyond a pid_t passed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "test_util.h"

#include "ota/oci.h"
#include "provider-oci/procfs.h"

static size_t slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static bool stat_of(const char *s, char *st, unsigned long long *start)
{
	return oci_proc_stat_parse(s, strlen(s), st, start);
}

#define F4_21 "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"

static void test_stat(void **state)
{
	(void)state;
	char st;
	unsigned long long start;
	/* this process, under a comm holding ") Z " (the task picks its comm) */
	assert_int_equal(prctl(PR_SET_NAME, "a) Z 1 2 (b", 0, 0, 0), 0);
	char buf[4096];
	size_t n = slurp("/proc/self/stat", buf, sizeof buf);
	assert_true(oci_proc_stat_parse(buf, n, &st, &start));
	assert_int_equal(st, 'R');
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	unsigned long long want = 0;
	assert_int_equal(sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
	                                "%*d %*d %*d %*d %*d %llu",
	                        &want),
	                 1);
	assert_true(want > 0);
	assert_true(start == want);
	/* field 22 counted from the last ')' */
	assert_true(stat_of("9 (x) Z " F4_21 " 777 23\n", &st, &start));
	assert_int_equal(st, 'Z');
	assert_true(start == 777);
	assert_true(stat_of("9 (x) R 1 ) Z " F4_21 ") S " F4_21 " 42 23", &st, &start));
	assert_int_equal(st, 'S');
	assert_true(start == 42);
	assert_true(stat_of("9 (x) X " F4_21 " 18446744073709551615", &st, &start));
	assert_true(start == 18446744073709551615ull);
	/* refused: state 0, starttime 0 */
	static const char *const bad[] = {
		"",
		"9 (x Z " F4_21 " 5",
		"9 (x) Z " F4_21,                          /* no field 22 */
		"9 (x) Z " F4_21 " ",                      /* empty field 22 */
		"9 (x) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17  18 5", /* an empty field */
		"9 (x) 1 " F4_21 " 5",                     /* state not a letter */
		"9 (x) ZZ " F4_21 " 5",
		"9 (x)Z " F4_21 " 5",
		"9 (x) Z " F4_21 " 18446744073709551616", /* over ULLONG_MAX */
		"9 (x) Z " F4_21 " 12a",
		"9 (x) Z " F4_21 " -1",
		"9 (x)",
		"9 (x) ",
		"9 (x) Z",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st = '?';
		start = 9;
		if (stat_of(bad[i], &st, &start))
			fail_msg("accepted: \"%s\"", bad[i]);
		assert_int_equal(st, '\0');
		assert_true(start == 0);
	}
	/* a NUL inside is refused, not a cut */
	static const char nul[] = "9 (x) Z " F4_21 " 5\0 6";
	assert_false(oci_proc_stat_parse(nul, sizeof nul - 1, &st, &start));
	/* a text ending on ')' is read no further than its n bytes */
	char *tight = malloc(6);
	assert_non_null(tight);
	memcpy(tight, "9 (x)", 5);
	assert_false(oci_proc_stat_parse(tight, 5, &st, &start));
	free(tight);
}

#define Z16 "0000000000000000"

static void test_status(void **state)
{
	(void)state;
	oci_proc_caps c;
	char buf[65536];
	size_t n = slurp("/proc/self/status", buf, sizeof buf);
	oci_proc_status_caps(buf, n, &c);
	assert_int_equal(strlen(c.eff), 16);
	assert_int_equal(strlen(c.bnd), 16);
	assert_int_equal(strlen(c.amb), 16);
	assert_true(strcmp(c.nnp, "0") == 0 || strcmp(c.nnp, "1") == 0);
	/* a dropped process; a Name that looks like a key is still the Name line */
	const char *ok = "Name:\tCapEff: 0\nCapEff:\t" Z16 "\nCapPrm:  " Z16 "\nCapBnd:\t" Z16
	                 "\nCapAmb:\t" Z16 "\nNoNewPrivs:\t1\n";
	oci_proc_status_caps(ok, strlen(ok), &c);
	assert_string_equal(c.eff, Z16);
	assert_string_equal(c.prm, Z16);
	assert_string_equal(c.bnd, Z16);
	assert_string_equal(c.amb, Z16);
	assert_string_equal(c.nnp, "1");
	/* a key twice is "" whichever line holds what (the last one won before) */
	const char *dup = "CapEff:\t000001ffffffffff\nCapEff:\t" Z16 "\nNoNewPrivs:\t0\nNoNewPrivs:\t1";
	oci_proc_status_caps(dup, strlen(dup), &c);
	assert_string_equal(c.eff, "");
	assert_string_equal(c.nnp, "");
	/* a value longer than its field is "", not cut to a prefix */
	const char *lng = "CapEff:\t" Z16 Z16 "\nNoNewPrivs:\t11111111\nCapBnd:\t" Z16 "\n";
	oci_proc_status_caps(lng, strlen(lng), &c);
	assert_string_equal(c.eff, "");
	assert_string_equal(c.nnp, "");
	assert_string_equal(c.bnd, Z16);
	/* a NUL in a value makes it "", the bytes after a NUL are still read */
	static const char nul[] = "CapEff:\t" Z16 "\0x\nCapAmb:\t" Z16;
	oci_proc_status_caps(nul, sizeof nul - 1, &c);
	assert_string_equal(c.eff, "");
	assert_string_equal(c.amb, Z16);
	/* key matching is exact: no prefix, no case, no space before ':' */
	const char *near = "CapEffx:\t1\ncapeff:\t2\nCapEff :\t3\nNoNewPrivs\t1\n";
	oci_proc_status_caps(near, strlen(near), &c);
	assert_string_equal(c.eff, "");
	assert_string_equal(c.nnp, "");
	oci_proc_status_caps(NULL, 0, &c);
	assert_string_equal(c.eff, "");
}

static void test_pid_file(void **state)
{
	(void)state;
	long pid = 9;
	assert_true(oci_pid_file_parse("4242", 4, &pid));
	assert_int_equal(pid, 4242);
	assert_true(oci_pid_file_parse("1\n", 2, &pid));
	assert_int_equal(pid, 1);
	assert_true(oci_pid_file_parse("2147483647", 10, &pid));
	assert_int_equal(pid, 2147483647L);
	/* strtol took " 12", "+12", "12 ", "12abc" as 12, and the values
	 * beyond a pid_t */
	static const char *const bad[] = {
		"", "\n", "0", "00", "012", "-1", "+12", " 12", "12 ", "12abc", "12\n\n",
		"2147483648", "4294967297", "99999999999", "1\0", "0x10",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		pid = 9;
		size_t n = strlen(bad[i]) + (strcmp(bad[i], "1\0") == 0 ? 1 : 0);
		if (oci_pid_file_parse(bad[i], n, &pid))
			fail_msg("accepted: \"%s\"", bad[i]);
		assert_int_equal(pid, 0);
	}
	/* n bytes, no NUL needed after them */
	static const char tight[2] = {'7', '7'};
	assert_true(oci_pid_file_parse(tight, 2, &pid));
	assert_int_equal(pid, 77);
	assert_false(oci_pid_file_parse(NULL, 0, &pid));
}

/* ota_oci_proc_start_time: the lease's runner_start and ota doctor's check */
static void test_start_time(void **state)
{
	(void)state;
	char buf[4096];
	size_t n = slurp("/proc/self/stat", buf, sizeof buf - 1);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	unsigned long long want = 0;
	assert_int_equal(sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
	                                "%*d %*d %*d %*d %*d %llu",
	                        &want),
	                 1);
	assert_true(ota_oci_proc_start_time((long)getpid()) == want);
	char pm[32];
	size_t pl = slurp("/proc/sys/kernel/pid_max", pm, sizeof pm - 1);
	pm[pl] = '\0';
	long beyond = strtol(pm, NULL, 10) + 1; /* no process has it */
	assert_true(ota_oci_proc_start_time(beyond) == 0);
	assert_true(ota_oci_proc_start_time(0) == 0);
	assert_true(ota_oci_proc_start_time(-1) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_pid_file),
		cmocka_unit_test(test_start_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
