/*
 * proc.c - worker processes: fork, the channel to each worker (ready,
 * connection hand-over, recycling), reaping and respawning with backoff.
 * Shaped after Postfix's master_spawn.c and nginx's ngx_process.c.
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

#define EARLY_DEATH_MS 1000 /* dying sooner than this is a failed start */
#define BACKOFF_BASE_MS 100
#define BACKOFF_MAX_MS 30000

static void on_chan(evutil_socket_t fd, short what, void *arg);

int
folio_proc_count(const struct folio_master *m, uint64_t gen, int state)
{
    int i, n = 0;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0 && m->procs[i].generation == gen &&
            (state == PROC_FREE || m->procs[i].state == state))
            n++;
    return n;
}

void
folio_proc_signal_all(struct folio_master *m, int sig)
{
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0)
            kill(m->procs[i].pid, sig);
}

void
folio_proc_retire(struct folio_master *m, struct folio_proc *p)
{
    if (p->pid == 0 || p->state == PROC_RETIRING || p->state == PROC_STOPPING)
        return;
    if (p->state == PROC_STARTING ||
        folio_chan_send(p->chan, FOLIO_CHAN_RETIRE, 0, 0, NULL, 0, -1) != 0) {
        /* Not serving yet, or deaf: it has nothing to hand over. */
        kill(p->pid, SIGTERM);
        p->state = PROC_STOPPING;
        return;
    }
    p->state = PROC_RETIRING;
}

/* In the child: drop what belongs to the master and to other workers. */
static void
child_close_fds(struct folio_master *m, const struct folio_gen *g)
{
    const struct folio_gen *gens[2] = {m->cur, m->next};
    int i, j;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0 && m->procs[i].chan != -1)
            close(m->procs[i].chan);
    for (j = 0; j < 2; j++) {
        if (gens[j] == NULL || gens[j] == g)
            continue;
        for (i = 0; i < gens[j]->nlisteners; i++)
            close(gens[j]->listeners[i].fd);
    }
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
    if (m->metrics_fd != -1)
        close(m->metrics_fd);
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
folio_proc_spawn(struct folio_master *m, struct folio_gen *g, int index,
                 int replaces)
{
    struct folio_worker_args args;
    struct folio_worker_slot *s;
    struct folio_proc *p = NULL;
    sigset_t all, old;
    int fds[2], i;
    pid_t pid;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (m->procs[i].pid == 0 && m->procs[i].state == PROC_FREE) {
            p = &m->procs[i];
            break;
        }
    }
    if (p == NULL) {
        folio_log_errorx("no free worker slot for worker %d", index);
        return FOLIO_ETOOBIG;
    }
    if (folio_chan_pair(fds) != 0) {
        folio_log_error("socketpair for worker %d", index);
        return FOLIO_ESYS;
    }
    s = folio_stats_slot(m->stats, (unsigned)i);
    memset(s, 0, sizeof(*s));
    p->seq = ++m->spawn_seq;
    folio_stat_set(&s->ws_seq, p->seq);
    folio_stat_set(&s->ws_generation, g->id);
    atomic_store(&s->ws_index, (uint32_t)index);
    atomic_store(&s->ws_state, FOLIO_WS_STARTING);

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
        return FOLIO_ESYS;
    }
    p->pid = pid;
    p->index = index;
    p->generation = g->id;
    p->state = PROC_STARTING;
    p->chan = fds[0];
    p->spawned_ms = folio_master_now_ms();
    p->replaces = replaces;
    folio_stat_set(&s->ws_pid, (uint64_t)pid);
    p->ev_chan = event_new(m->base, p->chan, EV_READ | EV_PERSIST, on_chan, p);
    if (p->ev_chan == NULL || event_add(p->ev_chan, NULL) != 0)
        folio_log_errorx("cannot watch the channel of worker %d", index);
    folio_log_info("worker %d started (pid %ld, generation %llu)", index,
                   (long)pid, (unsigned long long)g->id);
    return 0;
}

static struct folio_proc *
pick_ready(struct folio_master *m, const struct folio_proc *not)
{
    int i, k;

    if (m->cur == NULL)
        return NULL;
    for (k = 0; k < FOLIO_MAX_SLOTS; k++) {
        i = (int)((m->rr + (unsigned)k) % FOLIO_MAX_SLOTS);
        if (m->procs[i].pid != 0 && &m->procs[i] != not &&
            m->procs[i].state == PROC_READY &&
            m->procs[i].generation == m->cur->id) {
            m->rr = (unsigned)i + 1;
            return &m->procs[i];
        }
    }
    return NULL;
}

