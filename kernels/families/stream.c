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
 *
 * Variants with MB_VBITS >= 128 (variants.yaml: nt*, pf*) are written with
 * intrinsics at MB_VBITS bits, four vectors per iteration (aarch64: NEON
 * at 128, SVE at 256, vec_arm.h).  MB_NT=1 stores with non-temporal
 * (streaming) stores (movntpd / vmovntpd; Arm: stnp / stnt1d), so the written
 * lines are not read first (no write-allocate: the table rows say
 * nontemporal), and every thread issues an sfence before the op returns,
 * i.e. before the timer stops.  MB_SWPF=1 adds prefetcht0 of every line of
 * the arrays read, A->prefetch_distance bytes ahead.  These variants split
 * the arrays into contiguous runs of whole 4 KiB pages per thread
 * (mb_thread_range) for the kernels and the first touch alike, so every
 * vector access is aligned.  With MB_VBITS 0 (default) the four ops are
 * STREAM's plain loops and the compiler chooses the code.
 */
#include <math.h>
#include <stdio.h>

#include "families.h"

/* (every family file sees the variant's macros: MB_VBITS=64 from a scalar
 * readonly variant leaves stream as plain C too) */
#define ST_EXPLICIT (MB_VBITS >= 128)

#if ST_EXPLICIT
#if defined(__aarch64__)
#include "vec_arm.h"
#else
#include <immintrin.h>
#endif
#include <omp.h>
#endif

#define STREAM_A_INIT 1.0
#define STREAM_B_INIT 2.0
#define STREAM_C_INIT 0.0
#define STREAM_TOLERANCE 1e-13 /* STREAM's epsilon for double */

#if ST_EXPLICIT
#define ST_UNIT ((size_t)512) /* elements: one 4 KiB page */

#if defined(__aarch64__) /* NEON (128) or SVE-256: vec_arm.h */
typedef mb_arm_vec st_vec;
#define ST_LOAD MB_ARM_LOAD
#define ST_STREAM MB_ARM_STREAM
#define ST_STORE_REG MB_ARM_STORE
#define ST_SET1 MB_ARM_SET1
#define ST_ADD MB_ARM_ADD
#define ST_MUL MB_ARM_MUL
#elif MB_VBITS == 512
typedef __m512d st_vec;
#define ST_LOAD _mm512_load_pd
#define ST_STREAM _mm512_stream_pd
#define ST_STORE_REG _mm512_store_pd
#define ST_SET1 _mm512_set1_pd
#define ST_ADD _mm512_add_pd
#define ST_MUL _mm512_mul_pd
#elif MB_VBITS == 256
typedef __m256d st_vec;
#define ST_LOAD _mm256_load_pd
#define ST_STREAM _mm256_stream_pd
#define ST_STORE_REG _mm256_store_pd
#define ST_SET1 _mm256_set1_pd
#define ST_ADD _mm256_add_pd
#define ST_MUL _mm256_mul_pd
#else
typedef __m128d st_vec;
#define ST_LOAD _mm_load_pd
#define ST_STREAM _mm_stream_pd
#define ST_STORE_REG _mm_store_pd
#define ST_SET1 _mm_set1_pd
#define ST_ADD _mm_add_pd
#define ST_MUL _mm_mul_pd
#endif
#if MB_NT && defined(__aarch64__)
#define ST_STORE ST_STREAM
#define ST_FENCE() MB_ARM_FENCE()
#elif MB_NT
#define ST_STORE ST_STREAM
#define ST_FENCE() _mm_sfence()
#else
#define ST_STORE ST_STORE_REG
#define ST_FENCE() ((void)0)
#endif
#define ST_LANES (MB_VBITS / 64)
/* MB_VUNROLL vectors per iteration (variant.h's MB_VLOOP) */
#define ST_STEP (ST_LANES * MB_VUNROLL)
#define ST_STEP_LINES (ST_STEP * 8 / 64) /* cache lines per iteration */

/* prefetch the lines of read array x that this iteration's line is pfd
 * bytes behind */
#if MB_SWPF
#define ST_PF(x)                                                                     \
    _Pragma("GCC unroll 8") for (int l = 0; l < ST_STEP_LINES; l++)                  \
        __builtin_prefetch((const char *)((x) + j) + pfd + (size_t)l * 64, 0, 3)
#else
#define ST_PF(x) ((void)(x))
#endif

/* One kernel per op on [0, n) of 4 KiB-aligned arrays; the scalar tail (the
 * last thread's partial vector) uses ordinary stores. */
#define ST_KERNEL(op, dst_t, args, pf, vexpr, sexpr)                                \
    MB_KERNEL_FN MB_VTARGET void mb_kern_stream_##op args                            \
    {                                                                                \
        size_t j = 0;                                                                \
        const st_vec vs = ST_SET1(s);                                                \
        (void)vs;                                                                    \
        (void)pfd;                                                                   \
        MB_VLOOP(j, n, ST_LANES, pf, k, ST_STORE(dst_t + k, vexpr));                  \
        for (; j < n; j++)                                                           \
            dst_t[j] = sexpr;                                                        \
        ST_FENCE();                                                                  \
    }

