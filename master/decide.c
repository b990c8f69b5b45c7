/*
 * decide.c - the master's decisions (see decide.h): a state machine over
 * the workers and the generations.  Each handler below reads the event,
 * changes the state and appends actions; nothing here touches the world.
 *
 * The states of a worker process, as the master sees them:
 *   STARTING --READY--> READY --(reload, recycling)--> RETIRING --exit--> FREE
 *      |                  |--(TERM)--> STOPPING --exit--> FREE
 *      +--(heartbeat older than worker_timeout)--> HUNG --SIGABRT, then
 *                                                  SIGKILL--> FREE
 * and of the master (enum folio_dec_mode): STARTING -> SERVING <->
 * RELOADING, SERVING -> UPGRADING -> (exec) or back to SERVING, any ->
 * STOPPING -> EXITING.  Whether a reload is in progress is the mode's to
 * say (RELOADING); d->next is the generation it starts, once built.
 */
#include "config.h"

#include <sys/wait.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/decide.h"
#include "src/err.h"
#include "src/log.h"

static void reload_begin(struct folio_dec *d, int changed);

/* ---- actions ---- */

static struct folio_dec_act *
act(struct folio_dec *d, int type)
{
    struct folio_dec_act *a;

    /* Sized for the largest step (every slot signalled, retired, ...). */
    if (d->nacts >= FOLIO_DEC_MAX_ACTS)
        d->nacts = FOLIO_DEC_MAX_ACTS - 1;
    a = &d->acts[d->nacts++];
    memset(a, 0, sizeof(*a));
    a->type = type;
    a->slot = -1;
    return a;
}

static void say(struct folio_dec *d, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say(struct folio_dec *d, int level, const char *fmt, ...)
{
    struct folio_dec_act *a = act(d, FOLIO_ACT_LOG);
    va_list ap;

    a->level = level;
    va_start(ap, fmt);
    vsnprintf(a->text, sizeof(a->text), fmt, ap);
    va_end(ap);
}

static void notify(struct folio_dec *d, int ready, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
notify(struct folio_dec *d, int ready, const char *fmt, ...)
{
    struct folio_dec_act *a = act(d, FOLIO_ACT_NOTIFY);
    va_list ap;

    a->arg = (uint64_t)ready;
    va_start(ap, fmt);
    vsnprintf(a->text, sizeof(a->text), fmt, ap);
    va_end(ap);
}

static void
kill_proc(struct folio_dec *d, int slot, int sig)
{
    struct folio_dec_act *a = act(d, FOLIO_ACT_KILL);

    a->slot = slot;
    a->sig = sig;
}

/* ---- the process table ---- */

static int
live(const struct folio_dec_proc *p)
{
    return p->state != FOLIO_WS_FREE;
}

int
folio_dec_live(const struct folio_dec *d, int slot)
{
    return slot >= 0 && slot < FOLIO_MAX_SLOTS && live(&d->procs[slot]);
}

static int
nlive(const struct folio_dec *d, uint64_t gen)
{
    int i, n = 0;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (live(&d->procs[i]) && (gen == 0 || d->procs[i].gen == gen))
            n++;
    return n;
}

/* Whether generation `gen` is the one a reload is starting. */
static int
of_next(const struct folio_dec *d, uint64_t gen)
{
    return d->mode == FOLIO_DM_RELOADING && gen != 0 && gen == d->next.id;
}

/* The slot of the process starting to replace `slot` (recycling), or -1. */
static int
replacement_of(const struct folio_dec *d, int slot)
{
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (live(&d->procs[i]) && d->procs[i].replaces == slot)
            return i;
    return -1;
}

/*
 * `slot` is gone (dead, or hung): a replacement already starting for it
 * takes over, replacing no one now.  Whether there was one.
 */
static int
take_over(struct folio_dec *d, int slot)
{
    int r = replacement_of(d, slot);

    if (r < 0)
        return 0;
    d->procs[r].replaces = -1;
    return 1;
}

/* Logical workers of generation g with a process in `state`. */
static int
nindices(const struct folio_dec *d, const struct folio_dec_gen *g, int state)
{
    int i, k, n = 0;

    for (k = 0; k < g->nworkers; k++)
        for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
            const struct folio_dec_proc *p = &d->procs[i];

            if (p->state == state && p->gen == g->id && p->index == k) {
                n++;
                break;
            }
        }
    return n;
}

/* The watchdog looks this often: an eighth of the timeout, 50 ms..1 s. */
static uint64_t
watch_period(uint32_t timeout_ms)
{
    uint64_t p = timeout_ms / 8;

    return p < 50 ? 50 : p > 1000 ? 1000 : p;
}

/* Look at the heartbeats next at now + the shortest period, or never. */
static void
arm_watchdog(struct folio_dec *d, uint64_t now)
{
    uint64_t period = 0;
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        const struct folio_dec_proc *p = &d->procs[i];

        if (live(p) && p->state != FOLIO_WS_HUNG && p->timeout_ms != 0 &&
            (period == 0 || watch_period(p->timeout_ms) < period))
            period = watch_period(p->timeout_ms);
    }
    d->watchdog_at = period != 0 ? now + period : 0;
}

