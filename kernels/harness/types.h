/*
 * membench harness types: the contract between the harness and a kernel
 * family.  The kernel table's rows (mb_kernel_t) and family entries
 * (mb_family_t), the arrays a family works on, the family options
 * (mb_famopt_t: the table --help, --list-options and the parser read), and
 * the records a family with its own run loop emits (mb_point_t, mb_run_ctx_t).
 * Types only (and their small inline helpers); the functions are declared in
 * table.h, arrays.h, placement.h, and the families' in families/families.h.
 */
#ifndef MEMBENCH_TYPES_H
#define MEMBENCH_TYPES_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#define MB_MAX_ARRAYS 8
/* --init serial-arrays: the `parallel` argument of a family's init and of
 * mb_first_touch (1 parallel, 0 serial element-major) */
#define MB_INIT_SERIAL_ARRAYS 2

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
    size_t prefetch_distance; /* bytes ahead (MB_SWPF variants) */
} mb_arrays_t;

struct mb_kernel;
struct mb_run_ctx;

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
    int rmw;                /* 1 = every written array is also read (x ^= m,
                             * y += a*x): the line is already in cache, so no
                             * write-allocate read either */
    const char *cpu_feature;/* __builtin_cpu_supports name, or NULL */
    /* Analytic model of the op on one representative value per array
     * (x[i] = value of every element of array i), used by validation to
     * replay exactly the sequence of ops that ran.  NULL if the family
     * validates otherwise. */
    void (*model)(double *x, double scalar);
    const char *description;
} mb_kernel_t;

/* Bytes one pass of op k moves over n elements of elem_size bytes (STREAM
 * counting: reads + writes); with write_allocate also the read of every
 * written line before it is written, unless the stores are non-temporal or
 * the op read that array anyway (rmw).  From the row alone (no table), so
 * a family that counts its bytes needs nothing of table.c. */
static inline long long mb_kernel_bytes(const mb_kernel_t *k, size_t elem_size, size_t n,
                                        int write_allocate)
{
    long long per_array = (long long)elem_size * (long long)n;
    long long bytes = (long long)(k->reads + k->writes) * per_array;
    if (write_allocate && !k->nontemporal && !k->rmw)
        bytes += (long long)k->writes * per_array;
    return bytes;
}

/* The read traffic of the same n elements: the kernel's reads plus one
 * write-allocate read per written array (none for non-temporal stores or
 * read-modify-write); and its write traffic (the write-backs). Their sum is
 * mb_kernel_bytes(.., 1). */
static inline long long mb_kernel_write_bytes(const mb_kernel_t *k, size_t elem_size, size_t n)
{
    return (long long)k->writes * (long long)elem_size * (long long)n;
}

static inline long long mb_kernel_read_bytes(const mb_kernel_t *k, size_t elem_size, size_t n)
{
    return mb_kernel_bytes(k, elem_size, n, 1) - mb_kernel_write_bytes(k, elem_size, n);
}

/* What one binary is: its family and variant, and what the harness reports
 * of the variant's build.  Defined by kernels/families/kernel_table.c, the
 * one file of the table compiled with the variant's flags; the harness is
 * compiled once for every variant and reads the variant here, never from
 * the variant macros (variant.h). */
typedef struct mb_build {
    const char *family;     /* MB_FAMILY: the family this binary runs */
    const char *variant;    /* MB_VARIANT: recorded, --variant's default */
    const char *cflags;     /* MB_CFLAGS: the variant's own flags, recorded */
    int software_prefetch;  /* MB_SWPF: 1 = its kernels prefetch */
    size_t prefetch_distance;           /* MB_PF_DIST: built-in, in bytes */
    const char *prefetch_distance_text; /* the same as written: --help's default */
} mb_build_t;

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
    /* ---- optional: families with their own run loop (latency) ----
     * run != NULL: after parsing, placement checks, binding the OpenMP team
     * (thread t on plan[t]) and timer checks, the harness calls run() instead
     * of its bandwidth loop; run() maps its own memory and reports one
     * record per call of ctx->emit (see mb_run_ctx_t).  init/validate may
     * then be NULL. */
    int (*run)(struct mb_run_ctx *ctx);
    int min_threads;        /* 0 = no bound; --threads outside -> usage error */
    int max_threads;        /* (an unset --threads defaults into the bounds) */
    int pin;                /* 1 = affinity none still pins thread t to the
                             * t-th allowed CPU (recorded in cpus_bound) */
    const struct mb_famopt *options; /* family options, {NULL} terminated */
    /* --size when it is not given, in bytes, as text (what --help and
     * --list-options print); NULL: --size is required (the pipeline resolves
     * size: auto).  example: options of a command line that runs as it is,
     * shown by --help; NULL: none. */
    const char *default_size;
    const char *example;
} mb_family_t;

