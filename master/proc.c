/*
 * proc.c - worker processes, the mechanism: fork, the channel to each
 * worker (ready, connection hand-over, recycling), signals, reaping.
 * What to start, stop or kill is decided in decide.c; what a worker says
 * on its channel is posted to the master's ring (events.c), except
 * connections handed back by a retiring worker, passed straight on to a
 * worker that accepts (folio_dec_adopter, round robin), and profiles
 * (profile.c).  Shaped after Postfix's master_spawn.c and nginx's
 * ngx_process.c.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/chan.h"
#include "src/err.h"
#include "src/log.h"

static void on_chan(evutil_socket_t fd, short what, void *arg);

static pid_t
pid_of(const struct folio_master *m, int slot)
{
    return (pid_t)m->dec.procs[slot].pid;
}

/* What slot's worker said (READY, RECYCLE), for decide.c. */
static void
post(struct folio_master *m, int type, int slot)
{
    struct folio_dec_ev ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.slot = slot;
    ev.pid = pid_of(m, slot); /* the step ignores it if the slot has another */
    folio_ring_post(&m->ring, &ev);
}

void
folio_proc_signal_all(struct folio_master *m, int sig)
{
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (folio_dec_live(&m->dec, i) && pid_of(m, i) > 0)
            kill(pid_of(m, i), sig);
}

void
folio_proc_kill(struct folio_master *m, int slot, int sig)
{
    pid_t pid = pid_of(m, slot);

    if (pid <= 0)
        return;
    if (kill(pid, sig) == -1 && errno != ESRCH)
        folio_log_warn("kill(%ld, %d)", (long)pid, sig);
    /* A stopped process takes the signal only once it runs again. */
    if (sig == SIGABRT)
        kill(pid, SIGCONT);
}

void
folio_proc_retire(struct folio_master *m, int slot)
{
    struct folio_proc *p = &m->procs[slot];

    if (p->chan == -1 ||
        folio_chan_send(p->chan, FOLIO_CHAN_RETIRE, 0, 0, NULL, 0, -1) != 0)
        folio_proc_kill(m, slot, SIGTERM); /* deaf: it just stops */
}

/* In the child: drop what belongs to the master and to other workers. */
static void
child_close_fds(struct folio_master *m, const struct folio_gen *g)
{
    const struct folio_gen *gens[2] = {m->cur, m->next};
    int i, j;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].chan != -1)
            close(m->procs[i].chan);
    for (j = 0; j < 2; j++) {
        if (gens[j] == NULL || gens[j] == g)
            continue;
        for (i = 0; i < gens[j]->nlisteners; i++)
            if (gens[j]->listeners[i].fd != -1)
                close(gens[j]->listeners[i].fd);
    }
    folio_log_mirror(-1);
    if (m->ready_pipe != -1) {
        /*
         * Forked before a detaching master was ready: let go of the
         * terminal's stderr as the master will (the log is a file), or a
         * caller reading it, `foliod 2>&1 | ...', would never see EOF.
         */
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

        if (devnull != -1 && folio_log_fd() != STDERR_FILENO)
            dup2(devnull, STDERR_FILENO);
        if (devnull != -1)
            close(devnull);
        close(m->ready_pipe);
    }
    if (m->ready_fd != -1)
        close(m->ready_fd);
    if (m->metrics_fd != -1)
        close(m->metrics_fd);
    if (folio_stats_fd(m->stats) != -1)
        close(folio_stats_fd(m->stats)); /* the mapping stays */
    folio_activate_close();
    /*
     * Give back the master's signal events, so the worker's own event base
     * may take the signals.  This touches no kernel state shared with the
     * master (libevent's evsig_del only restores handlers).
     */
    for (i = 0; i < (int)(sizeof(m->ev_sig) / sizeof(m->ev_sig[0])); i++) {
        if (m->ev_sig[i] != NULL) {
            event_free(m->ev_sig[i]);
            m->ev_sig[i] = NULL;
        }
    }
}

int
folio_proc_watch(struct folio_master *m, int slot)
{
    struct folio_proc *p = &m->procs[slot];

    if (p->ev_chan != NULL)
        event_free(p->ev_chan);
    p->ev_chan = event_new(m->base, p->chan, EV_READ | EV_PERSIST, on_chan, p);
    if (p->ev_chan == NULL || event_add(p->ev_chan, NULL) != 0) {
        folio_log_errorx("cannot watch the channel of slot %d", slot);
        return -1;
    }
    return 0;
}

int
folio_proc_spawn(struct folio_master *m, struct folio_gen *g, int slot,
                 int index, pid_t *out)
{
    struct folio_worker_args args;
    struct folio_worker_slot *s;
    struct folio_proc *p = &m->procs[slot];
    sigset_t all, old;
    int fds[2];
    pid_t pid;

    if (folio_chan_pair(fds) != 0) {
        folio_log_error("socketpair for worker %d", index);
        return FOLIO_ESYS;
    }
    s = folio_stats_slot(m->stats, (unsigned)slot);
    memset(s, 0, sizeof(*s));
    p->seq = ++m->spawn_seq;
    p->reaped = 0;
    folio_stat_set(&s->ws_seq, p->seq);
    folio_stat_set(&s->ws_generation, g->id);
    atomic_store(&s->ws_index, (uint32_t)index);
    atomic_store(&s->ws_state, FOLIO_WS_STARTING);
    atomic_store(&s->ws_mstate, FOLIO_WS_STARTING);

    memset(&args, 0, sizeof(args));
    args.index = index;
    args.generation = g->id;
    args.cfg = &g->cfg;
    args.listeners = g->listeners;
    args.nlisteners = g->nlisteners;
    args.slot = s;
    args.stats = m->stats;
    args.chan_fd = fds[1];
    args.data = &g->data;

    /* No signal may reach the child before it resets its handlers. */
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_close_fds(m, g);
        folio_worker_main(&args);
        /* NOTREACHED */
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    if (pid == -1) {
        folio_log_error("fork for worker %d", index);
        close(fds[0]);
        memset(s, 0, sizeof(*s));
        return FOLIO_ESYS;
    }
    p->chan = fds[0];
    folio_stat_set(&s->ws_pid, (uint64_t)pid);
    folio_proc_watch(m, slot);
    folio_log_info("worker %d started (pid %ld, generation %llu)", index,
                   (long)pid, (unsigned long long)g->id);
    *out = pid;
    return 0;
}

