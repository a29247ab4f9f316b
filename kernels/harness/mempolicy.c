/*
 * membench placement, job 2: the NUMA memory policy.  Nodes resolved and
 * checked against sysfs, then mbind(2) through syscall(2), no libnuma
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

/* kernel ABI values (linux/mempolicy.h) */
#define MB_MPOL_DEFAULT 0
#define MB_MPOL_PREFERRED 1
#define MB_MPOL_BIND 2
#define MB_MPOL_INTERLEAVE 3
#define MB_MPOL_LOCAL 4
#define MB_MPOL_F_MEMS_ALLOWED (1 << 2)

#define NODEMASK_LONGS (MB_MAX_NODES / (8 * sizeof(unsigned long)))

/* ---------------------------------------------------------------- policy */

static int node_in_list_file(const char *path, int node, int dflt)
{
    char buf[4096];
    int v[MB_MAX_NODES];
    if (mb_read_text(path, buf, sizeof buf) != 0)
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