/* A family option: --NAME INTEGER, range-checked by the harness; its value
 * reaches run() as ctx->opt[i] (i = index in the family's options).  An
 * option with a `word` also takes that word instead of a number; it reaches
 * run() as 0 (e.g. --group full). */
#define MB_MAX_FAMOPTS 12
typedef struct mb_famopt {
    const char *name;
    const char *metavar;
    long long def, min, max;
    const char *help;
    const char *word;
} mb_famopt_t;

/* An extra key of a record (after the usual keys). */
enum { MB_KV_INT, MB_KV_DBL, MB_KV_STR, MB_KV_NULL, MB_KV_BOOL, MB_KV_INTS };
typedef struct mb_kv {
    const char *key;
    int type;
    long long i;
    double d;
    const char *s;
    const int *ints;        /* MB_KV_INTS: n ints (kept alive until emit) */
} mb_kv_t;

#define MB_MAX_EXTRAS 40
struct mb_mapping;  /* placement.h */
struct mb_policy;

/* One record of a run() family. */
typedef struct mb_point {
    const mb_kernel_t *op;
    size_t size_bytes;      /* recorded as size_bytes */
    size_t elements;        /* recorded as array_elements */
    int status;             /* 0 ok, 1 failed, 3 skipped */
    char reason[512];
    int valid;              /* 1 / 0; -1 = not validated (null) */
    double gbps, gbps_mean, gbps_wa; /* NAN = null */
    long long bytes_per_iter, bytes_per_iter_wa; /* < 0 = null */
    const double *secs;     /* kept timed chunks (the first one dropped) */
    int nsecs;
    const struct mb_mapping *maps; /* memory this record measured: page */
    int nmaps;                      /* nodes and huge-page fraction */
    mb_kv_t extra[MB_MAX_EXTRAS];
    int nextra;
    struct mb_disturb *disturb; /* what could have disturbed the timed region
                                 * (NULL = not recorded); emit frees its arrays */
} mb_point_t;

typedef struct mb_run_ctx {
    const mb_kernel_t *const *ops;  /* requested ops, in --op order */
    const int *op_ok;               /* 1 = op can run on this CPU */
    int nops;
    int threads;
    const int *plan;                /* CPU of thread t (bound team) */
    size_t size_bytes;              /* --size */
    int pages;                      /* mb_pages_kind_t */
    const struct mb_policy *policy; /* resolved */
    int init_parallel;
    int ntimes;
    int test_corrupt;
    const long long *opt;           /* family options (mb_famopt_t order) */
    long long gran_ns;              /* timer granularity */
    /* writes one record now; call it outside parallel regions */
    void (*emit)(struct mb_run_ctx *ctx, const mb_point_t *p);
    void *harness;                  /* the harness's own state */
    /* run() returns 0 (ok) or 1/3 (failed/skipped) with reason set; when
     * it emitted nothing, the harness writes one record per op with it */
    char reason[512];
} mb_run_ctx_t;

/* A record that counts no bytes (a latency, a hand-off): op, size_bytes
 * and elements set, the bandwidths and bytes per iteration null (NAN, -1),
 * everything else zero; the family fills in the rest. */
static inline void mb_point_latency(mb_point_t *p, const mb_kernel_t *op, size_t size_bytes,
                                    size_t elements)
{
    memset(p, 0, sizeof *p);
    p->op = op;
    p->size_bytes = size_bytes;
    p->elements = elements;
    p->bytes_per_iter = p->bytes_per_iter_wa = -1;
    p->gbps = p->gbps_mean = p->gbps_wa = NAN;
}

static inline void mb_point_int(mb_point_t *p, const char *k, long long v)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_INT, .i = v};
}
static inline void mb_point_dbl(mb_point_t *p, const char *k, double v)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_DBL, .d = v};
}
static inline void mb_point_bool(mb_point_t *p, const char *k, int v)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_BOOL, .i = v};
}
static inline void mb_point_str(mb_point_t *p, const char *k, const char *v)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_STR, .s = v};
}
static inline void mb_point_ints(mb_point_t *p, const char *k, const int *v, int n)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_INTS, .ints = v, .i = n};
}
static inline void mb_point_null(mb_point_t *p, const char *k)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_NULL};
}

/* Contiguous share [*lo, *hi) of n elements for thread t of nt, with every
 * boundary a multiple of `unit` elements; the last thread also takes the
 * remainder.  Families use it for both first touch and the kernel, so each
 * thread streams the pages it touched itself. */
static inline void mb_thread_range(size_t n, size_t unit, int t, int nt,
                                   size_t *lo, size_t *hi)
{
    size_t units = n / unit;
    size_t per = units / (size_t)nt, extra = units % (size_t)nt;
    size_t ut = (size_t)t;
    size_t b = ut * per + (ut < extra ? ut : extra);
    size_t e = b + per + (ut < extra ? 1 : 0);
    *lo = b * unit;
    *hi = (t == nt - 1) ? n : e * unit;
}

#endif
