/*
 * http_cors.h - the CORS headers of foliod's HTTP face (the Fetch
 * standard's CORS protocol, as mouthful's gin-contrib/cors answers it),
 * from http_cors_origins: "*" (any origin: the header says "*"), a list
 * (the request's Origin echoed when it is on it, with "Vary: Origin"), or
 * off (no CORS headers at all).  In src/ because the configuration checks
 * the list when it is read; the worker answers with it.
 */
#ifndef FOLIO_HTTP_CORS_H
#define FOLIO_HTTP_CORS_H

#include <stddef.h>

struct folio_buf;

/* The origins allowed. */
struct folio_http_cors {
    int any;
    size_t n;
    char **origins; /* owned */
};

/*
 * folio_http_cors_init - from http_cors_origins: "*", "" (off), or
 * origins separated by spaces or commas ("https://a.example
 * http://b.example:8080").  Returns 0, FOLIO_EINVAL (an origin with a
 * character a header cannot hold, no scheme, a path, or "*" in a list)
 * or FOLIO_ENOMEM.  Any process; allocates (at start).
 */
int folio_http_cors_init(struct folio_http_cors *c, const char *spec);

/* folio_http_cors_free - release; accepts a zeroed struct. */
void folio_http_cors_free(struct folio_http_cors *c);

/*
 * folio_http_cors_allowed - whether a request from origin o[0..n) (its
 * Origin header; n == 0: none) may read the response.
 */
int folio_http_cors_allowed(const struct folio_http_cors *c, const char *o,
                            size_t n);

/*
 * folio_http_cors_put - append the CORS header lines for a request from
 * origin o[0..n) (nothing if it sent none or is not allowed).
 * `preflight`: an OPTIONS preflight, which also gets the methods, the
 * request headers it asked for (h[0..hn), as sent), and a max age.
 * 0 or the buffer's error.
 */
int folio_http_cors_put(struct folio_buf *out, const struct folio_http_cors *c,
                        const char *o, size_t n, int preflight, const char *h,
                        size_t hn);

#endif
