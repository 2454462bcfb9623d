/*
 * Pure parsers of /proc/PID/stat, /proc/PID/status and the runtime's pid
 * file (procfs.h), and ota_oci_proc_start_time (ota/oci.h), the one reader
 * of a process's start time outside the provider (ota doctor).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ota/oci.h"
#include "procfs.h"

bool oci_proc_stat_parse(const char *text, size_t n, char *state, unsigned long long *starttime)
{
	*state = '\0';
	*starttime = 0;
	if (text == NULL || memchr(text, '\0', n) != NULL)
		return false;
	const char *rp = NULL;
	for (size_t i = n; i > 0; i--)
		if (text[i - 1] == ')') {
			rp = text + i - 1;
			break;
		}
	const char *end = text + n;
	if (rp == NULL || end - rp < 4 || rp[1] != ' ' || rp[3] != ' ')
		return false;
	char st = rp[2];
	if (!((st >= 'A' && st <= 'Z') || (st >= 'a' && st <= 'z')))
		return false;
	/* fields 4.. after "S ": field 22 is the 19th of them */
	const char *p = rp + 4;
	for (int field = 4; field < 22; field++) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		if (sp == NULL || sp == p)
			return false;
		p = sp + 1;
	}
	unsigned long long v = 0;
	size_t digits = 0;
	for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (ULLONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (digits == 0 || digits > 20 || (p < end && *p != ' ' && *p != '\n'))
		return false;
	*state = st;
	*starttime = v;
	return true;
}

bool oci_pid_file_parse(const char *text, size_t n, long *pid)
{
	*pid = 0;
	if (text == NULL)
		return false;
	if (n > 0 && text[n - 1] == '\n')
		n--;
	if (n == 0 || n > 10 || text[0] == '0')
		return false;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (text[i] < '0' || text[i] > '9')
			return false;
		v = v * 10 + (text[i] - '0'); /* 10 digits fit a long */
	}
	if (v > INT_MAX)
		return false;
	*pid = v;
	return true;
}

void oci_proc_status_caps(const char *text, size_t n, oci_proc_caps *out)
{
	memset(out, 0, sizeof *out);
	static const char *const keys[5] = {"CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs"};
	char *dst[5] = {out->eff, out->prm, out->bnd, out->amb, out->nnp};
	const size_t cap[5] = {sizeof out->eff, sizeof out->prm, sizeof out->bnd, sizeof out->amb,
	                       sizeof out->nnp};
	bool seen[5] = {false}, bad[5] = {false};
	const char *p = text, *end = text != NULL ? text + n : NULL;
	while (p != NULL && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl != NULL ? nl : end;
		const char *colon = memchr(p, ':', (size_t)(le - p));
		if (colon != NULL) {
			size_t kl = (size_t)(colon - p);
			for (int k = 0; k < 5; k++) {
				if (strlen(keys[k]) != kl || memcmp(p, keys[k], kl) != 0)
					continue;
				const char *v = colon + 1;
				while (v < le && (*v == ' ' || *v == '\t'))
					v++;
				size_t vl = (size_t)(le - v);
				if (seen[k] || vl >= cap[k] || memchr(v, '\0', vl) != NULL) {
					bad[k] = true;
				} else {
					memcpy(dst[k], v, vl);
					dst[k][vl] = '\0';
				}
				seen[k] = true;
			}
		}
		p = nl != NULL ? nl + 1 : NULL;
	}
	for (int k = 0; k < 5; k++)
		if (bad[k])
			dst[k][0] = '\0';
}

unsigned long long ota_oci_proc_start_time(long pid)
{
	char p[64], buf[2048];
	if (pid <= 0)
		return 0;
	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	char st;
	unsigned long long start = 0;
	return n > 0 && oci_proc_stat_parse(buf, (size_t)n, &st, &start) ? start : 0;
}
