/*
 * loop.c - how long each turn of a worker's event loop lasts: from its
 * poll's return to its next poll, the time in which nothing else of the
 * worker's connections is read or answered.  Every turn goes into the
 * slot's histogram (folio_worker_loop_turn_seconds), and the longest of
 * the last WINDOW seconds into loop_turn_max_s (a window, as Micrometer's
 * timers keep their max, so that one stall at start does not hide every
 * later one): what a stall costs every request behind it, whatever caused
 * it (a dear request, a profile being taken, a slow disk).
 *
 * libevent 2.1 has no hook around its poll (evwatch came in 2.2), so the
 * turn is timed at the poll itself: this file defines epoll_wait, which
 * foliod's executable then exports in place of libc's (as src/alloc.c
 * does malloc), and polls with src/sys.h's system call, not libc's
 * cancellation point.  Two clock reads a turn (the vDSO's); the window
 * moves on at a second's end computed once, not by a division a turn.  A
 * thread that did not ask for it (folio_loop_watch) passes straight
 * through.
 *
 * busy_poll_us (foliod(8)): after a turn that served, the worker waits
 * that long without sleeping (reading the clock), then polls without
 * waiting, and sleeps in the poll only if nothing came.  What came
 * meanwhile is read with no sleep and no wake-up, the dearest part of a
 * round trip here, and several requests at a time where many are in
 * flight (bench/floor.c's --linger-us measured both).  A poll at every
 * turn of the wait, as Linux's net.core.busy_poll does, reads sooner and
 * so fewer at a time: slower at 16 in flight (BENCHMARKS.md).  The time
 * waited is between turns: no turn's length counts it.
 *
 * poll_yield (foliod(8)): after a turn that served, and a busy poll that
 * found nothing, the worker calls sched_yield(2) before it polls: the
 * CPU to whatever else may run on it, which on shared cores is mostly its
 * clients.  Their requests then find the worker awake (runnable, not
 * asleep in the poll): no wake-up to pay, and the next poll reads them
 * in bigger batches.  With nothing else to run, the call returns at once.
 *
 * The worker's clock (w->now_ms) is set here too, at each poll's return
 * (nginx's ngx_time_update after epoll_wait), from the turn's own
 * reading: what a turn stamps (a read, a write, an accept) is the time of
 * the turn, not of the last tick, 100 ms older at worst, which made an
 * idle_timeout of 300 ms close after 200 ms.
 *
 * Called from worker.c: folio_loop_watch before the loop, NULL after it.
 */
#include "config.h"

#include <sys/epoll.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shm/stats.h"
#include "src/clock.h"
#include "src/hist.h"
#include "src/sys.h"
#include "worker/worker_int.h"

#define WINDOW 10 /* seconds of loop_turn_max_s */
#define NS 1000000000u

_Thread_local int folio_loop_ready;
static _Thread_local struct folio_worker_slot *watched;
static _Thread_local uint64_t *now_ms; /* the worker's clock, ms */
static _Thread_local uint64_t turn_start; /* monotonic ns; 0: none yet */
/*
 * The longest turn (ns) of the current second, and (us) of each of the
 * WINDOW - 1 before it, by second; `second` is the current one, which
 * ends at second_end (ns).
 */
static _Thread_local uint64_t longest_ns;
static _Thread_local uint64_t longest[WINDOW];
static _Thread_local uint64_t second, second_end;
static _Thread_local uint64_t busy_ns; /* busy_poll_us; 0: off */
static _Thread_local int yield_cpu;    /* poll_yield */
static _Thread_local int before_poll;  /* busy_ns != 0 || yield_cpu */

void
folio_loop_watch(struct folio_worker_slot *s, uint64_t *clock_ms,
                 uint32_t busy_poll_us, int poll_yield)
{
    watched = s;
    now_ms = s != NULL ? clock_ms : NULL;
    busy_ns = s != NULL ? (uint64_t)busy_poll_us * 1000 : 0;
    yield_cpu = s != NULL && poll_yield;
    before_poll = busy_ns != 0 || yield_cpu;
    turn_start = 0;
    longest_ns = 0;
    memset(longest, 0, sizeof(longest));
    second = second_end = 0;
}

/*
 * The window at `now` (ns): the seconds since the current one start
 * empty, the current one's longest joins the others, and the slot's
 * longest is the window's.
 */
static void
window_turn(struct folio_worker_slot *s, uint64_t now)
{
    uint64_t sec = now / NS, max = 0;
    unsigned i;

    longest[second % WINDOW] = longest_ns / 1000;
    for (i = 0; i < WINDOW && second + i < sec; i++)
        longest[(second + i + 1) % WINDOW] = 0;
    second = sec;
    second_end = (sec + 1) * NS;
    longest_ns = 0;
    for (i = 0; i < WINDOW; i++)
        max = longest[i] > max ? longest[i] : max;
    folio_stat_set(&s->ws_loop_turn_max_us, max);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents,
               int timeout);

static inline int
poll_once(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    return (int)folio_sys6(SYS_epoll_pwait, epfd, (long)events, maxevents,
                           timeout, 0, _NSIG / 8);
}

/*
 * Wait busy_ns from now without sleeping (the clock, not a system call),
 * no longer than the poll's timeout (ms, > 0, or -1: none), then poll
 * without waiting: what came meanwhile, 0 if nothing.
 */
static int
busy_poll(struct folio_worker_slot *s, int epfd, struct epoll_event *events,
          int maxevents, int timeout, uint64_t now)
{
    uint64_t wait = busy_ns, end;
    int n;

    if (timeout > 0 && (uint64_t)timeout * 1000000 < wait)
        wait = (uint64_t)timeout * 1000000; /* a timer is due sooner */
    end = now + wait;
    folio_stat_add(&s->ws_busy_polls, 1);
    /* No pause instruction: in a VM a loop of them can make the host
     * take the CPU away (pause-loop exiting). */
    while (folio_mono_ns() < end)
        ;
    if ((n = poll_once(epfd, events, maxevents, 0)) > 0)
        folio_stat_add(&s->ws_busy_poll_hits, 1);
    return n;
}

int
epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    struct folio_worker_slot *s = watched;
    uint64_t ns, now = 0;
    int n, saved;

    if (s != NULL && turn_start != 0) {
        now = folio_mono_ns();
        ns = now - turn_start;
        if (now >= second_end)
            window_turn(s, now);
        folio_stat_add(&s->ws_turn_ns, ns);
        folio_stat_add(&s->ws_turn_hist[folio_lat_bucket(ns)], 1);
        if (ns > longest_ns) {
            longest_ns = ns;
            if (ns / 1000 > folio_stat_get(&s->ws_loop_turn_max_us))
                folio_stat_set(&s->ws_loop_turn_max_us, ns / 1000);
        }
    }
    /* After a turn that served, unless the loop asks for no wait. */
    n = 0;
    if (before_poll && now != 0 && folio_loop_ready > 0 && timeout != 0) {
        if (busy_ns != 0)
            n = busy_poll(s, epfd, events, maxevents, timeout, now);
        if (n == 0 && yield_cpu) {
            folio_stat_add(&s->ws_poll_yields, 1);
            sched_yield();
        }
    }
    if (n == 0)
        n = poll_once(epfd, events, maxevents, timeout);
    folio_loop_ready = n;
    if (s != NULL) {
        saved = errno;
        turn_start = folio_mono_ns();
        *now_ms = turn_start / 1000000;
        errno = saved;
    }
    return n;
}
