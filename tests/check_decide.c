/*
 * check_decide.c - the master's decisions (master/decide.h) driven
 * without a process: events in, actions out.  A small harness answers
 * what decide.c asks for as cycle.c would (a SPAWN is a pid, a RELOAD a
 * generation, an EXEC that fails its reason; a REAP finds nothing: the
 * tests step the exits themselves) and keeps every action of a run for
 * the assertions.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "master/decide.h"
#include "src/err.h"
#include "src/log.h"
#include "tests/check_run.h"

static struct folio_dec d;

/* What a run did: every action, in order. */
#define MAX_RUN 4096
static struct folio_dec_act run_acts[MAX_RUN];
static int nrun;
static uint64_t now_ms;
static int spawn_fails;      /* SPAWN answers SPAWN_FAILED */
static int reload_fails;     /* RELOAD answers GEN_FAILED */
static int exec_fails;       /* EXEC answers UPGRADE_FAILED (else: exec'd) */
static struct folio_dec_gen next_gen; /* what RELOAD builds */

static struct folio_dec_gen
gen(uint64_t id, int n, uint32_t shutdown, uint32_t timeout)
{
    struct folio_dec_gen g = {id, n, shutdown, timeout};

    return g;
}

/* Step ev and the answers its actions ask for, answers first, as cycle.c
 * does. */
static void
run(struct folio_dec_ev ev)
{
    struct folio_dec_ev queue[1024];
    int head = 0, tail = 0, i, n;

    nrun = 0;
    ev.now_ms = now_ms;
    queue[tail++] = ev;
    while (head < tail) {
        struct folio_dec_ev e = queue[head++];

        n = folio_dec_step(&d, &e);
        for (i = 0; i < n; i++) {
            const struct folio_dec_act *a = &d.acts[i];
            struct folio_dec_ev ans;

            ck_assert_int_lt(nrun, MAX_RUN);
            run_acts[nrun++] = *a;
            memset(&ans, 0, sizeof(ans));
            ans.now_ms = now_ms;
            if (a->type == FOLIO_ACT_SPAWN) {
                ans.type = spawn_fails ? FOLIO_EV_SPAWN_FAILED
                                       : FOLIO_EV_SPAWNED;
                ans.slot = a->slot;
                ans.pid = 1000 + a->slot;
                queue[tail++] = ans;
            } else if (a->type == FOLIO_ACT_RELOAD) {
                if (reload_fails) {
                    ans.type = FOLIO_EV_GEN_FAILED;
                    ans.why = "bad configuration";
                } else {
                    ans.type = FOLIO_EV_GEN_BUILT;
                    ans.gen = next_gen;
                    next_gen.id++;
                }
                queue[tail++] = ans;
            } else if (a->type == FOLIO_ACT_EXEC && exec_fails) {
                ans.type = FOLIO_EV_UPGRADE_FAILED;
                ans.why = "execve: No such file";
                queue[tail++] = ans;
            }
        }
    }
}

static struct folio_dec_ev
ev_of(int type)
{
    struct folio_dec_ev e;

    memset(&e, 0, sizeof(e));
    e.type = type;
    e.slot = -1;
    return e;
}

static void
send(int type)
{
    run(ev_of(type));
}

/* READY or RECYCLE from the process slot holds. */
static void
send_slot(int type, int slot)
{
    struct folio_dec_ev e = ev_of(type);

    e.slot = slot;
    e.pid = d.procs[slot].pid;
    run(e);
}

static void
send_exit(int slot, int status)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_EXIT);

    e.slot = slot;
    e.status = status;
    run(e);
}

static void
send_timer(int timer)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_TIMER);

    e.timer = timer;
    run(e);
}

static void
send_hup(int changed)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_HUP);

    e.changed = changed;
    run(e);
}

static int
count(int type)
{
    int i, n = 0;

    for (i = 0; i < nrun; i++)
        n += run_acts[i].type == type;
    return n;
}

static int
count_kill(int sig)
{
    int i, n = 0;

    for (i = 0; i < nrun; i++)
        n += run_acts[i].type == FOLIO_ACT_KILL && run_acts[i].sig == sig;
    return n;
}

/* The first action of a type, or NULL. */
static const struct folio_dec_act *
find(int type)
{
    int i;

    for (i = 0; i < nrun; i++)
        if (run_acts[i].type == type)
            return &run_acts[i];
    return NULL;
}

/* The first LOG or NOTIFY action whose text holds `needle`, or NULL. */
static const struct folio_dec_act *
said(const char *needle)
{
    int i;

    for (i = 0; i < nrun; i++)
        if ((run_acts[i].type == FOLIO_ACT_LOG ||
             run_acts[i].type == FOLIO_ACT_NOTIFY) &&
            strstr(run_acts[i].text, needle) != NULL)
            return &run_acts[i];
    return NULL;
}

