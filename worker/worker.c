/*
 * worker.c - a worker process, and the one place in it that decides: its
 * loop (signals, the channel to the master, housekeeping) and the two ways
 * out: stop (TERM: answer what is in flight, close, exit) and retirement
 * (reload or recycling: hand every connection to the master for a newer
 * worker, with the bytes already read from it, then exit).  It calls
 * accept.c (the listeners' callback, their tick) and conn.c (the
 * connections' drain and sweep); conn.c and dispatch.c report what it
 * must act on by activating ev_settle and ev_recycle.
 *
 * Two raw signal handlers, where the loop would be too late: SIGABRT
 * (sent by the master's watchdog, or an abort()) writes a backtrace to the
 * log, and the parent-death signal shuts the listening sockets down the
 * moment the master dies, so that a new foliod can bind at once.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>

#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/log.h"
#include "src/prof/prof.h"
#include "src/title.h"
#include "worker/accept.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define TICK_MS 100
#define BACKTRACE_DEPTH 64

/*
 * For the raw handlers (signal context): the listening sockets to shut
 * down when the master dies (death_nfds first set to 0 before any of them
 * is closed), the master's pid, and the line that heads a backtrace.
 */
static int death_fds[FOLIO_MAX_SOCKETS];
static volatile sig_atomic_t death_nfds;
static pid_t master_pid;
static char abort_head[160];
static size_t abort_head_len;

/* Signal context: the parent-death signal. */
static void
on_master_death(int sig)
{
    int saved = errno, i, n = death_nfds;

    /* A stray signal while the master lives changes nothing. */
    if (getppid() == master_pid)
        return;
    /*
     * shutdown(2), not close(2): the descriptors stay valid (the loop
     * still watches them), but the sockets stop listening, so their
     * ports are free for the next foliod (SO_REUSEADDR binds beside a
     * socket that no longer listens).  They are shared with the other
     * workers: one of us is enough, the others do no harm.
     */
    for (i = 0; i < n; i++)
        shutdown(death_fds[i], SHUT_RDWR);
    errno = saved;
}

/* Signal context: SIGABRT (the watchdog, or an abort()). */
static void
on_abort(int sig)
{
    void *frames[BACKTRACE_DEPTH];
    int fd = folio_log_fd(), n;

    n = backtrace(frames, BACKTRACE_DEPTH);
    if (write(fd, abort_head, abort_head_len) < 0) {
        /* nothing to do: the core, if enabled, still follows */
    }
    backtrace_symbols_fd(frames, n, fd);
    /* SA_RESETHAND made the action the default: the core dump. */
    raise(sig);
}

/* Who to shut down if the master dies: the listeners it shares with us. */
static void
watch_listeners(const struct folio_worker *w)
{
    int i, n = 0;

    death_nfds = 0;
    for (i = 0; i < w->nlsn; i++)
        if (!w->lsn[i].passed && w->lsn[i].fd != -1)
            death_fds[n++] = w->lsn[i].fd;
    death_nfds = n;
}

void
folio_worker_preload(void)
{
    void *warm[1];

    /* The first backtrace() loads the unwinder: not in signal context. */
    backtrace(warm, 1);
}

static void
install_raw_handlers(const struct folio_worker_args *a)
{
    struct sigaction sa;
    int n;

    folio_worker_preload(); /* at once if the master did */
    n = snprintf(abort_head, sizeof(abort_head),
                 "W%d %ld SIGABRT: backtrace of worker %d (generation "
                 "%llu), innermost call first:\n",
                 a->index, (long)getpid(), a->index,
                 (unsigned long long)a->generation);
    abort_head_len = n > 0 && (size_t)n < sizeof(abort_head) ? (size_t)n : 0;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_abort;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGABRT, &sa, NULL);

    master_pid = getppid();
    sa.sa_handler = on_master_death;
    sa.sa_flags = SA_RESTART;
    sigaction(FOLIO_WORKER_DEATH_SIG, &sa, NULL);
    if (prctl(PR_SET_PDEATHSIG, FOLIO_WORKER_DEATH_SIG, 0, 0, 0) == -1)
        folio_log_warn("prctl(PR_SET_PDEATHSIG)");
}

