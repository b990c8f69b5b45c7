/*
 * metrics_conn.c - the connections of the metrics listener (metrics.c's
 * evhttp): how many it holds, how long a request's header may take, and
 * what it does when the master is out of descriptors, so that a flood of
 * the port (1,100 connections sending a header byte every 2 s to a master
 * of 1,024 descriptors) neither spins the master nor takes the
 * descriptors it needs to replace a worker, reload or upgrade.
 *
 * evhttp 2.1 has no connection limit and no header deadline (its timeout
 * is reset by every byte), so this file follows its connections: the
 * bufferevent callback (evhttp_set_bevcb) sees each new connection, whose
 * evhttp_connection is adopted later in the same loop turn (the
 * bufferevent's callback argument, checked against it) and followed to
 * its close callback.
 *   - The limit: metrics_max_connections, and never more than the
 *     descriptors the master keeps for itself allow (master_fds).
 *     At the limit the oldest connection still waiting for its request's
 *     header is closed to make room, as a slow sender is what a flood is
 *     made of; with none, the new one is closed and the listener rests
 *     until a connection ends: a load balancer's /healthz gets through.
 *   - The header deadline: metrics_header_timeout from the connection's
 *     start, or from the end of its previous reply (HAProxy's
 *     `timeout http-request`); metrics_idle_timeout for no traffic.
 *   - Out of descriptors at accept (EMFILE): a spare descriptor is closed
 *     to take the newest connection off the queue and close it, the
 *     listener backs off, and one line per second says how many.
 *   - An upgrade (folio_mconn_quiesce): the exec closes every connection
 *     the master took, so first the listener stops accepting (what comes
 *     waits in the kernel's queue, for the new image), requests being
 *     answered are answered, with Connection: close, as are the first
 *     requests of connections just taken (a load balancer's check sends
 *     it at once), and connections between requests are closed; at most
 *     QUIESCE_MS.  Before, a load balancer's check on a connection the old
 *     image had just taken failed (CI: one of 613 during an upgrade).
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/log.h"

#define BACKOFF_MS 100      /* out of descriptors: the listener rests */
#define REFUSED_LOG_MS 1000 /* one line per second, with the count */
#define MASTER_OTHER_FDS 64 /* log, stats, epoll, signals, admin, files */
#define ACCEPTS_PER_TURN 16 /* then the connections' reads have their turn */
#define QUIESCE_MS 1000     /* an upgrade waits this long for requests */

struct folio_mconn {
    struct folio_mconns *set;
    struct folio_mconn *prev, *next; /* oldest first */
    struct bufferevent *bev;         /* until adopted: held by a reference */
    struct evhttp_connection *evcon; /* NULL until adopted */
    struct event *deadline;          /* the header's */
    int in_request;                  /* a request is being answered */
    int served;                      /* a reply was sent */
    int doomed;                      /* over the limit: closed at adoption */
    /* Another's close callback (folio_mconn_on_close): told first. */
    void (*user_cb)(struct evhttp_connection *, void *);
    void *user_arg;
};

enum { CLOSED_LIMIT, CLOSED_HEADER, CLOSED_FDS, CLOSED_N };

struct folio_mconns {
    struct folio_master *m;
    struct evconnlistener *lev;
    struct folio_mconn *head, *tail;
    struct event *ev_adopt; /* adopts the connections of this turn */
    struct event *ev_back;  /* re-enables the listener */
    unsigned n;             /* connections open */
    unsigned ndoomed;       /* of them, to be closed at adoption */
    unsigned accepted;      /* in this loop turn */
    int resting; /* listener disabled: EMFILE, a turn's accepts, the limit */
    int quiescing; /* an upgrade's: the listener stays disabled */
    void (*quiet)(struct folio_master *); /* quiescing, until called */
    struct event *ev_look;     /* quiescing: a connection changed */
    struct event *ev_quiesce;  /* quiescing: the deadline */
    int spare;   /* /dev/null, for EMFILE; or -1 */
    int refused_err;
    struct folio_log_rate refused_log;
    uint64_t closed[CLOSED_N];
};

/*
 * The set of the one metrics listener, for its error callback: that gets
 * the listener's callback argument, which is evhttp's.
 */
static struct folio_mconns *listener_set;

