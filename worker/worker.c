/*
 * worker.c - a worker process: set-up after fork, the event loop, signals,
 * the channel to the master, housekeeping, and the two ways out: stop
 * (TERM: answer what is in flight, close, exit) and retirement (reload or
 * recycling: hand every connection to the master for a newer worker, with
 * the bytes already read from it, then exit).
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/log.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define TICK_MS 100

struct folio_worker *folio_worker_self;

uint64_t
folio_now_ms(void)
{
    return folio_mono_ms();
}

uint64_t
folio_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void
set_state(struct folio_worker *w, enum folio_worker_state st)
{
    atomic_store_explicit(&w->slot->ws_state, st, memory_order_relaxed);
}

/* CPU, memory: what a profiler's window would show. */
static void
refresh_usage(struct folio_worker *w)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        folio_stat_set(&w->slot->ws_cpu_user_us,
                       (uint64_t)ru.ru_utime.tv_sec * 1000000 +
                           (uint64_t)ru.ru_utime.tv_usec);
        folio_stat_set(&w->slot->ws_cpu_sys_us,
                       (uint64_t)ru.ru_stime.tv_sec * 1000000 +
                           (uint64_t)ru.ru_stime.tv_usec);
        folio_stat_set(&w->slot->ws_maxrss_kb, (uint64_t)ru.ru_maxrss);
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    {
        /* Large blocks are mmap'd, not in the arenas: count both. */
        struct mallinfo2 mi = mallinfo2();

        folio_stat_set(&w->slot->ws_heap_inuse, mi.uordblks + mi.hblkhd);
    }
#endif
}

static void
stop_accepting(struct folio_worker *w)
{
    int i;

    for (i = 0; i < w->nlsn; i++) {
        if (w->lsn[i].ev != NULL) {
            event_free(w->lsn[i].ev);
            w->lsn[i].ev = NULL;
        }
        if (w->lsn[i].fd != -1) {
            close(w->lsn[i].fd);
            w->lsn[i].fd = -1;
        }
    }
    w->nlsn = 0;
}

void
folio_worker_conn_gone(struct folio_worker *w)
{
    if ((w->stopping || w->retiring) && w->nconns == 0)
        event_base_loopbreak(w->base);
}

/* Stop or retire: no new connections; settle the open ones. */
static void
begin_drain(struct folio_worker *w, int retire)
{
    struct folio_conn *c, *next;

    if (retire) {
        if (w->stopping || w->retiring)
            return;
        w->retiring = 1;
    } else {
        /* TERM during a retirement: close instead of handing over. */
        if (w->stopping)
            return;
        w->stopping = 1;
        w->retiring = 0;
    }
    set_state(w, retire ? FOLIO_WS_RETIRING : FOLIO_WS_STOPPING);
    w->deadline_ms = folio_now_ms() + w->cfg->shutdown_timeout_ms;
    stop_accepting(w);
    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        folio_conn_drain(c);
    }
    if (w->nconns == 0)
        event_base_loopbreak(w->base);
}

int
folio_worker_handoff(struct folio_worker *w, struct folio_conn *c)
{
    uint32_t flags = (c->flags & CONN_ADMIN) ? FOLIO_CHAN_F_ADMIN : 0;

    if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_HANDOFF, flags, 0,
                        c->in.b_data + c->in.b_off, folio_buf_pending(&c->in),
                        c->fd) != 0) {
        folio_log_warn("handing a connection over");
        return -1;
    }
    folio_stat_add(&w->slot->ws_conns_handed_off, 1);
    folio_conn_close(c);
    return 0;
}

void
folio_worker_count_request(struct folio_worker *w)
{
    if (++w->served == w->recycle_at && !w->recycle_sent) {
        w->recycle_sent = 1;
        folio_log_info("served %llu requests: asking to be replaced",
                       (unsigned long long)w->served);
        if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_RECYCLE, 0, 0, NULL,
                            0, -1) != 0)
            folio_log_warn("asking to be replaced");
    }
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    int i;

    w->now_ms = folio_now_ms();
    refresh_usage(w);
    if (w->accept_paused && !w->stopping && !w->retiring) {
        for (i = 0; i < w->nlsn; i++)
            event_add(w->lsn[i].ev, NULL);
        w->accept_paused = 0;
    }
    folio_conn_sweep(w);
    if ((w->stopping || w->retiring) && w->now_ms >= w->deadline_ms) {
        if (w->nconns > 0)
            folio_log_notice("drain deadline: closing %u connections",
                             w->nconns);
        event_base_loopbreak(w->base);
    }
}

static void
on_chan(evutil_socket_t fd, short what, void *arg)
{
    static char data[FOLIO_CHAN_MAX_DATA];
    struct folio_worker *w = arg;
    struct folio_chan_hdr h;
    int passfd, r, i;

    for (i = 0; i < 64; i++) {
        r = folio_chan_recv(fd, &h, data, sizeof(data), &passfd);
        if (r == FOLIO_EAGAIN)
            return;
        if (r == 0 || r == FOLIO_ESYS) {
            /* The master is gone: nobody will restart us, finish up. */
            event_del(w->ev_chan);
            if (!w->stopping) {
                folio_log_notice("master gone: stopping");
                begin_drain(w, 0);
            }
            return;
        }
        if (r < 0) {
            folio_log_warnx("malformed message from the master");
            continue;
        }
        switch (h.ch_type) {
        case FOLIO_CHAN_RETIRE:
            begin_drain(w, 1);
            break;
        case FOLIO_CHAN_ADOPT:
            if (passfd < 0)
                break;
            if (w->stopping || w->retiring) {
                close(passfd);
                break;
            }
            folio_conn_open(w, passfd,
                            (h.ch_flags & FOLIO_CHAN_F_ADMIN) ? CONN_ADMIN : 0,
                            data, h.ch_len);
            passfd = -1;
            break;
        default:
            folio_log_warnx("unexpected message %u from the master",
                            h.ch_type);
        }
        if (passfd >= 0)
            close(passfd);
    }
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct folio_worker *w = arg;

    switch (sig) {
    case SIGTERM:
    case SIGINT:
        begin_drain(w, 0);
        break;
    case SIGQUIT:
        w->stopping = 1;
        event_base_loopbreak(w->base);
        break;
    case SIGUSR1:
        folio_log_reopen();
        break;
    default:
        break;
    }
}

