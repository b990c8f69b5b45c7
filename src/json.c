/*
 * json.c - JSON text <-> msgpack without allocation (see json.h).
 *
 * JSON -> msgpack is a recursive descent over the text, depth-bounded,
 * writing as it reads: a string is looked at twice (its length and
 * validity first, so that its header is the smallest, then its bytes),
 * every other byte once.  msgpack -> JSON walks the cursor and appends
 * runs of bytes that need no escape in one copy each.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/json.h"
#include "src/utf8.h"

/* ---- JSON text -> msgpack ---- */

struct parser {
    const unsigned char *p;
    size_t n;
    size_t i;
    uint32_t max_depth;
    struct folio_buf *out;
    struct folio_json_err *e;
    int rc; /* the first error */
};

static int perr(struct parser *ps, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
perr(struct parser *ps, size_t at, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (ps->rc != 0)
        return -1;
    ps->rc = FOLIO_EINVAL;
    ps->e->at = at;
    k = snprintf(ps->e->msg, sizeof(ps->e->msg),
                 "invalid JSON at byte %zu: ", at);
    va_start(ap, fmt);
    vsnprintf(ps->e->msg + k, sizeof(ps->e->msg) - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

/* The output cannot grow: say so once. */
static int
out_fail(struct parser *ps, int rc)
{
    if (ps->rc == 0) {
        ps->rc = rc;
        ps->e->at = ps->i;
        snprintf(ps->e->msg, sizeof(ps->e->msg), "%s",
                 rc == FOLIO_ETOOBIG ? "the request's msgpack form is too large"
                                     : "out of memory");
    }
    return -1;
}

static int
emit(struct parser *ps, const void *b, size_t len)
{
    int rc;

    if ((rc = folio_buf_append(ps->out, b, len)) != 0)
        return out_fail(ps, rc);
    return 0;
}

static void
be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

static void
be64(unsigned char *b, uint64_t v)
{
    be32(b, (uint32_t)(v >> 32));
    be32(b + 4, (uint32_t)v);
}

/* The smallest msgpack form of a non-negative integer. */
static int
emit_uint(struct parser *ps, uint64_t v)
{
    unsigned char b[9];

    if (v < 128) {
        b[0] = (unsigned char)v;
        return emit(ps, b, 1);
    }
    if (v <= 0xff) {
        b[0] = 0xcc;
        b[1] = (unsigned char)v;
        return emit(ps, b, 2);
    }
    if (v <= 0xffff) {
        b[0] = 0xcd;
        b[1] = (unsigned char)(v >> 8);
        b[2] = (unsigned char)v;
        return emit(ps, b, 3);
    }
    if (v <= 0xffffffffu) {
        b[0] = 0xce;
        be32(b + 1, (uint32_t)v);
        return emit(ps, b, 5);
    }
    b[0] = 0xcf;
    be64(b + 1, v);
    return emit(ps, b, 9);
}

/* The smallest msgpack form of a negative integer. */
static int
emit_neg(struct parser *ps, int64_t v)
{
    unsigned char b[9];

    if (v >= -32) {
        b[0] = (unsigned char)(int8_t)v;
        return emit(ps, b, 1);
    }
    if (v >= INT8_MIN) {
        b[0] = 0xd0;
        b[1] = (unsigned char)(int8_t)v;
        return emit(ps, b, 2);
    }
    if (v >= INT16_MIN) {
        b[0] = 0xd1;
        b[1] = (unsigned char)((uint16_t)v >> 8);
        b[2] = (unsigned char)(uint16_t)v;
        return emit(ps, b, 3);
    }
    if (v >= INT32_MIN) {
        b[0] = 0xd2;
        be32(b + 1, (uint32_t)v);
        return emit(ps, b, 5);
    }
    b[0] = 0xd3;
    be64(b + 1, (uint64_t)v);
    return emit(ps, b, 9);
}

static int
emit_double(struct parser *ps, double d)
{
    unsigned char b[9];
    uint64_t u;

    memcpy(&u, &d, sizeof(u));
    b[0] = 0xcb;
    be64(b + 1, u);
    return emit(ps, b, 9);
}

static int
emit_str_head(struct parser *ps, size_t len)
{
    unsigned char b[5];

    if (len > 0xffffffffu)
        return out_fail(ps, FOLIO_ETOOBIG);
    if (len < 32) {
        b[0] = (unsigned char)(0xa0 | len);
        return emit(ps, b, 1);
    }
    if (len <= 0xff) {
        b[0] = 0xd9;
        b[1] = (unsigned char)len;
        return emit(ps, b, 2);
    }
    if (len <= 0xffff) {
        b[0] = 0xda;
        b[1] = (unsigned char)(len >> 8);
        b[2] = (unsigned char)len;
        return emit(ps, b, 3);
    }
    b[0] = 0xdb;
    be32(b + 1, (uint32_t)len);
    return emit(ps, b, 5);
}

static void
skip_ws(struct parser *ps)
{
    while (ps->i < ps->n && (ps->p[ps->i] == ' ' || ps->p[ps->i] == '\t' ||
                             ps->p[ps->i] == '\n' || ps->p[ps->i] == '\r'))
        ps->i++;
}

static int
hex4(const unsigned char *s, uint32_t *v)
{
    uint32_t x = 0;
    int k, d;

    for (k = 0; k < 4; k++) {
        if (s[k] >= '0' && s[k] <= '9')
            d = s[k] - '0';
        else if ((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'f')
            d = (s[k] | 0x20) - 'a' + 10;
        else
            return -1;
        x = x << 4 | (uint32_t)d;
    }
    *v = x;
    return 0;
}

static size_t
utf8_put(unsigned char *w, uint32_t cp)
{
    if (cp < 0x80) {
        w[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        w[0] = (unsigned char)(0xc0 | cp >> 6);
        w[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        w[0] = (unsigned char)(0xe0 | cp >> 12);
        w[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        w[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    w[0] = (unsigned char)(0xf0 | cp >> 18);
    w[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    w[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    w[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/*
 * The escape at s[0..] (s[0] == '\\', inside [.., end)): its code point
 * and the bytes it takes.  Returns 0, or -1 after recording the error.
 */
static int
read_escape(struct parser *ps, size_t at, uint32_t *cp, size_t *used)
{
    const unsigned char *s = ps->p + at;
    size_t left = ps->n - at;
    uint32_t hi, lo;

    if (left < 2)
        return perr(ps, at, "unterminated string");
    switch (s[1]) {
    case '"':
    case '\\':
    case '/':
        *cp = s[1];
        break;
    case 'b':
        *cp = '\b';
        break;
    case 'f':
        *cp = '\f';
        break;
    case 'n':
        *cp = '\n';
        break;
    case 'r':
        *cp = '\r';
        break;
    case 't':
        *cp = '\t';
        break;
    case 'u':
        if (left < 6 || hex4(s + 2, &hi) != 0)
            return perr(ps, at, "malformed \\u escape");
        if (hi >= 0xdc00 && hi <= 0xdfff)
            return perr(ps, at, "lone surrogate \\u%04x", (unsigned)hi);
        if (hi >= 0xd800 && hi <= 0xdbff) {
            if (left < 12 || s[6] != '\\' || s[7] != 'u' ||
                hex4(s + 8, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
                return perr(ps, at, "lone surrogate \\u%04x", (unsigned)hi);
            *cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
            *used = 12;
            return 0;
        }
        *cp = hi;
        *used = 6;
        return 0;
    default:
        return perr(ps, at, "unknown escape '\\%c'",
                    s[1] >= 0x20 && s[1] < 0x7f ? s[1] : '?');
    }
    *used = 2;
    return 0;
}

/* A string at ps->i (the opening quote). */
static int
parse_string(struct parser *ps)
{
    const unsigned char *p = ps->p;
    size_t j = ps->i + 1, dlen = 0, used, k, start = ps->i;
    int escapes = 0, rc;
    unsigned char *w;
    uint32_t cp;

    /* First pass: where it ends, how long it decodes, whether it is valid. */
    for (;;) {
        if (j >= ps->n)
            return perr(ps, start, "unterminated string");
        if (p[j] == '"')
            break;
        if (p[j] == '\\') {
            if (read_escape(ps, j, &cp, &used) != 0)
                return -1;
            dlen += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            j += used;
            escapes = 1;
        } else if (p[j] < 0x20) {
            return perr(ps, j, "control character 0x%02x in a string", p[j]);
        } else if (p[j] < 0x80) {
            dlen++;
            j++;
        } else {
            if ((k = folio_utf8_len(p + j, ps->n - j)) == 0)
                return perr(ps, j, "invalid UTF-8 in a string");
            dlen += k;
            j += k;
        }
    }
    if (emit_str_head(ps, dlen) != 0)
        return -1;
    if (!escapes) {
        ps->i = j + 1;
        return emit(ps, p + start + 1, dlen);
    }
    /* Second pass: decode straight into the output. */
    if ((rc = folio_buf_reserve(ps->out, dlen)) != 0)
        return out_fail(ps, rc);
    w = (unsigned char *)ps->out->b_data + ps->out->b_len;
    for (k = start + 1; k < j;) {
        if (p[k] != '\\') {
            *w++ = p[k++];
            continue;
        }
        (void)read_escape(ps, k, &cp, &used); /* checked above */
        w += utf8_put(w, cp);
        k += used;
    }
    ps->out->b_len += dlen;
    ps->i = j + 1;
    return 0;
}

/* A number at ps->i: JSON's grammar, then an integer or a double. */
static int
parse_number(struct parser *ps)
{
    const unsigned char *p = ps->p;
    size_t i = ps->i, start = ps->i, d0;
    int neg = 0, isint = 1, over = 0;
    uint64_t v = 0;
    char text[FOLIO_JSON_NUMBER_MAX + 1];
    double d;

    if (p[i] == '-') {
        neg = 1;
        i++;
    }
    d0 = i;
    if (i < ps->n && p[i] == '0') {
        i++;
    } else if (i < ps->n && p[i] >= '1' && p[i] <= '9') {
        for (; i < ps->n && p[i] >= '0' && p[i] <= '9'; i++) {
            if (v > (UINT64_MAX - (p[i] - '0')) / 10)
                over = 1;
            v = v * 10 + (uint64_t)(p[i] - '0');
        }
    } else {
        return perr(ps, start, "malformed number");
    }
    if (p[d0] == '0' && i < ps->n && p[i] >= '0' && p[i] <= '9')
        return perr(ps, start, "leading zero in a number");
    if (i < ps->n && p[i] == '.') {
        isint = 0;
        if (++i >= ps->n || p[i] < '0' || p[i] > '9')
            return perr(ps, start, "malformed number");
        while (i < ps->n && p[i] >= '0' && p[i] <= '9')
            i++;
    }
    if (i < ps->n && (p[i] == 'e' || p[i] == 'E')) {
        isint = 0;
        if (++i < ps->n && (p[i] == '+' || p[i] == '-'))
            i++;
        if (i >= ps->n || p[i] < '0' || p[i] > '9')
            return perr(ps, start, "malformed number");
        while (i < ps->n && p[i] >= '0' && p[i] <= '9')
            i++;
    }
    ps->i = i;
    if (isint && !over && (!neg || v <= (uint64_t)INT64_MAX + 1)) {
        if (!neg || v == 0)
            return emit_uint(ps, v);
        return emit_neg(ps,
                        v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v);
    }
    if (i - start > FOLIO_JSON_NUMBER_MAX)
        return perr(ps, start, "number longer than %d characters",
                    FOLIO_JSON_NUMBER_MAX);
    memcpy(text, p + start, i - start);
    text[i - start] = '\0';
    d = strtod(text, NULL);
    if (isinf(d))
        return perr(ps, start, "number out of range");
    return emit_double(ps, d);
}

/* An error naming the byte at ps->i (there is one). */
static int
unexpected(struct parser *ps)
{
    unsigned char c = ps->p[ps->i];

    if (c >= 0x20 && c < 0x7f)
        return perr(ps, ps->i, "unexpected '%c'", c);
    return perr(ps, ps->i, "unexpected byte 0x%02x", c);
}

static int
literal(struct parser *ps, const char *lit, size_t len, unsigned char code)
{
    if (ps->n - ps->i < len || memcmp(ps->p + ps->i, lit, len) != 0)
        return unexpected(ps);
    ps->i += len;
    return emit(ps, &code, 1);
}

static int parse_value(struct parser *ps, uint32_t depth);

/* An array or an object at ps->i; its header patched at its end. */
static int
parse_container(struct parser *ps, uint32_t depth, int object)
{
    unsigned char head[5];
    size_t mark = folio_buf_mark(ps->out), open = ps->i;
    uint32_t count = 0;
    char close = object ? '}' : ']';

    if (depth >= ps->max_depth)
        return perr(ps, ps->i, "nested deeper than %u levels", ps->max_depth);
    head[0] = object ? 0xdf : 0xdd;
    be32(head + 1, 0);
    if (emit(ps, head, 5) != 0)
        return -1;
    ps->i++;
    skip_ws(ps);
    if (ps->i < ps->n && ps->p[ps->i] == (unsigned char)close) {
        ps->i++;
        return 0;
    }
    for (;;) {
        if (object) {
            skip_ws(ps);
            if (ps->i >= ps->n || ps->p[ps->i] != '"')
                return perr(ps, ps->i, "expected a string key");
            if (parse_string(ps) != 0)
                return -1;
            skip_ws(ps);
            if (ps->i >= ps->n || ps->p[ps->i] != ':')
                return perr(ps, ps->i, "expected ':'");
            ps->i++;
        }
        if (parse_value(ps, depth + 1) != 0)
            return -1;
        if (count == UINT32_MAX)
            return perr(ps, open, "too many elements");
        count++;
        skip_ws(ps);
        if (ps->i >= ps->n)
            return perr(ps, open, "unterminated %s",
                        object ? "object" : "array");
        if (ps->p[ps->i] == (unsigned char)close) {
            ps->i++;
            break;
        }
        if (ps->p[ps->i] != ',')
            return perr(ps, ps->i, "expected ',' or '%c'", close);
        ps->i++;
    }
    be32((unsigned char *)folio_buf_at(ps->out, mark) + 1, count);
    return 0;
}

static int
parse_value(struct parser *ps, uint32_t depth)
{
    skip_ws(ps);
    if (ps->i >= ps->n)
        return perr(ps, ps->i, "expected a value");
    switch (ps->p[ps->i]) {
    case '{':
        return parse_container(ps, depth, 1);
    case '[':
        return parse_container(ps, depth, 0);
    case '"':
        return parse_string(ps);
    case 't':
        return literal(ps, "true", 4, 0xc3);
    case 'f':
        return literal(ps, "false", 5, 0xc2);
    case 'n':
        return literal(ps, "null", 4, 0xc0);
    default:
        if (ps->p[ps->i] == '-' || (ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9'))
            return parse_number(ps);
        return unexpected(ps);
    }
}

int
folio_json_to_mp(const char *p, size_t n, uint32_t max_depth,
                 struct folio_buf *out, struct folio_json_err *e)
{
    struct parser ps;
    size_t mark = folio_buf_mark(out);

    ps.p = (const unsigned char *)p;
    ps.n = n;
    ps.i = 0;
    ps.max_depth =
        max_depth < FOLIO_MP_MAX_DEPTH ? max_depth : FOLIO_MP_MAX_DEPTH;
    ps.out = out;
    ps.e = e;
    ps.rc = 0;
    e->at = 0;
    e->msg[0] = '\0';
    if (parse_value(&ps, 0) == 0) {
        skip_ws(&ps);
        if (ps.i < n)
            perr(&ps, ps.i, "text after the value");
    }
    if (ps.rc != 0)
        folio_buf_truncate(out, mark);
    return ps.rc;
}

/* ---- msgpack -> JSON text ---- */

/*
 * What each byte needs in a string: 0 nothing, 1 a JSON escape, 2 an
 * HTML entity (FOLIO_JSON_HTML only), 3 a UTF-8 check (0x80 and up).
 */
static unsigned char esc_class[256];

static void
init_esc(void)
{
    unsigned c;

    if (esc_class['"'] != 0)
        return;
    for (c = 0; c < 0x20; c++)
        esc_class[c] = 1;
    esc_class['"'] = 1;
    esc_class['\\'] = 1;
    esc_class['&'] = 2;
    esc_class['<'] = 2;
    esc_class['>'] = 2;
    esc_class['\''] = 2;
    for (c = 0x80; c < 0x100; c++)
        esc_class[c] = 3;
}

static int
put(struct folio_buf *out, const char *s, size_t n)
{
    return folio_buf_append(out, s, n);
}

int
folio_json_put_str(struct folio_buf *out, const char *s, size_t n,
                   unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    int html = (flags & FOLIO_JSON_HTML) != 0, rc;
    size_t i = 0, run = 0, k;
    const char *rep;
    char u[6];

    init_esc();
    if ((rc = put(out, "\"", 1)) != 0)
        return rc;
    while (i < n) {
        unsigned char c = p[i], e = esc_class[c];

        if (e == 0 || (e == 2 && !html)) {
            i++;
            continue;
        }
        if (e == 3 && (k = folio_utf8_len(p + i, n - i)) > 0) {
            i += k;
            continue;
        }
        /* Flush the run before byte i, then its replacement. */
        if (i > run && (rc = put(out, s + run, i - run)) != 0)
            return rc;
        rep = NULL;
        k = 0;
        switch (c) {
        case '"':
            rep = html ? "&quot;" : "\\\"";
            break;
        case '\\':
            rep = "\\\\";
            break;
        case '\b':
            rep = "\\b";
            break;
        case '\f':
            rep = "\\f";
            break;
        case '\n':
            rep = "\\n";
            break;
        case '\r':
            rep = "\\r";
            break;
        case '\t':
            rep = "\\t";
            break;
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            if (c < 0x20) {
                memcpy(u, "\\u00", 4);
                u[4] = hex[c >> 4];
                u[5] = hex[c & 15];
                rep = u;
                k = 6;
            } else {
                rep = "\xef\xbf\xbd"; /* U+FFFD for a stray byte */
            }
        }
        if ((rc = put(out, rep, k ? k : strlen(rep))) != 0)
            return rc;
        run = ++i;
    }
    if (i > run && (rc = put(out, s + run, i - run)) != 0)
        return rc;
    return put(out, "\"", 1);
}

int
folio_json_put_u64(struct folio_buf *out, uint64_t v)
{
    char b[20];
    size_t k = sizeof(b);

    do {
        b[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return put(out, b + k, sizeof(b) - k);
}

int
folio_json_put_i64(struct folio_buf *out, int64_t v)
{
    int rc;

    if (v >= 0)
        return folio_json_put_u64(out, (uint64_t)v);
    if ((rc = put(out, "-", 1)) != 0)
        return rc;
    return folio_json_put_u64(out, (uint64_t)0 - (uint64_t)v);
}

/* The shortest decimal that reads back as the same float or double. */
static int
put_real(struct folio_buf *out, double d, int is32)
{
    char b[40];
    int prec;

    if (isnan(d))
        return put(out, "\"NaN\"", 5);
    if (isinf(d))
        return d > 0 ? put(out, "\"Infinity\"", 10)
                     : put(out, "\"-Infinity\"", 11);
    for (prec = 1; prec <= 17; prec++) {
        snprintf(b, sizeof(b), "%.*g", prec, d);
        if (is32 ? strtof(b, NULL) == (float)d : strtod(b, NULL) == d)
            break;
    }
    /* Keep it a real: 2 is written 2.0. */
    if (strspn(b, "-0123456789") == strlen(b))
        strcat(b, ".0");
    return put(out, b, strlen(b));
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int
put_base64(struct folio_buf *out, const unsigned char *p, size_t n)
{
    char q[4];
    uint32_t v;
    int rc;

    for (; n >= 3; p += 3, n -= 3) {
        v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        q[0] = b64_alphabet[v >> 18];
        q[1] = b64_alphabet[v >> 12 & 63];
        q[2] = b64_alphabet[v >> 6 & 63];
        q[3] = b64_alphabet[v & 63];
        if ((rc = put(out, q, 4)) != 0)
            return rc;
    }
    if (n > 0) {
        v = (uint32_t)p[0] << 16 | (n == 2 ? (uint32_t)p[1] << 8 : 0);
        q[0] = b64_alphabet[v >> 18];
        q[1] = b64_alphabet[v >> 12 & 63];
        q[2] = n == 2 ? b64_alphabet[v >> 6 & 63] : '=';
        q[3] = '=';
        return put(out, q, 4);
    }
    return 0;
}

static int
newline(struct folio_buf *out, int indent, int level)
{
    static const char spaces[] = "                                ";
    size_t k = (size_t)indent * (size_t)level, m;
    int rc;

    if (indent < 0)
        return 0;
    if ((rc = put(out, "\n", 1)) != 0)
        return rc;
    for (; k > 0; k -= m) {
        m = k < sizeof(spaces) - 1 ? k : sizeof(spaces) - 1;
        if ((rc = put(out, spaces, m)) != 0)
            return rc;
    }
    return 0;
}

static int put_value(struct folio_buf *out, struct folio_mp_cur *c, int indent,
                     int level, unsigned flags);

/*
 * A key that is not a str: its compact JSON text, as a string.  Written
 * where it goes, then quoted in place: its text has no control
 * characters, so '"' and '\\' are all that need an escape.
 */
static int
put_key_text(struct folio_buf *out, struct folio_mp_cur *c, unsigned flags,
             int level)
{
    size_t mark = folio_buf_mark(out), len, extra = 0, i, to;
    char *s;
    int rc;

    if ((rc = put_value(out, c, -1, level, flags)) != 0)
        return rc;
    len = folio_buf_mark(out) - mark;
    s = folio_buf_at(out, mark);
    for (i = 0; i < len; i++)
        extra += s[i] == '"' || s[i] == '\\';
    if ((rc = folio_buf_reserve(out, extra + 2)) != 0)
        return rc;
    s = folio_buf_at(out, mark); /* reserve may move the bytes */
    to = len + extra + 1;
    s[to] = '"';
    for (i = len; i-- > 0;) {
        s[--to] = s[i];
        if (s[i] == '"' || s[i] == '\\')
            s[--to] = '\\';
    }
    s[0] = '"';
    out->b_len += extra + 2;
    return 0;
}

static int
put_value(struct folio_buf *out, struct folio_mp_cur *c, int indent, int level,
          unsigned flags)
{
    const char *s;
    const char *sep = indent < 0 ? ":" : ": ";
    uint32_t n, i, klen;
    uint64_t u;
    int64_t v;
    double d;
    int8_t type;
    int b, is32, rc;
    char t[8];

    if (level >= FOLIO_MP_MAX_DEPTH)
        return FOLIO_EPROTO;
    switch (folio_mp_type(c)) {
    case FOLIO_MP_NIL:
        folio_mp_read_nil(c);
        return put(out, "null", 4);
    case FOLIO_MP_BOOL:
        folio_mp_read_bool(c, &b);
        return b ? put(out, "true", 4) : put(out, "false", 5);
    case FOLIO_MP_UINT:
        if (folio_mp_read_uint(c, &u) != 0)
            return FOLIO_EPROTO;
        return folio_json_put_u64(out, u);
    case FOLIO_MP_INT:
        if (folio_mp_read_int(c, &v) != 0)
            return FOLIO_EPROTO;
        return folio_json_put_i64(out, v);
    case FOLIO_MP_FLOAT:
        is32 = *c->p == 0xca;
        if (folio_mp_read_float(c, &d) != 0)
            return FOLIO_EPROTO;
        return put_real(out, d, is32);
    case FOLIO_MP_STR:
        if (folio_mp_read_str(c, &s, &n) != 0)
            return FOLIO_EPROTO;
        return folio_json_put_str(out, s, n, flags);
    case FOLIO_MP_BIN:
        if (folio_mp_read_bin(c, &s, &n) != 0)
            return FOLIO_EPROTO;
        if ((rc = put(out, "{\"$bin\"", 7)) != 0 ||
            (rc = put(out, sep, strlen(sep))) != 0 ||
            (rc = put(out, "\"", 1)) != 0 ||
            (rc = put_base64(out, (const unsigned char *)s, n)) != 0)
            return rc;
        return put(out, "\"}", 2);
    case FOLIO_MP_EXT:
        if (folio_mp_read_ext(c, &type, &s, &n) != 0)
            return FOLIO_EPROTO;
        snprintf(t, sizeof(t), "%d", type);
        if ((rc = put(out, "{\"$ext\"", 7)) != 0 ||
            (rc = put(out, sep, strlen(sep))) != 0 ||
            (rc = put(out, "[", 1)) != 0 ||
            (rc = put(out, t, strlen(t))) != 0 ||
            (rc = put(out, indent < 0 ? ",\"" : ", \"", indent < 0 ? 2 : 3)) !=
                0 ||
            (rc = put_base64(out, (const unsigned char *)s, n)) != 0)
            return rc;
        return put(out, "\"]}", 3);
    case FOLIO_MP_ARRAY:
        if (folio_mp_read_array(c, &n) != 0)
            return FOLIO_EPROTO;
        if ((rc = put(out, "[", 1)) != 0)
            return rc;
        for (i = 0; i < n; i++) {
            if ((i > 0 && (rc = put(out, ",", 1)) != 0) ||
                (rc = newline(out, indent, level + 1)) != 0 ||
                (rc = put_value(out, c, indent, level + 1, flags)) != 0)
                return rc;
        }
        if (n > 0 && (rc = newline(out, indent, level)) != 0)
            return rc;
        return put(out, "]", 1);
    case FOLIO_MP_MAP:
        if (folio_mp_read_map(c, &n) != 0)
            return FOLIO_EPROTO;
        if ((rc = put(out, "{", 1)) != 0)
            return rc;
        for (i = 0; i < n; i++) {
            if ((i > 0 && (rc = put(out, ",", 1)) != 0) ||
                (rc = newline(out, indent, level + 1)) != 0)
                return rc;
            if (folio_mp_read_str(c, &s, &klen) == 0)
                rc = folio_json_put_str(out, s, klen, flags);
            else
                rc = put_key_text(out, c, flags, level + 1);
            if (rc != 0 || (rc = put(out, sep, strlen(sep))) != 0 ||
                (rc = put_value(out, c, indent, level + 1, flags)) != 0)
                return rc;
        }
        if (n > 0 && (rc = newline(out, indent, level)) != 0)
            return rc;
        return put(out, "}", 1);
    case FOLIO_MP_NONE:
        break;
    }
    return FOLIO_EPROTO;
}

int
folio_json_put_mp(struct folio_buf *out, struct folio_mp_cur *c, int indent,
                  unsigned flags)
{
    struct folio_mp_cur at = *c;
    size_t mark = folio_buf_mark(out);
    int rc;

    if ((rc = put_value(out, c, indent, 0, flags)) == FOLIO_EPROTO) {
        folio_buf_truncate(out, mark);
        *c = at;
    }
    return rc;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void
civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    uint64_t doe = (uint64_t)(z - era * 146097);
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;

    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

int
folio_json_put_time_ms(struct folio_buf *out, int64_t ms)
{
    int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    unsigned frac = (unsigned)(ms - secs * 1000), sod, mo, d;
    int64_t y;
    char b[40];
    int k;

    sod = (unsigned)(secs - days * 86400);
    civil(days, &y, &mo, &d);
    k = snprintf(b, sizeof(b), "\"%04lld-%02u-%02uT%02u:%02u:%02u",
                 (long long)y, mo, d, sod / 3600, sod / 60 % 60, sod % 60);
    if (frac != 0) {
        k += snprintf(b + k, sizeof(b) - (size_t)k, ".%03u", frac);
        while (b[k - 1] == '0')
            k--;
    }
    b[k++] = 'Z';
    b[k++] = '"';
    return put(out, b, (size_t)k);
}

int
folio_json_key_eq(const char *k, size_t n, const char *name)
{
    const unsigned char *p = (const unsigned char *)k;
    size_t i = 0;
    unsigned char c;

    for (; *name != '\0'; name++) {
        c = (unsigned char)*name;
        if (c >= 'A' && c <= 'Z')
            c |= 0x20;
        if (i < n && p[i] < 0x80) {
            if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] | 0x20 : p[i]) != c)
                return 0;
            i++;
        } else if (c == 'k' && n - i >= 3 && p[i] == 0xe2 && p[i + 1] == 0x84 &&
                   p[i + 2] == 0xaa) {
            i += 3; /* U+212A KELVIN SIGN */
        } else if (c == 's' && n - i >= 2 && p[i] == 0xc5 && p[i + 1] == 0xbf) {
            i += 2; /* U+017F LATIN SMALL LETTER LONG S */
        } else {
            return 0;
        }
    }
    return i == n;
}