static const char *const closed_names[CLOSED_N] = {
    [CLOSED_LIMIT] = "limit",
    [CLOSED_HEADER] = "header_timeout",
    [CLOSED_FDS] = "descriptors",
};

/*
 * The descriptors the master keeps for itself (workers, reloads,
 * upgrades), which the metrics listener's connections may not take.
 */
static unsigned
master_fds(const struct folio_master *m)
{
    unsigned workers = m->cur != NULL && m->cur->nworkers > 0
                           ? (unsigned)m->cur->nworkers
                           : FOLIO_MAX_WORKERS;

    /*
     * Two generations' listeners (a reload), and for each worker of two
     * generations its channel, the other end while it forks and a spare;
     * plus the accepts of one turn past the limit.
     */
    return MASTER_OTHER_FDS + 2 * (FOLIO_MAX_LISTEN + 1) + 2 * 3 * workers +
           ACCEPTS_PER_TURN;
}

/* The connections allowed now: the option, within the descriptors. */
static unsigned
cap_of(const struct folio_mconns *s)
{
    const struct folio_master *m = s->m;
    unsigned cap = m->cur != NULL ? m->cur->cfg.metrics_max_connections : 1,
             keep = master_fds(m);
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        rlim_t room = rl.rlim_cur > keep + 2 ? rl.rlim_cur - keep : 2;

        if (room < cap)
            cap = (unsigned)room;
    }
    return cap;
}

static struct timeval
tv_of(uint32_t ms)
{
    return (struct timeval){(time_t)(ms / 1000),
                            (suseconds_t)(ms % 1000) * 1000};
}

/* The serving generation's idle timeout: evhttp's, of each connection. */
static struct timeval
idle_tv(const struct folio_master *m)
{
    return tv_of(m->cur != NULL ? m->cur->cfg.metrics_idle_timeout_ms : 10000);
}

static void
set_deadline(struct folio_mconn *c)
{
    uint32_t ms = c->set->m->cur != NULL
                      ? c->set->m->cur->cfg.metrics_header_timeout_ms
                      : 0;
    struct timeval tv = tv_of(ms);

    if (ms != 0)
        evtimer_add(c->deadline, &tv);
    else
        evtimer_del(c->deadline);
}

static void
unlink_conn(struct folio_mconn *c)
{
    struct folio_mconns *s = c->set;

    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        s->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        s->tail = c->prev;
    s->n--;
    if (c->doomed)
        s->ndoomed--;
    if (c->evcon == NULL && c->bev != NULL)
        bufferevent_decref(c->bev);
    event_free(c->deadline);
    folio_free(c);
}

/* One the limit may close to make room: waiting for its header. */
static int
has_victim(const struct folio_mconns *s)
{
    const struct folio_mconn *c;

    for (c = s->head; c != NULL; c = c->next)
        if (!c->in_request && !c->doomed)
            return 1;
    return 0;
}

/*
 * The listener rests after EMFILE (for BACKOFF_MS), after a turn's
 * ACCEPTS_PER_TURN, and at the limit with no connection to close for
 * room; wake it once it can take one.
 */
static void
listener_wake(struct folio_mconns *s)
{
    if (s->lev != NULL && s->resting && !s->quiescing &&
        !evtimer_pending(s->ev_back, NULL) &&
        (s->n - s->ndoomed < cap_of(s) || has_victim(s))) {
        s->resting = 0;
        evconnlistener_enable(s->lev);
    }
}

static void
on_close(struct evhttp_connection *evcon, void *arg)
{
    struct folio_mconn *c = arg;
    struct folio_mconns *s = c->set;

    if (c->user_cb != NULL)
        c->user_cb(evcon, c->user_arg);
    unlink_conn(c);
    listener_wake(s);
    if (s->quiet != NULL)
        event_active(s->ev_look, EV_TIMEOUT, 1);
}

/* Close c now: it waits for a header (no callback of ours is pending). */
static void
close_conn(struct folio_mconn *c, int why)
{
    c->set->closed[why]++;
    evhttp_connection_free(c->evcon); /* on_close frees c */
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct folio_mconn *c = arg;

    (void)fd, (void)what;
    if (c->evcon != NULL && !c->in_request)
        close_conn(c, CLOSED_HEADER);
}

