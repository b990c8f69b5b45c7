/*
 * escape.c - the escapes of bench's byte arguments (escape.h).  Linked by
 * folio-bench (opts.c) and bench/floor.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bench/escape.h"

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *
folio_bench_unescape(const char *s, size_t *len)
{
    size_t n = 0;
    char *out;
    int hi, lo;

    if ((out = malloc(strlen(s) + 1)) == NULL)
        return NULL;
    while (*s != '\0') {
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        switch (s[1]) {
        case 'r':
            out[n++] = '\r';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case '0':
            out[n++] = '\0';
            break;
        case '\\':
            out[n++] = '\\';
            break;
        case 'x':
            if ((hi = hexval(s[2])) < 0 || (lo = hexval(s[3])) < 0)
                goto bad;
            out[n++] = (char)(hi << 4 | lo);
            s += 2;
            break;
        default:
            goto bad;
        }
        s += 2;
    }
    out[n] = '\0';
    *len = n;
    return out;
bad:
    free(out);
    return NULL;
}
