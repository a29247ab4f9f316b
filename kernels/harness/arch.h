/*
 * membench: the architecture and CPU keys of every record (arch.c).
 */
#ifndef MEMBENCH_ARCH_H
#define MEMBENCH_ARCH_H

#include "json.h"

/* arch, cpu_implementer, cpu_part, cpu_name (null where unknown),
 * sve_vector_bits (0 = no SVE), base_page_bytes, thp_bytes */
void mb_arch_keys(jbuf_t *b);

#endif
