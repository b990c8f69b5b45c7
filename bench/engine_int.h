/*
 * engine_int.h - between folio-bench's engine (engine.c: threads,
 * connections, reading and accounting the answers) and its modes
 * (modes.c: when each mode sends).  The engine calls a mode through its
 * row of folio_bench_modes[] only; the modes call the engine's
 * primitives below.  Private to bench/engine.c and bench/modes.c.
 * Everything here runs in one engine thread, on that thread's own
 * connections: no locks.
 */
#ifndef FOLIO_BENCH_ENGINE_INT_H
#define FOLIO_BENCH_ENGINE_INT_H

#include <stdint.h>

#include <event2/event.h>

#include "bench/bench.h"
#include "src/buf.h"
#include "src/http_parse.h"
#include "src/mp.h"

#define BENCH_COUNTED 0x80000000u /* ring_req: a measured request */

struct bench_conn;
struct bench_thread;

/*
 * A mode (modes.c): what the engine calls, at each of its moments.
 * Each hook runs on the thread's loop; NULL: nothing to do then.
 */
struct bench_mode_ops {
    const char *name; /* the command line's word for it */
    /* the thread's work once its connections are open: send, run the
     * loop until done (bench_run_loop), return */
    void (*run)(struct bench_thread *t, uint64_t now);
    /* a slot of c is free and the mode may fill it: bench_prime() */
    void (*refill)(struct bench_conn *c, uint64_t now);
    /* an answer came on c (accounted, its slot free) */
    void (*answered)(struct bench_conn *c, uint64_t now);
    /* a read of c's answers is over and what c had queued was sent */
    void (*after_read)(struct bench_conn *c, uint64_t now);
    /* every tick (50 ms): stop when told to (r->stop) or when due */
    void (*tick)(struct bench_thread *t, uint64_t now);
    /* a schedule: the callback of the thread's pace timer (and the
     * loop's precise timer); NULL for the modes that follow answers */
    event_callback_fn pace;
};

extern const struct bench_mode_ops folio_bench_modes[BENCH_NMODES];

struct bench_conn {
    int fd;
    uint32_t index; /* global number: the virtual user */
    struct bench_thread *t;
    struct event *rev, *wev;
    struct folio_buf in;
    union {
        struct folio_mp_scan scan;   /* msgpack-RPC replies */
        struct folio_http_req http; /* --proto http's */
    };
    char *out;
    size_t out_off, out_len, out_cap;
    uint64_t *ring_ns;  /* send time (open loop: intended send time) */
    uint32_t *ring_req; /* pool index | BENCH_COUNTED */
    uint32_t mask, head, inflight;
    uint32_t next_id;
    uint64_t progress_ns; /* the last answer, or the send that woke it */
    int want;             /* ramp: the virtual user runs */
    int dead;             /* failed: never used again */
};

struct bench_thread {
    pthread_t th;
    int id;
    struct bench_run *r;
    const struct bench_opts *o;
    const struct bench_mode_ops *mode; /* &folio_bench_modes[o->mode] */
    const struct bench_pool *pool;
    struct event_base *base;
    struct event *tick, *pace;
    struct bench_conn *conns;
    int nconns;
    int live;            /* connections open */
    uint64_t inflight;   /* over all its connections */
    uint64_t free_slots; /* open loop: room left on live connections */
    uint64_t rng;
    uint64_t budget; /* taken from r->budget, not yet spent */
    int stopping;    /* send nothing more; finish when drained */
    /* open loop */
    double pace_interval; /* ns between intended sends */
    uint64_t pace_t0, pace_k;
    int rr;
    /* rounds */
    uint64_t round_send, round_recv;
    struct bench_counts c __attribute__((aligned(64)));
};

/* xorshift64*: per thread, no lock. */
static inline uint32_t
bench_pick(struct bench_thread *t, uint32_t n)
{
    uint64_t x = t->rng;

    if (n <= 1)
        return 0;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return (uint32_t)((((x * 0x2545F4914F6CDD1DULL) >> 32) * n) >> 32);
}

/* The engine's primitives (engine.c), for the modes. */

/*
 * bench_take_budget - with -n, may one more measured request be sent?
 * Takes from the run's budget in chunks.  1 or 0.
 */
int bench_take_budget(struct bench_thread *t);

/* bench_maybe_finish - leave the loop if stopping with nothing in flight. */
void bench_maybe_finish(struct bench_thread *t);

/*
 * bench_append - queue request `qi` of the pool on c with its msgid,
 * timed from `when` (open loop: the intended send time); `counted` if
 * measured.  The caller made sure c has room (inflight < -P).
 */
void bench_append(struct bench_conn *c, uint32_t qi, uint64_t when, int counted,
                  uint64_t now);

/* bench_send_one - bench_append() a random request of the pool, at now. */
void bench_send_one(struct bench_conn *c, uint64_t now, int counted);

/*
 * bench_flush - write what c has queued; the rest waits for EV_WRITE.
 * Returns 0, or -1 when the connection failed (and is closed).
 */
int bench_flush(struct bench_conn *c);

/* bench_prime - fill c up to -P requests through the mode's refill, send. */
void bench_prime(struct bench_conn *c, uint64_t now);

/* bench_run_loop - run the thread's loop, unless there is nothing to
 * wait for (stopping, nothing in flight). */
void bench_run_loop(struct bench_thread *t);

/* bench_conn_open - connect c (blocking, 5 s at most).  0 or -1 (noted). */
int bench_conn_open(struct bench_thread *t, struct bench_conn *c);

/* bench_conn_close - close c, not a failure (a ramp user stopping). */
void bench_conn_close(struct bench_conn *c);

#endif
