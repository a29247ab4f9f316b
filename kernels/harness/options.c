/*
 * membench harness options as data (cli.h): the harness's own option table,
 * and --list-options, which prints it with the family's table
 * (mb_family_t.options) as one JSON object on stdout, so that callers read
 * the flags, their defaults and ranges from here instead of restating them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "table.h"
#include "variant.h"

#define MB_STR_(x) #x
#define MB_STR(x) MB_STR_(x)

/* Order = enum mb_opt_id (cli.h).  min > max: no numeric range. */
const mb_opt_t mb_harness_options[MB_O_COUNT] = {
    [MB_O_OP] = {"op", "LIST", "list", "all", 1, 0, NULL,
                 "comma list of the family's ops, or all"},
    [MB_O_THREADS] = {"threads", "N", "int", NULL, 1, 1000000, NULL,
                      "OpenMP threads (default: OpenMP's default, within the family's bounds)"},
    [MB_O_AFFINITY] = {"affinity", "A", "choice", "none", 1, 0,
                       "none,close,spread,compact,scatter,cpus:LIST",
                       "thread binding; compact = close, scatter = spread"},
    [MB_O_POLICY] = {"policy", "P", "choice", "default", 1, 0,
                     "default,local,bind:LIST,preferred:N,interleave:all,interleave:LIST",
                     "NUMA memory policy"},
    [MB_O_PAGES] = {"pages", "P", "choice", "4k", 1, 0, "4k,thp,hugetlb-2m,hugetlb-1g",
                    "page size of the arrays"},
    [MB_O_INIT] = {"init", "I", "choice", "parallel", 1, 0, "parallel,serial,serial-arrays",
                   "first touch by the team (parallel), the calling thread element by element (serial) "
                   "or array by array (serial-arrays)"},
    [MB_O_SIZE] = {"size", "BYTES", "bytes", "auto", 1, 1LL << 50, "auto",
                   "bytes per array (at least one element), or auto = max(4 x the sum "
                   "of all last-level caches, 256 MiB)"},
    [MB_O_NTIMES] = {"ntimes", "K", "int", "10", 2, 100000000, NULL,
                     "iterations per op, the first dropped"},
    [MB_O_REPEAT] = {"repeat", "R", "int", "0", 1, 0, NULL, "integer, recorded only"},
    [MB_O_SYSTEM] = {"system", "NAME", "string", NULL, 1, 0, NULL,
                     "recorded (default: the short host name)"},
    [MB_O_VARIANT] = {"variant", "NAME", "string", MB_VARIANT, 1, 0, NULL, "recorded"},
    [MB_O_PFDIST] = {"prefetch-distance", "BYTES", "int", MB_STR(MB_PF_DIST), 0, 1LL << 30, NULL,
                     "software-prefetch distance, bytes ahead of the loads (variants with "
                     "software prefetch; ignored by the others)"},
    [MB_O_CORRUPT] = {"test-corrupt", NULL, "flag", NULL, 1, 0, NULL,
                      "TEST ONLY: corrupt one element so validation fails"},
    [MB_O_LIST] = {"list", NULL, "flag", NULL, 1, 0, NULL, "print the kernel table and exit"},
    [MB_O_LIST_OPTIONS] = {"list-options", NULL, "flag", NULL, 1, 0, NULL,
                           "print the harness's and the family's options as JSON and exit"},
    [MB_O_HELP] = {"help", NULL, "flag", NULL, 1, 0, NULL, "the help text"},
};

static void open_obj(jbuf_t *b, int first)
{
    jb_raw(b, first ? "{" : ",{");
    b->need_comma = 0;
}

static void close_obj(jbuf_t *b)
{
    jb_raw(b, "}");
    b->need_comma = 1;
}

void mb_print_options(FILE *f, const mb_family_t *fam)
{
    jbuf_t b = {0};
    jb_raw(&b, "{");
    kv_int(&b, "schema", 1);
    kv_str(&b, "family", fam->name);
    kv_str(&b, "variant", MB_VARIANT);
    kv_str(&b, "harness_version", MB_HARNESS_VERSION);
    kv_int(&b, "usage_exit", MB_USAGE_EXIT);
    jb_key(&b, "ops");
    jb_raw(&b, "[");
    int first = 1;
    for (size_t i = 0; i < mb_kernel_count; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        if (strcmp(k->family, fam->name) == 0 && k->fn) {
            if (!first)
                jb_raw(&b, ",");
            jb_string(&b, k->op);
            first = 0;
        }
    }
    jb_raw(&b, "]");
    b.need_comma = 1;
    /* the family's bounds on --threads (0 = none) and whether affinity none
     * still pins */
    kv_int(&b, "min_threads", fam->min_threads);
    kv_int(&b, "max_threads", fam->max_threads);
    kv_bool(&b, "pin", fam->pin);

    jb_key(&b, "harness_options");
    jb_raw(&b, "[");
    for (int i = 0; i < MB_O_COUNT; i++) {
        const mb_opt_t *o = &mb_harness_options[i];
        open_obj(&b, i == 0);
        kv_str(&b, "name", o->name);
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", o->name);
        kv_str(&b, "flag", flag);
        kv_str(&b, "type", o->type);
        kv_str(&b, "metavar", o->metavar);
        kv_str(&b, "default", o->def);
        if (i == MB_O_SIZE) {
            kv_int(&b, "min", (long long)fam->elem_size); /* one element */
            kv_int(&b, "max", o->max);
        } else if (o->min <= o->max) {
            kv_int(&b, "min", o->min);
            kv_int(&b, "max", o->max);
        } else {
            kv_null(&b, "min");
            kv_null(&b, "max");
        }
        kv_str(&b, "choices", o->choices);
        kv_str(&b, "help", o->help);
        close_obj(&b);
    }
    jb_raw(&b, "]");
    b.need_comma = 1;

    jb_key(&b, "family_options");
    jb_raw(&b, "[");
    int n = 0;
    for (const mb_famopt_t *fo = fam->options; fo && fo->name; fo++, n++) {
        open_obj(&b, n == 0);
        kv_str(&b, "name", fo->name);
        char flag[96];
        snprintf(flag, sizeof flag, "--%s", fo->name);
        kv_str(&b, "flag", flag);
        kv_str(&b, "type", "int");
        kv_str(&b, "metavar", fo->metavar);
        kv_int(&b, "default", fo->def);
        kv_int(&b, "min", fo->min);
        kv_int(&b, "max", fo->max);
        /* a word the option also takes, read as 0 (e.g. --group full) */
        kv_str(&b, "word", fo->word);
        kv_str(&b, "help", fo->help);
        close_obj(&b);
    }
    jb_raw(&b, "]}\n");
    fputs(b.s, f);
    free(b.s);
}
