/*
 * buf.c - growable byte buffers (see buf.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/buf.h"
#include "src/err.h"

int
folio_buf_init(struct folio_buf *b, size_t cap, size_t max)
{
    memset(b, 0, sizeof(*b));
    if ((b->b_data = folio_malloc(cap)) == NULL)
        return FOLIO_ENOMEM;
    b->b_cap = b->b_base = cap;
    b->b_max = max;
    return 0;
}

void
folio_buf_free(struct folio_buf *b)
{
    folio_free(b->b_data);
    memset(b, 0, sizeof(*b));
}

int
folio_buf_reserve(struct folio_buf *b, size_t n)
{
    size_t pending = b->b_len - b->b_off;
    size_t need, cap;
    char *p;

    if (b->b_cap - b->b_len >= n)
        return 0;
    if (b->b_off > 0) {
        memmove(b->b_data, b->b_data + b->b_off, pending);
        b->b_off = 0;
        b->b_len = pending;
        if (b->b_cap - b->b_len >= n)
            return 0;
    }
    if (n > SIZE_MAX / 2 - pending)
        return FOLIO_ETOOBIG;
    need = pending + n;
    if (b->b_max != 0 && need > b->b_max)
        return FOLIO_ETOOBIG;
    /*
     * Doubling, for appends that come a piece at a time; a jump past
     * twice the capacity (room made ahead for a large reply) gets what it
     * asks, in whole pages, not up to twice that.
     */
    cap = b->b_cap > 0 ? b->b_cap : 256;
    if (need > cap * 2)
        cap = (need + 4095) & ~(size_t)4095;
    while (cap < need)
        cap *= 2;
    if (b->b_max != 0 && cap > b->b_max)
        cap = b->b_max;
    if ((p = folio_realloc(b->b_data, cap)) == NULL)
        return FOLIO_ENOMEM;
    b->b_data = p;
    b->b_cap = cap;
    return 0;
}

void
folio_buf_shrink(struct folio_buf *b)
{
    char *p;

    if (b->b_len != b->b_off || b->b_cap <= b->b_base)
        return;
    b->b_off = b->b_len = 0;
    if ((p = folio_realloc(b->b_data, b->b_base)) != NULL) {
        b->b_data = p;
        b->b_cap = b->b_base;
    }
}

int
folio_buf_pack_write(void *data, const char *p, size_t n)
{
    struct folio_buf *b = data;

    int rc;

    if ((rc = folio_buf_append(b, p, n)) == 0)
        return 0;
    b->b_failed = rc;
    return -1;
}
