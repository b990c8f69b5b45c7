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
 * does malloc), and calls the kernel through epoll_pwait.  Two clock
 * reads a turn (the vDSO's), nothing else; a thread that did not ask for
 * it (folio_loop_watch) passes straight through.
 *
 * Called from worker.c: folio_loop_watch before the loop, NULL after it.
 */
#include "config.h"

#include <sys/epoll.h>

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "shm/stats.h"
#include "src/clock.h"
#include "src/hist.h"
#include "worker/worker_int.h"

#define WINDOW 10 /* seconds of loop_turn_max_s */

static _Thread_local struct folio_worker_slot *watched;
static _Thread_local uint64_t turn_start; /* monotonic ns; 0: none yet */
/* The longest turn (us) of each of the last WINDOW seconds, by second. */
static _Thread_local uint64_t longest[WINDOW];
static _Thread_local uint64_t second; /* of the newest entry */

void
folio_loop_watch(struct folio_worker_slot *s)
{
    watched = s;
    turn_start = 0;
    memset(longest, 0, sizeof(longest));
    second = 0;
}

/* A turn of `us` that ended at `now` (ns) in the window's longest. */
static void
window_add(struct folio_worker_slot *s, uint64_t us, uint64_t now)
{
    uint64_t sec = now / 1000000000u, max = 0;
    unsigned i;

    if (sec != second) {
        /* The seconds since the newest entry start empty. */
        for (i = 0; i < WINDOW && second + i < sec; i++)
            longest[(second + i + 1) % WINDOW] = 0;
        second = sec;
        longest[sec % WINDOW] = us;
        for (i = 0; i < WINDOW; i++)
            max = longest[i] > max ? longest[i] : max;
        folio_stat_set(&s->ws_loop_turn_max_us, max);
        return;
    }
    if (us > longest[sec % WINDOW])
        longest[sec % WINDOW] = us;
    if (us > folio_stat_get(&s->ws_loop_turn_max_us))
        folio_stat_set(&s->ws_loop_turn_max_us, us);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents,
               int timeout);

int
epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    struct folio_worker_slot *s = watched;
    uint64_t ns;
    int n, saved;

    if (s != NULL && turn_start != 0) {
        uint64_t now = folio_mono_ns();

        ns = now - turn_start;
        folio_stat_add(&s->ws_turn_ns, ns);
        folio_stat_add(&s->ws_turn_hist[folio_lat_bucket(ns)], 1);
        window_add(s, ns / 1000, now);
    }
    n = epoll_pwait(epfd, events, maxevents, timeout, NULL);
    if (s != NULL) {
        saved = errno;
        turn_start = folio_mono_ns();
        errno = saved;
    }
    return n;
}