/* Start worker `index` of generation g; its slot, or -1. */
static int
spawn(struct folio_dec *d, const struct folio_dec_gen *g, int index,
      int replaces, uint64_t now)
{
    struct folio_dec_proc *p;
    struct folio_dec_act *a;
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (!live(&d->procs[i]))
            break;
    if (i == FOLIO_MAX_SLOTS) {
        say(d, FOLIO_LOG_ERROR, "no free worker slot for worker %d", index);
        return -1;
    }
    p = &d->procs[i];
    memset(p, 0, sizeof(*p));
    p->state = FOLIO_WS_STARTING;
    p->index = index;
    p->gen = g->id;
    p->spawned_ms = now;
    p->replaces = replaces;
    p->timeout_ms = g->worker_timeout_ms;
    p->shutdown_ms = g->shutdown_ms;
    if (p->timeout_ms != 0 &&
        (d->watchdog_at == 0 || d->watchdog_at > now + watch_period(p->timeout_ms)))
        d->watchdog_at = now + watch_period(p->timeout_ms);
    a = act(d, FOLIO_ACT_SPAWN);
    a->slot = i;
    a->index = index;
    a->gen = g->id;
    return i;
}

/* Tell p to go: hand its connections over (or just stop, if starting). */
static void
retire(struct folio_dec *d, int slot, uint64_t now)
{
    struct folio_dec_proc *p = &d->procs[slot];

    if (p->state != FOLIO_WS_STARTING && p->state != FOLIO_WS_READY)
        return;
    if (p->state == FOLIO_WS_STARTING) {
        /* Not serving yet: it has nothing to hand over. */
        kill_proc(d, slot, SIGTERM);
        p->state = FOLIO_WS_STOPPING;
    } else {
        act(d, FOLIO_ACT_RETIRE)->slot = slot;
        p->state = FOLIO_WS_RETIRING;
    }
    /* Killed by the master at shutdown_timeout, stuck or not. */
    p->kill_at = now + p->shutdown_ms + FOLIO_DEC_KILL_GRACE_MS;
}

/* ---- what the service manager and the operator are told ---- */

static void
status_text(const struct folio_dec *d, char *buf, size_t len)
{
    int serving = nindices(d, &d->cur, FOLIO_WS_READY), k;

    if (serving >= d->cur.nworkers) {
        snprintf(buf, len, "serving generation %llu with %d workers",
                 (unsigned long long)d->cur.id, d->cur.nworkers);
        return;
    }
    for (k = 0; k < d->cur.nworkers && k < FOLIO_MAX_WORKERS; k++)
        if (d->idx[k].why[0] != '\0')
            break;
    if (k < d->cur.nworkers && k < FOLIO_MAX_WORKERS)
        snprintf(buf, len,
                 "serving generation %llu with %d of %d workers (worker %d "
                 "%s)",
                 (unsigned long long)d->cur.id, serving, d->cur.nworkers, k,
                 d->idx[k].why);
    else
        snprintf(buf, len, "serving generation %llu with %d of %d workers",
                 (unsigned long long)d->cur.id, serving, d->cur.nworkers);
}

/* READY=1 and the status: the serving generation is whole (again). */
static void
announce_ready(struct folio_dec *d)
{
    status_text(d, d->status, sizeof(d->status));
    d->status_serving = nindices(d, &d->cur, FOLIO_WS_READY);
    notify(d, 1, "READY=1\nSTATUS=%s", d->status);
    act(d, FOLIO_ACT_READY)->gen = d->cur.id;
}

/* A STATUS= line when the count of serving workers changed. */
static void
update_status(struct folio_dec *d)
{
    int serving;

    if (!d->ever_ready || d->mode == FOLIO_DM_STOPPING)
        return;
    serving = nindices(d, &d->cur, FOLIO_WS_READY);
    if (serving == d->status_serving)
        return;
    d->status_serving = serving;
    status_text(d, d->status, sizeof(d->status));
    notify(d, 0, "STATUS=%s", d->status);
}

/* ---- reloads ---- */

