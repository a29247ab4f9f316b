/*
 * membench family "loaded": the load threads (loaded.c runs the chaser and
 * the op).  Each runs the op (triad; read = mix.c's r1w0; the mixes of
 * mix.c) over its private arrays in blocks, spinning the injection delay
 * after each, and counts the bytes it moves in the chaser's window.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../harness/timing.h"
#include "families.h"
#include "loaded.h"

/* ---------------------------------------------------- the load kernels */

MB_KERNEL_FN void mb_kern_loaded_triad(double *restrict a, const double *restrict b,
                                       const double *restrict c, double s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        a[j] = b[j] + s * c[j];
}

/* table rows: one pass over A->n elements; read is the mix family's r1w0
 * loop (mix.c, plain C in these variants: eight partial sums) */
void mb_loaded_triad(mb_arrays_t *A)
{
    mb_kern_loaded_triad(A->v[0], A->v[1], A->v[2], LOADED_SCALAR, A->n);
}

void mb_loaded_read(mb_arrays_t *A)
{
    A->scalar = mb_mix_block(MB_MIX_R1W0, (double *const[]){A->v[0]}, A->n);
}

static inline void spin(long long d)
{
    for (long long i = 0; i < d; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        /* isb: what spin loops use on Arm (yield is a nop on most cores) */
        __asm__ __volatile__("isb" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
    }
}

/* One injected delay in ns, measured on this CPU: a pause costs 10 to 140
 * cycles by CPU model, so the count alone says little.  Timed over at
 * least 1 ms of delays, after the window (nothing else is timed then). */
static double delay_ns(long long d)
{
    if (d <= 0)
        return 0.0;
    for (long long reps = 16;; reps *= 4) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
        for (long long r = 0; r < reps; r++)
            spin(d);
        long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
        if (t1 - t0 >= 1000000 || reps >= (1LL << 24))
            return (double)(t1 - t0) / (double)reps;
    }
}

/* First touch by the owner: a = 0, b = 1 + j%8, c = 2 (triad); a = 1 + j%8
 * (read); mixes: mix.c's values (a = 1 + j%8). */
static void loader_fill(const loaded_op_t *lo, loader_t *me)
{
    if (lo->mix >= 0)
        mb_mix_fill(lo->mix, me->v, 0, lo->n);
    for (size_t j = 0; j < lo->n && lo->mix < 0; j++) {
        me->v[0][j] = 0.0;
        me->v[1][j] = (double)(1 + j % 8);
        me->v[2][j] = 2.0;
    }
}

/* Threads 1..nload: first touch, then blocks of the op with the injection
 * delay after each, counting the bytes moved while the chaser is timed;
 * stops at the end of the block it is in when the chaser is done. */
void mb_loaded_loader(loaded_op_t *lo, loader_t *me)
{
    size_t n = lo->n;
    long long delay = lo->ctx->opt[OPT_DELAY];
    loader_fill(lo, me);
    __atomic_fetch_add(&lo->ready, 1, __ATOMIC_RELEASE); /* filled */
    double bytes = 0, b0 = 0, t0 = 0;
    int seen_timed = 0;
    size_t j = 0;
    double sum = 0;
    while (me->secs_window == 0) {
        size_t len = j + lo->block < n ? lo->block : n - j;
        if (lo->mix >= 0) {
            double *p[4] = {NULL, NULL, NULL, NULL};
            for (int a = 0; a < lo->narr; a++)
                p[a] = me->v[a] + j;
            sum += mb_mix_block(lo->mix, p, len);
        } else
            mb_kern_loaded_triad(me->v[0] + j, me->v[1] + j, me->v[2] + j, LOADED_SCALAR, len);
        bytes += (double)len * lo->elem_bytes;
        j += len;
        if (j == n) {
            me->passes++;
            me->last_sum = sum;
            sum = 0;
            j = 0;
        }
        spin(delay);
        int ph = __atomic_load_n(&lo->phase, __ATOMIC_ACQUIRE);
        if (ph >= PH_TIMED && !seen_timed) {
            seen_timed = 1;
            b0 = bytes;
            t0 = mb_clock_seconds(CLOCK_MONOTONIC);
            __atomic_fetch_add(&lo->ready, 1, __ATOMIC_RELEASE); /* counting: the chaser may time */
        }
        if (ph == PH_STOP && seen_timed) {
            double dt = mb_clock_seconds(CLOCK_MONOTONIC) - t0;
            me->secs_window = dt > 0 ? dt : 1e-9;
            me->bytes_window = bytes - b0;
        }
    }
    mb_mix_fence(lo->mix); /* non-temporal stores: visible before checked */
    me->pos = j;
    me->part_sum = sum;
    me->delay_ns = delay_ns(delay);
}

/* The load threads' arithmetic after the run: elements written so far (all
 * after a whole pass, else those of the first pass) hold the op's result,
 * the others are untouched; sums are the exact expected sums.  Returns 1
 * when right, else 0 with why. */
int mb_loaded_check(const loaded_op_t *lo, char *why, size_t len)
{
    const loader_t *L = lo->L;
    size_t n = lo->n;
    for (int l = 0; l < lo->nload; l++) {
        size_t done = L[l].passes > 0 ? n : L[l].pos;
        double prefix = 0, want_sum = 0;
        for (size_t j = 0; j < n; j++) {
            double v = (double)(1 + j % 8);
            if (j < L[l].pos)
                prefix += v;
            want_sum += v;
            if (lo->mix >= 0) {
                for (int a = 0; a < lo->narr && !lo->sums; a++) {
                    double want = mb_mix_expect(lo->mix, a, j, j < done);
                    if (L[l].v[a][j] != want) {
                        snprintf(why, len, "load thread %d: array %d of %s, element %zu = "
                                 "%.17g, expected %.17g", l + 1, a, lo->k->op, j,
                                 L[l].v[a][j], want);
                        return 0;
                    }
                }
                continue;
            }
            double want = j < done ? v + LOADED_SCALAR * 2.0 : 0.0;
            if (L[l].v[0][j] != want || L[l].v[1][j] != v || L[l].v[2][j] != 2.0) {
                snprintf(why, len, "load thread %d: a[%zu] = %.17g, expected %.17g", l + 1, j,
                         L[l].v[0][j], want);
                return 0;
            }
        }
        if (lo->sums && ((L[l].passes > 0 && L[l].last_sum != want_sum) ||
                         L[l].part_sum != prefix)) {
            snprintf(why, len, "load thread %d: sum %.17g (%lld whole passes), partial sum "
                     "%.17g over %zu elements, expected %.17g and %.17g", l + 1, L[l].last_sum,
                     L[l].passes, L[l].part_sum, L[l].pos, want_sum, prefix);
            return 0;
        }
    }
    return 1;
}
