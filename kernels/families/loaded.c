/*
 * membench family "loaded": loaded latency (the chase under bandwidth load).
 *
 * --threads N (>= 2).  Thread 0 runs the random chase of chase.c (one
 * pointer per --spacing bytes, default 256, as chase) over a
 * --size working set (pick it DRAM-sized: >= 4 x LLC).  Threads 1..N-1 are
 * the load threads: each runs the op's bandwidth kernel over its own private
 * arrays of --size bytes each (triad: a = b + s*c on three arrays; read:
 * sum += a on one; a read:write mix r1w0, r3w1, r2w1, r1w1, r2w1nt: the
 * kernels of mix.c on its inputs and its output), in blocks of --delay-every cache lines per array,
 * spinning --delay iterations of `pause` after every block (the injection
 * delay; 0 = flat out).  Each thread is pinned (affinity none -> the t-th
 * allowed CPU) and first-touches its own memory.
 *
 * Sequence: the load threads start; when all of them run, the chaser
 * calibrates its chunk (>= --chunk-ms under load, also the warm-up), then
 * walks the cycle in fixed stretches as chase.c (chase_walk.c), 3 walks
 * (or ntimes - 1 chunks) and none added: chunks under load vary with the
 * load itself, so waiting for them to agree only costs time; the load
 * threads count the bytes they move between the start and the end of the
 * chaser's timed walks (the window), and stop after it (at the end of the
 * block they are in).  One record per op: ns_per_load (chaser: the mean
 * over every timed chunk, i.e. over the same window as the bandwidth;
 * latency_statistic "window-mean", as MLC reports averages), with the idle
 * chase's stretch-min-mean kept beside it (ns_stretch_min_mean: the least
 * loaded moment of each stretch, issue 30), ns_median, gbps
 * (sum over the load threads of their bytes /
 * their seconds in that window, STREAM counting: triad 24, read 8 bytes per
 * element), gbps_wa (triad + one write-allocate read), delay, load_threads.
 *
 * Validation: the chase cycle before timing and again after it, and the
 * load threads' arithmetic (triad: every a[j] written so far == b[j] +
 * s*c[j], the others untouched; mixes: the same for their output, and the
 * inputs unchanged; read, r1w0: the sums of the last whole pass and of the
 * partial pass are the exact expected sums).
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

/* nl pointer slots of `spacing` bytes; line: the cache line (the loaders'
 * blocks); core_ghz: the chasing CPU's measured clock */