ST_KERNEL(copy, c,
          (double *restrict c, const double *restrict a, double s, size_t n, size_t pfd),
          ST_PF(a), ST_LOAD(a + k), a[j])
ST_KERNEL(scale, b,
          (double *restrict b, const double *restrict c, double s, size_t n, size_t pfd),
          ST_PF(c), ST_MUL(vs, ST_LOAD(c + k)), s * c[j])
ST_KERNEL(add, c,
          (double *restrict c, const double *restrict a, const double *restrict b,
           double s, size_t n, size_t pfd),
          {ST_PF(a); ST_PF(b);}, ST_ADD(ST_LOAD(a + k), ST_LOAD(b + k)), a[j] + b[j])
ST_KERNEL(triad, a,
          (double *restrict a, const double *restrict b, const double *restrict c,
           double s, size_t n, size_t pfd),
          {ST_PF(b); ST_PF(c);}, ST_ADD(ST_LOAD(b + k), ST_MUL(vs, ST_LOAD(c + k))),
          b[j] + s * c[j])

#define ST_RANGE(A, lo, hi)                                                          \
    size_t lo, hi;                                                                   \
    mb_thread_range((A)->n, ST_UNIT, omp_get_thread_num(), omp_get_num_threads(), &lo, \
                    &hi)

void mb_stream_copy(mb_arrays_t *A)
{
    double *a = A->v[0], *c = A->v[2];
#pragma omp parallel
    {
        ST_RANGE(A, lo, hi);
        mb_kern_stream_copy(c + lo, a + lo, A->scalar, hi - lo, A->prefetch_distance);
    }
}

void mb_stream_scale(mb_arrays_t *A)
{
    double *b = A->v[1], *c = A->v[2];
#pragma omp parallel
    {
        ST_RANGE(A, lo, hi);
        mb_kern_stream_scale(b + lo, c + lo, A->scalar, hi - lo, A->prefetch_distance);
    }
}

void mb_stream_add(mb_arrays_t *A)
{
    double *a = A->v[0], *b = A->v[1], *c = A->v[2];
#pragma omp parallel
    {
        ST_RANGE(A, lo, hi);
        mb_kern_stream_add(c + lo, a + lo, b + lo, A->scalar, hi - lo, A->prefetch_distance);
    }
}

void mb_stream_triad(mb_arrays_t *A)
{
    double *a = A->v[0], *b = A->v[1], *c = A->v[2];
#pragma omp parallel
    {
        ST_RANGE(A, lo, hi);
        mb_kern_stream_triad(a + lo, b + lo, c + lo, A->scalar, hi - lo, A->prefetch_distance);
    }
}

#else /* !ST_EXPLICIT: STREAM as published */

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

#endif /* ST_EXPLICIT */

/* x[0]=a, x[1]=b, x[2]=c */
void mb_stream_model_copy(double *x, double s) { (void)s; x[2] = x[0]; }
void mb_stream_model_scale(double *x, double s) { x[1] = s * x[2]; }
void mb_stream_model_add(double *x, double s) { (void)s; x[2] = x[0] + x[1]; }
void mb_stream_model_triad(double *x, double s) { x[0] = x[1] + s * x[2]; }

static void st_fill(mb_arrays_t *A, size_t lo, size_t hi)
{
    double *restrict a = A->v[0];
    double *restrict b = A->v[1];
    double *restrict c = A->v[2];
    for (size_t j = lo; j < hi; j++) {
        a[j] = STREAM_A_INIT;
        b[j] = STREAM_B_INIT;
        c[j] = STREAM_C_INIT;
    }
}

/* Same split as the kernels, so each thread first-touches the pages it
 * later streams (or the calling thread touches all of them). */
void mb_stream_init(mb_arrays_t *A, int parallel)
{
#if ST_EXPLICIT
    mb_first_touch(A, ST_UNIT, parallel, st_fill);
#else
    if (parallel == MB_INIT_SERIAL_ARRAYS) { /* array by array: arrays.c */
        mb_first_touch(A, 1, parallel, st_fill);
        return;
    }
    const size_t n = A->n;
#pragma omp parallel for schedule(static) if (parallel)
    for (size_t j = 0; j < n; j++)
        st_fill(A, j, j + 1);
#endif
}

void mb_stream_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq,
                        size_t nseq, mb_validation_t *out)
{
    static const char *const names[3] = {"a", "b", "c"};
    static const double start[3] = {STREAM_A_INIT, STREAM_B_INIT, STREAM_C_INIT};
    mb_validate_uniform(A, seq, nseq, start, names, STREAM_TOLERANCE, "", out);
}

void mb_stream_corrupt(mb_arrays_t *A)
{
    double *a = A->v[0];
    size_t j = A->n / 2;
    a[j] = a[j] * (1.0 + 1e-6) + 1.0;
}
