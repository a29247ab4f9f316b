/*
 * membench harness: one binary per (kernel family, variant).
 *
 * Parses the CLI, places threads and memory, times NTIMES iterations of each
 * requested op of the family (the first iteration is dropped), validates the
 * result and writes one JSON object per op per line to stdout.  Human text
 * goes to stderr only.
 *
 * Exit codes: 0 all ok, 1 failed (validation or unexpected error), 2 usage
 * error (no record), 3 skipped (cell cannot run on this host).
 *
 * Build (see the brief):
 *   gcc -std=gnu11 -O3 -march=native -fopenmp -Wall -Wextra
 *       -DMB_FAMILY='"stream"' -DMB_VARIANT='"default"' -DMB_CFLAGS='"..."'
 *       kernels/harness.c kernels/placement.c kernels/stream.c
 *       kernels/kernel_table.c -lm -o OUT
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"
#include "placement.h"

#ifndef MB_FAMILY
#define MB_FAMILY "stream"
#endif
#ifndef MB_VARIANT
#define MB_VARIANT "default"
#endif
#ifndef MB_CFLAGS
#define MB_CFLAGS "unknown"
#endif

#define MB_SCHEMA 1
#define MB_HARNESS_VERSION "1"
#define MB_MAX_OPS 32
#define MB_PAGE_SAMPLE 256      /* pages sampled per array by move_pages */
#define MB_MIN_TICKS 20         /* warn below this many timer ticks */
#define MB_USAGE_EXIT 2

/* ================================================================ options */

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
    const char *system;
    const char *variant;
    int test_corrupt;
    size_t prefetch_distance;   /* bytes; MB_PF_DIST unless --prefetch-distance */
    int prefetch_distance_set;
    int threads_set;            /* --threads given */
    long long famopt[MB_MAX_FAMOPTS]; /* the family's own options (run families) */
    int nfamopt;
} options_t;

static const char *g_prog = "membench";
static const mb_family_t *g_family;

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
        "  --init I         parallel | serial first touch (default parallel)\n"
        "  --size BYTES     bytes per array, or auto = max(4 x largest cache, 256 MiB)\n"
        "  --ntimes K       iterations per op, >= 2 (default 10; first dropped)\n"
        "  --repeat R       integer, recorded only (default 0)\n"
        "  --system NAME    recorded (default: short host name)\n"
        "  --variant NAME   recorded (default %s)\n"
        "  --prefetch-distance BYTES\n"
        "                   software-prefetch distance, bytes ahead of the loads\n"
        "                   (this variant: %s; built-in %d)\n"
        "  --test-corrupt   TEST ONLY: corrupt one element so validation fails\n"
        "  --list           print the kernel table and exit\n"
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
    enum { O_OP = 256, O_THREADS, O_AFF, O_POL, O_PAGES, O_INIT, O_SIZE, O_NTIMES,
           O_REPEAT, O_SYSTEM, O_VARIANT, O_CORRUPT, O_LIST, O_HELP, O_PFDIST,
           O_FAMOPT = 512 /* + index of the family option */ };
    static const struct option common_longopts[] = {
        {"op", required_argument, NULL, O_OP},
        {"threads", required_argument, NULL, O_THREADS},
        {"affinity", required_argument, NULL, O_AFF},
        {"policy", required_argument, NULL, O_POL},
        {"pages", required_argument, NULL, O_PAGES},
        {"init", required_argument, NULL, O_INIT},
        {"size", required_argument, NULL, O_SIZE},
        {"ntimes", required_argument, NULL, O_NTIMES},
        {"repeat", required_argument, NULL, O_REPEAT},
        {"system", required_argument, NULL, O_SYSTEM},
        {"variant", required_argument, NULL, O_VARIANT},
        {"test-corrupt", no_argument, NULL, O_CORRUPT},
        {"prefetch-distance", required_argument, NULL, O_PFDIST},
        {"list", no_argument, NULL, O_LIST},
        {"help", no_argument, NULL, O_HELP},
    };
    static char all_opts[1024] =
        "--op, --threads, --affinity, --policy, --pages, --init, --size, --ntimes, "
        "--repeat, --system, --variant, --prefetch-distance, --test-corrupt, --list, --help";
    const char *size_arg = "auto";
    long long v;

    /* the common options plus the family's own (--NAME INTEGER) */
    enum { NCOMMON = sizeof common_longopts / sizeof common_longopts[0] };
    static struct option longopts[NCOMMON + MB_MAX_FAMOPTS + 1];
    memcpy(longopts, common_longopts, sizeof common_longopts);
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
            else die_usage("--init", optarg, "parallel, serial");
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
                snprintf(allowed, sizeof allowed, "an integer %lld..%lld", fo->min, fo->max);
                if (parse_ll(optarg, &v) != 0 || v < fo->min || v > fo->max)
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
        size_t llc4 = 4 * mb_largest_cache_bytes();
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

