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
#include "variant.h"

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

static void print_help(FILE *f)
{
    fprintf(f,
        "usage: %s [options]\n"
        "membench harness for kernel family '%s', variant '%s' (harness %s)\n"
        "Writes one JSON record per op per line to stdout; human text to stderr.\n\n"
        "  --op LIST        comma list of ops, or all (default all); ops:\n",
        g_prog, g_family->name, MB_VARIANT, MB_HARNESS_VERSION);
    for (size_t i = 0; i < mb_kernel_count; i++) {
        const mb_kernel_t *k = &mb_kernel_table[i];
        if (strcmp(k->family, g_family->name) == 0 && k->fn)
            fprintf(f, "                     %-8s %s  (reads %d, writes %d%s%s%s)\n",
                    k->op, k->description, k->reads, k->writes,
                    k->nontemporal ? ", non-temporal stores" : "",
                    k->cpu_feature ? ", needs " : "",
                    k->cpu_feature ? k->cpu_feature : "");
    }
    fprintf(f,
        "  --threads N      OpenMP threads, >= 1 (default: OpenMP's default)\n"
        "  --affinity A     none | close | spread | cpus:LIST (e.g. cpus:0-3,8);\n"
        "                   aliases compact=close, scatter=spread (default none)\n"
        "  --policy P       default | local | bind:N[,M..] | preferred:N |\n"
        "                   interleave:all | interleave:N,M.. (default default)\n"
        "  --pages P        4k | thp | hugetlb-2m | hugetlb-1g (default 4k)\n"
        "  --init I         parallel | serial | serial-arrays first touch (default parallel)\n"
        "  --size BYTES     bytes per array, or auto = max(4 x all LLCs, 256 MiB)\n"
        "  --ntimes K       iterations per op, >= 2 (default 10; first dropped)\n"
        "  --repeat R       integer, recorded only (default 0)\n"
        "  --system NAME    recorded (default: short host name)\n"
        "  --variant NAME   recorded (default %s)\n"
        "  --prefetch-distance BYTES\n"
        "                   software-prefetch distance, bytes ahead of the loads\n"
        "                   (this variant: %s; built-in %d)\n"
        "  --test-corrupt   TEST ONLY: corrupt one element so validation fails\n"
        "  --list           print the kernel table and exit\n"
        "  --list-options   print the harness's and the family's options as JSON and exit\n"
        "  --help           this text\n",
        MB_VARIANT, MB_SWPF ? "prefetches" : "no software prefetch, ignored",
        (int)MB_PF_DIST);
    if (g_family->min_threads > 0 || g_family->max_threads > 0) {
        if (g_family->max_threads == g_family->min_threads)
            fprintf(f, "  (family %s: --threads must be %d)\n", g_family->name,
                    g_family->min_threads);
        else if (g_family->max_threads > 0)
            fprintf(f, "  (family %s: --threads must be %d..%d)\n", g_family->name,
                    g_family->min_threads, g_family->max_threads);
        else
            fprintf(f, "  (family %s: --threads must be >= %d)\n", g_family->name,
                    g_family->min_threads);
    }
    if (g_family->pin)
        fprintf(f, "  (family %s: with --affinity none thread t is still pinned, to the "
                   "t-th allowed CPU)\n", g_family->name);
    if (g_family->options && g_family->options[0].name) {
        fprintf(f, "family %s options:\n", g_family->name);
        for (const mb_famopt_t *fo = g_family->options; fo->name; fo++)
            fprintf(f, "  --%s %s\n                   %s (default %lld, %lld..%lld)\n",
                    fo->name, fo->metavar, fo->help, fo->def, fo->min, fo->max);
    }
    fprintf(f, "\nexit codes: 0 ok, 1 failed, 2 usage error, 3 skipped\n");
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

static void parse_args(int argc, char **argv, options_t *o)
{
    /* getopt values: 256 + the harness option's row, 512 + the family's */
    enum { O_BASE = 256, O_FAMOPT = 512 /* + index of the family option */ };
    enum { O_OP = O_BASE + MB_O_OP, O_THREADS = O_BASE + MB_O_THREADS,
           O_AFF = O_BASE + MB_O_AFFINITY, O_POL = O_BASE + MB_O_POLICY,
           O_PAGES = O_BASE + MB_O_PAGES, O_INIT = O_BASE + MB_O_INIT,
           O_SIZE = O_BASE + MB_O_SIZE, O_NTIMES = O_BASE + MB_O_NTIMES,
           O_REPEAT = O_BASE + MB_O_REPEAT, O_SYSTEM = O_BASE + MB_O_SYSTEM,
           O_VARIANT = O_BASE + MB_O_VARIANT, O_PFDIST = O_BASE + MB_O_PFDIST,
           O_CORRUPT = O_BASE + MB_O_CORRUPT, O_LIST = O_BASE + MB_O_LIST,
           O_LIST_OPTIONS = O_BASE + MB_O_LIST_OPTIONS, O_HELP = O_BASE + MB_O_HELP };
    static char all_opts[1024];
    all_opts[0] = '\0';
    /* the harness's options (its table) plus the family's own (--NAME INTEGER) */
    enum { NCOMMON = MB_O_COUNT };
    static struct option longopts[NCOMMON + MB_MAX_FAMOPTS + 1];
    for (int i = 0; i < NCOMMON; i++) {
        const mb_opt_t *ho = &mb_harness_options[i];
        longopts[i] = (struct option){ho->name, ho->metavar ? required_argument : no_argument,
                                      NULL, O_BASE + i};
        size_t len = strlen(all_opts);
        snprintf(all_opts + len, sizeof all_opts - len, "%s--%s", i ? ", " : "", ho->name);
    }
    const char *size_arg = "auto";
    long long v;

    o->nfamopt = 0;
    for (const mb_famopt_t *fo = g_family->options; fo && fo->name && o->nfamopt < MB_MAX_FAMOPTS;
         fo++) {
        longopts[NCOMMON + o->nfamopt] =
            (struct option){fo->name, required_argument, NULL, O_FAMOPT + o->nfamopt};
        o->famopt[o->nfamopt++] = fo->def;
        size_t len = strlen(all_opts);
        snprintf(all_opts + len, sizeof all_opts - len, ", --%s", fo->name);
    }
    memset(&longopts[NCOMMON + o->nfamopt], 0, sizeof longopts[0]);

    opterr = 0;
    for (;;) {
        int idx = -1;
        int c = getopt_long(argc, argv, ":", longopts, &idx);
        if (c == -1)
            break;
        switch (c) {
        case O_OP: parse_ops(optarg, o); break;
        case O_THREADS:
            if (parse_ll(optarg, &v) != 0 || v < 1 || v > 1000000)
                die_usage("--threads", optarg, "an integer >= 1");
            o->threads = (int)v;
            o->threads_set = 1;
            break;
        case O_AFF: parse_affinity(optarg, o); break;
        case O_POL: parse_policy(optarg, o); break;
        case O_PAGES:
            if (strcmp(optarg, "4k") == 0) o->pages = MB_PAGES_4K;
            else if (strcmp(optarg, "thp") == 0) o->pages = MB_PAGES_THP;
            else if (strcmp(optarg, "hugetlb-2m") == 0) o->pages = MB_PAGES_HUGETLB_2M;
            else if (strcmp(optarg, "hugetlb-1g") == 0) o->pages = MB_PAGES_HUGETLB_1G;
            else die_usage("--pages", optarg, "4k, thp, hugetlb-2m, hugetlb-1g");
            o->pages_str = optarg;
            break;
        case O_INIT:
            if (strcmp(optarg, "parallel") == 0) o->init_parallel = 1;
            else if (strcmp(optarg, "serial") == 0) o->init_parallel = 0;
            else if (strcmp(optarg, "serial-arrays") == 0) o->init_parallel = MB_INIT_SERIAL_ARRAYS;
            else die_usage("--init", optarg, "parallel, serial, serial-arrays");
            o->init_str = optarg;
            break;
        case O_SIZE: size_arg = optarg; break;
        case O_NTIMES:
            if (parse_ll(optarg, &v) != 0 || v < 2 || v > 100000000)
                die_usage("--ntimes", optarg, "an integer >= 2");
            o->ntimes = (int)v;
            break;
        case O_REPEAT:
            if (parse_ll(optarg, &v) != 0)
                die_usage("--repeat", optarg, "an integer");
            o->repeat = v;
            break;
        case O_SYSTEM:
            if (!optarg[0]) die_usage("--system", optarg, "a non-empty name");
            o->system = optarg;
            break;
        case O_VARIANT:
            if (!optarg[0]) die_usage("--variant", optarg, "a non-empty name");
            o->variant = optarg;
            break;
        case O_CORRUPT: o->test_corrupt = 1; break;
        case O_PFDIST:
            if (parse_ll(optarg, &v) != 0 || v < 0 || v > (1LL << 30))
                die_usage("--prefetch-distance", optarg, "an integer number of bytes, 0 to 2^30");
            o->prefetch_distance = (size_t)v;
            o->prefetch_distance_set = 1;
            break;
        case O_LIST:
            mb_print_table(stdout, g_family->name);
            exit(0);
        case O_LIST_OPTIONS:
            mb_print_options(stdout, g_family);
            exit(0);
        case O_HELP:
            print_help(stdout);
            exit(0);
        case ':':
            fprintf(stderr, "%s: option %s needs a value (run %s --help)\n", g_prog,
                    argv[optind - 1], g_prog);
            exit(MB_USAGE_EXIT);
        default:
            if (c >= O_FAMOPT && c < O_FAMOPT + o->nfamopt) {
                const mb_famopt_t *fo = &g_family->options[c - O_FAMOPT];
                char opt[96], allowed[160];
                snprintf(opt, sizeof opt, "--%s", fo->name);
                snprintf(allowed, sizeof allowed, "an integer %lld..%lld%s%s", fo->min, fo->max,
                         fo->word ? " or " : "", fo->word ? fo->word : "");
                if (fo->word && strcmp(optarg, fo->word) == 0)
                    v = 0; /* the option's word reads as 0 (e.g. --group full) */
                else if (parse_ll(optarg, &v) != 0 || v < fo->min || v > fo->max)
                    die_usage(opt, optarg, allowed);
                o->famopt[c - O_FAMOPT] = v;
                break;
            }
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

    /* size: whole elements, at least one */
    unsigned long long bytes;
    if (strcmp(size_arg, "auto") == 0) {
        size_t llc4 = 4 * mb_llc_total_bytes();
        bytes = llc4 > ((size_t)256 << 20) ? llc4 : ((size_t)256 << 20);
    } else if (parse_size(size_arg, &bytes) != 0 || bytes < g_family->elem_size ||
               bytes > ((unsigned long long)1 << 50)) {
        char allowed[128];
        snprintf(allowed, sizeof allowed,
                 "a number of bytes between %zu and 2^50, or auto", g_family->elem_size);
        die_usage("--size", size_arg, allowed);
    }
    o->elements = (size_t)(bytes / g_family->elem_size);
    o->size_bytes = o->elements * g_family->elem_size;

    /* families that need a thread count (one chaser; chaser + loaders) */
    int tmin = g_family->min_threads, tmax = g_family->max_threads;
    if ((tmin > 0 && o->threads < tmin) || (tmax > 0 && o->threads > tmax)) {
        if (!o->threads_set) {
            o->threads = tmin > 0 && o->threads < tmin ? tmin : tmax;
        } else {
            char val[32], allowed[160];
            snprintf(val, sizeof val, "%d", o->threads);
            if (tmax == tmin)
                snprintf(allowed, sizeof allowed, "%d (family %s)", tmin, g_family->name);
            else if (tmax > 0)
                snprintf(allowed, sizeof allowed, "%d..%d (family %s)", tmin, tmax,
                         g_family->name);
            else
                snprintf(allowed, sizeof allowed, "an integer >= %d (family %s)", tmin,
                         g_family->name);
            die_usage("--threads", val, allowed);
        }
    }
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
    o->variant = MB_VARIANT;
    o->prefetch_distance = MB_PF_DIST;
    parse_ops("all", o);
    parse_args(argc, argv, o);
}
