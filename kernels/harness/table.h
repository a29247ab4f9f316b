/*
 * membench harness: the kernel table.  The rows are data of the families
 * (families/kernel_table.c); looking them up, counting their bytes and
 * printing them is the harness's (table.c).
 */
#ifndef MEMBENCH_TABLE_H
#define MEMBENCH_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "types.h"

/* The one table (families/kernel_table.c). */
extern const mb_kernel_t mb_kernel_table[];
extern const size_t mb_kernel_count;
extern const mb_family_t mb_family_table[];
extern const size_t mb_family_count;
/* This binary's family and variant (mb_build_t, types.h). */
extern const mb_build_t mb_build;

const mb_family_t *mb_find_family(const char *name);
const mb_kernel_t *mb_find_kernel(const char *family, const char *op);
/* 1 if the CPU supports the named feature (NULL = no requirement); -1 if the
 * name is unknown to this harness. */
int mb_cpu_supports(const char *feature);
/* 1 if MEMBENCH_TEST_CPU_LACKS names the feature (tests only) */
int mb_cpu_lacks(const char *feature);
/* The SVE vector length in bits; 0 without SVE (and off aarch64). */
int mb_sve_vector_bits(void);
/* Print the table (all families, linked or not) to f. */
void mb_print_table(FILE *f, const char *selected_family);

#endif
