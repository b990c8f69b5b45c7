/*
 * http_reply.h - HTTP/1.1 responses packed straight into a connection's
 * output buffer (src/buf.h), as msgpack replies are: a status line, the
 * headers every response has (a Date formatted once a second), the
 * caller's own lines (CORS: src/http_cors.h), then Content-Type and
 * Content-Length, then the body.  When the body's length is not known
 * before it is written (a reply encoded as it goes), Content-Length is
 * written as a fixed-width field of spaces and filled in at the end
 * (leading spaces are optional whitespace, RFC 9110 section 5.6.3), so
 * the body is never copied.  Worker only; no allocation.
 */
#ifndef FOLIO_HTTP_REPLY_H
#define FOLIO_HTTP_REPLY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct folio_buf;

/* One response being written: marks in the output (folio_buf_mark). */
struct folio_http_reply {
    size_t start;  /* its status line */
    size_t cl;     /* the Content-Length digits to fill in; SIZE_MAX: none */
    size_t body;   /* its body's first byte */
    uint64_t want; /* the length given to folio_http_reply_body */
    unsigned flags;
    int status;
};

/*
 * Flags of folio_http_reply_begin: CLOSE sends "Connection: close" (the
 * last response of the connection), KEEPALIVE "Connection: keep-alive"
 * (to an HTTP/1.0 client that asked for it), NOBODY writes the headers
 * of the body given, not the body (HEAD).
 */
#define FOLIO_HTTP_R_CLOSE 0x01
#define FOLIO_HTTP_R_KEEPALIVE 0x02
#define FOLIO_HTTP_R_NOBODY 0x04

/* The length to pass when it is not known yet. */
#define FOLIO_HTTP_LEN_UNKNOWN UINT64_MAX

#define FOLIO_HTTP_JSON "application/json; charset=utf-8" /* as gin */

/*
 * folio_http_reason - the reason phrase of `status` ("Not Found"), or
 * "Unknown".  Never NULL.
 */
const char *folio_http_reason(int status);

/*
 * folio_http_date - the "Date: ...\r\n" line (37 bytes, RFC 9110 section
 * 5.6.7) of Unix time `now`, formatted only when the second changed.
 * Returns a static buffer, valid until the next call.
 */
const char *folio_http_date(time_t now);
#define FOLIO_HTTP_DATE_LEN 37

/*
 * folio_http_reply_begin - start a response: status line, Server, Date
 * of `now`, and Connection as `flags` say.  The caller may then append
 * header lines ("Name: value\r\n") before folio_http_reply_body.
 * Returns 0 or the buffer's error (FOLIO_ETOOBIG, FOLIO_ENOMEM).
 */
int folio_http_reply_begin(struct folio_buf *out, struct folio_http_reply *r,
                           int status, unsigned flags, time_t now);

/*
 * folio_http_reply_body - end the headers with Content-Type `ctype` (NULL:
 * none) and Content-Length `len`, or FOLIO_HTTP_LEN_UNKNOWN to fill in
 * at folio_http_reply_end; none for a status that has no body (1xx, 204,
 * 304: len must be 0).  The body follows.  0 or the buffer's error.
 */
int folio_http_reply_body(struct folio_buf *out, struct folio_http_reply *r,
                          const char *ctype, uint64_t len);

/*
 * folio_http_reply_end - the body is written: fill in its length (or
 * check it against the one given: FOLIO_EINVAL when they differ), and
 * drop it for FOLIO_HTTP_R_NOBODY.  Returns 0 or FOLIO_EINVAL.
 */
int folio_http_reply_end(struct folio_buf *out, struct folio_http_reply *r);

/* folio_http_reply_cancel - drop everything written since begin. */
void folio_http_reply_cancel(struct folio_buf *out,
                             const struct folio_http_reply *r);

/*
 * folio_http_reply_simple - a whole response with body body[0..len) of
 * type ctype: begin, body, end.  0 or the buffer's error.
 */
int folio_http_reply_simple(struct folio_buf *out, int status, unsigned flags,
                            time_t now, const char *ctype, const void *body,
                            size_t len);

#endif
