/*
 * membench harness: the kernel table read (table.h).  The rows are the
 * families' (families/kernel_table.c); finding a family or op, the bytes an
 * op moves, the CPU features it needs, and --list.
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

long long mb_kernel_bytes(const mb_kernel_t *k, size_t elem_size, size_t n, int write_allocate)
{
    long long per_array = (long long)elem_size * (long long)n;
    long long bytes = (long long)(k->reads + k->writes) * per_array;
    if (write_allocate && !k->nontemporal && !k->rmw)
        bytes += (long long)k->writes * per_array;
    return bytes;
}

long long mb_kernel_read_bytes(const mb_kernel_t *k, size_t elem_size, size_t n)
{
    return mb_kernel_bytes(k, elem_size, n, 1) - mb_kernel_write_bytes(k, elem_size, n);
}

long long mb_kernel_write_bytes(const mb_kernel_t *k, size_t elem_size, size_t n)
{
    return (long long)k->writes * (long long)elem_size * (long long)n;
}

/* __builtin_cpu_supports only accepts string literals, hence the list. */
#define MB_FEATURE(name) \
    if (strcmp(feature, name) == 0) return __builtin_cpu_supports(name) ? 1 : 0;

int mb_cpu_supports(const char *feature)
{
    if (feature == NULL || feature[0] == '\0')
        return 1;
    /* TEST ONLY: MEMBENCH_TEST_CPU_LACKS=avx512f,avx2 makes this CPU look
     * as if it lacked those features (the skipped-record path of a variant
     * whose CPU feature is missing, on a machine that has it). */
    const char *lacks = getenv("MEMBENCH_TEST_CPU_LACKS");
    if (lacks) {
        size_t len = strlen(feature);
        for (const char *p = lacks; (p = strstr(p, feature)) != NULL; p += len)
            if ((p == lacks || p[-1] == ',') && (p[len] == '\0' || p[len] == ','))
                return 0;
    }
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
    return -1;
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
