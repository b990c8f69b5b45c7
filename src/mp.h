/*
 * mp.h - msgpack framing and reading without allocation.
 *
 * Two pieces, both used by the server, the client and the load generator:
 *
 *  - the scanner finds where one msgpack object ends in a byte stream.  It
 *    is resumable (bytes may arrive a few at a time: each byte is looked at
 *    once), enforces a nesting limit and a size limit, and rejects claims
 *    that cannot fit the limit (a 4 GiB string header, a 2^32-element array)
 *    as soon as the header is read.
 *
 *  - the cursor reads typed values out of a complete object that the
 *    scanner accepted: strings come back as spans into the buffer, nothing
 *    is copied or allocated.
 *
 * msgpack-c's unpacker allocates a zone per message and re-parses partial
 * messages from their start; encoding, where it allocates nothing, is
 * msgpack-c's packer (msgpack_pack_*) writing through folio_buf.
 */
#ifndef FOLIO_MP_H
#define FOLIO_MP_H

#include <stddef.h>
#include <stdint.h>

#define FOLIO_MP_MAX_DEPTH 64 /* hard ceiling of any configured limit */

enum folio_mp_scan_result {
    FOLIO_MP_DONE = 0,     /* one complete object: st->pos bytes */
    FOLIO_MP_MORE = 1,     /* incomplete: call again with more bytes */
    FOLIO_MP_INVALID = -1, /* not msgpack (0xc1) */
    FOLIO_MP_TOODEEP = -2, /* nesting over the limit */
    FOLIO_MP_TOOBIG = -3   /* over the size limit */
};

struct folio_mp_scan {
    uint64_t pos;       /* bytes of the object accounted for so far */
    uint64_t max_bytes; /* size limit of one object */
    uint32_t max_depth; /* nesting limit (1 = no containers inside) */
    uint32_t depth;     /* open containers */
    int done;           /* the last value is read but its payload is not all here */
    uint64_t remain[FOLIO_MP_MAX_DEPTH]; /* values left in each open container */
};

/*
 * folio_mp_scan_init - prepare to scan one object of at most `max_bytes`
 * bytes and `max_depth` nesting levels (clamped to FOLIO_MP_MAX_DEPTH).
 */
void folio_mp_scan_init(struct folio_mp_scan *st, uint64_t max_bytes,
                        uint32_t max_depth);

/* folio_mp_scan_reset - forget the current object, keep the limits. */
static inline void
folio_mp_scan_reset(struct folio_mp_scan *st)
{
    st->pos = 0;
    st->depth = 0;
    st->done = 0;
}

/*
 * folio_mp_scan - continue scanning the object that starts at p[0]; `len`
 * bytes are available (always from the object's start: pass the same
 * start, more bytes).  Returns FOLIO_MP_DONE with st->pos the object's
 * size, FOLIO_MP_MORE (st->pos may already exceed len: that many bytes are
 * needed at least), or a negative folio_mp_scan_result.
 */
int folio_mp_scan(struct folio_mp_scan *st, const void *p, size_t len);

/* Types the cursor reports. */
enum folio_mp_type {
    FOLIO_MP_NONE = 0, /* end of data or malformed */
    FOLIO_MP_NIL,
    FOLIO_MP_BOOL,
    FOLIO_MP_UINT,
    FOLIO_MP_INT, /* negative integer */
    FOLIO_MP_FLOAT,
    FOLIO_MP_STR,
    FOLIO_MP_BIN,
    FOLIO_MP_ARRAY,
    FOLIO_MP_MAP,
    FOLIO_MP_EXT
};

/* A cursor over bytes [p, end).  Copy it freely: it owns nothing. */
struct folio_mp_cur {
    const unsigned char *p;
    const unsigned char *end;
};

static inline void
folio_mp_cur_init(struct folio_mp_cur *c, const void *p, size_t len)
{
    c->p = p;
    c->end = c->p + len;
}

