/*
 * membench family "loaded": loaded latency (the chase under bandwidth load).
 *
 * --threads N (>= 2).  Thread 0 runs chase.c's random chase over a --size
 * working set (DRAM-sized).  Threads 1..N-1 load: each runs the op (triad;
 * read = mix.c's r1w0; the mixes r1w0 .. r2w1nt of mix.c) over private
 * arrays of --size bytes, in blocks of --delay-every lines, spinning
 * --delay `pause`s after each (the injection delay; 0 = flat out).  Every
 * thread is pinned and first-touches its own memory.
 *
 * Sequence: the load threads start; when all run, the chaser calibrates
 * its chunk (>= --chunk-ms under load; the warm-up), then walks the cycle
 * in fixed stretches (chase_walk.c), 3 walks (or ntimes - 1 chunks); the
 * load threads count their bytes over those timed walks (the window) and
 * stop after it.  One record per op: ns_per_load, the mean over the window
 * (latency_statistic "window-mean", as MLC averages), ns_stretch_min_mean
 * beside it (the least loaded moment), ns_median, gbps (the load threads'
 * bytes / seconds in the window, STREAM counting), gbps_wa, delay,
 * load_threads.
 *
 * Validation: the chase cycle before and after timing; the load threads'
 * arithmetic (triad and mixes: every element written so far, the others
 * untouched, inputs unchanged; read, r1w0: the exact sums of the passes).
 */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../harness/cpu.h"
#include "families.h"
#include "chase_cycle.h"
#include "chase_walk.h"
#include "../harness/placement.h"
#include "../harness/timing.h"

#define LOADED_SCALAR 3.0

enum { OPT_DELAY, OPT_EVERY, OPT_GROUP, OPT_SEED, OPT_CHUNK_MS, OPT_SPACING };
const mb_famopt_t mb_loaded_options[] = {
    {"delay", "D", 0, 0, 1000000000LL,
     "injection delay: pause iterations the load threads spin after every block "
     "(0 = flat out)", NULL},
    {"delay-every", "LINES", 8, 1, 1 << 20, "cache lines per array per block", NULL},
    {"group", "BYTES|full", 256 * 1024, 64, 1LL << 50,
     "bytes per group of the random chase, a multiple of --spacing (as "
     "chase); full = one random cycle over the whole working set", "full"},
    {"seed", "N", 20240601, 0, (1LL << 62), "random seed of the chase permutation", NULL},
    {"chunk-ms", "MS", 10, 1, 10000, "minimum duration of one timed chase chunk", NULL},
    {"spacing", "BYTES", MB_CHASE_DEFAULT_SPACING, 0, 1LL << 40,
     "bytes per pointer slot of the random chase, a power of two from the line size "
     "to a page (as chase)", NULL},
    {NULL, NULL, 0, 0, 0, NULL, NULL},
};

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
#else
        __asm__ __volatile__("" ::: "memory");
#endif
    }
}

/* per load thread */
typedef struct loader {
    mb_mapping_t maps[4];
    double *v[4];
    double bytes_window;   /* bytes moved while the chaser was timed */
    double secs_window;
    long long passes;      /* whole passes completed */
    double last_sum;       /* read: sum of the last whole pass */
    size_t pos;            /* elements done in the pass it stopped in */
    double part_sum;       /* read: sum of those */
    char pad[64];
} loader_t;

enum { PH_START = 0, PH_WARM, PH_TIMED, PH_STOP };

/* One op's run: the chase, the load threads, and what they share. */
typedef struct loaded_op {
    mb_run_ctx_t *ctx;
    const mb_kernel_t *k;
    int mix;               /* the mix.c loop it runs (read: r1w0), or -1: triad */
    int sums;              /* read, r1w0: the load returns a sum */
    int narr;              /* the loader's own arrays */
    int nload;             /* load threads (1..nload) */
    size_t n;              /* elements per loader array */
    size_t block;          /* elements per block */
    double elem_bytes;     /* bytes moved per element (STREAM counting) */
    loader_t *L;
    const mb_mapping_t *map; /* the chase: nl slots of `spacing` bytes at base */
    char *base;
    unsigned *order;       /* the cycle's visiting order */
    size_t nl, line, spacing; /* line: the cache line (the loaders' blocks) */
    double core_ghz;       /* the chasing CPU's measured clock */
    double *secs, *sorted;
    mb_chase_walks_t wk;
    int phase;             /* written by the chaser, read by the loaders */
    int ready;             /* loaders that first-touched their arrays, then that count */
    double chase_t0, chase_t1;
} loaded_op_t;

/* Each loader's arrays, mapped with the policy (not first-touched: their
 * owner does that); allmaps gets them after the chase's own map. */
