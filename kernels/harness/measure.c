/*
 * membench harness: one binary per (kernel family, variant).
 *
 * Parses the CLI (cli.c), places threads and memory (cpus.c, mempolicy.c,
 * pages.c), times NTIMES iterations of each requested op of the family (the
 * first iteration is dropped), validates the result, observes the placement
 * (observe.c) and writes one JSON object per op per line to stdout
 * (record.c).  Human text goes to stderr only.  measure() reads as its
 * steps: resolve_placement, bind_team, then run_family or map_arrays,
 * timed_loop, validate_and_observe.
 *
 * Exit codes: 0 all ok, 1 failed (validation or unexpected error), 2 usage
 * error (no record), 3 skipped (cell cannot run on this host).
 *
 * Build (membench.plan.variants): the harness, kernels/families/variants.yaml
 * `common.harness`, once per toolchain into one archive, at -O2 and with no
 * variant's flags; then each binary, its family's files and the kernel
 * table (which defines mb_build: the family and variant) with the
 * variant's flags, linked with that archive, e.g.
 *   gcc -std=gnu11 -fopenmp -Wall -Wextra -O3 -march=native
 *       -DMB_FAMILY='"stream"' -DMB_VARIANT='"default"' -DMB_CFLAGS='"..."'
 *       kernels/families/kernel_table.c kernels/families/stream.c
 *       bin/SYSTEM/harness/libmbharness.a -lm -lpthread -o OUT
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "types.h"
#include "placement.h"
#include "record.h"
#include "table.h"
#include "timing.h"

/* Feasibility before anything is mapped: the CPUs of the affinity plan (a
 * pinning family's with affinity none: thread t on the t-th allowed CPU),
 * the memory policy's nodes, the pages.  Returns 0, or sets r's reason. */
static int resolve_placement(const options_t *o, run_t *r, mb_policy_t *pol, int *pinned)
{
    int nt = o->threads;
    char why[1024];
    int st = mb_affinity_plan(o->affinity, o->aff_list, o->aff_nlist, nt, r->plan, why,
                              sizeof why);
    if (st != MB_OK) {
        set_reason(r, st, "%s", why);
        return -1;
    }
    *pinned = 0;
    if (o->affinity == MB_AFF_NONE && g_family->pin) {
        static mb_cpu_t allowed[MB_MAX_CPUS];
        int na = mb_allowed_cpus(allowed);
        if (na < nt) {
            set_reason(r, MB_SKIPPED, "%d threads need %d CPUs to pin to, %d allowed", nt, nt,
                       na < 0 ? 0 : na);
            return -1;
        }
        for (int t = 0; t < nt; t++)
            r->plan[t] = allowed[t].cpu;
        *pinned = 1;
    }
    *pol = o->policy;
    st = mb_policy_resolve(pol, why, sizeof why);
    if (st == MB_OK)
        st = mb_pages_check(o->pages, o->size_bytes, g_family->narrays, why, sizeof why);
    if (st != MB_OK) {
        set_reason(r, st, "%s", why);
        return -1;
    }
    return 0;
}

/* The OpenMP team: each thread bound to its CPU inside the first parallel
 * region, where it started recorded.  Returns 0, or sets r's reason. */
static int bind_team(const options_t *o, run_t *r, int pinned)
{
    int nt = o->threads;
    omp_set_dynamic(0);
    omp_set_num_threads(nt);
    r->bound = o->affinity != MB_AFF_NONE || pinned;
    int team = 0;
    int *bind_err = calloc((size_t)nt, sizeof(int));
#pragma omp parallel
    {
        int t = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads();
        if (t < nt) {
            if (r->bound)
                bind_err[t] = mb_bind_self(r->plan[t]);
            r->cpus_start[t] = sched_getcpu();
        }
    }
    if (team != nt) {
        free(bind_err);
        set_reason(r, MB_FAILED, "OpenMP gave a team of %d threads, %d requested", team, nt);
        return -1;
    }
    for (int t = 0; t < nt; t++)
        if (bind_err[t]) {
            set_reason(r, MB_FAILED, "sched_setaffinity(thread %d -> CPU %d) failed: %s", t,
                       r->plan[t], strerror(bind_err[t]));
            free(bind_err);
            return -1;
        }
    free(bind_err);
    r->threads = team;
    return 0;
}