/* The connections of this turn: their evhttp_connection, now it is set. */
static void
on_adopt(evutil_socket_t fd, short what, void *arg)
{
    struct folio_mconns *s = arg;
    struct folio_mconn *c, *next;
    bufferevent_event_cb eventcb;
    void *cbarg;
    struct timeval tv;

    (void)fd, (void)what;
    s->accepted = 0;
    for (c = s->head; c != NULL; c = next) {
        struct bufferevent *bev = c->bev;

        next = c->next;
        if (c->evcon != NULL)
            continue;
        bufferevent_getcb(bev, NULL, NULL, &eventcb, &cbarg);
        /* Freed by evhttp already (bufferevent_free clears the callbacks). */
        if (eventcb == NULL || cbarg == NULL ||
            evhttp_connection_get_bufferevent(cbarg) != bev) {
            unlink_conn(c);
            continue;
        }
        c->evcon = cbarg;
        bufferevent_decref(bev); /* evhttp holds it */
        evhttp_connection_set_closecb(c->evcon, on_close, c);
        tv = idle_tv(s->m); /* a reload may have changed it */
        evhttp_connection_set_timeout_tv(c->evcon, &tv);
        if (c->doomed)
            close_conn(c, CLOSED_LIMIT);
        else
            set_deadline(c);
    }
    listener_wake(s);
}

/*
 * evhttp's bufferevent callback: a new connection, before evhttp has its
 * descriptor.  At the limit, the oldest one still in its header makes
 * room; with none, this one is closed at adoption.
 */
static struct bufferevent *
on_new_conn(struct event_base *base, void *arg)
{
    struct folio_mconns *s = arg;
    struct folio_mconn *c, *v;
    struct bufferevent *bev;

    if ((c = folio_calloc(1, sizeof(*c))) == NULL)
        return NULL; /* evhttp makes its own: not followed */
    if ((bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) ==
            NULL ||
        (c->deadline = evtimer_new(base, on_deadline, c)) == NULL) {
        if (bev != NULL)
            bufferevent_free(bev);
        folio_free(c);
        return NULL;
    }
    if (s->n - s->ndoomed >= cap_of(s)) {
        for (v = s->head; v != NULL; v = v->next)
            if (!v->in_request && !v->doomed)
                break;
        if (v == NULL) {
            v = c;
            s->resting = 1;
            evconnlistener_disable(s->lev); /* until a connection ends */
        }
        if (v->evcon != NULL)
            close_conn(v, CLOSED_LIMIT);
        else {
            v->doomed = 1; /* closed once adopted, later in this turn */
            s->ndoomed++;
        }
    }
    bufferevent_incref(bev); /* alive until adopted, even if evhttp fails */
    c->set = s;
    c->bev = bev;
    c->prev = s->tail;
    if (s->tail != NULL)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    s->n++;
    /*
     * evconnlistener accepts until the queue is empty: against clients
     * that connect again as fast as they are closed, one turn would
     * evict every connection, a load balancer's check among them, before
     * any is read.  ACCEPTS_PER_TURN, then the listener waits for on_adopt.
     */
    if (++s->accepted >= ACCEPTS_PER_TURN && !s->resting) {
        s->resting = 1;
        evconnlistener_disable(s->lev);
    }
    event_active(s->ev_adopt, EV_TIMEOUT, 1);
    return bev;
}

static struct folio_mconn *
find(struct folio_mconns *s, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct folio_mconn *c;

    for (c = s->head; c != NULL && evcon != NULL; c = c->next)
        if (c->evcon == evcon)
            return c;
    return NULL;
}

void
folio_mconn_on_close(struct folio_master *m, struct evhttp_request *req,
                     void (*cb)(struct evhttp_connection *, void *), void *arg)
{
    struct folio_mconn *c = m->mconns != NULL ? find(m->mconns, req) : NULL;

    if (c != NULL) {
        c->user_cb = cb;
        c->user_arg = arg;
    } else if (evhttp_request_get_connection(req) != NULL) {
        /* Not followed (no memory when it came): evhttp's own. */
        evhttp_connection_set_closecb(evhttp_request_get_connection(req), cb,
                                      arg);
    }
}

