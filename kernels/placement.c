/*
 * membench placement: affinity, memory policy, allocation, page sampling.
 * See placement.h.  Linux only; raw syscalls, no libnuma.
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

/* kernel ABI values (linux/mempolicy.h) */
#define MB_MPOL_DEFAULT 0
#define MB_MPOL_PREFERRED 1
#define MB_MPOL_BIND 2
#define MB_MPOL_INTERLEAVE 3
#define MB_MPOL_LOCAL 4
#define MB_MPOL_F_MEMS_ALLOWED (1 << 2)

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

#define MB_PAGE_4K ((size_t)4096)
#define MB_PAGE_2M ((size_t)2 << 20)
#define MB_PAGE_1G ((size_t)1 << 30)

#define NODEMASK_LONGS (MB_MAX_NODES / (8 * sizeof(unsigned long)))

/* ------------------------------------------------------------------ utils */

static int read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[got] = '\0';
    while (got > 0 && isspace((unsigned char)buf[got - 1]))
        buf[--got] = '\0';
    return 0;
}

static long read_long(const char *path, long dflt)
{
    char buf[64];
    if (read_text(path, buf, sizeof buf) != 0)
        return dflt;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || end == buf)
        return dflt;
    return v;
}

int mb_parse_list(const char *s, int *out, int max, int limit)
{
    int n = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    for (;;) {
        if (!isdigit((unsigned char)*p))
            return -1;
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (errno)
            return -1;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                return -1;
            errno = 0;
            hi = strtol(p, &end, 10);
            if (errno)
                return -1;
            p = end;
        }
        if (lo < 0 || hi < lo || hi >= limit)
            return -1;
        for (long v = lo; v <= hi; v++) {
            for (int i = 0; i < n; i++)
                if (out[i] == v)
                    return -1;
            if (n >= max)
                return -1;
            out[n++] = (int)v;
        }
        if (*p == '\0')
            return n;
        if (*p != ',')
            return -1;
        p++;
    }
}

void mb_format_list(const int *v, int n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off + 1 < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", v[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* ------------------------------------------------------------- topology */

int mb_cpu_node(int cpu)
{
    if (cpu < 0)
        return -1;
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int node = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int v;
        char extra;
        if (sscanf(e->d_name, "node%d%c", &v, &extra) == 1) {
            node = v;
            break;
        }
    }
    closedir(d);
    return node;
}

int mb_allowed_cpus(mb_cpu_t *out)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < MB_MAX_CPUS; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        char path[128];
        mb_cpu_t *x = &out[n++];
        x->cpu = c;
        x->node = mb_cpu_node(c);
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        x->package = (int)read_long(path, 0);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", c);
        x->die = (int)read_long(path, 0);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        x->core = (int)read_long(path, c);
    }
    mb_rank_smt(out, n);
    return n;
}

void mb_rank_smt(mb_cpu_t *out, int n)
{
    /* SMT index: rank by CPU number among the allowed CPUs of the same core */
    for (int i = 0; i < n; i++) {
        out[i].smt = 0;
        for (int j = 0; j < n; j++)
            if (out[j].package == out[i].package && out[j].die == out[i].die &&
                out[j].core == out[i].core && out[j].node == out[i].node &&
                out[j].cpu < out[i].cpu)
                out[i].smt++;
    }
}

static int cmp_close(const void *pa, const void *pb)
{
    const mb_cpu_t *a = pa, *b = pb;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    if (a->package != b->package) return a->package < b->package ? -1 : 1;
    if (a->die != b->die) return a->die < b->die ? -1 : 1;
    if (a->core != b->core) return a->core < b->core ? -1 : 1;
    if (a->smt != b->smt) return a->smt < b->smt ? -1 : 1;
    return a->cpu < b->cpu ? -1 : (a->cpu > b->cpu);
}

/* within a node: one CPU per core first, then second siblings, ... */
static int cmp_spread(const void *pa, const void *pb)
{
    const mb_cpu_t *a = pa, *b = pb;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    if (a->smt != b->smt) return a->smt < b->smt ? -1 : 1;
    if (a->package != b->package) return a->package < b->package ? -1 : 1;
    if (a->die != b->die) return a->die < b->die ? -1 : 1;
    if (a->core != b->core) return a->core < b->core ? -1 : 1;
    return a->cpu < b->cpu ? -1 : (a->cpu > b->cpu);
}

