/*
 * membench records (record.h): every key of a record is written here.
 */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "json.h"
#include "record.h"
#include "table.h"
#include "timing.h"

#define MB_SCHEMA 4
#define MB_MIN_TICKS 20         /* warn below this many timer ticks */

/* Where a record comes from: host, process, build and the binding
 * variables the environment carried. */
static void kv_provenance(jbuf_t *b, const run_t *r)
{
    kv_str(b, "host", r->host);
    kv_int(b, "pid", (long long)getpid());
    kv_str(b, "compiler", __VERSION__);
    kv_str(b, "cflags", mb_build.cflags);
    kv_str(b, "harness_version", MB_HARNESS_VERSION);
    mb_arch_keys(b);
    kv_str(b, "omp_proc_bind", getenv("OMP_PROC_BIND"));
    kv_str(b, "omp_places", getenv("OMP_PLACES"));
}

void set_reason(run_t *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->status = status;
}

int op_final_status(const run_t *r, int i)
{
    if (r->op_status[i] != MB_OK)
        return r->op_status[i];
    return r->status;
}

static const char *status_name(int s)
{
    return s == MB_OK ? "ok" : s == MB_SKIPPED ? "skipped" : "failed";
}

/* Opens a record with the keys every record starts with: what was asked,
 * and the status (reason null when ok). */
static void kv_head(jbuf_t *b, const options_t *o, const char *op, int threads,
                    size_t size_bytes, size_t elements, int st,
                    const char *reason)
{
    jb_raw(b, "{");
    kv_int(b, "schema", MB_SCHEMA);
    kv_str(b, "system", o->system);
    kv_str(b, "kernel", g_family->name);
    kv_str(b, "variant", o->variant);
    kv_str(b, "op", op);
    kv_int(b, "threads", threads);
    kv_str(b, "affinity", o->affinity_str);
    kv_str(b, "policy", o->policy_str);
    kv_str(b, "pages", o->pages_str);
    kv_str(b, "init", o->init_str);
    kv_int(b, "size_bytes", (long long)size_bytes);
    kv_int(b, "array_elements", (long long)elements);
    kv_int(b, "arrays", g_family->narrays);
    kv_int(b, "ntimes", o->ntimes);
    kv_int(b, "repeat", o->repeat);
    kv_str(b, "status", status_name(st));
    if (st == MB_OK)
        kv_null(b, "reason");
    else
        kv_str(b, "reason", reason);
}

/* The team: the CPUs each thread ended (and started) on, their nodes,
 * whether any moved, and the binding plan when the harness bound it. */
static void kv_team(jbuf_t *b, const run_t *r, const int *cpus_end, int nt)
{
    int *nodes = calloc((size_t)nt + 1, sizeof(int));
    int migrated = 0;
    for (int t = 0; t < nt; t++) {
        nodes[t] = mb_cpu_node(cpus_end[t]);
        migrated |= cpus_end[t] != r->cpus_start[t];
    }
    kv_ints(b, "cpus", cpus_end, nt);
    kv_ints(b, "cpus_start", r->cpus_start, nt);
    kv_ints(b, "cpu_nodes", nodes, nt);
    kv_bool(b, "migrated", migrated);
    if (r->bound)
        kv_ints(b, "cpus_bound", r->plan, nt);
    else
        kv_null(b, "cpus_bound");
    free(nodes);
}

/* The pages: the share of the sampled pages on each node ({} and null
 * when sampled < 0: nothing was mapped), and the huge-page fraction
 * (< 0 = unknown: null). */
static void kv_pages(jbuf_t *b, const long *counts, long sampled, double huge)
{
    jb_key(b, "page_nodes");
    jb_raw(b, "{");
    int first = 1;
    for (int n = 0; n < MB_MAX_NODES && sampled > 0; n++)
        if (counts[n]) {
            jb_raw(b, "%s\"%d\":", first ? "" : ",", n);
            jb_double(b, (double)counts[n] / (double)sampled);
            first = 0;
        }
    jb_raw(b, "}");
    if (sampled >= 0)
        kv_int(b, "pages_sampled", sampled);
    else
        kv_null(b, "pages_sampled");
    kv_double(b, "hugepage_fraction", huge >= 0 ? huge : NAN);
}

/* array_page_nodes: per array (by its name), the share of its sampled
 * pages on each node; null where a process sampled nothing. */