/* ================================================================= JSON */

typedef struct jbuf {
    char *s;
    size_t len, cap;
    int need_comma;
} jbuf_t;

static void jb_raw(jbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_raw(jbuf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (w < 0)
            return;
        if ((size_t)w < b->cap - b->len) {
            b->len += (size_t)w;
            return;
        }
        size_t ncap = (b->cap + (size_t)w + 1) * 2;
        char *ns = realloc(b->s, ncap);
        if (!ns) {
            perror("realloc");
            exit(1);
        }
        b->s = ns;
        b->cap = ncap;
    }
}

/* length of a valid UTF-8 sequence at p, 0 if invalid */
static int utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80) return 1;
    int n = (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && p[0] < 0xC2) || (n == 4 && p[0] > 0xF4))
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0)))
        return 0;
    if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90)))
        return 0;
    return n;
}

static void jb_string(jbuf_t *b, const char *s)
{
    if (!s) {
        jb_raw(b, "null");
        return;
    }
    jb_raw(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        if (c == '"') jb_raw(b, "\\\"");
        else if (c == '\\') jb_raw(b, "\\\\");
        else if (c == '\n') jb_raw(b, "\\n");
        else if (c == '\r') jb_raw(b, "\\r");
        else if (c == '\t') jb_raw(b, "\\t");
        else if (c < 0x20 || c == 0x7f) jb_raw(b, "\\u%04x", c);
        else if (c >= 0x80) {
            int n = utf8_len(p);
            if (n == 0) {
                jb_raw(b, "\\ufffd"); /* invalid byte: replacement character */
                p++;
                continue;
            }
            jb_raw(b, "%.*s", n, (const char *)p);
            p += n;
            continue;
        } else
            jb_raw(b, "%c", c);
        p++;
    }
    jb_raw(b, "\"");
}

static void jb_key(jbuf_t *b, const char *k)
{
    if (b->need_comma)
        jb_raw(b, ",");
    b->need_comma = 1;
    jb_string(b, k);
    jb_raw(b, ":");
}

