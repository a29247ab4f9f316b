/*
 * The loaded family's parts shared by loaded.c (the chaser, the run, its
 * records) and loaded_load.c (the load threads and their check).
 */
#ifndef MB_LOADED_H
#define MB_LOADED_H

#include <stddef.h>

#include "../harness/placement.h"
#include "../harness/types.h"
#include "chase_walk.h"

#define LOADED_SCALAR 3.0

/* the family's options, in mb_loaded_options[] order (loaded.c; the last
 * four: MB_CHASE_RANDOM_OPTIONS of chase_cycle.h) */
enum { OPT_DELAY, OPT_EVERY, OPT_GROUP, OPT_SEED, OPT_CHUNK_MS, OPT_SPACING };

/* per load thread */
typedef struct loader {
    mb_mapping_t maps[4];
    double *v[4];
    double bytes_window;   /* bytes moved while the chaser was timed */
    double secs_window;
    long long passes;      /* whole passes completed */
    double last_sum;       /* read: sum of the last whole pass */
    size_t pos;            /* elements done in the pass it stopped in */
    double part_sum;       /* read: sum of those */
    double delay_ns;       /* one injected delay, ns, measured on its CPU */
    char pad[64];
} loader_t;

enum { PH_START = 0, PH_WARM, PH_TIMED, PH_STOP };

/* One op's run: the chase, the load threads, and what they share. */
typedef struct loaded_op {
    mb_run_ctx_t *ctx;
    const mb_kernel_t *k;
    int mix;               /* the mix.c loop it runs (read: r1w0), or -1: triad */
    int sums;              /* read, r1w0: the load returns a sum */
    int narr;              /* the loader's own arrays */
    int nload;             /* load threads (1..nload) */
    size_t n;              /* elements per loader array */
    size_t block;          /* elements per block */
    double elem_bytes;     /* bytes moved per element (STREAM counting) */
    loader_t *L;
    const mb_mapping_t *map; /* the chase: nl slots of `spacing` bytes at base */
    char *base;
    unsigned *order;       /* the cycle's visiting order */
    size_t nl, line, spacing; /* line: the cache line (the loaders' blocks) */
    double core_ghz;       /* the chasing CPU's measured clock */
    double *secs, *sorted;
    mb_chase_walks_t wk;
    int phase;             /* written by the chaser, read by the loaders */
    int ready;             /* loaders that first-touched their arrays, then that count */
    double chase_t0, chase_t1;
} loaded_op_t;

/* Threads 1..nload: first touch, then blocks of the op with the injection
 * delay after each, counting the bytes moved while the chaser is timed. */
void mb_loaded_loader(loaded_op_t *lo, loader_t *me);
/* The load threads' arithmetic after the run: 1 when right, else 0 with why. */
int mb_loaded_check(const loaded_op_t *lo, char *why, size_t len);

#endif
