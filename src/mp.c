/*
 * mp.c - msgpack framing scanner and zero-copy cursor (see mp.h).
 */
#include "config.h"

#include <string.h>

#include "src/mp.h"

/* What a value's header says about the bytes that follow it. */
struct head {
    uint64_t size;     /* header bytes + payload bytes */
    uint64_t children; /* values nested directly inside (2n for a map) */
    int container;
};

static inline uint16_t
be16(const unsigned char *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t
be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static inline uint64_t
be64(const unsigned char *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/*
 * Decode the header at p (avail bytes there).  Returns 0, 1 when more
 * bytes are needed to read the header itself, -1 for the never-used 0xc1.
 */
static int
head(const unsigned char *p, uint64_t avail, struct head *h)
{
    unsigned t = p[0];
    uint64_t hs, n;

    h->children = 0;
    h->container = 0;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
        h->size = 1;
        return 0;
    }
    if (t >= 0x80 && t <= 0x8f) {
        h->size = 1;
        h->children = 2 * (uint64_t)(t & 0x0f);
        h->container = 1;
        return 0;
    }
    if (t >= 0x90 && t <= 0x9f) {
        h->size = 1;
        h->children = t & 0x0f;
        h->container = 1;
        return 0;
    }
    if (t >= 0xa0 && t <= 0xbf) {
        h->size = 1 + (uint64_t)(t & 0x1f);
        return 0;
    }
    switch (t) {
    case 0xc1:
        return -1;
    case 0xca: /* float 32 */
    case 0xce: /* uint 32 */
    case 0xd2: /* int 32 */
        h->size = 5;
        return 0;
    case 0xcb:
    case 0xcf:
    case 0xd3:
        h->size = 9;
        return 0;
    case 0xcc:
    case 0xd0:
        h->size = 2;
        return 0;
    case 0xcd:
    case 0xd1:
        h->size = 3;
        return 0;
    case 0xd4: /* fixext 1, 2, 4, 8, 16: type byte + data */
        h->size = 3;
        return 0;
    case 0xd5:
        h->size = 4;
        return 0;
    case 0xd6:
        h->size = 6;
        return 0;
    case 0xd7:
        h->size = 10;
        return 0;
    case 0xd8:
        h->size = 18;
        return 0;
    }
    /* Variable-length forms: the length follows the type byte. */
    switch (t) {
    case 0xc4: /* bin 8 */
    case 0xd9: /* str 8 */
        hs = 2;
        break;
    case 0xc5:
    case 0xda:
    case 0xdc: /* array 16 */
    case 0xde: /* map 16 */
        hs = 3;
        break;
    case 0xc6:
    case 0xdb:
    case 0xdd: /* array 32 */
    case 0xdf: /* map 32 */
        hs = 5;
        break;
    case 0xc7: /* ext 8: len, type */
        hs = 3;
        break;
    case 0xc8:
        hs = 4;
        break;
    default: /* 0xc9 ext 32 */
        hs = 6;
        break;
    }
    if (avail < hs)
        return 1;
    switch (t) {
    case 0xc4:
    case 0xd9:
    case 0xc7:
        n = p[1];
        break;
    case 0xc5:
    case 0xda:
    case 0xdc:
    case 0xde:
    case 0xc8:
        n = be16(p + 1);
        break;
    default:
        n = be32(p + 1);
        break;
    }
    if (t == 0xdc || t == 0xdd) {
        h->size = hs;
        h->children = n;
        h->container = 1;
    } else if (t == 0xde || t == 0xdf) {
        h->size = hs;
        h->children = 2 * n;
        h->container = 1;
    } else {
        h->size = hs + n;
    }
    return 0;
}

void
folio_mp_scan_init(struct folio_mp_scan *st, uint64_t max_bytes,
                   uint32_t max_depth)
{
    memset(st, 0, offsetof(struct folio_mp_scan, remain));
    st->max_bytes = max_bytes;
    st->max_depth = max_depth > FOLIO_MP_MAX_DEPTH ? FOLIO_MP_MAX_DEPTH
                    : max_depth == 0                ? 1
                                                    : max_depth;
}

/*
 * The size of the values of types 0xc0-0xdf that their type byte alone
 * gives (nil, booleans, fixed-width numbers, fixext), for the scanner's
 * fast path; 0 for the others (0xc1, and the forms with a length), which
 * head() decodes.
 */
static const uint8_t fixed_c0[32] = {
    1,  0, 1, 1, 0, 0, 0, 0,  /* 0xc0 nil, 0xc1, 0xc2-3 bool, 0xc4-7 */
    0,  0, 5, 9, 2, 3, 5, 9,  /* 0xc8-9, float 32/64, uint 8-64 */
    2,  3, 5, 9, 3, 4, 6, 10, /* int 8-64, fixext 1, 2, 4, 8 */
    18, 0, 0, 0, 0, 0, 0, 0   /* fixext 16, 0xd9-0xdf */
};

/*
 * The common types are decoded inline (fixints, fixstr, fixarray, fixmap,
 * the fixed-width forms), the rest by head(); the position, the depth and
 * the count left in the innermost container are kept in registers and
 * stored on the way out.  A scalar's end is checked against the size
 * limit once, on the way out (positions only grow: a scalar past the
 * limit makes every later position pass it too, and the result is
 * FOLIO_MP_TOOBIG whatever was found after it, as if the scan had
 * stopped there); a container's at once, before its claim is weighed.
 */
int
folio_mp_scan(struct folio_mp_scan *st, const void *buf, size_t len)
{
    const unsigned char *b = buf;
    uint64_t pos = st->pos, next, children, top, max = st->max_bytes;
    uint32_t depth = st->depth;
    struct head h;
    unsigned t;
    int r, rc;

    if (st->done)
        return pos <= len ? FOLIO_MP_DONE : FOLIO_MP_MORE;
    top = depth > 0 ? st->remain[depth - 1] : 0;
    for (;;) {
        if (pos >= len) {
            rc = FOLIO_MP_MORE;
            break;
        }
        t = b[pos];
        if (t < 0x80 || t >= 0xe0) {
            pos++;
        } else if (t < 0xa0) {
            next = pos + 1;
            children = t < 0x90 ? 2 * (uint64_t)(t & 0x0f) : t & 0x0f;
            goto container;
        } else if (t < 0xc0) {
            pos += 1 + (t & 0x1f);
        } else if (fixed_c0[t - 0xc0] != 0) {
            pos += fixed_c0[t - 0xc0];
        } else {
            if ((r = head(b + pos, len - pos, &h)) != 0) {
                rc = r > 0 ? FOLIO_MP_MORE : FOLIO_MP_INVALID;
                break;
            }
            next = pos + h.size;
            children = h.children;
            if (h.container)
                goto container;
            pos = next;
        }
        /* A scalar is complete: the common case, one more in its array. */
        if (depth > 0 && --top > 0)
            continue;
        goto closed;
    container:
        if (next > max) {
            rc = FOLIO_MP_TOOBIG;
            break;
        }
        if (depth >= st->max_depth) {
            rc = FOLIO_MP_TOODEEP;
            break;
        }
        /* Every value takes a byte at least: refuse impossible claims. */
        if (children > max - next) {
            rc = FOLIO_MP_TOOBIG;
            break;
        }
        pos = next;
        if (children > 0) {
            if (depth > 0)
                st->remain[depth - 1] = top;
            top = children;
            depth++;
            continue;
        }
        /* An empty container is complete, as a scalar. */
        if (depth > 0 && --top > 0)
            continue;
    closed:
        /* The value completed its container: close those it completes. */
        while (depth > 0) {
            if (--depth == 0)
                break;
            top = st->remain[depth - 1];
            if (--top > 0)
                break;
        }
        if (depth == 0) {
            if (pos <= len) {
                rc = FOLIO_MP_DONE;
                break;
            }
            st->done = pos <= max; /* else over the limit: below */
            rc = FOLIO_MP_MORE;
            break;
        }
    }
    if (depth > 0)
        st->remain[depth - 1] = top;
    st->pos = pos;
    st->depth = depth;
    /* Past the limit: that, whatever was found after (as at once). */
    return pos > max ? FOLIO_MP_TOOBIG : rc;
}

enum folio_mp_type
folio_mp_type(const struct folio_mp_cur *c)
{
    unsigned t;

    if (c->p >= c->end)
        return FOLIO_MP_NONE;
    t = *c->p;
    if (t <= 0x7f)
        return FOLIO_MP_UINT;
    if (t <= 0x8f)
        return FOLIO_MP_MAP;
    if (t <= 0x9f)
        return FOLIO_MP_ARRAY;
    if (t <= 0xbf)
        return FOLIO_MP_STR;
    if (t >= 0xe0)
        return FOLIO_MP_INT;
    switch (t) {
    case 0xc0:
        return FOLIO_MP_NIL;
    case 0xc2:
    case 0xc3:
        return FOLIO_MP_BOOL;
    case 0xc4:
    case 0xc5:
    case 0xc6:
        return FOLIO_MP_BIN;
    case 0xc7:
    case 0xc8:
    case 0xc9:
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
        return FOLIO_MP_EXT;
    case 0xca:
    case 0xcb:
        return FOLIO_MP_FLOAT;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
        return FOLIO_MP_UINT;
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
        /* Signed encodings may hold non-negative values; report by value. */
        return FOLIO_MP_INT;
    case 0xd9:
    case 0xda:
    case 0xdb:
        return FOLIO_MP_STR;
    case 0xdc:
    case 0xdd:
        return FOLIO_MP_ARRAY;
    case 0xde:
    case 0xdf:
        return FOLIO_MP_MAP;
    }
    return FOLIO_MP_NONE;
}

const char *
folio_mp_type_name(enum folio_mp_type t)
{
    switch (t) {
    case FOLIO_MP_NONE:
        return "nothing";
    case FOLIO_MP_NIL:
        return "nil";
    case FOLIO_MP_BOOL:
        return "bool";
    case FOLIO_MP_UINT:
    case FOLIO_MP_INT:
        return "int";
    case FOLIO_MP_FLOAT:
        return "float";
    case FOLIO_MP_STR:
        return "str";
    case FOLIO_MP_BIN:
        return "bin";
    case FOLIO_MP_ARRAY:
        return "array";
    case FOLIO_MP_MAP:
        return "map";
    case FOLIO_MP_EXT:
        return "ext";
    }
    return "nothing";
}

static inline int
avail(const struct folio_mp_cur *c, size_t n)
{
    return (size_t)(c->end - c->p) >= n;
}

int
folio_mp_read_nil(struct folio_mp_cur *c)
{
    if (!avail(c, 1) || *c->p != 0xc0)
        return -1;
    c->p++;
    return 0;
}

int
folio_mp_read_bool(struct folio_mp_cur *c, int *v)
{
    if (!avail(c, 1) || (*c->p != 0xc2 && *c->p != 0xc3))
        return -1;
    *v = *c->p == 0xc3;
    c->p++;
    return 0;
}

int
folio_mp_read_int_full(struct folio_mp_cur *c, int64_t *v)
{
    const unsigned char *p = c->p;
    uint64_t u;

    if (!avail(c, 1))
        return -1;
    if (*p <= 0x7f) {
        *v = *p;
        c->p++;
        return 0;
    }
    if (*p >= 0xe0) {
        *v = (int8_t)*p;
        c->p++;
        return 0;
    }
    switch (*p) {
    case 0xcc:
        if (!avail(c, 2))
            return -1;
        *v = p[1];
        c->p += 2;
        return 0;
    case 0xcd:
        if (!avail(c, 3))
            return -1;
        *v = be16(p + 1);
        c->p += 3;
        return 0;
    case 0xce:
        if (!avail(c, 5))
            return -1;
        *v = be32(p + 1);
        c->p += 5;
        return 0;
    case 0xcf:
        if (!avail(c, 9) || (u = be64(p + 1)) > INT64_MAX)
            return -1;
        *v = (int64_t)u;
        c->p += 9;
        return 0;
    case 0xd0:
        if (!avail(c, 2))
            return -1;
        *v = (int8_t)p[1];
        c->p += 2;
        return 0;
    case 0xd1:
        if (!avail(c, 3))
            return -1;
        *v = (int16_t)be16(p + 1);
        c->p += 3;
        return 0;
    case 0xd2:
        if (!avail(c, 5))
            return -1;
        *v = (int32_t)be32(p + 1);
        c->p += 5;
        return 0;
    case 0xd3:
        if (!avail(c, 9))
            return -1;
        *v = (int64_t)be64(p + 1);
        c->p += 9;
        return 0;
    }
    return -1;
}

int
folio_mp_read_uint_full(struct folio_mp_cur *c, uint64_t *v)
{
    struct folio_mp_cur save = *c;
    int64_t i;

    if (avail(c, 9) && *c->p == 0xcf) {
        *v = be64(c->p + 1);
        c->p += 9;
        return 0;
    }
    if (folio_mp_read_int(c, &i) != 0 || i < 0) {
        *c = save;
        return -1;
    }
    *v = (uint64_t)i;
    return 0;
}

int
folio_mp_read_float(struct folio_mp_cur *c, double *v)
{
    union {
        uint32_t u;
        float f;
    } f32;
    union {
        uint64_t u;
        double d;
    } f64;

    if (avail(c, 5) && *c->p == 0xca) {
        f32.u = be32(c->p + 1);
        *v = f32.f;
        c->p += 5;
        return 0;
    }
    if (avail(c, 9) && *c->p == 0xcb) {
        f64.u = be64(c->p + 1);
        *v = f64.d;
        c->p += 9;
        return 0;
    }
    return -1;
}

/* Read a str (want_bin 0) or bin (1) header and span. */
static int
read_span(struct folio_mp_cur *c, int want_bin, const char **s, uint32_t *len)
{
    const unsigned char *p = c->p;
    uint32_t n, hs;

    if (!avail(c, 1))
        return -1;
    if (!want_bin && *p >= 0xa0 && *p <= 0xbf) {
        n = *p & 0x1f;
        hs = 1;
    } else if (*p == (want_bin ? 0xc4 : 0xd9)) {
        if (!avail(c, 2))
            return -1;
        n = p[1];
        hs = 2;
    } else if (*p == (want_bin ? 0xc5 : 0xda)) {
        if (!avail(c, 3))
            return -1;
        n = be16(p + 1);
        hs = 3;
    } else if (*p == (want_bin ? 0xc6 : 0xdb)) {
        if (!avail(c, 5))
            return -1;
        n = be32(p + 1);
        hs = 5;
    } else {
        return -1;
    }
    if ((size_t)(c->end - p) - hs < n)
        return -1;
    *s = (const char *)p + hs;
    *len = n;
    c->p = p + hs + n;
    return 0;
}

int
folio_mp_read_str_full(struct folio_mp_cur *c, const char **s, uint32_t *len)
{
    return read_span(c, 0, s, len);
}

int
folio_mp_read_bin(struct folio_mp_cur *c, const char **s, uint32_t *len)
{
    return read_span(c, 1, s, len);
}

int
folio_mp_read_ext(struct folio_mp_cur *c, int8_t *type, const char **s,
                  uint32_t *len)
{
    const unsigned char *p = c->p;
    uint32_t n, hs;

    if (!avail(c, 1))
        return -1;
    switch (*p) {
    case 0xd4: /* fixext 1, 2, 4, 8, 16 */
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
        n = 1u << (*p - 0xd4);
        hs = 2;
        break;
    case 0xc7: /* ext 8, 16, 32: length, then type */
        if (!avail(c, 3))
            return -1;
        n = p[1];
        hs = 3;
        break;
    case 0xc8:
        if (!avail(c, 4))
            return -1;
        n = be16(p + 1);
        hs = 4;
        break;
    case 0xc9:
        if (!avail(c, 6))
            return -1;
        n = be32(p + 1);
        hs = 6;
        break;
    default:
        return -1;
    }
    if (!avail(c, hs) || (size_t)(c->end - p) - hs < n)
        return -1;
    *type = (int8_t)p[hs - 1];
    *s = (const char *)p + hs;
    *len = n;
    c->p = p + hs + n;
    return 0;
}

static int
read_container(struct folio_mp_cur *c, int map, uint32_t *n)
{
    const unsigned char *p = c->p;
    unsigned fix = map ? 0x80 : 0x90;

    if (!avail(c, 1))
        return -1;
    if (*p >= fix && *p <= fix + 0x0f) {
        *n = *p & 0x0f;
        c->p++;
        return 0;
    }
    if (*p == (map ? 0xde : 0xdc)) {
        if (!avail(c, 3))
            return -1;
        *n = be16(p + 1);
        c->p += 3;
        return 0;
    }
    if (*p == (map ? 0xdf : 0xdd)) {
        if (!avail(c, 5))
            return -1;
        *n = be32(p + 1);
        c->p += 5;
        return 0;
    }
    return -1;
}

int
folio_mp_read_array_full(struct folio_mp_cur *c, uint32_t *n)
{
    return read_container(c, 0, n);
}

int
folio_mp_read_map_full(struct folio_mp_cur *c, uint32_t *n)
{
    return read_container(c, 1, n);
}

int
folio_mp_skip(struct folio_mp_cur *c)
{
    const unsigned char *p = c->p;
    uint64_t pending = 1, left;
    struct head h;

    /* No stack needed: count the values still to skip. */
    while (pending > 0) {
        left = (uint64_t)(c->end - p);
        if (left == 0 || head(p, left, &h) != 0 || h.size > left)
            return -1;
        p += h.size;
        pending = pending - 1 + h.children;
        if (pending > (uint64_t)(c->end - p))
            return -1;
    }
    c->p = p;
    return 0;
}