/* max_requests_per_worker plus up to 10%, from a real random source. */
static uint64_t
recycle_point(uint64_t n)
{
    uint64_t r;

    if (n < 10)
        return n;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        r = folio_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&r;
    return n + r % (n / 10);
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

/*
 * No more connections from the listening sockets; the admin socket stays
 * when keep_admin is set (a stop: the operator may still watch it).
 */
static void
stop_accepting(struct folio_worker *w, int keep_admin)
{
    int i, n = 0;

    death_nfds = 0; /* before any descriptor closes: see on_master_death */
    for (i = 0; i < w->nlsn; i++) {
        if (keep_admin && (w->lsn[i].flags & CONN_ADMIN)) {
            w->lsn[n++] = w->lsn[i];
            continue;
        }
        if (w->lsn[i].ev != NULL) {
            event_free(w->lsn[i].ev);
            w->lsn[i].ev = NULL;
        }
        if (w->lsn[i].fd != -1) {
            close(w->lsn[i].fd);
            w->lsn[i].fd = -1;
        }
    }
    w->nlsn = n;
    watch_listeners(w);
}

/*
 * Whether a drain is over: no connection left, but for idle admin ones
 * while stopping (the admin socket stays open through a stop).
 */
static int
drained(const struct folio_worker *w)
{
    const struct folio_conn *c;

    for (c = w->conns; c != NULL; c = c->next)
        if (w->retiring || !(c->flags & CONN_ADMIN) ||
            folio_conn_out_pending(c) != 0 ||
            folio_buf_pending(&c->in) != 0 || c->msg_start_ms != 0)
            return 0;
    return 1;
}

/* A connection closed while draining (conn.c): maybe the last one. */
static void
on_settle(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;

    if ((w->stopping || w->retiring) && drained(w))
        event_base_loopbreak(w->base);
}

static void
set_title(const struct folio_worker *w)
{
    const char *what = w->retiring   ? "retiring worker"
                       : w->stopping ? "stopping worker"
                                     : "worker";

    folio_title_set("foliod: %s %d (generation %llu)", what, w->args->index,
                    (unsigned long long)w->args->generation);
}

/*
 * Stop or retire: no new connections; settle the open ones.  A stop
 * keeps the admin socket unless the master is gone.
 */
static void
begin_drain(struct folio_worker *w, int retire, int master_gone)
{
    struct folio_conn *c, *next;

    if (retire) {
        if (w->stopping || w->retiring)
            return;
        w->retiring = 1;
    } else {
        /* TERM during a retirement: close instead of handing over. */
        if (w->stopping) {
            if (master_gone)
                stop_accepting(w, 0);
            return;
        }
        w->stopping = 1;
        w->retiring = 0;
    }
    set_state(w, retire ? FOLIO_WS_RETIRING : FOLIO_WS_STOPPING);
    set_title(w);
    w->deadline_ms = folio_mono_ms() + w->cfg->shutdown_timeout_ms;
    stop_accepting(w, !retire && !master_gone);
    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        folio_conn_drain(c);
    }
    if (drained(w))
        event_base_loopbreak(w->base);
}

/* The worker served max_requests_per_worker (dispatch.c): ask once. */
static void
on_recycle(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;

    if (w->recycle_sent || w->stopping || w->retiring)
        return;
    w->recycle_sent = 1;
    folio_log_info("served %llu requests: asking to be replaced",
                   (unsigned long long)w->served);
    if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_RECYCLE, 0, 0, NULL, 0,
                        -1) != 0)
        folio_log_warn("asking to be replaced");
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    uint64_t expired;

    if (read(fd, &expired, sizeof(expired)) < 0 && errno != EAGAIN)
        folio_log_warn("reading the tick's timer");
    w->now_ms = folio_mono_ms();
    /* The heartbeat: this loop still turns. */
    folio_stat_set(&w->slot->ws_beat_ms, w->now_ms);
    refresh_usage(w);
    folio_accept_tick(w);
    folio_conn_sweep(w);
    if ((w->stopping || w->retiring) && w->now_ms >= w->deadline_ms) {
        if (w->nconns > 0)
            folio_log_notice("drain deadline: closing %u connections",
                             w->nconns);
        event_base_loopbreak(w->base);
    }
}

