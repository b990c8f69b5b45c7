/*
 * bytes.h - an immutable block of bytes shared by reference: a cached
 * page's reply (the comments page cache, encoded once) that every
 * connection sending it points at instead of copying it into its own
 * output (worker/out.c), whatever the bytes are (msgpack, JSON).  Written
 * once by whoever made it, then only read; freed when its last holder
 * lets go.  One thread only (a worker's loop): the counts are plain.
 */
#ifndef FOLIO_BYTES_H
#define FOLIO_BYTES_H

#include <stddef.h>
#include <stdint.h>

struct folio_bytes {
    uint32_t fb_refs;    /* holders: a cache, the outputs sending it */
    uint32_t fb_outrefs; /* of those, outputs counted in a worker's output
                            budget (worker/out.c): it counts there once,
                            however many send it */
    size_t fb_len;
    char fb_data[];
};

/*
 * folio_bytes_new - a block of len bytes to fill (fb_data), one
 * reference held by the caller.  Returns 0 with *out, or FOLIO_ENOMEM.
 */
int folio_bytes_new(size_t len, struct folio_bytes **out);

/*
 * folio_bytes_copy - folio_bytes_new holding a copy of p[0..len).
 */
int folio_bytes_copy(const void *p, size_t len, struct folio_bytes **out);

/* folio_bytes_ref - one more holder of b; returns b. */
static inline struct folio_bytes *
folio_bytes_ref(struct folio_bytes *b)
{
    b->fb_refs++;
    return b;
}

/* folio_bytes_unref - a holder lets go; the last one frees.  NULL: none. */
void folio_bytes_unref(struct folio_bytes *b);

/* folio_bytes_cost - what b holds of the heap, its header included. */
static inline size_t
folio_bytes_cost(const struct folio_bytes *b)
{
    return sizeof(*b) + b->fb_len;
}

#endif