/* Slots of live processes of generation g in `state`. */
static int
slots_of(uint64_t g, int state, int *out, int max)
{
    int i, n = 0;

    for (i = 0; i < FOLIO_MAX_SLOTS && n < max; i++)
        if (d.procs[i].state == state && d.procs[i].gen == g)
            out[n++] = i;
    return n;
}

/* Every worker of generation g says READY. */
static void
all_ready(uint64_t g)
{
    int s[FOLIO_MAX_SLOTS], n, i;

    n = slots_of(g, FOLIO_WS_STARTING, s, FOLIO_MAX_SLOTS);
    for (i = 0; i < n; i++)
        send_slot(FOLIO_EV_READY, s[i]);
}

static void
setup(void)
{
    folio_dec_init(&d);
    now_ms = 100000;
    spawn_fails = reload_fails = exec_fails = 0;
    next_gen = gen(2, 2, 3000, 0);
}

/* Started and serving generation 1 with n workers. */
static void
serving(int n, uint32_t timeout)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_START);

    e.gen = gen(1, n, 3000, timeout);
    run(e);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), n);
    all_ready(1);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    next_gen = gen(2, n, 3000, timeout);
}

START_TEST(test_start_ready)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_START);
    struct folio_dec_counts c;
    int s[4];

    e.gen = gen(1, 2, 3000, 0);
    run(e);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 2);
    ck_assert_int_eq(d.mode, FOLIO_DM_STARTING);
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.healthy, 0);
    ck_assert_int_eq(c.ready, 0);
    ck_assert_int_eq(c.n[FOLIO_WS_STARTING], 2);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_STARTING, s, 4), 2);
    ck_assert_int_eq(d.procs[s[0]].pid, 1000 + s[0]);
    send_slot(FOLIO_EV_READY, s[0]);
    ck_assert_ptr_null(find(FOLIO_ACT_READY)); /* not all yet */
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.healthy, 1);
    ck_assert_int_eq(c.ready, 0);
    send_slot(FOLIO_EV_READY, s[1]);
    ck_assert_ptr_nonnull(find(FOLIO_ACT_READY));
    ck_assert_ptr_nonnull(said("ready"));
    ck_assert_ptr_nonnull(
        said("READY=1\nSTATUS=serving generation 1 with 2 workers"));
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.ready, 1);
    ck_assert_int_eq(c.serving, 2);
    ck_assert_int_eq(c.configured, 2);
}
END_TEST

START_TEST(test_hups_queued_and_coalesced)
{
    serving(2, 0);
    send_hup(0);
    ck_assert_int_eq(count(FOLIO_ACT_RELOADING), 1);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 1);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 2);
    ck_assert_int_eq(d.mode, FOLIO_DM_RELOADING);
    /* Two more during the reload: queued, once, not ignored. */
    send_hup(0);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    ck_assert_ptr_nonnull(said("SIGHUP queued"));
    send_hup(0);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    ck_assert_ptr_null(said("SIGHUP queued"));
    /* Generation 2 ready: it switches, then the queued reload runs. */
    all_ready(2);
    ck_assert_int_eq(d.cur.id, 2); /* switched; 3 is building */
    ck_assert_int_eq(d.reloads, 1);
    ck_assert_int_eq(d.next.id, 3);
    all_ready(3);
    ck_assert_int_eq(d.cur.id, 3);
    ck_assert_int_eq(d.reloads, 2);
    ck_assert_int_eq(d.next.id, 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0); /* coalesced: one */
}
END_TEST

START_TEST(test_hup_while_starting_runs_after)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_START);

    e.gen = gen(1, 1, 3000, 0);
    run(e);
    send_hup(0);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    ck_assert_ptr_nonnull(said("starting: SIGHUP queued"));
    all_ready(1);
    ck_assert_ptr_nonnull(find(FOLIO_ACT_READY));
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 1);
}
END_TEST

START_TEST(test_failed_reload_then_queued)
{
    serving(1, 0);
    reload_fails = 1;
    send_hup(0);
    ck_assert_ptr_nonnull(said("reload failed: bad configuration; still "
                               "serving generation 1"));
    ck_assert_ptr_nonnull(said("READY=1\nSTATUS=reload failed: bad "
                               "configuration; serving generation 1"));
    ck_assert_int_eq(d.reload_failures, 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    /* An upgrade whose exec returns: the same. */
    exec_fails = 1;
    send_hup(1);
    ck_assert_int_eq(count(FOLIO_ACT_UPGRADE), 1);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_UPGRADING);
    send(FOLIO_EV_EXEC_DUE);
    ck_assert_int_eq(count(FOLIO_ACT_EXEC), 1);
    ck_assert_ptr_nonnull(said("reload failed: execve: No such file"));
    ck_assert_int_eq(d.reload_failures, 2);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
}
END_TEST