static void kv_array_pages(jbuf_t *b, const run_t *r)
{
    if (!r) {
        kv_null(b, "array_page_nodes");
        return;
    }
    jb_key(b, "array_page_nodes");
    jb_raw(b, "{");
    for (int k = 0; k < g_family->narrays && k < MB_MAX_ARRAYS; k++) {
        jb_raw(b, "%s\"%s\":{", k ? "," : "", g_family->array_names[k]);
        int first = 1;
        long sampled = r->array_pages_sampled[k];
        for (int n = 0; n < MB_MAX_NODES && sampled > 0; n++)
            if (r->array_node_counts[k][n]) {
                jb_raw(b, "%s\"%d\":", first ? "" : ",", n);
                jb_double(b, (double)r->array_node_counts[k][n] / (double)sampled);
                first = 0;
            }
        jb_raw(b, "}");
    }
    jb_raw(b, "}");
}

/* Per kept iteration, beside "seconds" (none when nkeep is 0): the
 * disturbed rule judges the iteration the statistic came from
 * (core/disturbance.py). */
static void kv_iterations(jbuf_t *b, const options_t *o, const run_t *r, int i, int nkeep)
{
    int iterations = nkeep > 0 && r->iter_wait[i] && r->iter_shared[i];
    for (int j = 1; j < o->ntimes && iterations; j++)
        iterations &= r->iter_wait[i][j] >= 0;
    if (iterations) {
        kv_doubles(b, "disturb_iter_wait_s", r->iter_wait[i] + 1, nkeep);
        kv_ints(b, "disturb_iter_shared", r->iter_shared[i] + 1, nkeep);
    } else {
        kv_null(b, "disturb_iter_wait_s");
        kv_null(b, "disturb_iter_shared");
    }
    /* its own test: a run time not recorded leaves the waits standing */
    int lost = nkeep > 0 && r->iter_lost[i];
    for (int j = 1; j < o->ntimes && lost; j++)
        lost &= r->iter_lost[i][j] >= 0;
    if (lost)
        kv_doubles(b, "disturb_iter_lost_s", r->iter_lost[i] + 1, nkeep);
    else
        kv_null(b, "disturb_iter_lost_s");
}

/* When, the timer (null unless timed), the best time in timer ticks
 * (null when tmin < 0), and the provenance. */
static void kv_tail(jbuf_t *b, const run_t *r, double t_end, int timed, double tmin)
{
    kv_double(b, "t_start", r->t_start);
    kv_double(b, "t_end", t_end);
    if (timed) {
        kv_int(b, "timer_resolution_ns", r->res_ns);
        kv_int(b, "timer_granularity_ns", r->gran_ns);
    } else {
        kv_null(b, "timer_resolution_ns");
        kv_null(b, "timer_granularity_ns");
    }
    if (tmin >= 0 && r->gran_ns > 0)
        kv_double(b, "min_ticks", tmin * 1e9 / (double)r->gran_ns);
    else
        kv_null(b, "min_ticks");
    kv_provenance(b, r);
}

static void kv_bytes(jbuf_t *b, const char *k, long long v)
{
    if (v >= 0)
        kv_int(b, k, v);
    else
        kv_null(b, k);
}

