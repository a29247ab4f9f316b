/*
 * The chase's cycles: build them, verify them, break them (for the tests).
 * Used by the chase family (chase.c), the loaded family (loaded.c) and the
 * C unit test in tests/test_chase.py.
 *
 * Random cycle: the working set is cut into slots of `line` bytes (the
 * chase's --spacing), one pointer per slot (mb_chase_slot_at: a
 * pseudo-random 64-byte line of the slot), and into groups of group_bytes;
 * the groups are visited in random order and inside a group its slots in
 * random order.  Slots under 128 bytes: the cycle is split in two passes,
 * even slots then odd slots (of every 128-byte pair), each with its own
 * random group order: the
 * adjacent-line ("buddy") prefetcher's pair line is then not used until
 * half a working set later, i.e. it is evicted again at DRAM-sized working
 * sets and cannot turn half of the misses into cache hits.
 * Verification checks the visiting order is a permutation and every pointer
 * leads to the next line of that order: one cycle through every line.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/placement.h"
#include "families.h"
#include "chase_cycle.h"

#ifndef MB_CHASE_PAIR_BYTES
#define MB_CHASE_PAIR_BYTES 128 /* the adjacent-line prefetcher's pair */
#endif

/* ----------------------------------------------------------- utilities */

int mb_chase_check_options(const char *family, size_t spacing, size_t group, size_t line)
{
    if (spacing < line || spacing > MB_CHASE_MAX_SPACING || (spacing & (spacing - 1)) != 0) {
        char allowed[128] = "";
        size_t len = 0;
        for (size_t s = line; s <= MB_CHASE_MAX_SPACING && len < sizeof allowed - 16; s *= 2)
            len += (size_t)snprintf(allowed + len, sizeof allowed - len, "%s%zu",
                                    s == line ? "" : ", ", s);
        fprintf(stderr, "membench %s: invalid value '%zu' for --spacing; allowed: %s (a power "
                        "of two from the cache line size, %zu bytes, to a page)\n", family,
                spacing, allowed, line);
        return -1;
    }
    if (group % spacing != 0) {
        fprintf(stderr, "membench %s: invalid value '%zu' for --group; allowed: a multiple of "
                        "the pointer spacing (%zu bytes), or full\n", family, group, spacing);
        return -1;
    }
    return 0;
}

