/*
 * The chase's timing in walks of fixed stretches and its latency statistic
 * (chase_walk.h), for the chase and loaded families.
 *
 * Why not the best chunk: a 10 ms chunk covers a few MiB of a 1 GiB cycle,
 * and regions of the working set differ (banks, channels, page-table
 * locality) both ways, so the minimum over many chunks that each cover a
 * different region picks the luckiest region as well as the quietest moment
 * and reads 5-10 % low (issue 20).  Here every walk starts on the same
 * pointer and cuts the cycle at the same load counts, so chunk s of every
 * walk covers the same lines; the minimum over walks for one stretch removes
 * only temporal noise, and the sum over stretches weighs every region once.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../harness/timing.h"
#include "families.h"
#include "chase_walk.h"

void *volatile mb_chase_sink;

/* ------------------------------------------------------------ the kernel */

MB_KERNEL_FN void *mb_kern_chase_chase(void *p, size_t loads)
{
    void **q = p;
    size_t blocks = loads / 16, rest = loads % 16;
    while (blocks--) {
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
    }
    while (rest--)
        q = *q;
    return q;
}

/* ------------------------------------------------------------ timing */

void mb_chase_time(void **start, size_t loads, int ntimes, double *secs)
{
    void *p = *start;
    for (int k = 0; k < ntimes; k++) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
        p = mb_kern_chase_chase(p, loads);
        long long t1 = mb_clock_ns(CLOCK_MONOTONIC);
        secs[k] = (double)(t1 - t0) * 1e-9;
    }
    mb_chase_sink = p;
    *start = p;
}

/* Loads per chunk so a chunk takes >= chunk_ns: grow a probe chase (which is
 * also the warm-up) until it takes >= 1/8 of that, then scale (+5 %). */
size_t mb_chase_calibrate(void **start, double chunk_ns)
{
    size_t n = 256;
    void *p = *start;
    for (;;) {
        long long t0 = mb_clock_ns(CLOCK_MONOTONIC);
        p = mb_kern_chase_chase(p, n);
        double dt = (double)(mb_clock_ns(CLOCK_MONOTONIC) - t0);
        if (dt >= chunk_ns / 8 || n >= ((size_t)1 << 40)) {
            /* the faster of two probes: a probe slowed by an interrupt
             * must not make the chunks short */
            for (int rep = 0; rep < 1; rep++) {
                t0 = mb_clock_ns(CLOCK_MONOTONIC);
                p = mb_kern_chase_chase(p, n);
                double d = (double)(mb_clock_ns(CLOCK_MONOTONIC) - t0);
                dt = d < dt ? d : dt;
            }
            mb_chase_sink = p;
            *start = p;
            double loads = ceil((double)n * chunk_ns / (dt > 1 ? dt : 1) * 1.05);
            return loads < 16 ? 16 : (size_t)loads;
        }
        n *= 4;
    }
}

/* ----------------------------------------------------- walks, statistic */

size_t mb_chase_stretch_loads(size_t walk_loads, int stretches, int s)
{
    size_t n = (size_t)stretches;
    return walk_loads / n + ((size_t)s < walk_loads % n ? 1 : 0);
}

double mb_chase_stretch_min_mean(const double *secs, int walks, int stretches,
                                 size_t walk_loads)
{
    double sum = 0;
    for (int s = 0; s < stretches; s++) {
        double best = secs[s];
        for (int k = 1; k < walks; k++)
            best = fmin(best, secs[(size_t)k * (size_t)stretches + (size_t)s]);
        sum += best;
    }
    return sum / (double)walk_loads * 1e9;
}

int mb_chase_stretches_confirmed(const double *secs, int walks, int stretches, double rel)
{
    if (walks < 2)
        return 0;
    int confirmed = 0;
    for (int s = 0; s < stretches; s++) {
        double a = INFINITY, b = INFINITY; /* fastest, second fastest */
        for (int k = 0; k < walks; k++) {
            double t = secs[(size_t)k * (size_t)stretches + (size_t)s];
            if (t < a)
                b = a, a = t;
            else if (t < b)
                b = t;
        }
        confirmed += b <= (1 + rel) * a;
    }
    return confirmed;
}

