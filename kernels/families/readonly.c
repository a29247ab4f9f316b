/*
 * membench family "readonly": McCalpin's single-array sum reduction
 * ("Optimizing AMD Opteron memory bandwidth, part 5"), one source for all
 * of his fifteen versions and their AVX2 / AVX-512 counterparts.
 *
 *   sum = a[0] + a[1] + ... + a[n-1]
 *
 * What distinguishes the versions is compile-time only (kernels.h):
 *   MB_VBITS   64 = scalar double, 128 = SSE2, 256 = AVX2, 512 = AVX-512F
 *              (GCC vector extensions; one vector per accumulator)
 *   MB_PSUMS   independent accumulators (partial sums), each MB_VBITS wide
 *   MB_SWPF    prefetcht0 one cache line per line loaded, MB_PF_DIST bytes
 *              ahead in the same stream (run time: --prefetch-distance)
 *   MB_PPL     0 = one flat stream;  P >= 1 = McCalpin's triply nested,
 *              page-structured loop: for each group of P consecutive 4 KiB
 *              pages, for each offset inside a page, for each of the P
 *              pages: load.  P streams, one per page, interleaved.  In a
 *              page-structured loop the prefetch of stream k runs ahead in
 *              stream k: past the end of its page it continues in the
 *              k-th page of the next group.
 * The optimisation level (-O1 / -O2) and large pages (the pages axis) come
 * from the variant's entry in variants.yaml.
 *
 * Threads: each thread sums a contiguous run of whole 4 KiB pages (whole
 * page groups for P >= 1), the same run it first-touched in init, and the
 * per-thread sums are added.  Version 001-015 are single-thread in the
 * paper; the threads axis is ours.
 *
 * Validation: a[i] = (i mod 8) + 1, so every partial sum is an integer
 * below 2^53 and the total is exact in double whatever the order of the
 * additions: the result of every timed call must equal the closed form
 * exactly; validate() also sums the array once more (after --test-corrupt,
 * this is what sees the corrupted element).  The result of each call is
 * stored to a volatile, so the loads cannot be optimised away, and the call
 * goes through the kernel table's function pointer, so nothing can be
 * hoisted out of the timed loop.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>

#include "families.h"

#define RO_VBITS (MB_VBITS ? MB_VBITS : 64)
#define RO_LANES (RO_VBITS / 64)          /* doubles per vector */
#define RO_VBYTES (RO_VBITS / 8)
#define RO_LINE 64
#define RO_PAGE 4096
#define RO_PAGE_ELEMS (RO_PAGE / 8)
#define RO_MAX(x, y) ((x) > (y) ? (x) : (y))

#if RO_LANES > 1
typedef double ro_vec __attribute__((vector_size(RO_VBYTES)));
#else
typedef double ro_vec;
#endif

/* Vectors loaded per iteration of the flat loop: one per accumulator, but
 * at least a whole cache line when prefetching (one prefetch per line). */
#if MB_SWPF
#define RO_NV RO_MAX(MB_PSUMS, RO_LINE / RO_VBYTES)
#else
#define RO_NV MB_PSUMS
#endif
#define RO_STEP (RO_NV * RO_LANES)        /* elements per flat iteration */

/* Page-structured: vectors per page per iteration (at least one line, so
 * each iteration advances every stream by whole cache lines). */
#if MB_PPL > 0
#define RO_VPP RO_MAX(MB_PSUMS / MB_PPL, RO_LINE / RO_VBYTES)
#define RO_UNIT ((size_t)MB_PPL * RO_PAGE_ELEMS)
#else
#define RO_UNIT ((size_t)RO_PAGE_ELEMS)
#endif

#define RO_PREFETCH(p) __builtin_prefetch((p), 0, 3) /* prefetcht0 */