int mb_affinity_plan(mb_affinity_kind_t kind, const int *list, int nlist,
                     int threads, int *plan, char *reason, size_t rlen)
{
    static mb_cpu_t cpus[MB_MAX_CPUS];
    int n = mb_allowed_cpus(cpus);
    if (n <= 0) {
        snprintf(reason, rlen, "sched_getaffinity failed: %s", strerror(errno));
        return MB_FAILED;
    }
    int ids[MB_MAX_CPUS];
    for (int i = 0; i < n; i++)
        ids[i] = cpus[i].cpu;
    char allowed[2048];
    mb_format_list(ids, n, allowed, sizeof allowed);

    if (kind == MB_AFF_LIST) {
        if (threads > nlist) {
            snprintf(reason, rlen,
                     "%d threads but the affinity list names only %d CPUs",
                     threads, nlist);
            return MB_SKIPPED;
        }
        for (int i = 0; i < threads; i++) {
            int ok = 0;
            for (int j = 0; j < n; j++)
                ok |= ids[j] == list[i];
            if (!ok) {
                snprintf(reason, rlen,
                         "CPU %d is not among this process's allowed CPUs (%s)",
                         list[i], allowed);
                return MB_SKIPPED;
            }
            plan[i] = list[i];
        }
        return MB_OK;
    }
    if (threads > n) {
        snprintf(reason, rlen, "%d threads requested but only %d CPUs allowed (%s)",
                 threads, n, allowed);
        return MB_SKIPPED;
    }
    if (kind == MB_AFF_NONE)
        return MB_OK;
    mb_order_cpus(cpus, n, kind, threads, plan);
    return MB_OK;
}

void mb_order_cpus(mb_cpu_t *cpus, int n, mb_affinity_kind_t kind, int threads, int *plan)
{
    if (threads > n)
        threads = n;
    if (kind == MB_AFF_CLOSE) {
        qsort(cpus, (size_t)n, sizeof cpus[0], cmp_close);
        for (int i = 0; i < threads; i++)
            plan[i] = cpus[i].cpu;
        return;
    }
    /* spread: per-node order, then round-robin over nodes */
    qsort(cpus, (size_t)n, sizeof cpus[0], cmp_spread);
    int start[MB_MAX_CPUS + 1], nn = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || cpus[i].node != cpus[i - 1].node)
            start[nn++] = i;
    start[nn] = n;
    int t = 0;
    for (int round = 0; t < threads; round++)
        for (int g = 0; g < nn && t < threads; g++)
            if (start[g] + round < start[g + 1])
                plan[t++] = cpus[start[g] + round].cpu;
}

int mb_bind_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}

/* ---------------------------------------------------------------- policy */

static int node_in_list_file(const char *path, int node, int dflt)
{
    char buf[4096];
    int v[MB_MAX_NODES];
    if (read_text(path, buf, sizeof buf) != 0)
        return dflt;
    if (buf[0] == '\0')
        return 0;
    int n = mb_parse_list(buf, v, MB_MAX_NODES, MB_MAX_NODES);
    for (int i = 0; i < n; i++)
        if (v[i] == node)
            return 1;
    return 0;
}

static int node_exists(int node)
{
    char path[96];
    if (access("/sys/devices/system/node", F_OK) != 0)
        return node == 0;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
    return access(path, F_OK) == 0;
}

static int node_has_memory(int node)
{
    return node_in_list_file("/sys/devices/system/node/has_memory", node, node == 0);
}

/* nodes this process may allocate on (cpuset mems); all if unknown */
static int node_allowed(int node)
{
    unsigned long mask[NODEMASK_LONGS];
    memset(mask, 0, sizeof mask);
    if (syscall(SYS_get_mempolicy, NULL, mask, (unsigned long)MB_MAX_NODES + 1,
                NULL, (unsigned long)MB_MPOL_F_MEMS_ALLOWED) != 0)
        return 1;
    return (mask[node / (8 * sizeof(unsigned long))] >>
            (node % (8 * sizeof(unsigned long)))) & 1UL;
}

int mb_policy_resolve(mb_policy_t *p, char *reason, size_t rlen)
{
    if (p->kind == MB_POL_DEFAULT || p->kind == MB_POL_LOCAL)
        return MB_OK;
    if (p->all) {
        p->nnodes = 0;
        for (int node = 0; node < MB_MAX_NODES; node++)
            if (node_exists(node) && node_has_memory(node) && node_allowed(node))
                p->nodes[p->nnodes++] = node;
        if (p->nnodes == 0) {
            snprintf(reason, rlen, "no NUMA node with memory is available");
            return MB_SKIPPED;
        }
        return MB_OK;
    }
    for (int i = 0; i < p->nnodes; i++) {
        int node = p->nodes[i];
        if (!node_exists(node)) {
            snprintf(reason, rlen, "NUMA node %d does not exist on this machine", node);
            return MB_SKIPPED;
        }
        if (!node_has_memory(node)) {
            snprintf(reason, rlen, "NUMA node %d has no memory", node);
            return MB_SKIPPED;
        }
        if (!node_allowed(node)) {
            snprintf(reason, rlen,
                     "NUMA node %d is not in this process's allowed memory nodes", node);
            return MB_SKIPPED;
        }
    }
    return MB_OK;
}

