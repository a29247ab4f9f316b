/*
 * membench family "mix" (mix.c): the vectors its kernels are written in,
 * on either ISA.  MX_W is the width: the variant's (MB_VBITS >= 128:
 * MX_EXPLICIT), else, for r2w1nt alone (streaming stores need intrinsics
 * in every variant), the widest the build target has.  Arm: NEON or
 * SVE-256 through vec_arm.h (stnp / stnt1d streaming stores, dmb ishst);
 * x86: SSE2, AVX or AVX-512 intrinsics (movntpd, sfence).  mix.c includes
 * it once, after families.h (MB_VBITS, MB_VTARGET, MB_NT).
 */
#ifndef MEMBENCH_MIX_VEC_H
#define MEMBENCH_MIX_VEC_H

#include <stdint.h>

#if defined(__aarch64__)
#include "vec_arm.h"
#else
#include <immintrin.h>
#endif

#define MX_EXPLICIT (MB_VBITS >= 128)
#if MX_EXPLICIT
#define MX_W MB_VBITS
#define MX_NTTARGET MB_VTARGET
#elif defined(__AVX512F__)
#define MX_W 512
#define MX_NTTARGET
#elif defined(__AVX__)
#define MX_W 256
#define MX_NTTARGET
#else
#define MX_W 128
#define MX_NTTARGET
#endif

#if defined(__aarch64__) /* NEON (128) or SVE-256: vec_arm.h */
typedef mb_arm_vec mx_vec;
#define MX_LOADU MB_ARM_LOAD
#define MX_STORE MB_ARM_STORE
#define MX_STREAM MB_ARM_STREAM
#define MX_SET1 MB_ARM_SET1
#define MX_ADD MB_ARM_ADD
#define MX_MUL MB_ARM_MUL
#define MX_ZERO MB_ARM_ZERO
#define MX_FENCE() MB_ARM_FENCE()
#else
#if MX_W == 512
typedef __m512d mx_vec;
#define MX_(op) _mm512_##op
#elif MX_W == 256
typedef __m256d mx_vec;
#define MX_(op) _mm256_##op
#else
typedef __m128d mx_vec;
#define MX_(op) _mm_##op
#endif
#define MX_LOADU MX_(loadu_pd)
#define MX_STORE MX_(store_pd)
#define MX_STREAM MX_(stream_pd)
#define MX_SET1 MX_(set1_pd)
#define MX_ADD MX_(add_pd)
#define MX_MUL MX_(mul_pd)
#define MX_ZERO MX_(setzero_pd)
#define MX_FENCE() _mm_sfence()
#endif
#define MX_LANES (MX_W / 64)
#define MX_VBYTES (MX_W / 8)
#define MX_UNROLL MB_VUNROLL /* vectors per iteration (variant.h's MB_VLOOP) */
#define MX_STEP (MX_LANES * MX_UNROLL)

#if MB_NT
#define MX_WSTORE MX_STREAM
#else
#define MX_WSTORE MX_STORE
#endif

/* The peel and tail loops stay scalar and rolled: gcc would vectorise and
 * unroll them into more vector memory operations than the main loop has,
 * at a width that is not the variant's (an empty asm is a statement it
 * cannot vectorise; unroll 1 keeps them one loop). */
#define MX_SCALAR() __asm__ volatile("")

#endif