START_TEST(test_term_during_reload)
{
    struct folio_dec_counts c;
    uint64_t stop_at;
    int i;

    serving(2, 0);
    send_hup(0);
    ck_assert_uint_ne(folio_dec_deadline(&d, FOLIO_T_RELOAD), 0);
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_STOP), 0);
    now_ms += 5;
    send(FOLIO_EV_TERM);
    ck_assert_ptr_nonnull(said("STOPPING=1"));
    ck_assert_int_eq(count(FOLIO_ACT_CLOSE_LISTENERS), 1);
    ck_assert_int_eq(count_kill(SIGTERM), 4); /* both generations */
    stop_at = folio_dec_deadline(&d, FOLIO_T_STOP);
    ck_assert_uint_eq(stop_at, now_ms + 3000 + FOLIO_DEC_KILL_GRACE_MS);
    /* Its own deadline: the reload's is gone, the stop's stays. */
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_RELOAD), 0);
    /* The new generation's READY after STOPPING: nothing, no READY=1. */
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (d.procs[i].gen == 2) {
            send_slot(FOLIO_EV_READY, i);
            ck_assert_int_eq(nrun, 0);
        }
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_STOP), stop_at);
    ck_assert_int_eq(d.cur.id, 1);
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.healthy, 0);
    ck_assert_int_eq(c.ready, 0);
    /* A HUP now: ignored. */
    send_hup(0);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    /* The reload's timer, had it fired: nothing. */
    send_timer(FOLIO_T_RELOAD);
    ck_assert_int_eq(nrun, 0);
    /* The stop's deadline: what is left is killed. */
    now_ms = stop_at;
    send_timer(FOLIO_T_STOP);
    ck_assert_int_eq(count_kill(SIGKILL), 4);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (d.procs[i].state != FOLIO_WS_FREE)
            send_exit(i, SIGKILL);
    ck_assert_ptr_nonnull(find(FOLIO_ACT_EXIT));
    ck_assert_uint_eq(find(FOLIO_ACT_EXIT)->arg, 0);
}
END_TEST

START_TEST(test_reload_deadline)
{
    serving(1, 0);
    send_hup(0);
    now_ms = folio_dec_deadline(&d, FOLIO_T_RELOAD);
    ck_assert_uint_ge(now_ms, 100000 + FOLIO_DEC_RELOAD_MIN_MS);
    send_timer(FOLIO_T_RELOAD);
    ck_assert_ptr_nonnull(said("new workers not ready in time"));
    ck_assert_int_eq(count(FOLIO_ACT_DROP), 1);
    ck_assert_int_eq(count_kill(SIGTERM), 1); /* the starting new one */
    ck_assert_int_eq(d.next.id, 0);
    ck_assert_int_eq(d.cur.id, 1);
}
END_TEST

START_TEST(test_retired_killed_at_shutdown_timeout)
{
    uint64_t at;
    int old[2];

    serving(2, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, old, 2), 2);
    send_hup(0);
    all_ready(2);
    ck_assert_int_eq(count(FOLIO_ACT_RETIRE), 2);
    ck_assert_int_eq(count(FOLIO_ACT_SWITCH), 1);
    ck_assert_int_eq(d.procs[old[0]].state, FOLIO_WS_RETIRING);
    at = folio_dec_deadline(&d, FOLIO_T_KILL);
    ck_assert_uint_eq(at, now_ms + 3000 + FOLIO_DEC_KILL_GRACE_MS);
    /* One leaves in time; the other is stuck (SIGSTOP): killed. */
    send_exit(old[0], 0);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
    now_ms = at - 1;
    send_timer(FOLIO_T_KILL);
    ck_assert_int_eq(count_kill(SIGKILL), 0);
    now_ms = at;
    send_timer(FOLIO_T_KILL);
    ck_assert_int_eq(count_kill(SIGKILL), 1);
    ck_assert_int_eq(find(FOLIO_ACT_KILL)->slot, old[1]);
    ck_assert_ptr_nonnull(said("still draining after shutdown_timeout"));
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_KILL), 0);
    send_exit(old[1], SIGKILL);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0); /* told to go: no respawn */
}
END_TEST