/* After a reload ended (or the start did): run a queued SIGHUP. */
static void
after_reload(struct folio_dec *d)
{
    if (!d->hup_pending || d->mode != FOLIO_DM_SERVING)
        return;
    d->hup_pending = 0;
    say(d, FOLIO_LOG_NOTICE, "running the SIGHUP queued during the reload");
    reload_begin(d, d->hup_changed);
    d->hup_changed = 0;
}

/* The reload (or upgrade) in progress failed: serving on. */
static void
reload_failed(struct folio_dec *d, const char *why)
{
    d->mode = FOLIO_DM_SERVING;
    d->reload_failures++;
    say(d, FOLIO_LOG_ERROR, "reload failed: %s; still serving generation %llu",
        why, (unsigned long long)d->cur.id);
    snprintf(d->status, sizeof(d->status),
             "reload failed: %s; serving generation %llu", why,
             (unsigned long long)d->cur.id);
    d->status_serving = nindices(d, &d->cur, FOLIO_WS_READY);
    notify(d, 1, "READY=1\nSTATUS=%s", d->status);
    after_reload(d);
}

/* The generation being started cannot be: its workers go. */
static void
reload_abort(struct folio_dec *d, const struct folio_dec_ev *ev,
             const char *why)
{
    uint64_t gen = d->next.id;
    int i;

    if (d->mode != FOLIO_DM_RELOADING)
        return;
    /* Ready ones may have taken connections: they hand them back. */
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (live(&d->procs[i]) && d->procs[i].gen == gen)
            retire(d, i, ev->now_ms);
    if (gen != 0)
        act(d, FOLIO_ACT_DROP)->gen = gen;
    memset(&d->next, 0, sizeof(d->next));
    d->reload_at = 0;
    reload_failed(d, why);
}

/* A SIGHUP served: a new generation, or first the binary on disk. */
static void
reload_begin(struct folio_dec *d, int changed)
{
    say(d, FOLIO_LOG_NOTICE, changed ? "reloading: the binary changed, "
                                       "upgrading to it"
                                     : "reloading");
    act(d, FOLIO_ACT_RELOADING);
    d->mode = changed ? FOLIO_DM_UPGRADING : FOLIO_DM_RELOADING;
    act(d, changed ? FOLIO_ACT_UPGRADE : FOLIO_ACT_RELOAD);
}

static void
on_hup(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    static const char *const busy[] = {
        [FOLIO_DM_STARTING] = "starting",
        [FOLIO_DM_RELOADING] = "reload in progress",
        [FOLIO_DM_UPGRADING] = "upgrade in progress",
    };

    switch (d->mode) {
    case FOLIO_DM_STOPPING:
        say(d, FOLIO_LOG_NOTICE, "stopping: SIGHUP ignored");
        return;
    case FOLIO_DM_STARTING:
    case FOLIO_DM_RELOADING:
    case FOLIO_DM_UPGRADING:
        /*
         * Never lost: several coalesce into one, run when this ends.  An
         * upgrade that succeeds needs none: the next image reloads from
         * the configuration as it is then.
         */
        if (!d->hup_pending)
            say(d, FOLIO_LOG_NOTICE, "%s: SIGHUP queued", busy[d->mode]);
        d->hup_pending = 1;
        d->hup_changed |= ev->changed;
        return;
    }
    reload_begin(d, ev->changed);
}

static void
on_gen_built(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    uint64_t ms;
    int k;

    if (d->mode != FOLIO_DM_RELOADING || d->next.id != 0) {
        act(d, FOLIO_ACT_DROP)->gen = ev->gen.id;
        return;
    }
    d->next = ev->gen;
    ms = d->next.shutdown_ms > FOLIO_DEC_RELOAD_MIN_MS
             ? d->next.shutdown_ms
             : FOLIO_DEC_RELOAD_MIN_MS;
    d->reload_at = ev->now_ms + ms;
    for (k = 0; k < d->next.nworkers; k++)
        if (spawn(d, &d->next, k, -1, ev->now_ms) < 0) {
            reload_abort(d, ev, "cannot start new workers");
            return;
        }
}

/* Every new worker is ready: the new generation serves. */
static void
switch_gen(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    struct folio_dec_act *a;
    uint64_t old = d->cur.id;
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (live(&d->procs[i]) && d->procs[i].gen == old)
            retire(d, i, ev->now_ms);
    for (i = 0; i < FOLIO_MAX_WORKERS; i++) {
        memset(&d->idx[i], 0, sizeof(d->idx[i]));
        d->idx[i].replaces = -1;
    }
    d->cur = d->next;
    memset(&d->next, 0, sizeof(d->next));
    d->reload_at = 0;
    d->mode = FOLIO_DM_SERVING;
    d->reloads++;
    a = act(d, FOLIO_ACT_SWITCH);
    a->gen = d->cur.id;
    a->arg = old;
    say(d, FOLIO_LOG_NOTICE, "reloaded: generation %llu ready with %d workers",
        (unsigned long long)d->cur.id, d->cur.nworkers);
    announce_ready(d);
    after_reload(d);
}

