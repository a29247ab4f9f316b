/*
 * membench family "chase": dependent-load latency (lmbench lat_mem_rd style).
 *
 * Every load's address comes from the previous load (p = *p), so the time
 * per load is the full latency of wherever the line lives (L1 ... DRAM).
 *
 * op random  a single-cycle permutation with one pointer per --spacing
 *            bytes (default 256, multichase's default stride; a power of two
 *            from the line size, sysfs coherency_line_size, to a page).  Each
 *            slot's pointer sits on a line of its slot hashed from the slot
 *            index (mb_chase_slot_at), so every cache set holds pointers
 *            (multichase's "mixer", by index mod 64, left sets empty: issue
 *            30); pointers all at slot starts read 63 ns where multichase
 *            read 140 (1 GiB, issue 20).  The spacing changes the latency (multichase itself reads
 *            lower at -s 64 than at -s 256): compare like with like.  The
 *            working set is cut into groups of --group bytes (default 256
 *            KiB = 64 pages, multichase's TLB locality; `full` = one group,
 *            a random cycle over the whole working set); the groups are
 *            visited in random order and inside a group its lines in random
 *            order, so at any time only one group's pages are in use: the
 *            TLB reach needed is bounded while the stream and next-page
 *            prefetchers see no pattern.  Smaller groups read low: their few
 *            lines keep hitting DRAM rows that are already open, and how
 *            often depends on where their physical pages land (64 KiB groups
 *            read 6-38 % below multichase, issue 12).  With slots under a
 *            128-byte pair (--spacing 64) the cycle is split in two passes,
 *            even slots then odd slots, against the adjacent-line prefetcher;
 *            wider slots never share a pair and take one pass, as multichase
 *            (two passes read 8 % above it at 256: half the loads per group
 *            and page).  chase_cycle.c builds and verifies the cycles.
 *            The cycle is verified (a permutation, every pointer to the next
 *            slot of the visiting order: one cycle through every slot) before
 *            anything is timed; an invalid cycle gives a failed record.
 * op stride  element i at i*stride points to element i+1, the last to the
 *            first: a fixed forward stride (--stride, default 64), what the
 *            hardware prefetchers follow; the contrast to random.
 *
 * Sweep: working sets from --sweep-from up to --size, --points-per-octave
 * log-spaced points per doubling (rounded down to whole pointer slots); op
 * random stops once the answer is in (chase_sweep.h: the memory latency
 * held flat past the caches), when the repetition's budget is spent, or at
 * --size; its last record says which (sweep_end).  The other ops cover the
 * working sets op random measured.  Per working set: a calibration run (also the warm-up) sizes a
 * chunk of dependent loads to take >= --chunk-ms (default 10 ms, far above the
 * timer granularity); then the cycle is walked (chase_walk.c), each walk
 * from the same pointer and cut into the same stretches of >= one chunk
 * (at most 128 per walk; a cycle shorter than a chunk: whole cycles filling
 * one chunk), at least 3 walks and at least --ntimes - 1 chunks, more walks
 * (at most 8, none started after 2 s: the point's budget) while under 90 % of the stretches
 * have a second walk within 2 % of their fastest.  About 7 s at 1 GiB.
 * ns_per_load is the stretch-min-mean: each stretch's fastest walk, summed
 * over the stretches, per load of a walk.  Neighbours only add time, so the
 * minimum over walks of the same stretch removes their noise, while every
 * region of the working set keeps its weight: the best single chunk (still
 * recorded, ns_best_chunk) picked the fastest region too and read 5-10 % low
 * (issue 20).  ns_median and ns_max: the median and slowest chunk per load.
 * The final pointer is stored to a volatile global, so the chase is live.
 * core_ghz: the chasing CPU's clock, measured once per run (cpu_clock.c).
 *
 * The chasing thread is pinned (the harness pins it to the first allowed CPU
 * under --affinity none) and first-touches the mapping itself, as far as
 * the sweep has gone: a sweep that stops early never allocates the rest.
 * Each record says the loads behind it (timed_loads) and its seconds.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../harness/cpu.h"
#include "../harness/placement.h"
#include "../harness/timing.h"
#include "families.h"
#include "chase_cycle.h"
#include "chase_walk.h"
#include "chase_sweep.h"

#define CHASE_MAX_POINTS 4096

/* family options (order = ctx->opt index; the last four: MB_CHASE_RANDOM_OPTIONS) */
enum { OPT_SWEEP_FROM, OPT_PPO, OPT_STRIDE, OPT_GROUP, OPT_SEED, OPT_CHUNK_MS, OPT_SPACING };
const mb_famopt_t mb_chase_options[] = {
    {"sweep-from", "BYTES", 4096, 64, 1LL << 50,
     "smallest working set of the sweep (the largest is --size)", NULL},
    {"points-per-octave", "N", 2, 1, 64, "log-spaced working sets per doubling", NULL},
    {"stride", "BYTES", 64, 8, 1LL << 30, "stride of op stride (a multiple of 8)", NULL},
    MB_CHASE_RANDOM_OPTIONS,
    {NULL, NULL, 0, 0, 0, NULL, NULL},
};

