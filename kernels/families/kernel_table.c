/*
 * membench: THE kernel table.  Every family's ops are registered here, one
 * row per op; --help and --list are generated from these rows.
 *
 * Bytes per iteration follow STREAM's counting: (reads + writes) x element
 * size x n.  The write-allocate column adds one read per written array unless
 * the kernel uses non-temporal stores or only writes arrays it also reads
 * (rmw: x ^= m, y += a*x).
 */
#include <stdlib.h>
#include <string.h>

#include "families.h"

static const char *const stream_arrays[] = {"a", "b", "c"};
static const char *const readonly_arrays[] = {"a"};
static const char *const xor_arrays[] = {"x"};
static const char *const daxpy_arrays[] = {"x", "y"};
static const char *const chase_arrays[] = {"chain"};
static const char *const mix_arrays[] = {"a", "b", "c", "w31", "w21", "w11", "w21nt"};
static const char *const c2c_arrays[] = {"pool"};

const mb_family_t mb_family_table[] = {
    {.name = "stream", .narrays = 3, .array_names = stream_arrays,
     .elem_size = sizeof(double), .scalar = 3.0, .init = mb_stream_init,
     .validate = mb_stream_validate, .corrupt = mb_stream_corrupt,
     .description = "STREAM copy/scale/add/triad on three double arrays a=1, b=2, c=0, s=3"},
    {.name = "readonly", .narrays = 1, .array_names = readonly_arrays,
     .elem_size = sizeof(double), .scalar = 0.0, .init = mb_readonly_init,
     .validate = mb_readonly_validate, .corrupt = mb_readonly_corrupt,
     .description = "McCalpin's read-only sum reduction over one double array a[i] = i%8+1 "
                    "(exact sum)"},
    {.name = "xor", .narrays = 1, .array_names = xor_arrays,
     .elem_size = sizeof(unsigned long long), .scalar = 0.0, .init = mb_xor_init,
     .validate = mb_xor_validate, .corrupt = mb_xor_corrupt,
     .description = "Sun's *x ^= mask over 64-bit words, private per-thread pages"},
    {.name = "daxpy", .narrays = 2, .array_names = daxpy_arrays,
     .elem_size = sizeof(double), .scalar = 3.0, .init = mb_daxpy_init,
     .validate = mb_daxpy_validate, .corrupt = mb_daxpy_corrupt,
     .description = "ORNL's DAXPY y = y + a*x on two double arrays x=1, y=2, a=3"},
    {.name = "chase", .narrays = 1, .array_names = chase_arrays, .elem_size = sizeof(void *),
     .run = mb_chase_run, .min_threads = 1, .max_threads = 1, .pin = 1,
     .options = mb_chase_options,
     .description = "dependent-load pointer chase (ns per load) over a log-spaced "
                    "working-set sweep: random single cycle (page groups) or fixed stride"},
    {.name = "loaded", .narrays = 1, .array_names = chase_arrays, .elem_size = sizeof(void *),
     .run = mb_loaded_run, .min_threads = 2, .pin = 1, .options = mb_loaded_options,
     .description = "loaded latency: the random chase on thread 0 while threads 1..N-1 "
                    "run a bandwidth kernel (triad, read or a read:write mix) with an injection delay"},
    {.name = "mix", .narrays = 7, .array_names = mix_arrays,
     .elem_size = sizeof(double), .scalar = 3.0, .init = mb_mix_init,
     .validate = mb_mix_validate, .corrupt = mb_mix_corrupt,
     .description = "read:write mixes (MLC's five): inputs a = 1+j%8, b = 2+j%4, c = 3+j%2, "
                    "one output array per write op, s = 3 (exact)"},
    {.name = "c2c", .narrays = 1, .array_names = c2c_arrays, .elem_size = 64,
     .run = mb_c2c_run, .min_threads = 2, .pin = 1, .options = mb_c2c_options,
     /* the line pool: 8 MiB, what config/config.yaml's cache_to_cache cells pass */
     .default_size = "8388608", .example = "--threads 2 --affinity cpus:0,1 --op two_line",
     .description = "cache-to-cache latency: two pinned threads hand a line back and forth, "
                    "every pair of the team (ns per hand-off, half the round trip)"},
};
const size_t mb_family_count = sizeof mb_family_table / sizeof mb_family_table[0];

