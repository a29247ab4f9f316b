/*
 * membench JSON writer: one record is built in a growing buffer, key by key.
 *
 * Hand-written on purpose: a cluster build needs nothing but gcc and
 * libgomp.  Strings are escaped (invalid UTF-8 becomes U+FFFD), doubles are
 * written with 17 significant digits and always as floats (1 -> 1.0), and a
 * non-finite double becomes null.
 */
#ifndef MEMBENCH_JSON_H
#define MEMBENCH_JSON_H

#include <stddef.h>

typedef struct jbuf {
    char *s;            /* NUL-terminated text so far (malloc'd; free it) */
    size_t len, cap;
    int need_comma;     /* a key was written at this level */
} jbuf_t;

/* printf-style raw text, no escaping */
void jb_raw(jbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jb_string(jbuf_t *b, const char *s);   /* NULL -> null */
void jb_double(jbuf_t *b, double x);
void jb_key(jbuf_t *b, const char *k);      /* "k": with the comma before it */

void kv_str(jbuf_t *b, const char *k, const char *v);
void kv_int(jbuf_t *b, const char *k, long long v);
void kv_null(jbuf_t *b, const char *k);
void kv_bool(jbuf_t *b, const char *k, int v);
void kv_double(jbuf_t *b, const char *k, double v);
void kv_ints(jbuf_t *b, const char *k, const int *v, int n);
void kv_doubles(jbuf_t *b, const char *k, const double *v, int n);

#endif
