/*
 * decide.h - every decision of the master, as a library of its own:
 * events in, actions out.  It owns the master's mode (starting, serving,
 * reloading, upgrading, stopping, exiting), the table of worker
 * processes as the master sees them, the respawn backoff, the queued
 * reload, each deadline and the watchdog; it reads no clock, makes no
 * system call and knows nothing of libevent, so that tests/check_decide.c
 * drives it without a process.
 *
 * master/cycle.c is its only caller that steps it: it takes the events
 * signal.c and proc.c post into the master's ring (what happened: a
 * signal, a worker's message) and its own (a deadline passed), calls
 * folio_dec_step(), and carries out the actions it returns, in order, by
 * calling down into proc.c, reload.c, upgrade.c, notify.c.  Some actions
 * ask for an answer (SPAWN, RELOAD, REAP, EXEC): cycle.c steps the
 * answers before any other event.  Lower files may read the state
 * (folio_dec_adopter, folio_dec_counts) but never step it.
 *
 * Modelled on Postfix's master (master_sig.c only records, master.c's loop
 * decides) and nginx's ngx_master_process_cycle.
 */
#ifndef FOLIO_DECIDE_H
#define FOLIO_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/stats.h"
#include "src/conf.h"

#define FOLIO_DEC_KILL_GRACE_MS 1000   /* past shutdown_timeout, then KILL */
#define FOLIO_DEC_ABORT_GRACE_MS 1000  /* after the watchdog's SIGABRT */
#define FOLIO_DEC_RELOAD_MIN_MS 10000  /* a new generation's least time to be ready */
#define FOLIO_DEC_EARLY_MS 1000        /* dying sooner is a failed start */
#define FOLIO_DEC_BACKOFF_MS 100       /* failed starts: doubling ... */
#define FOLIO_DEC_BACKOFF_MAX_MS 30000 /* ... up to this */
#define FOLIO_DEC_FATAL_MS 1000        /* fatal exits: doubling ... */
#define FOLIO_DEC_FATAL_MAX_MS 300000  /* ... up to five minutes */
#define FOLIO_DEC_MAX_ACTS (3 * FOLIO_MAX_SLOTS + 32)
#define FOLIO_DEC_TEXT 256

/* What a generation means to the decisions. */
struct folio_dec_gen {
    uint64_t id; /* 0: none */
    int nworkers;
    uint32_t shutdown_ms;       /* shutdown_timeout */
    uint32_t worker_timeout_ms; /* the watchdog's; 0: off */
};

/* A worker process as the master sees it; procs[i] uses stats slot i. */
struct folio_dec_proc {
    int state;        /* enum folio_worker_state; FOLIO_WS_FREE: no process */
    long pid;         /* 0 until SPAWNED */
    int index;        /* logical worker number */
    uint64_t gen;
    uint64_t spawned_ms;
    uint64_t beat_ms;  /* its last heartbeat (folio_dec_beat) */
    uint64_t kill_at;  /* SIGKILL then if it is still there; 0: never */
    int replaces;      /* the slot it replaces once ready (recycling), or -1 */
    uint32_t timeout_ms;  /* its generation's worker_timeout */
    uint32_t shutdown_ms; /* its generation's shutdown_timeout */
};

/* Per logical worker of the serving generation: restarts. */
struct folio_dec_index {
    int fails;           /* consecutive failed starts */
    int fatal;           /* consecutive fatal exits */
    uint64_t respawn_at; /* start it again then; 0: nothing scheduled */
    int replaces;        /* the slot the restarted one replaces, or -1 */
    char why[96];        /* why it is down, for the status line */
};

enum folio_dec_timer {
    FOLIO_T_STOP,     /* the stop's deadline: kill what is left */
    FOLIO_T_RELOAD,   /* the new generation's deadline to be ready */
    FOLIO_T_KILL,     /* the earliest kill_at of a worker told to go */
    FOLIO_T_RESPAWN,  /* the earliest respawn_at */
    FOLIO_T_WATCHDOG, /* the next look at the heartbeats */
    FOLIO_T_MAX
};

/*
 * The master's modes.  STARTING -> SERVING <-> RELOADING; SERVING ->
 * UPGRADING, which an exec ends (the next image resumes it and reloads)
 * or a failure returns to SERVING; any -> STOPPING -> EXITING.  Published
 * as an enum folio_server_state (folio_dec_counts): UPGRADING as
 * reloading, EXITING as stopping.
 */
