/*
 * engine.c - folio-bench's engine: threads, each with its own libevent
 * loop and its share of the connections, over raw non-blocking sockets.
 * When each mode sends is in modes.c.
 *
 * A request is copied from the pool and its msgid patched in; the server
 * answers each connection in order, so a ring per connection (send time,
 * pool index) matches the answers.  The four modes differ only in when
 * a request is sent: on every answer (closed loop), on a schedule
 * (open loop: latency counts from the intended send time, so a stall
 * cannot hide), while a virtual user is running (ramp), or while the
 * round lasts (rounds): each is a row of modes.c's table, which the
 * engine calls at its moments (a slot free, an answer, a tick).  Nothing
 * is allocated once the loop runs.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench/bench.h"
#include "bench/engine_int.h"
#include "src/clock.h"
#include "src/mp.h"
#include "src/rpc.h"

#define IN_BUF 16384
#define TICK_MS 50
#define BUDGET_CHUNK 64

static void note_error(struct bench_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
note_error(struct bench_run *r, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&r->lock);
    if (r->first_error[0] == '\0') {
        va_start(ap, fmt);
        vsnprintf(r->first_error, sizeof(r->first_error), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&r->lock);
}

/* With -n, may one more measured request be sent?  Taken in chunks. */
int
bench_take_budget(struct bench_thread *t)
{
    uint64_t cur, want;

    if (t->o->total == 0 || t->o->mode == BENCH_ROUNDS)
        return 1;
    if (t->budget > 0) {
        t->budget--;
        return 1;
    }
    cur = atomic_load_explicit(&t->r->budget, memory_order_relaxed);
    do {
        if (cur == 0)
            return 0;
        want = cur < BUDGET_CHUNK ? cur : BUDGET_CHUNK;
    } while (!atomic_compare_exchange_weak(&t->r->budget, &cur, cur - want));
    t->budget = want - 1;
    return 1;
}

void
bench_maybe_finish(struct bench_thread *t)
{
    if (t->stopping && t->inflight == 0)
        event_base_loopbreak(t->base);
}

void
bench_run_loop(struct bench_thread *t)
{
    if (!(t->stopping && t->inflight == 0))
        event_base_dispatch(t->base);
}

void
bench_conn_close(struct bench_conn *c)
{
    struct bench_thread *t = c->t;

    if (c->fd == -1)
        return;
    event_del(c->rev);
    event_del(c->wev);
    event_free(c->rev);
    event_free(c->wev);
    c->rev = c->wev = NULL;
    close(c->fd);
    c->fd = -1;
    t->live--;
    if (t->o->mode == BENCH_OPEN)
        t->free_slots -= (uint64_t)t->o->pipeline - c->inflight;
}

/* A connection failed: what it had in flight is lost. */
static void
conn_fail(struct bench_conn *c, const char *why)
{
    struct bench_thread *t = c->t;
    uint32_t i, q;

    if (c->fd == -1)
        return;
    note_error(t->r, "connection %u: %s", c->index, why);
    folio_stat_add(&t->c.conn_failures, 1);
    for (i = 0; i < c->inflight; i++) {
        q = c->ring_req[(c->head + i) & c->mask];
        if (q & BENCH_COUNTED) {
            folio_stat_add(&t->c.lost, 1);
            folio_stat_add(
                &t->c.kind_err[t->pool->reqs[q & ~BENCH_COUNTED].kind], 1);
        }
    }
    t->inflight -= c->inflight;
    if (t->o->mode == BENCH_OPEN)
        t->free_slots += c->inflight;
    if (t->o->mode == BENCH_ROUNDS) {
        /* What this connection had in flight will never come. */
        t->round_recv -=
            c->inflight < t->round_recv ? c->inflight : t->round_recv;
        if (t->round_recv == 0)
            event_base_loopbreak(t->base);
    }
    c->inflight = 0;
    bench_conn_close(c);
    c->dead = 1;
    if (t->live == 0 && t->o->mode != BENCH_RAMP)
        t->stopping = 1;
    bench_maybe_finish(t);
}

