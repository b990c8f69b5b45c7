/*
 * buf.h - a byte buffer with a read offset: bytes [b_off, b_len) are
 * pending.  Used for connection input and output.  It starts at a base
 * capacity allocated once and only grows for an unusually large message
 * or reply; folio_buf_shrink() gives the excess back when it is empty.
 * Appends are inline: the reply path packs straight into it.
 */
#ifndef FOLIO_BUF_H
#define FOLIO_BUF_H

#include <stddef.h>
#include <string.h>

struct folio_buf {
    char *b_data;
    size_t b_off;  /* first pending byte */
    size_t b_len;  /* end of pending bytes */
    size_t b_cap;  /* allocated bytes */
    size_t b_base; /* capacity to shrink back to */
    size_t b_max;  /* never grow past this (0: no limit) */
    int b_failed;  /* an append through the packer callback failed:
                      FOLIO_ETOOBIG (over b_max) or FOLIO_ENOMEM */
};

/*
 * folio_buf_init - allocate `cap` bytes; the buffer may later grow up to
 * `max` bytes (0: no limit).  Returns 0 or FOLIO_ENOMEM.
 */
int folio_buf_init(struct folio_buf *b, size_t cap, size_t max);

/* folio_buf_free - release the storage; accepts a zeroed buffer. */
void folio_buf_free(struct folio_buf *b);

/*
 * folio_buf_reserve - make room for `n` more bytes at b_len, moving the
 * pending bytes to the front first, growing only if that is not enough:
 * doubling, or straight to the size needed (rounded up to 4 KiB) when
 * that is more than twice the capacity; never past b_max.
 * Returns 0, FOLIO_ETOOBIG (over b_max) or FOLIO_ENOMEM.
 */
int folio_buf_reserve(struct folio_buf *b, size_t n);

/* folio_buf_shrink - if empty and grown past its base, go back to base. */
void folio_buf_shrink(struct folio_buf *b);

/*
 * folio_buf_pack_write - msgpack_packer write callback: appends to the
 * struct folio_buf passed as `data`.  Returns 0 or -1 (limit, memory).
 */
int folio_buf_pack_write(void *data, const char *p, size_t n);

static inline size_t
folio_buf_pending(const struct folio_buf *b)
{
    return b->b_len - b->b_off;
}

static inline size_t
folio_buf_space(const struct folio_buf *b)
{
    return b->b_cap - b->b_len;
}

static inline void
folio_buf_reset(struct folio_buf *b)
{
    b->b_off = b->b_len = 0;
}

static inline void
folio_buf_consume(struct folio_buf *b, size_t n)
{
    b->b_off += n;
    if (b->b_off == b->b_len)
        b->b_off = b->b_len = 0;
}

/*
 * Marks: positions counted from the first pending byte.  An append may
 * move the pending bytes to the front (folio_buf_reserve), so b_len is no
 * position to come back to; a mark is.
 */
static inline size_t
folio_buf_mark(const struct folio_buf *b)
{
    return b->b_len - b->b_off;
}

/* The byte at `mark`. */
static inline char *
folio_buf_at(const struct folio_buf *b, size_t mark)
{
    return b->b_data + b->b_off + mark;
}

/* Drop everything appended after `mark` (a folio_buf_mark()). */
static inline void
folio_buf_truncate(struct folio_buf *b, size_t mark)
{
    if (b->b_off + mark < b->b_len)
        b->b_len = b->b_off + mark;
}

static inline int
folio_buf_append(struct folio_buf *b, const void *p, size_t n)
{
    const char *s = p;
    char *d;
    int rc;

    if (n > b->b_cap - b->b_len && (rc = folio_buf_reserve(b, n)) != 0)
        return rc;
    d = b->b_data + b->b_len;
    /*
     * The packer's pieces are a few bytes each (a header, a small int):
     * copied inline, two overlapping fixed-size moves, not by a call.
     */
    if (n <= 8) {
        if (n >= 4) {
            memcpy(d, s, 4);
            memcpy(d + n - 4, s + n - 4, 4);
        } else if (n >= 2) {
            memcpy(d, s, 2);
            memcpy(d + n - 2, s + n - 2, 2);
        } else if (n == 1) {
            d[0] = s[0];
        }
    } else {
        memcpy(d, s, n);
    }
    b->b_len += n;
    return 0;
}

#endif
