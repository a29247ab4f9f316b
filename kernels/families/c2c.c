/*
 * membench family "c2c": cache-to-cache latency between two CPUs.
 *
 * Two threads, A on CPU a and B on CPU b (pthreads pinned with
 * sched_setaffinity, each checking with sched_getcpu that it ran there),
 * hand a cache line back and forth.  The pairs are every pair (i < j) of
 * the harness's bound team: --threads 2 --affinity cpus:a,b measures one
 * pair (the pipeline's sampled cells), --threads N every pair of the N
 * CPUs (the full matrix).  Results are kept and written after the last pair,
 * so no record is written (and no OpenMP team woken) while a pair runs.
 *
 * op cas       one 64-bit word on its own line; A spins
 *              compare-and-swap(2k -> 2k+1), B compare-and-swap(2k+1 -> 2k+2):
 *              every hand-off is an atomic read-for-ownership of the line.
 * op two_line  A stores k to line X and spins loading line Y until it reads
 *              k; B spins loading X until it reads k and stores k to Y: each
 *              hand-off moves a line modified in the other core.
 * op clean     read-shared (clean) lines: B loads a window of --clean-lines
 *              lines (random lines of a pool of --size bytes), then A chases
 *              the window (one dependent load per line, random order) while
 *              the lines sit clean in B's caches.  A holds none of them,
 *              provably (issue 30): the pool is flushed from every cache
 *              (clflush) after it is built, and A flushes each window after
 *              its chase, before B reads it again; so B's loads bring the
 *              lines from memory into B's caches and each of A's loads is a
 *              transfer from there (the pool alone, written by the main
 *              thread on CPU a and smaller than an L3, left A's copies in
 *              A's L3 for pairs across L3s; Arm: dc civac).  Elsewhere only the
 *              pool's size keeps them out (clean_flushed false).  The flags
 *              and flushes are not timed; one hand-off = one clean load.
 * op dirty     modified lines (MLC's HITM): B stores to every line of a
 *              window (a word beside the chase's pointer, so each line is
 *              Modified in B's caches), then A chases the window, one
 *              dependent load per line: each load is a transfer of a line
 *              modified in the other core.  No flush is needed: B's next
 *              stores to a window take its lines back from A (read for
 *              ownership).  One hand-off = one dependent load of a modified
 *              line, the quantity of clean beside it; two_line's is half a
 *              round trip (c2clat's).
 *
 * Timing: CLOCK_MONOTONIC around --roundtrips round trips (cas, two_line;
 * hand-off = time / (2 x round trips), half the round trip) or around each
 * window's chase (clean, dirty: ceil(2 x --roundtrips / --clean-lines) windows per
 * sample, hand-off = time / lines), per sample; --samples
 * samples after one dropped warm-up sample.  The record gives the median
 * hand-off with p10 / p90 / min over the samples.  A sample shorter than
 * 20 timer ticks, or a median of 0 ns, makes the record failed: such a
 * number is the clock's, not the machine's.
 *
 * Validation: the hand-offs each thread counted equal the expected count,
 * and the line ends at its expected value (cas: 2 x hand-offs / 2 x round
 * trips; two_line: X = Y = the last round trip); every clean window's chase
 * ends on its first line.  A partner that stops answering for 10 s fails
 * the pair instead of hanging the harness.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "families.h"
#include "../harness/cpu.h"
#include "../harness/placement.h"
#include "../harness/timing.h"
#include "c2c.h"

const mb_famopt_t mb_c2c_options[] = {
    {"samples", "N", 100, 3, 1000000, "timed samples per pair and op (one more is dropped)", NULL},
    {"roundtrips", "N", 1000, 1, 1000000000LL,
     "round trips per sample (cas, two_line); clean: 2 x N lines per sample, in whole "
     "windows", NULL},
    {"clean-lines", "N", 64, 1, 4096, "lines per clean window (op clean)", NULL},
    {"seed", "N", 20240601, 0, (1LL << 62), "random seed of the clean windows", NULL},
    {NULL, NULL, 0, 0, 0, NULL, NULL},
};

typedef struct side {
    pthread_t tid;
    const shared_t *sh;
    int op, who, cpu;           /* who: 0 = A (times), 1 = B */
    long long samples, rt;      /* timed samples + 1 dropped, per-sample count */
    double *ns;                 /* A: hand-off ns of each sample (incl. dropped) */
    double *sample_ns;          /* A: sample durations */
    long long count;            /* hand-offs this thread completed */
    int *sw;                    /* involuntary switches during each sample (-1 unknown) */
    mb_disturb_t *dist;
    int bind_err, cpu_start, cpu_end, timeout, chase_bad;
} __attribute__((aligned(128))) side_t; /* the two sides share no line */

