/*
 * accept.c - new connections: every worker watches the listening sockets
 * it inherited, takes connections off them in balance with the others
 * (below), and, when the process runs out of descriptors (EMFILE), uses
 * its spare ones so that a client is told at once rather than left in the
 * listen queue, and an operator's admin connection is still served.
 * Called by worker.c (set-up, the listeners' callback, the tick); hands
 * each connection to conn.c (folio_conn_open).
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include "shm/stats.h"
#include "src/log.h"
#include "worker/accept.h"
#include "worker/conn.h"
#include "worker/face.h"
#include "worker/worker_int.h"

#define ACCEPTS_PER_EVENT 16
#define ACCEPT_DEFER_MS 1    /* a loaded worker leaves others new connections */
#define REFUSED_LOG_MS 10000 /* one line per interval: out of descriptors */
#define OTHER_FDS 64         /* listeners, channel, stores, log... */

static void on_accept_back(evutil_socket_t fd, short what, void *arg);

/* Open spare descriptors again, up to FOLIO_SPARE_FDS, as some are free. */
static void
spare_refill(struct folio_worker *w)
{
    int fd;

    while (w->nspare < FOLIO_SPARE_FDS &&
           (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) != -1)
        w->spare[w->nspare++] = fd;
}

void
folio_accept_setup(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_connections + cfg->admin_max_connections +
                  2 * FOLIO_CONN_RESERVE + FOLIO_SPARE_FDS + OTHER_FDS;

    /* As Redis does for maxclients: raise the soft limit, up to the hard. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want
                          ? rl.rlim_max
                          : want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < want)
            folio_log_warnx("max_connections %u needs about %llu file "
                            "descriptors but RLIMIT_NOFILE is %llu: "
                            "connections over it will be closed at accept "
                            "(raise the limit: LimitNOFILE=, ulimit -n)",
                            cfg->max_connections, (unsigned long long)want,
                            (unsigned long long)rl.rlim_cur);
    }
    spare_refill(w);
    if ((w->ev_accept = evtimer_new(w->base, on_accept_back, w)) == NULL)
        folio_fatalx("cannot set up the worker's accept timer");
}

/* n connections closed at accept, err the reason: one line. */
static void
log_refused(uint64_t n, int err)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = 0;
    folio_log_warnx("accept4: %s (RLIMIT_NOFILE %llu): %llu connection%s "
                    "closed at accept in the last %d s",
                    strerror(err), (unsigned long long)rl.rlim_cur,
                    (unsigned long long)n, n == 1 ? "" : "s",
                    REFUSED_LOG_MS / 1000);
}

/* Closed at accept for want of descriptors: told once per interval. */
static void
refused(struct folio_worker *w, int err)
{
    uint64_t n;

    folio_stat_add(&w->slot->ws_conns_rejected, 1);
    w->refused_err = err;
    if ((n = folio_log_rate_hit(&w->refused_log, w->now_ms, REFUSED_LOG_MS)) >
        0)
        log_refused(n, err);
}

/*
 * Accepted when no descriptor is left: answer its first request with
 * error 8 if it is already there, then close, so that the client knows at
 * once rather than waiting in the listen queue.
 */
static void
refuse(struct folio_worker *w, int fd, unsigned flags, int err)
{
    char buf[512], out[384];
    ssize_t n;
    size_t len;

    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0 &&
        (len = folio_face_refusal(flags, buf, (size_t)n,
                                  "out of file descriptors: try again later",
                                  out, sizeof(out))) > 0)
        (void)send(fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    refused(w, err);
}

/*
 * accept4 failed with EMFILE or ENFILE on l (it takes a descriptor before
 * it looks at the queue): use a spare descriptor to accept anyway.  An
 * admin connection is served (while two spares are left), any other
 * closed at once.  Returns 0 if one was taken off the queue, 1 if the
 * queue is empty, -1 if there is no spare (errno as accept4 left it).
 */
static int
accept_spare(struct folio_worker *w, struct folio_lsn *l)
{
    int err = errno, cfd, again;

    if (w->nspare == 0) {
        errno = err;
        return -1;
    }
    close(w->spare[--w->nspare]);
    cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd == -1) {
        again = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                errno == ECONNABORTED;
        spare_refill(w);
        errno = err;
        return again ? 1 : -1;
    }
    if ((l->flags & CONN_ADMIN) && w->nspare >= 1) {
        folio_conn_open(w, cfd, l->flags & ~CONN_TCP, NULL, 0);
        return 0; /* it keeps the spare: refilled as descriptors free up */
    }
    refuse(w, cfd, l->flags, err);
    spare_refill(w);
    return 0;
}