/* Table row function: A->n dependent loads from A->v[0]; the end pointer is
 * written back to A->v[0] and to the volatile sink. */
void mb_chase_chase(mb_arrays_t *A)
{
    A->v[0] = mb_kern_chase_chase(A->v[0], A->n);
    mb_chase_sink = A->v[0];
}

/* ------------------------------------------------------------ the run */

void mb_chase_group_keys(mb_point_t *pt, size_t group, size_t working_set)
{
    /* group_bytes: the bytes one group spans (a smaller last group aside);
     * group_full: the whole working set is one random cycle (--group full) */
    size_t g = group && group < working_set ? group : working_set;
    mb_point_int(pt, "group_bytes", (long long)g);
    mb_point_bool(pt, "group_full", group == 0);
}

/* Working sets of the sweep: from, from*2^(1/ppo), ... (< size), size. */
static int sweep_points(size_t from, size_t size, int ppo, size_t line, size_t *out, int max)
{
    int n = 0;
    for (int k = 0; n < max - 1; k++) {
        double w = (double)from * pow(2.0, (double)k / ppo);
        size_t ws = (size_t)w / line * line;
        if (ws >= size)
            break;
        if (ws == 0 || (n > 0 && out[n - 1] == ws))
            continue;
        out[n++] = ws;
    }
    out[n++] = size;
    return n;
}

/* One run's sweep: what every point needs. */
typedef struct sweep {
    mb_run_ctx_t *ctx;
    mb_chase_mem_t *mem;
    size_t spacing, stride, group, line, from, llc_bytes;
    unsigned long long seed;
    double chunk_ns, core_ghz;
    int ppo, levels, nws;
    const size_t *ws;
    mb_disturb_t dist; /* around each point's timed walks */
    /* op random as judged so far: touched-line bytes and ns of its ok points */
    int judge, nok;
    double lines[CHASE_MAX_POINTS], ns[CHASE_MAX_POINTS];
    long long t0;    /* when op random's first point began */
    double last_s;   /* the seconds of the point just measured */
    const char *end; /* why the sweep ended (chase_sweep.h), NULL while it goes on */
} sweep_t;

static const char *judge_point(sweep_t *sw, int w, double ns);

/* Measure working set ws[w] with op k and emit its record; the ns per load
 * (NAN when it failed).  While op random is judged (sw->judge), the rule
 * decides sw->end before the record goes out: its sweep_end key. */
