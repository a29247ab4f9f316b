/*
 * membench harness: what could have disturbed a timed region (disturb.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "disturb.h"
#include "json.h"

#define CLOCK_TRIALS 3
#define CLOCK_EXTRA_TRIALS 20
#define CLOCK_SLOW 0.95

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double now_s(void)
{
    return (double)now_ns() * 1e-9;
}

long long mb_thread_ivcsw(void)
{
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getenv("MEMBENCH_TEST_NO_THREAD_COUNTERS")) /* test only: a kernel without them */
        return -1;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return (long long)ru.ru_nivcsw;
#endif
    return -1;
}

int mb_thread_sched_ns(long long *run, long long *wait)
{
    *run = -1, *wait = -1;
    if (getenv("MEMBENCH_TEST_NO_THREAD_COUNTERS"))
        return -1;
    /* test only: a kernel whose schedstat says "0 0 0" (sched_info off) */
    const char *path = getenv("MEMBENCH_TEST_SCHEDSTAT");
    FILE *f = fopen(path ? path : "/proc/thread-self/schedstat", "r");
    if (!f)
        return -1;
    unsigned long long ran, waited, slices;
    int n = fscanf(f, "%llu %llu %llu", &ran, &waited, &slices);
    fclose(f);
    if (n < 2 || (ran == 0 && waited == 0))
        return -1; /* not counted: the switch count stands in (core/disturbance.py) */
    /* The run time is the same counter (sum_exec_runtime) read through the
     * thread's CPU clock, which brings it up to now: schedstat's field is
     * only updated at a tick or a switch, so a running thread's reads up
     * to one tick (4 ms at HZ=250, measured here) behind, a tick of error
     * in every lost time, the whole of a 10 ms iteration's threshold.
     * run_delay needs no such care: a running thread is not waiting. */
    struct timespec now;
    if (!path && clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0)
        ran = (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec;
    *run = (long long)ran, *wait = (long long)waited;
    return 0;
}

long long mb_thread_wait_ns(void)
{
    long long run, wait;
    return mb_thread_sched_ns(&run, &wait) == 0 ? wait : -1;
}

void mb_iter_read_team(int nt, mb_iter_reading_t *at)
{
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        if (t < nt) {
            mb_iter_reading_t *me = &at[t];
            if (mb_thread_sched_ns(&me->run, &me->wait) != 0)
                me->run = -1, me->wait = -1;
            /* right after the schedstat read: a switch in the few us
             * between the two is in the span that ends here and not yet in
             * its run_delay, so reads as lost (and the next iteration's
             * wait, its lost clamped at 0): rare, and at worst over-read */
            me->now = now_ns();
            me->cpu = sched_getcpu();
        }
    }
}

int mb_iter_shared(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b)
{
    for (int x = 0; x < nt; x++)
        for (int y = x + 1; y < nt; y++)
            if ((a[x].cpu >= 0 && a[x].cpu == a[y].cpu) || (b[x].cpu >= 0 && b[x].cpu == b[y].cpu))
                return 1;
    return 0;
}

double mb_iter_wait(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b)
{
    long long most = 0;
    for (int t = 0; t < nt; t++) {
        if (a[t].wait < 0 || b[t].wait < 0)
            return -1.0;
        if (b[t].wait - a[t].wait > most)
            most = b[t].wait - a[t].wait;
    }
    return (double)most * 1e-9;
}

double mb_iter_lost(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b)
{
    long long least = -1;
    for (int t = 0; t < nt; t++) {
        if (a[t].run < 0 || b[t].run < 0 || a[t].wait < 0 || b[t].wait < 0)
            return -1.0;
        long long gone = (b[t].now - a[t].now) - (b[t].run - a[t].run) - (b[t].wait - a[t].wait);
        if (gone < 0) /* the clocks read a few ns apart */
            gone = 0;
        if (least < 0 || gone < least)
            least = gone;
    }
    return least < 0 ? -1.0 : (double)least * 1e-9;
}

double mb_disturb_ghz(void)
{
    /* The best of a few ~0.5 ms trials, and more while that reads well under
     * the fastest this process has seen (at its first reading: always): a
     * pause of the host's slows every short trial as a clock change would,
     * and only a slower clock that outlasts ~10 ms more of trials is one. */
    static double fastest; /* written by one measuring thread at a time */
    double seen;
    __atomic_load(&fastest, &seen, __ATOMIC_RELAXED);
    double ghz = mb_core_ghz_trials(CLOCK_TRIALS);
    for (int extra = 0; extra < CLOCK_EXTRA_TRIALS && (seen == 0.0 || ghz < CLOCK_SLOW * seen); extra++) {
        double more = mb_core_ghz_trials(1);
        if (more > ghz)
            ghz = more;
        else if (seen == 0.0 && extra >= CLOCK_TRIALS)
            break; /* the first reading: steady once a few more add nothing */
    }
    if (ghz > seen)
        __atomic_store(&fastest, &ghz, __ATOMIC_RELAXED);
    return ghz;
}