/* Append request `qi` of the pool, stamped `when` (ns). */
void
bench_append(struct bench_conn *c, uint32_t qi, uint64_t when, int counted,
             uint64_t now)
{
    struct bench_thread *t = c->t;
    const struct bench_req *q = &t->pool->reqs[qi];
    unsigned char *p;
    uint32_t id, slot;

    if (c->out_len + q->len > c->out_cap) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    p = (unsigned char *)c->out + c->out_len;
    memcpy(p, t->pool->bytes.b_data + q->off, q->len);
    id = c->next_id++;
    if (t->o->proto == BENCH_P_MSGPACK) {
        p[BENCH_MSGID_OFF] = (unsigned char)(id >> 24);
        p[BENCH_MSGID_OFF + 1] = (unsigned char)(id >> 16);
        p[BENCH_MSGID_OFF + 2] = (unsigned char)(id >> 8);
        p[BENCH_MSGID_OFF + 3] = (unsigned char)id;
    }
    c->out_len += q->len;
    if (t->o->send_each && c->out_len - c->out_off == q->len) {
        /*
         * --send-each: this request in a send(2) of its own, as callers
         * sharing a connection would; what does not go now waits for
         * bench_flush(), which also reports the errors.
         */
        ssize_t n = send(c->fd, p, q->len, MSG_NOSIGNAL);

        if (n > 0) {
            c->out_off += (size_t)n;
            folio_stat_add(&t->c.bytes_out, (uint64_t)n);
        }
        if (c->out_off == c->out_len)
            c->out_off = c->out_len = 0;
    }
    slot = (c->head + c->inflight) & c->mask;
    c->ring_ns[slot] = when;
    c->ring_req[slot] = qi | (counted ? BENCH_COUNTED : 0);
    if (c->inflight == 0)
        c->progress_ns = now;
    c->inflight++;
    t->inflight++;
    if (counted) {
        folio_stat_add(&t->c.sent, 1);
        folio_stat_add(&t->c.kind_sent[q->kind], 1);
    }
}

/* Send what is pending; on a full socket, wait for it to drain. */
int
bench_flush(struct bench_conn *c)
{
    ssize_t n;

    while (c->out_off < c->out_len) {
        n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                 MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            folio_stat_add(&c->t->c.bytes_out, (uint64_t)n);
        } else if (n == -1 && errno == EINTR) {
            continue;
        } else if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            event_add(c->wev, NULL);
            return 0;
        } else {
            conn_fail(c, n == 0 ? "send returned 0" : strerror(errno));
            return -1;
        }
    }
    c->out_off = c->out_len = 0;
    return 0;
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
    struct bench_conn *c = arg;

    (void)fd;
    (void)what;
    if (bench_flush(c) == 0 && c->out_off == c->out_len && c->fd != -1)
        event_del(c->wev);
}

/* One request from the pool, timed from `now`. */
void
bench_send_one(struct bench_conn *c, uint64_t now, int counted)
{
    struct bench_thread *t = c->t;

    bench_append(c, bench_pick(t, t->pool->n), now, counted, now);
}

/* Decode the code of an error value [code, message]. */
static int
error_code(struct folio_mp_cur *e)
{
    struct folio_mp_cur c = *e;
    uint32_t n;
    int64_t code;

    if (folio_mp_read_array(&c, &n) != 0 || n < 1 ||
        folio_mp_read_int(&c, &code) != 0 || code < 0 || code >= FOLIO_ST_MAX)
        return FOLIO_ST_MAX;
    return (int)code;
}

/*
 * Whether result `res` is what request q expects.  Only when it is not,
 * `got` describes what came (formatting costs more than the check).
 */
