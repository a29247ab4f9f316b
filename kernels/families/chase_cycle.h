/*
 * The chase's cycles (chase_cycle.c): built and checked for the chase and
 * loaded families and the tests.  Lines (pointer slots: the random cycle
 * passes its --spacing as `line`) are line bytes apart from base; every
 * slot holds one pointer (at its start) to the next slot of the cycle.
 * Declared weak like every family function in kernels.h, so a binary built
 * with only some family files still links.
 */
#ifndef MEMBENCH_CHASE_CYCLE_H
#define MEMBENCH_CHASE_CYCLE_H

#include <stddef.h>

#include "../harness/placement.h"
#include "families.h"

/* Pointer spacing of the random cycle (--spacing of chase and loaded): one
 * pointer per slot of this many bytes; a power of two from the line size to
 * a page.  The default is multichase's default stride. */
#define MB_CHASE_DEFAULT_SPACING 256
#define MB_CHASE_MAX_SPACING 4096
/* Bytes per group of the random chase: multichase's 64 pages. */
#define MB_CHASE_DEFAULT_GROUP (256 * 1024)
/* The random chase's option rows, written once for the two families that
 * chase (chase and loaded): they end both option tables, in this order, so
 * each family's enum of option indices ends GROUP, SEED, CHUNK_MS, SPACING.
 * membench's knob table (workflow/scripts/membench/plan/knobs.py) reads the
 * defaults through --list-options. */
#define MB_CHASE_RANDOM_OPTIONS                                                                  \
    {"group", "BYTES|full", MB_CHASE_DEFAULT_GROUP, 64, 1LL << 50,                               \
     "the random chase: bytes per group, a multiple of --spacing (pointers visited in random "   \
     "order inside a group, groups in random order); full = one random cycle over the whole "     \
     "working set", "full"},                                                                      \
    {"seed", "N", 20240601, 0, (1LL << 62), "random seed of the chase's permutation (recorded)",  \
     NULL},                                                                                       \
    {"chunk-ms", "MS", 10, 1, 10000, "minimum duration of one timed chase chunk", NULL},         \
    {"spacing", "BYTES", MB_CHASE_DEFAULT_SPACING, 0, 1LL << 40,                                 \
     "the random chase: bytes per pointer slot (one pointer per slot), a power of two from the " \
     "line size to a page; 256 = multichase's default stride", NULL}
/* The checks chase and loaded make alike of those options: 0 if --spacing
 * is allowed with this line size and --group (bytes; 0 = full) is a
 * multiple of it; else -1 after printing "membench <family>: invalid value
 * ... for --spacing (or --group); allowed: ...". */
MB_WEAK int mb_chase_check_options(const char *family, size_t spacing, size_t group, size_t line);
/* Byte offset of slot i's pointer from base: the slot's start plus one
 * whole 64-byte line of the slot (slots over 64 bytes), from a hash of the
 * slot index, so that every set of every cache level holds pointers.
 * Multichase's "mixer" (and this function until issue 30) took the line
 * from i mod 64 alone: slots 64 apart shared it, 45 of the 64 L1 sets were
 * used (the L1 plateau ended at 8 KiB of a 48 KiB L1) and, on physically
 * contiguous huge pages, a quarter of a 16-way 2 MiB L2's sets.  Here slot
 * i is page position r = i mod (4096 / slot) of page p; the pages come in
 * blocks of k = slot / 64 (the lines per slot), and the line is
 * (p mod k + hash(block, r)) mod k: in every block the k slots at one page
 * position take k different lines, so each block of k pages puts exactly
 * one pointer in every page-offset line (every set of a virtually indexed
 * L1), while the hash of the block makes the line of physically indexed
 * levels (L2, L3: the page frame's bits) vary from block to block.  The
 * visiting order is random, so no prefetcher sees the layout.  Pointers
 * all at slot starts read 55 % low at 256 bytes (issue 20). */
static inline size_t mb_chase_slot_at(size_t i, size_t slot)
{
    if (slot <= 64)
        return i * slot;
    size_t k = slot / 64; /* lines per slot: a power of two, at most 64 */
    size_t per_page = slot < 4096 ? 4096 / slot : 1;
    size_t r = i % per_page, page = i / per_page;
    unsigned long long z = (unsigned long long)((page / k) * per_page + r + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 29;
    return i * slot + (size_t)((page + z) & (k - 1)) * 64;
}
/* Random single cycle over the nl = bytes / line lines at base: lines in
 * random order within groups of group_bytes (whole lines, at least one; 0 =
 * one group: the whole working set), the groups in random order; even lines
 * first, then odd lines (see chase_cycle.c).  order[nl] receives the visiting
 * order (line indices).  Returns nl. */
MB_WEAK size_t mb_chase_build_random(char *base, size_t bytes, size_t line, size_t group_bytes,
                                     unsigned long long seed, unsigned *order);
/* Fixed stride: element i at base + i*stride points to element i+1 (the
 * last to the first).  Returns the number of elements. */
MB_WEAK size_t mb_chase_build_stride(char *base, size_t bytes, size_t stride);
/* 1 if the pointers at base form exactly the cycle order[0] -> order[1] ->
 * ... -> order[n-1] -> order[0] and order is a permutation of 0..n-1 (so
 * the cycle visits every line exactly once); else 0 with a reason. */
MB_WEAK int mb_chase_verify_order(const char *base, size_t n, size_t line,
                                  const unsigned *order, char *why, size_t wlen);
MB_WEAK int mb_chase_verify_stride(const char *base, size_t n, size_t stride,
                                   char *why, size_t wlen);
/* The memory of one chase run, shared by the chase and loaded families: the
 * chased mapping (policy applied before first touch, zeroed by the calling
 * thread, so its pages follow that thread's first touch), the visiting order
 * (one entry per line) and the chunk-time buffers (`chunks` doubles each:
 * MB_CHASE_CHUNK_CAP(ntimes) of chase_walk.h). */
typedef struct mb_chase_mem {
    mb_mapping_t map;
    unsigned *order; /* size / line entries */
    double *secs;    /* MB_CHASE_CHUNK_CAP(ntimes) chunk times */
    double *sorted;  /* scratch of the same size for the chunk statistics */
    size_t touched;  /* bytes of map first-touched so far (from its start) */
} mb_chase_mem_t;
/* Maps, applies ctx's policy, touches and allocates; MB_OK, or a status
 * with ctx->reason set and nothing left allocated. */
MB_WEAK int mb_chase_mem_open(mb_run_ctx_t *ctx, size_t size, size_t line, size_t chunks,
                              mb_chase_mem_t *m);
/* The same, touching nothing yet: the sweep touches as it grows
 * (mb_chase_mem_touch), so a sweep that stops early never allocates the rest. */
MB_WEAK int mb_chase_mem_open_untouched(mb_run_ctx_t *ctx, size_t size, size_t line,
                                        size_t chunks, mb_chase_mem_t *m);
/* First-touch the map up to `upto` bytes (by this, the chasing thread). */
MB_WEAK void mb_chase_mem_touch(mb_chase_mem_t *m, size_t upto);
MB_WEAK void mb_chase_mem_close(mb_chase_mem_t *m);
/* Test only: break the cycle (one line points to itself). */
MB_WEAK void mb_chase_break(char *base, size_t n, size_t line, const unsigned *order);

#endif
