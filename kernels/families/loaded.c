/*
 * membench family "loaded": loaded latency (the chase under bandwidth load).
 *
 * --threads N (>= 2).  Thread 0 runs chase.c's random chase over a --size
 * working set (DRAM-sized).  Threads 1..N-1 load: each runs the op (triad;
 * read = mix.c's r1w0; the mixes r1w0 .. r2w1nt of mix.c) over private
 * arrays of --size bytes, in blocks of --delay-every lines, spinning
 * --delay `pause`s after each (the injection delay; 0 = flat out): the
 * load threads are loaded_load.c.  Every thread is pinned and first-touches
 * its own memory.
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
#include "loaded.h"
#include "../harness/placement.h"
#include "../harness/timing.h"

const mb_famopt_t mb_loaded_options[] = {
    {"delay", "D", 0, 0, 1000000000LL,
     "injection delay: pause iterations the load threads spin after every block "
     "(0 = flat out)", NULL},
    {"delay-every", "LINES", 8, 1, 1 << 20, "cache lines per array per block", NULL},
    MB_CHASE_RANDOM_OPTIONS,
    {NULL, NULL, 0, 0, 0, NULL, NULL},
};

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
    int lok = mb_loaded_check(lo, lwhy, sizeof lwhy);
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
    double delay_ns = 0; /* the loaders' mean: each measured its own CPU */
    for (int l = 0; l < lo->nload; l++)
        delay_ns += lo->L[l].delay_ns / lo->nload;
    mb_point_dbl(pt, "delay_ns", delay_ns);
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
        mb_loaded_loader(lo, &lo->L[t - 1]);
}

static int one_op(loaded_op_t *lo)
{
    mb_run_ctx_t *ctx = lo->ctx;
    mb_point_t pt;
    mb_point_latency(&pt, lo->k, ctx->size_bytes, lo->nl);

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
    if (mb_chase_check_options("loaded", spacing, (size_t)ctx->opt[OPT_GROUP], line) != 0)
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
