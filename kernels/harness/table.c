/*
 * membench harness: the kernel table read (table.h).  The rows are the
 * families' (families/kernel_table.c); finding a family or op, the CPU
 * features it needs, and --list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

const mb_family_t *mb_find_family(const char *name)
{
    for (size_t i = 0; i < mb_family_count; i++)
        if (strcmp(mb_family_table[i].name, name) == 0)
            return &mb_family_table[i];
    return NULL;
}

const mb_kernel_t *mb_find_kernel(const char *family, const char *op)
{
    for (size_t i = 0; i < mb_kernel_count; i++)
        if (strcmp(mb_kernel_table[i].family, family) == 0 &&
            strcmp(mb_kernel_table[i].op, op) == 0)
            return &mb_kernel_table[i];
    return NULL;
}

#if defined(__aarch64__)
/* Arm: the kernel's HWCAP bits (getauxval; gcc has no
 * __builtin_cpu_supports there) and the SVE vector length (prctl). */
#include <sys/auxv.h>
#include <sys/prctl.h>
#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif
#define MB_HWCAP_ASIMD (1UL << 1)
#define MB_HWCAP_ATOMICS (1UL << 8)
#define MB_HWCAP_SVE (1UL << 22)
#define MB_HWCAP2_SVE2 (1UL << 1)

int mb_sve_vector_bits(void)
{
    if (!(getauxval(AT_HWCAP) & MB_HWCAP_SVE) || mb_cpu_lacks("sve"))
        return 0;
    int vl = prctl(PR_SVE_GET_VL);
    return vl < 0 ? 0 : (vl & 0xffff) * 8;
}

static int mb_arch_supports(const char *feature)
{
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (strcmp(feature, "asimd") == 0) return hw & MB_HWCAP_ASIMD ? 1 : 0;
    if (strcmp(feature, "atomics") == 0) return hw & MB_HWCAP_ATOMICS ? 1 : 0;
    if (strcmp(feature, "sve") == 0) return mb_sve_vector_bits() > 0;
    if (strcmp(feature, "sve2") == 0) return mb_sve_vector_bits() > 0 && (hw2 & MB_HWCAP2_SVE2);
    /* a fixed-length SVE kernel runs only at its own vector length */
    if (strcmp(feature, "sve256") == 0) return mb_sve_vector_bits() == 256;
    /* x86's names: features this CPU lacks, not unknown ones */
    static const char *const x86[] = {"sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx",
                                      "avx2", "fma", "bmi2", "avx512f", "avx512bw",
                                      "avx512dq", "avx512vl", "avx512cd", NULL};
    for (int i = 0; x86[i]; i++)
        if (strcmp(feature, x86[i]) == 0)
            return 0;
    return -1;
}
#elif defined(__x86_64__) || defined(__i386__)
int mb_sve_vector_bits(void) { return 0; }

/* __builtin_cpu_supports only accepts string literals, hence the list. */
#define MB_FEATURE(name) \
    if (strcmp(feature, name) == 0) return __builtin_cpu_supports(name) ? 1 : 0;

static int mb_arch_supports(const char *feature)
{
    __builtin_cpu_init();
    MB_FEATURE("sse2")
    MB_FEATURE("sse3")
    MB_FEATURE("ssse3")
    MB_FEATURE("sse4.1")
    MB_FEATURE("sse4.2")
    MB_FEATURE("avx")
    MB_FEATURE("avx2")
    MB_FEATURE("fma")
    MB_FEATURE("bmi2")
    MB_FEATURE("avx512f")
    MB_FEATURE("avx512bw")
    MB_FEATURE("avx512dq")
    MB_FEATURE("avx512vl")
    MB_FEATURE("avx512cd")
    /* Arm's names: features this CPU lacks, not unknown ones */
    static const char *const arm[] = {"asimd", "atomics", "sve", "sve2", "sve256", NULL};
    for (int i = 0; arm[i]; i++)
        if (strcmp(feature, arm[i]) == 0)
            return 0;
    return -1;
}
#else
int mb_sve_vector_bits(void) { return 0; }
static int mb_arch_supports(const char *feature) { (void)feature; return -1; }
#endif

/* TEST ONLY: MEMBENCH_TEST_CPU_LACKS=avx512f,avx2 makes this CPU look as if
 * it lacked those features (the skipped-record path of a variant whose CPU
 * feature is missing, on a machine that has it). */
int mb_cpu_lacks(const char *feature)
{
    const char *lacks = getenv("MEMBENCH_TEST_CPU_LACKS");
    if (lacks) {
        size_t len = strlen(feature);
        for (const char *p = lacks; (p = strstr(p, feature)) != NULL; p += len)
            if ((p == lacks || p[-1] == ',') && (p[len] == '\0' || p[len] == ','))
                return 1;
    }
    return 0;
}

int mb_cpu_supports(const char *feature)
{
    if (feature == NULL || feature[0] == '\0')
        return 1;
    if (mb_cpu_lacks(feature))
        return 0;
    return mb_arch_supports(feature);
}

void mb_print_table(FILE *f, const char *selected_family)
{
    fprintf(f, "%-8s %-10s %5s %6s %3s %3s %-10s %-10s %s\n", "family", "op",
            "reads", "writes", "nt", "rmw", "feature", "binary", "description");
    for (size_t i = 0; i < mb_kernel_count; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        const char *state = k->fn == NULL ? "not-linked"
                            : (selected_family && strcmp(k->family, selected_family) == 0)
                                ? "this" : "linked";
        fprintf(f, "%-8s %-10s %5d %6d %3s %3s %-10s %-10s %s\n", k->family, k->op,
                k->reads, k->writes, k->nontemporal ? "yes" : "no", k->rmw ? "yes" : "no",
                k->cpu_feature ? k->cpu_feature : "-", state, k->description);
    }
}
