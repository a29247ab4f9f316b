/*
 * membench family "daxpy": y = y + a*x over two double arrays (the DAXPY of
 * the ORNL paper "Variant memory configurations for Cray XT").
 *
 * Bytes by the STREAM convention: two reads and one write per element
 * (24 B); y is read before it is written, so there is no write-allocate
 * traffic on top (the table row says rmw).  Each thread works on the
 * contiguous run of whole 4 KiB pages it first-touched (parallel init).
 *
 * Validation: x = 1, y = 2, a = 3, so after K passes every y[i] is 2 + 3K,
 * exact in double; every element of both arrays is checked.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>

#include "families.h"

#define DAXPY_X_INIT 1.0
#define DAXPY_Y_INIT 2.0
#define DAXPY_UNIT ((size_t)512) /* elements: one 4 KiB page */
#define DAXPY_TOLERANCE 1e-13

MB_KERNEL_FN MB_VTARGET void mb_kern_daxpy_daxpy(double *restrict y,
                                                 const double *restrict x, double a,
                                                 size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = y[i] + a * x[i];
}

void mb_daxpy_daxpy(mb_arrays_t *A)
{
    const double *x = A->v[0];
    double *y = A->v[1];
    const double a = A->scalar;
    const size_t n = A->n;
#pragma omp parallel
    {
        size_t lo, hi;
        mb_thread_range(n, DAXPY_UNIT, omp_get_thread_num(), omp_get_num_threads(), &lo,
                        &hi);
        mb_kern_daxpy_daxpy(y + lo, x + lo, a, hi - lo);
    }
}

/* x[0] = x, x[1] = y */
void mb_daxpy_model_daxpy(double *v, double a) { v[1] = v[1] + a * v[0]; }

static void daxpy_fill(mb_arrays_t *A, size_t lo, size_t hi)
{
    double *restrict x = A->v[0];
    double *restrict y = A->v[1];
    for (size_t i = lo; i < hi; i++) {
        x[i] = DAXPY_X_INIT;
        y[i] = DAXPY_Y_INIT;
    }
}

void mb_daxpy_init(mb_arrays_t *A, int parallel)
{
    mb_first_touch(A, DAXPY_UNIT, parallel, daxpy_fill);
}

void mb_daxpy_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq, size_t nseq,
                       mb_validation_t *out)
{
    static const char *const names[2] = {"x", "y"};
    static const double start[2] = {DAXPY_X_INIT, DAXPY_Y_INIT};
    char after[64];
    snprintf(after, sizeof after, " after %zu daxpy passes", nseq);
    mb_validate_uniform(A, seq, nseq, start, names, DAXPY_TOLERANCE, after, out);
}

void mb_daxpy_corrupt(mb_arrays_t *A)
{
    double *y = A->v[1];
    y[A->n / 2] += 1.0;
}
