/*
 * membench harness options as data (cli.h): the harness's own option table,
 * and what prints it with the family's table (mb_family_t.options): --help,
 * generated from both tables and the family's ops, and --list-options, one
 * JSON object on stdout, so that callers read the flags, their defaults and
 * ranges from here instead of restating them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "table.h"

/* Order = enum mb_opt_id (cli.h).  min > max: no numeric range.  The
 * defaults of --variant and --prefetch-distance are the binary's, not the
 * harness's (it is compiled once for every variant): option_default. */
const mb_opt_t mb_harness_options[MB_O_COUNT] = {
    [MB_O_OP] = {"op", "LIST", "list", "all", 1, 0, NULL,
                 "comma list of the family's ops, or all"},
    [MB_O_THREADS] = {"threads", "N", "int", NULL, 1, 1000000, NULL,
                      "OpenMP threads (default: OpenMP's default, within the family's bounds)"},
    [MB_O_AFFINITY] = {"affinity", "A", "choice", "none", 1, 0,
                       "none,close,spread,compact,scatter,cpus:LIST",
                       "thread binding; compact = close, scatter = spread; LIST: CPUs like "
                       "0-3,8"},
    [MB_O_POLICY] = {"policy", "P", "choice", "default", 1, 0,
                     "default,local,bind:LIST,preferred:N,interleave:all,interleave:LIST",
                     "NUMA memory policy; LIST: nodes like 0-1,3"},
    [MB_O_PAGES] = {"pages", "P", "choice", "4k", 1, 0, "4k,thp,hugetlb-2m,hugetlb-1g",
                    "page size of the arrays"},
    [MB_O_INIT] = {"init", "I", "choice", "parallel", 1, 0, "parallel,serial,serial-arrays",
                   "first touch by the team (parallel), the calling thread element by element (serial) "
                   "or array by array (serial-arrays)"},
    [MB_O_SIZE] = {"size", "BYTES", "bytes", NULL, 1, 1LL << 50, NULL,
                   "bytes per array (at least one element); required unless the family "
                   "has a default (the pipeline always passes it, resolving size: auto "
                   "in membench.measure.auto_size)"},
    [MB_O_NTIMES] = {"ntimes", "K", "int", "10", 2, 100000000, NULL,
                     "iterations per op, the first dropped"},
    [MB_O_REPEAT] = {"repeat", "R", "int", "0", 1, 0, NULL, "integer, recorded only"},
    [MB_O_SYSTEM] = {"system", "NAME", "string", NULL, 1, 0, NULL,
                     "recorded (default: the short host name)"},
    [MB_O_VARIANT] = {"variant", "NAME", "string", NULL, 1, 0, NULL, "recorded"},
    [MB_O_PFDIST] = {"prefetch-distance", "BYTES", "int", NULL, 0, 1LL << 30, NULL,
                     "software-prefetch distance, bytes ahead of the loads (variants with "
                     "software prefetch; ignored by the others)"},
    [MB_O_CORRUPT] = {"test-corrupt", NULL, "flag", NULL, 1, 0, NULL,
                      "TEST ONLY: corrupt one element so validation fails"},
    [MB_O_LIST] = {"list", NULL, "flag", NULL, 1, 0, NULL, "print the kernel table and exit"},
    [MB_O_LIST_OPTIONS] = {"list-options", NULL, "flag", NULL, 1, 0, NULL,
                           "print the harness's and the family's options as JSON and exit"},
    [MB_O_HELP] = {"help", NULL, "flag", NULL, 1, 0, NULL, "print this text and exit"},
};

/* The default of harness option id as text; NULL: none or computed (help
 * says).  --size's is the family's (its table row), if it has one. */
static const char *option_default(int id, const mb_family_t *fam)
{
    if (id == MB_O_VARIANT)
        return mb_build.variant;
    if (id == MB_O_PFDIST)
        return mb_build.prefetch_distance_text;
    if (id == MB_O_SIZE)
        return fam->default_size;
    return mb_harness_options[id].def;
}

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
    kv_str(&b, "variant", mb_build.variant);
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
        kv_str(&b, "default", option_default(i, fam));
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

/* ------------------------------------------------------------ --help */

#define HELP_COL 19   /* where the text of a row starts */
#define HELP_WIDTH 80 /* where it wraps */

/* A range bound as text: powers of two from 2^30 as 2^k. */
static void bound_text(char *buf, size_t len, long long v)
{
    if (v >= (1LL << 30) && (v & (v - 1)) == 0)
        snprintf(buf, len, "2^%d", 63 - __builtin_clzll((unsigned long long)v));
    else
        snprintf(buf, len, "%lld", v);
}

/* Appends to buf (at most len bytes in all). */
__attribute__((format(printf, 3, 4))) static void cat(char *buf, size_t len, const char *fmt,
                                                      ...)
{
    size_t off = strlen(buf);
    if (off >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + off, len - off, fmt, ap);
    va_end(ap);
}