/* Steal ticks summed over the CPUs (-1 when /proc/stat has no steal
 * field), procs_running (-1 when absent), and the busy ticks (user, nice,
 * system, irq, softirq) summed over every CPU with their count (-1 when
 * absent): less the measuring threads' own run time, what other tasks ran
 * anywhere, sharing the memory system, which none of the region's own
 * counters see (a neighbour on another CPU). */
static void read_stat(const mb_disturb_t *d, long long *steal, int *running, long long *busy_all,
                      int *cpus_all)
{
    *steal = -1, *running = -1, *busy_all = -1, *cpus_all = -1;
    if (getenv("MEMBENCH_TEST_NO_STEAL")) /* test only: a kernel without the field */
        return;
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    char line[1024];
    long long sum = 0, busy = 0;
    int found = 0, fields_ok = 1, counted = 0;
    while (fgets(line, sizeof line, f)) {
        int cpu;
        /* "cpuN ..." lines only: the first line ("cpu  ...") sums them all */
        if (isdigit((unsigned char)line[3]) && sscanf(line, "cpu%d ", &cpu) == 1) {
            int want = 0;
            for (int i = 0; i < d->ncpus; i++)
                want |= d->cpus[i] == cpu;
            unsigned long long v[8];
            int n = sscanf(line, "cpu%*d %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                           &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
            if (n >= 7)
                busy += (long long)(v[0] + v[1] + v[2] + v[5] + v[6]), counted++;
            if (!want)
                continue;
            if (n < 8)
                fields_ok = 0;
            else
                sum += (long long)v[7], found++;
        } else if (strncmp(line, "procs_running ", 14) == 0) {
            *running = atoi(line + 14);
        }
    }
    fclose(f);
    if (found > 0 && fields_ok && found == d->ncpus)
        *steal = sum;
    if (counted > 0)
        *busy_all = busy, *cpus_all = counted;
}

void mb_disturb_begin(mb_disturb_t *d, int nthreads, const int *cpus, int ncpus, int own,
                      int clock)
{
    d->used = 1;
    mb_disturb_free(d);
    d->ivcsw0 = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->ivcsw0);
    d->ivcsw = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->ivcsw);
    d->wait0 = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->wait0);
    d->wait = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->wait);
    d->run0 = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->run0);
    d->run = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->run);
    d->start = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->start);
    d->span = calloc((size_t)(nthreads > 0 ? nthreads : 1), sizeof *d->span);
    int all = d->ivcsw0 && d->ivcsw && d->wait0 && d->wait && d->run0 && d->run && d->start && d->span;
    d->nthreads = all ? nthreads : 0;
    d->own = own;
    d->ncpus = 0;
    for (int i = 0; i < ncpus && d->ncpus < MB_DISTURB_MAX_CPUS; i++)
        if (cpus[i] >= 0)
            d->cpus[d->ncpus++] = cpus[i];
    for (int t = 0; t < d->nthreads; t++)
        d->ivcsw0[t] = -1, d->ivcsw[t] = -1, d->wait0[t] = -1, d->wait[t] = -1,
        d->run0[t] = -1, d->run[t] = -1, d->start[t] = -1, d->span[t] = -1;
    d->ghz0 = d->ghz1 = NAN;
    if (clock)
        d->ghz0 = mb_disturb_ghz();
    read_stat(d, &d->steal0, &d->running0, &d->busy0, &d->busy_cpus);
    d->steal_s = NAN;
    d->busy_s = NAN;
    d->running1 = -1;
    d->t0 = now_s();
}

void mb_disturb_free(mb_disturb_t *d)
{
    free(d->ivcsw0), free(d->ivcsw), free(d->wait0), free(d->wait);
    free(d->run0), free(d->run), free(d->start), free(d->span);
    d->ivcsw0 = NULL, d->ivcsw = NULL, d->wait0 = NULL, d->wait = NULL;
    d->run0 = NULL, d->run = NULL, d->start = NULL, d->span = NULL;
    d->nthreads = 0;
}

void mb_disturb_thread_begin(mb_disturb_t *d, int t)
{
    if (t < 0 || t >= d->nthreads)
        return;
    d->ivcsw0[t] = mb_thread_ivcsw();
    mb_thread_sched_ns(&d->run0[t], &d->wait0[t]);
    d->start[t] = now_ns();
}

void mb_disturb_thread_end(mb_disturb_t *d, int t)
{
    if (t < 0 || t >= d->nthreads)
        return;
    long long end = now_ns(), run, wait;
    long long now = mb_thread_ivcsw();
    mb_thread_sched_ns(&run, &wait);
    d->ivcsw[t] = now >= 0 && d->ivcsw0[t] >= 0 ? (int)(now - d->ivcsw0[t]) : -1;
    d->wait[t] = wait >= 0 && d->wait0[t] >= 0 ? wait - d->wait0[t] : -1;
    d->run[t] = run >= 0 && d->run0[t] >= 0 ? run - d->run0[t] : -1;
    d->span[t] = d->start[t] >= 0 ? end - d->start[t] : -1;
}

