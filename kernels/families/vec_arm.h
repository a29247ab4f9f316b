/*
 * membench families: the explicit vectors of stream and mix on aarch64, in
 * the shape of the x86 intrinsics they replace there (load, store,
 * streaming store, set1, add, mul, zero, the fence after streaming stores).
 *
 *   MB_VBITS 128  NEON (Advanced SIMD): float64x2_t; the streaming store is
 *                 STNP, the non-temporal pair store (of the vector's two
 *                 halves: gcc has no non-temporal store builtin on Arm).
 *   MB_VBITS 256  SVE at a fixed vector length of 256 bits (Graviton3): the
 *                 variant's -msve-vector-bits=256 makes svfloat64_t a sized
 *                 type; the streaming store is STNT1D.  Only the kernels
 *                 carry +sve (MB_VTARGET), and the table row needs sve256,
 *                 so a CPU without SVE, or with another vector length, gets
 *                 a skipped record instead of SIGILL or wrong strides.
 *
 * The fence: dmb ishst orders the streaming stores before what follows, as
 * sfence does on x86.
 */
#ifndef MEMBENCH_VEC_ARM_H
#define MEMBENCH_VEC_ARM_H

#if MB_VBITS == 256
#include <arm_sve.h>
typedef svfloat64_t mb_arm_vec __attribute__((arm_sve_vector_bits(256)));
#define MB_ARM_ALL svptrue_b64()
#define MB_ARM_LOAD(p) svld1_f64(MB_ARM_ALL, (p))
#define MB_ARM_STORE(p, v) svst1_f64(MB_ARM_ALL, (p), (v))
#define MB_ARM_STREAM(p, v) svstnt1_f64(MB_ARM_ALL, (p), (v))
#define MB_ARM_SET1(s) svdup_f64(s)
#define MB_ARM_ADD(a, b) svadd_f64_x(MB_ARM_ALL, (a), (b))
#define MB_ARM_MUL(a, b) svmul_f64_x(MB_ARM_ALL, (a), (b))
#define MB_ARM_ZERO() svdup_f64(0.0)
#else
#include <arm_neon.h>
typedef float64x2_t mb_arm_vec;
#define MB_ARM_LOAD(p) vld1q_f64(p)
#define MB_ARM_STORE(p, v) vst1q_f64((p), (v))
#define MB_ARM_STREAM(p, v) mb_arm_stnp((p), (v))
#define MB_ARM_SET1(s) vdupq_n_f64(s)
#define MB_ARM_ADD(a, b) vaddq_f64((a), (b))
#define MB_ARM_MUL(a, b) vmulq_f64((a), (b))
#define MB_ARM_ZERO() vdupq_n_f64(0.0)
static inline __attribute__((always_inline)) void mb_arm_stnp(double *p, float64x2_t v)
{
    __asm__ volatile("stnp %d0, %d1, [%2]" ::"w"(v), "w"(vget_high_f64(v)), "r"(p) : "memory");
}
#endif
#define MB_ARM_FENCE() __asm__ volatile("dmb ishst" ::: "memory")

#endif
