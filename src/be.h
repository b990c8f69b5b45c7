/*
 * be.h - 64-bit integers as 8 big-endian bytes: LMDB keys that sort by
 * number, PostgreSQL's binary int8, idempotency keys.
 */
#ifndef FOLIO_BE_H
#define FOLIO_BE_H

#include <stdint.h>

/* folio_be64_put - v into p[0..8), most significant byte first. */
static inline void
folio_be64_put(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

/* folio_be64_get - the value of p[0..8), most significant byte first. */
static inline uint64_t
folio_be64_get(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

#endif