static int map_loaders(loaded_op_t *lo, mb_mapping_t *allmaps, int *nmaps, char *why,
                       size_t len)
{
    mb_run_ctx_t *ctx = lo->ctx;
    int st = MB_OK;
    for (int l = 0; l < lo->nload && st == MB_OK; l++)
        for (int a = 0; a < lo->narr && st == MB_OK; a++) {
            mb_mapping_t *m = &lo->L[l].maps[a];
            st = mb_map((mb_pages_kind_t)ctx->pages, ctx->size_bytes, 1 + lo->narr * lo->nload,
                        m, why, len);
            if (st == MB_OK)
                st = mb_policy_apply(m->addr, m->len, ctx->policy, why, len);
            lo->L[l].v[a] = m->addr;
            if (st == MB_OK)
                allmaps[(*nmaps)++] = *m;
        }
    return st;
}

/* Thread 0: waits for every loader, then the calibrated, timed walks. */
static void chaser(loaded_op_t *lo)
{
    int r;
    do {
#pragma omp atomic read
        r = lo->ready;
    } while (r < lo->nload);
    __atomic_store_n(&lo->phase, PH_WARM, __ATOMIC_RELEASE);
    void *p = lo->base + mb_chase_slot_at(lo->order[0], lo->spacing);
    double chunk_ns = (double)lo->ctx->opt[OPT_CHUNK_MS] * 1e6; /* calibrated under load, untimed */
    size_t chunk = mb_chase_calibrate(&p, chunk_ns);
    __atomic_store_n(&lo->phase, PH_TIMED, __ATOMIC_RELEASE);
    /* the window opens once every loader counts (a descheduled one would count nothing) */
    while (__atomic_load_n(&lo->ready, __ATOMIC_ACQUIRE) < 2 * lo->nload) {}
    lo->chase_t0 = mb_clock_seconds(CLOCK_MONOTONIC);
    mb_chase_walk_calibrated(&p, chunk, chunk_ns, lo->ctx->ntimes, MB_CHASE_MIN_WALKS, lo->nl,
                             lo->secs, &lo->wk);
    __atomic_store_n(&lo->phase, PH_STOP, __ATOMIC_RELEASE);
    lo->chase_t1 = mb_clock_seconds(CLOCK_MONOTONIC);
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
static void loader(loaded_op_t *lo, loader_t *me)
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
}

/* The load threads' arithmetic after the run: elements written so far (all
 * after a whole pass, else those of the first pass) hold the op's result,
 * the others are untouched; sums are the exact expected sums.  Returns 1
 * when right, else 0 with why. */
static int check_loaders(const loaded_op_t *lo, char *why, size_t len)
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

/* Validation after the run (--test-corrupt breaks the cycle and one load
 * result first): the cycle again, the load arithmetic, every timed walk
 * closed.  Returns 1 when all hold; pt->reason says what did not. */
static int validate_run(loaded_op_t *lo, mb_point_t *pt)
{
    if (lo->ctx->test_corrupt) {
        mb_chase_break(lo->base, lo->nl, lo->spacing, lo->order);
        if (lo->sums)
            lo->L[0].part_sum += 1.0;
        else
            lo->L[0].v[lo->mix < 0 ? 0 : lo->narr - 1][0] += 1.0;
    }
    int ok = mb_chase_verify_order(lo->base, lo->nl, lo->spacing, lo->order, pt->reason,
                                   sizeof pt->reason);
    char lwhy[256] = "";
    int lok = check_loaders(lo, lwhy, sizeof lwhy);
    if (!lok) {
        size_t len = strlen(pt->reason);
        if (ok)
            snprintf(pt->reason, sizeof pt->reason, "validation failed: %s", lwhy);
        else
            snprintf(pt->reason + len, sizeof pt->reason - len, "; %s", lwhy);
    }
    if (!lo->wk.closed) {
        size_t len = strlen(pt->reason);
        snprintf(pt->reason + len, sizeof pt->reason - len, "%sa timed walk of %zu loads "
                 "did not end where it started", ok && lok ? "validation failed: " : "; ",
                 lo->wk.walk_loads);
    }
    return ok && lok && lo->wk.closed;
}

/* A measured point: the chase's latency, the loaders' bandwidth in the
 * chaser's window (STREAM counting), and one line on stderr. */