/* The reply is out: the next request's header has its deadline. */
static void
on_reply_done(struct evhttp_request *req, void *arg)
{
    struct folio_mconns *s = arg;
    struct folio_mconn *c = find(s, req);

    if (c != NULL) {
        c->in_request = 0;
        c->served = 1;
        set_deadline(c);
        listener_wake(s);
        /* Not closed here: evhttp goes on with it after this callback. */
        if (s->quiet != NULL)
            event_active(s->ev_look, EV_TIMEOUT, 1);
    }
}

void
folio_mconn_request(struct folio_master *m, struct evhttp_request *req)
{
    struct folio_mconn *c;

    if (m->mconns == NULL || (c = find(m->mconns, req)) == NULL)
        return;
    c->in_request = 1;
    evtimer_del(c->deadline);
    evhttp_request_set_on_complete_cb(req, on_reply_done, m->mconns);
    if (m->mconns->quiescing) /* the last on it: the exec would close it */
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Connection", "close");
}

/* ---- an upgrade ---- */

static void
quiet_now(struct folio_mconns *s)
{
    void (*quiet)(struct folio_master *) = s->quiet;

    s->quiet = NULL;
    evtimer_del(s->ev_quiesce);
    if (quiet != NULL)
        quiet(s->m);
}

/*
 * Close the connections between requests; quiet once none is in a
 * request, waits for its first, or is still to be adopted.
 */
static void
on_look(evutil_socket_t fd, short what, void *arg)
{
    struct folio_mconns *s = arg;
    struct folio_mconn *c, *next;
    unsigned busy = 0;

    (void)fd, (void)what;
    if (s->quiet == NULL)
        return;
    for (c = s->head; c != NULL; c = next) {
        next = c->next;
        if (c->evcon != NULL && c->served && !c->in_request)
            evhttp_connection_free(c->evcon); /* on_close frees c */
        else if (!c->doomed)
            busy++;
    }
    if (busy == 0)
        quiet_now(s);
}

static void
on_quiesce_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct folio_mconns *s = arg;

    (void)fd, (void)what;
    folio_log_notice("upgrading: %u metrics connection%s still without a "
                     "reply after %d ms: the exec closes %s",
                     s->n, s->n == 1 ? "" : "s", QUIESCE_MS,
                     s->n == 1 ? "it" : "them");
    quiet_now(s);
}

void
folio_mconn_quiesce(struct folio_master *m,
                    void (*quiet)(struct folio_master *))
{
    static const struct timeval deadline = {QUIESCE_MS / 1000,
                                            (QUIESCE_MS % 1000) * 1000};
    struct folio_mconns *s = m->mconns;

    if (s == NULL || s->lev == NULL) {
        quiet(m);
        return;
    }
    s->quiescing = 1;
    s->quiet = quiet;
    if (!s->resting) {
        s->resting = 1;
        evconnlistener_disable(s->lev);
    }
    evtimer_add(s->ev_quiesce, &deadline);
    on_look(-1, 0, s);
}

void
folio_mconn_resume(struct folio_master *m)
{
    struct folio_mconns *s = m->mconns;

    if (s == NULL || !s->quiescing)
        return;
    s->quiescing = 0;
    s->quiet = NULL;
    evtimer_del(s->ev_quiesce);
    listener_wake(s);
}

static void
log_refused(struct folio_mconns *s, uint64_t n)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = 0;
    folio_log_warnx("metrics accept: %s (RLIMIT_NOFILE %llu, %u metrics "
                    "connections open): %llu connection%s closed at accept "
                    "in the last second",
                    strerror(s->refused_err), (unsigned long long)rl.rlim_cur,
                    s->n, (unsigned long long)n, n == 1 ? "" : "s");
}

static void
on_back(evutil_socket_t fd, short what, void *arg)
{
    struct folio_mconns *s = arg;
    uint64_t n;

    (void)fd, (void)what;
    if (s->spare == -1)
        s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if ((n = folio_log_rate_due(&s->refused_log, folio_mono_ms(),
                                REFUSED_LOG_MS)) > 0)
        log_refused(s, n);
    listener_wake(s);
}

/*
 * accept failed (evconnlistener's error callback; retriable errors never
 * come here).  Out of descriptors: the spare one takes the newest
 * connection off the queue to close it, rather than leave the listener
 * readable and the loop spinning; then the listener rests BACKOFF_MS.
 */