/* ---- upgrades ---- */

/* Out of the loop, nothing caught left behind: exec, if still due. */
static void
on_exec_due(struct folio_dec *d)
{
    if (d->mode == FOLIO_DM_UPGRADING)
        act(d, FOLIO_ACT_EXEC);
}

/* The image an upgrade executed took the state over: on with it. */
static void
on_resume(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    if (d->mode != FOLIO_DM_UPGRADING)
        return;
    status_text(d, d->status, sizeof(d->status));
    d->status_serving = nindices(d, &d->cur, FOLIO_WS_READY);
    arm_watchdog(d, ev->now_ms);
    /* Workers that exited during the exec: reaped first. */
    act(d, FOLIO_ACT_REAP);
    /* The reload the upgrade began: its generation, from this image. */
    say(d, FOLIO_LOG_NOTICE,
        "upgraded: generation %llu serves on; starting the next from the "
        "new binary",
        (unsigned long long)d->cur.id);
    d->mode = FOLIO_DM_RELOADING;
    act(d, FOLIO_ACT_RELOAD);
}

/* ---- workers ---- */

/* Whether ev (READY, RECYCLE) comes from the process its slot holds. */
static int
from_slot(const struct folio_dec *d, const struct folio_dec_ev *ev)
{
    const struct folio_dec_proc *p = &d->procs[ev->slot];

    return live(p) && p->pid != 0 && p->pid == ev->pid;
}

static void
on_ready(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    struct folio_dec_proc *p = &d->procs[ev->slot];

    /*
     * A worker told to stop (or found hung) that still says ready, or one
     * gone whose slot another took.
     */
    if (p->state != FOLIO_WS_STARTING || !from_slot(d, ev))
        return;
    p->state = FOLIO_WS_READY;
    if (p->replaces >= 0) {
        struct folio_dec_proc *old = &d->procs[p->replaces];

        if (live(old) && old->index == p->index) {
            say(d, FOLIO_LOG_INFO, "worker %d (pid %ld) replaces pid %ld",
                p->index, p->pid, old->pid);
            retire(d, p->replaces, ev->now_ms);
            d->recycles++;
        }
        p->replaces = -1;
    }
    if (of_next(d, p->gen)) {
        if (nindices(d, &d->next, FOLIO_WS_READY) >= d->next.nworkers)
            switch_gen(d, ev);
        return;
    }
    if (p->gen != d->cur.id)
        return;
    if (p->index < FOLIO_MAX_WORKERS) {
        d->idx[p->index].fatal = 0;
        d->idx[p->index].why[0] = '\0';
    }
    if (d->mode == FOLIO_DM_STARTING &&
        nindices(d, &d->cur, FOLIO_WS_READY) >= d->cur.nworkers) {
        d->mode = FOLIO_DM_SERVING;
        d->ever_ready = 1;
        say(d, FOLIO_LOG_NOTICE, "ready");
        announce_ready(d);
        after_reload(d);
        return;
    }
    update_status(d);
}

