/*
 * stat.h - counters with one writer: relaxed atomic loads and stores, no
 * locked instruction.  The writer (a worker in its stats slot, a
 * folio-bench thread in its own block) updates them with a plain load
 * and store; readers in other processes or threads see each value whole,
 * never torn, without a lock (the LMDB reader table's way).  Not for
 * counters that two writers share.
 */
#ifndef FOLIO_STAT_H
#define FOLIO_STAT_H

#include <stdatomic.h>
#include <stdint.h>

/* folio_stat_add - *c += n, by its only writer. */
static inline void
folio_stat_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c,
                          atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* folio_stat_set - *c = v, by its only writer. */
static inline void
folio_stat_set(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

/* folio_stat_get - *c, by anyone. */
static inline uint64_t
folio_stat_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
