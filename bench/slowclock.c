/*
 * slowclock.c - an LD_PRELOAD library for bench/instr.sh: the monotonic
 * clocks run FOLIO_SLOWCLOCK times slower (default 100), so that a
 * program under valgrind, which runs about that much slower, makes the
 * decisions it makes by the clock as it would at its own speed.  foliod
 * sends a call that took 100 us or more to its run queue, to be framed
 * again in a later turn: under callgrind most freight quotes took that
 * long, some did not, and the count of instructions per request moved by
 * up to 10% from one run to the next.  CLOCK_MONOTONIC and its coarse
 * and raw forms (libevent reads the coarse one) are scaled from 0, the
 * same function of the real clock in every process; the wall clock is
 * left alone.  Not for sanitizer builds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_timerfd_settime)(int, int, const struct itimerspec *,
                                   struct itimerspec *);
static uint64_t factor;

static void
init(void)
{
    const char *f;

    if (real_clock_gettime != NULL)
        return;
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(
        RTLD_NEXT, "clock_gettime");
    real_timerfd_settime =
        (int (*)(int, int, const struct itimerspec *,
                 struct itimerspec *))dlsym(RTLD_NEXT, "timerfd_settime");
    f = getenv("FOLIO_SLOWCLOCK");
    factor = f != NULL && atoi(f) > 0 ? (uint64_t)atoi(f) : 100;
}

/* ts, factor times longer. */
static struct timespec
longer(struct timespec ts)
{
    uint64_t ns = ((uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec) *
                  factor;

    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

int
timerfd_settime(int fd, int flags, const struct itimerspec *new,
                struct itimerspec *old)
{
    struct itimerspec slow;

    init();
    if (new == NULL || (flags & TFD_TIMER_ABSTIME))
        return real_timerfd_settime(fd, flags, new, old);
    slow.it_value = longer(new->it_value);
    slow.it_interval = longer(new->it_interval);
    return real_timerfd_settime(fd, flags, &slow, old);
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
    uint64_t ns;
    int rc;

    init();
    if ((rc = real_clock_gettime(id, ts)) != 0)
        return rc;
    if (id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE ||
        id == CLOCK_MONOTONIC_RAW) {
        ns = ((uint64_t)ts->tv_sec * 1000000000 + (uint64_t)ts->tv_nsec) /
             factor;
        ts->tv_sec = (time_t)(ns / 1000000000);
        ts->tv_nsec = (long)(ns % 1000000000);
    }
    return 0;
}