/* A family with its own run loop (latency): it maps its memory and writes
 * its records through emit_cb. */
static void run_family(const options_t *o, run_t *r, const mb_policy_t *pol)
{
    r->res_ns = mb_timer_resolution_ns();
    r->gran_ns = mb_timer_granularity_ns();
    const mb_kernel_t *ops[MB_MAX_OPS];
    int op_ok[MB_MAX_OPS];
    for (int i = 0; i < o->nops; i++) {
        ops[i] = o->ops[i];
        op_ok[i] = r->op_status[i] == MB_OK;
    }
    emit_state_t es = {o, r};
    mb_run_ctx_t ctx = {
        .ops = ops, .op_ok = op_ok, .nops = o->nops, .threads = o->threads, .plan = r->plan,
        .size_bytes = o->size_bytes, .pages = (int)o->pages, .policy = pol,
        .init_parallel = o->init_parallel, .ntimes = o->ntimes,
        .test_corrupt = o->test_corrupt, .opt = o->famopt, .gran_ns = r->gran_ns,
        .emit = emit_cb, .harness = &es,
    };
    int st = g_family->run(&ctx);
    if (st != MB_OK)
        set_reason(r, st, "%s", ctx.reason[0] ? ctx.reason : "run failed");
}

/* The arrays: mapped, the policy set before the first touch, first touched
 * by the family's init.  Returns 0, or sets r's reason. */
static int map_arrays(const options_t *o, run_t *r, const mb_policy_t *pol, mb_mapping_t *maps,
                      mb_arrays_t *A)
{
    char why[1024];
    A->n = o->elements;
    A->narrays = g_family->narrays;
    A->scalar = g_family->scalar;
    A->prefetch_distance = o->prefetch_distance;
    for (int a = 0; a < g_family->narrays; a++) {
        int st = mb_map(o->pages, o->size_bytes, g_family->narrays, &maps[a], why, sizeof why);
        if (st == MB_OK)
            st = mb_policy_apply(maps[a].addr, maps[a].len, pol, why, sizeof why);
        if (st != MB_OK) {
            set_reason(r, st, "array %s: %s", g_family->array_names[a], why);
            return -1;
        }
        A->v[a] = maps[a].addr;
    }
    g_family->init(A, o->init_parallel);
    return 0;
}

/* The per-iteration records of each op that runs (record.h): all
 * allocated, or none (freed) and 0. */
static int iterations_alloc(const options_t *o, run_t *r)
{
    int ok = 1;
    for (int i = 0; i < o->nops; i++)
        if (r->op_status[i] == MB_OK) {
            r->iter_wait[i] = calloc((size_t)o->ntimes, sizeof(double));
            r->iter_lost[i] = calloc((size_t)o->ntimes, sizeof(double));
            r->iter_shared[i] = calloc((size_t)o->ntimes, sizeof(int));
            ok &= r->iter_wait[i] && r->iter_lost[i] && r->iter_shared[i];
        }
    for (int i = 0; i < o->nops && !ok; i++) {
        free(r->iter_wait[i]), free(r->iter_lost[i]), free(r->iter_shared[i]);
        r->iter_wait[i] = NULL, r->iter_lost[i] = NULL, r->iter_shared[i] = NULL;
    }
    return ok;
}

/* The timed loop, iteration-major like STREAM: r->secs[i][k] per op and
 * iteration; between iterations, outside them, what each waited and lost
 * (the statistic is one iteration's, the best: disturb.h).  The sequence
 * of ops that ran is kept for the validation's replay. */
