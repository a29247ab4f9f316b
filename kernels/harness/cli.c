/*
 * membench harness command line (cli.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"

const char *g_prog = "membench";
const mb_family_t *g_family;

static void die_usage(const char *opt, const char *value, const char *allowed)
{
    fprintf(stderr, "%s: invalid value '%s' for %s; allowed: %s\n"
                    "(run %s --help for usage)\n",
            g_prog, value, opt, allowed, g_prog);
    exit(MB_USAGE_EXIT);
}

static void family_ops_text(char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "all");
    for (size_t i = 0; i < mb_kernel_count && off < len; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        if (strcmp(k->family, g_family->name) == 0 && k->fn)
            off += (size_t)snprintf(buf + off, len - off, ", %s", k->op);
    }
}

static int parse_ll(const char *s, long long *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int parse_size(const char *s, unsigned long long *out)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static void parse_ops(const char *arg, options_t *o)
{
    char allowed[1024];
    family_ops_text(allowed, sizeof allowed);
    o->nops = 0;
    if (strcmp(arg, "all") == 0) {
        for (size_t i = 0; i < mb_kernel_count && o->nops < MB_MAX_OPS; i++) {
            const mb_kernel_t *k = &mb_kernel_table[i];
            if (strcmp(k->family, g_family->name) == 0 && k->fn)
                o->ops[o->nops++] = k;
        }
        return;
    }
    char *copy = strdup(arg);
    if (!copy) {
        perror("strdup");
        exit(1);
    }
    char *save = NULL;
    int empty = 1;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        empty = 0;
        const mb_kernel_t *k = mb_find_kernel(g_family->name, tok);
        if (!k || !k->fn)
            die_usage("--op", arg, allowed);
        for (int i = 0; i < o->nops; i++)
            if (o->ops[i] == k)
                die_usage("--op", arg, "each op at most once; ops: see --help");
        if (o->nops >= MB_MAX_OPS)
            die_usage("--op", arg, "too many ops");
        o->ops[o->nops++] = k;
    }
    free(copy);
    if (empty || arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
        die_usage("--op", arg, allowed);
}

static void parse_affinity(const char *arg, options_t *o)
{
    static const char *allowed = "none, close (alias compact), spread (alias scatter), "
                                 "cpus:LIST (e.g. cpus:0-3,8)";
    o->aff_nlist = 0;
    if (strcmp(arg, "none") == 0)
        o->affinity = MB_AFF_NONE, snprintf(o->affinity_str, sizeof o->affinity_str, "none");
    else if (strcmp(arg, "close") == 0 || strcmp(arg, "compact") == 0)
        o->affinity = MB_AFF_CLOSE, snprintf(o->affinity_str, sizeof o->affinity_str, "close");
    else if (strcmp(arg, "spread") == 0 || strcmp(arg, "scatter") == 0)
        o->affinity = MB_AFF_SPREAD, snprintf(o->affinity_str, sizeof o->affinity_str, "spread");
    else if (strncmp(arg, "cpus:", 5) == 0) {
        int n = mb_parse_list(arg + 5, o->aff_list, MB_MAX_CPUS, MB_MAX_CPUS);
        if (n <= 0)
            die_usage("--affinity", arg, allowed);
        o->aff_nlist = n;
        o->affinity = MB_AFF_LIST;
        snprintf(o->affinity_str, sizeof o->affinity_str, "%s", arg);
    } else
        die_usage("--affinity", arg, allowed);
}

static void parse_policy(const char *arg, options_t *o)
{
    static const char *allowed = "default, local, bind:N[,M..], preferred:N, "
                                 "interleave:all, interleave:N,M.. (node lists like 0-1,3)";
    mb_policy_t *p = &o->policy;
    memset(p, 0, sizeof *p);
    snprintf(o->policy_str, sizeof o->policy_str, "%s", arg);
    const char *list = NULL;
    if (strcmp(arg, "default") == 0)
        p->kind = MB_POL_DEFAULT;
    else if (strcmp(arg, "local") == 0)
        p->kind = MB_POL_LOCAL;
    else if (strncmp(arg, "bind:", 5) == 0)
        p->kind = MB_POL_BIND, list = arg + 5;
    else if (strncmp(arg, "preferred:", 10) == 0)
        p->kind = MB_POL_PREFERRED, list = arg + 10;
    else if (strcmp(arg, "interleave:all") == 0)
        p->kind = MB_POL_INTERLEAVE, p->all = 1;
    else if (strncmp(arg, "interleave:", 11) == 0)
        p->kind = MB_POL_INTERLEAVE, list = arg + 11;
    else
        die_usage("--policy", arg, allowed);
    if (list) {
        int n = mb_parse_list(list, p->nodes, MB_MAX_NODES, MB_MAX_NODES);
        if (n <= 0 || (p->kind == MB_POL_PREFERRED && n != 1))
            die_usage("--policy", arg, allowed);
        p->nnodes = n;
    }
}

/* getopt values: 256 + the harness option's row, 512 + the family's */
enum { O_BASE = 256, O_FAMOPT = 512 };

