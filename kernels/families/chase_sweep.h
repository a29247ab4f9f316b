/*
 * When the chase's working-set sweep stops: the stated rule (chase_sweep.c,
 * derivation in docs/latency_sweep.md; the analysis reads it back through
 * membench.plan.latency_sweep, which mirrors it and is checked against it).
 *
 * The sweep stops after a point of op random once the answer is in:
 *   held  the trailing points lie within MB_SWEEP_HELD of their median over
 *         at least MB_SWEEP_SPAN_OCTAVES doublings of touched lines, and
 *   past  that flat run is past the caches: either every cache level sysfs
 *         names (L1, L2, L3 ...) has shown its own plateau before it (the
 *         caches ended where or before sysfs says), or the run begins past
 *         the sysfs last-level cache (a level sysfs hides ends inside the
 *         first doubling past the LLC: the run would not be flat there).
 * Or once the repetition's time budget is spent, or at --size.
 */
#ifndef MEMBENCH_CHASE_SWEEP_H
#define MEMBENCH_CHASE_SWEEP_H

#include <stddef.h>

#include "families.h"

#define MB_SWEEP_FLAT 0.25         /* plateau cut: membench.analyse.hierarchy.FLAT */
#define MB_SWEEP_HELD 0.02         /* the trailing run: within 2 % of its median */
#define MB_SWEEP_SPAN_OCTAVES 2    /* ... over this many doublings of touched lines */
#define MB_SWEEP_REPETITION_S 15.0 /* op random's points of one run: none started that would
                                      end past it (the next costs the last x their sizes);
                                      docs/latency_sweep.md says why 15 */
#define MB_SWEEP_MAX_LEVELS 8

/* Why the sweep ended (the record key sweep_end of its last random point). */
#define MB_SWEEP_END_HELD "held"
#define MB_SWEEP_END_BUDGET "budget"
#define MB_SWEEP_END_SIZE "size"

/* 1 when the sweep may stop after the n points so far (touched-line bytes
 * ascending, ns per load); levels: the data/unified cache levels sysfs
 * names, llc_lines: the last one's bytes (0: unknown, never "past").  *first
 * gets the index of the held run's first point (-1 when not held). */
MB_WEAK int mb_sweep_answer_in(const double *lines, const double *ns, int n, int levels,
                               double llc_lines, int *first);
/* Plateaus of at least two points among the n, cut as the analysis cuts
 * them (MB_SWEEP_FLAT); *last_start: the first index of the final segment. */
MB_WEAK int mb_sweep_plateaus_before_last(const double *ns, int n, int *last_start);
/* The data and unified cache levels of CPU cpu (sysfs), and the largest
 * one's bytes; 0 levels when sysfs has none. */
MB_WEAK int mb_sweep_cache_levels(int cpu, size_t *llc_bytes);

#endif