static void time_iterations(const options_t *o, run_t *r, mb_arrays_t *A,
                            const mb_kernel_t **seq, size_t *nseq, mb_iter_reading_t *at)
{
    int nt = o->threads;
    mb_iter_reading_t *before = at, *after = at ? at + nt : NULL;
    if (at)
        mb_iter_read_team(nt, before);
    for (int k = 0; k < o->ntimes; k++)
        for (int i = 0; i < o->nops; i++) {
            if (r->op_status[i] != MB_OK)
                continue;
            long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
            o->ops[i]->fn(A);
            long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
            r->secs[i][k] = (double)(t1 - t0) * 1e-9;
            seq[(*nseq)++] = o->ops[i];
            if (at) {
                mb_iter_read_team(nt, after);
                r->iter_wait[i][k] = mb_iter_wait(nt, before, after);
                r->iter_lost[i][k] = mb_iter_lost(nt, before, after);
                r->iter_shared[i][k] = mb_iter_shared(nt, before, after);
                mb_iter_reading_t *swap = before;
                before = after, after = swap;
            }
        }
}

/* The timed loop with what could disturb it read around it (disturb.h).
 * Returns the sequence of ops that ran (the caller frees it); NULL, with
 * r's reason, when out of memory. */
static const mb_kernel_t **timed_loop(const options_t *o, run_t *r, mb_arrays_t *A,
                                      size_t *nseq)
{
    r->res_ns = mb_timer_resolution_ns();
    r->gran_ns = mb_timer_granularity_ns();
    *nseq = 0;
    const mb_kernel_t **seq = malloc(sizeof(*seq) * (size_t)o->ntimes * (size_t)o->nops);
    if (!seq) {
        set_reason(r, MB_FAILED, "out of memory");
        return NULL;
    }
    for (int i = 0; i < o->nops; i++)
        if (r->op_status[i] == MB_OK &&
            !(r->secs[i] = calloc((size_t)o->ntimes, sizeof(double)))) {
            free(seq);
            set_reason(r, MB_FAILED, "out of memory");
            return NULL;
        }
    int nt = o->threads;
    /* two readings a thread: before and after the iteration; none when out
     * of memory (the per-iteration keys are then null) */
    mb_iter_reading_t *at = calloc(2 * (size_t)nt, sizeof *at);
    if (at && !iterations_alloc(o, r))
        free(at), at = NULL;
    mb_disturb_begin(&r->disturb, nt, r->cpus_start, nt, nt, 1);
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        if (t < nt)
            mb_disturb_thread_begin(&r->disturb, t);
    }
    time_iterations(o, r, A, seq, nseq, at);
    free(at);
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        if (t < nt) {
            mb_disturb_thread_end(&r->disturb, t);
            r->cpus_end[t] = sched_getcpu();
        }
    }
    mb_disturb_end(&r->disturb, 1);
    r->measured = 1;
    return seq;
}

/* After the loop: the arrays against the replayed ops, then where the pages
 * are and how many are huge. */
static void validate_and_observe(const options_t *o, run_t *r, mb_mapping_t *maps,
                                 mb_arrays_t *A, const mb_kernel_t **seq, size_t nseq)
{
    if (o->test_corrupt)
        g_family->corrupt(A);
    g_family->validate(A, seq, nseq, &r->val);
    r->validated = 1;
    if (!r->val.ok)
        set_reason(r, MB_FAILED, "%s", r->val.reason);
    r->pages_sampled = mb_sample_page_nodes(maps, g_family->narrays, MB_PAGE_SAMPLE,
                                            r->node_counts);
    for (int k = 0; k < g_family->narrays && k < MB_MAX_ARRAYS; k++)
        r->array_pages_sampled[k] = mb_sample_page_nodes(&maps[k], 1, MB_PAGE_SAMPLE,
                                                         r->array_node_counts[k]);
    r->hugepage_fraction = mb_hugepage_fraction(maps, g_family->narrays);
}

/* Placement, then the family's run loop or map, time, validate.  Each step
 * stops at the first problem, with r->status and r->reason set. */
static void measure(const options_t *o, run_t *r, mb_mapping_t *maps, mb_arrays_t *A)
{
    int nrun = 0;
    for (int i = 0; i < o->nops; i++)
        nrun += r->op_status[i] == MB_OK;
    if (nrun == 0) {
        set_reason(r, MB_SKIPPED, "no requested op can run on this CPU");
        return;
    }
    mb_policy_t pol;
    int pinned;
    if (resolve_placement(o, r, &pol, &pinned) != 0 || bind_team(o, r, pinned) != 0)
        return;
    if (g_family->run) {
        run_family(o, r, &pol);
        return;
    }
    if (map_arrays(o, r, &pol, maps, A) != 0)
        return;
    size_t nseq;
    const mb_kernel_t **seq = timed_loop(o, r, A, &nseq);
    if (!seq)
        return;
    validate_and_observe(o, r, maps, A, seq, nseq);
    free(seq);
}

