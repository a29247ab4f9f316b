/*
 * membench family "xor": the read-modify-write kernel of "Taking a look at
 * memory performance" (Sun/Oracle):
 *
 *   for (x = xstart; x < xend; x++) *x ^= mask;
 *
 * over 64-bit words.  Every thread works on private data: a contiguous run
 * of whole 4 KiB pages of the array that it first-touched itself (parallel
 * init) and that no other thread reads or writes; the threads are pinned by
 * the harness as the affinity axis says.  Bytes are counted as one read and
 * one write per word; the written line was just read, so there is no
 * write-allocate traffic on top (the table row says rmw).
 *
 * Validation: x[i] starts as a hash of i; after K xor passes it must be
 * hash(i) ^ (K odd ? mask : 0), checked bit-exactly for every word.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

#include "families.h"

#define XOR_MASK 0xA5A5A5A55A5A5A5AULL
#define XOR_UNIT ((size_t)512) /* words: one 4 KiB page */

static inline uint64_t xor_initial(size_t i)
{
    return (uint64_t)i * 0x9E3779B97F4A7C15ULL + 0x0123456789ABCDEFULL;
}

/* Sun's loop, verbatim in spirit: the compiler vectorises it as the
 * variant's flags allow. */
MB_KERNEL_FN MB_VTARGET void mb_kern_xor_xor(uint64_t *restrict xstart, size_t n,
                                             uint64_t mask)
{
    uint64_t *restrict xend = xstart + n;
    for (uint64_t *restrict x = xstart; x < xend; x++)
        *x ^= mask;
}

void mb_xor_xor(mb_arrays_t *A)
{
    uint64_t *x = A->v[0];
    const size_t n = A->n;
#pragma omp parallel
    {
        size_t lo, hi;
        mb_thread_range(n, XOR_UNIT, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        mb_kern_xor_xor(x + lo, hi - lo, XOR_MASK);
    }
}

static void xor_fill(mb_arrays_t *A, size_t lo, size_t hi)
{
    uint64_t *restrict x = A->v[0];
    for (size_t i = lo; i < hi; i++)
        x[i] = xor_initial(i);
}

void mb_xor_init(mb_arrays_t *A, int parallel)
{
    mb_first_touch(A, XOR_UNIT, parallel, xor_fill);
}

void mb_xor_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq, size_t nseq,
                     mb_validation_t *out)
{
    (void)seq; /* one op: only the number of passes matters */
    const uint64_t *restrict x = A->v[0];
    const size_t n = A->n;
    const uint64_t m = (nseq & 1) ? XOR_MASK : 0;
    size_t bad = 0, first = (size_t)-1;
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : first)
    for (size_t i = 0; i < n; i++)
        if (x[i] != (xor_initial(i) ^ m)) {
            bad++;
            if (i < first)
                first = i;
        }
    out->ok = bad == 0;
    out->max_rel_error = bad ? 1.0 : 0.0; /* exact integer check */
    out->reason[0] = '\0';
    if (bad)
        snprintf(out->reason, sizeof out->reason,
                 "validation failed: %zu of %zu words of x wrong after %zu xor passes; "
                 "x[%zu] = 0x%016llx, expected 0x%016llx", bad, n, nseq, first,
                 (unsigned long long)x[first], (unsigned long long)(xor_initial(first) ^ m));
}

void mb_xor_corrupt(mb_arrays_t *A)
{
    uint64_t *x = A->v[0];
    x[A->n / 2] ^= 1ULL << 17;
}