/*
 * Accepting in balance.  Every worker watches the one listening socket and
 * every one is woken by a new connection; the first awake takes it, and up
 * to ACCEPTS_PER_EVENT more, so a burst of connects landed 17/34, 42/9 on
 * two workers and the busier one's queue made the tail.  A worker holding
 * more connections than the least loaded other worker that accepts (by
 * one, and an eighth of that one's count) leaves new connections to it:
 * like nginx's ngx_accept_disabled, against the peers' counts in the
 * stats region rather than a fraction of worker_connections.  It stops
 * watching its public listeners for ACCEPT_DEFER_MS, then takes one
 * connection whatever the balance, so a stalled peer delays accepts by
 * that much and never stops them.  SO_REUSEPORT would balance by a hash,
 * no better for 50 connections, and drops what waits in a closed
 * socket's queue at every recycle and reload; EPOLLEXCLUSIVE wakes the
 * same worker again and again.
 */
static int
accept_ahead(const struct folio_worker *w)
{
    const struct folio_worker_slot *s;
    uint32_t least = UINT32_MAX, n;
    unsigned i, nslots;

    if (w->args->stats == NULL)
        return 0;
    nslots = folio_stats_nslots(w->args->stats);
    for (i = 0; i < nslots; i++) {
        s = folio_stats_slot(w->args->stats, i);
        if (s == w->slot ||
            atomic_load_explicit(&s->ws_state, memory_order_relaxed) !=
                FOLIO_WS_READY ||
            atomic_load_explicit(&s->ws_mstate, memory_order_relaxed) ==
                FOLIO_WS_HUNG)
            continue;
        n = (uint32_t)folio_stat_get(&s->ws_conns_open);
        if (n < least)
            least = n;
    }
    return least != UINT32_MAX && w->nconns > least + 1 + least / 8;
}

/* Leave the public listeners to the others for ACCEPT_DEFER_MS. */
static void
accept_defer(struct folio_worker *w)
{
    static const struct timeval tv = {0, ACCEPT_DEFER_MS * 1000};
    int i;

    for (i = 0; i < w->nlsn; i++)
        if (!(w->lsn[i].flags & CONN_ADMIN) && w->lsn[i].ev != NULL)
            event_del(w->lsn[i].ev);
    evtimer_add(w->ev_accept, &tv);
}

static void
on_accept_back(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    int i;

    if (w->stopping || w->retiring || w->accept_paused)
        return; /* no accepting, or the tick resumes it */
    w->accept_force = 1;
    for (i = 0; i < w->nlsn; i++)
        if (w->lsn[i].ev != NULL)
            event_add(w->lsn[i].ev, NULL);
}

void
folio_accept_cb(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lsn *l = arg;
    struct folio_worker *w = l->w;
    int cfd, i, r, one = 1, forced;

    /* The descriptors closed since, first: the spares need them. */
    if (w->nspare < FOLIO_SPARE_FDS)
        spare_refill(w);
    for (i = 0; i < ACCEPTS_PER_EVENT; i++) {
        forced = 0;
        if (!(l->flags & CONN_ADMIN) && !evtimer_pending(w->ev_accept, NULL)) {
            if (w->accept_force) {
                w->accept_force = 0; /* this one, whatever the balance */
                forced = accept_ahead(w);
            } else if (accept_ahead(w)) {
                accept_defer(w);
                return;
            }
        }
        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd == -1) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                if ((r = accept_spare(w, l)) == 0)
                    continue;
                if (r > 0)
                    return; /* none waiting */
            }
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                /* Not even a spare: stop accepting for a tick, not spin. */
                refused(w, errno);
                event_del(l->ev);
                w->accept_paused = 1;
            }
            return;
        }
        if (forced) /* counted: the balance tests read it */
            folio_stat_add(&w->slot->ws_accepts_forced, 1);
        if (l->flags & CONN_TCP)
            setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        folio_conn_open(w, cfd, l->flags & ~CONN_TCP, NULL, 0);
    }
}

void
folio_accept_tick(struct folio_worker *w)
{
    uint64_t n;
    int i;

    if (w->accept_paused && !w->stopping && !w->retiring) {
        for (i = 0; i < w->nlsn; i++)
            event_add(w->lsn[i].ev, NULL);
        w->accept_paused = 0;
    }
    if ((n = folio_log_rate_due(&w->refused_log, w->now_ms, REFUSED_LOG_MS)) >
        0)
        log_refused(n, w->refused_err);
    if (w->nspare < FOLIO_SPARE_FDS)
        spare_refill(w);
}

void
folio_accept_fini(struct folio_worker *w)
{
    while (w->nspare > 0)
        close(w->spare[--w->nspare]);
    /* What the last interval held back, before the worker goes. */
    if (w->refused_log.count > 0)
        log_refused(w->refused_log.count, w->refused_err);
    w->refused_log.count = 0;
    if (w->ev_accept != NULL) {
        event_free(w->ev_accept);
        w->ev_accept = NULL;
    }
}
