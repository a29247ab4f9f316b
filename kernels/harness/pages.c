/*
 * membench placement, job 3: pages.  Page sizes, whether the host can give
 * them (THP mode, free huge pages), and the mmap + madvise of the arrays
 * (placement.h).
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

#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif

#define MB_PAGE_2M ((size_t)2 << 20)
#define MB_PAGE_1G ((size_t)1 << 30)

/* ----------------------------------------------------------------- pages */

/* The kernel's base page: 4 KiB on x86, 4, 16 or 64 KiB on arm64 (Grace
 * and RHEL's arm64 kernels use 64 KiB).  The pages axis value "4k" means
 * this page. */
size_t mb_base_page_bytes(void)
{
    static size_t bytes;
    if (!bytes) {
        /* TEST ONLY: MEMBENCH_TEST_BASE_PAGE=65536 makes a 4 KiB kernel look
         * like a 64 KiB one (a multiple of the real page stays aligned) */
        const char *test = getenv("MEMBENCH_TEST_BASE_PAGE");
        long pg = test ? atol(test) : sysconf(_SC_PAGESIZE);
        bytes = pg >= 4096 && (pg & (pg - 1)) == 0 ? (size_t)pg : 4096;
    }
    return bytes;
}

/* A transparent huge page: one page-table page's worth of base pages (the
 * PMD size: 2 MiB with 4 KiB pages, 512 MiB with 64 KiB), as the kernel
 * says where it says. */
size_t mb_thp_bytes(void)
{
    static size_t bytes;
    if (!bytes) {
        size_t base = mb_base_page_bytes();
        long pmd = getenv("MEMBENCH_TEST_BASE_PAGE")
                       ? 0
                       : mb_read_long("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", 0);
        bytes = pmd > 0 ? (size_t)pmd : base * (base / 8);
    }
    return bytes;
}

size_t mb_page_bytes(mb_pages_kind_t kind)
{
    switch (kind) {
    case MB_PAGES_THP:
        return mb_thp_bytes();
    case MB_PAGES_HUGETLB_2M:
        return MB_PAGE_2M;
    case MB_PAGES_HUGETLB_1G:
        return MB_PAGE_1G;
    default:
        return mb_base_page_bytes();
    }
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static const char *pages_name(mb_pages_kind_t kind)
{
    switch (kind) {
    case MB_PAGES_THP: return "thp";
    case MB_PAGES_HUGETLB_2M: return "hugetlb-2m";
    case MB_PAGES_HUGETLB_1G: return "hugetlb-1g";
    default: return "4k";
    }
}

static void hugetlb_shortage(mb_pages_kind_t kind, size_t bytes, int narrays,
                             char *reason, size_t rlen, const char *why)
{
    size_t pg = mb_page_bytes(kind);
    unsigned long kb = (unsigned long)(pg >> 10);
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "/sys/kernel/mm/hugepages/hugepages-%lukB", kb);
    snprintf(path, sizeof path, "%s/nr_hugepages", dir);
    long nr = mb_read_long(path, 0);
    snprintf(path, sizeof path, "%s/free_hugepages", dir);
    long fr = mb_read_long(path, 0);
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    long rv = mb_read_long(path, 0);
    long avail = fr - rv > 0 ? fr - rv : 0;
    long need = (long)(round_up(bytes, pg) / pg) * narrays;
    long target = nr + (need > avail ? need - avail : 0);
    if (target <= nr)
        target = nr + need; /* mmap failed despite the counters: ask for more */
    snprintf(reason, rlen,
             "%s: needs %ld huge pages of %lu kB (%d arrays x %ld) but %ld are "
             "available (nr_hugepages=%ld free_hugepages=%ld resv_hugepages=%ld); "
             "reserve them with: echo %ld | sudo tee %s/nr_hugepages%s",
             why, need, kb, narrays, need / narrays, avail, nr, fr, rv, target, dir,
             kind == MB_PAGES_HUGETLB_1G
                 ? " (1 GiB pages may need hugepagesz=1G hugepages=N on the kernel command line)"
                 : "");
}