/* The binary's family, or exit: --list still prints the table when the
 * family is not linked in. */
static void require_family(int argc, char **argv)
{
    g_family = mb_find_family(mb_build.family);
    if (g_family && (g_family->run || (g_family->init && g_family->validate)))
        return;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--list") == 0) {
            mb_print_table(stdout, NULL);
            exit(0);
        }
    fprintf(stderr, "%s: kernel family '%s' is not linked into this binary "
                    "(build with kernels/%s.c)\n", g_prog, mb_build.family, mb_build.family);
    exit(MB_FAILED);
}

/* What the run knows before it starts: the time, the host (the short name
 * is the default --system), the ops this CPU cannot run, the per-thread
 * arrays.  Returns 0, or -1 when out of memory. */
static int start_run(options_t *o, run_t *r)
{
    static char short_host[256];
    r->status = MB_OK;
    r->worst = MB_OK;
    r->pages_sampled = -1;
    r->hugepage_fraction = -1.0;
    r->threads = o->threads;
    r->t_start = mb_clock_seconds(CLOCK_REALTIME);
    if (gethostname(r->host, sizeof r->host - 1) != 0)
        snprintf(r->host, sizeof r->host, "unknown");
    snprintf(short_host, sizeof short_host, "%s", r->host);
    short_host[strcspn(short_host, ".")] = '\0';
    if (!o->system)
        o->system = short_host;

    for (int i = 0; i < o->nops; i++) {
        const char *feat = o->ops[i]->cpu_feature;
        int has = mb_cpu_supports(feat);
        if (has <= 0) {
            r->op_status[i] = MB_SKIPPED;
            snprintf(r->op_reason[i], sizeof r->op_reason[i],
                     has < 0 ? "op %s requires CPU feature '%s', unknown to this harness"
                             : "op %s requires CPU feature '%s', which this CPU lacks",
                     o->ops[i]->op, feat);
        }
    }

    r->cpus_start = calloc((size_t)o->threads, sizeof(int));
    r->cpus_end = calloc((size_t)o->threads, sizeof(int));
    r->plan = calloc((size_t)o->threads, sizeof(int));
    return r->cpus_start && r->cpus_end && r->plan ? 0 : -1;
}

/* The records (a run() family wrote its own) and the exit code: failed over
 * skipped over ok. */
static int emit_records(options_t *o, const run_t *r)
{
    int exit_code = MB_OK;
    if (r->emitted > 0) {
        exit_code = r->worst;
        if (r->status == MB_FAILED || (r->status == MB_SKIPPED && exit_code == MB_OK))
            exit_code = r->status;
        o->nops = 0;
    }
    for (int i = 0; i < o->nops; i++) {
        emit_record(o, r, i);
        int st = op_final_status(r, i);
        if (st == MB_FAILED)
            exit_code = MB_FAILED;
        else if (st == MB_SKIPPED && exit_code == MB_OK)
            exit_code = MB_SKIPPED;
    }
    fflush(stdout);
    return exit_code;
}

int main(int argc, char **argv)
{
    g_prog = argc > 0 && argv[0] ? strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]
                                 : "membench";
    require_family(argc, argv);

    static options_t o;
    parse_options(argc, argv, &o);
    static run_t r;
    if (start_run(&o, &r) != 0) {
        fprintf(stderr, "%s: out of memory\n", g_prog);
        return MB_FAILED;
    }
    mb_mapping_t maps[MB_MAX_ARRAYS];
    memset(maps, 0, sizeof maps);
    mb_arrays_t A;
    memset(&A, 0, sizeof A);

    measure(&o, &r, maps, &A);
    r.t_end = mb_clock_seconds(CLOCK_REALTIME);

    human_summary(&o, &r);
    int exit_code = emit_records(&o, &r);
    for (int a = 0; a < MB_MAX_ARRAYS; a++)
        mb_unmap(&maps[a]);
    return exit_code;
}
