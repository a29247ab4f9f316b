/*
 * membench family "c2c": the run (mb_c2c_run): the clean pool and its
 * windows, every pair of the bound team measured (c2c.c), then one record
 * per pair and op.  See c2c.c for the method.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families.h"
#include "c2c.h"
#include "../harness/placement.h"

static void emit_result(mb_run_ctx_t *ctx, const result_t *res, const shared_t *sh,
                        const mb_mapping_t *map, int op)
{
    mb_point_t pt;
    mb_point_latency(&pt, res->k, ctx->size_bytes, sh->nlines);
    pt.status = res->status;
    snprintf(pt.reason, sizeof pt.reason, "%s", res->reason);
    int ok = res->status == MB_OK;
    pt.valid = res->count > 0 || ok ? ok : -1;
    pt.secs = res->secs;
    pt.nsecs = res->nsecs;
    pt.maps = map;
    pt.nmaps = 1;
    mb_point_int(&pt, "cpu_a", res->a);
    mb_point_int(&pt, "cpu_b", res->b);
    mb_point_int(&pt, "cpu_a_ran", res->a_ran);
    mb_point_int(&pt, "cpu_b_ran", res->b_ran);
    if (ok) {
        mb_point_dbl(&pt, "ns_per_load", res->med);
        mb_point_dbl(&pt, "handoff_ns", res->med);
        mb_point_dbl(&pt, "handoff_p10_ns", res->p10);
        mb_point_dbl(&pt, "handoff_p90_ns", res->p90);
        mb_point_dbl(&pt, "handoff_min_ns", res->min);
    } else {
        mb_point_null(&pt, "ns_per_load");
        mb_point_null(&pt, "handoff_ns");
        mb_point_null(&pt, "handoff_p10_ns");
        mb_point_null(&pt, "handoff_p90_ns");
        mb_point_null(&pt, "handoff_min_ns");
    }
    mb_point_dbl(&pt, "sample_min_ns", res->nsecs > 0 ? res->shortest_ns : NAN);
    mb_point_int(&pt, "samples", res->nsecs);
    mb_point_int(&pt, "handoffs_per_sample", res->per_sample);
    mb_point_int(&pt, "handoffs", res->count);
    mb_point_int(&pt, "handoffs_expected", res->expected);
    mb_point_int(&pt, "line_bytes", (long long)sh->line);
    /* which compare-and-swap ran: Arm's LSE casal or ldaxr/stlxr */
    if (op == OP_CAS)
        mb_point_str(&pt, "cas_atomics", mb_c2c_cas_atomics());
    else
        mb_point_null(&pt, "cas_atomics");
    if (op == OP_DIRTY) {
        /* the window's lines; no flush (B's stores take the lines back) */
        mb_point_int(&pt, "clean_lines", (long long)sh->wlines);
        mb_point_null(&pt, "clean_flushed");
    } else if (op == OP_CLEAN) {
        mb_point_int(&pt, "clean_lines", (long long)sh->wlines);
        mb_point_bool(&pt, "clean_flushed", MB_C2C_FLUSHES);
    } else {
        mb_point_null(&pt, "clean_lines");
        mb_point_null(&pt, "clean_flushed");
    }
    mb_point_int(&pt, "seed", ctx->opt[OPT_SEED]);
    /* disturbance: which samples had a thread switched out, and what the
     * statistics above are over */
    if (res->switched && res->nsecs > 0) {
        mb_point_ints(&pt, "sample_switched", res->switched, res->nsecs);
        mb_point_int(&pt, "samples_switched", res->nswitched);
        mb_point_str(&pt, "handoff_basis",
                     res->nswitched == 0 || res->basis_clean ? "undisturbed" : "all");
    } else {
        mb_point_null(&pt, "sample_switched");
        mb_point_null(&pt, "samples_switched");
        mb_point_null(&pt, "handoff_basis");
    }
    if (ok)
        mb_point_dbl(&pt, "handoff_all_ns", res->med_all);
    else
        mb_point_null(&pt, "handoff_all_ns");
    pt.disturb = res->dist.used ? (mb_disturb_t *)&res->dist : NULL;
    ctx->emit(ctx, &pt);
}

