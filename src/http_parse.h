/*
 * http_parse.h - HTTP/1.1 messages read where they lie: requests for
 * foliod's HTTP face, responses for folio-bench --proto http.
 *
 * The parser works in the reader's input buffer and neither copies nor
 * allocates (nginx's ngx_http_parse.c, picohttpparser, h2o, lwan).  It is
 * incremental: call it again with the same start and more bytes and it
 * goes on from where it stopped, looking at each byte of a head once to
 * find its end and once more to parse it (picohttpparser's last_len).
 * What it finds it gives as spans: offsets from the message's first byte,
 * not pointers, because the buffer may move its pending bytes to the
 * front between reads (src/buf.h).  A chunked body is decoded in place:
 * the data of each chunk is moved down over the chunk headers, so that
 * the body is one span like a Content-Length body.
 *
 * RFC 9112 (HTTP/1.1 message syntax) is the reference; where it lets a
 * server choose, the choice is nginx's, and the stricter one where
 * leniency would let two readers frame a message differently (request
 * smuggling): both Content-Length and Transfer-Encoding, two
 * Content-Lengths, a bare CR, a folded header line, space before a
 * header's colon are all 400.  Any process; no libevent.
 */
#ifndef FOLIO_HTTP_PARSE_H
#define FOLIO_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A piece of a message: `len` bytes from `off` bytes past its start. */
struct folio_http_span {
    uint32_t off;
    uint32_t len;
};

/*
 * Defaults of the limits (foliod.conf(5) may change them): a
 * request-target as long as nginx takes, a head that fits one connection
 * buffer (it never grows for a head), as many header lines as Apache
 * takes; and a method name longer than FOLIO_HTTP_MAX_METHOD is no method.
 */
#define FOLIO_HTTP_MAX_URI 8192
#define FOLIO_HTTP_MAX_HEAD 16384
#define FOLIO_HTTP_MAX_HEADERS 100
#define FOLIO_HTTP_MAX_METHOD 32

struct folio_http_limits {
    uint32_t max_uri;     /* longer request-target: 414 */
    uint32_t max_head;    /* longer head (blank line included): 431 */
    uint32_t max_headers; /* more header lines: 431 */
    uint64_t max_body;    /* longer body (decoded, if chunked): 413 */
};

enum folio_http_method {
    FOLIO_HTTP_OTHER = 0, /* a valid token we do not know: the caller's 501 */
    FOLIO_HTTP_GET,
    FOLIO_HTTP_HEAD,
    FOLIO_HTTP_POST,
    FOLIO_HTTP_PUT,
    FOLIO_HTTP_DELETE,
    FOLIO_HTTP_OPTIONS,
    FOLIO_HTTP_PATCH,
    FOLIO_HTTP_TRACE,
    FOLIO_HTTP_CONNECT
};

/* Results of the parsers. */
enum folio_http_result {
    FOLIO_HTTP_DONE = 0,  /* a whole message: r->total bytes */
    FOLIO_HTTP_MORE = 1,  /* incomplete: call again with more bytes */
    FOLIO_HTTP_ERROR = -1 /* malformed or over a limit: r->status, r->why;
                             the connection cannot go on (its framing is
                             lost): answer r->status and close */
};

/*
 * Flags (r->flags): KEEPALIVE, the connection may serve another message;
 * CHUNKED, Transfer-Encoding: chunked; CONTINUE, Expect: 100-continue;
 * HEAD_DONE, the head is parsed (its fields are set, the body may still
 * be coming); ABSOLUTE, an absolute-form target (a proxy's); ASTERISK,
 * "OPTIONS *"; CLOSE_DELIM, a response whose body ends at EOF.
 */
#define FOLIO_HTTP_KEEPALIVE 0x01
#define FOLIO_HTTP_CHUNKED 0x02
#define FOLIO_HTTP_CONTINUE 0x04
#define FOLIO_HTTP_HEAD_DONE 0x08
#define FOLIO_HTTP_ABSOLUTE 0x10
#define FOLIO_HTTP_ASTERISK 0x20
#define FOLIO_HTTP_CLOSE_DELIM 0x40

/*
 * One request (or response) being read.  The caller sets nothing but
 * what folio_http_req_init does; the fields below "results" are valid
 * once FOLIO_HTTP_HEAD_DONE is set (body: at FOLIO_HTTP_DONE).  About
 * 150 bytes: it lives in the connection.
 */
struct folio_http_req {
    /* where the parse stands (private) */
    const struct folio_http_limits *lim;
    uint32_t scanned;  /* bytes of the head looked at for its end */
    uint32_t start;    /* the request line's first byte (after CRLFs) */
    uint32_t line_end; /* the request line's '\n' + 1; 0: not yet seen */
    uint8_t state;
    uint8_t cstate;  /* chunked body: where in the chunk syntax */
    uint16_t ctrail; /* chunked: bytes of the current size or trailer
                        line, bounded */
    uint64_t craw;   /* chunked: next raw byte, from the message start */
    uint64_t crem;   /* chunked: data bytes left in this chunk */