static void jb_double(jbuf_t *b, double x)
{
    if (!mb_isfinite(x)) {
        jb_raw(b, "null");
        return;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.17g", x);
    /* keep floats floats for readers: 1 -> 1.0 */
    if (!strpbrk(tmp, ".eE"))
        strcat(tmp, ".0");
    jb_raw(b, "%s", tmp);
}

static void kv_str(jbuf_t *b, const char *k, const char *v) { jb_key(b, k); jb_string(b, v); }
static void kv_int(jbuf_t *b, const char *k, long long v) { jb_key(b, k); jb_raw(b, "%lld", v); }
static void kv_null(jbuf_t *b, const char *k) { jb_key(b, k); jb_raw(b, "null"); }
static void kv_bool(jbuf_t *b, const char *k, int v) { jb_key(b, k); jb_raw(b, v ? "true" : "false"); }
static void kv_double(jbuf_t *b, const char *k, double v) { jb_key(b, k); jb_double(b, v); }
static void kv_ints(jbuf_t *b, const char *k, const int *v, int n)
{
    jb_key(b, k);
    jb_raw(b, "[");
    for (int i = 0; i < n; i++)
        jb_raw(b, "%s%d", i ? "," : "", v[i]);
    jb_raw(b, "]");
}
static void kv_doubles(jbuf_t *b, const char *k, const double *v, int n)
{
    jb_key(b, k);
    jb_raw(b, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            jb_raw(b, ",");
        jb_double(b, v[i]);
    }
    jb_raw(b, "]");
}

/* ================================================================ timing */

static long long now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Like STREAM's checktick: the smallest observed step of the clock over 20
 * distinct consecutive readings, in ns. */
static long long timer_granularity_ns(void)
{
    long long best = -1;
    for (int i = 0; i < 20; i++) {
        long long t0 = now_ns(CLOCK_MONOTONIC), t1;
        do
            t1 = now_ns(CLOCK_MONOTONIC);
        while (t1 == t0);
        if (best < 0 || t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}

/* ================================================================== run */

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
    double hugepage_fraction;    /* <0 = unknown */
    double t_start, t_end;
    long long res_ns, gran_ns;
    char host[256];
    int emitted;                 /* records written by a run() family */
    int worst;                   /* worst status among them */
} run_t;

/* Where a record comes from: host, process, build and the binding
 * variables the environment carried. */
static void kv_provenance(jbuf_t *b, const run_t *r)
{
    kv_str(b, "host", r->host);
    kv_int(b, "pid", (long long)getpid());
    kv_str(b, "compiler", __VERSION__);
    kv_str(b, "cflags", MB_CFLAGS);
    kv_str(b, "harness_version", MB_HARNESS_VERSION);
    kv_str(b, "omp_proc_bind", getenv("OMP_PROC_BIND"));
    kv_str(b, "omp_places", getenv("OMP_PLACES"));
}


static void set_reason(run_t *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(run_t *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->status = status;
}

static int op_final_status(const run_t *r, int i)
{
    if (r->op_status[i] != MB_OK)
        return r->op_status[i];
    return r->status;
}

static const char *status_name(int s)
{
    return s == MB_OK ? "ok" : s == MB_SKIPPED ? "skipped" : "failed";
}

/* Opens a record with the keys every record starts with: what was asked,
 * and the status (reason null when ok). */
static void kv_head(jbuf_t *b, const options_t *o, const char *op, int threads,
                    size_t size_bytes, size_t elements, int st,
                    const char *reason)
{
    jb_raw(b, "{");
    kv_int(b, "schema", MB_SCHEMA);
    kv_str(b, "system", o->system);
    kv_str(b, "kernel", g_family->name);
    kv_str(b, "variant", o->variant);
    kv_str(b, "op", op);
    kv_int(b, "threads", threads);
    kv_str(b, "affinity", o->affinity_str);
    kv_str(b, "policy", o->policy_str);
    kv_str(b, "pages", o->pages_str);
    kv_str(b, "init", o->init_str);
    kv_int(b, "size_bytes", (long long)size_bytes);
    kv_int(b, "array_elements", (long long)elements);
    kv_int(b, "arrays", g_family->narrays);
    kv_int(b, "ntimes", o->ntimes);
    kv_int(b, "repeat", o->repeat);
    kv_str(b, "status", status_name(st));
    if (st == MB_OK)
        kv_null(b, "reason");
    else
        kv_str(b, "reason", reason);
}

static void emit_record(const options_t *o, const run_t *r, int i)
{
    const mb_kernel_t *k = o->ops[i];
    int st = op_final_status(r, i);
    int ran = r->measured && r->op_status[i] == MB_OK;
    int placed = r->measured; /* threads and pages exist */
    long long bytes = (long long)(k->reads + k->writes) * (long long)g_family->elem_size *
                      (long long)o->elements;
    /* write-allocate: each written line is read first, unless the stores
     * are non-temporal or the kernel read that array anyway (rmw) */
    long long bytes_wa = bytes + ((k->nontemporal || k->rmw) ? 0 : (long long)k->writes *
                                  (long long)g_family->elem_size * (long long)o->elements);
    int nkeep = o->ntimes - 1;
    double tmin = 1e300, tsum = 0.0;
    if (ran)
        for (int j = 1; j < o->ntimes; j++) {
            tmin = fmin(tmin, r->secs[i][j]);
            tsum += r->secs[i][j];
        }
    int report_bw = ran && st == MB_OK;

    jbuf_t b = {0};
    kv_head(&b, o, k->op, r->threads, o->size_bytes, o->elements, st,
            r->op_status[i] != MB_OK ? r->op_reason[i] : r->reason);
    if (report_bw) {
        kv_double(&b, "gbps", (double)bytes / tmin / 1e9);
        kv_double(&b, "gbps_mean", (double)bytes / (tsum / nkeep) / 1e9);
        kv_double(&b, "gbps_wa", (double)bytes_wa / tmin / 1e9);
    } else {
        kv_null(&b, "gbps");
        kv_null(&b, "gbps_mean");
        kv_null(&b, "gbps_wa");
    }
    kv_int(&b, "bytes_per_iter", bytes);
    kv_int(&b, "bytes_per_iter_wa", bytes_wa);
    kv_bool(&b, "nontemporal", k->nontemporal);
    /* the distance the kernel used; null when it has no software prefetch */
    if (MB_SWPF)
        kv_int(&b, "prefetch_distance", (long long)o->prefetch_distance);
    else
        kv_null(&b, "prefetch_distance");
    kv_str(&b, "cpu_feature", k->cpu_feature);
    if (report_bw)
        kv_doubles(&b, "seconds", r->secs[i] + 1, nkeep);
    else
        kv_doubles(&b, "seconds", NULL, 0);
    if (ran && r->validated) {
        kv_bool(&b, "valid", r->val.ok);
        kv_double(&b, "max_rel_error", r->val.max_rel_error);
    } else {
        kv_null(&b, "valid");
        kv_null(&b, "max_rel_error");
    }
    if (placed) {
        int *nodes = calloc((size_t)r->threads + 1, sizeof(int));
        int migrated = 0;
        for (int t = 0; t < r->threads; t++) {
            nodes[t] = mb_cpu_node(r->cpus_end[t]);
            migrated |= r->cpus_end[t] != r->cpus_start[t];
        }
        kv_ints(&b, "cpus", r->cpus_end, r->threads);
        kv_ints(&b, "cpus_start", r->cpus_start, r->threads);
        kv_ints(&b, "cpu_nodes", nodes, r->threads);
        kv_bool(&b, "migrated", migrated);
        if (r->bound)
            kv_ints(&b, "cpus_bound", r->plan, r->threads);
        else
            kv_null(&b, "cpus_bound");
        free(nodes);
        jb_key(&b, "page_nodes");
        jb_raw(&b, "{");
        int first = 1;
        for (int n = 0; n < MB_MAX_NODES && r->pages_sampled > 0; n++)
            if (r->node_counts[n]) {
                jb_raw(&b, "%s\"%d\":", first ? "" : ",", n);
                jb_double(&b, (double)r->node_counts[n] / (double)r->pages_sampled);
                first = 0;
            }
        jb_raw(&b, "}");
        if (r->pages_sampled >= 0)
            kv_int(&b, "pages_sampled", r->pages_sampled);
        else
            kv_null(&b, "pages_sampled");
        kv_double(&b, "hugepage_fraction", r->hugepage_fraction >= 0 ? r->hugepage_fraction : NAN);
    } else {
        kv_ints(&b, "cpus", NULL, 0);
        kv_ints(&b, "cpus_start", NULL, 0);
        kv_ints(&b, "cpu_nodes", NULL, 0);
        kv_null(&b, "migrated");
        kv_null(&b, "cpus_bound");
        jb_key(&b, "page_nodes");
        jb_raw(&b, "{}");
        kv_null(&b, "pages_sampled");
        kv_null(&b, "hugepage_fraction");
    }
    kv_double(&b, "t_start", r->t_start);
    kv_double(&b, "t_end", r->t_end);
    if (placed) {
        kv_int(&b, "timer_resolution_ns", r->res_ns);
        kv_int(&b, "timer_granularity_ns", r->gran_ns);
    } else {
        kv_null(&b, "timer_resolution_ns");
        kv_null(&b, "timer_granularity_ns");
    }
    if (report_bw && r->gran_ns > 0)
        kv_double(&b, "min_ticks", tmin * 1e9 / (double)r->gran_ns);
    else
        kv_null(&b, "min_ticks");
    kv_provenance(&b, r);
    jb_raw(&b, "}\n");
    fputs(b.s, stdout);
    free(b.s);
}

/* One record of a run() family: the usual keys from the process and the
 * point, then the point's extra keys. */
static void emit_point(const options_t *o, run_t *r, const mb_point_t *p)
{
    int nt = r->threads;
    int ok = p->status == MB_OK;
    int *cpus_end = calloc((size_t)nt, sizeof(int));
    if (!cpus_end) {
        perror("calloc");
        exit(MB_FAILED);
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num();
        if (t < nt)
            cpus_end[t] = sched_getcpu();
    }
    double tmin = 1e300;
    for (int j = 0; j < p->nsecs; j++)
        tmin = fmin(tmin, p->secs[j]);

    jbuf_t b = {0};
    kv_head(&b, o, p->op->op, nt, p->size_bytes, p->elements, p->status, p->reason);
    kv_double(&b, "gbps", ok ? p->gbps : NAN);
    kv_double(&b, "gbps_mean", ok ? p->gbps_mean : NAN);
    kv_double(&b, "gbps_wa", ok ? p->gbps_wa : NAN);
    if (p->bytes_per_iter >= 0)
        kv_int(&b, "bytes_per_iter", p->bytes_per_iter);
    else
        kv_null(&b, "bytes_per_iter");
    if (p->bytes_per_iter_wa >= 0)
        kv_int(&b, "bytes_per_iter_wa", p->bytes_per_iter_wa);
    else
        kv_null(&b, "bytes_per_iter_wa");
    kv_bool(&b, "nontemporal", p->op->nontemporal);
    kv_null(&b, "prefetch_distance");
    kv_str(&b, "cpu_feature", p->op->cpu_feature);
    kv_doubles(&b, "seconds", ok ? p->secs : NULL, ok ? p->nsecs : 0);
    if (p->valid >= 0)
        kv_bool(&b, "valid", p->valid);
    else
        kv_null(&b, "valid");
    kv_null(&b, "max_rel_error");
    int *nodes = calloc((size_t)nt + 1, sizeof(int));
    int migrated = 0;
    for (int t = 0; t < nt; t++) {
        nodes[t] = mb_cpu_node(cpus_end[t]);
        migrated |= cpus_end[t] != r->cpus_start[t];
    }
    kv_ints(&b, "cpus", cpus_end, nt);
    kv_ints(&b, "cpus_start", r->cpus_start, nt);
    kv_ints(&b, "cpu_nodes", nodes, nt);
    kv_bool(&b, "migrated", migrated);
    if (r->bound)
        kv_ints(&b, "cpus_bound", r->plan, nt);
    else
        kv_null(&b, "cpus_bound");
    free(nodes);
    long counts[MB_MAX_NODES];
    memset(counts, 0, sizeof counts);
    long sampled = p->nmaps > 0 ? mb_sample_page_nodes(p->maps, p->nmaps, MB_PAGE_SAMPLE, counts)
                                : -1;
    jb_key(&b, "page_nodes");
    jb_raw(&b, "{");
    int first = 1;
    for (int n = 0; n < MB_MAX_NODES && sampled > 0; n++)
        if (counts[n]) {
            jb_raw(&b, "%s\"%d\":", first ? "" : ",", n);
            jb_double(&b, (double)counts[n] / (double)sampled);
            first = 0;
        }
    jb_raw(&b, "}");
    if (sampled >= 0)
        kv_int(&b, "pages_sampled", sampled);
    else
        kv_null(&b, "pages_sampled");
    double huge = p->nmaps > 0 ? mb_hugepage_fraction(p->maps, p->nmaps) : -1.0;
    kv_double(&b, "hugepage_fraction", huge >= 0 ? huge : NAN);
    kv_double(&b, "t_start", r->t_start);
    kv_double(&b, "t_end", now_unix());
    kv_int(&b, "timer_resolution_ns", r->res_ns);
    kv_int(&b, "timer_granularity_ns", r->gran_ns);
    if (ok && p->nsecs > 0 && r->gran_ns > 0)
        kv_double(&b, "min_ticks", tmin * 1e9 / (double)r->gran_ns);
    else
        kv_null(&b, "min_ticks");
    kv_provenance(&b, r);
    for (int i = 0; i < p->nextra; i++) {
        const mb_kv_t *x = &p->extra[i];
        switch (x->type) {
        case MB_KV_INT: kv_int(&b, x->key, x->i); break;
        case MB_KV_DBL: kv_double(&b, x->key, x->d); break;
        case MB_KV_STR: kv_str(&b, x->key, x->s); break;
        case MB_KV_BOOL: kv_bool(&b, x->key, (int)x->i); break;
        default: kv_null(&b, x->key); break;
        }
    }
    jb_raw(&b, "}\n");
    fputs(b.s, stdout);
    fflush(stdout);
    free(b.s);
    free(cpus_end);
    r->emitted++;
    if (p->status == MB_FAILED || (p->status == MB_SKIPPED && r->worst == MB_OK))
        r->worst = p->status;
}

typedef struct emit_state {
    const options_t *o;
    run_t *r;
} emit_state_t;

static void emit_cb(mb_run_ctx_t *ctx, const mb_point_t *p)
{
    emit_state_t *es = ctx->harness;
    emit_point(es->o, es->r, p);
}

static void human_summary(const options_t *o, const run_t *r)
{
    FILE *f = stderr;
    double mib = (double)o->size_bytes / 1048576.0;
    fprintf(f, "-------------------------------------------------------------\n");
    fprintf(f, "membench %s (variant %s, harness %s) on %s, pid %d\n", g_family->name,
            o->variant, MB_HARNESS_VERSION, r->host, (int)getpid());
    fprintf(f, "Array size = %zu elements, %.1f MiB per array, %d arrays, %.1f MiB total\n",
            o->elements, mib, g_family->narrays, mib * g_family->narrays);
    fprintf(f, "Each op ran %d times; statistics over iterations 2..%d\n", o->ntimes, o->ntimes);
    fprintf(f, "Threads %d, affinity %s, policy %s, pages %s, init %s\n", r->threads,
            o->affinity_str, o->policy_str, o->pages_str, o->init_str);
    if (MB_SWPF)
        fprintf(f, "Software prefetch %zu bytes ahead%s\n", o->prefetch_distance,
                o->prefetch_distance_set ? " (--prefetch-distance)" : " (built-in)");
    else if (o->prefetch_distance_set)
        fprintf(f, "--prefetch-distance ignored: variant %s has no software prefetch\n",
                o->variant);
    if (g_family->run)
        fprintf(f, "%d records written (one line each on stdout)\n", r->emitted);
    if (r->measured && !g_family->run) {
        fprintf(f, "CPUs (start -> end):");
        for (int t = 0; t < r->threads; t++)
            fprintf(f, " %d->%d", r->cpus_start[t], r->cpus_end[t]);
        fprintf(f, "\nPages: %ld sampled, huge-page fraction %.3f\n", r->pages_sampled,
                r->hugepage_fraction);
        fprintf(f, "Timer: resolution %lld ns, granularity %lld ns (CLOCK_MONOTONIC)\n",
                r->res_ns, r->gran_ns);
        fprintf(f, "%-10s %16s %12s %12s %12s\n", "Function", "Best Rate GB/s",
                "Avg time", "Min time", "Max time");
        for (int i = 0; i < o->nops; i++) {
            if (r->op_status[i] != MB_OK) {
                fprintf(f, "%-10s skipped: %s\n", o->ops[i]->op, r->op_reason[i]);
                continue;
            }
            const mb_kernel_t *k = o->ops[i];
            double mn = 1e300, mx = 0, sum = 0;
            for (int j = 1; j < o->ntimes; j++) {
                mn = fmin(mn, r->secs[i][j]);
                mx = fmax(mx, r->secs[i][j]);
                sum += r->secs[i][j];
            }
            double bytes = (double)(k->reads + k->writes) * (double)g_family->elem_size *
                           (double)o->elements;
            fprintf(f, "%-10s %16.1f %12.6f %12.6f %12.6f\n", k->op, bytes / mn / 1e9,
                    sum / (o->ntimes - 1), mn, mx);
            if (r->gran_ns > 0 && mn * 1e9 / (double)r->gran_ns < MB_MIN_TICKS)
                fprintf(f, "WARNING: %s: min time is only %.1f timer ticks (< %d); "
                           "use larger arrays\n",
                        k->op, mn * 1e9 / (double)r->gran_ns, MB_MIN_TICKS);
        }
        if (r->validated)
            fprintf(f, "%s (max relative error %.3g)\n",
                    r->val.ok ? "Solution validates" : r->val.reason, r->val.max_rel_error);
    }
    if (r->status != MB_OK)
        fprintf(f, "%s: %s\n", status_name(r->status), r->reason);
    fprintf(f, "-------------------------------------------------------------\n");
}

/* Allocation, placement, timed loop, validation.  Sets r->status on error. */
static void measure(const options_t *o, run_t *r, mb_mapping_t *maps, mb_arrays_t *A)
{
    int nt = o->threads;
    int nrun = 0;
    for (int i = 0; i < o->nops; i++)
        nrun += r->op_status[i] == MB_OK;
    if (nrun == 0) {
        set_reason(r, MB_SKIPPED, "no requested op can run on this CPU");
        return;
    }

    /* -- feasibility: CPUs, nodes, pages -- */
    char why[1024];
    int st = mb_affinity_plan(o->affinity, o->aff_list, o->aff_nlist, nt, r->plan, why,
                              sizeof why);
    if (st != MB_OK) {
        set_reason(r, st, "%s", why);
        return;
    }
    /* pinning families: affinity none -> thread t on the t-th allowed CPU */
    int pinned = 0;
    if (o->affinity == MB_AFF_NONE && g_family->pin) {
        static mb_cpu_t allowed[MB_MAX_CPUS];
        int na = mb_allowed_cpus(allowed);
        if (na < nt) {
            set_reason(r, MB_SKIPPED, "%d threads need %d CPUs to pin to, %d allowed", nt, nt,
                       na < 0 ? 0 : na);
            return;
        }
        for (int t = 0; t < nt; t++)
            r->plan[t] = allowed[t].cpu;
        pinned = 1;
    }
    mb_policy_t pol = o->policy;
    st = mb_policy_resolve(&pol, why, sizeof why);
    if (st != MB_OK) {
        set_reason(r, st, "%s", why);
        return;
    }
    st = mb_pages_check(o->pages, o->size_bytes, g_family->narrays, why, sizeof why);
    if (st != MB_OK) {
        set_reason(r, st, "%s", why);
        return;
    }

    /* -- threads: bind each one to its CPU inside the first parallel region -- */
    omp_set_dynamic(0);
    omp_set_num_threads(nt);
    r->bound = o->affinity != MB_AFF_NONE || pinned;
    int team = 0;
    int *bind_err = calloc((size_t)nt, sizeof(int));
#pragma omp parallel
    {
        int t = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads();
        if (t < nt) {
            if (r->bound)
                bind_err[t] = mb_bind_self(r->plan[t]);
            r->cpus_start[t] = sched_getcpu();
        }
    }
    if (team != nt) {
        free(bind_err);
        set_reason(r, MB_FAILED, "OpenMP gave a team of %d threads, %d requested", team, nt);
        return;
    }
    for (int t = 0; t < nt; t++)
        if (bind_err[t]) {
            set_reason(r, MB_FAILED, "sched_setaffinity(thread %d -> CPU %d) failed: %s", t,
                       r->plan[t], strerror(bind_err[t]));
            free(bind_err);
            return;
        }
    free(bind_err);
    r->threads = team;

    if (g_family->run) {
        /* -- a family with its own run loop (latency): it maps its memory
         *    and writes its records through emit_cb -- */
        struct timespec res;
        clock_getres(CLOCK_MONOTONIC, &res);
        r->res_ns = (long long)res.tv_sec * 1000000000LL + res.tv_nsec;
        r->gran_ns = timer_granularity_ns();
        const mb_kernel_t *ops[MB_MAX_OPS];
        int op_ok[MB_MAX_OPS];
        for (int i = 0; i < o->nops; i++) {
            ops[i] = o->ops[i];
            op_ok[i] = r->op_status[i] == MB_OK;
        }
        emit_state_t es = {o, r};
        mb_run_ctx_t ctx = {
            .ops = ops, .op_ok = op_ok, .nops = o->nops, .threads = nt, .plan = r->plan,
            .size_bytes = o->size_bytes, .pages = (int)o->pages, .policy = &pol,
            .init_parallel = o->init_parallel, .ntimes = o->ntimes,
            .test_corrupt = o->test_corrupt, .opt = o->famopt, .gran_ns = r->gran_ns,
            .emit = emit_cb, .harness = &es,
        };
        st = g_family->run(&ctx);
        if (st != MB_OK)
            set_reason(r, st, "%s", ctx.reason[0] ? ctx.reason : "run failed");
        return;
    }

    /* -- memory: map, policy before first touch, first touch -- */
    A->n = o->elements;
    A->narrays = g_family->narrays;
    A->scalar = g_family->scalar;
    A->prefetch_distance = o->prefetch_distance;
    for (int a = 0; a < g_family->narrays; a++) {
        st = mb_map(o->pages, o->size_bytes, g_family->narrays, &maps[a], why, sizeof why);
        if (st == MB_OK)
            st = mb_policy_apply(maps[a].addr, maps[a].len, &pol, why, sizeof why);
        if (st != MB_OK) {
            set_reason(r, st, "array %s: %s", g_family->array_names[a], why);
            return;
        }
        A->v[a] = maps[a].addr;
    }
    g_family->init(A, o->init_parallel);

    /* -- timer -- */
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    r->res_ns = (long long)res.tv_sec * 1000000000LL + res.tv_nsec;
    r->gran_ns = timer_granularity_ns();

    /* -- timed loop: iteration-major like STREAM -- */
    size_t nseq = 0;
    const mb_kernel_t **seq = malloc(sizeof(*seq) * (size_t)o->ntimes * (size_t)o->nops);
    if (!seq) {
        set_reason(r, MB_FAILED, "out of memory");
        return;
    }
    for (int i = 0; i < o->nops; i++)
        if (r->op_status[i] == MB_OK &&
            !(r->secs[i] = calloc((size_t)o->ntimes, sizeof(double)))) {
            free(seq);
            set_reason(r, MB_FAILED, "out of memory");
            return;
        }
    for (int k = 0; k < o->ntimes; k++)
        for (int i = 0; i < o->nops; i++) {
            if (r->op_status[i] != MB_OK)
                continue;
            long long t0 = now_ns(CLOCK_MONOTONIC);
            o->ops[i]->fn(A);
            long long t1 = now_ns(CLOCK_MONOTONIC);
            r->secs[i][k] = (double)(t1 - t0) * 1e-9;
            seq[nseq++] = o->ops[i];
        }
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        if (t < nt)
            r->cpus_end[t] = sched_getcpu();
    }
    r->measured = 1;

    if (o->test_corrupt)
        g_family->corrupt(A);

    /* -- validation and placement checks -- */
    g_family->validate(A, seq, nseq, &r->val);
    r->validated = 1;
    free(seq);
    if (!r->val.ok)
        set_reason(r, MB_FAILED, "%s", r->val.reason);

    r->pages_sampled = mb_sample_page_nodes(maps, g_family->narrays, MB_PAGE_SAMPLE,
                                            r->node_counts);
    r->hugepage_fraction = mb_hugepage_fraction(maps, g_family->narrays);
}

int main(int argc, char **argv)
{
    g_prog = argc > 0 && argv[0] ? strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]
                                 : "membench";
    g_family = mb_find_family(MB_FAMILY);
    if (!g_family || !(g_family->run || (g_family->init && g_family->validate))) {
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--list") == 0) {
                mb_print_table(stdout, NULL);
                return 0;
            }
        fprintf(stderr, "%s: kernel family '%s' is not linked into this binary "
                        "(build with kernels/%s.c)\n", g_prog, MB_FAMILY, MB_FAMILY);
        return MB_FAILED;
    }

    static options_t o;
    o.threads = omp_get_max_threads();
    o.affinity = MB_AFF_NONE;
    snprintf(o.affinity_str, sizeof o.affinity_str, "none");
    o.policy.kind = MB_POL_DEFAULT;
    snprintf(o.policy_str, sizeof o.policy_str, "default");
    o.pages = MB_PAGES_4K;
    o.pages_str = "4k";
    o.init_parallel = 1;
    o.init_str = "parallel";
    o.ntimes = 10;
    o.variant = MB_VARIANT;
    o.prefetch_distance = MB_PF_DIST;
    parse_ops("all", &o);
    parse_args(argc, argv, &o);

    static run_t r;
    r.status = MB_OK;
    r.worst = MB_OK;
    r.pages_sampled = -1;
    r.hugepage_fraction = -1.0;
    r.threads = o.threads;
    r.t_start = now_unix();
    if (gethostname(r.host, sizeof r.host - 1) != 0)
        snprintf(r.host, sizeof r.host, "unknown");
    char short_host[256];
    snprintf(short_host, sizeof short_host, "%s", r.host);
    short_host[strcspn(short_host, ".")] = '\0';
    if (!o.system)
        o.system = short_host;

    for (int i = 0; i < o.nops; i++) {
        const char *feat = o.ops[i]->cpu_feature;
        int has = mb_cpu_supports(feat);
        if (has <= 0) {
            r.op_status[i] = MB_SKIPPED;
            snprintf(r.op_reason[i], sizeof r.op_reason[i],
                     has < 0 ? "op %s requires CPU feature '%s', unknown to this harness"
                             : "op %s requires CPU feature '%s', which this CPU lacks",
                     o.ops[i]->op, feat);
        }
    }

    r.cpus_start = calloc((size_t)o.threads, sizeof(int));
    r.cpus_end = calloc((size_t)o.threads, sizeof(int));
    r.plan = calloc((size_t)o.threads, sizeof(int));
    if (!r.cpus_start || !r.cpus_end || !r.plan) {
        fprintf(stderr, "%s: out of memory\n", g_prog);
        return MB_FAILED;
    }
    mb_mapping_t maps[MB_MAX_ARRAYS];
    memset(maps, 0, sizeof maps);
    mb_arrays_t A;
    memset(&A, 0, sizeof A);

    measure(&o, &r, maps, &A);
    r.t_end = now_unix();

    human_summary(&o, &r);
    int exit_code = MB_OK;
    if (r.emitted > 0) {
        /* a run() family wrote its own records */
        exit_code = r.worst;
        if (r.status == MB_FAILED || (r.status == MB_SKIPPED && exit_code == MB_OK))
            exit_code = r.status;
        o.nops = 0;
    }
    for (int i = 0; i < o.nops; i++) {
        emit_record(&o, &r, i);
        int st = op_final_status(&r, i);
        if (st == MB_FAILED)
            exit_code = MB_FAILED;
        else if (st == MB_SKIPPED && exit_code == MB_OK)
            exit_code = MB_SKIPPED;
    }
    fflush(stdout);
    for (int a = 0; a < MB_MAX_ARRAYS; a++)
        mb_unmap(&maps[a]);
    return exit_code;
}