/* A retiring worker handed a connection back: give it to a current one. */
static void
relay(struct folio_master *m, struct folio_proc *from,
      const struct folio_chan_hdr *h, const void *data, int fd)
{
    struct folio_proc *to;
    int tries;

    for (tries = 0; tries < 4; tries++) {
        if ((to = pick_ready(m, from)) == NULL)
            break;
        if (folio_chan_send(to->chan, FOLIO_CHAN_ADOPT, h->ch_flags, 0, data,
                            h->ch_len, fd) == 0) {
            close(fd);
            return;
        }
        folio_log_warn("handing a connection to worker %d", to->index);
    }
    folio_log_warnx("no worker to take over a connection: closed");
    close(fd);
}

static void
on_ready(struct folio_master *m, struct folio_proc *p)
{
    p->state = PROC_READY;
    if (p->replaces >= 0) {
        struct folio_proc *old = &m->procs[p->replaces];

        folio_log_info("worker %d (pid %ld) replaces pid %ld", p->index,
                       (long)p->pid, (long)old->pid);
        folio_proc_retire(m, old);
        p->replaces = -1;
        folio_stat_add(&folio_stats_header_of(m->stats)->sh_recycles, 1);
    }
    if (m->next != NULL && p->generation == m->next->id) {
        folio_reload_check(m);
        return;
    }
    if (m->cur != NULL && p->generation == m->cur->id && !m->ready_reported &&
        folio_proc_count(m, m->cur->id, PROC_READY) >= m->cur->nworkers)
        folio_master_ready(m);
}

static void
on_recycle(struct folio_master *m, struct folio_proc *p)
{
    int i;

    if (m->stopping || m->next != NULL || m->cur == NULL ||
        p->generation != m->cur->id || p->state != PROC_READY)
        return;
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0 && m->procs[i].replaces == p - m->procs)
            return; /* a replacement is already starting */
    folio_proc_spawn(m, m->cur, p->index, (int)(p - m->procs));
}

/*
 * Read up to `max` messages from a worker's channel.  Returns 1 if more
 * may be waiting, 0 when the channel is empty or closed.
 */
static int
chan_read(struct folio_proc *p, int max)
{
    static char data[FOLIO_CHAN_MAX_DATA];
    struct folio_master *m = folio_master;
    struct folio_chan_hdr h;
    int r, passfd, n, fd = p->chan;

    for (n = 0; n < max; n++) {
        r = folio_chan_recv(fd, &h, data, sizeof(data), &passfd);
        if (r == FOLIO_EAGAIN)
            return 0;
        if (r == 0 || r == FOLIO_ESYS) {
            /* The worker is exiting; the reaper does the rest. */
            event_del(p->ev_chan);
            return 0;
        }
        if (r < 0) {
            folio_log_warnx("malformed message from worker %d", p->index);
            continue;
        }
        switch (h.ch_type) {
        case FOLIO_CHAN_READY:
            if (!p->reaped)
                on_ready(m, p);
            break;
        case FOLIO_CHAN_HANDOFF:
            if (passfd >= 0) {
                relay(m, p, &h, data, passfd);
                passfd = -1;
            }
            break;
        case FOLIO_CHAN_RECYCLE:
            if (!p->reaped)
                on_recycle(m, p);
            break;
        default:
            folio_log_warnx("unexpected message %u from worker %d", h.ch_type,
                            p->index);
        }
        if (passfd >= 0)
            close(passfd);
    }
    return 1;
}

static void
on_chan(evutil_socket_t fd, short what, void *arg)
{
    chan_read(arg, 256);
}

static void
on_respawn(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = folio_master;
    int index = (int)(intptr_t)arg;

    if (m->stopping || m->cur == NULL || index >= m->cur->nworkers)
        return;
    if (folio_proc_spawn(m, m->cur, index, -1) != 0)
        folio_log_errorx("respawning worker %d failed", index);
}

static void
describe(int st, char *buf, size_t len)
{
    if (WIFEXITED(st))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(st),
                 strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
    else
        snprintf(buf, len, "ended with status 0x%x", st);
}

static int
crashed(int st)
{
    if (!WIFSIGNALED(st))
        return 0;
    switch (WTERMSIG(st)) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
    case SIGSYS:
        return 1;
    }
    return 0;
}