static int one_op(mb_run_ctx_t *ctx, const mb_kernel_t *k, mb_mapping_t *chase_map,
                  unsigned *order, size_t nl, size_t line, size_t spacing, double core_ghz,
                  double *secs, double *sorted)
{
    const long long *opt = ctx->opt;
    int nt = ctx->threads, nload = nt - 1;
    int triad = strcmp(k->op, "triad") == 0;
    int mix = mb_mix_id(k->op); /* a read:write mix of mix.c, or -1 */
    int sums = k->writes == 0;  /* read, r1w0: the load returns a sum */
    int narr = k->reads + k->writes; /* the loader's own arrays */
    size_t n = ctx->size_bytes / sizeof(double);
    size_t block = (size_t)opt[OPT_EVERY] * line / sizeof(double);
    long long delay = opt[OPT_DELAY];
    double elem_bytes = (double)mb_kernel_bytes(k, sizeof(double), 1, 0);
    char *base = chase_map->addr;

    mb_point_t pt;
    memset(&pt, 0, sizeof pt);
    pt.op = k;
    pt.size_bytes = ctx->size_bytes;
    pt.elements = nl;
    pt.bytes_per_iter = pt.bytes_per_iter_wa = -1;
    pt.gbps = pt.gbps_mean = pt.gbps_wa = NAN;

    /* chase: build and verify before anything is timed */
    mb_chase_build_random(base, nl * spacing, spacing, (size_t)opt[OPT_GROUP],
                          (unsigned long long)opt[OPT_SEED], order);
    int ok = mb_chase_verify_order(base, nl, spacing, order, pt.reason, sizeof pt.reason);

    loader_t *L = calloc((size_t)nload, sizeof *L);
    mb_mapping_t *allmaps = calloc((size_t)(1 + 4 * nload), sizeof *allmaps);
    if (!L || !allmaps) {
        free(L), free(allmaps);
        snprintf(ctx->reason, sizeof ctx->reason, "out of memory");
        return MB_FAILED;
    }
    int nmaps = 0;
    allmaps[nmaps++] = *chase_map;
    int st = MB_OK;
    char why[512] = "";
    for (int l = 0; l < nload && st == MB_OK && ok; l++)
        for (int a = 0; a < narr && st == MB_OK; a++) {
            st = mb_map((mb_pages_kind_t)ctx->pages, ctx->size_bytes, 1 + narr * nload,
                        &L[l].maps[a], why, sizeof why);
            if (st == MB_OK)
                st = mb_policy_apply(L[l].maps[a].addr, L[l].maps[a].len, ctx->policy, why,
                                     sizeof why);
            L[l].v[a] = L[l].maps[a].addr;
            if (st == MB_OK)
                allmaps[nmaps++] = L[l].maps[a];
        }

    mb_chase_walks_t wk;
    memset(&wk, 0, sizeof wk);
    if (ok && st == MB_OK) {
        int phase = PH_START; /* written by the chaser, read by the loaders */
        int ready = 0;
        double chase_t0 = 0, chase_t1 = 0;
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num();
            if (t == 0) {
                int r;
                do {
#pragma omp atomic read
                    r = ready;
                } while (r < nload);
                __atomic_store_n(&phase, PH_WARM, __ATOMIC_RELEASE);
                void *p = base + mb_chase_slot_at(order[0], spacing);
                /* calibration (also the warm-up) under load, outside the
                 * window: the loaders count bytes over the timed walks only */
                double chunk_ns = (double)opt[OPT_CHUNK_MS] * 1e6;
                size_t chunk = mb_chase_calibrate(&p, chunk_ns);
                chase_t0 = mb_clock_seconds(CLOCK_MONOTONIC);
                __atomic_store_n(&phase, PH_TIMED, __ATOMIC_RELEASE);
                mb_chase_walk_calibrated(&p, chunk, chunk_ns, ctx->ntimes, MB_CHASE_MIN_WALKS,
                                         nl, secs, &wk);
                __atomic_store_n(&phase, PH_STOP, __ATOMIC_RELEASE);
                chase_t1 = mb_clock_seconds(CLOCK_MONOTONIC);
            } else if (t <= nload) {
                loader_t *me = &L[t - 1];
                /* first touch by the owner: a = 0, b = 1 + j%8, c = 2 (triad);
                 * a = 1 + j%8 (read); mixes: mix.c's values (a = 1 + j%8) */
                if (mix >= 0)
                    mb_mix_fill(mix, me->v, 0, n);
                for (size_t j = 0; j < n && mix < 0; j++) {
                    double v = (double)(1 + j % 8);
                    if (triad) {
                        me->v[0][j] = 0.0;
                        me->v[1][j] = v;
                        me->v[2][j] = 2.0;
                    } else
                        me->v[0][j] = v;
                }
#pragma omp atomic update
                ready++;
                double bytes = 0, b0 = 0, t0 = 0;
                int seen_timed = 0;
                size_t j = 0;
                double sum = 0;
                while (me->secs_window == 0) {
                    size_t len = j + block < n ? block : n - j;
                    if (mix >= 0) {
                        double *p[4] = {NULL, NULL, NULL, NULL};
                        for (int a = 0; a < narr; a++)
                            p[a] = me->v[a] + j;
                        sum += mb_mix_block(mix, p, len);
                    } else if (triad)
                        mb_kern_loaded_triad(me->v[0] + j, me->v[1] + j, me->v[2] + j,
                                             LOADED_SCALAR, len);
                    else
                        sum += mb_mix_block(MB_MIX_R1W0, (double *const[]){me->v[0] + j}, len);
                    bytes += (double)len * elem_bytes;
                    j += len;
                    if (j == n) {
                        me->passes++;
                        me->last_sum = sum;
                        sum = 0;
                        j = 0;
                    }
                    spin(delay);
                    int ph = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
                    if (ph >= PH_TIMED && !seen_timed) {
                        seen_timed = 1;
                        b0 = bytes;
                        t0 = mb_clock_seconds(CLOCK_MONOTONIC);
                    }
                    if (ph == PH_STOP && seen_timed) {
                        double dt = mb_clock_seconds(CLOCK_MONOTONIC) - t0;
                        me->secs_window = dt > 0 ? dt : 1e-9;
                        me->bytes_window = bytes - b0;
                    }
                }
                mb_mix_fence(mix); /* non-temporal stores: visible before checked */
                me->pos = j;
                me->part_sum = sum;
            }
        }
        double window = chase_t1 - chase_t0;

        /* validation after the run: the cycle again, the load arithmetic */
        if (ctx->test_corrupt) {
            mb_chase_break(base, nl, spacing, order);
            if (sums)
                L[0].part_sum += 1.0;
            else
                L[0].v[triad ? 0 : narr - 1][0] += 1.0;
        }
        ok = mb_chase_verify_order(base, nl, spacing, order, pt.reason, sizeof pt.reason);
        char lwhy[256] = "";
        int lok = 1;
        for (int l = 0; l < nload && lok; l++) {
            /* elements written so far: all after a whole pass, else those
             * of the first pass; the others must still be untouched (0) */
            size_t done = L[l].passes > 0 ? n : L[l].pos;
            double prefix = 0, want_sum = 0;
            for (size_t j = 0; j < n && lok; j++) {
                double v = (double)(1 + j % 8);
                if (j < L[l].pos)
                    prefix += v;
                want_sum += v;
                if (mix >= 0 && !sums) {
                    for (int a = 0; a < narr && lok; a++) {
                        double want = mb_mix_expect(mix, a, j, j < done);
                        if (L[l].v[a][j] != want) {
                            snprintf(lwhy, sizeof lwhy, "load thread %d: array %d of %s, "
                                     "element %zu = %.17g, expected %.17g", l + 1, a, k->op,
                                     j, L[l].v[a][j], want);
                            lok = 0;
                        }
                    }
                    continue;
                }
                if (!triad)
                    continue;
                double want = j < done ? v + LOADED_SCALAR * 2.0 : 0.0;
                if (L[l].v[0][j] != want || L[l].v[1][j] != v || L[l].v[2][j] != 2.0) {
                    snprintf(lwhy, sizeof lwhy, "load thread %d: a[%zu] = %.17g, "
                             "expected %.17g", l + 1, j, L[l].v[0][j], want);
                    lok = 0;
                }
            }
            if (sums && ((L[l].passes > 0 && L[l].last_sum != want_sum) ||
                           L[l].part_sum != prefix)) {
                snprintf(lwhy, sizeof lwhy, "load thread %d: sum %.17g (%lld whole passes), "
                         "partial sum %.17g over %zu elements, expected %.17g and %.17g",
                         l + 1, L[l].last_sum, L[l].passes, L[l].part_sum, L[l].pos,
                         want_sum, prefix);
                lok = 0;
            }
        }
        if (!lok) {
            size_t len = strlen(pt.reason);
            if (ok)
                snprintf(pt.reason, sizeof pt.reason, "validation failed: %s", lwhy);
            else
                snprintf(pt.reason + len, sizeof pt.reason - len, "; %s", lwhy);
        }
        if (!wk.closed) {
            size_t len = strlen(pt.reason);
            snprintf(pt.reason + len, sizeof pt.reason - len, "%sa timed walk of %zu loads "
                     "did not end where it started", ok && lok ? "validation failed: " : "; ",
                     wk.walk_loads);
        }
        ok = ok && lok && wk.closed;
        double gbps = 0;
        long long minpasses = -1;
        for (int l = 0; l < nload; l++) {
            if (L[l].secs_window > 0)
                gbps += L[l].bytes_window / L[l].secs_window / 1e9;
            if (minpasses < 0 || L[l].passes < minpasses)
                minpasses = L[l].passes;
        }
        pt.gbps = pt.gbps_mean = gbps;
        pt.bytes_per_iter = mb_kernel_bytes(k, sizeof(double), n, 0);
        pt.bytes_per_iter_wa = mb_kernel_bytes(k, sizeof(double), n, 1);
        pt.gbps_wa = gbps * (double)pt.bytes_per_iter_wa / (double)pt.bytes_per_iter;
        pt.secs = secs;
        pt.nsecs = wk.walks * wk.stretches;
        pt.valid = ok;
        pt.status = ok ? MB_OK : MB_FAILED;
        mb_chase_loaded_latency_keys(&pt, ok ? &wk : NULL, sorted, nl);
        mb_point_int(&pt, "loader_passes_min", minpasses);
        mb_point_dbl(&pt, "window_seconds", window);
        fprintf(stderr, "loaded %-5s delay %lld: chase %.2f ns/load (%s, %d walks x %d "
                        "stretches) while %d load threads move %.2f GB/s%s%s\n", k->op, delay,
                wk.walks ? mb_chase_window_mean(secs, wk.walks, wk.stretches,
                                                wk.walk_loads) : NAN,
                MB_CHASE_LOADED_STATISTIC, wk.walks, wk.stretches, nload, gbps,
                ok ? "" : "; ", ok ? "" : pt.reason);
    } else {
        pt.status = st != MB_OK ? st : MB_FAILED;
        pt.valid = st != MB_OK ? -1 : 0;
        if (st != MB_OK)
            snprintf(pt.reason, sizeof pt.reason, "%s", why);
        mb_chase_loaded_latency_keys(&pt, NULL, NULL, nl);
        mb_point_null(&pt, "loader_passes_min");
        mb_point_null(&pt, "window_seconds");
        fprintf(stderr, "loaded %-5s: %s\n", k->op, pt.reason);
    }
    mb_point_int(&pt, "working_set_bytes", (long long)(nl * spacing));
    mb_point_int(&pt, "cycle_length", (long long)nl);
    mb_point_int(&pt, "line_bytes", (long long)line);
    mb_point_int(&pt, "pointer_spacing_bytes", (long long)spacing);
    mb_point_dbl(&pt, "core_ghz", core_ghz);
    mb_chase_group_keys(&pt, (size_t)opt[OPT_GROUP], nl * spacing);
    mb_point_int(&pt, "seed", opt[OPT_SEED]);
    mb_point_dbl(&pt, "chunk_ms", (double)opt[OPT_CHUNK_MS]);
    mb_point_int(&pt, "delay", delay);
    mb_point_int(&pt, "delay_every_lines", opt[OPT_EVERY]);
    mb_point_int(&pt, "load_threads", nload);
    mb_point_int(&pt, "loader_array_bytes", (long long)(n * sizeof(double)));
    mb_point_int(&pt, "loader_arrays", narr);
    pt.maps = allmaps;
    pt.nmaps = nmaps;
    ctx->emit(ctx, &pt);

    for (int l = 0; l < nload; l++)
        for (int a = 0; a < 4; a++)
            mb_unmap(&L[l].maps[a]);
    free(L);
    free(allmaps);
    return MB_OK;
}

