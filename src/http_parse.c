/*
 * http_parse.c - HTTP/1.1 requests and responses read in place (see
 * http_parse.h).  Two passes over a head: the first, resumable, finds
 * where it ends (memchr for each '\n', then a look back for an empty
 * line); the second parses the complete head in one go, so that no
 * state is kept inside a header line between reads.  Bodies: a
 * Content-Length is waited for; a chunked body is a small state machine
 * that moves each chunk's data down over the chunk syntax.
 */
#include "config.h"

#include <string.h>

#include "src/http_parse.h"

/* Where a parse stands (r->state). */
enum {
    S_HEAD = 0, /* looking for the end of the head */
    S_BODY,     /* a Content-Length body */
    S_CHUNK,    /* a chunked body */
    S_DONE,
    S_ERROR
};

/* Where a chunked body stands (r->cstate). */
enum {
    C_SIZE = 0, /* hex digits of a chunk size */
    C_EXT,      /* after the size: extensions, to the line's end */
    C_SIZE_LF,  /* a CR ended the size line: LF next */
    C_DATA,
    C_DATA_END, /* CRLF (or LF) after a chunk's data */
    C_DATA_LF,
    C_TRAILER,      /* the start of a trailer line (or the final CRLF) */
    C_TRAILER_LINE, /* inside a trailer line */
    C_TRAILER_LF,   /* a CR in a trailer line (or the final one) */
    C_END_LF        /* the final line's CR: LF next, then done */
};

#define CHUNK_LINE_MAX 4096 /* a size line with its extensions */
/* A request line holds a target, a method, a version and three more. */
#define LINE_EXTRA (FOLIO_HTTP_MAX_METHOD + 16)
#define SIZE_DIGITS_MAX 15 /* a chunk of 2^60 bytes is no chunk */

/* Character classes (RFC 9110 section 5.6.2, RFC 9112 section 3.2). */
#define C_TCHAR 0x01  /* token */
#define C_FIELD 0x02  /* in a field value: HT, SP, VCHAR, obs-text */
#define C_TARGET 0x04 /* in a request-target: VCHAR, obs-text */
#define C_HEX 0x08

static unsigned char cls[256];

static void
init_classes(void)
{
    static const char tspecial[] = "!#$%&'*+-.^_`|~";
    unsigned c;

    if (cls['a'] != 0)
        return;
    for (c = 0x21; c < 0x7f; c++)
        cls[c] |= C_FIELD | C_TARGET;
    for (c = 0x80; c < 0x100; c++)
        cls[c] |= C_FIELD | C_TARGET;
    cls[' '] |= C_FIELD;
    cls['\t'] |= C_FIELD;
    for (c = '0'; c <= '9'; c++)
        cls[c] |= C_TCHAR | C_HEX;
    for (c = 'a'; c <= 'z'; c++)
        cls[c] |= C_TCHAR;
    for (c = 'A'; c <= 'Z'; c++)
        cls[c] |= C_TCHAR;
    for (c = 'a'; c <= 'f'; c++)
        cls[c] |= C_HEX;
    for (c = 'A'; c <= 'F'; c++)
        cls[c] |= C_HEX;
    for (c = 0; tspecial[c] != '\0'; c++)
        cls[(unsigned char)tspecial[c]] |= C_TCHAR;
}

static int
hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

static int
fail(struct folio_http_req *r, int status, const char *why)
{
    r->state = S_ERROR;
    r->status = (uint16_t)status;
    r->why = why;
    return FOLIO_HTTP_ERROR;
}

static struct folio_http_span
span(size_t from, size_t to)
{
    struct folio_http_span s;

    s.off = (uint32_t)from;
    s.len = (uint32_t)(to - from);
    return s;
}

int
folio_http_token_eq(const char *s, size_t n, const char *lit)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 'A' && c <= 'Z')
            c |= 0x20;
        if (lit[i] == '\0' || c != (unsigned char)lit[i])
            return 0;
    }
    return lit[n] == '\0';
}

void
folio_http_req_init(struct folio_http_req *r,
                    const struct folio_http_limits *lim)
{
    init_classes();
    memset(r, 0, sizeof(*r));
    r->lim = lim;
}