START_TEST(test_fatal_exit_retried_with_backoff)
{
    struct folio_dec_counts c;
    uint64_t expect = FOLIO_DEC_FATAL_MS;
    int s[2], k, slot;

    serving(2, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 2), 2);
    slot = s[1];
    send_exit(slot, FOLIO_EXIT_FATAL << 8);
    ck_assert_ptr_nonnull(said("cannot start (exited with status 2): "
                               "retrying in 1 s; 1 of 2 workers serving"));
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
    ck_assert_ptr_nonnull(said("STATUS=serving generation 1 with 1 of 2 "
                               "workers (worker 1 exited with status 2"));
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.serving, 1);
    ck_assert_int_eq(c.n[FOLIO_WS_DOWN], 1);
    ck_assert_int_eq(c.healthy, 1);
    ck_assert_int_eq(c.ready, 0);
    /* Each retry waits twice as long, up to five minutes. */
    for (k = 0; k < 14; k++) {
        ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_RESPAWN),
                          now_ms + expect);
        now_ms += expect;
        send_timer(FOLIO_T_RESPAWN);
        ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
        slot = find(FOLIO_ACT_SPAWN)->slot;
        send_exit(slot, FOLIO_EXIT_FATAL << 8);
        ck_assert_ptr_nonnull(said("cannot start"));
        expect *= 2;
        if (expect > FOLIO_DEC_FATAL_MAX_MS)
            expect = FOLIO_DEC_FATAL_MAX_MS;
    }
    ck_assert_uint_eq(expect, FOLIO_DEC_FATAL_MAX_MS);
    /* It works again: whole, and said so. */
    now_ms += expect;
    send_timer(FOLIO_T_RESPAWN);
    slot = find(FOLIO_ACT_SPAWN)->slot;
    send_slot(FOLIO_EV_READY, slot);
    ck_assert_ptr_nonnull(said("STATUS=serving generation 1 with 2 workers"));
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.ready, 1);
    ck_assert_int_eq(c.n[FOLIO_WS_DOWN], 0);
}
END_TEST

START_TEST(test_fatal_at_start_stops)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_START);
    int s[2];

    e.gen = gen(1, 2, 3000, 0);
    run(e);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_STARTING, s, 2), 2);
    send_exit(s[0], FOLIO_EXIT_FATAL << 8);
    ck_assert_ptr_null(find(FOLIO_ACT_EXIT)); /* the other may start */
    send_exit(s[1], FOLIO_EXIT_FATAL << 8);
    ck_assert_ptr_nonnull(said("no worker could start: stopping"));
    ck_assert_ptr_nonnull(find(FOLIO_ACT_EXIT));
    ck_assert_uint_eq(find(FOLIO_ACT_EXIT)->arg, FOLIO_EXIT_FAILURE);
}
END_TEST

START_TEST(test_crash_backoff)
{
    int s[1] = {-1}, slot, k;
    uint64_t delay = FOLIO_DEC_BACKOFF_MS;
    const struct folio_dec_act *a;

    serving(1, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 1), 1);
    /* A long-lived worker crashes: replaced at once, and it is [crit]. */
    now_ms += 60000;
    send_exit(s[0], SIGSEGV);
    ck_assert_ptr_nonnull(a = said("crashed: killed by signal 11"));
    ck_assert_int_eq(a->level, FOLIO_LOG_CRIT);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
    ck_assert_int_eq(d.restarts, 1);
    slot = find(FOLIO_ACT_SPAWN)->slot;
    /* Dying before it is ready: 0.1 s, doubling. */
    for (k = 0; k < 4; k++) {
        send_exit(slot, 1 << 8);
        ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
        ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_RESPAWN),
                          now_ms + delay);
        now_ms += delay;
        send_timer(FOLIO_T_RESPAWN);
        ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
        slot = find(FOLIO_ACT_SPAWN)->slot;
        delay *= 2;
    }
}
END_TEST

