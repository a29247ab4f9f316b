/*
 * membench harness command line: the binary's identity, its options, the
 * help text and the usage errors (exit code 2, before anything runs).
 */
#ifndef MEMBENCH_CLI_H
#define MEMBENCH_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "types.h"
#include "placement.h"

#define MB_HARNESS_VERSION "1"
#define MB_MAX_OPS 32
#define MB_USAGE_EXIT 2

typedef struct options {
    const mb_kernel_t *ops[MB_MAX_OPS];
    int nops;
    int threads;
    mb_affinity_kind_t affinity;
    int aff_list[MB_MAX_CPUS];
    int aff_nlist;
    char affinity_str[512];
    mb_policy_t policy;
    char policy_str[512];
    mb_pages_kind_t pages;
    const char *pages_str;
    int init_parallel;
    const char *init_str;
    size_t size_bytes;          /* per array, whole elements */
    size_t elements;
    int ntimes;
    long long repeat;
    const char *system;         /* NULL until main sets the short host name */
    const char *variant;
    int test_corrupt;
    size_t prefetch_distance;   /* bytes; the built-in (mb_build) unless --prefetch-distance */
    int prefetch_distance_set;
    int threads_set;            /* --threads given */
    long long famopt[MB_MAX_FAMOPTS]; /* the family's own options (run families) */
    int nfamopt;
} options_t;

/* The harness's options, one row each (options.c); the family's own are
 * mb_family_t.options.  --help, --list-options, the parser and its error
 * messages read them. */
enum mb_opt_id {
    MB_O_OP, MB_O_THREADS, MB_O_AFFINITY, MB_O_POLICY, MB_O_PAGES, MB_O_INIT, MB_O_SIZE,
    MB_O_NTIMES, MB_O_REPEAT, MB_O_SYSTEM, MB_O_VARIANT, MB_O_PFDIST, MB_O_CORRUPT, MB_O_LIST,
    MB_O_LIST_OPTIONS, MB_O_HELP, MB_O_COUNT
};
typedef struct mb_opt {
    const char *name;       /* --NAME */
    const char *metavar;    /* NULL: a flag, no value */
    const char *type;       /* int | bytes | choice | list | string | flag */
    const char *def;        /* the default as text; NULL: none, computed (help says) or
                             * the binary's (options.c) */
    long long min, max;     /* range of int and bytes values; min > max: none */
    const char *choices;    /* the accepted words, comma separated; NULL: none */
    const char *help;
} mb_opt_t;
extern const mb_opt_t mb_harness_options[MB_O_COUNT];
/* --list-options: both option tables and the family's ops and thread bounds
 * as one JSON object. */
void mb_print_options(FILE *f, const mb_family_t *fam);
/* --help: the same tables as text (the family's ops under --op). */
void mb_print_help(FILE *f, const char *prog, const mb_family_t *fam);

/* The program name for messages, and the family this binary runs (main
 * sets both before parsing). */
extern const char *g_prog;
extern const mb_family_t *g_family;

/* The defaults, then argv over them.  --help and --list print and exit 0;
 * a bad value or an unknown option prints every allowed value and exits
 * MB_USAGE_EXIT. */
void parse_options(int argc, char **argv, options_t *o);

#endif
