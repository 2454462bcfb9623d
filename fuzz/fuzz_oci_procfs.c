/*
 * fuzz_oci_procfs: the /proc process files oci_local parses
 * (provider-oci/procfs.c): /proc/PID/stat (oci_proc_stat_parse: the state
 * letter for "has it exited", starttime for a lease's runner identity) and
 * /proc/PID/status (oci_proc_status_caps: the container process's
 * capability sets and no_new_privs, checked before the task starts), and
 * the pid file the runtime writes (oci_pid_file_parse). The task chooses
 * its comm (stat's field 2, status's Name), so these are parsed as
 * untrusted bytes. Byte 0 picks the file (bit 1: the pid file, else bit 0:
 * status, else stat), the rest is its text.
 *
 * Invariants: stat: a success names a letter that follows the last ") "
 * of the text, and a starttime that is field 22 counted from there; status:
 * every field is NUL-terminated within its size, and a non-empty one is the
 * value of exactly one line of that key; pid file: a pid in 1..INT_MAX
 * whose decimal text is the input (a "\n" after it allowed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

#include "../provider-oci/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* how many lines of text are "KEY:" + blanks + value, exactly */
static size_t lines_with(const char *t, size_t n, const char *key, const char *value)
{
	size_t count = 0, kl = strlen(key), vl = strlen(value);
	const char *p = t, *end = t + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl != NULL ? nl : end;
		if ((size_t)(le - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == ':') {
			const char *v = p + kl + 1;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			if ((size_t)(le - v) == vl && memcmp(v, value, vl) == 0)
				count++;
		}
		p = le + 1;
	}
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	const char *t = (const char *)data + 1;
	size_t n = size - 1;
	if ((data[0] & 3) == 0) {
		char st = '?';
		unsigned long long start = 7;
		bool ok = oci_proc_stat_parse(t, n, &st, &start);
		if (!ok) {
			FZ_CHECK(st == '\0' && start == 0);
			return 0;
		}
		FZ_CHECK(memchr(t, '\0', n) == NULL);
		const char *rp = NULL;
		for (size_t i = 0; i < n; i++)
			if (t[i] == ')')
				rp = t + i;
		FZ_CHECK(rp != NULL && rp[1] == ' ' && rp[2] == st && rp[3] == ' ');
		/* field 22 by a second count: the 18th space after the state's */
		const char *p = rp + 3;
		for (int f = 4; f < 22; f++) {
			p = memchr(p + 1, ' ', (size_t)(t + n - p - 1));
			FZ_CHECK(p != NULL);
		}
		char digits[32];
		size_t dl = 0;
		for (p++; p < t + n && *p >= '0' && *p <= '9' && dl < sizeof digits - 1; p++)
			digits[dl++] = *p;
		digits[dl] = '\0';
		FZ_CHECK(strtoull(digits, NULL, 10) == start);
		return 0;
	}
	if (data[0] & 2) { /* the runtime's pid file */
		long pid = -3;
		bool ok = oci_pid_file_parse(t, n, &pid);
		if (!ok) {
			FZ_CHECK(pid == 0);
			return 0;
		}
		FZ_CHECK(pid >= 1 && pid <= 2147483647L);
		char back[16];
		int bl = snprintf(back, sizeof back, "%ld", pid);
		FZ_CHECK(bl > 0 && ((size_t)bl == n || ((size_t)bl + 1 == n && t[n - 1] == '\n')));
		FZ_CHECK(memcmp(back, t, (size_t)bl) == 0);
		return 0;
	}
	oci_proc_caps c;
	oci_proc_status_caps(t, n, &c);
	const struct {
		const char *key, *v;
		size_t cap;
	} f[5] = {{"CapEff", c.eff, sizeof c.eff}, {"CapPrm", c.prm, sizeof c.prm},
	          {"CapBnd", c.bnd, sizeof c.bnd}, {"CapAmb", c.amb, sizeof c.amb},
	          {"NoNewPrivs", c.nnp, sizeof c.nnp}};
	for (int k = 0; k < 5; k++) {
		FZ_CHECK(strnlen(f[k].v, f[k].cap) < f[k].cap);
		if (f[k].v[0] != '\0')
			FZ_CHECK(lines_with(t, n, f[k].key, f[k].v) == 1);
	}
	return 0;
}
