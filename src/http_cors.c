/*
 * http_cors.c - CORS origins and headers (see http_cors.h).
 */
#include "config.h"

#include <string.h>

#include "src/alloc.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/http_cors.h"

/* Append a string literal. */
#define PUTL(out, lit) folio_buf_append((out), (lit), sizeof(lit) - 1)

void
folio_http_cors_free(struct folio_http_cors *c)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        folio_free(c->origins[i]);
    folio_free(c->origins);
    memset(c, 0, sizeof(*c));
}

int
folio_http_cors_init(struct folio_http_cors *c, const char *spec)
{
    const char *p = spec, *e;
    size_t n = 0, k, i;
    char **o;

    memset(c, 0, sizeof(*c));
    for (k = 0; spec[k] != '\0'; k++)
        n += spec[k] == ' ' || spec[k] == ',';
    if ((o = folio_calloc(n + 1, sizeof(*o))) == NULL)
        return FOLIO_ENOMEM;
    c->origins = o;
    while (*p != '\0') {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        for (e = p; *e != '\0' && *e != ' ' && *e != ',' && *e != '\t'; e++)
            if ((unsigned char)*e < 0x21 || (unsigned char)*e > 0x7e)
                goto bad;
        if (e - p == 1 && *p == '*') {
            c->any = 1;
        } else {
            /* An origin is scheme://host[:port], no path, no slash at the end.
             */
            if (memchr(p, ':', (size_t)(e - p)) == NULL || e[-1] == '/')
                goto bad;
            if ((o[c->n] = folio_malloc((size_t)(e - p) + 1)) == NULL) {
                folio_http_cors_free(c);
                return FOLIO_ENOMEM;
            }
            memcpy(o[c->n], p, (size_t)(e - p));
            o[c->n][e - p] = '\0';
            c->n++;
        }
        p = e;
    }
    if (c->any && c->n > 0)
        goto bad;
    for (i = 0; i < c->n; i++) /* the scheme and host compare caseless */
        for (k = 0; o[i][k] != '\0'; k++)
            if (o[i][k] >= 'A' && o[i][k] <= 'Z')
                o[i][k] |= 0x20;
    return 0;
bad:
    folio_http_cors_free(c);
    return FOLIO_EINVAL;
}

int
folio_http_cors_allowed(const struct folio_http_cors *c, const char *o,
                        size_t n)
{
    size_t i, k;

    if (n == 0)
        return 0;
    if (c->any)
        return 1;
    for (i = 0; i < c->n; i++) {
        for (k = 0; k < n && c->origins[i][k] != '\0'; k++) {
            char ch = o[k] >= 'A' && o[k] <= 'Z' ? (char)(o[k] | 0x20) : o[k];

            if (ch != c->origins[i][k])
                break;
        }
        if (k == n && c->origins[i][k] == '\0')
            return 1;
    }
    return 0;
}

/* Whether h[0..n) is a list of header names: tokens, commas, spaces. */
static int
header_list(const char *h, size_t n)
{
    static const char tspecial[] = "!#$%&'*+-.^_`|~, \t";
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)h[i];

        if (!((ch >= '0' && ch <= '9') ||
              ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
              (ch != '\0' && strchr(tspecial, ch) != NULL)))
            return 0;
    }
    return 1;
}

int
folio_http_cors_put(struct folio_buf *out, const struct folio_http_cors *c,
                    const char *o, size_t n, int preflight, const char *h,
                    size_t hn)
{
    int rc;

    if (!folio_http_cors_allowed(c, o, n))
        return 0;
    if (c->any) {
        rc = PUTL(out, "Access-Control-Allow-Origin: *\r\n");
    } else if ((rc = PUTL(out, "Access-Control-Allow-Origin: ")) == 0 &&
               (rc = folio_buf_append(out, o, n)) == 0) {
        rc = PUTL(out, "\r\nVary: Origin\r\n");
    }
    if (rc != 0 || !preflight)
        return rc;
    /* gin-contrib/cors's defaults: these methods, 12 hours. */
    if ((rc = PUTL(out, "Access-Control-Allow-Methods: GET, POST, HEAD, "
                        "OPTIONS\r\nAccess-Control-Max-Age: 43200\r\n")) != 0)
        return rc;
    if (hn > 0 && header_list(h, hn) &&
        ((rc = PUTL(out, "Access-Control-Allow-Headers: ")) != 0 ||
         (rc = folio_buf_append(out, h, hn)) != 0 ||
         (rc = PUTL(out, "\r\n")) != 0))
        return rc;
    return 0;
}
