/*
 * membench timing: clock readings and the statistics of timed chunks.
 *
 * The clock readers and mb_chunk_stats are inline so a family file (and
 * its unit test) needs no other source for them.
 */
#ifndef MEMBENCH_TIMING_H
#define MEMBENCH_TIMING_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline long long mb_clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline double mb_clock_seconds(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int mb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Minimum, median and maximum of secs[0..n-1] (n >= 1); sorted (n
 * doubles) receives them in ascending order. */
static inline void mb_chunk_stats(const double *secs, int n, double *sorted, double *min,
                                  double *median, double *max)
{
    memcpy(sorted, secs, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), mb_cmp_double);
    *min = sorted[0];
    *median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    *max = sorted[n - 1];
}

/* CLOCK_MONOTONIC's stated resolution, and its smallest observed step
 * (like STREAM's checktick), in ns (timing.c). */
long long mb_timer_resolution_ns(void);
long long mb_timer_granularity_ns(void);

#endif