/* Every 2^20 spins a spinner asks this: the first call sets a deadline
 * C2C_TIMEOUT_NS ahead, later ones say whether it has passed. */
static int past_deadline(long long *deadline)
{
    long long now = mb_clock_ns(CLOCK_MONOTONIC);
    if (!*deadline)
        *deadline = now + C2C_TIMEOUT_NS;
    return now > *deadline;
}

/* spin until *p == want (acquire); 1 on timeout */
static int wait_eq(const uint64_t *p, uint64_t want)
{
    long long deadline = 0;
    for (unsigned long spins = 1;; spins++) {
        /* no pause: a pause (up to ~140 cycles) would delay noticing the
         * line's arrival, and the hand-off is what is measured */
        if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want)
            return 0;
        if ((spins & 0xFFFFF) == 0 && past_deadline(&deadline))
            return 1;
    }
}

/* cas_from: spin on compare-and-swap(from -> to), 1 on timeout; inline
 * LSE or LL/SC on Arm (c2c_cas.h, which uses past_deadline above) */
#include "c2c_cas.h"

const char *mb_c2c_cas_atomics(void)
{
#if defined(__aarch64__)
    return mb_cpu_supports("atomics") == 1 ? "lse" : "llsc";
#elif defined(__x86_64__) || defined(__i386__)
    return "lock";
#else
    return "unknown";
#endif
}

/* Evict a clean window's lines from every cache of the coherence domain
 * (clflush on x86, dc civac on Arm) and wait for it; a no-op elsewhere. */
void mb_c2c_flush_window(const shared_t *sh, const unsigned *win)
{
#if defined(__x86_64__) || defined(__i386__)
    for (size_t i = 0; i < sh->wlines; i++)
        __builtin_ia32_clflush(sh->pool + (size_t)win[i] * sh->line);
    __builtin_ia32_mfence();
#elif defined(__aarch64__)
    /* dc civac: clean and invalidate to the point of coherence (every
     * cache of the domain), then wait for it to complete */
    for (size_t i = 0; i < sh->wlines; i++)
        __asm__ volatile("dc civac, %0" ::"r"(sh->pool + (size_t)win[i] * sh->line) : "memory");
    __asm__ volatile("dsb ish" ::: "memory");
#else
    (void)sh, (void)win;
#endif
}

MB_KERNEL_FN void *mb_kern_c2c_clean(void *p, size_t loads)
{
    void **q = p;
    while (loads--)
        q = *q;
    return q;
}

/* After sample smp (outside its timed part): this thread's involuntary
 * context switches since the last mark. */
static inline void mark_sample(side_t *s, long long smp, long long *last)
{
    long long now = mb_thread_ivcsw();
    s->sw[smp] = now >= 0 && *last >= 0 ? (int)(now - *last) : -1;
    *last = now;
}

/* The loops keep their state in locals (written back after each sample):
 * nothing but the line under test moves between the two cores. */