static void point_measured(const loaded_op_t *lo, mb_point_t *pt, int ok)
{
    const mb_kernel_t *k = lo->k;
    double gbps = 0;
    long long minpasses = -1;
    for (int l = 0; l < lo->nload; l++) {
        if (lo->L[l].secs_window > 0)
            gbps += lo->L[l].bytes_window / lo->L[l].secs_window / 1e9;
        if (minpasses < 0 || lo->L[l].passes < minpasses)
            minpasses = lo->L[l].passes;
    }
    pt->gbps = pt->gbps_mean = gbps;
    pt->bytes_per_iter = mb_kernel_bytes(k, sizeof(double), lo->n, 0);
    pt->bytes_per_iter_wa = mb_kernel_bytes(k, sizeof(double), lo->n, 1);
    pt->gbps_wa = gbps * (double)pt->bytes_per_iter_wa / (double)pt->bytes_per_iter;
    pt->secs = lo->secs;
    pt->nsecs = lo->wk.walks * lo->wk.stretches;
    pt->valid = ok;
    pt->status = ok ? MB_OK : MB_FAILED;
    mb_chase_loaded_latency_keys(pt, ok ? &lo->wk : NULL, lo->sorted, lo->nl);
    mb_point_int(pt, "loader_passes_min", minpasses);
    mb_point_dbl(pt, "window_seconds", lo->chase_t1 - lo->chase_t0);
    fprintf(stderr, "loaded %-5s delay %lld: chase %.2f ns/load (%s, %d walks x %d "
                    "stretches) while %d load threads move %.2f GB/s%s%s\n", k->op,
            lo->ctx->opt[OPT_DELAY],
            lo->wk.walks ? mb_chase_window_mean(lo->secs, lo->wk.walks, lo->wk.stretches,
                                                     lo->wk.walk_loads) : NAN,
            MB_CHASE_LOADED_STATISTIC, lo->wk.walks, lo->wk.stretches, lo->nload, gbps,
            ok ? "" : "; ", ok ? "" : pt->reason);
}

/* The keys of every point: the chase's shape and the load's. */
static void point_setup_keys(const loaded_op_t *lo, mb_point_t *pt)
{
    const long long *opt = lo->ctx->opt;
    mb_point_int(pt, "working_set_bytes", (long long)(lo->nl * lo->spacing));
    mb_point_int(pt, "cycle_length", (long long)lo->nl);
    mb_point_int(pt, "line_bytes", (long long)lo->line);
    mb_point_int(pt, "pointer_spacing_bytes", (long long)lo->spacing);
    mb_point_dbl(pt, "core_ghz", lo->core_ghz);
    mb_chase_group_keys(pt, (size_t)opt[OPT_GROUP], lo->nl * lo->spacing);
    mb_point_int(pt, "seed", opt[OPT_SEED]);
    mb_point_dbl(pt, "chunk_ms", (double)opt[OPT_CHUNK_MS]);
    mb_point_int(pt, "delay", opt[OPT_DELAY]);
    mb_point_int(pt, "delay_every_lines", opt[OPT_EVERY]);
    mb_point_int(pt, "load_threads", lo->nload);
    mb_point_int(pt, "loader_array_bytes", (long long)(lo->n * sizeof(double)));
    mb_point_int(pt, "loader_arrays", lo->narr);
}

/* One op: build and verify the chase, map the loaders, run chaser and
 * loaders together, validate, emit one point. */
static void one_thread(void *arg, int t)
{
    loaded_op_t *lo = arg;
    if (t == 0)
        chaser(lo);
    else if (t <= lo->nload)
        loader(lo, &lo->L[t - 1]);
}

static int one_op(loaded_op_t *lo)
{
    mb_run_ctx_t *ctx = lo->ctx;
    mb_point_t pt;
    memset(&pt, 0, sizeof pt);
    pt.op = lo->k;
    pt.size_bytes = ctx->size_bytes;
    pt.elements = lo->nl;
    pt.bytes_per_iter = pt.bytes_per_iter_wa = -1;
    pt.gbps = pt.gbps_mean = pt.gbps_wa = NAN;

    /* chase: build and verify before anything is timed */
    mb_chase_build_random(lo->base, lo->nl * lo->spacing, lo->spacing,
                          (size_t)ctx->opt[OPT_GROUP], (unsigned long long)ctx->opt[OPT_SEED],
                          lo->order);
    int ok = mb_chase_verify_order(lo->base, lo->nl, lo->spacing, lo->order, pt.reason,
                                   sizeof pt.reason);

    lo->L = calloc((size_t)lo->nload, sizeof *lo->L);
    mb_mapping_t *allmaps = calloc((size_t)(1 + 4 * lo->nload), sizeof *allmaps);
    if (!lo->L || !allmaps) {
        free(lo->L), free(allmaps);
        snprintf(ctx->reason, sizeof ctx->reason, "out of memory");
        return MB_FAILED;
    }
    int nmaps = 0;
    allmaps[nmaps++] = *lo->map;
    int st = MB_OK;
    char why[512] = "";
    if (ok)
        st = map_loaders(lo, allmaps, &nmaps, why, sizeof why);
    mb_disturb_t dist = {0}; /* over the chaser's and loaders' run (emit frees it) */
    if (ok && st == MB_OK) {
        pt.disturb = mb_disturb_team(&dist, lo->nload + 1, ctx->plan, one_thread, lo);
        point_measured(lo, &pt, validate_run(lo, &pt));
    } else { /* not measured: the cycle was broken (st ok), or no memory */
        pt.status = st != MB_OK ? st : MB_FAILED;
        pt.valid = st != MB_OK ? -1 : 0;
        if (st != MB_OK)
            snprintf(pt.reason, sizeof pt.reason, "%s", why);
        mb_chase_loaded_latency_keys(&pt, NULL, NULL, lo->nl);
        mb_point_null(&pt, "loader_passes_min");
        mb_point_null(&pt, "window_seconds");
        fprintf(stderr, "loaded %-5s: %s\n", lo->k->op, pt.reason);
    }
    point_setup_keys(lo, &pt);
    pt.maps = allmaps;
    pt.nmaps = nmaps;
    ctx->emit(ctx, &pt);

    for (int l = 0; l < lo->nload; l++)
        for (int a = 0; a < 4; a++)
            mb_unmap(&lo->L[l].maps[a]);
    free(lo->L);
    free(allmaps);
    return MB_OK;
}

