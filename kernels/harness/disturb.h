/*
 * membench harness: what could have disturbed a timed region (disturb.c).
 *
 * Read outside the timed region, never inside it:
 *   - each measuring thread's involuntary context switches
 *     (getrusage(RUSAGE_THREAD) ru_nivcsw) and the time it waited runnable
 *     while another task had its CPU (/proc/thread-self/schedstat
 *     run_delay), and the time it ran (schedstat's first field, read up
 *     to date through CLOCK_THREAD_CPUTIME_ID), read by
 *     that thread itself just before and just after its part of the
 *     region; its own span between those readings less both is the time
 *     it lost unaccounted (steal, interrupts: "lost"), in ns where
 *     /proc/stat's steal counts 10 ms ticks;
 *   - the steal time of the region's CPUs, the busy time of every CPU
 *     (less the measuring threads' run time: other tasks, anywhere, share
 *     the memory system) and the runnable tasks of the machine (/proc/stat:
 *     cpuN, procs_running), by the caller;
 *   - the caller's core clock before and after (cpu.c), where measurable.
 * A value the machine cannot give stays "not recorded" (null in the record),
 * never zero.
 */
#ifndef MEMBENCH_DISTURB_H
#define MEMBENCH_DISTURB_H

#define MB_DISTURB_MAX_CPUS 64 /* CPUs whose steal is summed (the first ones) */

typedef struct mb_disturb {
    int used;                   /* begin() was called */
    int nthreads;
    int own;                    /* the caller's tasks runnable at a snapshot */
    long long *ivcsw0;          /* per thread, at its begin */
    int *ivcsw;                 /* delta per thread; -1 = not recorded */
    long long *wait0, *wait;    /* run_delay ns per thread: at begin, delta; -1 = not recorded */
    long long *run0, *run;      /* schedstat run time ns per thread: at begin, delta; -1 = not recorded */
    long long *start, *span;    /* CLOCK_MONOTONIC ns per thread between its readings */
    int ncpus, cpus[MB_DISTURB_MAX_CPUS];
    long long steal0;           /* ticks; -1 = no steal field */
    double steal_s;             /* NAN = not recorded */
    long long busy0;            /* busy ticks summed over every CPU; -1 = not recorded */
    int busy_cpus;              /* how many CPUs that sums; -1 = not recorded */
    double busy_s;              /* NAN = not recorded */
    int running0, running1;     /* procs_running; -1 = not recorded */
    double ghz0, ghz1;          /* NAN = not measurable */
    double t0, t1;              /* CLOCK_MONOTONIC seconds */
} mb_disturb_t;

/* The calling thread's involuntary context switches so far; -1 when the
 * kernel has no per-thread count. */
long long mb_thread_ivcsw(void);
/* The calling thread's time spent runnable but waiting for a CPU so far,
 * ns (schedstat run_delay); -1 when the kernel does not say. */
long long mb_thread_wait_ns(void);
/* Both of the calling thread's schedstat times so far, ns: 0, or -1 when
 * the kernel does not say ("0 0 0": sched_info off, where a thread that
 * has run would read a run time). */
int mb_thread_sched_ns(long long *run, long long *wait);

/* One measuring thread's reading between two timed iterations, outside
 * them: CLOCK_MONOTONIC, run time and run_delay (ns; run and wait -1 when
 * not recorded), and its CPU.  Between two readings a thread's span less
 * what it ran and waited is what it lost (steal while it ran, interrupts,
 * sleep at a barrier), as over the region. */
typedef struct mb_iter_reading {
    long long now, run, wait;
    int cpu;
} mb_iter_reading_t;
/* Every thread t < nt of an OpenMP team reads at[t] (one parallel region). */
void mb_iter_read_team(int nt, mb_iter_reading_t *at);
/* Between readings a and b: the longest wait of a thread, s; -1 when one
 * was not recorded. */
double mb_iter_wait(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b);
/* ... the least time lost over the threads (a thread asleep at a barrier
 * behind a slow one lost time the iteration did not), s; -1 when one was
 * not recorded. */
double mb_iter_lost(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b);
/* 1 when two threads were on one CPU at either reading: a wait then is
 * (at least partly) behind the measurement's own threads, placement. */
int mb_iter_shared(int nt, const mb_iter_reading_t *a, const mb_iter_reading_t *b);

/* The calling CPU's core clock in GHz for the before/after comparison
 * (NaN off x86-64): robust to a pause of the host's shorter than ~10 ms. */
double mb_disturb_ghz(void);

/* Before the region, in the caller (d zeroed before its first begin): nthreads measuring threads, the CPUs
 * they run on (steal summed over those), own = how many of the caller's
 * tasks are runnable at the snapshots (subtracted from procs_running).
 * clock != 0: also the core clock of the caller's CPU. */
void mb_disturb_begin(mb_disturb_t *d, int nthreads, const int *cpus, int ncpus, int own,
                      int clock);
/* In measuring thread t, right before and right after its timed part. */
void mb_disturb_thread_begin(mb_disturb_t *d, int t);
void mb_disturb_thread_end(mb_disturb_t *d, int t);
/* After the region, in the caller. */
void mb_disturb_end(mb_disturb_t *d, int clock);
/* The per-thread arrays begin() allocated. */
void mb_disturb_free(mb_disturb_t *d);

/* An OpenMP team of n threads on cpus running body(arg, t), each thread's
 * switches counted around its call, begin and end (with the clock) around
 * the team.  Returns d. */
mb_disturb_t *mb_disturb_team(mb_disturb_t *d, int n, const int *cpus,
                              void (*body)(void *arg, int t), void *arg);

/* The common case: the caller is the one measuring thread, on `cpu`. */
void mb_disturb_self_begin(mb_disturb_t *d, int cpu);
void mb_disturb_self_end(mb_disturb_t *d);

struct jbuf;
/* The record's disturb_* keys (all null when d is NULL or unused). */
void mb_disturb_keys(struct jbuf *b, const mb_disturb_t *d);

#endif
