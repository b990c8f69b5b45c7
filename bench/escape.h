/*
 * escape.h - the escapes of bench's byte arguments (folio-bench's
 * --raw-request and --raw-reply-end, bench/floor's request and reply), so
 * that the same bytes are written the same way on either command line.
 */
#ifndef FOLIO_BENCH_ESCAPE_H
#define FOLIO_BENCH_ESCAPE_H

#include <stddef.h>

/*
 * folio_bench_unescape - decode C escapes of s (\r \n \t \0 \\ \xHH)
 * into a new string (*len bytes, NUL after them).  NULL on a bad escape
 * or out of memory.  Owned by the caller: free().
 */
char *folio_bench_unescape(const char *s, size_t *len);

#endif
