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

/*
 * Variant macros.  A variant is one entry of kernels/variants.yaml; its
 * cflags set these (-DMB_VBITS=512 ...), and every source file of the binary
 * (kernel table, harness, family files) sees the same values, so the table
 * row, the record and the kernel code agree by construction.
 *
 *   MB_VBITS      explicit vector width of the family's hand-vectorised
 *                 kernels: 64 (scalar double), 128 (SSE2), 256 (AVX2),
 *                 512 (AVX-512F); 0 = plain C loops, the compiler's choice.
 *   MB_SWPF       1 = software prefetch (prefetcht0) MB_PF_DIST bytes ahead
 *   MB_PF_DIST    default prefetch distance in bytes; --prefetch-distance
 *                 overrides it at run time
 *   MB_PSUMS      independent accumulators (readonly): registers of
 *                 MB_VBITS bits each
 *   MB_PPL        4 KiB pages per loop (readonly): 0 = one flat stream,
 *                 P >= 1 = page-structured loop interleaving P streams, one
 *                 per 4 KiB page
 *   MB_NT         1 = non-temporal (streaming) stores + sfence (stream)
 *
 * The kernels that need AVX2 / AVX-512 are compiled with a target attribute
 * (not -mavx512f for the whole binary), so a binary whose CPU lacks the
 * feature still starts, sees the missing feature in its table row and
 * writes a skipped record.
 */
#ifndef MB_VBITS
#define MB_VBITS 0
#endif
#ifndef MB_SWPF
#define MB_SWPF 0
#endif
#ifndef MB_PF_DIST
#define MB_PF_DIST 2048
#endif
#ifndef MB_PSUMS
#define MB_PSUMS 1
#endif
#ifndef MB_PPL
#define MB_PPL 0
#endif
#ifndef MB_NT
#define MB_NT 0
#endif

#if MB_VBITS != 0 && MB_VBITS != 64 && MB_VBITS != 128 && MB_VBITS != 256 && MB_VBITS != 512
#error "MB_VBITS must be 0, 64, 128, 256 or 512"
#endif
#if MB_PSUMS < 1 || MB_PSUMS > 16
#error "MB_PSUMS must be 1..16"
#endif
#if MB_PPL < 0 || MB_PPL > 16 || (MB_PPL > 0 && MB_PSUMS % MB_PPL != 0)
#error "MB_PPL must be 0..16 and divide MB_PSUMS"
#endif
#if MB_NT && MB_VBITS < 128
#error "MB_NT needs MB_VBITS 128, 256 or 512"
#endif

/* CPU feature the explicit vector width needs, and the target attribute
 * of the kernels that use it (SSE2 is in the x86-64 baseline). */
#if MB_VBITS == 512
#define MB_VFEATURE "avx512f"
#define MB_VTARGET __attribute__((target("avx512f")))
#elif MB_VBITS == 256
#define MB_VFEATURE "avx2"
#define MB_VTARGET __attribute__((target("avx2")))
#else
#define MB_VFEATURE NULL
#define MB_VTARGET
#endif

/* Kernel bodies whose code the disassembly test inspects are kept out of
 * line under distinctive names: mb_kern_<family>_<op> (plus gcc's
 * ._omp_fn.N for OpenMP bodies of mb_<family>_<op>). */
#define MB_KERNEL_FN __attribute__((noinline, used))

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
enum { MB_KV_INT, MB_KV_DBL, MB_KV_STR, MB_KV_NULL, MB_KV_BOOL };
typedef struct mb_kv {
    const char *key;
    int type;
    long long i;
    double d;
    const char *s;
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
static inline void mb_point_null(mb_point_t *p, const char *k)
{
    if (p->nextra < MB_MAX_EXTRAS)
        p->extra[p->nextra++] = (mb_kv_t){.key = k, .type = MB_KV_NULL};
}

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
/* Bytes one pass of op k moves over n elements of elem_size bytes (STREAM
 * counting: reads + writes); with write_allocate also the read of every
 * written line before it is written, unless the stores are non-temporal or
 * the op read that array anyway (rmw). */
long long mb_kernel_bytes(const mb_kernel_t *k, size_t elem_size, size_t n, int write_allocate);
/* Print the table (all families, linked or not) to f. */
#include <stdio.h>
void mb_print_table(FILE *f, const char *selected_family);

/* First touch (arrays.c): fill(A, lo, hi) writes the initial values of
 * elements [lo, hi).  With parallel, each thread of the team fills its
 * mb_thread_range share (boundaries multiples of `unit`), the split of the
 * family's kernels, so each thread streams the pages it touched; else the
 * calling thread fills all. */
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

#define MB_WEAK __attribute__((weak))

/* The hooks of a family with the harness's bandwidth loop, named
 * mb_<family>_init, _validate and _corrupt (see mb_family_t). */
#define MB_FAMILY_HOOKS(family)                                                        \
    MB_WEAK void mb_##family##_init(mb_arrays_t *A, int parallel);                     \
    MB_WEAK void mb_##family##_validate(const mb_arrays_t *A,                          \
                                        const mb_kernel_t *const *seq, size_t nseq,    \
                                        mb_validation_t *out);                         \
    MB_WEAK void mb_##family##_corrupt(mb_arrays_t *A)

