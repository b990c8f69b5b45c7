/*
 * hash.h - FNV-1a, 64 bits: a fast, well-known hash for keys and change
 * detection (not for security: anyone can make collisions).
 */
#ifndef FOLIO_HASH_H
#define FOLIO_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t
folio_fnv1a64(const void *p, size_t len)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif
