/*
 * membench family "stream": the four STREAM operations on three double
 * arrays, in STREAM's order and with STREAM's initial values.
 *
 *   copy   c = a          scale  b = s*c
 *   add    c = a + b      triad  a = b + s*c        a=1, b=2, c=0, s=3
 *
 * Validation replays the exact sequence of ops that ran on one scalar per
 * array (every element of an array holds the same value) and compares every
 * element against it with a relative tolerance.
 */
#include <math.h>
#include <stdio.h>

#include "kernels.h"

#define STREAM_A_INIT 1.0
#define STREAM_B_INIT 2.0
#define STREAM_C_INIT 0.0
#define STREAM_TOLERANCE 1e-13 /* STREAM's epsilon for double */

void mb_stream_copy(mb_arrays_t *A)
{
    const double *restrict a = A->v[0];
    double *restrict c = A->v[2];
    const size_t n = A->n;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        c[j] = a[j];
}

void mb_stream_scale(mb_arrays_t *A)
{
    double *restrict b = A->v[1];
    const double *restrict c = A->v[2];
    const double s = A->scalar;
    const size_t n = A->n;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        b[j] = s * c[j];
}

void mb_stream_add(mb_arrays_t *A)
{
    const double *restrict a = A->v[0];
    const double *restrict b = A->v[1];
    double *restrict c = A->v[2];
    const size_t n = A->n;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        c[j] = a[j] + b[j];
}

void mb_stream_triad(mb_arrays_t *A)
{
    double *restrict a = A->v[0];
    const double *restrict b = A->v[1];
    const double *restrict c = A->v[2];
    const double s = A->scalar;
    const size_t n = A->n;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++)
        a[j] = b[j] + s * c[j];
}

/* x[0]=a, x[1]=b, x[2]=c */
void mb_stream_model_copy(double *x, double s) { (void)s; x[2] = x[0]; }
void mb_stream_model_scale(double *x, double s) { x[1] = s * x[2]; }
void mb_stream_model_add(double *x, double s) { (void)s; x[2] = x[0] + x[1]; }
void mb_stream_model_triad(double *x, double s) { x[0] = x[1] + s * x[2]; }

void mb_stream_init(mb_arrays_t *A, int parallel)
{
    double *restrict a = A->v[0];
    double *restrict b = A->v[1];
    double *restrict c = A->v[2];
    const size_t n = A->n;
    /* Same static split as the kernels, so each thread first-touches the
     * pages it later streams (or the calling thread touches all of them). */
#pragma omp parallel for schedule(static) if (parallel)
    for (size_t j = 0; j < n; j++) {
        a[j] = STREAM_A_INIT;
        b[j] = STREAM_B_INIT;
        c[j] = STREAM_C_INIT;
    }
}

void mb_stream_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq,
                        size_t nseq, mb_validation_t *out)
{
    static const char *const names[3] = {"a", "b", "c"};
    double x[3] = {STREAM_A_INIT, STREAM_B_INIT, STREAM_C_INIT};
    for (size_t i = 0; i < nseq; i++)
        seq[i]->model(x, A->scalar);

    out->ok = 1;
    out->max_rel_error = 0.0;
    out->reason[0] = '\0';
    const size_t n = A->n;
    for (int k = 0; k < 3; k++) {
        const double *restrict v = A->v[k];
        const double expect = x[k];
        const double denom = fabs(expect) > 0.0 ? fabs(expect) : 1.0;
        double worst = 0.0;
#pragma omp parallel for schedule(static) reduction(max : worst)
        for (size_t j = 0; j < n; j++) {
            double e = fabs(v[j] - expect) / denom;
            if (!mb_isfinite(e)) /* NaN/Inf: bit test, safe under -ffast-math */
                e = HUGE_VAL;
            if (e > worst)
                worst = e;
        }
        if (worst > out->max_rel_error)
            out->max_rel_error = worst;
        if (worst > STREAM_TOLERANCE && out->ok) {
            /* locate the first bad element for the message */
            size_t bad = 0;
            for (size_t j = 0; j < n; j++) {
                double e = fabs(v[j] - expect) / denom;
                if (!mb_isfinite(e) || e > STREAM_TOLERANCE) { bad = j; break; }
            }
            out->ok = 0;
            snprintf(out->reason, sizeof out->reason,
                     "validation failed: array %s element %zu is %.17g, "
                     "expected %.17g (max relative error %.3g > tolerance %g)",
                     names[k], bad, v[bad], expect, worst, STREAM_TOLERANCE);
        }
    }
}

void mb_stream_corrupt(mb_arrays_t *A)
{
    double *a = A->v[0];
    size_t j = A->n / 2;
    a[j] = a[j] * (1.0 + 1e-6) + 1.0;
}