void emit_record(const options_t *o, const run_t *r, int i)
{
    const mb_kernel_t *k = o->ops[i];
    int st = op_final_status(r, i);
    int ran = r->measured && r->op_status[i] == MB_OK;
    int placed = r->measured; /* threads and pages exist */
    long long bytes = mb_kernel_bytes(k, g_family->elem_size, o->elements, 0);
    long long bytes_wa = mb_kernel_bytes(k, g_family->elem_size, o->elements, 1);
    int nkeep = o->ntimes - 1;
    double tmin = 1e300, tsum = 0.0;
    if (ran)
        for (int j = 1; j < o->ntimes; j++) {
            tmin = fmin(tmin, r->secs[i][j]);
            tsum += r->secs[i][j];
        }
    int report_bw = ran && st == MB_OK;

    jbuf_t b = {0};
    kv_head(&b, o, k->op, r->threads, o->size_bytes, o->elements, st,
            r->op_status[i] != MB_OK ? r->op_reason[i] : r->reason);
    kv_double(&b, "gbps", report_bw ? (double)bytes / tmin / 1e9 : NAN);
    kv_double(&b, "gbps_mean", report_bw ? (double)bytes / (tsum / nkeep) / 1e9 : NAN);
    kv_double(&b, "gbps_wa", report_bw ? (double)bytes_wa / tmin / 1e9 : NAN);
    kv_int(&b, "bytes_per_iter", bytes);
    kv_int(&b, "bytes_per_iter_wa", bytes_wa);
    /* what Little's law counts: reads + write-allocate reads (write-backs
     * are posted), and the write-backs beside them */
    kv_int(&b, "bytes_read_per_iter", mb_kernel_read_bytes(k, g_family->elem_size, o->elements));
    kv_int(&b, "bytes_written_per_iter", mb_kernel_write_bytes(k, g_family->elem_size, o->elements));
    kv_bool(&b, "nontemporal", k->nontemporal);
    /* the distance the kernel used; null when it has no software prefetch */
    if (mb_build.software_prefetch)
        kv_int(&b, "prefetch_distance", (long long)o->prefetch_distance);
    else
        kv_null(&b, "prefetch_distance");
    kv_str(&b, "cpu_feature", k->cpu_feature);
    kv_doubles(&b, "seconds", report_bw ? r->secs[i] + 1 : NULL, report_bw ? nkeep : 0);
    if (ran && r->validated) {
        kv_bool(&b, "valid", r->val.ok);
        kv_double(&b, "max_rel_error", r->val.max_rel_error);
    } else {
        kv_null(&b, "valid");
        kv_null(&b, "max_rel_error");
    }
    if (placed) {
        kv_team(&b, r, r->cpus_end, r->threads);
        kv_pages(&b, r->node_counts, r->pages_sampled, r->hugepage_fraction);
        kv_array_pages(&b, r);
    } else {
        kv_ints(&b, "cpus", NULL, 0);
        kv_ints(&b, "cpus_start", NULL, 0);
        kv_ints(&b, "cpu_nodes", NULL, 0);
        kv_null(&b, "migrated");
        kv_null(&b, "cpus_bound");
        kv_pages(&b, NULL, -1, -1.0);
        kv_array_pages(&b, NULL);
    }
    kv_tail(&b, r, r->t_end, placed, report_bw ? tmin : -1.0);
    mb_disturb_keys(&b, ran ? &r->disturb : NULL);
    kv_iterations(&b, o, r, i, report_bw ? nkeep : 0);
    jb_raw(&b, "}\n");
    fputs(b.s, stdout);
    free(b.s);
}

/* One record of a run() family: the usual keys from the process and the
 * point, then the point's extra keys. */
static void emit_point(const options_t *o, run_t *r, const mb_point_t *p)
{
    int nt = r->threads;
    int ok = p->status == MB_OK;
    int *cpus_end = calloc((size_t)nt, sizeof(int));
    if (!cpus_end) {
        perror("calloc");
        exit(MB_FAILED);
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num();
        if (t < nt)
            cpus_end[t] = sched_getcpu();
    }
    double tmin = 1e300;
    for (int j = 0; j < p->nsecs; j++)
        tmin = fmin(tmin, p->secs[j]);

    jbuf_t b = {0};
    kv_head(&b, o, p->op->op, nt, p->size_bytes, p->elements, p->status, p->reason);
    kv_double(&b, "gbps", ok ? p->gbps : NAN);
    kv_double(&b, "gbps_mean", ok ? p->gbps_mean : NAN);
    kv_double(&b, "gbps_wa", ok ? p->gbps_wa : NAN);
    kv_bytes(&b, "bytes_per_iter", p->bytes_per_iter);
    kv_bytes(&b, "bytes_per_iter_wa", p->bytes_per_iter_wa);
    kv_bool(&b, "nontemporal", p->op->nontemporal);
    kv_null(&b, "prefetch_distance");
    kv_str(&b, "cpu_feature", p->op->cpu_feature);
    kv_doubles(&b, "seconds", ok ? p->secs : NULL, ok ? p->nsecs : 0);
    if (p->valid >= 0)
        kv_bool(&b, "valid", p->valid);
    else
        kv_null(&b, "valid");
    kv_null(&b, "max_rel_error");
    kv_team(&b, r, cpus_end, nt);
    long counts[MB_MAX_NODES];
    memset(counts, 0, sizeof counts);
    long sampled = p->nmaps > 0 ? mb_sample_page_nodes(p->maps, p->nmaps, MB_PAGE_SAMPLE, counts)
                                : -1;
    kv_pages(&b, counts, sampled, p->nmaps > 0 ? mb_hugepage_fraction(p->maps, p->nmaps) : -1.0);
    kv_tail(&b, r, mb_clock_seconds(CLOCK_REALTIME), 1, ok && p->nsecs > 0 ? tmin : -1.0);
    mb_disturb_keys(&b, p->disturb);
    if (p->disturb)
        mb_disturb_free(p->disturb);
    for (int i = 0; i < p->nextra; i++) {
        const mb_kv_t *x = &p->extra[i];
        switch (x->type) {
        case MB_KV_INT: kv_int(&b, x->key, x->i); break;
        case MB_KV_DBL: kv_double(&b, x->key, x->d); break;
        case MB_KV_STR: kv_str(&b, x->key, x->s); break;
        case MB_KV_BOOL: kv_bool(&b, x->key, (int)x->i); break;
        case MB_KV_INTS: kv_ints(&b, x->key, x->ints, (int)x->i); break;
        default: kv_null(&b, x->key); break;
        }
    }
    jb_raw(&b, "}\n");
    fputs(b.s, stdout);
    fflush(stdout);
    free(b.s);
    free(cpus_end);
    r->emitted++;
    if (p->status == MB_FAILED || (p->status == MB_SKIPPED && r->worst == MB_OK))
        r->worst = p->status;
}