START_TEST(test_watchdog)
{
    struct folio_dec_counts c;
    const struct folio_dec_act *a;
    uint64_t at;
    int s[2] = {-1, -1}, i, repl;

    serving(2, 2000);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 2), 2);
    at = folio_dec_deadline(&d, FOLIO_T_WATCHDOG);
    ck_assert_uint_gt(at, 0);
    ck_assert_uint_le(at, now_ms + 1000);
    /* Both beat until one stops at t0. */
    for (i = 0; i < 20; i++) {
        now_ms = folio_dec_deadline(&d, FOLIO_T_WATCHDOG);
        folio_dec_beat(&d, s[0], now_ms - 10);
        if (i < 4)
            folio_dec_beat(&d, s[1], now_ms - 10);
        send_timer(FOLIO_T_WATCHDOG);
        if (count(FOLIO_ACT_HUNG) > 0)
            break;
    }
    ck_assert_int_eq(count(FOLIO_ACT_HUNG), 1);
    a = find(FOLIO_ACT_HUNG);
    ck_assert_int_eq(a->slot, s[1]);
    ck_assert_uint_ge(a->arg, 2000);
    ck_assert_int_eq(count_kill(SIGABRT), 1);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1); /* replaced at once */
    repl = find(FOLIO_ACT_SPAWN)->slot;
    ck_assert_int_eq(d.procs[repl].index, d.procs[s[1]].index);
    ck_assert_uint_eq(d.worker_timeouts, 1);
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.n[FOLIO_WS_HUNG], 1);
    ck_assert_int_eq(c.serving, 1);
    /* Still there after the grace: SIGKILL. */
    now_ms += FOLIO_DEC_ABORT_GRACE_MS;
    send_timer(FOLIO_T_KILL);
    ck_assert_int_eq(count_kill(SIGKILL), 1);
    send_exit(s[1], SIGKILL);
    ck_assert_ptr_nonnull(a = said("killed by the watchdog"));
    ck_assert_int_eq(a->level, FOLIO_LOG_WARN);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0); /* already replaced */
    send_slot(FOLIO_EV_READY, repl);
    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.ready, 1);
    /* worker_timeout 0: no watchdog at all. */
    setup();
    serving(1, 0);
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_WATCHDOG), 0);
}
END_TEST

START_TEST(test_recycle)
{
    int s[1] = {-1}, r;

    serving(1, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 1), 1);
    send_slot(FOLIO_EV_RECYCLE, s[0]);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
    r = find(FOLIO_ACT_SPAWN)->slot;
    send_slot(FOLIO_EV_RECYCLE, s[0]); /* a replacement is starting */
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
    send_slot(FOLIO_EV_READY, r);
    ck_assert_int_eq(count(FOLIO_ACT_RETIRE), 1);
    ck_assert_int_eq(find(FOLIO_ACT_RETIRE)->slot, s[0]);
    ck_assert_uint_eq(d.recycles, 1);
    send_exit(s[0], 0);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
}
END_TEST

START_TEST(test_quit)
{
    serving(2, 0);
    send(FOLIO_EV_QUIT);
    ck_assert_int_eq(count_kill(SIGKILL), 2);
    ck_assert_ptr_nonnull(said("quitting now"));
    ck_assert_uint_eq(folio_dec_deadline(&d, FOLIO_T_STOP), 0);
}
END_TEST

START_TEST(test_spawn_failure_aborts_reload)
{
    serving(1, 0);
    spawn_fails = 1;
    send_hup(0);
    ck_assert_ptr_nonnull(said("reload failed: cannot start new workers"));
    ck_assert_int_eq(d.next.id, 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
}
END_TEST

START_TEST(test_adopter_round_robin)
{
    static struct folio_dec before;
    int s[3] = {-1, -1, -1}, a, b, c2;

    serving(3, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 3), 3);
    memcpy(&before, &d, sizeof(d));
    a = folio_dec_adopter(&d, s[0], -1);
    b = folio_dec_adopter(&d, s[0], a);
    c2 = folio_dec_adopter(&d, s[0], b);
    ck_assert_int_ne(a, s[0]);
    ck_assert_int_ne(b, s[0]);
    ck_assert_int_ne(a, b);
    ck_assert_int_eq(c2, a);
    /* The same question, the same answer: a query, d untouched. */
    ck_assert_int_eq(folio_dec_adopter(&d, s[0], a), b);
    ck_assert_int_eq(memcmp(&before, &d, sizeof(d)), 0);
    /* None but the one handing over: nobody. */
    setup();
    serving(1, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 1), 1);
    ck_assert_int_eq(folio_dec_adopter(&d, s[0], -1), -1);
}
END_TEST

/* What the world is told (the header's state, /healthz, /readyz). */
static void
published(int state, int healthy, int ready)
{
    struct folio_dec_counts c;

    folio_dec_counts(&d, &c);
    ck_assert_int_eq(c.state, state);
    ck_assert_int_eq(c.healthy, healthy);
    ck_assert_int_eq(c.ready, ready);
}

/*
 * An upgrading SIGHUP: the mode says so (published as reloading, healthy
 * and ready all along); the workers are looked after as while serving;
 * a second SIGHUP waits; the loop is left, and once out of it the exec.
 */