/* ---- family "stream" (stream.c) ---- */
MB_WEAK void mb_stream_copy(mb_arrays_t *A);
MB_WEAK void mb_stream_scale(mb_arrays_t *A);
MB_WEAK void mb_stream_add(mb_arrays_t *A);
MB_WEAK void mb_stream_triad(mb_arrays_t *A);
MB_WEAK void mb_stream_model_copy(double *x, double s);
MB_WEAK void mb_stream_model_scale(double *x, double s);
MB_WEAK void mb_stream_model_add(double *x, double s);
MB_WEAK void mb_stream_model_triad(double *x, double s);
MB_FAMILY_HOOKS(stream);

/* ---- family "readonly" (readonly.c) ---- */
MB_WEAK void mb_readonly_sum(mb_arrays_t *A);
MB_FAMILY_HOOKS(readonly);

/* ---- family "xor" (xor.c) ---- */
MB_WEAK void mb_xor_xor(mb_arrays_t *A);
MB_FAMILY_HOOKS(xor);

/* ---- family "daxpy" (daxpy.c) ---- */
MB_WEAK void mb_daxpy_daxpy(mb_arrays_t *A);
MB_WEAK void mb_daxpy_model_daxpy(double *x, double s);
MB_FAMILY_HOOKS(daxpy);

/* ---- family "chase" (chase.c): pointer-chase latency ---- */
MB_WEAK void mb_chase_chase(mb_arrays_t *A);
MB_WEAK int mb_chase_run(mb_run_ctx_t *ctx);
MB_WEAK extern const mb_famopt_t mb_chase_options[];
/* The chase kernel: `loads` dependent loads from p; returns the end pointer.
 * The cycles it follows are built and checked in chase_cycle.h. */
MB_WEAK void *mb_kern_chase_chase(void *p, size_t loads);
/* Loads per timed chunk so that one chunk takes >= chunk_ns (the probe
 * chases from *start, also the warm-up; *start advances). */
MB_WEAK size_t mb_chase_calibrate(void **start, double chunk_ns);
/* ntimes chunks of `loads` dependent loads from *start; secs[k] = seconds
 * of chunk k; the end pointer goes to *start and a volatile sink. */
MB_WEAK void mb_chase_time(void **start, size_t loads, int ntimes, double *secs);
/* The group keys of a random-chase record: group_bytes (bytes per group;
 * the working set when group is 0 = full or larger) and group_full. */
MB_WEAK void mb_chase_group_keys(mb_point_t *pt, size_t group, size_t working_set);
/* Walks of the cycle in fixed stretches, ns_per_load (stretch-min-mean) and
 * the latency keys: chase_walk.h. */

/* ---- family "loaded" (loaded.c): chase under bandwidth load ---- */
MB_WEAK void mb_loaded_triad(mb_arrays_t *A);
MB_WEAK void mb_loaded_read(mb_arrays_t *A);
MB_WEAK int mb_loaded_run(mb_run_ctx_t *ctx);
MB_WEAK extern const mb_famopt_t mb_loaded_options[];

/* ---- family "mix" (mix.c): read:write mixes (MLC's five) ---- */
MB_WEAK void mb_mix_r1w0(mb_arrays_t *A);
MB_WEAK void mb_mix_r3w1(mb_arrays_t *A);
MB_WEAK void mb_mix_r2w1(mb_arrays_t *A);
MB_WEAK void mb_mix_r1w1(mb_arrays_t *A);
MB_WEAK void mb_mix_r2w1nt(mb_arrays_t *A);
MB_FAMILY_HOOKS(mix);
/* The mix kernels as a load (family loaded): op id of a mix op name, -1
 * if none; one block of n elements on arrays v (the op's inputs a, b, c,
 * as many as it reads, then its output), returning the sum (r1w0) or 0;
 * the sfence non-temporal stores need once after the last block; the
 * initial values of elements [lo, hi) of the op's arrays; and the value
 * element j of its array k holds before (written 0) and after (1) a pass. */
enum { MB_MIX_R1W0, MB_MIX_R3W1, MB_MIX_R2W1, MB_MIX_R1W1, MB_MIX_R2W1NT, MB_MIX_NOPS };
MB_WEAK int mb_mix_id(const char *op);
MB_WEAK double mb_mix_block(int id, double *const *v, size_t n);
MB_WEAK void mb_mix_fence(int id);
MB_WEAK void mb_mix_fill(int id, double *const *v, size_t lo, size_t hi);
MB_WEAK double mb_mix_expect(int id, int k, size_t j, int written);
MB_WEAK void mb_loaded_r1w0(mb_arrays_t *A);
MB_WEAK void mb_loaded_r3w1(mb_arrays_t *A);
MB_WEAK void mb_loaded_r2w1(mb_arrays_t *A);
MB_WEAK void mb_loaded_r1w1(mb_arrays_t *A);
MB_WEAK void mb_loaded_r2w1nt(mb_arrays_t *A);
/* ---- family "c2c" (c2c.c): cache-to-cache latency between CPU pairs ---- */
/* The table rows' fn: the family runs its own loop (mb_c2c_run); a direct
 * call does nothing. */
MB_WEAK void mb_c2c_op(mb_arrays_t *A);
MB_WEAK int mb_c2c_run(mb_run_ctx_t *ctx);
MB_WEAK extern const mb_famopt_t mb_c2c_options[];

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

/* The core clock of the calling thread's CPU in GHz, measured by a chain of
 * dependent register adds (cpu_clock.c); NAN off x86-64. */
MB_WEAK double mb_core_ghz(void);

#endif
