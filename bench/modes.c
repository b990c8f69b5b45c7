/*
 * modes.c - when each of folio-bench's modes sends a request: on every
 * answer (closed loop), on a schedule whatever the server does (open
 * loop, latency from the intended send time), while a virtual user runs
 * (ramp), or while the round lasts (rounds).  Each mode is a row of the
 * table at the end (engine_int.h): the engine calls a mode only through
 * its row, and the modes call the engine's primitives, never the other
 * way round.  Runs in the engine's threads.
 */
#include "config.h"

#include <sys/time.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <event2/event.h>

#include "bench/bench.h"
#include "bench/engine_int.h"
#include "src/clock.h"

/* Closed loop, ramp, rounds: the thread is told to stop, or -d is over. */
static void
stop_when_due(struct bench_thread *t, uint64_t now)
{
    if (atomic_load(&t->r->stop))
        t->stopping = 1;
    else if (t->r->stop_ns != 0 && now >= t->r->stop_ns)
        t->stopping = 1;
}

/* ---- closed loop: send on every answer ---- */

static void
closed_refill(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;
    int counted;

    if (t->stopping)
        return;
    counted = now >= t->r->measure_ns;
    if (counted && !bench_take_budget(t)) {
        t->stopping = 1;
        return;
    }
    bench_send_one(c, now, counted);
}

static void
closed_answered(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;

    /* -d is over: this answer frees a slot that stays free. */
    if (t->r->stop_ns != 0 && now >= t->r->stop_ns)
        t->stopping = 1;
    closed_refill(c, now);
}

static void
closed_run(struct bench_thread *t, uint64_t now)
{
    int i;

    for (i = 0; i < t->nconns; i++)
        bench_prime(&t->conns[i], now);
    bench_run_loop(t);
}

/* ---- open loop: on a schedule ---- */

/* The number of schedule slots due strictly before `until`. */
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

/* Stop; what was due but never sent is reported as behind. */
static void
pace_stop(struct bench_thread *t, uint64_t now)
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
 * Send every request whose intended time has come, on the next
 * connection with room, and arm the pace timer for the next one.
 * Latency counts from the intended time.  Stops the thread when the
 * schedule or -n is done.
 */
static void
issue_due(struct bench_thread *t, uint64_t now)
{
    struct bench_conn *c;
    struct timeval tv;
    uint64_t due, wait;
    int i, counted;

    while (!t->stopping) {
        due = pace_due(t, t->pace_k);
        if (t->r->stop_ns != 0 && due >= t->r->stop_ns) {
            pace_stop(t, now);
            break;
        }
        if (due > now)
            break;
        if (t->free_slots == 0) {
            /* Behind: answers will free a slot, unless time is up. */
            if (t->r->stop_ns != 0 && now >= t->r->stop_ns) {
                pace_stop(t, now);
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
            pace_stop(t, now);
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

static void
on_pace(evutil_socket_t fd, short what, void *arg)
{
    struct bench_thread *t = arg;

    (void)fd;
    (void)what;
    issue_due(t, folio_mono_ns());
}

static void
open_answered(struct bench_conn *c, uint64_t now)
{
    (void)now;
    c->t->free_slots++;
}

static void
open_after_read(struct bench_conn *c, uint64_t now)
{
    issue_due(c->t, now);
}

static void
open_tick(struct bench_thread *t, uint64_t now)
{
    if (atomic_load(&t->r->stop))
        pace_stop(t, now);
    else if (!t->stopping)
        issue_due(t, now); /* it stops the loop when -d is over */
}

static void
open_run(struct bench_thread *t, uint64_t now)
{
    struct bench_run *r = t->r;

    t->pace_interval =
        1e9 * (double)r->o->conns / ((double)t->nconns * r->o->rate);
    t->pace_t0 =
        r->t0 + (uint64_t)(t->pace_interval * t->id / (double)r->nthreads);
    issue_due(t, now);
    bench_run_loop(t);
}

/* ---- ramp: virtual users ---- */

/* Virtual users at time `now`, linear within each stage. */
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

/* Start and stop virtual users for `now`. */
static void
ramp_update(struct bench_thread *t, uint64_t now)
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

static void
ramp_refill(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;

    if (!t->stopping && c->want)
        bench_send_one(c, now, now >= t->r->measure_ns);
}

/* A user that stopped leaves once its last answer came. */
static void
ramp_after_read(struct bench_conn *c, uint64_t now)
{
    (void)now;
    if (!c->want && c->inflight == 0)
        bench_conn_close(c);
}

static void
ramp_tick(struct bench_thread *t, uint64_t now)
{
    stop_when_due(t, now);
    ramp_update(t, now);
}

static void
ramp_run(struct bench_thread *t, uint64_t now)
{
    ramp_update(t, now);
    bench_run_loop(t);
}

/* ---- rounds: the thread's share of each round, in step ---- */

static void
rounds_refill(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;

    if (!t->stopping && t->round_send > 0) {
        t->round_send--;
        bench_send_one(c, now, 1);
    }
}

static void
rounds_answered(struct bench_conn *c, uint64_t now)
{
    struct bench_thread *t = c->t;

    rounds_refill(c, now);
    if (--t->round_recv == 0)
        event_base_loopbreak(t->base);
}

static void
rounds_run(struct bench_thread *t, uint64_t now)
{
    struct bench_run *r = t->r;
    uint64_t share;
    int i;

    (void)now;
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

/* ------------------------------------------------------------------ */

const struct bench_mode_ops folio_bench_modes[BENCH_NMODES] = {
    [BENCH_CLOSED] = {"closed", closed_run, closed_refill, closed_answered,
                      NULL, stop_when_due, NULL},
    [BENCH_OPEN] = {"open", open_run, NULL, open_answered, open_after_read,
                    open_tick, on_pace},
    [BENCH_RAMP] = {"ramp", ramp_run, ramp_refill, ramp_refill, ramp_after_read,
                    ramp_tick, NULL},
    [BENCH_ROUNDS] = {"rounds", rounds_run, rounds_refill, rounds_answered,
                      NULL, stop_when_due, NULL},
};

const char *
folio_bench_mode_name(enum bench_mode m)
{
    return folio_bench_modes[m].name;
}

int
folio_bench_mode_parse(const char *s, enum bench_mode *out)
{
    int m;

    for (m = 0; m < BENCH_NMODES; m++)
        if (strcmp(s, folio_bench_modes[m].name) == 0) {
            *out = (enum bench_mode)m;
            return 0;
        }
    return -1;
}
