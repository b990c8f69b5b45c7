/*
 * cycle.c - the master's loop, as nginx's ngx_master_process_cycle and
 * Postfix's master.c: it takes the events of the master's ring (what
 * signal.c and proc.c posted, its own timers' deadlines, the answers to
 * what it asked for), steps each into decide.c, and carries out the
 * actions it returns, in order, by calling down into the files that do
 * them.  It decides nothing itself, and nothing below calls back up: an
 * answer (a worker forked, a generation built, a worker reaped) goes into
 * the ring, stepped before anything else once the actions of the step
 * that asked for it are carried out.
 *
 * Each of decide.c's deadlines has its own libevent timer, armed after
 * the events are taken for what decide.c says it is due at; stepping one
 * never moves another.  An upgrade leaves the loop to re-execute: what
 * the kernel and libevent caught before it is taken first, with the
 * signals blocked, so that nothing is lost across the exec; decide.c
 * then says whether the exec is still due.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/addr.h"
#include "src/clock.h"
#include "src/log.h"
#include "src/title.h"
#include "worker/dispatch.h"

static void
leave_loop(struct folio_master *m)
{
    event_base_loopbreak(m->base);
}

static struct folio_gen *
gen_of(struct folio_master *m, uint64_t id)
{
    if (m->cur != NULL && m->cur->id == id)
        return m->cur;
    if (m->next != NULL && m->next->id == id)
        return m->next;
    return NULL;
}

/*
 * What slot s's comments writer thread is doing with the store's writer
 * lock, for the hung line: "" when neither waiting nor holding it.
 */
static void
writer_state(struct folio_worker_slot *s, uint64_t now, char *buf, size_t len)
{
    uint64_t since = folio_stat_get(&s->ws_writer_since_ms);
    double secs = since != 0 && now > since ? (double)(now - since) / 1e3 : 0;

    if (folio_stat_get(&s->ws_comments_writer_holding))
        snprintf(buf, len,
                 "; its writer has held the comments store's writer lock "
                 "for %.1f s, every other writer waiting",
                 secs);
    else if (folio_stat_get(&s->ws_comments_writer_waiting))
        snprintf(buf, len,
                 "; its writer waiting for the store's writer for %.1f s",
                 secs);
    else
        buf[0] = '\0';
}

/* The watchdog found slot hung: say what it was doing, from its slot. */
static void
log_hung(struct folio_master *m, int slot, uint64_t stalled)
{
    const struct folio_dec_proc *p = &m->dec.procs[slot];
    struct folio_worker_slot *s = folio_stats_slot(m->stats, (unsigned)slot);
    uint64_t start = folio_stat_get(&s->ws_req_start_ms), now = folio_mono_ms(),
             peer[3];
    unsigned row = atomic_load(&s->ws_req_row);
    const char *method = row < folio_nmethods ? folio_methods[row].name
                                              : "an unknown method";
    char from[FOLIO_ADDR_TEXT + 8] = "", what[FOLIO_ADDR_TEXT + 128],
        wr[128];
    int i;

    for (i = 0; i < 3; i++)
        peer[i] = folio_stat_get(&s->ws_req_peer[i]);
    if (peer[0] != 0) {
        memcpy(from, " from ", 6);
        folio_addr_packed_format(peer, from + 6, sizeof(from) - 6);
    }
    if (start == 0)
        snprintf(what, sizeof(what), "before its first request");
    else if (atomic_load(&s->ws_req_busy))
        snprintf(what, sizeof(what), "in %s for %.1f s%s", method,
                 (double)(now - start) / 1e3, from);
    else
        snprintf(what, sizeof(what),
                 "between requests; the last, %s%s, began %.1f s ago", method,
                 from, (double)(now - start) / 1e3);
    writer_state(s, now, wr, sizeof(wr));
    if (now - folio_stat_get(&s->ws_beat_ms) < p->timeout_ms) {
        /* Its loop turns: the lock it holds is what hangs (beat_of). */
        folio_log_errorx("worker %d (pid %ld) hung: its writer has held the "
                         "comments store's writer lock for %.1f s "
                         "(worker_timeout %u ms), every other worker's posts "
                         "waiting: SIGABRT for a backtrace, then SIGKILL, "
                         "and a new worker",
                         p->index, p->pid, (double)stalled / 1e3,
                         p->timeout_ms);
        return;
    }
    folio_log_errorx("worker %d (pid %ld) hung: its loop has not turned for "
                     "%.1f s (worker_timeout %u ms), %s%s: SIGABRT for a "
                     "backtrace, then SIGKILL, and a new worker",
                     p->index, p->pid, (double)stalled / 1e3, p->timeout_ms,
                     what, wr);
}

