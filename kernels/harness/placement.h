/*
 * membench placement: where threads run and where pages live.
 *
 * One header, one source per job:
 *   cpus.c       threads: allowed CPUs and topology, the binding plan,
 *                binding (sched_setaffinity per thread), cache sizes
 *   mempolicy.c  the NUMA memory policy (mbind through syscall(2), no libnuma)
 *   pages.c      page sizes and their availability, page-size-aware mmap
 *   observe.c    what a run obtained: page nodes sampled with move_pages(2),
 *                the huge-page fraction read from /proc/self/smaps
 *   sysfs.c      the shared reading of sysfs and /proc, CPU and node lists
 * Nothing here changes system settings.
 */
#ifndef MEMBENCH_PLACEMENT_H
#define MEMBENCH_PLACEMENT_H

#include <stddef.h>

#define MB_MAX_NODES 1024   /* node ids 0..MB_MAX_NODES-1 */
#define MB_MAX_CPUS 1024    /* CPU_SETSIZE of glibc */

/* outcome of a placement step; values are also the harness's exit codes */
enum { MB_OK = 0, MB_FAILED = 1, MB_SKIPPED = 3 };

/* ---- lists like "0-3,8" (sysfs.c) ---- */
/* Parses into out[0..max-1] in the order written; values must be in
 * [0, limit).  Returns the count, or -1 on a syntax error / out-of-range
 * value / duplicate / more than max entries. */
int mb_parse_list(const char *s, int *out, int max, int limit);
/* Formats ints as "0,1,5" into buf. */
void mb_format_list(const int *v, int n, char *buf, size_t len);

/* ---- CPUs and topology (cpus.c) ---- */
typedef struct mb_cpu {
    int cpu, node, package, die, core;  /* core_id is unique per (package, die) */
    int smt;                /* rank of this CPU among the SMT siblings of its core */
} mb_cpu_t;

/* The process's allowed CPUs (sched_getaffinity) with their topology from
 * sysfs; returns the count (<= MB_MAX_CPUS), -1 on error. */
int mb_allowed_cpus(mb_cpu_t *out);
/* Node of a CPU from /sys/devices/system/cpu/cpuN/nodeM (0 if the kernel
 * exposes no NUMA information), -1 for cpu < 0. */
int mb_cpu_node(int cpu);

typedef enum { MB_AFF_NONE, MB_AFF_CLOSE, MB_AFF_SPREAD, MB_AFF_LIST } mb_affinity_kind_t;

/* Fills plan[0..threads-1] with the CPU of each thread for close / spread /
 * an explicit list.  Returns MB_OK, or MB_SKIPPED with a reason (too few
 * CPUs, listed CPU not allowed). */
int mb_affinity_plan(mb_affinity_kind_t kind, const int *list, int nlist,
                     int threads, int *plan, char *reason, size_t rlen);
/* The pure part of the plan: orders cpus[0..n-1] (smt already ranked) for
 * close or spread and writes the first `threads` CPUs to plan. */
void mb_order_cpus(mb_cpu_t *cpus, int n, mb_affinity_kind_t kind, int threads, int *plan);
/* Sets .smt = rank by CPU number among the CPUs of the same core. */
void mb_rank_smt(mb_cpu_t *cpus, int n);
/* Binds the calling thread to one CPU; 0 on success, else errno. */
int mb_bind_self(int cpu);

/* ---- memory policy (mempolicy.c) ---- */
typedef enum {
    MB_POL_DEFAULT, MB_POL_LOCAL, MB_POL_BIND, MB_POL_PREFERRED,
    MB_POL_INTERLEAVE
} mb_policy_kind_t;

typedef struct mb_policy {
    mb_policy_kind_t kind;
    int all;                /* interleave:all */
    int nodes[MB_MAX_NODES];
    int nnodes;
} mb_policy_t;

/* Resolves "all" and checks that every named node exists, has memory and is
 * allowed to this process.  MB_OK or MB_SKIPPED with a reason. */
int mb_policy_resolve(mb_policy_t *p, char *reason, size_t rlen);
/* mbind(2) on [addr, addr+len) before first touch.  MB_OK or MB_FAILED. */
int mb_policy_apply(void *addr, size_t len, const mb_policy_t *p,
                    char *reason, size_t rlen);

/* ---- pages and mappings (pages.c) ---- */
typedef enum { MB_PAGES_4K, MB_PAGES_THP, MB_PAGES_HUGETLB_2M, MB_PAGES_HUGETLB_1G } mb_pages_kind_t;

typedef struct mb_mapping {
    void *addr;
    size_t len;             /* mapping length (multiple of the page size) */
    size_t used;            /* bytes of array data at addr */
} mb_mapping_t;

size_t mb_page_bytes(mb_pages_kind_t kind);
/* the kernel's base page (sysconf) and its transparent huge page (the PMD
 * size): 4 KiB and 2 MiB on x86, 64 KiB and 512 MiB on a 64 KiB arm64 kernel */
size_t mb_base_page_bytes(void);
size_t mb_thp_bytes(void);
/* Can narrays arrays of `bytes` each be mapped with these pages here?
 * MB_OK, or MB_SKIPPED with a reason (THP disabled, not enough free huge
 * pages: how many are needed and the command that would reserve them). */
int mb_pages_check(mb_pages_kind_t kind, size_t bytes, int narrays,
                   char *reason, size_t rlen);
/* mmap + madvise for one array.  MB_OK, MB_SKIPPED (hugetlb ENOMEM) or
 * MB_FAILED with a reason. */
int mb_map(mb_pages_kind_t kind, size_t bytes, int narrays, mb_mapping_t *m,
           char *reason, size_t rlen);
void mb_unmap(mb_mapping_t *m);

/* ---- after the run: where are the pages? (observe.c) ---- */
/* move_pages(2) with nodes=NULL on up to per_array evenly spaced 4 KiB pages
 * of each mapping's data; counts[node] += 1 per page found on node.
 * Returns the number of successfully sampled pages, -1 if move_pages is not
 * available. */
long mb_sample_page_nodes(const mb_mapping_t *m, int nmaps, int per_array,
                          long *counts /* [MB_MAX_NODES] */);
/* Huge-page backed bytes / total mapping bytes, from /proc/self/smaps
 * (AnonHugePages for THP, the hugetlb fields for hugetlb VMAs); -1 if
 * smaps cannot be read. */
double mb_hugepage_fraction(const mb_mapping_t *m, int nmaps);

/* ---- caches (cpus.c) ---- */
/* The first thread of a plan on thread `of`'s physical core, or -1. */
int mb_thread_on_core_of(const int *plan, int threads, int of);
/* Cache line bytes (sysfs coherency_line_size of cpu0; 64 when unreadable
 * or not a power of two from a pointer to a page). */
size_t mb_line_bytes(void);

#endif