int mb_chase_near_best(const double *secs, int n)
{
    double tmin = INFINITY;
    int near = 0;
    for (int k = 0; k < n; k++)
        tmin = fmin(tmin, secs[k]);
    for (int k = 0; k < n; k++)
        near += secs[k] <= 1.03 * tmin;
    return near;
}

/* One walk of `stretches` chunks from *p; 1 when it ends on its start. */
static int one_walk(void **p, size_t walk_loads, int stretches, double *secs)
{
    void *p0 = *p;
    for (int s = 0; s < stretches; s++)
        mb_chase_time(p, mb_chase_stretch_loads(walk_loads, stretches, s), 1, secs + s);
    return *p == p0;
}

void mb_chase_walk(void **start, double chunk_ns, int ntimes, int max_walks, size_t cycle,
                   double *buf, mb_chase_walks_t *w)
{
    size_t chunk = mb_chase_calibrate(start, chunk_ns);
    mb_chase_walk_calibrated(start, chunk, chunk_ns, ntimes, max_walks, cycle, buf, w);
}

void mb_chase_walk_calibrated(void **start, size_t chunk, double chunk_ns, int ntimes,
                              int max_walks, size_t cycle, double *buf, mb_chase_walks_t *w)
{
    int cap = MB_CHASE_CHUNK_CAP(ntimes);
    memset(w, 0, sizeof *w);
    w->secs = buf;
    for (int attempt = 0;; attempt++) {
        /* a walk: the cycle in stretches of >= one chunk, or whole cycles
         * filling one chunk */
        size_t wl = cycle, ns = cycle / chunk;
        if (ns < 1) {
            wl = cycle * ((chunk + cycle - 1) / cycle);
            ns = 1;
        }
        int S = ns > MB_CHASE_MAX_STRETCHES ? MB_CHASE_MAX_STRETCHES : (int)ns;
        int wmin = (ntimes - 1 + S - 1) / S;
        wmin = wmin < MB_CHASE_MIN_WALKS ? MB_CHASE_MIN_WALKS : wmin;
        w->walk_loads = wl, w->stretches = S, w->walks = 0, w->closed = 1;
        double spent = 0;
        int most = max_walks < MB_CHASE_MAX_WALKS ? max_walks : MB_CHASE_MAX_WALKS;
        /* the loaded chase (no walk added past the minimum): its window
         * closes after the first walk that ends past its budget */
        double window = max_walks <= MB_CHASE_MIN_WALKS ? MB_CHASE_WINDOW_S : INFINITY;
        int cut = 0;
        while (w->walks < wmin ||
               (w->walks < most && (w->walks + 1) * S <= cap && spent < MB_CHASE_EXTEND_S &&
                mb_chase_stretches_confirmed(buf, w->walks, S, MB_CHASE_CONFIRM_REL) <
                    MB_CHASE_CONFIRM_FRAC * S)) {
            double *secs = buf + (size_t)w->walks * (size_t)S;
            w->closed &= one_walk(start, wl, S, secs);
            w->walks++;
            double tmin = INFINITY;
            for (int s = 0; s < S; s++)
                spent += secs[s], tmin = fmin(tmin, secs[s]);
            if (w->walks == 1 && attempt == 0 && tmin * 1e9 < 0.75 * chunk_ns)
                break; /* the probe was slowed down: longer stretches */
            if ((cut = w->walks < wmin && spent >= window))
                break;
        }
        if (w->walks >= wmin || cut || attempt == 1)
            return;
        double tmin = INFINITY;
        for (int s = 0; s < S; s++)
            tmin = fmin(tmin, buf[s]);
        chunk = (size_t)ceil((double)chunk * chunk_ns / (tmin * 1e9) * 1.1);
    }
}