static int
check_answer(const struct bench_req *q, struct folio_mp_cur res, char *got,
             size_t gotlen)
{
    struct folio_mp_cur c = res;
    const char *s;
    uint32_t len;
    int64_t v;

    switch (q->expect) {
    case BENCH_X_INT:
        if (folio_mp_read_int(&c, &v) == 0) {
            if (v == q->x_int)
                return 1;
            snprintf(got, gotlen, "%lld", (long long)v);
            return 0;
        }
        break;
    case BENCH_X_STR:
        if (folio_mp_read_str(&c, &s, &len) == 0) {
            if (folio_mp_str_eq(s, len, q->x_str))
                return 1;
            snprintf(got, gotlen, "\"%.*s\"", (int)(len < 64 ? len : 64), s);
            return 0;
        }
        break;
    default:
        return 1;
    }
    snprintf(got, gotlen, "a %s", folio_mp_type_name(folio_mp_type(&res)));
    return 0;
}

static void
wrong_answer(struct bench_thread *t, const struct bench_req *q, const char *got)
{
    struct bench_run *r = t->r;
    char label[200], want[96];

    folio_stat_add(&t->c.wrong, 1);
    if (q->expect == BENCH_X_INT)
        snprintf(want, sizeof(want), "%lld", (long long)q->x_int);
    else if (q->expect == BENCH_X_LEN)
        snprintf(want, sizeof(want), "a reply of %lld bytes",
                 (long long)q->x_int);
    else
        snprintf(want, sizeof(want), "\"%.*s\"",
                 (int)strcspn(q->x_str, "\r\n"), q->x_str);
    folio_bench_req_label(t->pool, q, label, sizeof(label));
    pthread_mutex_lock(&r->lock);
    if (r->first_wrong[0] == '\0')
        snprintf(r->first_wrong, sizeof(r->first_wrong),
                 "%s answered %s, expected %s", label, got, want);
    pthread_mutex_unlock(&r->lock);
    /* The figures of a server that answers wrong mean nothing: stop. */
    atomic_store(&r->stop, 1);
}

/* Count what an answer was: right, wrong or an error with `code`. */
static void
account_outcome(struct bench_thread *t, const struct bench_req *q, int ok,
                int code, uint64_t dt, uint64_t now)
{
    if (ok) {
        folio_stat_add(&t->c.ok, 1);
    } else if (code >= 0) {
        folio_stat_add(&t->c.err_replies, 1);
        folio_stat_add(&t->c.codes[code], 1);
        folio_stat_add(&t->c.kind_err[q->kind], 1);
        if (q->ok_codes & BENCH_CODE(code)) {
            folio_stat_add(&t->c.expected, 1);
            folio_stat_add(&t->c.codes_expected[code], 1);
        }
    }
    folio_stat_add(&t->c.kind_hist[q->kind][folio_lat_bucket(dt)], 1);
    folio_stat_add(&t->c.kind_sum_ns[q->kind], dt);
    if (dt > folio_stat_get(&t->c.kind_max_ns[q->kind]))
        folio_stat_set(&t->c.kind_max_ns[q->kind], dt);
    folio_stat_set(&t->c.last_ns, now);
}

/* Count one measured msgpack-RPC answer. */
static void
account(struct bench_thread *t, const struct bench_req *q,
        struct folio_rpc_msg *m, uint64_t dt, uint64_t now)
{
    char got[96];

    if (folio_mp_read_nil(&m->error) != 0) {
        account_outcome(t, q, 0, error_code(&m->error), dt, now);
    } else if (q->expect != BENCH_X_NONE &&
               !check_answer(q, m->result, got, sizeof(got))) {
        wrong_answer(t, q, got);
        account_outcome(t, q, 0, -1, dt, now);
    } else {
        account_outcome(t, q, 1, 0, dt, now);
    }
}

/* Whether a peer's reply (len bytes at p) is what q expects. */
static int
peer_answer_ok(const struct bench_req *q, const char *p, size_t len,
               char *got, size_t gotlen)
{
    size_t want = (size_t)q->x_int, i, n;

    switch (q->expect) {
    case BENCH_X_BYTES:
        if (len == want && memcmp(p, q->x_str, want) == 0)
            return 1;
        break;
    case BENCH_X_PREFIX:
        if (len >= want && memcmp(p, q->x_str, want) == 0)
            return 1;
        break;
    case BENCH_X_LEN:
        if (len == want)
            return 1;
        break;
    default:
        return 1;
    }
    /* "+PONG\r\n" shown as +PONG, cut, with what is not printable as '.'. */
    n = len < 40 ? len : 40;
    for (i = 0; i < n && i + 1 < gotlen; i++)
        got[i] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.';
    snprintf(got + i, gotlen - i, "%s (%zu bytes)", len > n ? "..." : "",
             len);
    return 0;
}

