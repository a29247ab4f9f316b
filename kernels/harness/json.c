/*
 * membench JSON writer (see json.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "types.h"

void jb_raw(jbuf_t *b, const char *fmt, ...)
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

void jb_string(jbuf_t *b, const char *s)
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

void jb_key(jbuf_t *b, const char *k)
{
    if (b->need_comma)
        jb_raw(b, ",");
    b->need_comma = 1;
    jb_string(b, k);
    jb_raw(b, ":");
}

void jb_double(jbuf_t *b, double x)
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

void kv_str(jbuf_t *b, const char *k, const char *v) { jb_key(b, k); jb_string(b, v); }
void kv_int(jbuf_t *b, const char *k, long long v) { jb_key(b, k); jb_raw(b, "%lld", v); }
void kv_null(jbuf_t *b, const char *k) { jb_key(b, k); jb_raw(b, "null"); }
void kv_bool(jbuf_t *b, const char *k, int v) { jb_key(b, k); jb_raw(b, v ? "true" : "false"); }
void kv_double(jbuf_t *b, const char *k, double v) { jb_key(b, k); jb_double(b, v); }
void kv_ints(jbuf_t *b, const char *k, const int *v, int n)
{
    jb_key(b, k);
    jb_raw(b, "[");
    for (int i = 0; i < n; i++)
        jb_raw(b, "%s%d", i ? "," : "", v[i]);
    jb_raw(b, "]");
}
void kv_doubles(jbuf_t *b, const char *k, const double *v, int n)
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
