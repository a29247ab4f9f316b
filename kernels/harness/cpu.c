/* The core clock, measured rather than read: a chain of dependent integer
 * adds retires one add per cycle (latency 1 on every x86-64 core), so adds
 * per second is the clock of the CPU this thread runs on, turbo included.
 * A VM exposes no cycle counters; this needs none. The adds are register to
 * register: recent Intel cores fold add-immediate chains at rename (such a
 * chain read 20.9 "GHz" on a 2.6 GHz Sapphire Rapids guest), while this one
 * agrees with a chain of 3-cycle multiplies (3.59 GHz both). */
#include <math.h>
#include <time.h>

#include "cpu.h"

enum { ADDS_PER_BLOCK = 64, BLOCKS = 1 << 15, TRIALS = 9 };

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double mb_core_ghz(void)
{
    return mb_core_ghz_trials(TRIALS);
}

double mb_core_ghz_trials(int trials)
{
#if defined(__x86_64__) || defined(__aarch64__)
    double best = 0.0;
    unsigned long long x = 1; /* doubles, then wraps to 0: the value is never used */
    /* the best of several ~1 ms trials: an interrupt or a clock still
     * ramping up only slows a trial down */
    for (int trial = 0; trial < trials; trial++) {
        double t0 = monotonic_s();
        for (int b = 0; b < BLOCKS; b++)
#if defined(__x86_64__)
            __asm__ volatile(".rept 64\n\taddq %0, %0\n\t.endr" : "+r"(x));
#else /* a register add has latency 1 on the Neoverse and Ampere cores too */
            __asm__ volatile(".rept 64\n\tadd %0, %0, %0\n\t.endr" : "+r"(x));
#endif
        double secs = monotonic_s() - t0;
        double ghz = (double)BLOCKS * ADDS_PER_BLOCK / secs / 1e9;
        if (ghz > best)
            best = ghz;
    }
    return best;
#else
    (void)trials;
    return NAN;
#endif
}