/* MB_OK when no load thread shares the chaser's physical core (its SMT
 * siblings): the latency CPU is kept free of load (issue 30).  The pipeline
 * places the threads so (membench.measure.loaded_cpus); a hand-made
 * --affinity that puts one on a sibling is skipped with the reason. */
static int chaser_core_free(mb_run_ctx_t *ctx)
{
    static mb_cpu_t cpus[MB_MAX_CPUS];
    int n = mb_allowed_cpus(cpus);
    const mb_cpu_t *chaser = NULL;
    for (int i = 0; i < n; i++)
        if (cpus[i].cpu == ctx->plan[0])
            chaser = &cpus[i];
    if (!chaser)
        return MB_OK;
    for (int t = 1; t < ctx->threads; t++)
        for (int i = 0; i < n; i++)
            if (cpus[i].cpu == ctx->plan[t] && cpus[i].package == chaser->package &&
                cpus[i].die == chaser->die && cpus[i].core == chaser->core) {
                snprintf(ctx->reason, sizeof ctx->reason,
                         "load thread %d on CPU %d shares the chasing CPU %d's core (SMT "
                         "siblings): the latency CPU must be free of load; choose CPUs off "
                         "its core", t, ctx->plan[t], ctx->plan[0]);
                return MB_SKIPPED;
            }
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
    if (ctx->plan && chaser_core_free(ctx) != MB_OK)
        return MB_SKIPPED;
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
    size_t nl = size / spacing;
    /* the clock of the chasing CPU: thread 0 is this (pinned) thread */
    double core_ghz = mb_core_ghz();
    for (int i = 0; i < ctx->nops && st == MB_OK; i++)
        if (ctx->op_ok[i])
            st = one_op(ctx, ctx->ops[i], &mem.map, mem.order, nl, line, spacing, core_ghz,
                        mem.secs, mem.sorted);
    mb_chase_mem_close(&mem);
    return st;
}
