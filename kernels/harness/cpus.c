/*
 * membench placement, job 1: threads.  The allowed CPUs and their topology
 * (sysfs), the close / spread / list binding plan, binding the calling
 * thread, and the cache sizes the defaults derive from (placement.h).
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
        x->package = (int)mb_read_long(path, 0);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/die_id", c);
        x->die = (int)mb_read_long(path, 0);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        x->core = (int)mb_read_long(path, c);
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

/* A power of two that can hold a pointer and divides a 4 KiB page: the
 * coherency line size of cpu0's first cache, 64 when unreadable or odd. */
size_t mb_line_bytes(void)
{
    long v = mb_read_long("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", 0);
    if (v < (long)sizeof(void *) || v > 4096 || (v & (v - 1)) != 0)
        v = 64;
    return (size_t)v;
}


/* The first thread t > 0 of a binding plan that runs on the same physical
 * core as thread `of` (its SMT sibling, or the same CPU); -1 when none. */
int mb_thread_on_core_of(const int *plan, int threads, int of)
{
    static mb_cpu_t cpus[MB_MAX_CPUS];
    int n = mb_allowed_cpus(cpus);
    const mb_cpu_t *own = NULL;
    for (int i = 0; i < n; i++)
        if (cpus[i].cpu == plan[of])
            own = &cpus[i];
    if (!own)
        return -1;
    for (int t = 0; t < threads; t++)
        for (int i = 0; i < n && t != of; i++)
            if (cpus[i].cpu == plan[t] && cpus[i].package == own->package &&
                cpus[i].die == own->die && cpus[i].core == own->core)
                return t;
    return -1;
}
