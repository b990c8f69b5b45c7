/*
 * http.h - one HTTP/1.0 GET with a deadline, for the clients of an HTTP
 * server: `folio profile` and `folio-bench --profile` fetch /debug/pprof/
 * from the metrics listener with it, the tests /metrics, /healthz and
 * Prometheus's API.  Not for the server: it blocks and allocates.
 */
#ifndef FOLIO_HTTP_H
#define FOLIO_HTTP_H

#include <stddef.h>

#include "src/buf.h"

/*
 * An answer.  Each buffer holds its bytes from b_data on, [0, b_len),
 * with a NUL after them that b_len does not count: text reads as a C
 * string.
 */
struct folio_http_answer {
    int status;            /* the status code; 0 until one was read */
    struct folio_buf head; /* the status line and the header lines, each
                              ending "\r\n" (not the empty line after) */
    struct folio_buf body; /* what came after the empty line */
};

/*
 * folio_http_get - GET `path` (with its query) from `addr` (HOST:PORT or
 * [V6ADDR]:PORT); the whole answer must come within timeout_ms (< 0: no
 * limit).  *ans is set here (its buffers owned by the caller: free them
 * with folio_http_answer_free, whatever the result).  Returns 0 (any
 * status), or FOLIO_EINVAL (bad address), FOLIO_ETIMEDOUT, FOLIO_ESYS
 * (cannot connect, reset), FOLIO_EPROTO (not HTTP, or cut short) or
 * FOLIO_ENOMEM, with a message in err.
 */
int folio_http_get(const char *addr, const char *path, int timeout_ms,
                   struct folio_http_answer *ans, char *err, size_t errlen);

/* folio_http_answer_free - release ans's buffers; accepts a zeroed one. */
void folio_http_answer_free(struct folio_http_answer *ans);

#endif
