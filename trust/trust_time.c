/* Time text: integer seconds or RFC 3339. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trust_internal.h"

static bool digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

ota_err ota_trust_time_parse(const char *s, int64_t *out)
{
	size_t n = strlen(s);
	if (n == 0 || n > 40)
		return OTA_ERR_TIME_FORMAT;
	bool all = true;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			all = false;
	if (all) {
		if (n > 15)
			return OTA_ERR_TIME_FORMAT;
		*out = strtoll(s, NULL, 10);
		return OTA_OK;
	}
	int Y, M, D, h, mi, sec, oh = 0, om = 0;
	if (n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':' || !digits(s, 4, &Y) || !digits(s + 5, 2, &M) ||
	    !digits(s + 8, 2, &D) || !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
	    !digits(s + 17, 2, &sec))
		return OTA_ERR_TIME_FORMAT;
	const char *z = s + 19;
	int sign = 0;
	if ((z[0] == 'Z' || z[0] == 'z') && z[1] == '\0') {
		sign = 0;
	} else if ((z[0] == '+' || z[0] == '-') && strlen(z) == 6 && z[3] == ':' &&
	           digits(z + 1, 2, &oh) && digits(z + 4, 2, &om) && oh < 24 && om < 60) {
		sign = z[0] == '+' ? 1 : -1;
	} else {
		return OTA_ERR_TIME_FORMAT;
	}
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (Y < 1970 || M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || mi > 59 ||
	    sec > 60)
		return OTA_ERR_TIME_FORMAT;
	bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
	if (M == 2 && D == 29 && !leap)
		return OTA_ERR_TIME_FORMAT;
	bool leap_second = sec == 60;
	if (leap_second)
		sec = 59;
	int64_t t = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec;
	t -= sign * (oh * 3600 + om * 60);
	if (t < 0)
		return OTA_ERR_TIME_FORMAT;
	/* A leap second is 23:59:60 UTC on the last day of a month (RFC 3339
	 * section 5.7), taken as 23:59:59 (POSIX time has no 60th second): the
	 * second after it is the 1st of a month at 00:00:00 UTC. A 60th second
	 * anywhere else is not a time. */
	if (leap_second) {
		int64_t next = t + 1;
		if (next % 86400 != 0)
			return OTA_ERR_TIME_FORMAT;
		time_t tt = (time_t)next;
		struct tm tm;
		if (gmtime_r(&tt, &tm) == NULL || tm.tm_mday != 1)
			return OTA_ERR_TIME_FORMAT;
	}
	*out = t;
	return OTA_OK;
}

void ota_trust_time_format(int64_t t, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (gmtime_r(&tt, &tm) == NULL || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "%lld", (long long)t);
}