static const struct {
    const char *name;
    uint8_t len;
    uint8_t method;
} methods[] = {
    {"GET", 3, FOLIO_HTTP_GET},         {"POST", 4, FOLIO_HTTP_POST},
    {"HEAD", 4, FOLIO_HTTP_HEAD},       {"OPTIONS", 7, FOLIO_HTTP_OPTIONS},
    {"PUT", 3, FOLIO_HTTP_PUT},         {"DELETE", 6, FOLIO_HTTP_DELETE},
    {"PATCH", 5, FOLIO_HTTP_PATCH},     {"TRACE", 5, FOLIO_HTTP_TRACE},
    {"CONNECT", 7, FOLIO_HTTP_CONNECT},
};

const char *
folio_http_method_name(int method)
{
    size_t i;

    for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (methods[i].method == method)
            return methods[i].name;
    return "?";
}

/* Methods are case-sensitive (RFC 9110 section 9.1): "get" is unknown. */
static uint8_t
method_of(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (methods[i].len == n && memcmp(methods[i].name, s, n) == 0)
            return methods[i].method;
    return FOLIO_HTTP_OTHER;
}

/*
 * Find the end of the head: the '\n' of its empty line.  Skips empty
 * lines before the start line first.  Returns the head's length, 0 if
 * it has not ended, or -1 on an error already recorded in r.
 */
static long
head_end(struct folio_http_req *r, const char *p, size_t len, uint32_t max_uri)
{
    const char *lf;
    size_t i, j, too_long;

    if (r->line_end == 0 && r->scanned == r->start) {
        /* Empty lines before the start line: CRLF or LF, no bare CR. */
        while (r->start < len && (p[r->start] == '\n' || p[r->start] == '\r')) {
            if (p[r->start] == '\r') {
                if (r->start + 1 == len) {
                    r->scanned = r->start; /* resume here */
                    return 0;
                }
                if (p[r->start + 1] != '\n') {
                    fail(r, 400, "bare CR before the request line");
                    return -1;
                }
                r->start++;
            }
            if (++r->start > r->lim->max_head) {
                fail(r, 400, "empty lines instead of a request");
                return -1;
            }
        }
        r->scanned = r->start;
        if (r->start == len)
            return 0;
    }
    /*
     * Two limits, decided by where they are crossed, so that a head read
     * in pieces fails as the same head read whole: the request line is
     * too long once p[too_long] arrives with no '\n' before it (414), the
     * head once p[max_head] arrives before its end (431); the first of
     * the two positions wins.
     */
    too_long = max_uri > 0 ? r->start + (size_t)max_uri + LINE_EXTRA : SIZE_MAX;
    for (i = r->scanned; i < len; i = j + 1) {
        if ((lf = memchr(p + i, '\n', len - i)) == NULL) {
            i = len;
            break;
        }
        j = (size_t)(lf - p);
        if (r->line_end == 0) {
            if (j > too_long) {
                i = j; /* unfinished at too_long */
                break;
            }
            r->line_end = (uint32_t)(j + 1);
            continue;
        }
        /* An empty line (LF LF, or LF CR LF) ends the head. */
        if (p[j - 1] == '\n' || (p[j - 1] == '\r' && p[j - 2] == '\n')) {
            if (j + 1 > r->lim->max_head) {
                i = j + 1;
                break;
            }
            r->scanned = (uint32_t)(j + 1);
            return (long)(j + 1);
        }
        if (j + 1 > r->lim->max_head) {
            i = j + 1;
            break;
        }
    }
    r->scanned = (uint32_t)i;
    /* i bytes arrived and the head has not ended within them. */
    if (r->line_end == 0 && i > too_long &&
        (i <= r->lim->max_head || too_long <= r->lim->max_head)) {
        fail(r, 414, "URI too long");
        return -1;
    }
    if (i > r->lim->max_head) {
        fail(r, 431, "request header fields too large");
        return -1;
    }
    return 0;
}

/* The end of the content of the line whose '\n' is at lf (CR dropped). */
static size_t
content_end(const char *p, size_t from, size_t lf)
{
    return lf > from && p[lf - 1] == '\r' ? lf - 1 : lf;
}

