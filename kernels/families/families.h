/*
 * membench families: the functions each family defines, by family.
 *
 * Naming grammar
 *   family   [a-z][a-z0-9_]*   one .c file per family (stream.c, ...)
 *   op       [a-z][a-z0-9_]*   unique inside its family
 *   kernel   family.op         e.g. "stream.triad" (used in --list)
 *
 * Adding a family = one new file kernels/families/<family>.c defining the
 * kernel functions and the family hooks (init, validate, corrupt), their
 * declarations here (a section per family; tests/test_family_declarations.py
 * holds them to the table: every function a row names is declared here,
 * nothing of a row's kind that no row names), its rows in
 * kernels/families/kernel_table.c (which declares nothing itself), its entry
 * in kernels/families/variants.yaml and its row in
 * workflow/scripts/membench/plan/families.py; tests/test_new_family.py adds
 * one by those five files alone.  Every kernel and family hook is declared
 * weak, so a binary built with only some family files still links: rows
 * whose function is not linked in have fn == NULL and are reported as "not
 * linked" by --list.  MB_FAMILY (a compile-time string)
 * selects which family the binary runs.  The harness (../harness/) knows no
 * family: it reads only the table.
 */
#ifndef MEMBENCH_FAMILIES_H
#define MEMBENCH_FAMILIES_H

#include <stddef.h>

#include "../harness/arrays.h"
#include "../harness/disturb.h"
#include "../harness/table.h"
#include "../harness/types.h"
#include "../harness/variant.h"

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
/* The group keys of a random-chase record: group_bytes (bytes per group;
 * the working set when group is 0 = full or larger) and group_full. */
MB_WEAK void mb_chase_group_keys(mb_point_t *pt, size_t group, size_t working_set);
/* The chase kernel, its timing in walks of fixed stretches, ns_per_load
 * (stretch-min-mean) and the latency keys: chase_walk.h; the cycles it
 * follows: chase_cycle.h. */

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

#endif
