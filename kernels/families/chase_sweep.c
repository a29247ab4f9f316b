/*
 * The chase sweep's stopping rule (chase_sweep.h), written once here; the
 * derivation of its numbers is docs/latency_sweep.md.
 *
 * Why these parts.  The memory row is the median of the final plateau the
 * analysis cuts with MB_SWEEP_FLAT (25 %: caches differ by 2-10x).  A run
 * of points held within 3 % over two doublings moves that median by at most
 * about 3 % when later points stay on it, which is the agreement the memory
 * row must keep with a sweep run to the end.  Flatness alone is not enough:
 * an L2 or L3 plateau is flat over 4-5 doublings too.  So the run must also
 * be past the caches, judged two ways, either enough: every level sysfs
 * names has had its own plateau (a VM whose share of the host L3 ends at a
 * sixteenth of what sysfs says stops there, not at 8 x the sysfs figure),
 * or the run starts past the sysfs LLC (an L3 that sysfs reports at half
 * its real size is still rising inside the first doubling past it, so the
 * held run only starts after it).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chase_sweep.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, int n)
{
    double tmp[n > 0 ? n : 1];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof(double), cmp_dbl);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

/* The analysis's cut (membench.analyse.hierarchy._segments), on log ns:
 * a point joins the segment in hand within FLAT of its median, one stray
 * point is forgiven when the next is back, neighbouring segments within
 * FLAT of each other merge.  seg[i] = segment number of point i. */
static int segments(const double *ns, int n, int *seg)
{
    double tol = log1p(MB_SWEEP_FLAT), y[n > 0 ? n : 1], cur[n > 0 ? n : 1];
    for (int i = 0; i < n; i++)
        y[i] = log(ns[i]);
    int nseg = 0, ncur = 0;
    for (int i = 0; i < n; i++) {
        if (ncur == 0) {
            seg[i] = nseg, cur[ncur++] = y[i];
            continue;
        }
        double centre = median_of(cur, ncur);
        if (fabs(y[i] - centre) < tol) {
            seg[i] = nseg, cur[ncur++] = y[i];
        } else if (i + 1 < n && fabs(y[i + 1] - centre) < tol) {
            seg[i] = seg[i + 1] = nseg, cur[ncur++] = y[i], cur[ncur++] = y[i + 1];
            i++;
        } else {
            nseg++, ncur = 0;
            seg[i] = nseg, cur[ncur++] = y[i];
        }
    }
    nseg = n ? nseg + 1 : 0;
    /* merge neighbours whose medians lie within FLAT */
    int merged = 0;
    double prev_median = 0;
    for (int s = 0; s < nseg; s++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (seg[i] == s)
                cur[m++] = y[i];
        double med = median_of(cur, m);
        if (s > 0 && fabs(med - prev_median) < tol) {
            for (int i = 0; i < n; i++)
                if (seg[i] == s)
                    seg[i] = merged - 1;
            m = 0;
            for (int i = 0; i < n; i++)
                if (seg[i] == merged - 1)
                    cur[m++] = y[i];
            prev_median = median_of(cur, m);
        } else {
            for (int i = 0; i < n; i++)
                if (seg[i] == s)
                    seg[i] = merged;
            merged++;
            prev_median = med;
        }
    }
    return merged;
}

int mb_sweep_plateaus_before_last(const double *ns, int n, int *last_start)
{
    int seg[n > 0 ? n : 1];
    int nseg = segments(ns, n, seg), plateaus = 0;
    *last_start = n;
    for (int i = 0; i < n; i++)
        if (seg[i] == nseg - 1 && i < *last_start)
            *last_start = i;
    for (int s = 0; s < nseg - 1; s++) {
        int points = 0;
        for (int i = 0; i < n; i++)
            points += seg[i] == s;
        plateaus += points >= 2;
    }
    return plateaus;
}

int mb_sweep_answer_in(const double *lines, const double *ns, int n, int levels,
                       double llc_lines, int *first)
{
    *first = -1;
    if (n < 2)
        return 0;
    /* the longest trailing run within HELD of its own median */
    double tol = log1p(MB_SWEEP_HELD), logs[n];
    int start = n - 1;
    for (int j = n - 2; j >= 0; j--) {
        for (int i = j; i < n; i++)
            logs[i - j] = log(ns[i]);
        double centre = median_of(logs, n - j);
        int ok = 1;
        for (int i = 0; i < n - j; i++)
            ok &= fabs(logs[i] - centre) <= tol;
        if (!ok)
            break;
        start = j;
    }
    if (lines[n - 1] < ldexp(lines[start], MB_SWEEP_SPAN_OCTAVES) * (1 - 1e-9))
        return 0;
    *first = start;
    int last_start;
    int before = mb_sweep_plateaus_before_last(ns, n, &last_start);
    int every_level = levels > 0 && before >= levels && last_start <= start;
    int past_llc = llc_lines > 0 && lines[start] > llc_lines;
    return every_level || past_llc;
}

static long long read_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char unit = 0;
    long long v = -1;
    if (fscanf(f, "%lld%c", &v, &unit) < 1)
        v = -1;
    fclose(f);
    if (unit == 'K')
        v <<= 10;
    else if (unit == 'M')
        v <<= 20;
    else if (unit == 'G')
        v <<= 30;
    return v;
}

int mb_sweep_cache_levels(int cpu, size_t *llc_bytes)
{
    int seen[MB_SWEEP_MAX_LEVELS + 1] = {0}, levels = 0;
    long long biggest_level = 0, llc = 0;
    for (int index = 0; index < 16; index++) {
        char path[160], type[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, index);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int got = fscanf(f, "%31s", type);
        fclose(f);
        if (got != 1 || strcmp(type, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, index);
        long long level = read_size(path);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, index);
        long long size = read_size(path);
        if (level < 1 || level > MB_SWEEP_MAX_LEVELS || size <= 0)
            continue;
        levels += !seen[level], seen[level] = 1;
        if (level >= biggest_level)
            biggest_level = level, llc = size;
    }
    *llc_bytes = (size_t)llc;
    return levels;
}