/* Count one measured answer of a peer: len bytes at p. */
static void
account_peer(struct bench_thread *t, const struct bench_req *q, const char *p,
             size_t len, int is_error, uint64_t dt, uint64_t now)
{
    char got[96];

    if (is_error) {
        account_outcome(t, q, 0,
                        t->o->proto == BENCH_P_HTTP
                            ? folio_bench_http_code(p, len)
                            : FOLIO_ST_MAX,
                        dt, now);
    } else if (!peer_answer_ok(q, p, len, got, sizeof(got))) {
        wrong_answer(t, q, got);
        account_outcome(t, q, 0, -1, dt, now);
    } else {
        account_outcome(t, q, 1, 0, dt, now);
    }
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
    struct bench_conn *c = arg;
    struct bench_thread *t = c->t;
    struct folio_rpc_msg m;
    const char *why, *p;
    enum bench_frame f;
    uint64_t now;
    uint32_t q, want_id;
    ssize_t n;
    size_t avail, len;
    int rc;

    (void)what;
    if (folio_buf_reserve(&c->in, IN_BUF) != 0) {
        conn_fail(c, "out of memory");
        return;
    }
    n = recv(fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in), 0);
    if (n <= 0) {
        if (n == -1 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_fail(c, n == 0 ? "the server closed the connection"
                            : strerror(errno));
        return;
    }
    c->in.b_len += (size_t)n;
    folio_stat_add(&t->c.bytes_in, (uint64_t)n);
    now = folio_mono_ns();
    while ((avail = folio_buf_pending(&c->in)) > 0) {
        p = c->in.b_data + c->in.b_off;
        if (t->o->proto != BENCH_P_MSGPACK) {
            /* A peer's protocol: replies in order, framed by peer.c. */
            f = t->o->proto == BENCH_P_HTTP
                    ? folio_bench_http_frame(&c->http, (char *)p, avail, &len)
                    : folio_bench_peer_frame(t->o, p, avail, &len);
            if (f == BENCH_F_MORE)
                break;
            if (t->o->proto == BENCH_P_HTTP && f != BENCH_F_BAD)
                folio_bench_http_init(&c->http); /* for the next one */
            if (f == BENCH_F_BAD || c->inflight == 0) {
                conn_fail(c, f == BENCH_F_BAD ? "malformed reply"
                                              : "a reply to a request not sent");
                return;
            }
            q = c->ring_req[c->head];
            if (q & BENCH_COUNTED)
                account_peer(t, &t->pool->reqs[q & ~BENCH_COUNTED], p, len,
                             f == BENCH_F_ERROR, now - c->ring_ns[c->head],
                             now);
            folio_buf_consume(&c->in, len);
            goto answered;
        }
        rc = folio_mp_scan(&c->scan, p, avail);
        if (rc == FOLIO_MP_MORE)
            break;
        if (rc != FOLIO_MP_DONE ||
            folio_rpc_parse(p, (size_t)c->scan.pos, &m, &why) != 0 ||
            m.type != FOLIO_RPC_RESPONSE) {
            conn_fail(c, "malformed reply");
            return;
        }
        want_id = c->next_id - c->inflight;
        if (c->inflight == 0 || m.msgid != want_id) {
            conn_fail(c, "a reply to a request not sent, or out of order");
            return;
        }
        q = c->ring_req[c->head];
        if (q & BENCH_COUNTED)
            account(t, &t->pool->reqs[q & ~BENCH_COUNTED], &m,
                    now - c->ring_ns[c->head], now);
        folio_buf_consume(&c->in, (size_t)c->scan.pos);
        folio_mp_scan_reset(&c->scan);
    answered:
        c->head = (c->head + 1) & c->mask;
        c->inflight--;
        t->inflight--;
        c->progress_ns = now;
        t->mode->answered(c, now);
    }
    if (c->out_len > c->out_off && bench_flush(c) != 0)
        return;
    if (t->mode->after_read != NULL)
        t->mode->after_read(c, now);
    bench_maybe_finish(t);
}

