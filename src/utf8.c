/*
 * utf8.c - UTF-8 checks and quoting (see utf8.h).
 */
#include "config.h"

#include <string.h>

#include "src/utf8.h"

size_t
folio_utf8_len(const unsigned char *p, size_t n)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len, i;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (n < len)
        return 0;
    /* No overlong forms, no surrogates, nothing above U+10FFFF. */
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

/*
 * One unit of the quoted form at p[0..n): *in bytes of input become the
 * returned number of output bytes (written to w when w is not NULL).
 */
static size_t
quote_unit(const unsigned char *p, size_t n, size_t *in, char *w)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = folio_utf8_len(p, n);

    if (len == 1 && p[0] >= 0x20 && p[0] != 0x7f && p[0] != '\\') {
        *in = 1;
        if (w != NULL)
            w[0] = (char)p[0];
        return 1;
    }
    if (len > 1 && !(p[0] == 0xc2 && p[1] < 0xa0)) {
        *in = len;
        if (w != NULL)
            memcpy(w, p, len);
        return len;
    }
    *in = 1;
    if (p[0] == '\\') {
        if (w != NULL)
            memcpy(w, "\\\\", 2);
        return 2;
    }
    if (w != NULL) {
        w[0] = '\\';
        w[1] = 'x';
        w[2] = hex[p[0] >> 4];
        w[3] = hex[p[0] & 15];
    }
    return 4;
}

const char *
folio_utf8_quote(const char *s, size_t len, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t room = cap - 1, i = 0, j, n = 0, in, k, rest;

    while (i < len) {
        k = quote_unit(p + i, len - i, &in, NULL);
        if (n + k > room - 3)
            break;
        quote_unit(p + i, len - i, &in, out + n);
        n += k;
        i += in;
    }
    if (i < len) {
        /* The rest whole if it fits (a few bytes at most), else "...". */
        for (j = i, rest = 0; j < len && n + rest <= room; j += in)
            rest += quote_unit(p + j, len - j, &in, NULL);
        if (j == len && n + rest <= room) {
            for (; i < len; i += in)
                n += quote_unit(p + i, len - i, &in, out + n);
        } else {
            memcpy(out + n, "...", 3);
            n += 3;
        }
    }
    out[n] = '\0';
    return out;
}