/* getopt's table from both option tables (the harness's rows, then the
 * family's --NAME INTEGER), each family option at its default, and the
 * list of every flag for the messages. */
static void options_from_tables(options_t *o, struct option *longopts, char *all_opts,
                                size_t len)
{
    all_opts[0] = '\0';
    for (int i = 0; i < MB_O_COUNT; i++) {
        const mb_opt_t *ho = &mb_harness_options[i];
        longopts[i] = (struct option){ho->name, ho->metavar ? required_argument : no_argument,
                                      NULL, O_BASE + i};
        size_t off = strlen(all_opts);
        snprintf(all_opts + off, len - off, "%s--%s", i ? ", " : "", ho->name);
    }
    o->nfamopt = 0;
    for (const mb_famopt_t *fo = g_family->options; fo && fo->name && o->nfamopt < MB_MAX_FAMOPTS;
         fo++) {
        longopts[MB_O_COUNT + o->nfamopt] =
            (struct option){fo->name, required_argument, NULL, O_FAMOPT + o->nfamopt};
        o->famopt[o->nfamopt++] = fo->def;
        size_t off = strlen(all_opts);
        snprintf(all_opts + off, len - off, ", --%s", fo->name);
    }
    memset(&longopts[MB_O_COUNT + o->nfamopt], 0, sizeof longopts[0]);
}

/* An integer value of harness option id, within the table's range (none
 * when min > max); otherwise a usage error that names `allowed`. */
static long long int_option(int id, const char *arg, const char *allowed)
{
    const mb_opt_t *ho = &mb_harness_options[id];
    long long v;
    if (parse_ll(arg, &v) != 0 || (ho->min <= ho->max && (v < ho->min || v > ho->max))) {
        char opt[64];
        snprintf(opt, sizeof opt, "--%s", ho->name);
        die_usage(opt, arg, allowed);
    }
    return v;
}

static void parse_pages(const char *arg, options_t *o)
{
    if (strcmp(arg, "4k") == 0) o->pages = MB_PAGES_4K;
    else if (strcmp(arg, "thp") == 0) o->pages = MB_PAGES_THP;
    else if (strcmp(arg, "hugetlb-2m") == 0) o->pages = MB_PAGES_HUGETLB_2M;
    else if (strcmp(arg, "hugetlb-1g") == 0) o->pages = MB_PAGES_HUGETLB_1G;
    else die_usage("--pages", arg, "4k, thp, hugetlb-2m, hugetlb-1g");
    o->pages_str = arg;
}

static void parse_init(const char *arg, options_t *o)
{
    if (strcmp(arg, "parallel") == 0) o->init_parallel = 1;
    else if (strcmp(arg, "serial") == 0) o->init_parallel = 0;
    else if (strcmp(arg, "serial-arrays") == 0) o->init_parallel = MB_INIT_SERIAL_ARRAYS;
    else die_usage("--init", arg, "parallel, serial, serial-arrays");
    o->init_str = arg;
}

/* One harness option (its row id) with its value, if it takes one.  --size
 * is only kept (*size_arg): its range depends on the family's element. */
static void harness_option(int id, const char *arg, options_t *o, const char **size_arg)
{
    switch (id) {
    case MB_O_OP: parse_ops(arg, o); break;
    case MB_O_THREADS:
        o->threads = (int)int_option(id, arg, "an integer >= 1");
        o->threads_set = 1;
        break;
    case MB_O_AFFINITY: parse_affinity(arg, o); break;
    case MB_O_POLICY: parse_policy(arg, o); break;
    case MB_O_PAGES: parse_pages(arg, o); break;
    case MB_O_INIT: parse_init(arg, o); break;
    case MB_O_SIZE: *size_arg = arg; break;
    case MB_O_NTIMES: o->ntimes = (int)int_option(id, arg, "an integer >= 2"); break;
    case MB_O_REPEAT: o->repeat = int_option(id, arg, "an integer"); break;
    case MB_O_SYSTEM:
        if (!arg[0]) die_usage("--system", arg, "a non-empty name");
        o->system = arg;
        break;
    case MB_O_VARIANT:
        if (!arg[0]) die_usage("--variant", arg, "a non-empty name");
        o->variant = arg;
        break;
    case MB_O_CORRUPT: o->test_corrupt = 1; break;
    case MB_O_PFDIST:
        o->prefetch_distance =
            (size_t)int_option(id, arg, "an integer number of bytes, 0 to 2^30");
        o->prefetch_distance_set = 1;
        break;
    case MB_O_LIST:
        mb_print_table(stdout, g_family->name);
        exit(0);
    case MB_O_LIST_OPTIONS:
        mb_print_options(stdout, g_family);
        exit(0);
    case MB_O_HELP:
        mb_print_help(stdout, g_prog, g_family);
        exit(0);
    }
}

