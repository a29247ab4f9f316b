/*
 * membench timing: what the harness records about its clock (timing.h).
 */
#include "timing.h"

long long mb_timer_resolution_ns(void)
{
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    return (long long)res.tv_sec * 1000000000LL + res.tv_nsec;
}

/* Like STREAM's checktick: the smallest observed step of the clock over 20
 * distinct consecutive readings, in ns. */
long long mb_timer_granularity_ns(void)
{
    long long best = -1;
    for (int i = 0; i < 20; i++) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC), t1;
        do
            t1 = mb_clock_ns(CLOCK_MONOTONIC);
        while (t1 == t0);
        if (best < 0 || t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}
