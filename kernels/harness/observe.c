/*
 * membench placement, job 4: what a run obtained.  The node of sampled pages
 * (move_pages(2) with nodes=NULL) and the huge-page fraction of the arrays
 * (/proc/self/smaps) (placement.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "placement.h"
#include "sysfs.h"

/* ---------------------------------------------------------- after the run */

long mb_sample_page_nodes(const mb_mapping_t *m, int nmaps, int per_array, long *counts)
{
    long good = 0;
    void **pages = malloc(sizeof(void *) * (size_t)per_array);
    int *status = malloc(sizeof(int) * (size_t)per_array);
    if (!pages || !status) {
        free(pages);
        free(status);
        return -1;
    }
    for (int i = 0; i < nmaps; i++) {
        if (!m[i].addr || m[i].used == 0)
            continue;
        const size_t page = mb_base_page_bytes(); /* 64 KiB on some arm64 kernels */
        size_t npg = (m[i].used + page - 1) / page;
        size_t cnt = npg < (size_t)per_array ? npg : (size_t)per_array;
        for (size_t k = 0; k < cnt; k++) {
            size_t pgi = k * npg / cnt;
            pages[k] = (char *)m[i].addr + pgi * page;
            status[k] = -1;
        }
        long rc = syscall(SYS_move_pages, 0, (unsigned long)cnt, pages, NULL, status, 0);
        if (rc < 0) {
            free(pages);
            free(status);
            return -1;
        }
        for (size_t k = 0; k < cnt; k++)
            if (status[k] >= 0 && status[k] < MB_MAX_NODES) {
                counts[status[k]]++;
                good++;
            }
    }
    free(pages);
    free(status);
    return good;
}

double mb_hugepage_fraction(const mb_mapping_t *m, int nmaps)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1.0;
    double total = 0.0, huge = 0.0;
    for (int i = 0; i < nmaps; i++)
        total += (double)m[i].len;

    char line[512];
    unsigned long vs = 0, ve = 0;
    double overlap = 0.0;           /* bytes of the current VMA inside arrays */
    /* a VMA whose KernelPageSize is above the base page is hugetlb */
    const long base_kb = (long)(mb_base_page_bytes() >> 10);
    long anon_huge = 0, hugetlb = 0, rss = 0, kps = base_kb;
    int have_hugetlb_fields = 0, in_vma = 0;

#define FLUSH_VMA()                                                           \
    do {                                                                      \
        if (in_vma && overlap > 0.0 && ve > vs) {                             \
            double kb = kps > base_kb ? (have_hugetlb_fields ? (double)hugetlb      \
                                                      : (double)rss)          \
                                : (double)anon_huge;                          \
            huge += kb * 1024.0 * (overlap / (double)(ve - vs));              \
        }                                                                     \
    } while (0)

    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        char c;
        if (sscanf(line, "%lx-%lx %c", &a, &b, &c) == 3 && strchr(line, '-') < strchr(line, ' ')) {
            FLUSH_VMA();
            vs = a;
            ve = b;
            in_vma = 1;
            anon_huge = hugetlb = rss = 0;
            kps = base_kb;
            have_hugetlb_fields = 0;
            overlap = 0.0;
            for (int i = 0; i < nmaps; i++) {
                unsigned long ms = (unsigned long)(uintptr_t)m[i].addr;
                unsigned long me = ms + m[i].len;
                unsigned long lo = ms > vs ? ms : vs, hi = me < ve ? me : ve;
                if (m[i].addr && hi > lo)
                    overlap += (double)(hi - lo);
            }
            continue;
        }
        long v;
        if (sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
            anon_huge = v;
        else if (sscanf(line, "Private_Hugetlb: %ld kB", &v) == 1) {
            hugetlb += v;
            have_hugetlb_fields = 1;
        } else if (sscanf(line, "Shared_Hugetlb: %ld kB", &v) == 1) {
            hugetlb += v;
            have_hugetlb_fields = 1;
        } else if (sscanf(line, "Rss: %ld kB", &v) == 1)
            rss = v;
        else if (sscanf(line, "KernelPageSize: %ld kB", &v) == 1)
            kps = v;
    }
    FLUSH_VMA();
#undef FLUSH_VMA
    fclose(f);
    if (total <= 0.0)
        return -1.0;
    double fr = huge / total;
    return fr > 1.0 ? 1.0 : (fr < 0.0 ? 0.0 : fr);
}