START_TEST(test_upgrading)
{
    int s[2] = {-1, -1}, r;

    serving(2, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 2), 2);
    send_hup(1);
    ck_assert_ptr_nonnull(said("reloading: the binary changed, upgrading"));
    ck_assert_int_eq(count(FOLIO_ACT_RELOADING), 1);
    ck_assert_int_eq(count(FOLIO_ACT_UPGRADE), 1);
    ck_assert_int_eq(count(FOLIO_ACT_EXEC), 0); /* not inside the loop */
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 0);
    ck_assert_int_eq(count(FOLIO_ACT_METRICS_OPEN), 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_UPGRADING);
    published(FOLIO_SS_RELOADING, 1, 1);
    /* Another SIGHUP: queued, for a failed exec. */
    send_hup(0);
    ck_assert_ptr_nonnull(said("upgrade in progress: SIGHUP queued"));
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD) + count(FOLIO_ACT_UPGRADE), 0);
    /* A recycling and a crash meanwhile: as while serving. */
    send_slot(FOLIO_EV_RECYCLE, s[0]);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
    r = find(FOLIO_ACT_SPAWN)->slot;
    now_ms += 60000;
    send_exit(s[1], SIGSEGV);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
    ck_assert_uint_eq(d.restarts, 1);
    send_slot(FOLIO_EV_READY, r);
    ck_assert_int_eq(count(FOLIO_ACT_RETIRE), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_UPGRADING);
    /* Out of the loop: the exec, which does not return. */
    send(FOLIO_EV_EXEC_DUE);
    ck_assert_int_eq(nrun, 1);
    ck_assert_int_eq(count(FOLIO_ACT_EXEC), 1);
    /* Had it returned: serving, and the queued SIGHUP runs. */
    exec_fails = 1;
    send(FOLIO_EV_EXEC_DUE);
    ck_assert_ptr_nonnull(said("reload failed: execve"));
    ck_assert_int_eq(count(FOLIO_ACT_METRICS_OPEN), 1); /* accepts again */
    ck_assert_ptr_nonnull(said("running the SIGHUP queued"));
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_RELOADING);
    /* An exec due now (a stray one) does nothing. */
    send(FOLIO_EV_EXEC_DUE);
    ck_assert_int_eq(nrun, 0);
    send(FOLIO_EV_UPGRADE_FAILED);
    ck_assert_int_eq(nrun, 0);
}
END_TEST

/* A TERM caught before the exec: the upgrade is abandoned, the stop runs. */
START_TEST(test_upgrade_abandoned)
{
    int i;

    serving(2, 0);
    send_hup(1);
    ck_assert_int_eq(d.mode, FOLIO_DM_UPGRADING);
    send(FOLIO_EV_TERM);
    ck_assert_ptr_nonnull(said("upgrade abandoned: the master is stopping"));
    /* Its metrics listener says 503 while it drains, as any stop's. */
    ck_assert_int_eq(count(FOLIO_ACT_METRICS_OPEN), 1);
    ck_assert_int_eq(count_kill(SIGTERM), 2);
    ck_assert_int_eq(d.mode, FOLIO_DM_STOPPING);
    send(FOLIO_EV_EXEC_DUE);
    ck_assert_int_eq(count(FOLIO_ACT_EXEC), 0);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (d.procs[i].state != FOLIO_WS_FREE)
            send_exit(i, 0);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 1);
}
END_TEST

/*
 * Stopping with nothing left: EXITING, and from then on no event applies
 * (the loop is over); the world is told the server stops.
 */
START_TEST(test_exiting)
{
    int s[2] = {-1, -1};

    serving(2, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 2), 2);
    send(FOLIO_EV_TERM);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 0);
    send_exit(s[0], 0);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_STOPPING);
    send_exit(s[1], 0);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 1);
    ck_assert_uint_eq(find(FOLIO_ACT_EXIT)->arg, 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_EXITING);
    published(FOLIO_SS_STOPPING, 0, 0);
    send_hup(0);
    ck_assert_int_eq(nrun, 0);
    send(FOLIO_EV_TERM);
    ck_assert_int_eq(nrun, 0);
    send(FOLIO_EV_CHILD);
    ck_assert_int_eq(nrun, 0);
    send_timer(FOLIO_T_STOP);
    ck_assert_int_eq(nrun, 0);
    /* A spawn that failed while stopping ends it the same way. */
    setup();
    serving(1, 0);
    send(FOLIO_EV_TERM);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_STOPPING, s, 1), 1);
    send_slot(FOLIO_EV_SPAWN_FAILED, s[0]);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_EXITING);
    /* And a stop with no worker at all exits at once. */
    setup();
    {
        struct folio_dec_ev e = ev_of(FOLIO_EV_START);

        e.gen = gen(1, 0, 3000, 0);
        run(e);
    }
    send(FOLIO_EV_QUIT);
    ck_assert_int_eq(count(FOLIO_ACT_EXIT), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_EXITING);
}
END_TEST

