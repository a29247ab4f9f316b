/*
 * membench: THE kernel table.  Every family's ops are registered here, one
 * row per op; --help and --list are generated from these rows.
 *
 * Bytes per iteration follow STREAM's counting: (reads + writes) x element
 * size x n.  The write-allocate column adds one read per written array unless
 * the kernel uses non-temporal stores.
 */
#include <string.h>

#include "kernels.h"

static const char *const stream_arrays[] = {"a", "b", "c"};

const mb_family_t mb_family_table[] = {
    {"stream", 3, stream_arrays, sizeof(double), 3.0, mb_stream_init,
     mb_stream_validate, mb_stream_corrupt,
     "STREAM copy/scale/add/triad on three double arrays a=1, b=2, c=0, s=3"},
};
const size_t mb_family_count = sizeof mb_family_table / sizeof mb_family_table[0];

/* family, op, fn, reads, writes, nontemporal, cpu_feature, model, description */
const mb_kernel_t mb_kernel_table[] = {
    {"stream", "copy",  mb_stream_copy,  1, 1, 0, NULL, mb_stream_model_copy,
     "c[j] = a[j]"},
    {"stream", "scale", mb_stream_scale, 1, 1, 0, NULL, mb_stream_model_scale,
     "b[j] = s*c[j]"},
    {"stream", "add",   mb_stream_add,   2, 1, 0, NULL, mb_stream_model_add,
     "c[j] = a[j] + b[j]"},
    {"stream", "triad", mb_stream_triad, 2, 1, 0, NULL, mb_stream_model_triad,
     "a[j] = b[j] + s*c[j]"},
};
const size_t mb_kernel_count = sizeof mb_kernel_table / sizeof mb_kernel_table[0];

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

/* __builtin_cpu_supports only accepts string literals, hence the list. */
#define MB_FEATURE(name) \
    if (strcmp(feature, name) == 0) return __builtin_cpu_supports(name) ? 1 : 0;

int mb_cpu_supports(const char *feature)
{
    if (feature == NULL || feature[0] == '\0')
        return 1;
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
    fprintf(f, "%-8s %-10s %5s %6s %3s %-10s %-10s %s\n", "family", "op",
            "reads", "writes", "nt", "feature", "binary", "description");
    for (size_t i = 0; i < mb_kernel_count; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        const char *state = k->fn == NULL ? "not-linked"
                            : (selected_family && strcmp(k->family, selected_family) == 0)
                                ? "this" : "linked";
        fprintf(f, "%-8s %-10s %5d %6d %3s %-10s %-10s %s\n", k->family, k->op,
                k->reads, k->writes, k->nontemporal ? "yes" : "no",
                k->cpu_feature ? k->cpu_feature : "-", state, k->description);
    }
}