/* folio_mp_type - the type of the next value, FOLIO_MP_NONE at the end. */
enum folio_mp_type folio_mp_type(const struct folio_mp_cur *c);

/* folio_mp_type_name - "str", "int"... for error messages. */
const char *folio_mp_type_name(enum folio_mp_type t);

/*
 * The readers below consume one value and return 0, or return -1 and
 * leave the cursor where it was when the next value is not of that type.
 */
int folio_mp_read_nil(struct folio_mp_cur *c);
int folio_mp_read_bool(struct folio_mp_cur *c, int *v);
/* float 32 or 64 (integers are not converted). */
int folio_mp_read_float(struct folio_mp_cur *c, double *v);
int folio_mp_read_bin(struct folio_mp_cur *c, const char **s, uint32_t *len);
/* An ext (fixext or ext 8/16/32): its type and a span of its data. */
int folio_mp_read_ext(struct folio_mp_cur *c, int8_t *type, const char **s,
                      uint32_t *len);
/* Skip one value, nested or not. */
int folio_mp_skip(struct folio_mp_cur *c);

/*
 * The readers of every form (mp.c); the inline ones below read the
 * one-byte forms themselves (most values in a request: small ints, short
 * strings, small arrays and maps) and call these for the others.
 */
int folio_mp_read_int_full(struct folio_mp_cur *c, int64_t *v);
int folio_mp_read_uint_full(struct folio_mp_cur *c, uint64_t *v);
int folio_mp_read_str_full(struct folio_mp_cur *c, const char **s,
                           uint32_t *len);
int folio_mp_read_array_full(struct folio_mp_cur *c, uint32_t *n);
int folio_mp_read_map_full(struct folio_mp_cur *c, uint32_t *n);

/* An integer (positive or negative encoding) that fits int64_t. */
static inline int
folio_mp_read_int(struct folio_mp_cur *c, int64_t *v)
{
    if (c->p < c->end && (*c->p <= 0x7f || *c->p >= 0xe0)) {
        *v = (int8_t)*c->p; /* both fixints: the byte, sign-extended */
        c->p++;
        return 0;
    }
    return folio_mp_read_int_full(c, v);
}

/* A non-negative integer. */
static inline int
folio_mp_read_uint(struct folio_mp_cur *c, uint64_t *v)
{
    if (c->p < c->end && *c->p <= 0x7f) {
        *v = *c->p++;
        return 0;
    }
    return folio_mp_read_uint_full(c, v);
}

/* A str: *s points into the buffer, not NUL-terminated. */
static inline int
folio_mp_read_str(struct folio_mp_cur *c, const char **s, uint32_t *len)
{
    const unsigned char *p = c->p;
    uint32_t n;

    if (p < c->end && (*p & 0xe0) == 0xa0) {
        n = *p & 0x1f;
        if ((size_t)(c->end - p) <= n)
            return -1;
        *s = (const char *)p + 1;
        *len = n;
        c->p = p + 1 + n;
        return 0;
    }
    return folio_mp_read_str_full(c, s, len);
}

static inline int
folio_mp_read_array(struct folio_mp_cur *c, uint32_t *n)
{
    if (c->p < c->end && (*c->p & 0xf0) == 0x90) {
        *n = *c->p++ & 0x0f;
        return 0;
    }
    return folio_mp_read_array_full(c, n);
}

static inline int
folio_mp_read_map(struct folio_mp_cur *c, uint32_t *n)
{
    if (c->p < c->end && (*c->p & 0xf0) == 0x80) {
        *n = *c->p++ & 0x0f;
        return 0;
    }
    return folio_mp_read_map_full(c, n);
}

/* folio_mp_str_eq - whether span s,len equals the C string `lit`. */
static inline int
folio_mp_str_eq(const char *s, uint32_t len, const char *lit)
{
    size_t i;

    for (i = 0; i < len; i++)
        if (lit[i] != s[i] || lit[i] == '\0')
            return 0;
    return lit[len] == '\0';
}

#endif