    /* results */
    uint8_t method;  /* enum folio_http_method */
    uint8_t minor;   /* HTTP/1.minor (0 or 1) */
    uint16_t status; /* response: its status; error: the status to send */
    uint32_t flags;
    uint32_t head_len; /* from the message start to the body */
    uint32_t nheaders;
    struct folio_http_span method_s; /* request: the method's name;
                                        response: the reason phrase */
    struct folio_http_span target;   /* the request-target as sent */
    struct folio_http_span path;     /* its path: origin-form from '/',
                                        absolute-form past the authority
                                        (may be empty: "/"), no query */
    struct folio_http_span query;    /* after '?', without it; len 0: none */
    struct folio_http_span host;
    struct folio_http_span origin;
    struct folio_http_span content_type;
    struct folio_http_span idempotency_key;
    struct folio_http_span acr_method;  /* Access-Control-Request-Method */
    struct folio_http_span acr_headers; /* Access-Control-Request-Headers */
    uint64_t content_length; /* as sent; chunked: the decoded length */
    struct folio_http_span body;
    uint64_t total;  /* the whole message's bytes, as received */
    const char *why; /* error: a static reason, for the body */
};

/*
 * folio_http_req_init - get ready to read one request under `lim`
 * (borrowed: it must outlive the parse).  Call it again for the next
 * request of the connection, after consuming r->total bytes.
 */
void folio_http_req_init(struct folio_http_req *r,
                         const struct folio_http_limits *lim);

/*
 * folio_http_req_parse - go on reading the request that starts at p[0],
 * of which `len` bytes have arrived (always from the same start; more
 * each time, or the same).  A chunked body is rewritten in place
 * (p[r->body.off...] holds the decoded body), hence the char *.
 * Returns FOLIO_HTTP_DONE (the request is r->total bytes: consume them),
 * FOLIO_HTTP_MORE (FOLIO_HTTP_HEAD_DONE tells whether the head is
 * complete), or FOLIO_HTTP_ERROR with r->status (400, 411, 413, 414, 417,
 * 431, 501 or 505) and r->why.  A request whose head has not ended within
 * max_head bytes is a 431 (a 414 if its request line has not ended within
 * max_uri plus room for a method and version).  Empty lines before the
 * request line are skipped (RFC 9112 section 2.2).  Once DONE or ERROR,
 * it returns the same without looking at p again.
 */
int folio_http_req_parse(struct folio_http_req *r, char *p, size_t len);

/*
 * folio_http_res_parse - the same for a response to a request with
 * method `req_method` (a HEAD's response has no body, nor 1xx, 204 and
 * 304): r->status is its status, r->method_s its reason phrase; a body
 * without Content-Length or chunked ends at EOF (FOLIO_HTTP_CLOSE_DELIM:
 * the caller ends it; the parser returns MORE).  ERROR's r->why says
 * why; r->status is then the response's own if it was read, else 0.
 * r->lim's max_uri is not used.  For clients (folio-bench).
 */
int folio_http_res_parse(struct folio_http_req *r, int req_method, char *p,
                         size_t len);

/*
 * folio_http_at - the bytes of span s of the message at p.  No check: s
 * must come from a parse of that message.
 */
static inline const char *
folio_http_at(const char *p, struct folio_http_span s)
{
    return p + s.off;
}

/*
 * Header lines, one by one, for what the parser does not pick out:
 * folio_http_header_next - from *pos (start with r->start of a head
 * parsed to FOLIO_HTTP_HEAD_DONE: the first call skips the start line),
 * the next header's name and value (trimmed of spaces and tabs) as spans;
 * returns 1, or 0 after the last.  The head must be one that parsed.
 */
int folio_http_header_next(const char *p, const struct folio_http_req *r,
                           uint32_t *pos, struct folio_http_span *name,
                           struct folio_http_span *value);

/*
 * folio_http_token_eq - whether span s,n equals the lower-case ASCII
 * `lit` ignoring ASCII case (header names, tokens).
 */
int folio_http_token_eq(const char *s, size_t n, const char *lit);

/*
 * folio_http_unescape - percent-decode s[0..n) into out, which has room
 * for n bytes (decoding never grows).  `form`: a query component, where
 * '+' is a space (application/x-www-form-urlencoded, as Go's
 * url.QueryUnescape reads it).  Returns the decoded length, or -1 if a
 * '%' is not followed by two hex digits or decodes to NUL.  out may be s
 * (in place).  Any process.
 */
long folio_http_unescape(const char *s, size_t n, char *out, int form);

/*
 * Query parameters ("a=1&b=&c"), in order, raw (still percent-encoded):
 * folio_http_query_next - the next non-empty parameter of *q (a cursor:
 * set q->p, q->end to the query, without its '?'), its key and value
 * (value empty for "c" and "b="); returns 1, or 0 at the end.
 */
struct folio_http_query {
    const char *p;
    const char *end;
};
int folio_http_query_next(struct folio_http_query *q, const char **key,
                          size_t *klen, const char **val, size_t *vlen);

/*
 * folio_http_query_get - the first value of parameter `name` (compared
 * with the key decoded) in query q[0..n), decoded (form) into out (room
 * for cap bytes) with its length in *olen.  Returns 1 (found), 0 (no
 * such parameter), or -1 (found, but malformed or longer than cap).
 */
int folio_http_query_get(const char *q, size_t n, const char *name, char *out,
                         size_t cap, size_t *olen);

/* folio_http_method_name - "GET"... for a known method, else "?". */
const char *folio_http_method_name(int method);

#endif
