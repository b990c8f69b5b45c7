/*
 * modes.c - when each of folio-bench's modes sends a request: on every
 * answer (closed loop), on a schedule whatever the server does (open
 * loop, latency from the intended send time), while a virtual user runs
 * (ramp), or while the round lasts (rounds).  Runs in the engine's
 * threads (engine_int.h).
 */
#include "config.h"

#include <sys/time.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include <event2/event.h>

#include "bench/bench.h"
#include "bench/engine_int.h"
#include "src/clock.h"

/*
 * Closed loop, ramp and rounds: an answer (or the start) frees a slot on
 * connection c; send the next request if the mode says so.
 */
void
bench_refill(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;
    int counted;

    if (t->stopping)
        return;
    switch (t->o->mode) {
    case BENCH_CLOSED:
        counted = now >= t->r->measure_ns;
        if (counted && !bench_take_budget(t)) {
            t->stopping = 1;
            return;
        }
        bench_send_one(c, now, counted);
        break;
    case BENCH_RAMP:
        if (c->want)
            bench_send_one(c, now, now >= t->r->measure_ns);
        break;
    case BENCH_ROUNDS:
        if (t->round_send > 0) {
            t->round_send--;
            bench_send_one(c, now, 1);
        }
        break;
    case BENCH_OPEN:
        break;
    }
}

/* Open loop: the number of schedule slots due strictly before `until`. */
static uint64_t
pace_slots_before(const struct bench_thread *t, uint64_t until)
{
    if (until <= t->pace_t0)
        return 0;
    return (uint64_t)ceil((double)(until - t->pace_t0) / t->pace_interval);
}

static uint64_t
pace_due(const struct bench_thread *t, uint64_t k)
{
    return t->pace_t0 + (uint64_t)((double)k * t->pace_interval);
}

/* Open loop: stop; what was due but never sent is reported as behind. */
void
bench_pace_stop(struct bench_thread *t, uint64_t now)
{
    uint64_t until, due, from;

    if (t->stopping)
        return;
    t->stopping = 1;
    if (t->pace != NULL)
        event_del(t->pace);
    until = t->r->stop_ns != 0 && t->r->stop_ns < now ? t->r->stop_ns : now;
    due = pace_slots_before(t, until);
    from = pace_slots_before(t, t->r->measure_ns);
    if (from < t->pace_k)
        from = t->pace_k;
    if (due > from && t->o->total == 0)
        folio_stat_add(&t->c.behind, due - from);
}

/*
 * Open loop: send every request whose intended time has come, on the
 * next connection with room.  Latency counts from the intended time.
 */
void
bench_issue_due(struct bench_thread *t, uint64_t now)
{
    struct bench_conn *c;
    struct timeval tv;
    uint64_t due, wait;
    int i, counted;

    while (!t->stopping) {
        due = pace_due(t, t->pace_k);
        if (t->r->stop_ns != 0 && due >= t->r->stop_ns) {
            bench_pace_stop(t, now);
            break;
        }
        if (due > now)
            break;
        if (t->free_slots == 0) {
            /* Behind: answers will free a slot, unless time is up. */
            if (t->r->stop_ns != 0 && now >= t->r->stop_ns) {
                bench_pace_stop(t, now);
                break;
            }
            return;
        }
        for (i = 0, c = NULL; i < t->nconns; i++) {
            c = &t->conns[(t->rr + i) % t->nconns];
            if (c->fd != -1 && c->inflight < (uint32_t)t->o->pipeline)
                break;
        }
        if (i == t->nconns || c == NULL)
            return; /* cannot happen: free_slots counts the room */
        t->rr = (t->rr + i + 1) % t->nconns;
        counted = due >= t->r->measure_ns;
        if (counted && !bench_take_budget(t)) {
            bench_pace_stop(t, now);
            break;
        }
        bench_append(c, bench_pick(t, t->pool->n), due, counted, now);
        t->free_slots--;
        t->pace_k++;
        folio_stat_set(&t->c.paced, t->pace_k);
        if (bench_flush(c) != 0)
            continue;
    }
    if (t->stopping) {
        bench_maybe_finish(t);
        return;
    }
    due = pace_due(t, t->pace_k);
    wait = due > now ? due - now : 0;
    tv.tv_sec = (time_t)(wait / 1000000000u);
    tv.tv_usec = (suseconds_t)(wait % 1000000000u / 1000u);
    event_add(t->pace, &tv);
}

void
bench_on_pace(evutil_socket_t fd, short what, void *arg)
{
    struct bench_thread *t = arg;

    (void)fd;
    (void)what;
    bench_issue_due(t, folio_mono_ns());
}

/* Ramp: virtual users at time `now`, linear within each stage. */
static uint32_t
ramp_target(const struct bench_thread *t, uint64_t now, int *over)
{
    const struct bench_opts *o = t->o;
    uint64_t el = now - t->r->t0, acc = 0;
    double prev = 0;
    int i;

    *over = 0;
    for (i = 0; i < o->nstages; i++) {
        if (el < acc + o->stages[i].dur_ns)
            return (uint32_t)(prev +
                              ((double)o->stages[i].target - prev) *
                                  (double)(el - acc) /
                                  (double)o->stages[i].dur_ns +
                              0.5);
        acc += o->stages[i].dur_ns;
        prev = o->stages[i].target;
    }
    *over = 1;
    return 0;
}

void
bench_ramp_update(struct bench_thread *t, uint64_t now)
{
    struct bench_conn *c;
    uint32_t target;
    uint64_t running = 0;
    int i, over;

    target = ramp_target(t, now, &over);
    if (over)
        t->stopping = 1;
    for (i = 0; i < t->nconns; i++) {
        c = &t->conns[i];
        if (c->dead)
            continue;
        if (c->index < target && !t->stopping) {
            if (!c->want) {
                c->want = 1;
                if (c->fd == -1 && bench_conn_open(t, c) != 0) {
                    c->dead = 1;
                    folio_stat_add(&t->c.conn_failures, 1);
                    continue;
                }
                bench_prime(c, now);
            }
        } else if (c->want) {
            c->want = 0;
            if (c->inflight == 0)
                bench_conn_close(c);
        }
        running += c->want && c->fd != -1;
    }
    folio_stat_set(&t->c.vus, running);
}

void
bench_run_rounds(struct bench_thread *t)
{
    struct bench_run *r = t->r;
    uint64_t share, now;
    int i;

    for (;;) {
        pthread_barrier_wait(&r->round);
        if (atomic_load(&r->stop))
            break;
        share = r->round_n / (uint64_t)r->nthreads +
                ((uint64_t)t->id < r->round_n % (uint64_t)r->nthreads);
        t->round_send = t->round_recv = share;
        t->stopping = t->live == 0;
        now = folio_mono_ns();
        for (i = 0; i < t->nconns && t->round_send > 0; i++)
            bench_prime(&t->conns[i], now);
        if (t->round_recv > 0 && t->inflight > 0)
            event_base_dispatch(t->base);
        pthread_barrier_wait(&r->round);
    }
}
