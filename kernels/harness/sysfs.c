/*
 * membench placement, the shared reading: sysfs and /proc text files, and
 * CPU / node lists like "0-3,8" (sysfs.h, placement.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "placement.h"
#include "sysfs.h"

/* ------------------------------------------------------------------ utils */

int mb_read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[got] = '\0';
    while (got > 0 && isspace((unsigned char)buf[got - 1]))
        buf[--got] = '\0';
    return 0;
}

long mb_read_long(const char *path, long dflt)
{
    char buf[64];
    if (mb_read_text(path, buf, sizeof buf) != 0)
        return dflt;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || end == buf)
        return dflt;
    return v;
}

int mb_parse_list(const char *s, int *out, int max, int limit)
{
    int n = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    for (;;) {
        if (!isdigit((unsigned char)*p))
            return -1;
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (errno)
            return -1;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                return -1;
            errno = 0;
            hi = strtol(p, &end, 10);
            if (errno)
                return -1;
            p = end;
        }
        if (lo < 0 || hi < lo || hi >= limit)
            return -1;
        for (long v = lo; v <= hi; v++) {
            for (int i = 0; i < n; i++)
                if (out[i] == v)
                    return -1;
            if (n >= max)
                return -1;
            out[n++] = (int)v;
        }
        if (*p == '\0')
            return n;
        if (*p != ',')
            return -1;
        p++;
    }
}

void mb_format_list(const int *v, int n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off + 1 < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", v[i]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}