/* A worker of the serving generation died: replace it, maybe later. */
static void
respawn(struct folio_master *m, const struct folio_proc *dead, int st,
        uint64_t lived_ms)
{
    struct folio_index *ix = &m->idx[dead->index];
    struct timeval tv;
    uint64_t delay;

    if (WIFEXITED(st) && WEXITSTATUS(st) == FOLIO_EXIT_FATAL) {
        folio_log_crit("worker %d cannot start: not respawned", dead->index);
        if (folio_proc_count(m, m->cur->id, PROC_FREE) == 0) {
            folio_log_crit("no worker left: stopping");
            m->exit_code = FOLIO_EXIT_FAILURE;
            folio_stop(m, 0);
        }
        return;
    }
    folio_stat_add(&folio_stats_header_of(m->stats)->sh_restarts, 1);
    if (dead->state == PROC_STARTING || lived_ms < EARLY_DEATH_MS)
        ix->fails++;
    else
        ix->fails = 0;
    if (ix->fails == 0) {
        on_respawn(-1, 0, (void *)(intptr_t)dead->index);
        return;
    }
    delay = (uint64_t)BACKOFF_BASE_MS << (ix->fails > 9 ? 9 : ix->fails - 1);
    if (delay > BACKOFF_MAX_MS)
        delay = BACKOFF_MAX_MS;
    folio_log_warnx("worker %d died %s: respawning in %llu ms", dead->index,
                    dead->state == PROC_STARTING ? "before it was ready"
                                                 : "soon after starting",
                    (unsigned long long)delay);
    if (ix->ev_respawn == NULL)
        ix->ev_respawn = evtimer_new(m->base, on_respawn,
                                     (void *)(intptr_t)dead->index);
    tv.tv_sec = (time_t)(delay / 1000);
    tv.tv_usec = (suseconds_t)(delay % 1000) * 1000;
    if (ix->ev_respawn == NULL || evtimer_add(ix->ev_respawn, &tv) != 0)
        on_respawn(-1, 0, (void *)(intptr_t)dead->index);
}

void
folio_proc_reap(struct folio_master *m)
{
    struct folio_worker_slot *s;
    struct folio_proc dead;
    struct rusage ru;
    char how[128];
    uint64_t cpu_u, cpu_s, lived;
    pid_t pid;
    int st, i;

    while ((pid = wait4(-1, &st, WNOHANG, &ru)) > 0) {
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (m->procs[i].pid == pid)
                break;
        if (i == FOLIO_MAX_SLOTS)
            continue;
        dead = m->procs[i];
        lived = folio_master_now_ms() - dead.spawned_ms;
        describe(st, how, sizeof(how));
        if (crashed(st))
            folio_log_crit("worker %d (pid %ld) crashed: %s", dead.index,
                           (long)pid, how);
        else if ((WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                  (dead.state == PROC_RETIRING ||
                   dead.state == PROC_STOPPING || m->stopping)))
            folio_log_info("worker %d (pid %ld) %s", dead.index, (long)pid,
                           how);
        else
            folio_log_warnx("worker %d (pid %ld) %s", dead.index, (long)pid,
                            how);

        /* Its final CPU time comes from wait4, exact. */
        s = folio_stats_slot(m->stats, (unsigned)i);
        cpu_u = (uint64_t)ru.ru_utime.tv_sec * 1000000 +
                (uint64_t)ru.ru_utime.tv_usec;
        cpu_s = (uint64_t)ru.ru_stime.tv_sec * 1000000 +
                (uint64_t)ru.ru_stime.tv_usec;
        if (cpu_u > folio_stat_get(&s->ws_cpu_user_us))
            folio_stat_set(&s->ws_cpu_user_us, cpu_u);
        if (cpu_s > folio_stat_get(&s->ws_cpu_sys_us))
            folio_stat_set(&s->ws_cpu_sys_us, cpu_s);
        folio_stats_fold(m->stats, (unsigned)i);

        /* What it sent before exiting (connections handed over at a
         * reload) may still wait in the channel: take it first. */
        m->procs[i].reaped = 1;
        if (m->procs[i].ev_chan != NULL && m->procs[i].chan != -1)
            while (chan_read(&m->procs[i], 4096))
                ;
        if (m->procs[i].ev_chan != NULL)
            event_free(m->procs[i].ev_chan);
        if (m->procs[i].chan != -1)
            close(m->procs[i].chan);
        memset(&m->procs[i], 0, sizeof(m->procs[i]));
        m->procs[i].chan = -1;
        m->procs[i].replaces = -1;

        if (m->stopping)
            continue;
        if (m->next != NULL && dead.generation == m->next->id) {
            if (dead.state == PROC_STARTING || dead.state == PROC_READY) {
                char why[192];

                snprintf(why, sizeof(why), "a new worker %s", how);
                folio_reload_abort(m, why);
            }
            continue;
        }
        if (m->cur != NULL && dead.generation == m->cur->id &&
            (dead.state == PROC_STARTING || dead.state == PROC_READY)) {
            /* A replacement already running for a recycled worker? */
            int j, covered = 0;

            for (j = 0; j < FOLIO_MAX_SLOTS; j++)
                if (m->procs[j].pid != 0 && m->procs[j].replaces == i) {
                    m->procs[j].replaces = -1;
                    covered = 1;
                }
            if (!covered)
                respawn(m, &dead, st, lived);
        }
    }
    folio_master_check_done(m);
}
