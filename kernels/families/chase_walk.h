/*
 * The chase kernel, its timing and latency statistic (chase_walk.c), shared
 * by the chase and loaded families and unit-tested in tests/test_chase_walk.py.
 *
 * A walk is one pass over the whole cycle (or, when the cycle is shorter
 * than one chunk, a whole number of passes), always from the same start
 * pointer, cut into `stretches` timed chunks of fixed load counts.  Chunk s
 * therefore covers the same lines on every walk.  ns_per_load is the
 * stretch-min-mean: for every stretch its fastest walk (neighbours and
 * interrupts only add time), summed over the stretches, per load of a walk.
 * Every region of the working set counts with its own weight, so a fast
 * region cannot stand for the whole (the best single chunk could).
 */
#ifndef MEMBENCH_CHASE_WALK_H
#define MEMBENCH_CHASE_WALK_H

#include <stddef.h>

#include "families.h"

#define MB_CHASE_MIN_WALKS 3        /* timed walks at least */
#define MB_CHASE_MAX_WALKS 8        /* walks added while unconfirmed, up to */
#define MB_CHASE_MAX_STRETCHES 128  /* chunks per walk at most (longer chunks beyond) */
#define MB_CHASE_EXTEND_S 2.0       /* a point's budget: no walk added once its timed chunks took this */
#define MB_CHASE_WINDOW_S 3.0       /* the loaded chase's budget: no walk started after its window took this */
#define MB_CHASE_CONFIRM_REL 0.02   /* a stretch is confirmed when its second-fastest */
#define MB_CHASE_CONFIRM_FRAC 0.9   /* walk is within 2 %; 90 % confirmed: done */
/* chunk-time buffer: ntimes + every walk a run may add */
#define MB_CHASE_CHUNK_CAP(ntimes) ((ntimes) + MB_CHASE_MAX_WALKS * MB_CHASE_MAX_STRETCHES)
#define MB_CHASE_STATISTIC "stretch-min-mean"
/* the loaded chase: the mean over the timed walks, the window in which the
 * load threads' bandwidth is counted (issue 30: MLC reports averages; the
 * stretch-min-mean picked the least-loaded moment of each stretch) */
#define MB_CHASE_LOADED_STATISTIC "window-mean"

/* The chase kernel: `loads` dependent loads from p; returns the end pointer.
 * The cycles it follows are built and checked in chase_cycle.h. */
MB_WEAK void *mb_kern_chase_chase(void *p, size_t loads);
/* Loads per timed chunk so that one chunk takes >= chunk_ns (the probe
 * chases from *start, also the warm-up; *start advances). */
MB_WEAK size_t mb_chase_calibrate(void **start, double chunk_ns);
/* ntimes chunks of `loads` dependent loads from *start; secs[k] = seconds
 * of chunk k; the end pointer goes to *start and a volatile sink. */
MB_WEAK void mb_chase_time(void **start, size_t loads, int ntimes, double *secs);
/* The end pointers of the chase, stored so the loads stay. */
extern void *volatile mb_chase_sink;

typedef struct mb_chase_walks {
    size_t walk_loads; /* loads per walk: a whole number of cycles */
    int stretches;     /* timed chunks per walk */
    int walks;         /* walks timed */
    const double *secs; /* walks x stretches chunk seconds, walk-major */
    int closed;        /* 1 when every walk ended on its start pointer */
} mb_chase_walks_t;

/* Loads of stretch s of a walk: walk_loads / stretches, the first
 * walk_loads % stretches stretches one more. */
MB_WEAK size_t mb_chase_stretch_loads(size_t walk_loads, int stretches, int s);
/* Calibrate (chunks of >= chunk_ns, also the warm-up; *start advances), then
 * time walks from where the calibration ended: at least MB_CHASE_MIN_WALKS
 * and at least ntimes - 1 chunks in all; more walks, up to max_walks
 * (MB_CHASE_MAX_WALKS for the idle chase; the loaded chase, whose chunks
 * vary with the load by design, passes MB_CHASE_MIN_WALKS), while fewer than
 * MB_CHASE_CONFIRM_FRAC of the stretches are confirmed and the chunks took
 * under MB_CHASE_EXTEND_S (the point's budget).  With max_walks at the
 * minimum (the loaded chase) the window closes, after one walk at least,
 * once it took MB_CHASE_WINDOW_S (its budget; the record's window_seconds
 * and walks say how long and how many).  A
 * chunk shorter than 0.75 x chunk_ns makes the stretches longer and the
 * walks start again (once).  buf has room for MB_CHASE_CHUNK_CAP(ntimes). */
MB_WEAK void mb_chase_walk(void **start, double chunk_ns, int ntimes, int max_walks,
                           size_t cycle, double *buf, mb_chase_walks_t *w);
/* mb_chase_walk after its calibration: the timed walks only, with chunks of
 * `chunk` loads (from mb_chase_calibrate).  The loaded chase calibrates
 * first, so the load threads count their bytes over these walks alone. */
MB_WEAK void mb_chase_walk_calibrated(void **start, size_t chunk, double chunk_ns, int ntimes,
                                      int max_walks, size_t cycle, double *buf,
                                      mb_chase_walks_t *w);
/* ns per load over every timed chunk: their sum / (walks x walk_loads). */
MB_WEAK double mb_chase_window_mean(const double *secs, int walks, int stretches,
                                    size_t walk_loads);
/* ns per load: sum over stretches of the fastest walk's chunk, / walk_loads. */
MB_WEAK double mb_chase_stretch_min_mean(const double *secs, int walks, int stretches,
                                         size_t walk_loads);
/* Stretches whose second-fastest walk lies within rel of their fastest. */
MB_WEAK int mb_chase_stretches_confirmed(const double *secs, int walks, int stretches,
                                         double rel);
/* How many of the n chunk times lie within 3 % of their minimum. */
MB_WEAK int mb_chase_near_best(const double *secs, int n);
/* The latency keys of a chase record (w NULL: nothing valid was timed, every
 * key null).  scratch: room for walks x stretches doubles. */
/* The loaded chase's keys: ns_per_load is the window mean
 * (latency_statistic "window-mean"), ns_stretch_min_mean beside it. */
MB_WEAK void mb_chase_loaded_latency_keys(mb_point_t *pt, const mb_chase_walks_t *w,
                                          double *scratch, size_t cycle);
MB_WEAK void mb_chase_latency_keys(mb_point_t *pt, const mb_chase_walks_t *w, double *scratch,
                                   size_t cycle);

#endif
