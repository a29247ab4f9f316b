/*
 * membench harness: first touch and the validation of uniform arrays, shared
 * by the bandwidth families (arrays.c).
 */
#ifndef MEMBENCH_ARRAYS_H
#define MEMBENCH_ARRAYS_H

#include <stddef.h>

#include "types.h"

/* First touch (arrays.c): fill(A, lo, hi) writes the initial values of
 * elements [lo, hi).  With parallel, each thread of the team fills its
 * mb_thread_range share (boundaries multiples of `unit`), the split of the
 * family's kernels, so each thread streams the pages it touched; else the
 * calling thread fills all, element by element (a[j], b[j], c[j] together),
 * or with MB_INIT_SERIAL_ARRAYS array by array (every page of a, then b...). */
void mb_first_touch(mb_arrays_t *A, size_t unit, int parallel,
                    void (*fill)(mb_arrays_t *A, size_t lo, size_t hi));

/* Validation of a family whose every array holds one value throughout
 * (arrays.c): the models of seq[0..nseq-1] replayed on start[] (one value
 * per array), then every element of the A->narrays arrays checked against
 * its array's value within a relative tolerance.  `after` follows the
 * expected value in the reason (e.g. " after 9 daxpy passes"). */
void mb_validate_uniform(const mb_arrays_t *A, const mb_kernel_t *const *seq, size_t nseq,
                         const double *start, const char *const *names, double tolerance,
                         const char *after, mb_validation_t *out);

#endif