/* Parse "HTTP/D.D" at p[i..end): 0, or the status to fail with. */
static int
parse_version(struct folio_http_req *r, const char *p, size_t i, size_t end)
{
    if (end - i != 8 || memcmp(p + i, "HTTP/", 5) != 0 ||
        (unsigned char)(p[i + 5] - '0') > 9 || p[i + 6] != '.' ||
        (unsigned char)(p[i + 7] - '0') > 9)
        return 400;
    if (p[i + 5] != '1')
        return 505;
    r->minor = p[i + 7] == '0' ? 0 : 1; /* 1.2 and up read as 1.1 */
    return 0;
}

/* Split the request-target into path and query. */
static int
parse_target(struct folio_http_req *r, const char *p, size_t t0, size_t t1)
{
    const char *q;
    size_t a, e;

    a = t0;
    if (p[t0] == '/') {
        /* origin-form */
    } else if (t1 - t0 == 1 && p[t0] == '*' &&
               r->method == FOLIO_HTTP_OPTIONS) {
        r->flags |= FOLIO_HTTP_ASTERISK;
        r->path = span(t0, t0);
        return 0;
    } else {
        /* absolute-form: http[s]://authority[/path][?query] */
        if (t1 - t0 > 7 && folio_http_token_eq(p + t0, 7, "http://"))
            a = t0 + 7;
        else if (t1 - t0 > 8 && folio_http_token_eq(p + t0, 8, "https://"))
            a = t0 + 8;
        else
            return 400;
        e = a;
        while (e < t1 && p[e] != '/' && p[e] != '?' && p[e] != '#')
            e++;
        if (e == a)
            return 400;
        a = e;
        r->flags |= FOLIO_HTTP_ABSOLUTE;
    }
    /* A fragment is the client's, never sent; if it is, it is dropped. */
    if ((q = memchr(p + a, '#', t1 - a)) != NULL)
        t1 = (size_t)(q - p);
    if ((q = memchr(p + a, '?', t1 - a)) != NULL) {
        r->path = span(a, (size_t)(q - p));
        r->query = span((size_t)(q - p) + 1, t1);
    } else {
        r->path = span(a, t1);
    }
    return 0;
}

/* A comma-separated list of tokens: Connection's. */
static void
parse_connection(const char *v, size_t n, int *close, int *keep)
{
    size_t i = 0, s;

    while (i < n) {
        while (i < n && (v[i] == ',' || v[i] == ' ' || v[i] == '\t'))
            i++;
        s = i;
        while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
            i++;
        if (folio_http_token_eq(v + s, i - s, "close"))
            *close = 1;
        else if (folio_http_token_eq(v + s, i - s, "keep-alive"))
            *keep = 1;
    }
}

/* What the header lines said, before it is judged as a whole. */
struct fields {
    int ncl, nte, nhost, close, keep;
    int te_other; /* a transfer coding other than chunked */
    int expect;   /* 0 none, 1 100-continue, -1 another expectation */
};

/*
 * Parse the header lines of p[from..end) (end: past the empty line).
 * Returns 0, or the status to fail with (r->why set).
 */
static int
parse_fields(struct folio_http_req *r, const char *p, size_t from, size_t end,
             struct fields *f)
{
    const char *lf, *v;
    size_t pos = from, ce, i, vs, ve, n;
    uint64_t cl;