static void
close_public(struct folio_gen *g)
{
    int i;

    for (i = 0; g != NULL && i < g->nlisteners; i++)
        if (!g->listeners[i].admin && g->listeners[i].fd != -1) {
            close(g->listeners[i].fd);
            g->listeners[i].fd = -1;
        }
}

static void
execute(struct folio_master *m, const struct folio_dec_act *a)
{
    struct folio_dec_ev ev;
    struct folio_gen *g;
    char err[1024];
    pid_t pid;
    int status;

    memset(&ev, 0, sizeof(ev));
    switch (a->type) {
    case FOLIO_ACT_LOG:
        if (a->level >= folio_log_level || a->level == FOLIO_LOG_CRIT)
            folio_log_write(a->level, 0, "%s", a->text);
        break;
    case FOLIO_ACT_SPAWN:
        ev.slot = a->slot;
        if ((g = gen_of(m, a->gen)) != NULL &&
            folio_proc_spawn(m, g, a->slot, a->index, &pid) == 0) {
            ev.type = FOLIO_EV_SPAWNED;
            ev.pid = pid;
        } else {
            ev.type = FOLIO_EV_SPAWN_FAILED;
        }
        folio_ring_answer(&m->ring, &ev);
        break;
    case FOLIO_ACT_RETIRE:
        folio_proc_retire(m, a->slot);
        break;
    case FOLIO_ACT_KILL:
        folio_proc_kill(m, a->slot, a->sig);
        break;
    case FOLIO_ACT_HUNG:
        log_hung(m, a->slot, a->arg);
        break;
    case FOLIO_ACT_RELOAD:
        if (folio_reload_build(m, err, sizeof(err)) == 0) {
            ev.type = FOLIO_EV_GEN_BUILT;
            folio_gen_params(m->next, &ev.gen);
        } else {
            ev.type = FOLIO_EV_GEN_FAILED;
            ev.why = err;
        }
        folio_ring_answer(&m->ring, &ev);
        break;
    case FOLIO_ACT_UPGRADE:
        /*
         * Out of the loop first (decide.c's mode says why): see upgrade.
         * Once the metrics listener is quiet: the exec closes the
         * connections it took, and a load balancer's check on one of
         * them would fail; the ones still in the kernel's queue go to
         * the new image.
         */
        folio_mconn_quiesce(m, leave_loop);
        break;
    case FOLIO_ACT_METRICS_OPEN:
        folio_mconn_resume(m);
        break;
    case FOLIO_ACT_EXEC:
        /* Returns only if it failed. */
        folio_upgrade_exec(m, err, sizeof(err));
        ev.type = FOLIO_EV_UPGRADE_FAILED;
        ev.why = err;
        folio_ring_answer(&m->ring, &ev);
        break;
    case FOLIO_ACT_SWITCH:
        folio_reload_switch(m);
        break;
    case FOLIO_ACT_DROP:
        if (m->next != NULL && m->next->id == a->gen)
            folio_reload_drop(m);
        break;
    case FOLIO_ACT_READY:
        folio_title_set("foliod: master (generation %llu)",
                        (unsigned long long)a->gen);
        folio_announce_ready(m);
        break;
    case FOLIO_ACT_NOTIFY:
        /* A daemon's master is not the process systemd started: say who. */
        if (a->arg && m->tell_mainpid) {
            folio_notify("MAINPID=%ld\n%s", (long)getpid(), a->text);
            m->tell_mainpid = 0;
        } else {
            folio_notify("%s", a->text);
        }
        break;
    case FOLIO_ACT_RELOADING:
        folio_notify_reloading();
        break;
    case FOLIO_ACT_CLOSE_LISTENERS:
        /* Refuse new connections as soon as the workers close theirs. */
        close_public(m->cur);
        close_public(m->next);
        break;
    case FOLIO_ACT_REAP:
        ev.type = FOLIO_EV_EXIT;
        while (folio_proc_reap(m, &ev.slot, &status)) {
            ev.status = status;
            folio_ring_answer(&m->ring, &ev);
        }
        break;
    case FOLIO_ACT_REOPEN:
        folio_log_reopen();
        folio_proc_signal_all(m, SIGUSR1);
        break;
    case FOLIO_ACT_SNAPSHOT:
        folio_stats_log_snapshot(m);
        break;
    case FOLIO_ACT_EXIT:
        m->exit_code = (int)a->arg;
        event_base_loopbreak(m->base);
        break;
    }
}

/* Arm each deadline's timer for what decide.c says, if that changed. */
static void
sync_timers(struct folio_master *m)
{
    uint64_t now = folio_mono_ms(), at, ms;
    struct timeval tv;
    int k;

    for (k = 0; k < FOLIO_T_MAX; k++) {
        struct folio_timer *t = &m->timers[k];

        at = folio_dec_deadline(&m->dec, k);
        if (at == t->at)
            continue;
        t->at = at;
        if (at == 0) {
            evtimer_del(t->ev);
            continue;
        }
        ms = at > now ? at - now : 0;
        tv.tv_sec = (time_t)(ms / 1000);
        tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
        evtimer_add(t->ev, &tv);
    }
}

