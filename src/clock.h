/*
 * clock.h - milliseconds of the two clocks foliod reads: CLOCK_MONOTONIC
 * for intervals and deadlines, CLOCK_REALTIME for timestamps others see
 * (comments' created_at, start times in server.stats).
 */
#ifndef FOLIO_CLOCK_H
#define FOLIO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
folio_clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* folio_mono_ms - monotonic milliseconds (since boot). */
static inline uint64_t
folio_mono_ms(void)
{
    return folio_clock_ms(CLOCK_MONOTONIC);
}

/* folio_unix_ms - Unix time in milliseconds, UTC. */
static inline uint64_t
folio_unix_ms(void)
{
    return folio_clock_ms(CLOCK_REALTIME);
}

#endif