/* The connection flags of a connection the master hands over. */
static unsigned
conn_flags_of(uint32_t ch_flags)
{
    return ((ch_flags & FOLIO_CHAN_F_ADMIN) ? CONN_ADMIN : 0) |
           ((ch_flags & FOLIO_CHAN_F_HTTP) ? CONN_HTTP : 0);
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
            folio_log_notice("master gone: stopping");
            begin_drain(w, 0, 1);
            return;
        }
        if (r < 0) {
            folio_log_warnx("malformed message from the master");
            continue;
        }
        switch (h.ch_type) {
        case FOLIO_CHAN_RETIRE:
            begin_drain(w, 1, 0);
            break;
        case FOLIO_CHAN_PROFILE:
            folio_worker_profile_msg(w, &h, data);
            break;
        case FOLIO_CHAN_ADOPT:
            if (passfd < 0)
                break;
            if (w->stopping || w->retiring) {
                close(passfd);
                break;
            }
            folio_conn_open(w, passfd, conn_flags_of(h.ch_flags), data,
                            h.ch_len);
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
        begin_drain(w, 0, 0);
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

    folio_worker_profile_fini(w);
    folio_conn_free_all(w);
    folio_accept_fini(w);
    stop_accepting(w, 0);
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
    if (w->tick_fd >= 0)
        close(w->tick_fd);
    if (w->ev_settle != NULL)
        event_free(w->ev_settle);
    if (w->ev_recycle != NULL)
        event_free(w->ev_recycle);
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
    struct itimerspec tick = {{0, TICK_MS * 1000000}, {0, TICK_MS * 1000000}};
    struct timeval sndto = {1, 0};
    struct event_config *ecfg;
    unsigned i;
    int j, rc;

    /* Nothing the master sampled is this worker's (its allocs, its heap). */
    folio_prof_after_fork();
    folio_log_set_role('W', a->index);
    reset_signals();
    memset(w, 0, sizeof(*w));
    w->args = a;
    w->cfg = a->cfg;
    w->slot = a->slot;
    w->tick_fd = -1;
    w->now_ms = folio_mono_ms();
    folio_stat_set(&w->slot->ws_beat_ms, w->now_ms);
    folio_alloc_use(&w->slot->ws_alloc);
    folio_stat_set(&w->slot->ws_pid, (uint64_t)getpid());
    folio_stat_set(&w->slot->ws_start_ms, folio_unix_ms());
    set_title(w);
    install_raw_handlers(a);
    check_method_table();
    folio_worker_profile_init(w);
    /*
     * Jitter of up to 10%, so workers do not all recycle at once: seeded
     * from getrandom(2), as pid and time collide across workers.
     */
    if (a->cfg->max_requests_per_worker > 0)
        w->recycle_at = recycle_point(a->cfg->max_requests_per_worker);
    /* Sends to the master block at most a second; receives never block. */
    setsockopt(a->chan_fd, SOL_SOCKET, SO_SNDTIMEO, &sndto, sizeof(sndto));

    /*
     * No time cache: libevent would read its clock after every poll, for
     * timers that are nearly never there (the tick is a timerfd, below;
     * the others are armed for a moment); it reads it when one is.
     */
    if ((ecfg = event_config_new()) == NULL ||
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_NO_CACHE_TIME) != 0 ||
        (w->base = event_base_new_with_config(ecfg)) == NULL)
        folio_fatalx("event_base_new failed");
    event_config_free(ecfg);
    folio_conn_setup(w);
    folio_accept_setup(w);
    for (j = 0; j < a->nlisteners; j++) {
        struct folio_lsn *l = &w->lsn[w->nlsn];

        l->w = w;
        l->fd = a->listeners[j].fd;
        l->passed = a->listeners[j].passed;
        l->flags = (a->listeners[j].admin ? CONN_ADMIN : 0) |
                   (a->listeners[j].http ? CONN_HTTP : 0) |
                   (strncmp(a->listeners[j].name, "unix:", 5) != 0 ? CONN_TCP
                                                                   : 0);
        l->ev =
            event_new(w->base, l->fd, EV_READ | EV_PERSIST, folio_accept_cb, l);
        if (l->ev == NULL || event_add(l->ev, NULL) != 0)
            folio_fatalx("cannot watch listener %s", a->listeners[j].name);
        w->nlsn++;
    }
    for (j = 0; j < (int)(sizeof(sigs) / sizeof(sigs[0])); j++) {
        w->ev_sig[j] = evsignal_new(w->base, sigs[j], on_signal, w);
        if (w->ev_sig[j] == NULL || event_add(w->ev_sig[j], NULL) != 0)
            folio_fatalx("cannot watch signal %d", sigs[j]);
    }
    watch_listeners(w);
    /* The master may have died before it could be watched. */
    if (getppid() != master_pid)
        on_master_death(FOLIO_WORKER_DEATH_SIG);
    w->ev_chan = event_new(w->base, a->chan_fd, EV_READ | EV_PERSIST, on_chan,
                           w);
    /* The tick, a descriptor: no timer in libevent's heap (above). */
    if ((w->tick_fd =
             timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0 ||
        timerfd_settime(w->tick_fd, 0, &tick, NULL) != 0)
        folio_fatal("cannot make the worker's tick");
    w->ev_tick =
        event_new(w->base, w->tick_fd, EV_READ | EV_PERSIST, on_tick, w);
    w->ev_settle = event_new(w->base, -1, 0, on_settle, w);
    w->ev_recycle = event_new(w->base, -1, 0, on_recycle, w);
    if (w->ev_chan == NULL || event_add(w->ev_chan, NULL) != 0 ||
        w->ev_tick == NULL || event_add(w->ev_tick, NULL) != 0 ||
        w->ev_settle == NULL || w->ev_recycle == NULL)
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

    folio_loop_watch(w->slot, &w->now_ms, w->cfg->busy_poll_us,
                     w->cfg->poll_yield);
    rc = event_base_dispatch(w->base);
    folio_loop_watch(NULL, NULL, 0, 0);
    folio_conn_turn_end(w); /* a loopbreak may have cut the last turn short */
    if (rc < 0)
        folio_log_errorx("event loop failed");
    if (w->retiring)
        folio_log_info("retired");
    worker_cleanup(w);
    exit(FOLIO_EXIT_OK);
}
