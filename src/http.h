/*
 * http.h - one HTTP/1.0 GET with a deadline, for the clients of the
 * metrics listener: `folio profile` and `folio-bench --profile` fetch
 * /debug/pprof/ with it, the tests /metrics.  Not for the server: it
 * blocks and allocates.
 */
#ifndef FOLIO_HTTP_H
#define FOLIO_HTTP_H

#include <stddef.h>

struct folio_buf;

/*
 * folio_http_get - GET `path` (with its query) from `addr` (HOST:PORT or
 * [V6ADDR]:PORT); the whole answer must come within timeout_ms (< 0: no
 * limit).  The body is appended to `body`, the status code put in
 * *status.  Returns 0 (any status), or FOLIO_EINVAL (bad address),
 * FOLIO_ETIMEDOUT, FOLIO_ESYS (cannot connect, reset), FOLIO_EPROTO (not
 * HTTP) or FOLIO_ENOMEM, with a message in err.
 */
int folio_http_get(const char *addr, const char *path, int timeout_ms,
                   struct folio_buf *body, int *status, char *err,
                   size_t errlen);

#endif