/* A retiring worker handed a connection back: give it to a current one. */
static void
relay(struct folio_master *m, int from, const struct folio_chan_hdr *h,
      const void *data, int fd)
{
    int tries, to;

    for (tries = 0; tries < 4; tries++) {
        if ((to = folio_dec_adopter(&m->dec, from, m->adopter)) < 0)
            break;
        m->adopter = to;
        if (m->procs[to].chan == -1)
            continue;
        if (folio_chan_send(m->procs[to].chan, FOLIO_CHAN_ADOPT, h->ch_flags,
                            0, data, h->ch_len, fd) == 0) {
            close(fd);
            return;
        }
        folio_log_warn("handing a connection to the worker in slot %d", to);
    }
    folio_log_warnx("no worker to take over a connection: closed");
    close(fd);
}

/*
 * Read up to `max` messages from slot's channel.  Returns 1 if more may
 * be waiting, 0 when the channel is empty or closed.
 */
static int
chan_read(struct folio_master *m, int slot, int max)
{
    static char data[FOLIO_CHAN_MAX_DATA];
    struct folio_proc *p = &m->procs[slot];
    struct folio_chan_hdr h;
    int r, passfd, n;

    for (n = 0; n < max; n++) {
        r = folio_chan_recv(p->chan, &h, data, sizeof(data), &passfd);
        if (r == FOLIO_EAGAIN)
            return 0;
        if (r == 0 || r == FOLIO_ESYS) {
            /* The worker is exiting; the reaper does the rest. */
            if (p->ev_chan != NULL)
                event_del(p->ev_chan);
            return 0;
        }
        if (r < 0) {
            folio_log_warnx("malformed message from the worker in slot %d",
                            slot);
            continue;
        }
        switch (h.ch_type) {
        case FOLIO_CHAN_READY:
            if (!p->reaped)
                post(m, FOLIO_EV_READY, slot);
            break;
        case FOLIO_CHAN_HANDOFF:
            if (passfd >= 0) {
                relay(m, slot, &h, data, passfd);
                passfd = -1;
            }
            break;
        case FOLIO_CHAN_RECYCLE:
            if (!p->reaped)
                post(m, FOLIO_EV_RECYCLE, slot);
            break;
        case FOLIO_CHAN_PROFILE_DONE:
            folio_profile_on_done(m, p, &h, data, passfd);
            passfd = -1;
            break;
        default:
            folio_log_warnx("unexpected message %u from the worker in slot %d",
                            h.ch_type, slot);
        }
        if (passfd >= 0)
            close(passfd);
    }
    return 1;
}

static void
on_chan(evutil_socket_t fd, short what, void *arg)
{
    struct folio_proc *p = arg;

    chan_read(p->m, p->slot, 256);
}

static uint64_t
us(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

/* Release slot's channel, reading what it sent before exiting first. */
static void
close_chan(struct folio_master *m, int slot)
{
    struct folio_proc *p = &m->procs[slot];

    /* Connections handed over at a reload may still wait: take them. */
    p->reaped = 1;
    if (p->chan != -1)
        while (chan_read(m, slot, 4096))
            ;
    if (p->ev_chan != NULL)
        event_free(p->ev_chan);
    if (p->chan != -1)
        close(p->chan);
    p->seq = 0;
    p->chan = -1;
    p->ev_chan = NULL;
}

int
folio_proc_reap(struct folio_master *m, int *slot, int *status)
{
    struct folio_worker_slot *s;
    struct rusage ru;
    pid_t pid;
    int st, i;

    while ((pid = wait4(-1, &st, WNOHANG, &ru)) > 0) {
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (folio_dec_live(&m->dec, i) && pid_of(m, i) == pid)
                break;
        if (i == FOLIO_MAX_SLOTS)
            continue; /* not a worker (an upgrade's check ran) */
        /* Its final CPU time comes from wait4, exact. */
        s = folio_stats_slot(m->stats, (unsigned)i);
        if (us(&ru.ru_utime) > folio_stat_get(&s->ws_cpu_user_us))
            folio_stat_set(&s->ws_cpu_user_us, us(&ru.ru_utime));
        if (us(&ru.ru_stime) > folio_stat_get(&s->ws_cpu_sys_us))
            folio_stat_set(&s->ws_cpu_sys_us, us(&ru.ru_stime));
        close_chan(m, i);
        folio_stats_fold(m->stats, (unsigned)i);
        *slot = i;
        *status = st;
        return 1;
    }
    return 0;
}

void
folio_proc_release(struct folio_master *m)
{
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (m->procs[i].ev_chan != NULL)
            event_free(m->procs[i].ev_chan);
        if (m->procs[i].chan != -1)
            close(m->procs[i].chan);
        m->procs[i].ev_chan = NULL;
        m->procs[i].chan = -1;
    }
}