enum folio_dec_mode {
    FOLIO_DM_STARTING = 0, /* the first generation's workers start */
    FOLIO_DM_SERVING,      /* one generation serves */
    FOLIO_DM_RELOADING,    /* a new generation is built and started */
    FOLIO_DM_UPGRADING,    /* the master re-executes the binary on disk;
                              the workers serve on */
    FOLIO_DM_STOPPING,     /* TERM or QUIT: the workers drain, or die */
    FOLIO_DM_EXITING       /* none is left: the loop ends, no event
                              applies any more */
};

enum folio_dec_ev_type {
    FOLIO_EV_START = 1,      /* gen: the first generation is built */
    FOLIO_EV_RESUME,         /* d restored (folio_dec_restore) by the image
                                an upgrade executed */
    FOLIO_EV_HUP,            /* SIGHUP; changed: the binary on disk is not
                                the one running */
    FOLIO_EV_TERM,           /* SIGTERM, SIGINT */
    FOLIO_EV_QUIT,           /* SIGQUIT */
    FOLIO_EV_REOPEN,         /* SIGUSR1 */
    FOLIO_EV_SNAPSHOT,       /* SIGUSR2 */
    FOLIO_EV_CHILD,          /* SIGCHLD: a worker may have exited */
    FOLIO_EV_GEN_BUILT,      /* gen: the answer to RELOAD */
    FOLIO_EV_GEN_FAILED,     /* why */
    FOLIO_EV_EXEC_DUE,       /* the loop was left for UPGRADE and what it
                                had caught is taken: the time to exec */
    FOLIO_EV_UPGRADE_FAILED, /* why: the answer to EXEC, when it returns */
    /* From here to EXIT, a worker's events: of slot (0..MAX_SLOTS-1). */
    FOLIO_EV_SPAWNED,        /* slot, pid: the answer to SPAWN */
    FOLIO_EV_SPAWN_FAILED,   /* slot */
    FOLIO_EV_READY,          /* slot, pid: the worker accepts connections */
    FOLIO_EV_RECYCLE,        /* slot, pid: it served
                                max_requests_per_worker */
    FOLIO_EV_EXIT,           /* slot, status (a wait status): the answer to
                                REAP, one per worker reaped */
    FOLIO_EV_TIMER           /* timer: its deadline passed */
};

struct folio_dec_ev {
    int type;        /* enum folio_dec_ev_type */
    uint64_t now_ms; /* monotonic milliseconds (src/clock.h) */
    int slot;
    long pid;
    int status;
    int timer;
    int changed;
    struct folio_dec_gen gen;
    const char *why; /* borrowed for the step */
};

enum folio_dec_act_type {
    FOLIO_ACT_LOG = 1,  /* level (enum folio_log_level), text */
    FOLIO_ACT_SPAWN,    /* slot, index, gen: fork it; answer SPAWNED or
                           SPAWN_FAILED */
    FOLIO_ACT_RETIRE,   /* slot: RETIRE over its channel (SIGTERM if that
                           cannot be sent) */
    FOLIO_ACT_KILL,     /* slot, sig (SIGABRT: then SIGCONT, so that a
                           stopped process takes it) */
    FOLIO_ACT_HUNG,     /* slot, arg: ms since its last heartbeat: log
                           what it was doing (its slot says) */
    FOLIO_ACT_RELOAD,   /* build the next generation: answer GEN_BUILT or
                           GEN_FAILED */
    FOLIO_ACT_UPGRADE,  /* quiet the metrics listener (it accepts no
                           more; what it is answering, and requests on
                           connections it took, are answered: at most
                           1 s), then leave the loop; with the signals
                           blocked, take what it had caught, then step
                           EXEC_DUE */
    FOLIO_ACT_METRICS_OPEN, /* the upgrade will not exec: the metrics
                           listener accepts again */
    FOLIO_ACT_EXEC,     /* re-execute the binary on disk, keeping the
                           workers; answer UPGRADE_FAILED if that returns */
    FOLIO_ACT_SWITCH,   /* gen serves now, arg is the old one: apply the
                           new settings, free the old generation */
    FOLIO_ACT_DROP,     /* gen: the abandoned next generation: free it */
    FOLIO_ACT_READY,    /* gen serves with every worker: the ready file,
                           the detached start's parent */
    FOLIO_ACT_NOTIFY,   /* text: sd_notify lines (arg 1: READY=1 among
                           them) */
    FOLIO_ACT_RELOADING, /* sd_notify RELOADING=1, with the time */
    FOLIO_ACT_CLOSE_LISTENERS, /* a stop: close the public sockets (the
                                  admin socket stays) */
    FOLIO_ACT_REAP,     /* reap the workers that exited: answer EXIT for
                           each */
    FOLIO_ACT_REOPEN,   /* reopen the log file; SIGUSR1 to every worker */
    FOLIO_ACT_SNAPSHOT, /* log the counters (a line per worker, totals) */
    FOLIO_ACT_EXIT      /* arg: the exit code; leave the loop */
};