/*
 * Step every event of the ring, answers first, carrying out the actions
 * of each; then the timers and the region's header say where it left
 * decide.c.
 */
static void
drain(struct folio_master *m)
{
    struct folio_dec_ev ev;
    int i, n;

    while (folio_ring_take(&m->ring, &ev)) {
        ev.now_ms = folio_mono_ms();
        n = folio_dec_step(&m->dec, &ev);
        for (i = 0; i < n; i++)
            execute(m, &m->dec.acts[i]);
    }
    if (m->ring.lost > 0) {
        folio_log_errorx("%u events were lost (the ring was full)",
                         m->ring.lost);
        m->ring.lost = 0;
    }
    sync_timers(m);
    folio_stats_publish(m);
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
    drain(arg);
}

/*
 * A worker's heartbeat as the watchdog sees it: its loop's last turn, or,
 * while its writer thread holds the comments store's writer lock, when it
 * took it if that is earlier.  A worker that has kept every other
 * worker's posts waiting for worker_timeout is the hung one, whatever its
 * loop does; the workers waiting for it are not (their loops turn on).
 */
static uint64_t
beat_of(struct folio_worker_slot *s)
{
    uint64_t beat = folio_stat_get(&s->ws_beat_ms), since;

    if (folio_stat_get(&s->ws_comments_writer_holding) &&
        (since = folio_stat_get(&s->ws_writer_since_ms)) != 0 && since < beat)
        return since;
    return beat;
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct folio_timer *t = arg;
    struct folio_master *m = t->m;
    struct folio_dec_ev ev;
    int i;

    t->at = 0; /* fired: sync_timers arms it again if due */
    if (t->id == FOLIO_T_WATCHDOG)
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (folio_dec_live(&m->dec, i))
                folio_dec_beat(&m->dec, i,
                               beat_of(folio_stats_slot(m->stats, (unsigned)i)));
    memset(&ev, 0, sizeof(ev));
    ev.type = FOLIO_EV_TIMER;
    ev.slot = -1;
    ev.timer = t->id;
    folio_ring_post(&m->ring, &ev);
}

/*
 * Out of the loop for an upgrade: with the signals blocked, what libevent
 * had already caught is taken first (a TERM caught just before would
 * otherwise be lost with the old image); then decide.c, told so, execs
 * if that is still due.  If the exec returns, decide.c hears why.
 */
static void
upgrade(struct folio_master *m)
{
    struct folio_dec_ev ev;
    sigset_t all, old;

    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    event_base_loop(m->base, EVLOOP_NONBLOCK);
    memset(&ev, 0, sizeof(ev));
    ev.type = FOLIO_EV_EXEC_DUE;
    ev.slot = -1;
    folio_ring_post(&m->ring, &ev);
    drain(m);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int
folio_cycle_run(struct folio_master *m, int resumed)
{
    struct folio_dec_ev ev;
    sigset_t none;
    int k;

    if ((m->ring.wake = event_new(m->base, -1, 0, on_wake, m)) == NULL)
        folio_fatalx("cannot set up the master's events");
    for (k = 0; k < FOLIO_T_MAX; k++) {
        m->timers[k].m = m;
        m->timers[k].id = k;
        if ((m->timers[k].ev = evtimer_new(m->base, on_timer, &m->timers[k])) ==
            NULL)
            folio_fatalx("cannot set up the master's timers");
    }
    if (folio_signals_init(m) != 0)
        folio_fatalx("cannot set up signal handling");
    /* An upgraded image starts with them blocked: take them now. */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    memset(&ev, 0, sizeof(ev));
    ev.slot = -1;
    if (resumed) {
        ev.type = FOLIO_EV_RESUME;
    } else {
        ev.type = FOLIO_EV_START;
        folio_gen_params(m->cur, &ev.gen);
    }
    folio_ring_post(&m->ring, &ev);
    drain(m);
    /*
     * The mode says why the loop was left (EXIT and UPGRADE break it), and
     * what to do when an action outside it (an upgrade's) asked for
     * either: a loopbreak outside the loop is forgotten by the next one.
     */
    while (m->dec.mode != FOLIO_DM_EXITING) {
        if (m->dec.mode == FOLIO_DM_UPGRADING) {
            upgrade(m); /* returns if the exec did not happen */
        } else if (event_base_dispatch(m->base) != 0) {
            folio_log_errorx("event loop failed");
            break;
        }
    }
    return m->exit_code;
}
