/*
 * membench: the arrays of the bandwidth families, what they share: first
 * touch along the kernels' own split, and the check of families whose every
 * array holds one value throughout (stream, daxpy).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>

#include "cli.h"
#include "placement.h"
#include "types.h"

void mb_first_touch(mb_arrays_t *A, size_t unit, int parallel,
                    void (*fill)(mb_arrays_t *A, size_t lo, size_t hi))
{
    if (parallel == MB_INIT_SERIAL_ARRAYS) {
        /* Array-major: the calling thread touches every page of a, then of
         * b, then of c, so the arrays spill to another node at different
         * indices (ORNL); then it writes the values into placed pages. */
        const size_t page = mb_base_page_bytes(), bytes = A->n * g_family->elem_size;
        for (int k = 0; k < A->narrays; k++) {
            volatile char *p = (volatile char *)A->v[k];
            for (size_t off = 0; off < bytes; off += page)
                p[off] = 0;
        }
        fill(A, 0, A->n);
        return;
    }
#pragma omp parallel if (parallel)
    {
        size_t lo = 0, hi = A->n;
        if (parallel)
            mb_thread_range(A->n, unit, omp_get_thread_num(), omp_get_num_threads(), &lo,
                            &hi);
        fill(A, lo, hi);
    }
}

void mb_validate_uniform(const mb_arrays_t *A, const mb_kernel_t *const *seq, size_t nseq,
                         const double *start, const char *const *names, double tolerance,
                         const char *after, mb_validation_t *out)
{
    double x[MB_MAX_ARRAYS];
    for (int k = 0; k < A->narrays; k++)
        x[k] = start[k];
    for (size_t i = 0; i < nseq; i++)
        seq[i]->model(x, A->scalar);

    out->ok = 1;
    out->max_rel_error = 0.0;
    out->reason[0] = '\0';
    const size_t n = A->n;
    for (int k = 0; k < A->narrays; k++) {
        const double *restrict v = A->v[k];
        const double expect = x[k];
        const double denom = fabs(expect) > 0.0 ? fabs(expect) : 1.0;
        double worst = 0.0;
        size_t first = (size_t)-1;
#pragma omp parallel for schedule(static) reduction(max : worst) reduction(min : first)
        for (size_t j = 0; j < n; j++) {
            double e = fabs(v[j] - expect) / denom;
            if (!mb_isfinite(e)) /* NaN/Inf: bit test, safe under -ffast-math */
                e = HUGE_VAL;
            if (e > worst)
                worst = e;
            if (e > tolerance && j < first)
                first = j;
        }
        if (worst > out->max_rel_error)
            out->max_rel_error = worst;
        if (worst > tolerance && out->ok) {
            out->ok = 0;
            snprintf(out->reason, sizeof out->reason,
                     "validation failed: array %s element %zu is %.17g, expected %.17g%s "
                     "(max relative error %.3g > tolerance %g)",
                     names[k], first, v[first], expect, after, worst, tolerance);
        }
    }
}