static void run_cas(side_t *s)
{
    uint64_t *x = s->sh->x;
    uint64_t k = 0, who = (uint64_t)s->who;
    long long rt = s->rt, count = 0;
    int timeout = 0;
    long long last = mb_thread_ivcsw();
    for (long long smp = 0; smp < s->samples && !timeout; smp++) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
        for (long long r = 0; r < rt; r++, k++) {
            if (cas_from(x, 2 * k + who, 2 * k + who + 1)) {
                timeout = 1;
                break;
            }
            count++;
        }
        long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
        if (s->who == 0) {
            s->sample_ns[smp] = (double)(t1 - t0);
            s->ns[smp] = (double)(t1 - t0) / (2.0 * (double)rt);
        }
        mark_sample(s, smp, &last);
    }
    s->count = count, s->timeout = timeout;
}

static void run_two_line(side_t *s)
{
    uint64_t *x = s->sh->x, *y = s->sh->y;
    uint64_t k = 0;
    long long rt = s->rt, count = 0;
    int timeout = 0, ping = s->who == 0;
    long long last = mb_thread_ivcsw();
    for (long long smp = 0; smp < s->samples && !timeout; smp++) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
        for (long long r = 0; r < rt; r++) {
            k++;
            if (ping) {
                __atomic_store_n(x, k, __ATOMIC_RELEASE);
                timeout = wait_eq(y, k);
            } else {
                timeout = wait_eq(x, k);
                __atomic_store_n(y, k, __ATOMIC_RELEASE);
            }
            if (timeout)
                break;
            count++;
        }
        long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
        if (ping) {
            s->sample_ns[smp] = (double)(t1 - t0);
            s->ns[smp] = (double)(t1 - t0) / (2.0 * (double)rt);
        }
        mark_sample(s, smp, &last);
    }
    s->count = count, s->timeout = timeout;
}

/* ops clean and dirty: B readies a window's lines in its caches, clean
 * (loads) or Modified (a store beside each line's chase pointer, which is
 * left as it is); A chases the window, timed, and for clean flushes it from
 * every cache before B takes it again (dirty needs no flush: B's next
 * stores take the lines back from A). */
static void run_window(side_t *s)
{
    const shared_t *sh = s->sh;
    uint64_t *ready = sh->x, *done = sh->y;
    uint64_t k = 0;
    long long rt = s->rt, count = 0;
    int timeout = 0, bad = 0, partner = s->who == 1, dirty = s->op == OP_DIRTY;
    volatile uintptr_t sink = 0;
    long long last = mb_thread_ivcsw();
    for (long long smp = 0; smp < s->samples && !timeout; smp++) {
        double busy = 0;
        for (long long r = 0; r < rt; r++, k++) { /* rt = windows here */
            const unsigned *win = sh->perm + (k % sh->nwin) * sh->wlines;
            if (partner) {
                if ((timeout = wait_eq(done, k)))
                    break;
                if (dirty) {
                    for (size_t i = 0; i < sh->wlines; i++)
                        ((volatile uintptr_t *)(sh->pool + (size_t)win[i] * sh->line))[1] = (uintptr_t)k;
                } else {
                    uintptr_t acc = 0;
                    for (size_t i = 0; i < sh->wlines; i++)
                        acc += *(volatile uintptr_t *)(sh->pool + (size_t)win[i] * sh->line);
                    sink = acc;
                }
                __atomic_store_n(ready, k + 1, __ATOMIC_RELEASE);
            } else {
                if ((timeout = wait_eq(ready, k + 1)))
                    break;
                void *first = sh->pool + (size_t)win[0] * sh->line;
                long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
                void *end = mb_kern_c2c_clean(first, sh->wlines);
                long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
                busy += (double)(t1 - t0);
                bad += end != first;
                if (!dirty)
                    mb_c2c_flush_window(sh, win); /* out of every cache before B reads it again */
                __atomic_store_n(done, k + 1, __ATOMIC_RELEASE);
            }
            count++;
        }
        if (!partner) {
            s->sample_ns[smp] = busy;
            s->ns[smp] = busy / ((double)rt * (double)sh->wlines);
        }
        mark_sample(s, smp, &last);
    }
    (void)sink;
    s->count = count, s->timeout = timeout, s->chase_bad = bad;
}

