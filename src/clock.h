/*
 * clock.h - the two clocks foliod reads: CLOCK_MONOTONIC (milliseconds,
 * or nanoseconds for request timings) for intervals and deadlines, the
 * same in every process of the machine (the master reads the workers'
 * heartbeats with it); CLOCK_REALTIME for timestamps others see
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

/* folio_mono_ns - monotonic nanoseconds, for request timings. */
static inline uint64_t
folio_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* folio_unix_ms - Unix time in milliseconds, UTC. */
static inline uint64_t
folio_unix_ms(void)
{
    return folio_clock_ms(CLOCK_REALTIME);
}

#endif