static unsigned long long splitmix64(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in [0, n) (n > 0), Lemire's multiply-shift, rejection-free enough
 * for permutations (bias < n / 2^64) */
static size_t rnd_below(unsigned long long *s, size_t n)
{
    return (size_t)(((unsigned __int128)splitmix64(s) * n) >> 64);
}

static void shuffle(unsigned *a, size_t n, unsigned long long *s)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = rnd_below(s, i);
        unsigned t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* --------------------------------------------------------- the builders */

size_t mb_chase_build_random(char *base, size_t bytes, size_t line, size_t group_bytes,
                             unsigned long long seed, unsigned *order)
{
    size_t nl = bytes / line;
    if (nl == 0)
        return 0;
    size_t lpg = group_bytes ? group_bytes / line : nl; /* lines per group */
    if (lpg == 0)
        lpg = 1;
    if (lpg > nl)
        lpg = nl;
    size_t ng = (nl + lpg - 1) / lpg; /* the last group may be partial */
    unsigned *gorder = malloc(sizeof(unsigned) * ng);
    if (!gorder)
        return 0;
    unsigned long long s = seed ^ ((unsigned long long)bytes * 0xD1B54A32D192ED03ULL);
    size_t k = 0;
    /* slots under a 128-byte pair: two passes, even slots then odd slots
     * (nl == 1: one slot, pass 0); larger slots never share a pair, one pass
     * (a second one would only halve the loads per group and page) */
    unsigned passes = line < MB_CHASE_PAIR_BYTES ? 2 : 1;
    for (unsigned pass = 0; pass < passes; pass++) {
        for (size_t g = 0; g < ng; g++)
            gorder[g] = (unsigned)g;
        shuffle(gorder, ng, &s);
        for (size_t gi = 0; gi < ng; gi++) {
            size_t lo = (size_t)gorder[gi] * lpg, hi = lo + lpg < nl ? lo + lpg : nl;
            size_t start = k;
            /* the lines of this pass's parity (by address: the 128-byte pairs) */
            for (size_t l = lo + (passes == 2 && (lo & 1) != pass); l < hi; l += passes)
                order[k++] = (unsigned)l;
            shuffle(order + start, k - start, &s);
        }
    }
    free(gorder);
    for (size_t i = 0; i < nl; i++)
        *(char **)(base + mb_chase_slot_at(order[i], line)) =
            base + mb_chase_slot_at(order[i + 1 < nl ? i + 1 : 0], line);
    return nl;
}

size_t mb_chase_build_stride(char *base, size_t bytes, size_t stride)
{
    size_t n = bytes / stride;
    if (n == 0 && bytes >= sizeof(void *))
        n = 1;
    for (size_t i = 0; i < n; i++)
        *(char **)(base + i * stride) = base + (i + 1 < n ? i + 1 : 0) * stride;
    return n;
}

int mb_chase_verify_order(const char *base, size_t n, size_t line, const unsigned *order,
                          char *why, size_t wlen)
{
    if (n == 0) {
        snprintf(why, wlen, "validation failed: empty cycle");
        return 0;
    }
    uint64_t *seen = calloc((n + 63) / 64, sizeof(uint64_t));
    if (!seen) {
        snprintf(why, wlen, "validation failed: out of memory for the visited bitmap");
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        size_t l = order[i];
        if (l >= n || (seen[l / 64] >> (l % 64) & 1)) {
            snprintf(why, wlen, "validation failed: visiting order is not a permutation "
                                "(step %zu: line %zu %s)", i, l, l >= n ? "out of range"
                                                                       : "visited twice");
            ok = 0;
        }
        seen[l / 64] |= 1ULL << (l % 64);
    }
    free(seen);
    for (size_t i = 0; i < n && ok; i++) {
        const char *want = base + mb_chase_slot_at(order[i + 1 < n ? i + 1 : 0], line);
        const char *got = *(char *const *)(base + mb_chase_slot_at(order[i], line));
        if (got != want) {
            long long gl = (got >= base && got < base + n * line) ? (long long)((got - base) / (ptrdiff_t)line) : -1;
            snprintf(why, wlen, "validation failed: the cycle is broken at step %zu of %zu: "
                                "line %u points to line %lld, expected %zu", i, n, order[i], gl,
                     (size_t)order[i + 1 < n ? i + 1 : 0]);
            ok = 0;
        }
    }
    return ok;
}

int mb_chase_verify_stride(const char *base, size_t n, size_t stride, char *why, size_t wlen)
{
    if (n == 0) {
        snprintf(why, wlen, "validation failed: empty cycle");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const char *want = base + (i + 1 < n ? i + 1 : 0) * stride;
        if (*(char *const *)(base + i * stride) != want) {
            snprintf(why, wlen, "validation failed: the stride cycle is broken at element "
                                "%zu of %zu", i, n);
            return 0;
        }
    }
    return 1;
}

void mb_chase_break(char *base, size_t n, size_t line, const unsigned *order)
{
    if (n == 0)
        return;
    size_t l = order ? order[n / 2] : n / 2;
    char *p = base + (order ? mb_chase_slot_at(l, line) : l * line);
    *(char **)p = n > 1 ? p : p + 1; /* a self loop: the cycle ends early */
}

/* ------------------------------------------------------- run memory */

int mb_chase_mem_open(mb_run_ctx_t *ctx, size_t size, size_t line, size_t chunks,
                      mb_chase_mem_t *m)
{
    int st = mb_chase_mem_open_untouched(ctx, size, line, chunks, m);
    if (st == MB_OK)
        mb_chase_mem_touch(m, size);
    return st;
}

void mb_chase_mem_touch(mb_chase_mem_t *m, size_t upto)
{
    if (upto > m->map.len)
        upto = m->map.len;
    if (upto > m->touched) {
        memset((char *)m->map.addr + m->touched, 0, upto - m->touched);
        m->touched = upto;
    }
}

int mb_chase_mem_open_untouched(mb_run_ctx_t *ctx, size_t size, size_t line, size_t chunks,
                                mb_chase_mem_t *m)
{
    memset(m, 0, sizeof *m);
    int st = mb_map((mb_pages_kind_t)ctx->pages, size, 1, &m->map, ctx->reason,
                    sizeof ctx->reason);
    if (st == MB_OK)
        st = mb_policy_apply(m->map.addr, m->map.len, ctx->policy, ctx->reason,
                             sizeof ctx->reason);
    if (st != MB_OK)
        return st;
    m->order = malloc(sizeof(unsigned) * (size / line));
    m->secs = malloc(sizeof(double) * chunks);
    m->sorted = malloc(sizeof(double) * chunks);
    if (!m->order || !m->secs || !m->sorted) {
        mb_chase_mem_close(m);
        snprintf(ctx->reason, sizeof ctx->reason,
                 "out of memory for the visiting order and chunk times");
        return MB_FAILED;
    }
    return MB_OK;
}

void mb_chase_mem_close(mb_chase_mem_t *m)
{
    free(m->order);
    free(m->secs);
    free(m->sorted);
    m->order = NULL, m->secs = m->sorted = NULL;
    mb_unmap(&m->map);
}