/* One row: "  --NAME METAVAR" and its text from column HELP_COL (on the next
 * line when the head is too wide), wrapped at word boundaries. */
static void help_row(FILE *f, const char *name, const char *metavar, const char *text)
{
    int col = fprintf(f, "  --%s%s%s", name, metavar ? " " : "", metavar ? metavar : "");
    if (col >= HELP_COL - 1) {
        fputc('\n', f);
        col = 0;
    }
    fprintf(f, "%*s", HELP_COL - col, "");
    col = HELP_COL;
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > HELP_COL && col + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

/* The text of a harness option: its help, then what the table says of its
 * values (choices, range, default).  --size's least value is one element of
 * the family, as in --list-options. */
static void harness_row_text(char *buf, size_t len, int id, const mb_family_t *fam)
{
    const mb_opt_t *o = &mb_harness_options[id];
    snprintf(buf, len, "%s", o->help);
    long long lo = id == MB_O_SIZE ? (long long)fam->elem_size : o->min;
    int ranged = lo <= o->max;
    if (ranged) {
        char a[32], b[32];
        bound_text(a, sizeof a, lo);
        bound_text(b, sizeof b, o->max);
        cat(buf, len, "; %s..%s", a, b);
    }
    if (o->choices) {
        cat(buf, len, ranged ? " or " : "; one of ");
        for (const char *c = o->choices; *c; c++)
            cat(buf, len, *c == ',' ? " | " : "%c", *c);
    }
    const char *def = option_default(id, fam);
    if (def)
        cat(buf, len, " (default %s)", def);
    if (id == MB_O_PFDIST)
        cat(buf, len, "; this variant: %s",
            mb_build.software_prefetch ? "prefetches" : "no software prefetch, ignored");
}

/* The family's ops, one line each, under --op. */
static void help_ops(FILE *f, const mb_family_t *fam)
{
    for (size_t i = 0; i < mb_kernel_count; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        if (strcmp(k->family, fam->name) == 0 && k->fn)
            fprintf(f, "%*s%-8s %s  (reads %d, writes %d%s%s%s)\n", HELP_COL + 2, "",
                    k->op, k->description, k->reads, k->writes,
                    k->nontemporal ? ", non-temporal stores" : "",
                    k->cpu_feature ? ", needs " : "", k->cpu_feature ? k->cpu_feature : "");
    }
}

/* What the family adds to the harness's options: bounds on --threads, the
 * pinning, its own options (from its table). */
static void help_family(FILE *f, const mb_family_t *fam)
{
    if (fam->min_threads > 0 || fam->max_threads > 0) {
        if (fam->max_threads == fam->min_threads)
            fprintf(f, "  (family %s: --threads must be %d)\n", fam->name, fam->min_threads);
        else if (fam->max_threads > 0)
            fprintf(f, "  (family %s: --threads must be %d..%d)\n", fam->name,
                    fam->min_threads, fam->max_threads);
        else
            fprintf(f, "  (family %s: --threads must be >= %d)\n", fam->name,
                    fam->min_threads);
    }
    if (fam->pin)
        fprintf(f, "  (family %s: with --affinity none thread t is still pinned, to the "
                   "t-th allowed CPU)\n", fam->name);
    if (!fam->options || !fam->options[0].name)
        return;
    fprintf(f, "family %s options:\n", fam->name);
    for (const mb_famopt_t *fo = fam->options; fo->name; fo++) {
        char text[1024], a[32], b[32];
        bound_text(a, sizeof a, fo->min);
        bound_text(b, sizeof b, fo->max);
        snprintf(text, sizeof text, "%s; %s..%s%s%s (default %lld)", fo->help, a, b,
                 fo->word ? " or " : "", fo->word ? fo->word : "", fo->def);
        help_row(f, fo->name, fo->metavar, text);
    }
}

void mb_print_help(FILE *f, const char *prog, const mb_family_t *fam)
{
    fprintf(f, "usage: %s [options]\n"
               "membench harness for kernel family '%s', variant '%s' (harness %s)\n"
               "Writes one JSON record per op per line to stdout; human text to stderr.\n\n",
            prog, fam->name, mb_build.variant, MB_HARNESS_VERSION);
    for (int id = 0; id < MB_O_COUNT; id++) {
        const mb_opt_t *o = &mb_harness_options[id];
        char text[1024];
        harness_row_text(text, sizeof text, id, fam);
        help_row(f, o->name, o->metavar, text);
        if (id == MB_O_OP)
            help_ops(f, fam);
    }
    help_family(f, fam);
    if (fam->example)
        fprintf(f, "\nexample: %s %s\n", prog, fam->example);
    fprintf(f, "\nexit codes: %d ok, %d failed, %d usage error, %d skipped\n", MB_OK, MB_FAILED,
            MB_USAGE_EXIT, MB_SKIPPED);
}