    memset(f, 0, sizeof(*f));
    while (pos < end) {
        lf = memchr(p + pos, '\n', end - pos);
        ce = content_end(p, pos, (size_t)(lf - p));
        if (ce == pos)
            break; /* the empty line */
        if (p[pos] == ' ' || p[pos] == '\t') {
            r->why = "obsolete line folding in the headers";
            return 400;
        }
        for (i = pos; i < ce && (cls[(unsigned char)p[i]] & C_TCHAR); i++)
            ;
        if (i == pos || i == ce || p[i] != ':') {
            r->why = i < ce && (p[i] == ' ' || p[i] == '\t')
                         ? "space before a header's colon"
                         : "malformed header line";
            return 400;
        }
        n = i - pos;
        for (vs = i + 1; vs < ce && (p[vs] == ' ' || p[vs] == '\t'); vs++)
            ;
        for (ve = ce; ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t'); ve--)
            ;
        for (i = vs; i < ve; i++)
            if (!(cls[(unsigned char)p[i]] & C_FIELD)) {
                r->why = "a control character in a header";
                return 400;
            }
        if (++r->nheaders > r->lim->max_headers) {
            r->why = "too many header lines";
            return 431;
        }
        v = p + vs;
        switch (n) {
        case 4:
            if (folio_http_token_eq(p + pos, n, "host")) {
                f->nhost++;
                r->host = span(vs, ve);
            }
            break;
        case 6:
            if (folio_http_token_eq(p + pos, n, "origin"))
                r->origin = span(vs, ve);
            else if (folio_http_token_eq(p + pos, n, "expect"))
                f->expect =
                    folio_http_token_eq(v, ve - vs, "100-continue") ? 1 : -1;
            break;
        case 10:
            if (folio_http_token_eq(p + pos, n, "connection"))
                parse_connection(v, ve - vs, &f->close, &f->keep);
            break;
        case 12:
            if (folio_http_token_eq(p + pos, n, "content-type"))
                r->content_type = span(vs, ve);
            break;
        case 14:
            if (!folio_http_token_eq(p + pos, n, "content-length"))
                break;
            if (++f->ncl > 1) {
                r->why = "more than one Content-Length";
                return 400;
            }
            cl = 0;
            for (i = vs; i < ve && (unsigned char)(p[i] - '0') <= 9; i++)
                cl = cl * 10 + (uint64_t)(p[i] - '0');
            if (i == vs || i != ve || ve - vs > 18) {
                r->why = "bad Content-Length";
                return 400;
            }
            r->content_length = cl;
            break;
        case 15:
            if (folio_http_token_eq(p + pos, n, "idempotency-key"))
                r->idempotency_key = span(vs, ve);
            break;
        case 17:
            if (!folio_http_token_eq(p + pos, n, "transfer-encoding"))
                break;
            f->nte++;
            if (!folio_http_token_eq(v, ve - vs, "chunked"))
                f->te_other = 1;
            break;
        case 29:
            if (folio_http_token_eq(p + pos, n,
                                    "access-control-request-method"))
                r->acr_method = span(vs, ve);
            break;
        case 30:
            if (folio_http_token_eq(p + pos, n,
                                    "access-control-request-headers"))
                r->acr_headers = span(vs, ve);
            break;
        }
        pos = (size_t)(lf - p) + 1;
    }
    if (f->nte > 0 && f->ncl > 0) {
        r->why = "both Content-Length and Transfer-Encoding";
        return 400;
    }
    if (f->nte > 1) {
        r->why = "more than one Transfer-Encoding";
        return 400;
    }
    return 0;
}

/* Parse a request's whole head, p[0..end). Returns a folio_http_result. */
static int
parse_request_head(struct folio_http_req *r, const char *p, size_t end)
{
    struct fields f;
    size_t i, ce, t0;
    int st;

    /* request-line = method SP request-target SP HTTP-version */
    ce = content_end(p, r->start, r->line_end - 1);
    for (i = r->start; i < ce && (cls[(unsigned char)p[i]] & C_TCHAR); i++)
        ;
    if (i == r->start || i == ce || p[i] != ' ')
        return fail(r, 400, "malformed request line");
    if (i - r->start > FOLIO_HTTP_MAX_METHOD)
        return fail(r, 400, "method name too long");
    r->method_s = span(r->start, i);
    r->method = method_of(p + r->start, i - r->start);
    t0 = ++i;
    while (i < ce && (cls[(unsigned char)p[i]] & C_TARGET))
        i++;
    if (i == t0 || i == ce || p[i] != ' ')
        return fail(r, 400, "malformed request line");
    if (i - t0 > r->lim->max_uri)
        return fail(r, 414, "URI too long");
    r->target = span(t0, i);
    if ((st = parse_version(r, p, i + 1, ce)) != 0)
        return fail(r, st,
                    st == 505 ? "HTTP version not supported"
                              : "malformed request line");
    if (parse_target(r, p, t0, i) != 0)
        return fail(r, 400, "malformed request-target");
    if ((st = parse_fields(r, p, r->line_end, end, &f)) != 0)
        return fail(r, st, r->why);
    if (f.nte > 0 && r->minor == 0)
        return fail(r, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (f.te_other)
        return fail(r, 501, "Transfer-Encoding other than chunked");
    if (r->minor == 1 && f.nhost != 1)
        return fail(r, 400,
                    f.nhost == 0 ? "no Host header"
                                 : "more than one Host header");
    if (f.nhost > 1)
        return fail(r, 400, "more than one Host header");
    if (f.expect < 0 && r->minor == 1)
        return fail(r, 417, "unsupported expectation");
    if (f.expect > 0 && r->minor == 1)
        r->flags |= FOLIO_HTTP_CONTINUE;
    if (r->content_length > r->lim->max_body)
        return fail(r, 413, "request body too large");
    if (r->minor == 1 ? !f.close : f.keep && !f.close)
        r->flags |= FOLIO_HTTP_KEEPALIVE;
    r->head_len = (uint32_t)end;
    r->body = span(end, end);
    r->flags |= FOLIO_HTTP_HEAD_DONE;
    if (f.nte > 0) {
        r->flags |= FOLIO_HTTP_CHUNKED;
        r->content_length = 0;
        r->state = S_CHUNK;
        r->cstate = C_SIZE;
        r->craw = end;
    } else {
        r->state = S_BODY;
        r->total = end + r->content_length;
    }
    return FOLIO_HTTP_MORE;
}

/*
 * Go on decoding a chunked body: from r->craw to len, moving data down
 * to the end of the decoded body.  Returns a folio_http_result.
 */
static int
dechunk(struct folio_http_req *r, char *p, size_t len)
{
    size_t i = (size_t)r->craw, n;
    unsigned char c;

    while (i < len) {
        c = (unsigned char)p[i];
        switch (r->cstate) {
        case C_SIZE:
            if (cls[c] & C_HEX) {
                if (++r->ctrail > SIZE_DIGITS_MAX)
                    return fail(r, 400, "chunk size too large");
                r->crem = r->crem << 4 | (uint64_t)hexval(c);
                i++;
                break;
            }
            if (r->ctrail == 0)
                return fail(r, 400, "malformed chunk size");
            if (r->content_length + r->crem > r->lim->max_body)
                return fail(r, 413, "request body too large");
            r->cstate = C_EXT;
            /* FALLTHROUGH */
        case C_EXT:
            if (c == '\r') {
                r->cstate = C_SIZE_LF;
                i++;
                break;
            }
            if (c == '\n') {
                i++;
                goto size_line_done;
            }
            /* ";name=value" extensions, ignored; bounded. */
            if (!(cls[c] & C_FIELD))
                return fail(r, 400, "malformed chunk extension");
            if (++r->ctrail > CHUNK_LINE_MAX)
                return fail(r, 400, "chunk extensions too long");
            i++;
            break;
        case C_SIZE_LF:
            if (c != '\n')
                return fail(r, 400, "bare CR in a chunk size line");
            i++;
        size_line_done:
            r->ctrail = 0;
            r->cstate = r->crem == 0 ? C_TRAILER : C_DATA;
            break;
        case C_DATA:
            n = len - i < r->crem ? len - i : (size_t)r->crem;
            if (r->body.off + r->body.len != i)
                memmove(p + r->body.off + r->body.len, p + i, n);
            r->body.len += (uint32_t)n;
            r->content_length += n;
            r->crem -= n;
            i += n;
            if (r->crem == 0)
                r->cstate = C_DATA_END;
            break;
        case C_DATA_END:
            if (c == '\r') {
                r->cstate = C_DATA_LF;
                i++;
                break;
            }
            /* FALLTHROUGH */
        case C_DATA_LF:
            if (c != '\n')
                return fail(r, 400, "chunk data longer than its size");
            i++;
            r->cstate = C_SIZE;
            break;
        case C_TRAILER:
            /* A trailer line, or the empty line that ends the body. */
            if (c == '\n' || c == '\r') {
                i++;
                if (c == '\n')
                    goto done;
                r->cstate = C_END_LF;
                break;
            }
            if (++r->nheaders > r->lim->max_headers)
                return fail(r, 431, "too many trailer lines");
            r->cstate = C_TRAILER_LINE;
            /* FALLTHROUGH */
        case C_TRAILER_LINE:
            if (c == '\n') {
                r->cstate = C_TRAILER;
            } else if (c == '\r') {
                r->cstate = C_TRAILER_LF;
            } else if (!(cls[c] & C_FIELD)) {
                return fail(r, 400, "a control character in a trailer");
            } else if (++r->ctrail > r->lim->max_head) {
                return fail(r, 431, "trailer fields too large");
            }
            i++;
            break;
        case C_TRAILER_LF:
        case C_END_LF:
            if (c != '\n')
                return fail(r, 400, "bare CR in the trailer");
            i++;
            if (r->cstate == C_END_LF)
                goto done;
            r->cstate = C_TRAILER;
            break;
        }
    }
    r->craw = i;
    return FOLIO_HTTP_MORE;
done:
    r->craw = i;
    r->total = i;
    r->state = S_DONE;
    return FOLIO_HTTP_DONE;
}

/* The body, for either parser: a folio_http_result. */
static int
body(struct folio_http_req *r, char *p, size_t len)
{
    if (r->state == S_CHUNK)
        return dechunk(r, p, len);
    if (len < r->total)
        return FOLIO_HTTP_MORE;
    r->body.len = (uint32_t)r->content_length;
    r->state = S_DONE;
    return FOLIO_HTTP_DONE;
}

/* Parse a response's head; a folio_http_result. */
static int
parse_response_head(struct folio_http_req *r, int req_method, const char *p,
                    size_t end)
{
    struct fields f;
    size_t ce, i;
    int st;

    /* status-line = HTTP-version SP status-code SP [reason-phrase] */
    ce = content_end(p, r->start, r->line_end - 1);
    i = r->start;
    if (ce - i < 12 || parse_version(r, p, i, i + 8) != 0 || p[i + 8] != ' ')
        return fail(r, 0, "malformed status line");
    for (st = 0, i += 9; i < r->start + 12; i++) {
        if ((unsigned char)(p[i] - '0') > 9)
            return fail(r, 0, "malformed status code");
        st = st * 10 + (p[i] - '0');
    }
    if (st < 100)
        return fail(r, 0, "malformed status code");
    r->status = (uint16_t)st;
    if (i < ce && p[i] != ' ')
        return fail(r, st, "malformed status line");
    r->method_s = span(i < ce ? i + 1 : ce, ce);
    if (parse_fields(r, p, r->line_end, end, &f) != 0)
        return fail(r, st, r->why);
    if (f.te_other)
        return fail(r, st, "Transfer-Encoding other than chunked");
    if (r->content_length > r->lim->max_body)
        return fail(r, st, "response body too large");
    if (r->minor == 1 ? !f.close : f.keep && !f.close)
        r->flags |= FOLIO_HTTP_KEEPALIVE;
    r->head_len = (uint32_t)end;
    r->body = span(end, end);
    r->flags |= FOLIO_HTTP_HEAD_DONE;
    if (req_method == FOLIO_HTTP_HEAD || st < 200 || st == 204 || st == 304) {
        r->content_length = 0;
        r->state = S_BODY;
        r->total = end;
    } else if (f.nte > 0) {
        r->flags |= FOLIO_HTTP_CHUNKED;
        r->state = S_CHUNK;
        r->cstate = C_SIZE;
        r->craw = end;
    } else if (f.ncl > 0) {
        r->state = S_BODY;
        r->total = end + r->content_length;
    } else {
        r->flags |= FOLIO_HTTP_CLOSE_DELIM;
        r->flags &= ~(uint32_t)FOLIO_HTTP_KEEPALIVE;
        r->state = S_BODY;
        r->total = UINT64_MAX;
    }
    return FOLIO_HTTP_MORE;
}

/* Both parsers: a request when req_method < 0. */
static int
parse(struct folio_http_req *r, int req_method, char *p, size_t len)
{
    long end;
    int rc;

    switch (r->state) {
    case S_DONE:
        return FOLIO_HTTP_DONE;
    case S_ERROR:
        return FOLIO_HTTP_ERROR;
    case S_HEAD:
        end = head_end(r, p, len, req_method < 0 ? r->lim->max_uri : 0);
        if (end <= 0)
            return end < 0 ? FOLIO_HTTP_ERROR : FOLIO_HTTP_MORE;
        rc = req_method < 0
                 ? parse_request_head(r, p, (size_t)end)
                 : parse_response_head(r, req_method, p, (size_t)end);
        if (rc != FOLIO_HTTP_MORE)
            return rc;
        break;
    }
    if (r->flags & FOLIO_HTTP_CLOSE_DELIM) {
        if (len - r->body.off > r->lim->max_body)
            return fail(r, r->status, "response body too large");
        r->body.len = (uint32_t)(len - r->body.off);
        return FOLIO_HTTP_MORE;
    }
    return body(r, p, len);
}

int
folio_http_req_parse(struct folio_http_req *r, char *p, size_t len)
{
    return parse(r, -1, p, len);
}

int
folio_http_res_parse(struct folio_http_req *r, int req_method, char *p,
                     size_t len)
{
    return parse(r, req_method, p, len);
}

int
folio_http_header_next(const char *p, const struct folio_http_req *r,
                       uint32_t *pos, struct folio_http_span *name,
                       struct folio_http_span *value)
{
    const char *lf, *colon;
    size_t at = *pos, ce, vs, ve;

    if (at < r->line_end)
        at = r->line_end;
    if (at >= r->head_len)
        return 0;
    lf = memchr(p + at, '\n', r->head_len - at);
    ce = content_end(p, at, (size_t)(lf - p));
    if (ce == at) {
        *pos = r->head_len;
        return 0;
    }
    colon = memchr(p + at, ':', ce - at);
    for (vs = (size_t)(colon - p) + 1;
         vs < ce && (p[vs] == ' ' || p[vs] == '\t'); vs++)
        ;
    for (ve = ce; ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t'); ve--)
        ;
    *name = span(at, (size_t)(colon - p));
    *value = span(vs, ve);
    *pos = (uint32_t)((size_t)(lf - p) + 1);
    return 1;
}

long
folio_http_unescape(const char *s, size_t n, char *out, int form)
{
    size_t i, o = 0;
    const char *pct;

    init_classes();
    for (i = 0; i < n;) {
        /* Runs without '%' (and without '+' in a form) go in one copy. */
        pct = form ? NULL : memchr(s + i, '%', n - i);
        if (!form && pct == NULL) {
            memmove(out + o, s + i, n - i);
            return (long)(o + n - i);
        }
        if (pct != NULL && (size_t)(pct - s) > i) {
            memmove(out + o, s + i, (size_t)(pct - s) - i);
            o += (size_t)(pct - s) - i;
            i = (size_t)(pct - s);
        }
        if (s[i] == '%') {
            if (n - i < 3 || !(cls[(unsigned char)s[i + 1]] & C_HEX) ||
                !(cls[(unsigned char)s[i + 2]] & C_HEX))
                return -1;
            out[o] = (char)(hexval((unsigned char)s[i + 1]) << 4 |
                            hexval((unsigned char)s[i + 2]));
            if (out[o++] == '\0')
                return -1;
            i += 3;
        } else {
            out[o++] = form && s[i] == '+' ? ' ' : s[i];
            i++;
        }
    }
    return (long)o;
}

int
folio_http_query_next(struct folio_http_query *q, const char **key,
                      size_t *klen, const char **val, size_t *vlen)
{
    const char *amp, *eq, *e;

    while (q->p < q->end) {
        if ((amp = memchr(q->p, '&', (size_t)(q->end - q->p))) == NULL)
            amp = q->end;
        e = amp;
        if (e == q->p) { /* "&&" */
            q->p = amp + 1;
            continue;
        }
        *key = q->p;
        if ((eq = memchr(q->p, '=', (size_t)(e - q->p))) != NULL) {
            *klen = (size_t)(eq - q->p);
            *val = eq + 1;
            *vlen = (size_t)(e - eq - 1);
        } else {
            *klen = (size_t)(e - q->p);
            *val = e;
            *vlen = 0;
        }
        q->p = amp < q->end ? amp + 1 : q->end;
        return 1;
    }
    return 0;
}

#define QUERY_KEY_MAX 64 /* a longer key is nobody's name */

int
folio_http_query_get(const char *q, size_t n, const char *name, char *out,
                     size_t cap, size_t *olen)
{
    struct folio_http_query it = {q, q + n};
    const char *k, *v;
    char kbuf[QUERY_KEY_MAX];
    size_t kl, vl, nl = strlen(name);
    long d;

    while (folio_http_query_next(&it, &k, &kl, &v, &vl)) {
        if (kl > sizeof(kbuf))
            continue;
        if ((d = folio_http_unescape(k, kl, kbuf, 1)) < 0 || (size_t)d != nl ||
            memcmp(kbuf, name, nl) != 0)
            continue;
        if (vl > cap || (d = folio_http_unescape(v, vl, out, 1)) < 0)
            return -1;
        *olen = (size_t)d;
        return 1;
    }
    return 0;
}