int mb_loaded_run(mb_run_ctx_t *ctx)
{
    size_t line = mb_line_bytes();
    size_t spacing = (size_t)ctx->opt[OPT_SPACING];
    if (mb_chase_check_spacing("loaded", spacing, line) != 0)
        exit(2);
    size_t size = ctx->size_bytes / spacing * spacing; /* whole pointer slots */
    if (size < spacing || ctx->size_bytes < (size_t)ctx->opt[OPT_EVERY] * line) {
        fprintf(stderr, "membench loaded: --size %zu is below one block (%lld lines of %zu "
                        "bytes) or one pointer slot (--spacing %zu)\n", ctx->size_bytes,
                ctx->opt[OPT_EVERY], line, spacing);
        exit(2);
    }
    if (size / spacing > 0xFFFFFFFFULL) {
        snprintf(ctx->reason, sizeof ctx->reason, "--size %zu has more than 2^32 pointer slots",
                 size);
        return MB_FAILED;
    }
    if ((size_t)ctx->opt[OPT_GROUP] % spacing != 0) {
        fprintf(stderr, "membench loaded: invalid value '%lld' for --group; allowed: a "
                        "multiple of the pointer spacing (%zu bytes), or full\n",
                ctx->opt[OPT_GROUP], spacing);
        exit(2);
    }
    int t = ctx->plan ? mb_thread_on_core_of(ctx->plan, ctx->threads, 0) : -1; /* chaser's core: no load */
    if (t > 0) {
        snprintf(ctx->reason, sizeof ctx->reason, "load thread %d on CPU %d shares the chasing "
                 "CPU %d's core: choose CPUs off its core", t, ctx->plan[t], ctx->plan[0]);
        return MB_SKIPPED;
    }
    int maxarr = 1;
    for (int i = 0; i < ctx->nops; i++)
        if (ctx->op_ok[i] && ctx->ops[i]->reads + ctx->ops[i]->writes > maxarr)
            maxarr = ctx->ops[i]->reads + ctx->ops[i]->writes;
    int st = mb_pages_check((mb_pages_kind_t)ctx->pages, size,
                            1 + maxarr * (ctx->threads - 1), ctx->reason, sizeof ctx->reason);
    if (st != MB_OK)
        return st;

    /* the chase memory: mapped and first-touched by thread 0 (the caller) */
    mb_chase_mem_t mem;
    st = mb_chase_mem_open(ctx, size, spacing, (size_t)MB_CHASE_CHUNK_CAP(ctx->ntimes), &mem);
    if (st != MB_OK)
        return st;
    /* the clock of the chasing CPU: thread 0 is this (pinned) thread */
    loaded_op_t lo = {
        .ctx = ctx, .nload = ctx->threads - 1, .n = ctx->size_bytes / sizeof(double),
        .block = (size_t)ctx->opt[OPT_EVERY] * line / sizeof(double), .map = &mem.map,
        .base = mem.map.addr, .order = mem.order, .nl = size / spacing, .line = line,
        .spacing = spacing, .core_ghz = mb_core_ghz(), .secs = mem.secs, .sorted = mem.sorted,
    };
    for (int i = 0; i < ctx->nops && st == MB_OK; i++) {
        if (!ctx->op_ok[i])
            continue;
        const mb_kernel_t *k = ctx->ops[i];
        lo.k = k;
        lo.mix = strcmp(k->op, "read") == 0 ? MB_MIX_R1W0 : mb_mix_id(k->op);
        lo.sums = k->writes == 0;
        lo.narr = k->reads + k->writes;
        lo.elem_bytes = (double)mb_kernel_bytes(k, sizeof(double), 1, 0);
        memset(&lo.wk, 0, sizeof lo.wk);
        lo.phase = PH_START, lo.ready = 0;
        st = one_op(&lo);
    }
    mb_chase_mem_close(&mem);
    return st;
}