int mb_policy_apply(void *addr, size_t len, const mb_policy_t *p,
                    char *reason, size_t rlen)
{
    unsigned long mask[NODEMASK_LONGS];
    int mode;
    switch (p->kind) {
    case MB_POL_DEFAULT:
        return MB_OK; /* first touch under the process default */
    case MB_POL_LOCAL:
        mode = MB_MPOL_LOCAL;
        break;
    case MB_POL_BIND:
        mode = MB_MPOL_BIND;
        break;
    case MB_POL_PREFERRED:
        mode = MB_MPOL_PREFERRED;
        break;
    case MB_POL_INTERLEAVE:
        mode = MB_MPOL_INTERLEAVE;
        break;
    default:
        snprintf(reason, rlen, "unknown memory policy");
        return MB_FAILED;
    }
    long rc;
    if (mode == MB_MPOL_LOCAL) {
        rc = syscall(SYS_mbind, addr, len, mode, NULL, 0UL, 0U);
    } else {
        memset(mask, 0, sizeof mask);
        for (int i = 0; i < p->nnodes; i++)
            mask[p->nodes[i] / (8 * sizeof(unsigned long))] |=
                1UL << (p->nodes[i] % (8 * sizeof(unsigned long)));
        /* the kernel ignores the last bit of maxnode: pass bits + 1 */
        rc = syscall(SYS_mbind, addr, len, mode, mask,
                     (unsigned long)MB_MAX_NODES + 1, 0U);
    }
    if (rc != 0) {
        snprintf(reason, rlen, "mbind(mode %d) failed: %s", mode, strerror(errno));
        return MB_FAILED;
    }
    return MB_OK;
}

/* ----------------------------------------------------------------- pages */

size_t mb_page_bytes(mb_pages_kind_t kind)
{
    switch (kind) {
    case MB_PAGES_THP:
    case MB_PAGES_HUGETLB_2M:
        return MB_PAGE_2M;
    case MB_PAGES_HUGETLB_1G:
        return MB_PAGE_1G;
    default:
        return MB_PAGE_4K;
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
    long nr = read_long(path, 0);
    snprintf(path, sizeof path, "%s/free_hugepages", dir);
    long fr = read_long(path, 0);
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    long rv = read_long(path, 0);
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
        if (read_text("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) != 0) {
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
    long fr = read_long(path, 0);
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    long rv = read_long(path, 0);
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
    /* 4k and thp: anonymous mapping; thp aligned to 2 MiB by trimming */
    size_t extra = kind == MB_PAGES_THP ? MB_PAGE_2M : 0;
    void *p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(reason, rlen, "mmap of %zu bytes failed: %s", len + extra, strerror(errno));
        return MB_FAILED;
    }
    char *base = p;
    if (extra) {
        uintptr_t a = ((uintptr_t)p + MB_PAGE_2M - 1) & ~(uintptr_t)(MB_PAGE_2M - 1);
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
        size_t npg = (m[i].used + MB_PAGE_4K - 1) / MB_PAGE_4K;
        size_t cnt = npg < (size_t)per_array ? npg : (size_t)per_array;
        for (size_t k = 0; k < cnt; k++) {
            size_t pgi = k * npg / cnt;
            pages[k] = (char *)m[i].addr + pgi * MB_PAGE_4K;
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
    long anon_huge = 0, hugetlb = 0, rss = 0, kps = 4;
    int have_hugetlb_fields = 0, in_vma = 0;

#define FLUSH_VMA()                                                           \
    do {                                                                      \
        if (in_vma && overlap > 0.0 && ve > vs) {                             \
            double kb = kps > 4 ? (have_hugetlb_fields ? (double)hugetlb      \
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
            kps = 4;
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

size_t mb_largest_cache_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_text(path, buf, sizeof buf) != 0)
            continue;
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (*end == 'K') v <<= 10;
        else if (*end == 'M') v <<= 20;
        else if (*end == 'G') v <<= 30;
        if (v > best)
            best = (size_t)v;
    }
    return best;
}