static double measure_point(sweep_t *sw, const mb_kernel_t *k, int w)
{
    mb_run_ctx_t *ctx = sw->ctx;
    int random = strcmp(k->op, "random") == 0;
    size_t wsz = sw->ws[w], spacing = sw->spacing, stride = sw->stride;
    char *base = sw->mem->map.addr;
    unsigned *order = sw->mem->order;
    mb_point_t pt;
    mb_point_latency(&pt, k, wsz, 0);
    mb_mapping_t sub = sw->mem->map;
    sub.used = wsz;
    pt.maps = &sub;
    pt.nmaps = 1;

    size_t n, unit = random ? spacing : stride;
    int ok;
    long long tb = mb_clock_ns(CLOCK_MONOTONIC);
    mb_chase_mem_touch(sw->mem, wsz);
    if (random) {
        n = mb_chase_build_random(base, wsz, spacing, sw->group, sw->seed, order);
        if (ctx->test_corrupt)
            mb_chase_break(base, n, spacing, order);
        ok = mb_chase_verify_order(base, n, spacing, order, pt.reason, sizeof pt.reason);
    } else {
        n = mb_chase_build_stride(base, wsz, stride);
        if (ctx->test_corrupt)
            mb_chase_break(base, n, stride, NULL);
        ok = mb_chase_verify_stride(base, n, stride, pt.reason, sizeof pt.reason);
    }
    pt.elements = n;
    pt.valid = ok;
    double build_s = (double)(mb_clock_ns(CLOCK_MONOTONIC) - tb) * 1e-9;
    long long tt = mb_clock_ns(CLOCK_MONOTONIC);
    mb_chase_walks_t wk;
    double ns = NAN;
    if (ok) {
        void *p = base + (random ? mb_chase_slot_at(order[0], spacing) : 0);
        mb_disturb_self_begin(&sw->dist, ctx->plan[0]);
        mb_chase_walk(&p, sw->chunk_ns, ctx->ntimes, MB_CHASE_MAX_WALKS, n, sw->mem->secs, &wk);
        mb_disturb_self_end(&sw->dist);
        pt.disturb = &sw->dist;
        if (!wk.closed) {
            pt.valid = ok = 0;
            snprintf(pt.reason, sizeof pt.reason, "validation failed: a timed walk "
                     "of %zu loads did not end where it started", wk.walk_loads);
        }
        pt.secs = sw->mem->secs;
        pt.nsecs = wk.walks * wk.stretches;
    }
    if (ok) {
        mb_chase_latency_keys(&pt, &wk, sw->mem->sorted, n);
        ns = mb_chase_stretch_min_mean(sw->mem->secs, wk.walks, wk.stretches, wk.walk_loads);
        fprintf(stderr, "chase %-6s %12zu bytes: %8.2f ns/load (%s), %d walks x %d "
                        "stretches; build+verify %.3f s, timing %.3f s\n",
                k->op, wsz, ns, MB_CHASE_STATISTIC, wk.walks, wk.stretches, build_s,
                (double)(mb_clock_ns(CLOCK_MONOTONIC) - tt) * 1e-9);
        /* the loads behind this point: every timed walk */
        mb_point_int(&pt, "timed_loads", (long long)(wk.walk_loads * (size_t)wk.walks));
    } else {
        pt.status = MB_FAILED;
        mb_chase_latency_keys(&pt, NULL, NULL, n);
        mb_point_null(&pt, "timed_loads");
        fprintf(stderr, "chase %-6s %12zu bytes: %s\n", k->op, wsz, pt.reason);
    }
    sw->last_s = (double)(mb_clock_ns(CLOCK_MONOTONIC) - tb) * 1e-9;
    mb_point_dbl(&pt, "point_seconds", sw->last_s);
    mb_point_int(&pt, "working_set_bytes", (long long)wsz);
    mb_point_int(&pt, "cycle_length", (long long)n);
    mb_point_int(&pt, "line_bytes", (long long)sw->line);
    mb_point_dbl(&pt, "core_ghz", sw->core_ghz);
    if (random) {
        mb_point_int(&pt, "pointer_spacing_bytes", (long long)spacing);
        mb_point_null(&pt, "stride_bytes");
        mb_chase_group_keys(&pt, sw->group, n * spacing);
    } else {
        mb_point_null(&pt, "pointer_spacing_bytes");
        mb_point_int(&pt, "stride_bytes", (long long)unit);
        mb_point_null(&pt, "group_bytes");
        mb_point_null(&pt, "group_full");
    }
    mb_point_int(&pt, "seed", (long long)sw->seed);
    mb_point_dbl(&pt, "chunk_ms", sw->chunk_ns / 1e6);
    mb_point_int(&pt, "sweep_from", (long long)sw->from);
    mb_point_int(&pt, "points_per_octave", sw->ppo);
    const char *sweep_end = NULL;
    if (random && sw->judge)
        sweep_end = sw->end = judge_point(sw, w, ns);
    if (sweep_end)
        mb_point_str(&pt, "sweep_end", sweep_end);
    else
        mb_point_null(&pt, "sweep_end");
    ctx->emit(ctx, &pt);
    return ns;
}

/* Op random over the working sets until the answer is in (chase_sweep.h),
 * the repetition's budget is spent or --size is reached; the number of
 * working sets measured.  Each point is judged before its record is
 * emitted (measure_point), so the last one says why the sweep ended. */
static int sweep_random(sweep_t *sw, const mb_kernel_t *k)
{
    sw->judge = 1, sw->nok = 0, sw->end = NULL;
    sw->t0 = mb_clock_ns(CLOCK_MONOTONIC);
    int measured = 0;
    while (measured < sw->nws && !sw->end)
        measure_point(sw, k, measured++);
    sw->judge = 0;
    return measured;
}

/* After op random's point w (ns NAN: failed): why the sweep ends there, or
 * NULL to go on. */