/* The kernel proper: the sum of a[0..n-1]; a is 4 KiB aligned. */
MB_KERNEL_FN MB_VTARGET double mb_kern_readonly_sum(const double *restrict a, size_t n,
                                                    size_t pfdist)
{
    ro_vec acc[MB_PSUMS];
#pragma GCC unroll 16
    for (int k = 0; k < MB_PSUMS; k++) {
        ro_vec z = {0};
        acc[k] = z;
    }
    size_t i = 0;
#if MB_PPL == 0
#if MB_SWPF
    const char *pf = (const char *)a + pfdist;
#else
    (void)pfdist;
#endif
    for (; i + RO_STEP <= n; i += RO_STEP) {
#if MB_SWPF
#pragma GCC unroll 16
        for (int l = 0; l < RO_STEP * 8 / RO_LINE; l++)
            RO_PREFETCH(pf + i * 8 + (size_t)l * RO_LINE);
#endif
#pragma GCC unroll 16
        for (int v = 0; v < RO_NV; v++)
            acc[v % MB_PSUMS] += *(const ro_vec *)(a + i + (size_t)v * RO_LANES);
    }
#else
#if !MB_SWPF
    (void)pfdist;
#endif
    for (; i + RO_UNIT <= n; i += RO_UNIT) {
        const double *g = a + i; /* the group: MB_PPL pages */
        for (size_t off = 0; off < RO_PAGE_ELEMS; off += (size_t)RO_VPP * RO_LANES) {
#if MB_SWPF
            size_t t = off * 8 + pfdist; /* bytes ahead in this stream */
            const char *pf =
                (const char *)g + (t / RO_PAGE) * (MB_PPL * RO_PAGE) + (t % RO_PAGE);
#pragma GCC unroll 16
            for (int k = 0; k < MB_PPL; k++)
#pragma GCC unroll 16
                for (int l = 0; l < RO_VPP * RO_VBYTES / RO_LINE; l++)
                    RO_PREFETCH(pf + (size_t)k * RO_PAGE + (size_t)l * RO_LINE);
#endif
#pragma GCC unroll 16
            for (int k = 0; k < MB_PPL; k++)
#pragma GCC unroll 16
                for (int v = 0; v < RO_VPP; v++)
                    acc[(k * RO_VPP + v) % MB_PSUMS] +=
                        *(const ro_vec *)(g + (size_t)k * RO_PAGE_ELEMS + off +
                                          (size_t)v * RO_LANES);
        }
    }
#endif
    /* combine the accumulators, then the lanes, then the tail */
#pragma GCC unroll 16
    for (int k = 1; k < MB_PSUMS; k++)
        acc[0] += acc[k];
    double s = 0.0;
#if RO_LANES > 1
    for (int l = 0; l < RO_LANES; l++)
        s += acc[0][l];
#else
    s = acc[0];
#endif
    for (; i < n; i++)
        s += a[i];
    return s;
}

static volatile double ro_sink;   /* every result is stored: loads stay */
static double ro_expected;
static long ro_calls, ro_bad;
static double ro_first_bad;

static double ro_sum_all(const double *a, size_t n, size_t pfdist)
{
    double total = 0.0;
#pragma omp parallel reduction(+ : total)
    {
        size_t lo, hi;
        mb_thread_range(n, RO_UNIT, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        total += mb_kern_readonly_sum(a + lo, hi - lo, pfdist);
    }
    return total;
}

void mb_readonly_sum(mb_arrays_t *A)
{
    double total = ro_sum_all(A->v[0], A->n, A->prefetch_distance);
    ro_sink = total;
    if (total != ro_expected && ro_bad++ == 0)
        ro_first_bad = total;
    ro_calls++;
}

/* a[i] = (i mod 8) + 1: sum = 36 per 8 elements + r(r+1)/2 for the rest */
static double ro_closed_form(size_t n)
{
    unsigned long long r = n % 8;
    return (double)((unsigned long long)(n / 8) * 36ULL + r * (r + 1) / 2);
}

static void ro_fill(mb_arrays_t *A, size_t lo, size_t hi)
{
    double *restrict a = A->v[0];
    for (size_t j = lo; j < hi; j++)
        a[j] = (double)((j & 7) + 1);
}

void mb_readonly_init(mb_arrays_t *A, int parallel)
{
    mb_first_touch(A, RO_UNIT, parallel, ro_fill);
    ro_expected = ro_closed_form(A->n);
    ro_calls = ro_bad = 0;
}

void mb_readonly_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq,
                          size_t nseq, mb_validation_t *out)
{
    (void)seq;
    out->ok = 1;
    out->max_rel_error = 0.0;
    out->reason[0] = '\0';
    const double expect = ro_expected;
    if (ro_bad) {
        out->ok = 0;
        out->max_rel_error = fabs(ro_first_bad - expect) / expect;
        if (!mb_isfinite(out->max_rel_error))
            out->max_rel_error = HUGE_VAL;
        snprintf(out->reason, sizeof out->reason,
                 "validation failed: %ld of %ld timed sums were wrong, first %.17g, "
                 "expected %.17g (exact)", ro_bad, ro_calls, ro_first_bad, expect);
        return;
    }
    if ((size_t)ro_calls != nseq) {
        out->ok = 0;
        snprintf(out->reason, sizeof out->reason,
                 "validation failed: the kernel ran %ld times, %zu expected", ro_calls, nseq);
        return;
    }
    /* sum once more: sees changes to the array itself (--test-corrupt) */
    double again = ro_sum_all(A->v[0], A->n, A->prefetch_distance);
    double err = fabs(again - expect) / expect;
    if (!mb_isfinite(err))
        err = HUGE_VAL;
    out->max_rel_error = err;
    if (again != expect) {
        out->ok = 0;
        snprintf(out->reason, sizeof out->reason,
                 "validation failed: sum of array a is %.17g, expected %.17g (exact; "
                 "relative error %.3g)", again, expect, err);
    }
}

void mb_readonly_corrupt(mb_arrays_t *A)
{
    double *a = A->v[0];
    a[A->n / 2] += 1.0;
}
