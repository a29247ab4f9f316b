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

const mb_family_t *mb_find_family(const char *name);
const mb_kernel_t *mb_find_kernel(const char *family, const char *op);
/* 1 if the CPU supports the named feature (NULL = no requirement); -1 if the
 * name is unknown to this harness. */
int mb_cpu_supports(const char *feature);
/* Bytes one pass of op k moves over n elements of elem_size bytes (STREAM
 * counting: reads + writes); with write_allocate also the read of every
 * written line before it is written, unless the stores are non-temporal or
 * the op read that array anyway (rmw). */
long long mb_kernel_bytes(const mb_kernel_t *k, size_t elem_size, size_t n, int write_allocate);
/* The read traffic of the same n elements: the kernel's reads plus one
 * write-allocate read per written array (none for non-temporal stores or
 * read-modify-write); and its write traffic (the write-backs). Their sum is
 * mb_kernel_bytes(.., 1). */
long long mb_kernel_read_bytes(const mb_kernel_t *k, size_t elem_size, size_t n);
long long mb_kernel_write_bytes(const mb_kernel_t *k, size_t elem_size, size_t n);
/* Print the table (all families, linked or not) to f. */
void mb_print_table(FILE *f, const char *selected_family);

#endif