static void *side_main(void *arg)
{
    side_t *s = arg;
    s->bind_err = mb_bind_self(s->cpu);
    s->cpu_start = sched_getcpu();
    if (!s->bind_err) {
        /* A: its CPU's clock before and after (its partner waits untimed) */
        if (s->who == 0)
            s->dist->ghz0 = mb_disturb_ghz();
        mb_disturb_thread_begin(s->dist, s->who);
        if (s->op == OP_CAS)
            run_cas(s);
        else if (s->op == OP_TWO_LINE)
            run_two_line(s);
        else
            run_window(s); /* clean, dirty */
        mb_disturb_thread_end(s->dist, s->who);
        if (s->who == 0)
            s->dist->ghz1 = mb_disturb_ghz();
    }
    s->cpu_end = sched_getcpu();
    return NULL;
}

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (double)(n - 1);
    int lo = (int)pos;
    double frac = pos - lo;
    return lo + 1 < n ? sorted[lo] * (1 - frac) + sorted[lo + 1] * frac : sorted[lo];
}

void mb_c2c_measure_pair(mb_run_ctx_t *ctx, shared_t *sh, int op, int a, int b, result_t *res)
{
    const long long *opt = ctx->opt;
    long long samples = opt[OPT_SAMPLES] + 1, rt = opt[OPT_ROUNDTRIPS];
    /* clean: about as many hand-offs per sample as 2 x round trips */
    long long per_unit = 2; /* hand-offs per round trip, or lines per window */
    if (op == OP_CLEAN || op == OP_DIRTY) {
        per_unit = (long long)sh->wlines;
        rt = (2 * rt + per_unit - 1) / per_unit;
    }
    side_t s[2];
    memset(s, 0, sizeof s);
    double *ns = calloc((size_t)samples, sizeof(double));
    double *dur = calloc((size_t)samples, sizeof(double));
    res->secs = calloc((size_t)samples, sizeof(double));
    double *sorted = calloc((size_t)samples, sizeof(double));
    int *sw = calloc(2 * (size_t)samples, sizeof(int));
    res->a = a, res->b = b, res->status = MB_OK;
    if (!ns || !dur || !res->secs || !sorted || !sw) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason, "out of memory");
        free(ns), free(dur), free(sorted), free(sw);
        return;
    }
    int pair[2] = {a, b};
    mb_disturb_begin(&res->dist, 2, pair, 2, 1, 0);
    *sh->x = 0, *sh->y = 0;
    for (int w = 0; w < 2; w++) {
        s[w] = (side_t){.sh = sh, .op = op, .who = w, .cpu = w ? b : a, .samples = samples,
                        .rt = rt, .ns = ns, .sample_ns = dur, .sw = sw + w * samples,
                        .dist = &res->dist};
    }
    int started = 0;
    for (int w = 0; w < 2; w++)
        started += pthread_create(&s[w].tid, NULL, side_main, &s[w]) == 0;
    if (started < 2) {
        /* one thread alone would spin until its timeout */
        if (started == 1)
            pthread_join(s[0].tid, NULL);
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason, "pthread_create failed");
        free(ns), free(dur), free(sorted), free(sw);
        return;
    }
    for (int w = 0; w < 2; w++)
        pthread_join(s[w].tid, NULL);
    mb_disturb_end(&res->dist, 0);
    if (ctx->test_corrupt)
        s[1].count--; /* test only: a lost hand-off must fail validation */

    res->a_ran = s[0].cpu_end, res->b_ran = s[1].cpu_end;
    long long per = samples * rt;
    /* hand-offs: each side's completed round trips (windows for clean)
     * must be all of them */
    res->expected = per * per_unit;
    res->count = (s[0].count < s[1].count ? s[0].count : s[1].count) * per_unit;
    res->per_sample = rt * per_unit;
    uint64_t want_x = op == OP_CAS ? 2 * (uint64_t)per : (uint64_t)per;
    int line_ok = op == OP_CLEAN || op == OP_DIRTY ? *sh->x == (uint64_t)per && *sh->y == (uint64_t)per
                : op == OP_CAS   ? *sh->x == want_x
                                 : *sh->x == want_x && *sh->y == want_x;
    if (s[0].bind_err || s[1].bind_err) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason, "sched_setaffinity to CPU %d failed: %s",
                 s[0].bind_err ? a : b, strerror(s[0].bind_err ? s[0].bind_err : s[1].bind_err));
    } else if (s[0].timeout || s[1].timeout) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "thread %s waited more than %lld s for its partner (hand-offs %lld and %lld "
                 "of %lld)", s[0].timeout ? "A" : "B", C2C_TIMEOUT_NS / 1000000000LL,
                 s[0].count, s[1].count, per);
    } else if (s[0].cpu_start != a || s[0].cpu_end != a || s[1].cpu_start != b ||
               s[1].cpu_end != b) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "threads ran on CPUs %d->%d and %d->%d, pinned to %d and %d", s[0].cpu_start,
                 s[0].cpu_end, s[1].cpu_start, s[1].cpu_end, a, b);
    } else if (s[0].count != per || s[1].count != per || !line_ok || s[0].chase_bad) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "validation failed: hand-offs counted %lld (A) and %lld (B), expected %lld; "
                 "line value %llu, expected %llu; %d clean chases ended off their first line",
                 s[0].count, s[1].count, per, (unsigned long long)*sh->x,
                 (unsigned long long)(op == OP_CLEAN || op == OP_DIRTY ? (uint64_t)per : want_x), s[0].chase_bad);
    }
    int n = (int)samples - 1; /* the first sample is the warm-up */
    for (int i = 0; i < n; i++)
        res->secs[i] = dur[i + 1] * 1e-9;
    res->nsecs = n;
    double smin, smed, smax;
    mb_chunk_stats(dur + 1, n, sorted, &smin, &smed, &smax);
    res->shortest_ns = smin;
    mb_chunk_stats(ns + 1, n, sorted, &res->min, &res->med_all, &smax);
    /* per kept sample: was either thread switched out during it?  The
     * statistics from the undisturbed samples when there are enough */
    int known = 1, nclean = 0;
    for (int i = 1; i <= n; i++)
        known &= sw[i] >= 0 && sw[samples + i] >= 0;
    res->switched = known ? calloc((size_t)n + 1, sizeof(int)) : NULL;
    double *clean = calloc((size_t)n + 1, sizeof(double));
    for (int i = 0; res->switched && clean && i < n; i++) {
        res->switched[i] = sw[i + 1] + sw[samples + i + 1] > 0;
        res->nswitched += res->switched[i];
        if (!res->switched[i])
            clean[nclean++] = ns[i + 1];
    }
    res->basis_clean = res->switched && clean && res->nswitched > 0 &&
                       C2C_ENOUGH_CLEAN(nclean, n);
    if (res->basis_clean) {
        mb_chunk_stats(clean, nclean, sorted, &res->min, &res->med, &smax);
        res->p10 = quantile(sorted, nclean, 0.10);
        res->p90 = quantile(sorted, nclean, 0.90);
    } else {
        mb_chunk_stats(ns + 1, n, sorted, &res->min, &res->med, &smax);
        res->p10 = quantile(sorted, n, 0.10);
        res->p90 = quantile(sorted, n, 0.90);
    }
    free(clean), free(sw);
    long long gran = ctx->gran_ns;
    const char *test_gran = getenv("MEMBENCH_TEST_C2C_GRANULARITY_NS"); /* test only */
    if (test_gran)
        gran = atoll(test_gran);
    if (res->status == MB_OK && (res->med <= 0 || smin < C2C_MIN_TICKS * (double)gran)) {
        res->status = MB_FAILED;
        snprintf(res->reason, sizeof res->reason,
                 "below the timer's resolution: shortest sample %.0f ns is under %d ticks of "
                 "%lld ns (median hand-off %.3g ns); raise --roundtrips", smin, C2C_MIN_TICKS,
                 gran, res->med);
    }
    free(ns), free(dur), free(sorted);
}

