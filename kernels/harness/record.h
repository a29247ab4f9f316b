/*
 * membench records: what one run found (run_t), and how it is written: one
 * JSON record per op per line on stdout (the record contract of DESIGN.md),
 * and a human summary on stderr.
 */
#ifndef MEMBENCH_RECORD_H
#define MEMBENCH_RECORD_H

#include "cli.h"
#include "types.h"
#include "placement.h"
#include "disturb.h"

#define MB_PAGE_SAMPLE 256      /* pages sampled per array by move_pages */

typedef struct run {
    int status;                  /* MB_OK / MB_FAILED / MB_SKIPPED (process) */
    char reason[1024];
    int op_status[MB_MAX_OPS];   /* per op (CPU features) */
    char op_reason[MB_MAX_OPS][256];
    int measured;                /* timed loop ran */
    int threads;                 /* obtained team size (or requested) */
    int *cpus_start, *cpus_end, *plan;
    int bound;
    double *secs[MB_MAX_OPS];    /* ntimes per op, [0] dropped */
    mb_validation_t val;
    int validated;
    long node_counts[MB_MAX_NODES];
    long pages_sampled;          /* -1 = not sampled */
    /* the same sample per array (a, b, c...): where each array spilled */
    long array_node_counts[MB_MAX_ARRAYS][MB_MAX_NODES];
    long array_pages_sampled[MB_MAX_ARRAYS];
    double hugepage_fraction;    /* <0 = unknown */
    double t_start, t_end;
    long long res_ns, gran_ns;
    char host[256];
    int emitted;                 /* records written by a run() family */
    int worst;                   /* worst status among them */
    mb_disturb_t disturb;        /* over the timed loop (bandwidth families) */
    /* per op and iteration ([0] dropped), read between iterations: the
     * longest any measuring thread waited for its CPU, the least any lost
     * to neither running nor waiting (s; NULL or -1 = not recorded), and
     * whether two measuring threads shared a CPU then */
    double *iter_wait[MB_MAX_OPS];
    double *iter_lost[MB_MAX_OPS];
    int *iter_shared[MB_MAX_OPS];
} run_t;

void set_reason(run_t *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The status of op i's record: its own (CPU feature) or the run's. */
int op_final_status(const run_t *r, int i);

/* The record of op i of a bandwidth family, after the run. */
void emit_record(const options_t *o, const run_t *r, int i);
/* A run() family's mb_run_ctx_t.emit: harness is an emit_state_t. */
typedef struct emit_state {
    const options_t *o;
    run_t *r;
} emit_state_t;
void emit_cb(mb_run_ctx_t *ctx, const mb_point_t *p);

void human_summary(const options_t *o, const run_t *r);

#endif