struct folio_dec_act {
    int type;
    int slot;
    int index;
    int sig;
    int level;
    uint64_t gen;
    uint64_t arg;
    char text[FOLIO_DEC_TEXT];
};

struct folio_dec {
    int mode;        /* enum folio_dec_mode */
    int quitting;    /* QUIT: everything was killed */
    int ever_ready;  /* the first generation was ready once */
    int hup_pending; /* a SIGHUP for after the reload in progress */
    int hup_changed; /* ... and whether the binary had changed then */
    struct folio_dec_gen cur;  /* serving */
    struct folio_dec_gen next; /* being started by a reload */
    uint64_t stop_at, reload_at, watchdog_at;
    struct folio_dec_proc procs[FOLIO_MAX_SLOTS];
    struct folio_dec_index idx[FOLIO_MAX_WORKERS];
    /* The master's counters (FOLIO_MASTER_COUNTERS, shm/stats.h). */
#define FOLIO_X_COUNTER(field, key, kind, family, help) uint64_t field;
    FOLIO_MASTER_COUNTERS(FOLIO_X_COUNTER)
#undef FOLIO_X_COUNTER
    int exit_code;
    char status[FOLIO_DEC_TEXT]; /* the last STATUS= sent */
    int status_serving;          /* ... and how many served then */
    struct folio_dec_act acts[FOLIO_DEC_MAX_ACTS]; /* of the last step */
    int nacts;
};

/* The master's view, counted (folio_dec_counts). */
struct folio_dec_counts {
    int state;      /* enum folio_server_state, as published */
    int configured; /* workers of the serving generation */
    int serving;    /* of those, how many have a worker accepting */
    /*
     * Processes by state (FOLIO_WORKER_STATE_LIST), and in n[FOLIO_WS_DOWN]
     * the configured workers without one.
     */
    int n[FOLIO_WS_NSTATES];
    int healthy; /* a worker accepts and the server is not stopping */
    int ready;   /* every configured worker accepts, not stopping */
};

/* folio_dec_init - the state before START: no generation, no process. */
void folio_dec_init(struct folio_dec *d);

/*
 * folio_dec_step - decide on one event.  Returns the number of actions,
 * left in d->acts (valid until the next step), to be carried out in
 * order.  An event that does not apply (a READY from a worker told to
 * stop, a timer with nothing due) yields no action or a log line.
 */
int folio_dec_step(struct folio_dec *d, const struct folio_dec_ev *ev);

/*
 * folio_dec_beat - slot's latest heartbeat (its ws_beat_ms), which the
 * caller reads from the stats region before a FOLIO_T_WATCHDOG event.
 */
void folio_dec_beat(struct folio_dec *d, int slot, uint64_t beat_ms);

/*
 * folio_dec_deadline - when `timer` is due (monotonic ms), 0 if it is not
 * armed.  Each timer is its own: stepping one never moves another.
 */
uint64_t folio_dec_deadline(const struct folio_dec *d, int timer);

/*
 * folio_dec_adopter - who adopts a connection a retiring worker handed
 * back: the first slot after `after` (round robin: the caller passes the
 * one it chose last, or -1) holding a worker of the serving generation
 * that accepts connections, other than `from`.  -1 if none.  A query: d
 * is not changed.
 */
int folio_dec_adopter(const struct folio_dec *d, int from, int after);

/* folio_dec_counts - the workers by state, health and readiness. */
void folio_dec_counts(const struct folio_dec *d, struct folio_dec_counts *c);

/* folio_dec_live - whether slot holds a process (reaped or not yet). */
int folio_dec_live(const struct folio_dec *d, int slot);

/*
 * decide_save.c
 * folio_dec_save - the state a master's next image needs (an upgrade) as
 * text lines into buf (len bytes, NUL-terminated).  Only while upgrading.
 * Returns the length, or 0 if it does not fit (or d is not upgrading).
 */
size_t folio_dec_save(const struct folio_dec *d, char *buf, size_t len);

/*
 * folio_dec_restore - read what folio_dec_save wrote (this image's or an
 * older one's) into a fresh d (folio_dec_init): upgrading, until
 * FOLIO_EV_RESUME is stepped.  Returns 0, or -1 with the reason in err.
 */
int folio_dec_restore(struct folio_dec *d, const char *text, char *err,
                      size_t errlen);

/* folio_dec_describe - a wait status as words ("exited with status 2"). */
const char *folio_dec_describe(int status, char *buf, size_t len);

#endif
