/*
 * http_reply.c - HTTP/1.1 responses into an output buffer, and CORS (see
 * http_reply.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "worker/http_reply.h"

/* Append a string literal. */
#define PUTL(out, lit) folio_buf_append((out), (lit), sizeof(lit) - 1)

/* Content-Length written before the body is: this many digits, padded. */
#define CL_WIDTH 12

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {100, "Continue"},
    {200, "OK"},
    {201, "Created"},
    {204, "No Content"},
    {400, "Bad Request"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {411, "Length Required"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {417, "Expectation Failed"},
    {422, "Unprocessable Content"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *
folio_http_reason(int status)
{
    size_t i;

    for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}

const char *
folio_http_date(time_t now)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                    "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    static char line[64];
    static time_t cached = -1;
    time_t epoch = 0;
    struct tm tm;

    if (now == cached)
        return line;
    cached = now;
    if (gmtime_r(&now, &tm) == NULL || tm.tm_year + 1900 > 9999 ||
        tm.tm_year + 1900 < 1000)
        gmtime_r(&epoch, &tm); /* not a date HTTP can write */
    /* IMF-fixdate, the C locale's names whatever the process's locale. */
    snprintf(line, sizeof(line),
             "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
             days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return line;
}

static int
put(struct folio_buf *out, const char *s, size_t n)
{
    return folio_buf_append(out, s, n);
}

static int
puts_(struct folio_buf *out, const char *s)
{
    return folio_buf_append(out, s, strlen(s));
}

int
folio_http_reply_begin(struct folio_buf *out, struct folio_http_reply *r,
                       int status, unsigned flags, time_t now)
{
    char line[64];
    int n, rc;

    r->start = folio_buf_mark(out);
    r->cl = SIZE_MAX;
    r->body = r->start;
    r->flags = flags;
    r->status = status;
    n = snprintf(line, sizeof(line), "HTTP/1.1 %03d %s\r\n", status,
                 folio_http_reason(status));
    if ((rc = put(out, line, (size_t)n)) != 0 ||
        (rc = PUTL(out, "Server: folio\r\n")) != 0 ||
        (rc = put(out, folio_http_date(now), FOLIO_HTTP_DATE_LEN)) != 0)
        goto fail;
    if (flags & FOLIO_HTTP_R_CLOSE)
        rc = PUTL(out, "Connection: close\r\n");
    else if (flags & FOLIO_HTTP_R_KEEPALIVE)
        rc = PUTL(out, "Connection: keep-alive\r\n");
    if (rc == 0)
        return 0;
fail:
    folio_buf_truncate(out, r->start);
    return rc;
}

/* v in decimal, right-aligned in w[0..width), spaces before. */
static void
digits(char *w, size_t width, uint64_t v)
{
    size_t k = width;

    do {
        w[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && k > 0);
    memset(w, ' ', k);
}

int
folio_http_reply_body(struct folio_buf *out, struct folio_http_reply *r,
                      const char *ctype, uint64_t len)
{
    char num[24];
    int rc;

    if (ctype != NULL &&
        ((rc = PUTL(out, "Content-Type: ")) != 0 ||
         (rc = puts_(out, ctype)) != 0 || (rc = PUTL(out, "\r\n")) != 0))
        return rc;
    r->want = len;
    if (r->status < 200 || r->status == 204 || r->status == 304) {
        r->cl = SIZE_MAX; /* RFC 9110, 8.6: no Content-Length */
        if ((rc = PUTL(out, "\r\n")) != 0)
            return rc;
        r->body = folio_buf_mark(out);
        return 0;
    }
    if ((rc = PUTL(out, "Content-Length: ")) != 0)
        return rc;
    if (len == FOLIO_HTTP_LEN_UNKNOWN) {
        r->cl = folio_buf_mark(out);
        memset(num, ' ', CL_WIDTH);
        rc = put(out, num, CL_WIDTH);
    } else {
        size_t k = sizeof(num);

        do {
            num[--k] = (char)('0' + len % 10);
            len /= 10;
        } while (len != 0);
        r->cl = SIZE_MAX;
        rc = put(out, num + k, sizeof(num) - k);
    }
    if (rc != 0 || (rc = PUTL(out, "\r\n\r\n")) != 0)
        return rc;
    r->body = folio_buf_mark(out);
    return 0;
}

int
folio_http_reply_end(struct folio_buf *out, struct folio_http_reply *r)
{
    size_t len = folio_buf_mark(out) - r->body;

    if (r->cl != SIZE_MAX)
        digits(folio_buf_at(out, r->cl), CL_WIDTH, len);
    else if (r->want != len)
        return FOLIO_EINVAL;
    if (r->flags & FOLIO_HTTP_R_NOBODY)
        folio_buf_truncate(out, r->body);
    return 0;
}

void
folio_http_reply_cancel(struct folio_buf *out, const struct folio_http_reply *r)
{
    folio_buf_truncate(out, r->start);
}

int
folio_http_reply_simple(struct folio_buf *out, int status, unsigned flags,
                        time_t now, const char *ctype, const void *body,
                        size_t len)
{
    struct folio_http_reply r;
    int rc;

    if ((rc = folio_http_reply_begin(out, &r, status, flags, now)) != 0)
        return rc;
    if ((rc = folio_http_reply_body(out, &r, ctype, len)) != 0 ||
        (rc = put(out, body, len)) != 0) {
        folio_http_reply_cancel(out, &r);
        return rc;
    }
    return folio_http_reply_end(out, &r);
}