int mb_pages_check(mb_pages_kind_t kind, size_t bytes, int narrays,
                   char *reason, size_t rlen)
{
    if (kind == MB_PAGES_4K)
        return MB_OK;
    if (kind == MB_PAGES_THP) {
        char buf[256];
        if (mb_read_text("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) != 0) {
            snprintf(reason, rlen, "thp: this kernel has no transparent huge pages");
            return MB_SKIPPED;
        }
        if (strstr(buf, "[never]")) {
            snprintf(reason, rlen,
                     "thp: transparent huge pages are disabled "
                     "(/sys/kernel/mm/transparent_hugepage/enabled is [never])");
            return MB_SKIPPED;
        }
        return MB_OK;
    }
    size_t pg = mb_page_bytes(kind);
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "/sys/kernel/mm/hugepages/hugepages-%lukB",
             (unsigned long)(pg >> 10));
    if (access(dir, F_OK) != 0) {
        snprintf(reason, rlen, "%s: this kernel/CPU offers no %lu kB huge pages (%s missing)",
                 pages_name(kind), (unsigned long)(pg >> 10), dir);
        return MB_SKIPPED;
    }
    snprintf(path, sizeof path, "%s/free_hugepages", dir);
    long fr = mb_read_long(path, 0);
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    long rv = mb_read_long(path, 0);
    long need = (long)(round_up(bytes, pg) / pg) * narrays;
    if (fr - rv < need) {
        hugetlb_shortage(kind, bytes, narrays, reason, rlen, pages_name(kind));
        return MB_SKIPPED;
    }
    return MB_OK;
}

int mb_map(mb_pages_kind_t kind, size_t bytes, int narrays, mb_mapping_t *m,
           char *reason, size_t rlen)
{
    size_t pg = mb_page_bytes(kind);
    size_t len = round_up(bytes, pg);
    m->addr = NULL;
    m->len = 0;
    m->used = bytes;
    if (kind == MB_PAGES_HUGETLB_2M || kind == MB_PAGES_HUGETLB_1G) {
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
                    (kind == MB_PAGES_HUGETLB_2M ? MAP_HUGE_2MB : MAP_HUGE_1GB);
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            if (e == ENOMEM) {
                hugetlb_shortage(kind, bytes, narrays, reason, rlen,
                                 "hugetlb mmap failed with ENOMEM");
                return MB_SKIPPED;
            }
            snprintf(reason, rlen, "mmap of %zu bytes with %s pages failed: %s", len,
                     pages_name(kind), strerror(e));
            return MB_FAILED;
        }
        m->addr = p;
        m->len = len;
        return MB_OK;
    }
    /* 4k and thp: anonymous mapping; thp aligned to a huge page by trimming */
    size_t thp = mb_thp_bytes();
    size_t extra = kind == MB_PAGES_THP ? thp : 0;
    void *p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(reason, rlen, "mmap of %zu bytes failed: %s", len + extra, strerror(errno));
        return MB_FAILED;
    }
    char *base = p;
    if (extra) {
        uintptr_t a = ((uintptr_t)p + thp - 1) & ~(uintptr_t)(thp - 1);
        size_t head = a - (uintptr_t)p, tail = extra - head;
        if (head)
            munmap(p, head);
        if (tail)
            munmap((char *)a + len, tail);
        base = (char *)a;
    }
    m->addr = base;
    m->len = len;
    int adv = kind == MB_PAGES_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
    if (madvise(base, len, adv) != 0) {
        snprintf(reason, rlen, "madvise(%s) failed: %s",
                 adv == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
                 strerror(errno));
        return kind == MB_PAGES_THP ? MB_SKIPPED : MB_FAILED;
    }
    return MB_OK;
}

void mb_unmap(mb_mapping_t *m)
{
    if (m->addr)
        munmap(m->addr, m->len);
    m->addr = NULL;
    m->len = 0;
}