static unsigned long long xorshift(unsigned long long *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

int mb_c2c_run(mb_run_ctx_t *ctx)
{
    size_t line = mb_line_bytes();
    long long wl = ctx->opt[OPT_CLEAN_LINES];
    size_t pool_bytes = ctx->size_bytes / line * line;
    if (pool_bytes < (size_t)wl * line) {
        fprintf(stderr, "membench c2c: --size %zu is below one clean window (%lld lines of %zu "
                        "bytes)\n", ctx->size_bytes, wl, line);
        exit(2);
    }
    int st = mb_pages_check((mb_pages_kind_t)ctx->pages, pool_bytes + 2 * C2C_PAGE, 1,
                            ctx->reason, sizeof ctx->reason);
    if (st != MB_OK)
        return st;
    mb_mapping_t map;
    memset(&map, 0, sizeof map);
    st = mb_map((mb_pages_kind_t)ctx->pages, pool_bytes + 2 * C2C_PAGE, 1, &map, ctx->reason,
                sizeof ctx->reason);
    if (st == MB_OK)
        st = mb_policy_apply(map.addr, map.len, ctx->policy, ctx->reason, sizeof ctx->reason);
    if (st != MB_OK) {
        mb_unmap(&map);
        return st;
    }
    shared_t sh = {.x = map.addr, .y = (uint64_t *)((char *)map.addr + C2C_PAGE),
                   .pool = (char *)map.addr + 2 * C2C_PAGE, .line = line,
                   .nlines = pool_bytes / line, .wlines = (size_t)wl};
    sh.nwin = sh.nlines / sh.wlines;
    sh.perm = malloc(sizeof(unsigned) * sh.nlines);
    int npairs = ctx->threads * (ctx->threads - 1) / 2;
    result_t *res = calloc((size_t)(npairs * ctx->nops + 1), sizeof *res);
    if (!sh.perm || !res || sh.nlines > 0xFFFFFFFFULL) {
        free(sh.perm), free(res), mb_unmap(&map);
        snprintf(ctx->reason, sizeof ctx->reason, "out of memory (or more than 2^32 lines)");
        return MB_FAILED;
    }
    /* the clean windows: random lines of the pool, each window a cycle */
    unsigned long long seed = (unsigned long long)ctx->opt[OPT_SEED] * 2654435761ULL + 1;
    for (size_t i = 0; i < sh.nlines; i++)
        sh.perm[i] = (unsigned)i;
    for (size_t i = sh.nlines - 1; i > 0; i--) {
        size_t j = (size_t)(xorshift(&seed) % (i + 1));
        unsigned t = sh.perm[i];
        sh.perm[i] = sh.perm[j], sh.perm[j] = t;
    }
    for (size_t w = 0; w < sh.nwin; w++)
        for (size_t i = 0; i < sh.wlines; i++) {
            size_t from = sh.perm[w * sh.wlines + i];
            size_t to = sh.perm[w * sh.wlines + (i + 1) % sh.wlines];
            *(void **)(sh.pool + from * line) = sh.pool + to * line;
        }
    /* the pool leaves every cache (the main thread, on CPU a, wrote it) */
    for (size_t w = 0; w < sh.nwin; w++)
        mb_c2c_flush_window(&sh, sh.perm + w * sh.wlines);

    int nres = 0, worst = MB_OK;
    for (int i = 0; i < ctx->threads; i++)
        for (int j = i + 1; j < ctx->threads; j++)
            for (int o = 0; o < ctx->nops; o++) {
                if (!ctx->op_ok[o])
                    continue;
                const mb_kernel_t *k = ctx->ops[o];
                int op = strcmp(k->op, "cas") == 0        ? OP_CAS
                         : strcmp(k->op, "two_line") == 0 ? OP_TWO_LINE
                         : strcmp(k->op, "dirty") == 0    ? OP_DIRTY
                                                          : OP_CLEAN;
                result_t *r = &res[nres++];
                r->k = k;
                mb_c2c_measure_pair(ctx, &sh, op, ctx->plan[i], ctx->plan[j], r);
                fprintf(stderr, "c2c %-8s CPUs %d-%d: %s%.1f ns per hand-off (p10 %.1f, p90 "
                                "%.1f)%s%s\n", k->op, r->a, r->b, r->status ? "[failed] " : "",
                        r->med, r->p10, r->p90, r->status ? ": " : "", r->reason);
            }
    /* records only now: writing one wakes the harness's OpenMP team */
    for (int i = 0; i < nres; i++) {
        const char *name = res[i].k->op;
        emit_result(ctx, &res[i], &sh, &map,
                    strcmp(name, "clean") == 0   ? OP_CLEAN
                    : strcmp(name, "dirty") == 0 ? OP_DIRTY
                                                 : OP_CAS);
        if (res[i].status != MB_OK)
            worst = MB_FAILED;
        free(res[i].secs);
        free(res[i].switched);
        mb_disturb_free(&res[i].dist);
    }
    free(res);
    free(sh.perm);
    mb_unmap(&map);
    (void)worst;
    return MB_OK;
}

/* table row function: the ops run only through mb_c2c_run */
void mb_c2c_op(mb_arrays_t *A)
{
    (void)A;
}