static void
on_recycle(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    const struct folio_dec_proc *p = &d->procs[ev->slot];

    /* Not while a new generation starts: it replaces every worker. */
    if ((d->mode != FOLIO_DM_SERVING && d->mode != FOLIO_DM_UPGRADING) ||
        !from_slot(d, ev) || p->gen != d->cur.id ||
        p->state != FOLIO_WS_READY || replacement_of(d, ev->slot) >= 0)
        return;
    spawn(d, &d->cur, p->index, ev->slot, ev->now_ms);
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

const char *
folio_dec_describe(int st, char *buf, size_t len)
{
    if (WIFEXITED(st))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(st),
                 strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
    else
        snprintf(buf, len, "ended with status 0x%x", st);
    return buf;
}

static const char *
duration(uint64_t ms, char *buf, size_t len)
{
    if (ms < 1000)
        snprintf(buf, len, "%llu ms", (unsigned long long)ms);
    else if (ms < 120000)
        snprintf(buf, len, "%llu s", (unsigned long long)(ms / 1000));
    else
        snprintf(buf, len, "%llu min", (unsigned long long)(ms / 60000));
    return buf;
}

/* The replacement to start for index k: the slot it replaces, if any. */
static int
still_replacing(const struct folio_dec *d, int slot)
{
    return slot >= 0 && live(&d->procs[slot]) &&
                   d->procs[slot].state == FOLIO_WS_READY
               ? slot
               : -1;
}

/* The n-th consecutive wait (n >= 1): `first`, doubling, at most `max`. */
static uint64_t
backoff(uint64_t first, uint64_t max, int n)
{
    uint64_t delay = first;

    while (--n > 0 && delay < max)
        delay *= 2;
    return delay < max ? delay : max;
}

/*
 * A worker of the serving generation is gone (dead, or hung): start
 * another now, or after a backoff.  `fatal`: it exited FOLIO_EXIT_FATAL;
 * `early`: it died starting, or soon after.
 */
static void
restart(struct folio_dec *d, const struct folio_dec_ev *ev,
        const struct folio_dec_proc *dead, const char *how, int fatal,
        int early)
{
    struct folio_dec_index *ix;
    char when[32];
    uint64_t delay;
    int k = dead->index;

    if (k >= d->cur.nworkers || k >= FOLIO_MAX_WORKERS)
        return;
    ix = &d->idx[k];
    ix->replaces = still_replacing(d, dead->replaces);
    if (fatal) {
        ix->fatal++;
        delay = backoff(FOLIO_DEC_FATAL_MS, FOLIO_DEC_FATAL_MAX_MS, ix->fatal);
        duration(delay, when, sizeof(when));
        snprintf(ix->why, sizeof(ix->why), "%s, retried in %s", how, when);
        say(d, FOLIO_LOG_ERROR,
            "worker %d cannot start (%s): retrying in %s; %d of %d workers "
            "serving",
            k, how, when, nindices(d, &d->cur, FOLIO_WS_READY),
            d->cur.nworkers);
    } else {
        ix->fails = early ? ix->fails + 1 : 0;
        if (ix->fails == 0) {
            d->restarts++;
            spawn(d, &d->cur, k, ix->replaces, ev->now_ms);
            return;
        }
        delay =
            backoff(FOLIO_DEC_BACKOFF_MS, FOLIO_DEC_BACKOFF_MAX_MS, ix->fails);
        snprintf(ix->why, sizeof(ix->why), "%s, restarted in %s", how,
                 duration(delay, when, sizeof(when)));
        say(d, FOLIO_LOG_WARN, "worker %d died %s: respawning in %llu ms", k,
            dead->state == FOLIO_WS_STARTING ? "before it was ready"
                                             : "soon after starting",
            (unsigned long long)delay);
    }
    ix->respawn_at = ev->now_ms + delay;
    update_status(d);
}

static void stop(struct folio_dec *d, const struct folio_dec_ev *ev, int quit);

/* Stopping, and no worker is left: the master exits. */
static void
exit_if_done(struct folio_dec *d)
{
    if (d->mode != FOLIO_DM_STOPPING || nlive(d, 0) > 0)
        return;
    d->mode = FOLIO_DM_EXITING;
    act(d, FOLIO_ACT_EXIT)->arg = (uint64_t)d->exit_code;
}

static void
on_exit_ev(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    struct folio_dec_proc dead = d->procs[ev->slot];
    char how[128], why[192];
    int st = ev->status, expected, fatal;

    if (!live(&dead))
        return;
    memset(&d->procs[ev->slot], 0, sizeof(dead));
    folio_dec_describe(st, how, sizeof(how));
    expected = dead.state == FOLIO_WS_RETIRING ||
               dead.state == FOLIO_WS_STOPPING || d->mode == FOLIO_DM_STOPPING;
    fatal = WIFEXITED(st) && WEXITSTATUS(st) == FOLIO_EXIT_FATAL;
    if (dead.state == FOLIO_WS_HUNG)
        say(d, FOLIO_LOG_WARN, "worker %d (pid %ld) %s: killed by the "
            "watchdog", dead.index, dead.pid, how);
    else if (crashed(st))
        say(d, FOLIO_LOG_CRIT, "worker %d (pid %ld) crashed: %s", dead.index,
            dead.pid, how);
    else if (expected && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        say(d, FOLIO_LOG_INFO, "worker %d (pid %ld) %s", dead.index, dead.pid,
            how);
    else
        say(d, FOLIO_LOG_WARN, "worker %d (pid %ld) %s", dead.index, dead.pid,
            how);

    if (d->mode == FOLIO_DM_STOPPING) {
        exit_if_done(d);
        return;
    }
    if (dead.state == FOLIO_WS_RETIRING || dead.state == FOLIO_WS_STOPPING ||
        dead.state == FOLIO_WS_HUNG) {
        /* Told to go, or replaced when it hung: nothing to start. */
        update_status(d);
        return;
    }
    if (of_next(d, dead.gen)) {
        snprintf(why, sizeof(why), "a new worker %s", how);
        reload_abort(d, ev, why);
        return;
    }
    if (dead.gen != d->cur.id || take_over(d, ev->slot))
        return;
    if (fatal && d->mode == FOLIO_DM_STARTING && nlive(d, d->cur.id) == 0) {
        say(d, FOLIO_LOG_CRIT, "no worker could start: stopping");
        d->exit_code = FOLIO_EXIT_FAILURE;
        stop(d, ev, 0);
        return;
    }
    restart(d, ev, &dead, how, fatal,
            dead.state == FOLIO_WS_STARTING ||
                ev->now_ms - dead.spawned_ms < FOLIO_DEC_EARLY_MS);
}

static void
on_spawned(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    struct folio_dec_proc *p = &d->procs[ev->slot];

    if (live(p))
        p->pid = ev->pid;
}

static void
on_spawn_failed(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    struct folio_dec_proc dead = d->procs[ev->slot];

    if (!live(&dead))
        return;
    memset(&d->procs[ev->slot], 0, sizeof(dead));
    if (of_next(d, dead.gen)) {
        reload_abort(d, ev, "cannot start new workers");
        return;
    }
    if (d->mode == FOLIO_DM_STOPPING) {
        exit_if_done(d);
        return;
    }
    if (dead.gen == d->cur.id)
        restart(d, ev, &dead, "could not be forked", 0, 1);
}

/* ---- stopping ---- */

static void
stop(struct folio_dec *d, const struct folio_dec_ev *ev, int quit)
{
    int i;

    if (d->mode == FOLIO_DM_STOPPING && (!quit || d->quitting))
        return;
    if (d->mode == FOLIO_DM_UPGRADING) {
        say(d, FOLIO_LOG_NOTICE, "upgrade abandoned: the master is stopping");
        act(d, FOLIO_ACT_METRICS_OPEN); /* its 503s, while it drains */
    }
    if (quit) {
        d->quitting = 1;
        say(d, FOLIO_LOG_NOTICE, "quitting now");
    } else {
        say(d, FOLIO_LOG_NOTICE, "stopping: draining connections");
    }
    if (d->mode != FOLIO_DM_STOPPING) {
        notify(d, 0, "STOPPING=1\nSTATUS=%s",
               quit ? "quitting now" : "draining connections");
        act(d, FOLIO_ACT_CLOSE_LISTENERS);
    }
    d->mode = FOLIO_DM_STOPPING;
    d->hup_pending = 0;
    d->reload_at = 0;
    for (i = 0; i < FOLIO_MAX_WORKERS; i++)
        d->idx[i].respawn_at = 0;
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        struct folio_dec_proc *p = &d->procs[i];

        if (!live(p))
            continue;
        kill_proc(d, i, quit ? SIGKILL : SIGTERM);
        if (p->state != FOLIO_WS_HUNG)
            p->state = FOLIO_WS_STOPPING;
    }
    if (!quit)
        d->stop_at = ev->now_ms + d->cur.shutdown_ms + FOLIO_DEC_KILL_GRACE_MS;
    exit_if_done(d);
}

/* ---- timers ---- */

static void
hung(struct folio_dec *d, const struct folio_dec_ev *ev, int slot,
     uint64_t stalled)
{
    struct folio_dec_proc *p = &d->procs[slot];
    struct folio_dec_act *a;
    int was = p->state;

    d->worker_timeouts++;
    a = act(d, FOLIO_ACT_HUNG);
    a->slot = slot;
    a->arg = stalled;
    kill_proc(d, slot, SIGABRT);
    p->state = FOLIO_WS_HUNG;
    p->kill_at = ev->now_ms + FOLIO_DEC_ABORT_GRACE_MS;
    if (was != FOLIO_WS_STARTING && was != FOLIO_WS_READY)
        return; /* told to go already: nothing to replace */
    if (of_next(d, p->gen)) {
        reload_abort(d, ev, "a new worker hung");
        return;
    }
    if (p->gen != d->cur.id || d->mode == FOLIO_DM_STOPPING ||
        take_over(d, slot))
        return;
    d->restarts++;
    spawn(d, &d->cur, p->index, still_replacing(d, p->replaces), ev->now_ms);
}

static void
on_watchdog(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    uint64_t now = ev->now_ms, last;
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        struct folio_dec_proc *p = &d->procs[i];

        if (!live(p) || p->state == FOLIO_WS_HUNG || p->timeout_ms == 0)
            continue;
        last = p->beat_ms > p->spawned_ms ? p->beat_ms : p->spawned_ms;
        if (now >= last && now - last >= p->timeout_ms)
            hung(d, ev, i, now - last);
    }
    arm_watchdog(d, now);
}

