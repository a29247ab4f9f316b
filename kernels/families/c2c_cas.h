/*
 * membench family "c2c": the compare-and-swap of op cas (c2c.c includes
 * this once, after its past_deadline).  cas_from spins on
 * compare-and-swap(from -> to) and returns 1 on timeout.
 */
#ifndef MEMBENCH_C2C_CAS_H
#define MEMBENCH_C2C_CAS_H

#define CAS_FROM_BODY                                                                 \
    long long deadline = 0;                                                           \
    for (unsigned long spins = 1;; spins++) {                                         \
        uint64_t expect = from;                                                       \
        if (__atomic_compare_exchange_n(p, &expect, to, 0, __ATOMIC_ACQ_REL,          \
                                        __ATOMIC_ACQUIRE))                            \
            return 0;                                                                 \
        if ((spins & 0xFFFFF) == 0 && past_deadline(&deadline))                       \
            return 1;                                                                 \
    }
#if defined(__aarch64__)
/* Both compare-and-swaps inline: gcc's default out-of-line helper
 * (bl __aarch64_cas8_acq_rel) would put a call inside the timed hand-off.
 * casal where the CPU has LSE (HWCAP atomics), else ldaxr/stlxr; which one
 * ran is in the record (cas_atomics). */
MB_KERNEL_FN __attribute__((target("+lse"))) static int
mb_kern_c2c_cas_lse(uint64_t *p, uint64_t from, uint64_t to)
{
    CAS_FROM_BODY
}
MB_KERNEL_FN __attribute__((target("no-outline-atomics"))) static int
mb_kern_c2c_cas_llsc(uint64_t *p, uint64_t from, uint64_t to)
{
    CAS_FROM_BODY
}
static int cas_from(uint64_t *p, uint64_t from, uint64_t to)
{
    static int lse = -1; /* the same answer in every thread: a benign race */
    if (lse < 0)
        lse = mb_cpu_supports("atomics") == 1;
    return lse ? mb_kern_c2c_cas_lse(p, from, to) : mb_kern_c2c_cas_llsc(p, from, to);
}
#else
static int cas_from(uint64_t *p, uint64_t from, uint64_t to)
{
    CAS_FROM_BODY
}
#endif

#endif