/* Family option i (its row in the family's table): an integer in its range,
 * or its word, which reads as 0 (e.g. --group full). */
static void family_option(int i, const char *arg, options_t *o)
{
    const mb_famopt_t *fo = &g_family->options[i];
    char opt[96], allowed[160];
    snprintf(opt, sizeof opt, "--%s", fo->name);
    snprintf(allowed, sizeof allowed, "an integer %lld..%lld%s%s", fo->min, fo->max,
             fo->word ? " or " : "", fo->word ? fo->word : "");
    long long v;
    if (fo->word && strcmp(arg, fo->word) == 0)
        v = 0;
    else if (parse_ll(arg, &v) != 0 || v < fo->min || v > fo->max)
        die_usage(opt, arg, allowed);
    o->famopt[i] = v;
}

/* --size: whole elements, at least one.  The pipeline always gives it:
 * `size: auto` is resolved on the host, in one place
 * (workflow/scripts/membench/measure/auto_size.py), never here.  By hand,
 * a family with a default_size (its table row) runs without it. */
static void derive_size(const char *size_arg, options_t *o)
{
    unsigned long long bytes;
    char allowed[160];
    snprintf(allowed, sizeof allowed, "a number of bytes between %zu and 2^50 (--size is required)",
             g_family->elem_size);
    if (!size_arg)
        size_arg = g_family->default_size;
    if (!size_arg)
        die_usage("--size", "", allowed);
    if (parse_size(size_arg, &bytes) != 0 || bytes < g_family->elem_size ||
        bytes > ((unsigned long long)1 << 50))
        die_usage("--size", size_arg, allowed);
    o->elements = (size_t)(bytes / g_family->elem_size);
    o->size_bytes = o->elements * g_family->elem_size;
}

/* Families that need a thread count (one chaser; chaser + loaders): an
 * unset --threads moves into their bounds, a given one outside is an error. */
static void check_family_threads(options_t *o)
{
    int tmin = g_family->min_threads, tmax = g_family->max_threads;
    if (!((tmin > 0 && o->threads < tmin) || (tmax > 0 && o->threads > tmax)))
        return;
    if (!o->threads_set) {
        o->threads = tmin > 0 && o->threads < tmin ? tmin : tmax;
        return;
    }
    char val[32], allowed[160];
    snprintf(val, sizeof val, "%d", o->threads);
    if (tmax == tmin)
        snprintf(allowed, sizeof allowed, "%d (family %s)", tmin, g_family->name);
    else if (tmax > 0)
        snprintf(allowed, sizeof allowed, "%d..%d (family %s)", tmin, tmax, g_family->name);
    else
        snprintf(allowed, sizeof allowed, "an integer >= %d (family %s)", tmin, g_family->name);
    die_usage("--threads", val, allowed);
}

/* argv over the defaults: each option through its table's row, then what
 * depends on more than one option (size in elements, the family's threads). */
static void parse_args(int argc, char **argv, options_t *o)
{
    static char all_opts[1024];
    static struct option longopts[MB_O_COUNT + MB_MAX_FAMOPTS + 1];
    options_from_tables(o, longopts, all_opts, sizeof all_opts);
    const char *size_arg = NULL;

    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":", longopts, NULL);
        if (c == -1)
            break;
        if (c >= O_BASE && c < O_BASE + MB_O_COUNT) {
            harness_option(c - O_BASE, optarg, o, &size_arg);
        } else if (c >= O_FAMOPT && c < O_FAMOPT + o->nfamopt) {
            family_option(c - O_FAMOPT, optarg, o);
        } else if (c == ':') {
            fprintf(stderr, "%s: option %s needs a value (run %s --help)\n", g_prog,
                    argv[optind - 1], g_prog);
            exit(MB_USAGE_EXIT);
        } else {
            fprintf(stderr, "%s: unknown option '%s'; allowed options: %s\n", g_prog,
                    argv[optind - 1], all_opts);
            exit(MB_USAGE_EXIT);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'; allowed options: %s\n", g_prog,
                argv[optind], all_opts);
        exit(MB_USAGE_EXIT);
    }
    derive_size(size_arg, o);
    check_family_threads(o);
}

void parse_options(int argc, char **argv, options_t *o)
{
    o->threads = omp_get_max_threads();
    o->affinity = MB_AFF_NONE;
    snprintf(o->affinity_str, sizeof o->affinity_str, "none");
    o->policy.kind = MB_POL_DEFAULT;
    snprintf(o->policy_str, sizeof o->policy_str, "default");
    o->pages = MB_PAGES_4K;
    o->pages_str = "4k";
    o->init_parallel = 1;
    o->init_str = "parallel";
    o->ntimes = 10;
    o->variant = mb_build.variant;
    o->prefetch_distance = mb_build.prefetch_distance;
    parse_ops("all", o);
    parse_args(argc, argv, o);
}