static void
on_kill_due(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        struct folio_dec_proc *p = &d->procs[i];

        if (!live(p) || p->kill_at == 0 || p->kill_at > ev->now_ms)
            continue;
        if (p->state == FOLIO_WS_HUNG)
            say(d, FOLIO_LOG_WARN,
                "worker %d (pid %ld) still there %u ms after SIGABRT: killed",
                p->index, p->pid, FOLIO_DEC_ABORT_GRACE_MS);
        else
            say(d, FOLIO_LOG_WARN,
                "worker %d (pid %ld) still draining after shutdown_timeout "
                "(%u ms): killed",
                p->index, p->pid, p->shutdown_ms);
        kill_proc(d, i, SIGKILL);
        p->kill_at = 0;
    }
}

static void
on_respawn_due(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    int k, i, covered;

    for (k = 0; k < FOLIO_MAX_WORKERS; k++) {
        struct folio_dec_index *ix = &d->idx[k];

        if (ix->respawn_at == 0 || ix->respawn_at > ev->now_ms)
            continue;
        ix->respawn_at = 0;
        if (d->mode == FOLIO_DM_STOPPING || k >= d->cur.nworkers)
            continue;
        for (i = 0, covered = 0; i < FOLIO_MAX_SLOTS; i++) {
            const struct folio_dec_proc *p = &d->procs[i];

            if (p->gen == d->cur.id && p->index == k &&
                (p->state == FOLIO_WS_STARTING ||
                 (p->state == FOLIO_WS_READY && ix->replaces != i)))
                covered = 1;
        }
        if (covered)
            continue;
        d->restarts++;
        spawn(d, &d->cur, k, still_replacing(d, ix->replaces), ev->now_ms);
    }
}