/* The signals that decide nothing about the workers are still decide's. */
START_TEST(test_other_signals)
{
    serving(1, 0);
    send(FOLIO_EV_REOPEN);
    ck_assert_int_eq(nrun, 1);
    ck_assert_int_eq(count(FOLIO_ACT_REOPEN), 1);
    send(FOLIO_EV_SNAPSHOT);
    ck_assert_int_eq(count(FOLIO_ACT_SNAPSHOT), 1);
    send(FOLIO_EV_CHILD);
    ck_assert_int_eq(nrun, 1);
    ck_assert_int_eq(count(FOLIO_ACT_REAP), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
}
END_TEST

/* What a slot's previous process said is not its new process's. */
START_TEST(test_stale_messages)
{
    struct folio_dec_ev e;
    int s[1] = {-1}, r;

    serving(1, 0);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 1), 1);
    now_ms += 60000;
    send_exit(s[0], SIGKILL);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 1);
    r = find(FOLIO_ACT_SPAWN)->slot;
    ck_assert_int_eq(d.procs[r].state, FOLIO_WS_STARTING);
    e = ev_of(FOLIO_EV_READY);
    e.slot = r;
    e.pid = d.procs[r].pid + 1; /* another process said it */
    run(e);
    ck_assert_int_eq(d.procs[r].state, FOLIO_WS_STARTING);
    send_slot(FOLIO_EV_READY, r);
    ck_assert_int_eq(d.procs[r].state, FOLIO_WS_READY);
    e = ev_of(FOLIO_EV_RECYCLE);
    e.slot = r;
    e.pid = d.procs[r].pid + 1;
    run(e);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
}
END_TEST

/*
 * A reload is in progress from its SIGHUP until it ends (a failed one:
 * test_failed_reload_then_queued); a generation built when none was
 * asked for is dropped.
 */
START_TEST(test_reloading_mode)
{
    struct folio_dec_ev e = ev_of(FOLIO_EV_GEN_BUILT);

    serving(1, 0);
    e.gen = gen(9, 1, 3000, 0);
    run(e);
    ck_assert_int_eq(count(FOLIO_ACT_DROP), 1);
    ck_assert_uint_eq(find(FOLIO_ACT_DROP)->gen, 9);
    ck_assert_int_eq(count(FOLIO_ACT_SPAWN), 0);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    send_hup(0);
    ck_assert_int_eq(d.mode, FOLIO_DM_RELOADING);
    ck_assert_uint_eq(d.next.id, 2);
    all_ready(2);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    ck_assert_uint_eq(d.next.id, 0);
}
END_TEST

/* The text an image of the previous release wrote (its format is kept). */
static const char older_image[] = "folio-dec 1\n"
                                  "mode 1 1 0\n"
                                  "cur 1 2 3000 2000\n"
                                  "counters 1 2 3 4 5\n"
                                  "proc 0 2 1000 0 1 100000 100500 0 -1 "
                                  "2000 3000\n"
                                  "proc 1 2 1001 1 1 100000 100500 0 -1 "
                                  "2000 3000\n"
                                  "end\n";

