/*
 * clock.h - the clocks every folio program reads, and the one place that
 * calls clock_gettime(): CLOCK_MONOTONIC (milliseconds, or nanoseconds
 * for request timings) for intervals and deadlines, the same in every
 * process of the machine (the master reads the workers' heartbeats with
 * it); CLOCK_REALTIME for timestamps others see (comments' created_at,
 * start times in server.stats, a profile's time).  Async-signal-safe.
 */
#ifndef FOLIO_CLOCK_H
#define FOLIO_CLOCK_H

#include <stdint.h>
#include <time.h>

/* folio_clock_ns - clock `id` in nanoseconds (a CPU clock too). */
static inline uint64_t
folio_clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

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
    return folio_clock_ns(CLOCK_MONOTONIC);
}

/* folio_unix_ms - Unix time in milliseconds, UTC. */
static inline uint64_t
folio_unix_ms(void)
{
    return folio_clock_ms(CLOCK_REALTIME);
}

/* folio_unix_ns - Unix time in nanoseconds, UTC. */
static inline uint64_t
folio_unix_ns(void)
{
    return folio_clock_ns(CLOCK_REALTIME);
}

/*
 * folio_ns_timespec - `ns` of a clock as a timespec: what
 * pthread_cond_timedwait() takes as a deadline on that clock.
 */
static inline void
folio_ns_timespec(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

#endif