static void
on_timer(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    int i, n = 0;

    switch (ev->timer) {
    case FOLIO_T_STOP:
        if (d->stop_at == 0 || d->stop_at > ev->now_ms)
            return;
        d->stop_at = 0;
        n = nlive(d, 0);
        if (n > 0)
            say(d, FOLIO_LOG_WARN, "shutdown deadline: killing %d workers", n);
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (live(&d->procs[i]))
                kill_proc(d, i, SIGKILL);
        return;
    case FOLIO_T_RELOAD:
        if (d->reload_at == 0 || d->reload_at > ev->now_ms)
            return;
        d->reload_at = 0;
        reload_abort(d, ev, "new workers not ready in time");
        return;
    case FOLIO_T_KILL:
        on_kill_due(d, ev);
        return;
    case FOLIO_T_RESPAWN:
        on_respawn_due(d, ev);
        return;
    case FOLIO_T_WATCHDOG:
        if (d->watchdog_at == 0 || d->watchdog_at > ev->now_ms)
            return;
        on_watchdog(d, ev);
        return;
    }
}

/* ---- the entry points ---- */

void
folio_dec_init(struct folio_dec *d)
{
    int i;

    memset(d, 0, sizeof(*d));
    d->mode = FOLIO_DM_STARTING;
    for (i = 0; i < FOLIO_MAX_WORKERS; i++)
        d->idx[i].replaces = -1;
}

int
folio_dec_step(struct folio_dec *d, const struct folio_dec_ev *ev)
{
    int k;

    d->nacts = 0;
    if (d->mode == FOLIO_DM_EXITING)
        return 0; /* the loop is over */
    if (ev->type >= FOLIO_EV_SPAWNED && ev->type <= FOLIO_EV_EXIT &&
        (ev->slot < 0 || ev->slot >= FOLIO_MAX_SLOTS))
        return 0; /* a worker's event, of no slot */
    switch (ev->type) {
    case FOLIO_EV_START:
        d->cur = ev->gen;
        d->mode = FOLIO_DM_STARTING;
        for (k = 0; k < d->cur.nworkers; k++)
            spawn(d, &d->cur, k, -1, ev->now_ms);
        break;
    case FOLIO_EV_RESUME:
        on_resume(d, ev);
        break;
    case FOLIO_EV_HUP:
        on_hup(d, ev);
        break;
    case FOLIO_EV_TERM:
        stop(d, ev, 0);
        break;
    case FOLIO_EV_QUIT:
        stop(d, ev, 1);
        break;
    case FOLIO_EV_REOPEN:
        act(d, FOLIO_ACT_REOPEN);
        break;
    case FOLIO_EV_SNAPSHOT:
        act(d, FOLIO_ACT_SNAPSHOT);
        break;
    case FOLIO_EV_CHILD:
        act(d, FOLIO_ACT_REAP);
        break;
    case FOLIO_EV_GEN_BUILT:
        on_gen_built(d, ev);
        break;
    case FOLIO_EV_GEN_FAILED:
        if (d->mode == FOLIO_DM_RELOADING)
            reload_failed(d, ev->why != NULL ? ev->why : "unknown");
        break;
    case FOLIO_EV_EXEC_DUE:
        on_exec_due(d);
        break;
    case FOLIO_EV_UPGRADE_FAILED:
        if (d->mode == FOLIO_DM_UPGRADING) {
            act(d, FOLIO_ACT_METRICS_OPEN);
            reload_failed(d, ev->why != NULL ? ev->why : "unknown");
        }
        break;
    case FOLIO_EV_SPAWNED:
        on_spawned(d, ev);
        break;
    case FOLIO_EV_SPAWN_FAILED:
        on_spawn_failed(d, ev);
        break;
    case FOLIO_EV_READY:
        on_ready(d, ev);
        break;
    case FOLIO_EV_RECYCLE:
        on_recycle(d, ev);
        break;
    case FOLIO_EV_EXIT:
        on_exit_ev(d, ev);
        break;
    case FOLIO_EV_TIMER:
        on_timer(d, ev);
        break;
    }
    return d->nacts;
}

