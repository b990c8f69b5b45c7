/*
 * cycle.c - the master's loop and its one decision place, as nginx's
 * ngx_master_process_cycle and Postfix's master.c: what happened (the
 * events that signal.c and proc.c post, the deadlines' timers, the
 * answers of what it asked for) is stepped into decide.c, and the actions
 * it returns are carried out here, in order, by calling down into the
 * files that do them.  Nothing below calls back up: an answer (a worker
 * forked, a generation built) is queued and stepped after the actions of
 * the step that asked for it.
 *
 * Each of decide.c's deadlines has its own libevent timer, armed after
 * every step for what decide.c says it is due at; stepping one never
 * moves another.  An upgrade leaves the loop to re-execute: what the
 * kernel and libevent caught before it is taken first, with the signals
 * blocked, so that nothing is lost across the exec.
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

#define NANSWERS (2 * FOLIO_MAX_SLOTS + 16)

/* Answers waiting to be stepped, with room for their reasons. */
static struct {
    struct folio_dec_ev ev;
    char why[1024];
} answers[NANSWERS];
static unsigned ans_head, ans_tail;

/* What a timer's callback needs: the master and which deadline. */
static struct timer_arg {
    struct folio_master *m;
    int timer;
} timer_arg[FOLIO_T_MAX];

static int upgrade_due; /* an UPGRADE action left the loop */
static int exiting;     /* an EXIT action did */

static void
answer(const struct folio_dec_ev *ev, const char *why)
{
    unsigned i;

    if (ans_tail - ans_head >= NANSWERS) {
        folio_log_errorx("the master's answer queue is full: %d dropped",
                         ev->type);
        return;
    }
    i = ans_tail++ % NANSWERS;
    answers[i].ev = *ev;
    if (why != NULL) {
        snprintf(answers[i].why, sizeof(answers[i].why), "%s", why);
        answers[i].ev.why = answers[i].why;
    }
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
    char from[FOLIO_ADDR_TEXT + 8] = "", what[FOLIO_ADDR_TEXT + 128];
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
    folio_log_errorx("worker %d (pid %ld) hung: its loop has not turned for "
                     "%.1f s (worker_timeout %u ms), %s: SIGABRT for a "
                     "backtrace, then SIGKILL, and a new worker",
                     p->index, p->pid, (double)stalled / 1e3, p->timeout_ms,
                     what);
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

    memset(&ev, 0, sizeof(ev));
    switch (a->type) {
    case FOLIO_ACT_LOG:
        if (a->level >= folio_log_level || a->level == FOLIO_LOG_CRIT)
            folio_log_write(a->level, 0, "%s", a->text);
        break;
    case FOLIO_ACT_SPAWN:
        ev.slot = a->slot;
        ev.now_ms = folio_mono_ms();
        if ((g = gen_of(m, a->gen)) != NULL &&
            folio_proc_spawn(m, g, a->slot, a->index, &pid) == 0) {
            ev.type = FOLIO_EV_SPAWNED;
            ev.pid = pid;
        } else {
            ev.type = FOLIO_EV_SPAWN_FAILED;
        }
        answer(&ev, NULL);
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
        ev.now_ms = folio_mono_ms();
        if (folio_reload_build(m, err, sizeof(err)) == 0) {
            ev.type = FOLIO_EV_GEN_BUILT;
            folio_gen_params(m->next, &ev.gen);
            answer(&ev, NULL);
        } else {
            ev.type = FOLIO_EV_GEN_FAILED;
            answer(&ev, err);
        }
        break;
    case FOLIO_ACT_UPGRADE:
        /* Out of the loop first: see folio_cycle_run. */
        upgrade_due = 1;
        event_base_loopbreak(m->base);
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
    case FOLIO_ACT_EXIT:
        m->exit_code = (int)a->arg;
        exiting = 1;
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
        at = folio_dec_deadline(&m->dec, k);
        if (at == m->timer_at[k])
            continue;
        m->timer_at[k] = at;
        if (at == 0) {
            evtimer_del(m->ev_timer[k]);
            continue;
        }
        ms = at > now ? at - now : 0;
        tv.tv_sec = (time_t)(ms / 1000);
        tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
        evtimer_add(m->ev_timer[k], &tv);
    }
}

/* Step ev, carry out its actions, then step their answers. */
static void
step(struct folio_master *m, const struct folio_dec_ev *first)
{
    struct folio_dec_ev ev;
    int i, n;

    answer(first, first->why);
    while (ans_head != ans_tail) {
        ev = answers[ans_head++ % NANSWERS].ev;
        n = folio_dec_step(&m->dec, &ev);
        for (i = 0; i < n; i++)
            execute(m, &m->dec.acts[i]);
    }
    sync_timers(m);
    folio_stats_publish(m);
}

static void
step_simple(struct folio_master *m, int type, int slot)
{
    struct folio_dec_ev ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.slot = slot;
    ev.now_ms = folio_mono_ms();
    step(m, &ev);
}