static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
    static const struct timeval back = {0, BACKOFF_MS * 1000};
    struct folio_mconns *s = listener_set;
    int err = errno, fd;
    uint64_t n;

    (void)arg; /* evhttp's */
    if (s == NULL || s->lev != lev)
        return;
    if ((err == EMFILE || err == ENFILE) && s->spare != -1) {
        close(s->spare);
        if ((fd = accept4(evconnlistener_get_fd(lev), NULL, NULL,
                          SOCK_CLOEXEC)) != -1)
            close(fd);
        s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    s->closed[CLOSED_FDS]++;
    s->refused_err = err;
    if ((n = folio_log_rate_hit(&s->refused_log, folio_mono_ms(),
                                REFUSED_LOG_MS)) > 0)
        log_refused(s, n);
    s->resting = 1;
    evconnlistener_disable(lev);
    evtimer_add(s->ev_back, &back);
}

int
folio_mconn_start(struct folio_master *m, struct evhttp_bound_socket *bound)
{
    struct folio_mconns *s;
    struct timeval tv;

    if ((s = folio_calloc(1, sizeof(*s))) == NULL)
        return -1;
    s->m = m;
    s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    s->lev = evhttp_bound_socket_get_listener(bound);
    m->mconns = s;
    if ((s->ev_adopt = event_new(m->base, -1, 0, on_adopt, s)) == NULL ||
        (s->ev_back = evtimer_new(m->base, on_back, s)) == NULL ||
        (s->ev_look = event_new(m->base, -1, 0, on_look, s)) == NULL ||
        (s->ev_quiesce = evtimer_new(m->base, on_quiesce_deadline, s)) ==
            NULL)
        return -1; /* folio_metrics_stop frees s */
    listener_set = s;
    evconnlistener_set_error_cb(s->lev, on_accept_error);
    evhttp_set_bevcb(m->metrics, on_new_conn, s);
    tv = idle_tv(m); /* of connections not followed (out of memory) */
    evhttp_set_timeout_tv(m->metrics, &tv);
    return 0;
}

void
folio_mconn_stop(struct folio_master *m)
{
    struct folio_mconns *s = m->mconns;
    uint64_t n;

    listener_set = NULL;
    if (s != NULL) {
        s->lev = NULL; /* evhttp_free frees it before the connections */
        s->quiet = NULL;
    }
    if (m->metrics != NULL)
        evhttp_free(m->metrics); /* the socket, the connections: on_close */
    m->metrics = NULL;
    if (s == NULL)
        return;
    while (s->head != NULL) /* the ones not adopted yet */
        unlink_conn(s->head);
    if ((n = folio_log_rate_due(&s->refused_log, UINT64_MAX, 0)) > 0)
        log_refused(s, n);
    if (s->ev_adopt != NULL)
        event_free(s->ev_adopt);
    if (s->ev_back != NULL)
        event_free(s->ev_back);
    if (s->ev_look != NULL)
        event_free(s->ev_look);
    if (s->ev_quiesce != NULL)
        event_free(s->ev_quiesce);
    if (s->spare != -1)
        close(s->spare);
    folio_free(s);
    m->mconns = NULL;
}

void
folio_mconn_render(struct folio_master *m, struct evbuffer *b)
{
    struct folio_mconns *s = m->mconns;
    unsigned k;

    if (s == NULL)
        return;
    evbuffer_add_printf(b,
                        "# HELP folio_metrics_http_connections HTTP "
                        "connections the metrics listener holds.\n"
                        "# TYPE folio_metrics_http_connections gauge\n"
                        "folio_metrics_http_connections %u\n"
                        "# HELP folio_metrics_http_connections_max Its "
                        "limit now: metrics_max_connections, within the "
                        "descriptors the master keeps for itself.\n"
                        "# TYPE folio_metrics_http_connections_max gauge\n"
                        "folio_metrics_http_connections_max %u\n"
                        "# HELP folio_metrics_http_closed_total Metrics "
                        "connections closed by the master, by reason.\n"
                        "# TYPE folio_metrics_http_closed_total counter\n",
                        s->n, cap_of(s));
    for (k = 0; k < CLOSED_N; k++)
        evbuffer_add_printf(b,
                            "folio_metrics_http_closed_total{reason=\"%s\"} "
                            "%llu\n",
                            closed_names[k], (unsigned long long)s->closed[k]);
}