static void put_str(mb_point_t *p, const char *k, const char *v)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_STR, .s = v};
}

double mb_chase_window_mean(const double *secs, int walks, int stretches, size_t walk_loads)
{
    double sum = 0;
    for (int i = 0; i < walks * stretches; i++)
        sum += secs[i];
    return sum / ((double)walk_loads * walks) * 1e9;
}

static void latency_keys(mb_point_t *pt, const mb_chase_walks_t *w, double *scratch,
                         size_t cycle, int window_mean);

void mb_chase_latency_keys(mb_point_t *pt, const mb_chase_walks_t *w, double *scratch,
                           size_t cycle)
{
    latency_keys(pt, w, scratch, cycle, 0);
}

void mb_chase_loaded_latency_keys(mb_point_t *pt, const mb_chase_walks_t *w, double *scratch,
                                  size_t cycle)
{
    latency_keys(pt, w, scratch, cycle, 1);
}

static void latency_keys(mb_point_t *pt, const mb_chase_walks_t *w, double *scratch,
                         size_t cycle, int window_mean)
{
    static const char *const keys[] = {
        "ns_per_load", "ns_median", "ns_max", "ns_best_chunk", "ns_best_walk", "loads",
        "walk_loads", "stretches", "walks", "cycle_walks", "chunks_near_best",
        "stretches_confirmed"};
    put_str(pt, "latency_statistic", window_mean ? MB_CHASE_LOADED_STATISTIC : MB_CHASE_STATISTIC);
    if (!w) {
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            mb_point_null(pt, keys[i]);
        if (window_mean)
            mb_point_null(pt, "ns_stretch_min_mean");
        return;
    }
    int S = w->stretches, n = w->walks * S;
    double best_walk = INFINITY;
    for (int k = 0; k < w->walks; k++) {
        double t = 0;
        for (int s = 0; s < S; s++)
            t += w->secs[k * S + s];
        best_walk = fmin(best_walk, t);
    }
    /* ns per load of every chunk (stretches differ by one load at most) */
    for (int i = 0; i < n; i++)
        scratch[i] = w->secs[i] / (double)mb_chase_stretch_loads(w->walk_loads, S, i % S) * 1e9;
    int near = mb_chase_near_best(scratch, n);
    qsort(scratch, (size_t)n, sizeof(double), mb_cmp_double);
    double best = scratch[0], worst = scratch[n - 1];
    double med = n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
    double min_mean = mb_chase_stretch_min_mean(w->secs, w->walks, S, w->walk_loads);
    if (window_mean) {
        /* loaded: the mean over the window the load's bandwidth is counted
         * in (every timed chunk), the stretch-min-mean beside it */
        mb_point_dbl(pt, "ns_per_load", mb_chase_window_mean(w->secs, w->walks, S,
                                                             w->walk_loads));
        mb_point_dbl(pt, "ns_stretch_min_mean", min_mean);
    } else
        mb_point_dbl(pt, "ns_per_load", min_mean);
    mb_point_dbl(pt, "ns_median", med);
    mb_point_dbl(pt, "ns_max", worst);
    mb_point_dbl(pt, "ns_best_chunk", best);
    mb_point_dbl(pt, "ns_best_walk", best_walk / (double)w->walk_loads * 1e9);
    mb_point_int(pt, "loads", (long long)(w->walk_loads / (size_t)S));
    mb_point_int(pt, "walk_loads", (long long)w->walk_loads);
    mb_point_int(pt, "stretches", S);
    mb_point_int(pt, "walks", w->walks);
    mb_point_dbl(pt, "cycle_walks", (double)w->walk_loads * w->walks / (double)cycle);
    mb_point_int(pt, "chunks_near_best", near);
    mb_point_int(pt, "stretches_confirmed",
                 mb_chase_stretches_confirmed(w->secs, w->walks, S, MB_CHASE_CONFIRM_REL));
}