int
bench_conn_open(struct bench_thread *t, struct bench_conn *c)
{
    int fd;

    if ((fd = folio_addr_connect(&t->r->target, 5000)) == -1) {
        note_error(t->r,
                   "cannot connect to %s (%s): %s: is the server running "
                   "there?",
                   t->o->addr, t->o->addr_from, strerror(errno));
        return -1;
    }
    evutil_make_socket_nonblocking(fd);
    c->rev = event_new(t->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(t->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (c->rev == NULL || c->wev == NULL || event_add(c->rev, NULL) != 0) {
        if (c->rev != NULL)
            event_free(c->rev);
        if (c->wev != NULL)
            event_free(c->wev);
        close(fd);
        note_error(t->r, "event_new failed");
        return -1;
    }
    c->fd = fd;
    c->next_id = 1;
    c->head = c->inflight = 0;
    c->out_off = c->out_len = 0;
    folio_buf_reset(&c->in);
    if (t->o->proto == BENCH_P_HTTP)
        folio_bench_http_init(&c->http);
    else
        folio_mp_scan_reset(&c->scan);
    t->live++;
    if (t->o->mode == BENCH_OPEN)
        t->free_slots += (uint64_t)t->o->pipeline;
    return 0;
}

/* Fill connection c up to -P requests (closed loop, ramp, rounds). */
void
bench_prime(struct bench_conn *c, uint64_t now)
{
    int j;

    for (j = 0; j < c->t->o->pipeline && c->fd != -1 && !c->dead; j++) {
        if ((uint32_t)j < c->inflight)
            continue;
        c->t->mode->refill(c, now);
    }
    if (c->fd != -1 && c->out_len > c->out_off)
        bench_flush(c);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct bench_thread *t = arg;
    struct bench_conn *c;
    uint64_t now = folio_mono_ns();
    int i;

    (void)fd;
    (void)what;
    t->mode->tick(t, now);
    for (i = 0; i < t->nconns; i++) {
        c = &t->conns[i];
        if (c->fd != -1 && c->inflight > 0 &&
            now - c->progress_ns > t->o->timeout_ns)
            conn_fail(c, "no answer within the time-out");
    }
    bench_maybe_finish(t);
}

static int
thread_setup(struct bench_thread *t)
{
    const struct bench_opts *o = t->o;
    struct event_config *cfg;
    struct timeval tick = {0, TICK_MS * 1000};
    uint32_t ring = 1;
    int i;

    while (ring < (uint32_t)o->pipeline)
        ring <<= 1;
    if ((cfg = event_config_new()) == NULL)
        return -1;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    if (t->mode->pace != NULL) /* a schedule */
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    t->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (t->base == NULL)
        return -1;
    t->tick = event_new(t->base, -1, EV_PERSIST, on_tick, t);
    if (t->tick == NULL || event_add(t->tick, &tick) != 0)
        return -1;
    if (t->mode->pace != NULL &&
        (t->pace = evtimer_new(t->base, t->mode->pace, t)) == NULL)
        return -1;
    for (i = 0; i < t->nconns; i++) {
        struct bench_conn *c = &t->conns[i];

        c->t = t;
        c->fd = -1;
        c->mask = ring - 1;
        c->out_cap = (size_t)o->pipeline * t->pool->maxlen;
        c->out = malloc(c->out_cap);
        c->ring_ns = malloc(ring * sizeof(*c->ring_ns));
        c->ring_req = malloc(ring * sizeof(*c->ring_req));
        if (c->out == NULL || c->ring_ns == NULL || c->ring_req == NULL ||
            folio_buf_init(&c->in, IN_BUF, 0) != 0)
            return -1;
        if (o->proto != BENCH_P_HTTP)
            folio_mp_scan_init(&c->scan, 64u << 20, FOLIO_MP_MAX_DEPTH);
    }
    return 0;
}

static void
thread_teardown(struct bench_thread *t)
{
    int i;

    for (i = 0; t->conns != NULL && i < t->nconns; i++) {
        struct bench_conn *c = &t->conns[i];

        if (c->inflight > 0)
            conn_fail(c, "unanswered at the end");
        bench_conn_close(c);
        free(c->out);
        free(c->ring_ns);
        free(c->ring_req);
        folio_buf_free(&c->in);
    }
    free(t->conns);
    t->conns = NULL;
    if (t->tick != NULL)
        event_free(t->tick);
    if (t->pace != NULL)
        event_free(t->pace);
    if (t->base != NULL)
        event_base_free(t->base);
    t->tick = t->pace = NULL;
    t->base = NULL;
}

static void *
thread_main(void *arg)
{
    struct bench_thread *t = arg;
    struct bench_run *r = t->r;
    int i, ok;

    ok = thread_setup(t) == 0;
    if (!ok)
        note_error(r, "out of memory setting up thread %d", t->id);
    for (i = 0; ok && t->o->mode != BENCH_RAMP && i < t->nconns; i++)
        ok = bench_conn_open(t, &t->conns[i]) == 0;
    if (!ok) {
        pthread_mutex_lock(&r->lock);
        r->connect_failed = 1;
        pthread_mutex_unlock(&r->lock);
    }
    pthread_barrier_wait(&r->go); /* connected */
    pthread_barrier_wait(&r->go); /* main has set the clock */
    if (r->connect_failed)
        goto out;
    t->mode->run(t, folio_mono_ns());
out:
    thread_teardown(t);
    pthread_mutex_lock(&r->lock);
    r->done++;
    pthread_cond_signal(&r->done_cv);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int
folio_bench_run_start(struct bench_run *r)
{
    const struct bench_opts *o = r->o;
    sigset_t all, old;
    int i, n, nconns;

    nconns = o->conns; /* ramp: the largest stage (parse_args) */
    if ((r->th = calloc((size_t)r->nthreads, sizeof(*r->th))) == NULL) {
        snprintf(r->first_error, sizeof(r->first_error), "out of memory");
        return -1;
    }
    pthread_mutex_init(&r->lock, NULL);
    {
        pthread_condattr_t ca; /* the main thread waits on CLOCK_MONOTONIC */

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&r->done_cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    pthread_barrier_init(&r->go, NULL, (unsigned)r->nthreads + 1);
    pthread_barrier_init(&r->round, NULL, (unsigned)r->nthreads + 1);
    /* The threads leave signals to the main thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i < r->nthreads; i++) {
        struct bench_thread *t = &r->th[i];
        int k;

        t->id = i;
        t->r = r;
        t->o = o;
        t->mode = &folio_bench_modes[o->mode];
        t->pool = r->pool;
        t->rng = (o->seed + 1) * 0x9E3779B97F4A7C15ULL ^
                 (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ULL;
        if (t->rng == 0)
            t->rng = 1;
        n = nconns / r->nthreads + (i < nconns % r->nthreads);
        t->nconns = n;
        t->conns = calloc((size_t)(n > 0 ? n : 1), sizeof(*t->conns));
        /* Virtual user numbers interleave over the threads. */
        for (k = 0; t->conns != NULL && k < n; k++)
            t->conns[k].index = (uint32_t)(k * r->nthreads + i);
        if (t->conns == NULL ||
            pthread_create(&t->th, NULL, thread_main, t) != 0) {
            /* Cannot happen in practice; give up before anyone waits. */
            fprintf(stderr, "folio-bench: cannot start thread %d\n", i);
            exit(BENCH_EXIT_CONNECT);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}

void
folio_bench_run_join(struct bench_run *r)
{
    int i;

    for (i = 0; i < r->nthreads; i++)
        pthread_join(r->th[i].th, NULL);
    pthread_barrier_destroy(&r->go);
    pthread_barrier_destroy(&r->round);
    pthread_cond_destroy(&r->done_cv);
    pthread_mutex_destroy(&r->lock);
}

const struct bench_counts *
folio_bench_run_counts(const struct bench_run *r, int i)
{
    return &r->th[i].c;
}
