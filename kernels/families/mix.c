/*
 * membench family "mix": read:write mixes, the five of Intel MLC's peak
 * injection bandwidth (all reads, 3:1, 2:1, 1:1, and "stream-triad like" =
 * 2 reads : 1 non-temporal write), as ops over double arrays.
 *
 *   r1w0    sum += a[j]                       1 read stream, no write
 *   r3w1    w31[j]   = a[j] + b[j] + c[j]     3 read streams, 1 write stream
 *   r2w1    w21[j]   = a[j] + s*b[j]          2 : 1
 *   r1w1    w11[j]   = s*a[j]                 1 : 1 (a scale, not a copy: gcc
 *                                             turns a copy loop into memcpy,
 *                                             which streams past the cache
 *                                             above a size glibc chooses)
 *   r2w1nt  w21nt[j] = a[j] + s*b[j]          2 : 1, non-temporal stores
 *
 * The ratio in the name counts the kernel's read and write streams (STREAM
 * convention: what the program loads and stores, bytes_per_iter).  Memory
 * traffic adds one read per written line (write-allocate) unless the stores
 * are non-temporal: bytes_per_iter_wa, so r1w1 moves 2 reads : 1 write on
 * the bus, r2w1nt exactly 2 : 1.
 *
 * Every write op has its own output array, read by no op, so validation
 * checks every op that ran (an output whose op did not run must be
 * untouched), and an op's result cannot depend on another op's.  Inputs a,
 * b, c hold small integers (a = 1 + j%8, b = 2 + j%4, c = 3 + j%2, s = 3),
 * so every result is exact in double whatever the vector width, FMA
 * contraction or order of additions: validation compares bit for bit.  r1w0
 * checks the sum of every timed call against the closed form and stores it
 * to a volatile, so its loads cannot be elided.
 *
 * Code (kernels.h variant macros): MB_VBITS >= 128 = explicit vectors at
 * that width (intrinsics, four vectors per iteration, four accumulators for
 * r1w0); MB_NT = non-temporal stores for every write op.  MB_VBITS < 128
 * (variant default) = plain C loops, the compiler's choice, except r2w1nt,
 * which needs streaming stores in any variant: it is written with
 * intrinsics at the variant's width, or the widest the build target has
 * (__AVX512F__, __AVX__, else SSE2).  Non-temporal kernels do not fence;
 * the family's op functions issue an sfence per thread before returning
 * (before the timer stops), the loaded family once after its load loop.
 * Each thread works on the contiguous run of whole 4 KiB pages it
 * first-touched (mb_thread_range).
 *
 * The loaded family runs these kernels as its load (load_op r1w0 ...):
 * mb_mix_block on its own arrays (inputs first, then the output).
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "families.h"

#define MX_S 3.0
#define MX_UNTOUCHED (-1.0) /* initial value of every output array */
#define MX_UNIT ((size_t)512) /* elements: one 4 KiB page */

enum { MX_A, MX_B, MX_C, MX_W31, MX_W21, MX_W11, MX_W21NT, MX_NARRAYS };

static const struct {
    const char *op;
    int reads; /* inputs a, b, c: the first `reads` */
    int out;   /* output array, -1 = none */
} mx_ops[MB_MIX_NOPS] = {
    [MB_MIX_R1W0] = {"r1w0", 1, -1},
    [MB_MIX_R3W1] = {"r3w1", 3, MX_W31},
    [MB_MIX_R2W1] = {"r2w1", 2, MX_W21},
    [MB_MIX_R1W1] = {"r1w1", 1, MX_W11},
    [MB_MIX_R2W1NT] = {"r2w1nt", 2, MX_W21NT},
};

static inline double mx_input(int arr, size_t j)
{
    return arr == MX_A ? (double)(1 + (j & 7)) : arr == MX_B ? (double)(2 + (j & 3))
                                                             : (double)(3 + (j & 1));
}

/* the value of family array `arr` at element j after its op ran */
static inline double mx_value(int arr, size_t j)
{
    switch (arr) {
    case MX_W31:
        return mx_input(MX_A, j) + mx_input(MX_B, j) + mx_input(MX_C, j);
    case MX_W21:
    case MX_W21NT:
        return mx_input(MX_A, j) + MX_S * mx_input(MX_B, j);
    case MX_W11:
        return MX_S * mx_input(MX_A, j);
    default:
        return mx_input(arr, j);
    }
}