void mb_disturb_end(mb_disturb_t *d, int clock)
{
    d->t1 = now_s();
    long long steal1, busy1;
    int cpus1;
    read_stat(d, &steal1, &d->running1, &busy1, &cpus1);
    if (d->steal0 >= 0 && steal1 >= 0)
        d->steal_s = (double)(steal1 - d->steal0) / (double)sysconf(_SC_CLK_TCK);
    if (d->busy0 >= 0 && busy1 >= d->busy0 && cpus1 == d->busy_cpus) /* no CPU went on or offline */
        d->busy_s = (double)(busy1 - d->busy0) / (double)sysconf(_SC_CLK_TCK);
    if (clock)
        d->ghz1 = mb_disturb_ghz();
}

mb_disturb_t *mb_disturb_team(mb_disturb_t *d, int n, const int *cpus,
                              void (*body)(void *arg, int t), void *arg)
{
    mb_disturb_begin(d, n, cpus, n, n, 1);
#pragma omp parallel num_threads(n)
    {
        int t = omp_get_thread_num();
        mb_disturb_thread_begin(d, t);
        body(arg, t);
        mb_disturb_thread_end(d, t);
    }
    mb_disturb_end(d, 1);
    return d;
}

void mb_disturb_self_begin(mb_disturb_t *d, int cpu)
{
    mb_disturb_begin(d, 1, &cpu, 1, 1, 1);
    mb_disturb_thread_begin(d, 0);
}

void mb_disturb_self_end(mb_disturb_t *d)
{
    mb_disturb_thread_end(d, 0);
    mb_disturb_end(d, 1);
}

void mb_disturb_keys(struct jbuf *b, const mb_disturb_t *d)
{
    if (!d || !d->used) {
        kv_null(b, "disturb_timed_s");
        kv_null(b, "disturb_nivcsw");
        kv_null(b, "disturb_wait_s");
        kv_null(b, "disturb_lost_s");
        kv_null(b, "disturb_steal_s");
        kv_null(b, "disturb_steal_cpus");
        kv_null(b, "disturb_others_running");
        kv_null(b, "disturb_others_busy_s");
        kv_null(b, "disturb_busy_cpus");
        kv_null(b, "disturb_core_ghz");
        return;
    }
    kv_double(b, "disturb_timed_s", d->t1 - d->t0);
    int known = d->nthreads > 0;
    for (int t = 0; t < d->nthreads; t++)
        known &= d->ivcsw[t] >= 0;
    if (known)
        kv_ints(b, "disturb_nivcsw", d->ivcsw, d->nthreads);
    else
        kv_null(b, "disturb_nivcsw");
    int waits = d->nthreads > 0;
    double *w = calloc((size_t)d->nthreads + 1, sizeof *w);
    for (int t = 0; t < d->nthreads && w; t++)
        waits &= d->wait[t] >= 0, w[t] = (double)d->wait[t] * 1e-9;
    if (waits && w)
        kv_doubles(b, "disturb_wait_s", w, d->nthreads);
    else
        kv_null(b, "disturb_wait_s");
    /* each thread's time neither run nor waited between its readings (steal
     * while it ran, interrupts; a thread asleep at a barrier also counts) */
    int lost = waits && w;
    for (int t = 0; t < d->nthreads && lost; t++) {
        lost &= d->run[t] >= 0 && d->span[t] >= 0;
        if (lost) {
            long long gone = d->span[t] - d->run[t] - d->wait[t];
            w[t] = (double)(gone > 0 ? gone : 0) * 1e-9;
        }
    }
    if (lost)
        kv_doubles(b, "disturb_lost_s", w, d->nthreads);
    else
        kv_null(b, "disturb_lost_s");
    free(w);
    kv_double(b, "disturb_steal_s", d->steal_s);
    kv_ints(b, "disturb_steal_cpus", d->cpus, d->ncpus);
    /* the other runnable tasks: the larger of the two snapshots, less the
     * caller's own */
    if (d->running0 >= 0 && d->running1 >= 0) {
        int most = d->running0 > d->running1 ? d->running0 : d->running1;
        kv_int(b, "disturb_others_running", most > d->own ? most - d->own : 0);
    } else {
        kv_null(b, "disturb_others_running");
    }
    /* the machine's busy time less the measuring threads' own run time:
     * what other tasks ran, on any CPU (ticks: up to one a CPU either way) */
    int own_known = d->nthreads > 0;
    double own_run = 0;
    for (int t = 0; t < d->nthreads; t++)
        own_known &= d->run[t] >= 0, own_run += (double)d->run[t] * 1e-9;
    if (own_known && isfinite(d->busy_s)) {
        kv_double(b, "disturb_others_busy_s", d->busy_s > own_run ? d->busy_s - own_run : 0.0);
        kv_int(b, "disturb_busy_cpus", d->busy_cpus);
    } else {
        kv_null(b, "disturb_others_busy_s");
        kv_null(b, "disturb_busy_cpus");
    }
    if (isfinite(d->ghz0) && isfinite(d->ghz1)) {
        double g[2] = {d->ghz0, d->ghz1};
        kv_doubles(b, "disturb_core_ghz", g, 2);
    } else {
        kv_null(b, "disturb_core_ghz");
    }
}
