/*
 * membench family "c2c" (c2c.c, c2c_run.c): what the hand-off loops and
 * the run share.
 */
#ifndef MEMBENCH_C2C_H
#define MEMBENCH_C2C_H

#include <stddef.h>
#include <stdint.h>

#include "families.h"

enum { OPT_SAMPLES, OPT_ROUNDTRIPS, OPT_CLEAN_LINES, OPT_SEED };

#define C2C_MIN_TICKS 20
#define C2C_TIMEOUT_NS 10000000000LL
#define C2C_PAGE mb_base_page_bytes() /* each flag on a page of its own */

enum { OP_CAS, OP_TWO_LINE, OP_CLEAN, OP_DIRTY };

/* the lines: each flag on a page of its own (no adjacent-line pairing) */
typedef struct shared {
    uint64_t *x, *y;            /* cas: x; two_line: x, y; clean: ready = x, done = y */
    char *pool;                 /* clean: the pool, one pointer per line */
    size_t line, nlines, wlines, nwin;
    unsigned *perm;             /* clean: line of each window slot */
} shared_t;

/* one (pair, op) measured */
typedef struct result {
    const mb_kernel_t *k;
    int a, b, a_ran, b_ran, status;
    char reason[512];
    double *secs;               /* kept samples, seconds */
    int nsecs;
    double med, p10, p90, min, shortest_ns;
    long long count, expected, per_sample;
    /* disturbance: per kept sample 1 = either thread was switched out
     * during it (NULL = not recorded); the statistics above are over the
     * undisturbed samples when there are enough (basis_clean), else over
     * all; med_all over all */
    int *switched, nswitched, basis_clean;
    double med_all;
    mb_disturb_t dist;          /* over the pair's whole run */
} result_t;

/* Enough undisturbed samples to base the statistics on: at least half of
 * the kept samples, and at least 3. */
#define C2C_ENOUGH_CLEAN(clean, n) ((clean) >= 3 && 2 * (clean) >= (n))

/* One pair and op measured: threads A on CPU a and B on CPU b (c2c.c). */
/* clean: whether a window is flushed from every cache (clflush, x86; dc
 * civac, aarch64) */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
#define MB_C2C_FLUSHES 1
#else
#define MB_C2C_FLUSHES 0
#endif
void mb_c2c_flush_window(const shared_t *sh, const unsigned *win);
/* the compare-and-swap op cas runs: "lse" (casal) or "llsc" (ldaxr/stlxr)
 * on aarch64, "lock" (lock cmpxchg) on x86 */
const char *mb_c2c_cas_atomics(void);
void mb_c2c_measure_pair(mb_run_ctx_t *ctx, shared_t *sh, int op, int a, int b, result_t *res);

#endif