/* ------------------------------------------------------------ vectors */

#include "mix_vec.h" /* MX_W, mx_vec and its ops, MX_WSTORE, MX_SCALAR */

/* One write kernel: scalar up to the output's vector alignment, then
 * MX_UNROLL vectors per iteration, then the scalar tail. */
#define MX_WKERNEL(name, attr, store, args, vexpr, sexpr)                            \
    MB_KERNEL_FN attr void mb_kern_mix_##name args                                    \
    {                                                                                 \
        size_t j = 0;                                                                 \
        const mx_vec vs = MX_SET1(s);                                                 \
        (void)vs;                                                                     \
        for (; j < n && ((uintptr_t)(w + j) & (MX_VBYTES - 1)); j++) {                  \
            w[j] = sexpr;                                                             \
            MX_SCALAR();                                                              \
        }                                                                             \
        MB_VLOOP(j, n, MX_LANES, (void)0, k, store(w + k, vexpr));                     \
        _Pragma("GCC unroll 1") for (; j < n; j++) {                                  \
            w[j] = sexpr;                                                             \
            MX_SCALAR();                                                              \
        }                                                                             \
    }

#define MX_R3W1_ARGS                                                                  \
    (double *restrict w, const double *restrict a, const double *restrict b,          \
     const double *restrict c, double s, size_t n)
#define MX_R2W1_ARGS (double *restrict w, const double *restrict a, const double *restrict b, \
                      double s, size_t n)
#define MX_R1W1_ARGS (double *restrict w, const double *restrict a, double s, size_t n)

MX_WKERNEL(r2w1nt, MX_NTTARGET, MX_STREAM, MX_R2W1_ARGS,
           MX_ADD(MX_LOADU(a + k), MX_MUL(vs, MX_LOADU(b + k))), a[j] + s * b[j])

#if MX_EXPLICIT
MX_WKERNEL(r3w1, MB_VTARGET, MX_WSTORE, MX_R3W1_ARGS,
           MX_ADD(MX_ADD(MX_LOADU(a + k), MX_LOADU(b + k)), MX_LOADU(c + k)),
           a[j] + b[j] + c[j])
MX_WKERNEL(r2w1, MB_VTARGET, MX_WSTORE, MX_R2W1_ARGS,
           MX_ADD(MX_LOADU(a + k), MX_MUL(vs, MX_LOADU(b + k))), a[j] + s * b[j])
MX_WKERNEL(r1w1, MB_VTARGET, MX_WSTORE, MX_R1W1_ARGS, MX_MUL(vs, MX_LOADU(a + k)), s * a[j])

/* four independent vector accumulators */
MB_KERNEL_FN MB_VTARGET double mb_kern_mix_r1w0(const double *restrict a, size_t n)
{
    mx_vec acc[MX_UNROLL];
#pragma GCC unroll 4
    for (int u = 0; u < MX_UNROLL; u++)
        acc[u] = MX_ZERO();
    size_t j = 0;
    for (; j + MX_STEP <= n; j += MX_STEP) {
#pragma GCC unroll 4
        for (int u = 0; u < MX_UNROLL; u++)
            acc[u] = MX_ADD(acc[u], MX_LOADU(a + j + (size_t)u * MX_LANES));
    }
    acc[0] = MX_ADD(MX_ADD(acc[0], acc[1]), MX_ADD(acc[2], acc[3]));
    double lanes[MX_LANES] __attribute__((aligned(64)));
    MX_STORE(lanes, acc[0]);
    double sum = 0.0;
    for (int l = 0; l < MX_LANES; l++)
        sum += lanes[l];
#pragma GCC unroll 1
    for (; j < n; j++) {
        sum += a[j];
        MX_SCALAR();
    }
    return sum;
}
#else /* plain C: the compiler's choice */
MB_KERNEL_FN void mb_kern_mix_r3w1 MX_R3W1_ARGS
{
    (void)s;
    for (size_t j = 0; j < n; j++)
        w[j] = a[j] + b[j] + c[j];
}
MB_KERNEL_FN void mb_kern_mix_r2w1 MX_R2W1_ARGS
{
    for (size_t j = 0; j < n; j++)
        w[j] = a[j] + s * b[j];
}
MB_KERNEL_FN void mb_kern_mix_r1w1 MX_R1W1_ARGS
{
    for (size_t j = 0; j < n; j++)
        w[j] = s * a[j];
}
/* eight independent partial sums (exact: small integers) */
MB_KERNEL_FN double mb_kern_mix_r1w0(const double *restrict a, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        s0 += a[j]; s1 += a[j + 1]; s2 += a[j + 2]; s3 += a[j + 3];
        s4 += a[j + 4]; s5 += a[j + 5]; s6 += a[j + 6]; s7 += a[j + 7];
    }
    for (; j < n; j++)
        s0 += a[j];
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}
#endif

