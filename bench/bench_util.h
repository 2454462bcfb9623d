/*
 * bench/bench_util.h - what several benchmarks share (header only: each
 * bench is one executable of one source file).
 */
#ifndef OTA_BENCH_UTIL_H
#define OTA_BENCH_UTIL_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double bench_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The median of v[0..n-1] (n > 0); sorts v. */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
