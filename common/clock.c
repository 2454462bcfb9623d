#include <time.h>

#include "ota/common.h"

static int64_t system_now(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec;
}

static int64_t fixed_now(void *ctx)
{
	return *(const int64_t *)ctx;
}

ota_clock ota_clock_system(void)
{
	ota_clock c = {system_now, NULL};
	return c;
}

ota_clock ota_clock_fixed(const int64_t *t)
{
	ota_clock c = {fixed_now, (void *)(uintptr_t)t};
	return c;
}

int64_t ota_clock_now(const ota_clock *c)
{
	if (c == NULL || c->now == NULL)
		return system_now(NULL);
	return c->now(c->ctx);
}