static inline int mx_nt(int id) { return id == MB_MIX_R2W1NT || (MB_NT && id != MB_MIX_R1W0); }

/* ------------------------------------------- shared with family loaded */

int mb_mix_id(const char *op)
{
    for (int i = 0; i < MB_MIX_NOPS; i++)
        if (strcmp(mx_ops[i].op, op) == 0)
            return i;
    return -1;
}

double mb_mix_block(int id, double *const *v, size_t n)
{
    switch (id) {
    case MB_MIX_R1W0:
        return mb_kern_mix_r1w0(v[0], n);
    case MB_MIX_R3W1:
        mb_kern_mix_r3w1(v[3], v[0], v[1], v[2], MX_S, n);
        break;
    case MB_MIX_R2W1:
        mb_kern_mix_r2w1(v[2], v[0], v[1], MX_S, n);
        break;
    case MB_MIX_R1W1:
        mb_kern_mix_r1w1(v[1], v[0], MX_S, n);
        break;
    case MB_MIX_R2W1NT:
        mb_kern_mix_r2w1nt(v[2], v[0], v[1], MX_S, n);
        break;
    }
    return 0.0;
}

void mb_mix_fence(int id)
{
    if (id >= 0 && mx_nt(id))
        MX_FENCE();
}

/* array k of op id's layout: its inputs, then its output */
static int mx_family_array(int id, int k)
{
    return k < mx_ops[id].reads ? k : mx_ops[id].out;
}

double mb_mix_expect(int id, int k, size_t j, int written)
{
    int arr = mx_family_array(id, k);
    return arr >= MX_W31 && !written ? MX_UNTOUCHED : mx_value(arr, j);
}

void mb_mix_fill(int id, double *const *v, size_t lo, size_t hi)
{
    int narr = mx_ops[id].reads + (mx_ops[id].out >= 0);
    for (int k = 0; k < narr; k++)
        for (size_t j = lo; j < hi; j++)
            v[k][j] = mb_mix_expect(id, k, j, 0);
}

/* the table rows of family loaded (one pass over A->n elements of arrays
 * in the op's layout) */
#define MX_LOADED_ROW(name, id)                                                       \
    void mb_loaded_##name(mb_arrays_t *A)                                             \
    {                                                                                 \
        double *v[4] = {A->v[0], A->v[1], A->v[2], A->v[3]};                          \
        A->scalar = mb_mix_block(id, v, A->n);                                        \
        mb_mix_fence(id);                                                             \
    }
MX_LOADED_ROW(r1w0, MB_MIX_R1W0)
MX_LOADED_ROW(r3w1, MB_MIX_R3W1)
MX_LOADED_ROW(r2w1, MB_MIX_R2W1)
MX_LOADED_ROW(r1w1, MB_MIX_R1W1)
MX_LOADED_ROW(r2w1nt, MB_MIX_R2W1NT)

/* ------------------------------------------------------ family "mix" */

static volatile double mx_sink; /* every r1w0 result is stored: loads stay */
static double mx_expected_sum;
static long mx_sum_calls, mx_sum_bad;
static double mx_first_bad;

#define MX_RANGE(A, lo, hi)                                                           \
    size_t lo, hi;                                                                    \
    mb_thread_range((A)->n, MX_UNIT, omp_get_thread_num(), omp_get_num_threads(), &lo, \
                    &hi)

static void mx_run(mb_arrays_t *A, int id)
{
    const int out = mx_ops[id].out;
#pragma omp parallel
    {
        MX_RANGE(A, lo, hi);
        double *v[4];
        for (int k = 0; k < mx_ops[id].reads; k++)
            v[k] = (double *)A->v[k] + lo;
        v[mx_ops[id].reads] = (double *)A->v[out] + lo;
        mb_mix_block(id, v, hi - lo);
        mb_mix_fence(id);
    }
}

