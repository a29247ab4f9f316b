/*
 * membench placement's shared reading of sysfs and /proc (sysfs.c).
 */
#ifndef MEMBENCH_SYSFS_H
#define MEMBENCH_SYSFS_H

#include <stddef.h>

/* The text of a small file, trailing white space removed; 0, or -1 when it
 * cannot be read. */
int mb_read_text(const char *path, char *buf, size_t len);
/* The integer a small file holds, dflt when unreadable or not a number. */
long mb_read_long(const char *path, long dflt);

#endif