static const char *judge_point(sweep_t *sw, int w, double ns)
{
    if (!isnan(ns)) {
        /* caches hold lines: the rule sees touched-line bytes */
        sw->lines[sw->nok] = (double)sw->ws[w] / (double)sw->spacing * (double)sw->line;
        sw->ns[sw->nok++] = ns;
        int first;
        if (mb_sweep_answer_in(sw->lines, sw->ns, sw->nok, sw->levels,
                               (double)sw->llc_bytes, &first))
            return MB_SWEEP_END_HELD;
    }
    if (w == sw->nws - 1)
        return MB_SWEEP_END_SIZE;
    /* the next point costs about this one's seconds scaled by its size (a
     * walk visits every slot): none is started that would end past the budget */
    double next_s = sw->last_s * (double)sw->ws[w + 1] / (double)sw->ws[w];
    if ((double)(mb_clock_ns(CLOCK_MONOTONIC) - sw->t0) * 1e-9 + next_s >= MB_SWEEP_REPETITION_S)
        return MB_SWEEP_END_BUDGET;
    return NULL;
}

int mb_chase_run(mb_run_ctx_t *ctx)
{
    const long long *opt = ctx->opt;
    size_t line = mb_line_bytes();
    size_t spacing = (size_t)opt[OPT_SPACING];
    size_t group = (size_t)opt[OPT_GROUP]; /* bytes; 0 = full */
    if (mb_chase_check_options("chase", spacing, group, line) != 0)
        exit(2);
    /* working sets are whole pointer slots (spacing >= line) */
    size_t size = ctx->size_bytes / spacing * spacing;
    size_t from = (size_t)opt[OPT_SWEEP_FROM];
    size_t stride = (size_t)opt[OPT_STRIDE];
    int ppo = (int)opt[OPT_PPO];
    unsigned long long seed = (unsigned long long)opt[OPT_SEED];
    double chunk_ns = (double)opt[OPT_CHUNK_MS] * 1e6;

    if (size < spacing) {
        fprintf(stderr, "membench chase: --size %zu is below one pointer slot (--spacing %zu "
                        "bytes)\n", ctx->size_bytes, spacing);
        exit(2);
    }
    if (from > size && opt[OPT_SWEEP_FROM] == mb_chase_options[OPT_SWEEP_FROM].def)
        from = size; /* a --size below the default start: one point */
    if (from > size) {
        fprintf(stderr, "membench chase: invalid value '%zu' for --sweep-from; allowed: at "
                        "most --size (%zu)\n", from, ctx->size_bytes);
        exit(2);
    }
    if (stride % sizeof(void *) != 0) {
        fprintf(stderr, "membench chase: invalid value '%zu' for --stride; allowed: a "
                        "multiple of %zu bytes\n", stride, sizeof(void *));
        exit(2);
    }
    if (size / spacing > 0xFFFFFFFFULL) {
        snprintf(ctx->reason, sizeof ctx->reason, "--size %zu has more than 2^32 pointer slots",
                 size);
        return MB_FAILED;
    }

    static size_t ws[CHASE_MAX_POINTS];
    int nws = sweep_points(from, size, ppo, spacing, ws, CHASE_MAX_POINTS);

    /* memory: one mapping of --size, policy before first touch, touched by
     * the chasing (pinned) thread as the sweep grows: a sweep that stops
     * when the answer is in never touches the rest */
    mb_chase_mem_t mem;
    int st = mb_chase_mem_open_untouched(ctx, size, spacing,
                                         (size_t)MB_CHASE_CHUNK_CAP(ctx->ntimes), &mem);
    if (st != MB_OK)
        return st;
    static sweep_t sw; /* its point arrays are large */
    sw = (sweep_t){.ctx = ctx, .mem = &mem, .spacing = spacing, .stride = stride,
                  .group = group, .seed = seed, .chunk_ns = chunk_ns, .from = from,
                  .ppo = ppo, .line = line, .ws = ws, .nws = nws,
                  /* the clock of the chasing CPU: this thread, pinned by the harness */
                  .core_ghz = mb_core_ghz()};
    sw.judge = 0;
    sw.levels = mb_sweep_cache_levels(sched_getcpu(), &sw.llc_bytes);

    /* op random first: the other ops cover the working sets it measured */
    int upto = nws;
    for (int i = 0; i < ctx->nops; i++)
        if (ctx->op_ok[i] && strcmp(ctx->ops[i]->op, "random") == 0)
            upto = sweep_random(&sw, ctx->ops[i]);
    for (int i = 0; i < ctx->nops; i++)
        if (ctx->op_ok[i] && strcmp(ctx->ops[i]->op, "random") != 0)
            for (int w = 0; w < upto; w++)
                measure_point(&sw, ctx->ops[i], w);
    mb_chase_mem_close(&mem);
    mb_disturb_free(&sw.dist);
    return MB_OK;
}
