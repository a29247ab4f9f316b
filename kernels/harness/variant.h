/*
 * membench variant macros: what a variant of kernels/families/variants.yaml
 * sets with its cflags, the CPU feature and target attribute they imply, and
 * the out-of-line marker of the kernel bodies.  Type-free: see types.h.
 */
#ifndef MEMBENCH_VARIANT_H
#define MEMBENCH_VARIANT_H

/* Set for the harness's own files (variants.yaml common.harness): here it
 * would see every macro at its default, whichever variant it is linked into. */
#ifdef MB_HARNESS
#error "the harness is built once for every variant: read mb_build (table.h), not variant.h"
#endif

/*
 * Variant macros.  A variant is one entry of kernels/families/variants.yaml; its
 * cflags set these (-DMB_VBITS=512 ...), and every file compiled with them
 * (the kernel table and the family's files) sees the same values, so the
 * table row and the kernel code agree by construction.  The harness is
 * compiled once for every variant: it reads what it records of them from
 * mb_build (table.h, defined by the kernel table), never from here.
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
 * of the kernels that use it (SSE2 is in the x86-64 baseline).  On aarch64
 * 128 bits is NEON (Advanced SIMD, HWCAP asimd) and 256 bits is SVE at a
 * vector length of exactly 256 bits (Graviton3): the kernels alone carry
 * +sve, so the harness stays runnable on a CPU without SVE (Neoverse N1)
 * and says so in a skipped record. */
#if defined(MB_FOREIGN_FEATURE)
/* a variant of another architecture (plan/variants.py builds it as plain C
 * here): every op needs that architecture's feature, so each record is
 * skipped with the reason */
#define MB_VFEATURE MB_FOREIGN_FEATURE
#define MB_VTARGET
#elif defined(__aarch64__)
#if MB_VBITS == 512
#error "MB_VBITS 512 has no aarch64 variant (SVE-512 is not built)"
#elif MB_VBITS == 256
#define MB_VFEATURE "sve256"
#define MB_VTARGET __attribute__((target("+sve")))
#elif MB_VBITS == 128
#define MB_VFEATURE "asimd"
#define MB_VTARGET
#else
#define MB_VFEATURE NULL
#define MB_VTARGET
#endif
#elif MB_VBITS == 512
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

/* The main loop of a hand-vectorised kernel (MB_VBITS >= 128): from j,
 * while a whole iteration fits below n, `pf` (a prefetch, or (void)0) and
 * then `body` for each of MB_VUNROLL vectors of `lanes` doubles, k the
 * first element of the vector.  Four vectors make a whole 64-byte line
 * even at 128 bits, so write-combining buffers fill line by line; the
 * caller's scalar tail takes j from where the loop leaves it. */
#define MB_VUNROLL 4
#define MB_VLOOP(j, n, lanes, pf, k, body)                                            \
    for (; (j) + (size_t)(lanes) * MB_VUNROLL <= (n); (j) += (size_t)(lanes) * MB_VUNROLL) { \
        pf;                                                                           \
        _Pragma("GCC unroll 4") for (int u_ = 0; u_ < MB_VUNROLL; u_++)               \
        {                                                                             \
            size_t k = (j) + (size_t)u_ * (lanes);                                    \
            body;                                                                     \
        }                                                                             \
    }

#endif