void emit_cb(mb_run_ctx_t *ctx, const mb_point_t *p)
{
    emit_state_t *es = ctx->harness;
    emit_point(es->o, es->r, p);
}

void human_summary(const options_t *o, const run_t *r)
{
    FILE *f = stderr;
    double mib = (double)o->size_bytes / 1048576.0;
    fprintf(f, "-------------------------------------------------------------\n");
    fprintf(f, "membench %s (variant %s, harness %s) on %s, pid %d\n", g_family->name,
            o->variant, MB_HARNESS_VERSION, r->host, (int)getpid());
    fprintf(f, "Array size = %zu elements, %.1f MiB per array, %d arrays, %.1f MiB total\n",
            o->elements, mib, g_family->narrays, mib * g_family->narrays);
    fprintf(f, "Each op ran %d times; statistics over iterations 2..%d\n", o->ntimes, o->ntimes);
    fprintf(f, "Threads %d, affinity %s, policy %s, pages %s, init %s\n", r->threads,
            o->affinity_str, o->policy_str, o->pages_str, o->init_str);
    if (mb_build.software_prefetch)
        fprintf(f, "Software prefetch %zu bytes ahead%s\n", o->prefetch_distance,
                o->prefetch_distance_set ? " (--prefetch-distance)" : " (built-in)");
    else if (o->prefetch_distance_set)
        fprintf(f, "--prefetch-distance ignored: variant %s has no software prefetch\n",
                o->variant);
    if (g_family->run)
        fprintf(f, "%d records written (one line each on stdout)\n", r->emitted);
    if (r->measured && !g_family->run) {
        fprintf(f, "CPUs (start -> end):");
        for (int t = 0; t < r->threads; t++)
            fprintf(f, " %d->%d", r->cpus_start[t], r->cpus_end[t]);
        fprintf(f, "\nPages: %ld sampled, huge-page fraction %.3f\n", r->pages_sampled,
                r->hugepage_fraction);
        fprintf(f, "Timer: resolution %lld ns, granularity %lld ns (CLOCK_MONOTONIC)\n",
                r->res_ns, r->gran_ns);
        fprintf(f, "%-10s %16s %12s %12s %12s\n", "Function", "Best Rate GB/s",
                "Avg time", "Min time", "Max time");
        for (int i = 0; i < o->nops; i++) {
            if (r->op_status[i] != MB_OK) {
                fprintf(f, "%-10s skipped: %s\n", o->ops[i]->op, r->op_reason[i]);
                continue;
            }
            const mb_kernel_t *k = o->ops[i];
            double mn = 1e300, mx = 0, sum = 0;
            for (int j = 1; j < o->ntimes; j++) {
                mn = fmin(mn, r->secs[i][j]);
                mx = fmax(mx, r->secs[i][j]);
                sum += r->secs[i][j];
            }
            double bytes = (double)mb_kernel_bytes(k, g_family->elem_size, o->elements, 0);
            fprintf(f, "%-10s %16.1f %12.6f %12.6f %12.6f\n", k->op, bytes / mn / 1e9,
                    sum / (o->ntimes - 1), mn, mx);
            if (r->gran_ns > 0 && mn * 1e9 / (double)r->gran_ns < MB_MIN_TICKS)
                fprintf(f, "WARNING: %s: min time is only %.1f timer ticks (< %d); "
                           "use larger arrays\n",
                        k->op, mn * 1e9 / (double)r->gran_ns, MB_MIN_TICKS);
        }
        if (r->validated)
            fprintf(f, "%s (max relative error %.3g)\n",
                    r->val.ok ? "Solution validates" : r->val.reason, r->val.max_rel_error);
    }
    if (r->status != MB_OK)
        fprintf(f, "%s: %s\n", status_name(r->status), r->reason);
    fprintf(f, "-------------------------------------------------------------\n");
}