void
folio_dec_beat(struct folio_dec *d, int slot, uint64_t beat_ms)
{
    if (slot >= 0 && slot < FOLIO_MAX_SLOTS && live(&d->procs[slot]))
        d->procs[slot].beat_ms = beat_ms;
}

uint64_t
folio_dec_deadline(const struct folio_dec *d, int timer)
{
    uint64_t t = 0;
    int i;

    switch (timer) {
    case FOLIO_T_STOP:
        return d->stop_at;
    case FOLIO_T_RELOAD:
        return d->reload_at;
    case FOLIO_T_KILL:
        for (i = 0; i < FOLIO_MAX_SLOTS; i++)
            if (live(&d->procs[i]) && d->procs[i].kill_at != 0 &&
                (t == 0 || d->procs[i].kill_at < t))
                t = d->procs[i].kill_at;
        return t;
    case FOLIO_T_RESPAWN:
        for (i = 0; i < FOLIO_MAX_WORKERS; i++)
            if (d->idx[i].respawn_at != 0 &&
                (t == 0 || d->idx[i].respawn_at < t))
                t = d->idx[i].respawn_at;
        return t;
    case FOLIO_T_WATCHDOG:
        return d->watchdog_at;
    }
    return 0;
}

int
folio_dec_adopter(const struct folio_dec *d, int from, int after)
{
    unsigned first = after >= 0 ? (unsigned)after + 1 : 0, k;
    int i;

    for (k = 0; k < FOLIO_MAX_SLOTS; k++) {
        i = (int)((first + k) % FOLIO_MAX_SLOTS);
        if (i != from && d->procs[i].state == FOLIO_WS_READY &&
            d->procs[i].gen == d->cur.id)
            return i;
    }
    return -1;
}

/* What the world is told of each mode (the header's sh_state). */
static const int published[] = {
    [FOLIO_DM_STARTING] = FOLIO_SS_STARTING,
    [FOLIO_DM_SERVING] = FOLIO_SS_SERVING,
    [FOLIO_DM_RELOADING] = FOLIO_SS_RELOADING,
    [FOLIO_DM_UPGRADING] = FOLIO_SS_RELOADING,
    [FOLIO_DM_STOPPING] = FOLIO_SS_STOPPING,
    [FOLIO_DM_EXITING] = FOLIO_SS_STOPPING,
};

void
folio_dec_counts(const struct folio_dec *d, struct folio_dec_counts *c)
{
    int i, accepting = 0;

    memset(c, 0, sizeof(*c));
    c->state = published[d->mode];
    c->configured = d->cur.nworkers;
    c->serving = nindices(d, &d->cur, FOLIO_WS_READY);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        const struct folio_dec_proc *p = &d->procs[i];

        if (!live(p))
            continue;
        c->n[p->state]++;
        accepting |= p->state == FOLIO_WS_READY;
    }
    /* Configured workers with no process: waiting to be restarted. */
    for (i = 0; i < d->cur.nworkers; i++) {
        int j, has = 0;

        for (j = 0; j < FOLIO_MAX_SLOTS && !has; j++)
            has = d->procs[j].gen == d->cur.id && d->procs[j].index == i &&
                  (d->procs[j].state == FOLIO_WS_READY ||
                   d->procs[j].state == FOLIO_WS_STARTING ||
                   d->procs[j].state == FOLIO_WS_HUNG);
        c->n[FOLIO_WS_DOWN] += !has;
    }
    c->healthy = c->state != FOLIO_SS_STOPPING && accepting;
    c->ready = c->state != FOLIO_SS_STOPPING && c->state != FOLIO_SS_STARTING &&
               c->configured > 0 && c->serving >= c->configured;
}