static double mx_sum_all(const mb_arrays_t *A)
{
    double total = 0.0;
#pragma omp parallel reduction(+ : total)
    {
        MX_RANGE(A, lo, hi);
        total += mb_kern_mix_r1w0((const double *)A->v[MX_A] + lo, hi - lo);
    }
    return total;
}

void mb_mix_r1w0(mb_arrays_t *A)
{
    double total = mx_sum_all(A);
    mx_sink = total;
    if (total != mx_expected_sum && mx_sum_bad++ == 0)
        mx_first_bad = total;
    mx_sum_calls++;
}
void mb_mix_r3w1(mb_arrays_t *A) { mx_run(A, MB_MIX_R3W1); }
void mb_mix_r2w1(mb_arrays_t *A) { mx_run(A, MB_MIX_R2W1); }
void mb_mix_r1w1(mb_arrays_t *A) { mx_run(A, MB_MIX_R1W1); }
void mb_mix_r2w1nt(mb_arrays_t *A) { mx_run(A, MB_MIX_R2W1NT); }

static void mx_fill(mb_arrays_t *A, size_t lo, size_t hi)
{
    for (int arr = 0; arr < MX_NARRAYS; arr++) {
        double *restrict x = A->v[arr];
        for (size_t j = lo; j < hi; j++)
            x[j] = arr >= MX_W31 ? MX_UNTOUCHED : mx_input(arr, j);
    }
}

void mb_mix_init(mb_arrays_t *A, int parallel)
{
    mb_first_touch(A, MX_UNIT, parallel, mx_fill);
    /* a = 1 + j%8: 36 per 8 elements + r(r+1)/2 for the rest (exact) */
    unsigned long long r = A->n % 8;
    mx_expected_sum = (double)((unsigned long long)(A->n / 8) * 36ULL + r * (r + 1) / 2);
    mx_sum_calls = mx_sum_bad = 0;
}

void mb_mix_validate(const mb_arrays_t *A, const mb_kernel_t *const *seq, size_t nseq,
                     mb_validation_t *out)
{
    static const char *const names[MX_NARRAYS] = {"a", "b", "c", "w31", "w21", "w11", "w21nt"};
    int ran[MX_NARRAYS] = {0};
    long sums = 0;
    for (size_t i = 0; i < nseq; i++) {
        int id = mb_mix_id(seq[i]->op);
        if (id == MB_MIX_R1W0)
            sums++;
        else if (id >= 0)
            ran[mx_ops[id].out] = 1;
    }
    out->ok = 1;
    out->max_rel_error = 0.0;
    out->reason[0] = '\0';
    if (mx_sum_bad || mx_sum_calls != sums) {
        out->ok = 0;
        out->max_rel_error = 1.0;
        snprintf(out->reason, sizeof out->reason,
                 "validation failed: %ld of %ld timed r1w0 sums were wrong (first %.17g), "
                 "%ld calls for %ld in the sequence; expected %.17g (exact)",
                 mx_sum_bad, mx_sum_calls, mx_first_bad, mx_sum_calls, sums, mx_expected_sum);
        return;
    }
    const size_t n = A->n;
    for (int arr = 0; arr < MX_NARRAYS && out->ok; arr++) {
        const double *restrict x = A->v[arr];
        const int touched = arr < MX_W31 || ran[arr];
        size_t bad = 0, first = (size_t)-1;
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : first)
        for (size_t j = 0; j < n; j++) {
            double want = touched ? mx_value(arr, j) : MX_UNTOUCHED;
            if (x[j] != want) {
                bad++;
                if (j < first)
                    first = j;
            }
        }
        if (bad) {
            out->ok = 0;
            out->max_rel_error = 1.0; /* exact check */
            snprintf(out->reason, sizeof out->reason,
                     "validation failed: %zu of %zu elements of array %s wrong (%s); "
                     "%s[%zu] = %.17g, expected %.17g (exact)", bad, n, names[arr],
                     arr < MX_W31 ? "an input" : touched ? "its op ran" : "its op did not run",
                     names[arr], first, x[first],
                     touched ? mx_value(arr, first) : MX_UNTOUCHED);
        }
    }
}

void mb_mix_corrupt(mb_arrays_t *A)
{
    double *a = A->v[MX_A];
    a[A->n / 2] += 1.0;
}