/* The variant macros (kernels.h) are compiled into this file too, so a row
 * states what this binary's kernel does: non-temporal stores (MB_NT) and
 * the CPU feature its explicit vector width needs (MB_VFEATURE). */
#if MB_NT
#define STREAM_NT 1
#define STREAM_STORES ", non-temporal stores"
#else
#define STREAM_NT 0
#define STREAM_STORES ""
#endif
#if MB_VBITS >= 128 || defined(MB_FOREIGN_FEATURE) /* stream's explicit-vector kernels */
#define STREAM_FEATURE MB_VFEATURE
#else
#define STREAM_FEATURE NULL
#endif

/* mix: explicit vectors at the variant's width (MB_VBITS >= 128) */
#if MB_VBITS >= 128 || defined(MB_FOREIGN_FEATURE)
#define MIX_FEATURE MB_VFEATURE
#else
#define MIX_FEATURE NULL
#endif

#define MB_STR_(x) #x
#define MB_STR(x) MB_STR_(x)

const mb_kernel_t mb_kernel_table[] = {
    {.family = "stream", .op = "copy", .fn = mb_stream_copy, .reads = 1, .writes = 1,
     .nontemporal = STREAM_NT, .cpu_feature = STREAM_FEATURE,
     .model = mb_stream_model_copy, .description = "c[j] = a[j]" STREAM_STORES},
    {.family = "stream", .op = "scale", .fn = mb_stream_scale, .reads = 1, .writes = 1,
     .nontemporal = STREAM_NT, .cpu_feature = STREAM_FEATURE,
     .model = mb_stream_model_scale, .description = "b[j] = s*c[j]" STREAM_STORES},
    {.family = "stream", .op = "add", .fn = mb_stream_add, .reads = 2, .writes = 1,
     .nontemporal = STREAM_NT, .cpu_feature = STREAM_FEATURE,
     .model = mb_stream_model_add, .description = "c[j] = a[j] + b[j]" STREAM_STORES},
    {.family = "stream", .op = "triad", .fn = mb_stream_triad, .reads = 2, .writes = 1,
     .nontemporal = STREAM_NT, .cpu_feature = STREAM_FEATURE,
     .model = mb_stream_model_triad, .description = "a[j] = b[j] + s*c[j]" STREAM_STORES},
    {.family = "readonly", .op = "sum", .fn = mb_readonly_sum, .reads = 1, .writes = 0,
     .cpu_feature = MB_VFEATURE,
     .description = "sum += a[j]; vector bits " MB_STR(MB_VBITS) ", partial sums "
                    MB_STR(MB_PSUMS) ", SW prefetch " MB_STR(MB_SWPF) ", pages per loop "
                    MB_STR(MB_PPL)},
    {.family = "xor", .op = "xor", .fn = mb_xor_xor, .reads = 1, .writes = 1, .rmw = 1,
     .cpu_feature = MB_VFEATURE, .description = "*x ^= mask (64-bit words)"},
    {.family = "daxpy", .op = "daxpy", .fn = mb_daxpy_daxpy, .reads = 2, .writes = 1,
     .rmw = 1, .cpu_feature = MB_VFEATURE, .model = mb_daxpy_model_daxpy,
     .description = "y[j] = y[j] + a*x[j]"},
    {.family = "chase", .op = "random", .fn = mb_chase_chase, .reads = 1,
     .description = "p = *p over a random single cycle, one pointer per cache line, "
                    "page groups in random order"},
    {.family = "chase", .op = "stride", .fn = mb_chase_chase, .reads = 1,
     .description = "p = *p with a fixed stride (lat_mem_rd style, prefetchable)"},
    {.family = "loaded", .op = "triad", .fn = mb_loaded_triad, .reads = 2, .writes = 1,
     .description = "chase while the load threads run a[j] = b[j] + s*c[j]"},
    {.family = "loaded", .op = "read", .fn = mb_loaded_read, .reads = 1,
     .description = "chase while the load threads run sum += a[j]"},
    {.family = "loaded", .op = "r1w0", .fn = mb_loaded_r1w0, .reads = 1,
     .description = "chase while the load threads run mix r1w0 (all reads)"},
    {.family = "loaded", .op = "r3w1", .fn = mb_loaded_r3w1, .reads = 3, .writes = 1,
     .description = "chase while the load threads run mix r3w1 (3 reads : 1 write)"},
    {.family = "loaded", .op = "r2w1", .fn = mb_loaded_r2w1, .reads = 2, .writes = 1,
     .description = "chase while the load threads run mix r2w1 (2 reads : 1 write)"},
    {.family = "loaded", .op = "r1w1", .fn = mb_loaded_r1w1, .reads = 1, .writes = 1,
     .description = "chase while the load threads run mix r1w1 (1 read : 1 write)"},
    {.family = "loaded", .op = "r2w1nt", .fn = mb_loaded_r2w1nt, .reads = 2, .writes = 1,
     .nontemporal = 1,
     .description = "chase while the load threads run mix r2w1nt (2 reads : 1 NT write)"},
    {.family = "mix", .op = "r1w0", .fn = mb_mix_r1w0, .reads = 1, .cpu_feature = MIX_FEATURE,
     .description = "all reads (1:0): sum += a[j]"},
    {.family = "mix", .op = "r3w1", .fn = mb_mix_r3w1, .reads = 3, .writes = 1,
     .nontemporal = MB_NT, .cpu_feature = MIX_FEATURE,
     .description = "3 reads : 1 write, w31[j] = a[j] + b[j] + c[j]" STREAM_STORES},
    {.family = "mix", .op = "r2w1", .fn = mb_mix_r2w1, .reads = 2, .writes = 1,
     .nontemporal = MB_NT, .cpu_feature = MIX_FEATURE,
     .description = "2 reads : 1 write, w21[j] = a[j] + s*b[j]" STREAM_STORES},
    {.family = "mix", .op = "r1w1", .fn = mb_mix_r1w1, .reads = 1, .writes = 1,
     .nontemporal = MB_NT, .cpu_feature = MIX_FEATURE,
     .description = "1 read : 1 write, w11[j] = s*a[j]" STREAM_STORES},
    {.family = "mix", .op = "r2w1nt", .fn = mb_mix_r2w1nt, .reads = 2, .writes = 1,
     .nontemporal = 1, .cpu_feature = MIX_FEATURE,
     .description = "2 reads : 1 non-temporal write (MLC's stream-triad like), "
                    "w21nt[j] = a[j] + s*b[j]"},
    {.family = "c2c", .op = "cas", .fn = mb_c2c_op,
     .description = "compare-and-swap ping-pong on one line (each hand-off an atomic RFO)"},
    {.family = "c2c", .op = "two_line", .fn = mb_c2c_op,
     .description = "store to one line, spin loading the other: each hand-off moves a "
                    "modified line"},
    {.family = "c2c", .op = "clean", .fn = mb_c2c_op,
     .description = "dependent loads of lines the other CPU just read (clean: Exclusive there)"},
    {.family = "c2c", .op = "dirty", .fn = mb_c2c_op,
     .description = "dependent loads of lines the other CPU just wrote (modified: MLC's HITM)"},
};
const size_t mb_kernel_count = sizeof mb_kernel_table / sizeof mb_kernel_table[0];

/* Set by the build (kernels/families/variants.yaml): which family and
 * variant this binary is, and the variant's own flags.  The harness is
 * compiled once for every variant: this file, compiled with each variant's
 * flags, tells it (mb_build, types.h). */
#ifndef MB_FAMILY
#define MB_FAMILY "stream"
#endif
#ifndef MB_VARIANT
#define MB_VARIANT "default"
#endif
#ifndef MB_CFLAGS
#define MB_CFLAGS "unknown"
#endif

const mb_build_t mb_build = {
    .family = MB_FAMILY,
    .variant = MB_VARIANT,
    .cflags = MB_CFLAGS,
    .software_prefetch = MB_SWPF,
    .prefetch_distance = MB_PF_DIST,
    .prefetch_distance_text = MB_STR(MB_PF_DIST),
};