static void
on_signal(struct folio_master *m, int sig)
{
    struct folio_dec_ev ev;
    int slot, status;

    memset(&ev, 0, sizeof(ev));
    switch (sig) {
    case SIGTERM:
    case SIGINT:
        step_simple(m, FOLIO_EV_TERM, -1);
        break;
    case SIGQUIT:
        step_simple(m, FOLIO_EV_QUIT, -1);
        break;
    case SIGHUP:
        ev.type = FOLIO_EV_HUP;
        ev.now_ms = folio_mono_ms();
        ev.changed = folio_upgrade_changed(m);
        step(m, &ev);
        break;
    case SIGUSR1:
        folio_log_reopen();
        folio_proc_signal_all(m, SIGUSR1);
        break;
    case SIGUSR2:
        folio_stats_log_snapshot(m);
        break;
    case SIGCHLD:
        while (folio_proc_reap(m, &slot, &status)) {
            ev.type = FOLIO_EV_EXIT;
            ev.now_ms = folio_mono_ms();
            ev.slot = slot;
            ev.status = status;
            step(m, &ev);
        }
        break;
    }
}

/* What signal.c and proc.c reported, in the order they did. */
static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = arg;
    struct folio_mev e;

    while (folio_mq_take(&m->mq, &e)) {
        switch (e.type) {
        case FOLIO_MEV_SIGNAL:
            on_signal(m, e.arg);
            break;
        case FOLIO_MEV_READY:
        case FOLIO_MEV_RECYCLE:
            /* Only if the slot still holds the process that said it. */
            if (e.arg >= 0 && e.arg < FOLIO_MAX_SLOTS &&
                m->procs[e.arg].seq == e.seq)
                step_simple(m,
                            e.type == FOLIO_MEV_READY ? FOLIO_EV_READY
                                                      : FOLIO_EV_RECYCLE,
                            e.arg);
            break;
        }
    }
    if (m->mq.lost > 0) {
        folio_log_errorx("%u events were lost (queue full)", m->mq.lost);
        m->mq.lost = 0;
    }
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = ((struct timer_arg *)arg)->m;
    struct folio_dec_ev ev;
    int k = ((struct timer_arg *)arg)->timer, i;

    m->timer_at[k] = 0; /* fired: sync_timers arms it again if due */
    if (k == FOLIO_T_WATCHDOG)
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (folio_dec_live(&m->dec, i))
                folio_dec_beat(&m->dec, i,
                               folio_stat_get(&folio_stats_slot(
                                   m->stats, (unsigned)i)->ws_beat_ms));
    memset(&ev, 0, sizeof(ev));
    ev.type = FOLIO_EV_TIMER;
    ev.timer = k;
    ev.now_ms = folio_mono_ms();
    step(m, &ev);
}

/*
 * Re-execute for an upgrade, from outside the loop: with the signals
 * blocked, what libevent had already caught is dispatched first (a TERM
 * caught just before would otherwise be lost with the old image); then,
 * if decide.c still serves, the exec.  If it returns, decide.c hears why.
 */
static void
upgrade(struct folio_master *m)
{
    struct folio_dec_ev ev;
    sigset_t all, old;
    char err[1024];

    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    event_base_loop(m->base, EVLOOP_NONBLOCK);
    if (!exiting && m->dec.mode == FOLIO_SS_SERVING) {
        upgrade_due = 0;
        memset(&ev, 0, sizeof(ev));
        ev.type = FOLIO_EV_UPGRADE_FAILED;
        if (folio_upgrade_exec(m, err, sizeof(err)) != 0) {
            ev.now_ms = folio_mono_ms();
            ev.why = err;
            step(m, &ev);
        }
    } else if (!exiting) {
        folio_log_notice("upgrade abandoned: the master is %s",
                         m->dec.mode == FOLIO_SS_STOPPING ? "stopping"
                                                          : "reloading");
    }
    upgrade_due = 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

int
folio_cycle_run(struct folio_master *m, int resumed)
{
    struct folio_dec_ev ev;
    sigset_t none;
    int k;

    if ((m->mq.wake = event_new(m->base, -1, 0, on_wake, m)) == NULL)
        folio_fatalx("cannot set up the master's events");
    for (k = 0; k < FOLIO_T_MAX; k++) {
        timer_arg[k].m = m;
        timer_arg[k].timer = k;
        if ((m->ev_timer[k] = evtimer_new(m->base, on_timer,
                                          &timer_arg[k])) == NULL)
            folio_fatalx("cannot set up the master's timers");
    }
    if (folio_signals_init(m) != 0)
        folio_fatalx("cannot set up signal handling");
    /* An upgraded image starts with them blocked: take them now. */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    memset(&ev, 0, sizeof(ev));
    ev.now_ms = folio_mono_ms();
    if (resumed) {
        ev.type = FOLIO_EV_RESUME;
        ev.changed = 1;
        /* Workers that exited during the exec: reaped first. */
        folio_mq_post(&m->mq, FOLIO_MEV_SIGNAL, SIGCHLD, 0);
    } else {
        ev.type = FOLIO_EV_START;
        folio_gen_params(m->cur, &ev.gen);
    }
    step(m, &ev);
    for (;;) {
        if (!exiting && event_base_dispatch(m->base) < 0) {
            folio_log_errorx("event loop failed");
            break;
        }
        if (exiting || !upgrade_due)
            break;
        upgrade(m);
    }
    return m->exit_code;
}
