/*
 * membench kernels: shared types of the kernel table and the arrays.
 *
 * Naming grammar
 *   family   [a-z][a-z0-9_]*   one .c file per family (stream.c, ...)
 *   op       [a-z][a-z0-9_]*   unique inside its family
 *   kernel   family.op         e.g. "stream.triad" (used in --list)
 *
 * Adding a family = one new file kernels/<family>.c defining the kernel
 * functions and the family hooks (init, validate, corrupt), plus its rows in
 * kernels/kernel_table.c and its prototypes below.  Every kernel and family
 * hook is declared weak here, so a binary built with only some family files
 * still links: rows whose function is not linked in have fn == NULL and are
 * reported as "not linked" by --list.  MB_FAMILY (a compile-time string)
 * selects which family the binary runs.
 */
#ifndef MEMBENCH_KERNELS_H
#define MEMBENCH_KERNELS_H

#include <stddef.h>

#define MB_MAX_ARRAYS 8

/* isfinite() that survives -ffast-math variants (checks the exponent bits) */
static inline int mb_isfinite(double x)
{
    unsigned long long u;
    __builtin_memcpy(&u, &x, sizeof u);
    return ((u >> 52) & 0x7ff) != 0x7ff;
}

/* The arrays one process works on.  Allocation (page size, policy) is done by
 * placement.c; the family only sees element pointers and the length. */
typedef struct mb_arrays {
    void *v[MB_MAX_ARRAYS]; /* element storage of array i */
    size_t n;               /* elements per array */
    int narrays;
    double scalar;          /* the family's scalar (STREAM: 3.0) */
} mb_arrays_t;

struct mb_kernel;

/* Outcome of a family's validation. */
typedef struct mb_validation {
    int ok;                 /* 1 = all arrays match the recomputed values */
    double max_rel_error;   /* max over arrays and elements */
    char reason[320];       /* set when !ok: array, element, value, expected */
} mb_validation_t;

/* One row of the kernel table: one op of one family. */
typedef struct mb_kernel {
    const char *family;
    const char *op;
    /* One iteration over all n elements; parallelised inside with
     * "#pragma omp parallel for schedule(static)". */
    void (*fn)(mb_arrays_t *A);
    int reads;              /* arrays read per element (STREAM counting) */
    int writes;             /* arrays written per element */
    int nontemporal;        /* 1 = streaming stores: no write-allocate read */
    const char *cpu_feature;/* __builtin_cpu_supports name, or NULL */
    /* Analytic model of the op on one representative value per array
     * (x[i] = value of every element of array i), used by validation to
     * replay exactly the sequence of ops that ran.  NULL if the family
     * validates otherwise. */
    void (*model)(double *x, double scalar);
    const char *description;
} mb_kernel_t;

/* Per-family hooks and metadata. */
typedef struct mb_family {
    const char *name;
    int narrays;
    const char *const *array_names;
    size_t elem_size;       /* bytes per element (8 for double) */
    double scalar;
    /* Initial values / first touch.  parallel != 0: the same
     * "omp parallel for schedule(static)" split as the kernels; else only the
     * calling thread touches the pages. */
    void (*init)(mb_arrays_t *A, int parallel);
    /* Check every element of every array against the values expected after
     * the ops seq[0..nseq-1] ran in that order. */
    void (*validate)(const mb_arrays_t *A, const mb_kernel_t *const *seq,
                     size_t nseq, mb_validation_t *out);
    /* Test only: perturb one element so validation must fail. */
    void (*corrupt)(mb_arrays_t *A);
    const char *description;
} mb_family_t;

/* The one table (kernel_table.c). */
extern const mb_kernel_t mb_kernel_table[];
extern const size_t mb_kernel_count;
extern const mb_family_t mb_family_table[];
extern const size_t mb_family_count;

const mb_family_t *mb_find_family(const char *name);
const mb_kernel_t *mb_find_kernel(const char *family, const char *op);
/* 1 if the CPU supports the named feature (NULL = no requirement); -1 if the
 * name is unknown to this harness. */
int mb_cpu_supports(const char *feature);
/* Print the table (all families, linked or not) to f. */
#include <stdio.h>
void mb_print_table(FILE *f, const char *selected_family);

#define MB_WEAK __attribute__((weak))

/* ---- family "stream" (stream.c) ---- */
MB_WEAK void mb_stream_copy(mb_arrays_t *A);
MB_WEAK void mb_stream_scale(mb_arrays_t *A);
MB_WEAK void mb_stream_add(mb_arrays_t *A);
MB_WEAK void mb_stream_triad(mb_arrays_t *A);
MB_WEAK void mb_stream_model_copy(double *x, double s);
MB_WEAK void mb_stream_model_scale(double *x, double s);
MB_WEAK void mb_stream_model_add(double *x, double s);
MB_WEAK void mb_stream_model_triad(double *x, double s);
MB_WEAK void mb_stream_init(mb_arrays_t *A, int parallel);
MB_WEAK void mb_stream_validate(const mb_arrays_t *A,
                                const mb_kernel_t *const *seq, size_t nseq,
                                mb_validation_t *out);
MB_WEAK void mb_stream_corrupt(mb_arrays_t *A);

#endif