START_TEST(test_save_restore)
{
    static struct folio_dec copy, bad;
    static char text[1 << 16];
    char err[256];
    size_t n;
    int i, s[2] = {-1, -1};

    serving(2, 2000);
    ck_assert_int_eq(slots_of(1, FOLIO_WS_READY, s, 2), 2);
    send_exit(s[1], FOLIO_EXIT_FATAL << 8);
    d.restarts = 7;
    d.worker_timeouts = 9;
    /* Only an upgrade saves. */
    ck_assert_uint_eq(folio_dec_save(&d, text, sizeof(text)), 0);
    send_hup(1);
    n = folio_dec_save(&d, text, sizeof(text));
    ck_assert_uint_gt(n, 0);
    /* What every image reads: "serving", the counters in their order. */
    ck_assert_ptr_nonnull(strstr(text, "\nmode 1 1 0\n"));
    ck_assert_ptr_nonnull(strstr(text, "\ncounters 7 0 0 0 9\n"));
    /* Too small a buffer: nothing. */
    ck_assert_uint_eq(folio_dec_save(&d, text, 40), 0);
    n = folio_dec_save(&d, text, sizeof(text));
    folio_dec_init(&copy);
    ck_assert_msg(folio_dec_restore(&copy, text, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_int_eq(copy.mode, FOLIO_DM_UPGRADING);
    ck_assert_uint_eq(copy.cur.id, 1);
    ck_assert_int_eq(copy.cur.nworkers, 2);
#define SAME(field, key, kind, family, help)                                   \
    ck_assert_uint_eq(copy.field, d.field);
    FOLIO_MASTER_COUNTERS(SAME)
#undef SAME
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        ck_assert_int_eq(copy.procs[i].state, d.procs[i].state);
        ck_assert_int_eq(copy.procs[i].pid, d.procs[i].pid);
        ck_assert_uint_eq(copy.procs[i].spawned_ms, d.procs[i].spawned_ms);
    }
    ck_assert_uint_eq(copy.idx[1].respawn_at, d.idx[1].respawn_at);
    ck_assert_int_eq(copy.idx[1].fatal, 1);
    ck_assert_str_eq(copy.idx[1].why, d.idx[1].why);
    /* Garbage is refused. */
    folio_dec_init(&bad);
    ck_assert_int_ne(folio_dec_restore(&bad, "folio-dec 1\nmode x\n", err,
                                       sizeof(err)),
                     0);
    ck_assert_int_ne(folio_dec_restore(&bad, "folio-dec 1\n", err,
                                       sizeof(err)),
                     0);
    folio_dec_init(&bad);
    ck_assert_int_ne(folio_dec_restore(&bad,
                                       "folio-dec 1\nmode 1 1 0\n"
                                       "cur 1 2 3000 2000\ncounters 1 2\n"
                                       "end\n",
                                       err, sizeof(err)),
                     0);
    ck_assert_ptr_nonnull(strstr(err, "counters 1 2"));
    folio_dec_init(&bad);
    ck_assert_int_ne(folio_dec_restore(&bad,
                                       "folio-dec 1\nmode 1 1 0\n"
                                       "cur 1 2 3000 2000\n"
                                       "proc 0 6 1000 0 1 1 1 0 -1 0 0\n"
                                       "end\n",
                                       err, sizeof(err)),
                     0); /* DOWN is no process's state */
    /* What the previous release wrote is read. */
    folio_dec_init(&bad);
    ck_assert_msg(folio_dec_restore(&bad, older_image, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_eq(bad.reloads, 2);
    ck_assert_uint_eq(bad.worker_timeouts, 5);
    ck_assert_int_eq(bad.procs[1].pid, 1001);
    ck_assert_int_eq(bad.mode, FOLIO_DM_UPGRADING);
    /*
     * The restored state decides on: the workers that exited during the
     * exec are reaped, then the new generation is started; the retry
     * comes.
     */
    memcpy(&d, &copy, sizeof(d));
    send(FOLIO_EV_RESUME);
    ck_assert_int_eq(count(FOLIO_ACT_REAP), 1);
    ck_assert_int_eq(count(FOLIO_ACT_RELOAD), 1);
    ck_assert_int_lt(find(FOLIO_ACT_REAP) - run_acts,
                     find(FOLIO_ACT_RELOAD) - run_acts);
    ck_assert_ptr_nonnull(said("upgraded: generation 1 serves on"));
    ck_assert_int_eq(d.mode, FOLIO_DM_RELOADING);
    all_ready(2);
    ck_assert_int_eq(count(FOLIO_ACT_SWITCH), 1);
    ck_assert_int_eq(d.mode, FOLIO_DM_SERVING);
    ck_assert_uint_eq(d.reloads, 1);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("decide");
    TCase *tc = tcase_create("decide");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_start_ready);
    tcase_add_test(tc, test_hups_queued_and_coalesced);
    tcase_add_test(tc, test_hup_while_starting_runs_after);
    tcase_add_test(tc, test_failed_reload_then_queued);
    tcase_add_test(tc, test_term_during_reload);
    tcase_add_test(tc, test_reload_deadline);
    tcase_add_test(tc, test_retired_killed_at_shutdown_timeout);
    tcase_add_test(tc, test_fatal_exit_retried_with_backoff);
    tcase_add_test(tc, test_fatal_at_start_stops);
    tcase_add_test(tc, test_crash_backoff);
    tcase_add_test(tc, test_watchdog);
    tcase_add_test(tc, test_recycle);
    tcase_add_test(tc, test_quit);
    tcase_add_test(tc, test_spawn_failure_aborts_reload);
    tcase_add_test(tc, test_adopter_round_robin);
    tcase_add_test(tc, test_save_restore);
    tcase_add_test(tc, test_upgrading);
    tcase_add_test(tc, test_upgrade_abandoned);
    tcase_add_test(tc, test_exiting);
    tcase_add_test(tc, test_other_signals);
    tcase_add_test(tc, test_stale_messages);
    tcase_add_test(tc, test_reloading_mode);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