static void
reset_signals(void)
{
    struct sigaction sa;
    sigset_t all;
    int s;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (s = 1; s < NSIG; s++)
        sigaction(s, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
}

static void
worker_cleanup(struct folio_worker *w)
{
    unsigned i;
    int j;

    folio_conn_free_all(w);
    stop_accepting(w);
    for (i = folio_nservices; i-- > 0;)
        if (folio_services[i].fini != NULL)
            folio_services[i].fini(w);
    for (j = 0; j < (int)(sizeof(w->ev_sig) / sizeof(w->ev_sig[0])); j++)
        if (w->ev_sig[j] != NULL)
            event_free(w->ev_sig[j]);
    if (w->ev_chan != NULL)
        event_free(w->ev_chan);
    if (w->ev_tick != NULL)
        event_free(w->ev_tick);
    if (w->base != NULL)
        event_base_free(w->base);
    close(w->args->chan_fd);
}

static void
check_method_table(void)
{
    unsigned i;

    for (i = 1; i < folio_nmethods; i++)
        if (strcmp(folio_methods[i - 1].name, folio_methods[i].name) >= 0)
            folio_fatalx("method table not sorted at %s",
                         folio_methods[i].name);
}

void
folio_worker_main(const struct folio_worker_args *a)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGQUIT, SIGUSR1};
    static struct folio_worker worker;
    struct folio_worker *w = &worker;
    struct timeval tick = {0, TICK_MS * 1000};
    struct timeval sndto = {1, 0};
    unsigned i;
    int j, rc;

    folio_log_set_role('W', a->index);
    reset_signals();
    memset(w, 0, sizeof(*w));
    folio_worker_self = w;
    w->args = a;
    w->cfg = a->cfg;
    w->slot = a->slot;
    w->now_ms = folio_now_ms();
    folio_alloc_use(&w->slot->ws_alloc);
    folio_stat_set(&w->slot->ws_pid, (uint64_t)getpid());
    folio_stat_set(&w->slot->ws_start_ms, folio_unix_ms());
    check_method_table();
    if (a->cfg->max_requests_per_worker > 0) {
        /* Jitter of up to 10%, so workers do not all recycle at once. */
        uint64_t n = a->cfg->max_requests_per_worker;

        srandom((unsigned)getpid() ^ (unsigned)w->now_ms);
        w->recycle_at = n + (n >= 10 ? (uint64_t)random() % (n / 10) : 0);
    }
    /* Sends to the master block at most a second; receives never block. */
    setsockopt(a->chan_fd, SOL_SOCKET, SO_SNDTIMEO, &sndto, sizeof(sndto));

    if ((w->base = event_base_new()) == NULL)
        folio_fatalx("event_base_new failed");
    for (j = 0; j < a->nlisteners; j++) {
        struct folio_lsn *l = &w->lsn[w->nlsn];

        l->w = w;
        l->fd = a->listeners[j].fd;
        l->flags = (a->listeners[j].admin ? CONN_ADMIN : 0) |
                   (strncmp(a->listeners[j].name, "unix:", 5) != 0 ? CONN_TCP
                                                                   : 0);
        l->ev = event_new(w->base, l->fd, EV_READ | EV_PERSIST,
                          folio_conn_accept_cb, l);
        if (l->ev == NULL || event_add(l->ev, NULL) != 0)
            folio_fatalx("cannot watch listener %s", a->listeners[j].name);
        w->nlsn++;
    }
    for (j = 0; j < (int)(sizeof(sigs) / sizeof(sigs[0])); j++) {
        w->ev_sig[j] = evsignal_new(w->base, sigs[j], on_signal, w);
        if (w->ev_sig[j] == NULL || event_add(w->ev_sig[j], NULL) != 0)
            folio_fatalx("cannot watch signal %d", sigs[j]);
    }
    w->ev_chan = event_new(w->base, a->chan_fd, EV_READ | EV_PERSIST, on_chan,
                           w);
    w->ev_tick = event_new(w->base, -1, EV_PERSIST, on_tick, w);
    if (w->ev_chan == NULL || event_add(w->ev_chan, NULL) != 0 ||
        w->ev_tick == NULL || event_add(w->ev_tick, &tick) != 0)
        folio_fatalx("cannot set up the worker's events");
    for (i = 0; i < folio_nservices; i++) {
        if (folio_services[i].init == NULL)
            continue;
        if ((rc = folio_services[i].init(w)) != 0) {
            folio_log_crit("service %s failed to start: %s",
                           folio_services[i].name, folio_strerror(rc));
            worker_cleanup(w);
            exit(FOLIO_EXIT_FATAL);
        }
    }
    refresh_usage(w);
    set_state(w, FOLIO_WS_READY);
    if (folio_chan_send(a->chan_fd, FOLIO_CHAN_READY, 0, 0, NULL, 0, -1) != 0)
        folio_log_warn("telling the master we are ready");

    rc = event_base_dispatch(w->base);
    if (rc < 0)
        folio_log_errorx("event loop failed");
    if (w->retiring)
        folio_log_info("retired");
    worker_cleanup(w);
    exit(FOLIO_EXIT_OK);
}
