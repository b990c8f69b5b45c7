/*
 * master_int.h - the master process's state and the contracts between the
 * files of master/.  The master never serves requests: it owns what is
 * built once (listening sockets, shared data, the stats region) and the
 * workers' lifecycle.  Everything runs in the master's one thread, in
 * loop context; nothing here may be called from a worker.
 *
 * Who calls whom (no circle; dist/callgraph.sh checks it):
 *
 *   main.c     start-up, then folio_cycle_run()
 *   cycle.c    the loop: it takes the ring's events into decide.c's
 *              folio_dec_step() and carries out the actions, deciding
 *              nothing itself, calling down into
 *   proc.c     workers: fork, channels, reaping, signals
 *   reload.c   a new generation built, switched to, or dropped
 *   upgrade.c  re-executing the binary on disk, and the next image's
 *              resumption
 *   announce.c the ready file, the detached start's parent
 *   notify.c   systemd's notification protocol
 *   stats.c    the stats region's header, the counters' log lines
 *   metrics.c  Prometheus and the health endpoints (reads the region)
 *   signal.c   signals, as libevent events
 *   gen.c, listen.c, data.c, activate.c, priv.c  the pieces of a generation
 *   events.c   the ring everything is reported into (a leaf)
 *   decide.c, decide_save.c  the decisions and their saved state (a leaf
 *              library: master/decide.h)
 *
 * There is one vocabulary of events, decide.h's: signal.c and proc.c post
 * what happened to m->ring (events.c); they never call cycle.c.  Lower
 * files may read m->dec (the decisions' state) but only cycle.c steps it.
 */
#ifndef FOLIO_MASTER_INT_H
#define FOLIO_MASTER_INT_H

#include <sys/types.h>

#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "master/decide.h"
#include "shm/stats.h"
#include "src/conf.h"
#include "worker/worker.h"

/* priv.c: the user foliod serves as (see folio_priv_init). */
struct folio_priv {
    int active;  /* root now, to become `name` */
    int dropped; /* done: the ids are the user's for good */
    uid_t uid;
    gid_t gid;
    char name[64];
};

/* One configuration generation: what its workers were forked with. */
struct folio_gen {
    uint64_t id;
    struct folio_config cfg;
    int nworkers;
    struct folio_listener listeners[FOLIO_MAX_SOCKETS];
    int nlisteners;
    struct folio_worker_data data;
};

/* The operating system's side of a worker; its state is m->dec.procs[i]. */
struct folio_proc {
    struct folio_master *m; /* for its channel's callback */
    int slot;               /* procs[slot] */
    uint64_t seq; /* spawn sequence number, as in its stats slot */
    int chan;     /* master's end of the channel, or -1 */
    struct event *ev_chan;
    int reaped;   /* exited: only its hand-overs are still read */
};

/*
 * events.c: the events decide.c steps, in the order cycle.c takes them.
 * The length is a power of two, more than every slot's READY, RECYCLE and
 * EXIT at once.
 */
#define FOLIO_RING_LEN 1024

struct folio_ring_ev {
    struct folio_dec_ev ev; /* its why is the text below */
    char why[FOLIO_DEC_TEXT];
};

struct folio_ring {
    struct folio_ring_ev ev[FOLIO_RING_LEN];
    unsigned head, tail; /* taken from head, posted at tail */
    unsigned answers;    /* given at head since the last take */
    struct event *wake;  /* cycle.c's: activated by each post */
    unsigned lost;       /* posts over the length (never expected) */
    char why[FOLIO_DEC_TEXT]; /* the reason of the event taken last */
};

/* cycle.c: a timer per deadline of decide.c. */
struct folio_timer {
    struct folio_master *m; /* for its callback */
    int id;                 /* enum folio_dec_timer */
    struct event *ev;
    uint64_t at; /* what it is armed for; 0: not armed */
};

/* upgrade.c: the binary this image runs, as it was at start. */
struct folio_exe {
    char path[4096]; /* what to re-execute: /proc/self/exe at start */
    dev_t dev;
    ino_t ino;
    int known; /* path and identity read */
};

struct folio_master {
    int argc;
    char **argv; /* a copy: argv's own memory holds the process title */
    struct event_base *base;
    struct folio_dec dec; /* every decision (decide.h); cycle.c steps it */
    struct folio_ring ring; /* the events it steps */
    struct folio_gen *cur;  /* serving (dec.cur) */
    struct folio_gen *next; /* being started by a reload (dec.next) */
    uint64_t next_gen_id;
    uint64_t spawn_seq;
    struct folio_stats_region *stats;
    struct folio_proc procs[FOLIO_MAX_SLOTS];
    int adopter; /* proc.c: the slot that adopted a connection last */
    struct event *ev_sig[8];
    struct folio_timer timers[FOLIO_T_MAX];
    int ready_pipe;      /* daemon: tell the waiting parent, or -1 */
    int tell_mainpid;    /* daemon: MAINPID= with the first READY=1 */
    int ready_fd;        /* the ready file, opened before the drop, or -1 */
    char ready_path[4096];
    int exit_code;
    struct event *ev_stats_log; /* periodic counters line, if configured */
    struct evhttp *metrics;     /* Prometheus endpoint, if configured */
    int metrics_fd;             /* its listening socket, or -1 */
    struct folio_mconns *mconns; /* its connections (metrics_conn.c) */
    char metrics_name[FOLIO_ADDR_TEXT];
    struct folio_priv priv;     /* --user */
    struct folio_exe exe;
    char pid_file[4096];
};

/*
 * cycle.c
 * folio_cycle_run - run the master until it stops: steps START (the
 * first generation, m->cur, is built) or, with `resumed`, RESUME (an
 * upgraded image took over m->dec from its predecessor), then the loop.
 * Returns the exit code.  main.c only.
 */
int folio_cycle_run(struct folio_master *m, int resumed);

/*
 * events.c: the ring, m->ring.  Any file of master/, in loop context (not
 * in a signal handler).
 * folio_ring_post - report ev (copied, its why too): queued, and the
 * ring's wake event activated (cycle.c takes it in this turn of the loop).
 * folio_ring_answer - cycle.c only: the answer to an action of the step
 * being carried out, taken before every event posted.
 * folio_ring_take - the next event into *ev (its why valid until the next
 * take): 1, or 0 when empty.
 */
void folio_ring_post(struct folio_ring *r, const struct folio_dec_ev *ev);
void folio_ring_answer(struct folio_ring *r, const struct folio_dec_ev *ev);
int folio_ring_take(struct folio_ring *r, struct folio_dec_ev *ev);

/*
 * activate.c: sockets passed by systemd (LISTEN_PID, LISTEN_FDS).
 * folio_activate_init - take them over at start (checked, non-blocking,
 * close-on-exec) and clear the variables; 0, or -1 with the reason in err.
 * folio_activate_take - a copy of the passed socket bound to `a`, or -1.
 * folio_activate_has - whether one is bound to `a` (its file is systemd's).
 * folio_activate_report - close the passed sockets no address took, with
 * a warning: a client of one is refused, not left hanging.
 * folio_activate_close - close them (master at exit; workers after fork).
 * folio_activate_fds - the descriptors kept (for an upgrade), up to max;
 * folio_activate_adopt - take them back in the next image.
 */
int folio_activate_init(char *err, size_t errlen);
int folio_activate_take(const struct folio_addr *a);
int folio_activate_has(const struct folio_addr *a);
void folio_activate_report(void);
void folio_activate_close(void);
int folio_activate_fds(int *fds, int max);
int folio_activate_adopt(int fd);

/*
 * listen.c
 * folio_listen_open - bind g's addresses (g->cfg), or share the socket of
 * `reuse` (the serving generation) for an address that did not change, or
 * take the one systemd passed.  Unix socket directories belong to `priv`'s
 * user.  0, or a FOLIO_E* with the reason in err (what was opened is
 * closed again).
 * folio_listen_close - close g's sockets, and remove the files of Unix
 * sockets that `keep` does not share and systemd did not pass.
 */
int folio_listen_open(struct folio_gen *g, const struct folio_gen *reuse,
                      const struct folio_priv *priv, char *err, size_t errlen);
void folio_listen_close(struct folio_gen *g, const struct folio_gen *keep);
/*
 * folio_listen_check - before anything is bound: every address of cfg
 * parses (names resolve), none twice, and each --listen Unix socket's
 * directory exists (the admin socket's, the run directory, foliod makes).  0, or
 * FOLIO_ECONFIG with the reason, naming the option, in err.
 * folio_listen_error - "cannot listen on SPEC (OPTION): ..." for errno
 * `e` after the call `why`, saying what to do: another foliod? which
 * option changes it.  `option` is the long name ("metrics-listen").
 */
int folio_listen_check(const struct folio_config *cfg, char *err,
                       size_t errlen);
void folio_listen_error(char *err, size_t errlen,
                        const struct folio_config *cfg, const char *option,
                        const char *spec, const char *why, int e);

/*
 * data.c: what the workers share, loaded once per generation.
 * folio_data_load - 0, or a FOLIO_E* with the reason in err (d is then
 * empty).  folio_data_free - release; accepts an empty d.
 */
int folio_data_load(const struct folio_config *cfg,
                    struct folio_worker_data *d, char *err, size_t errlen);
/*
 * folio_data_check - before anything is bound: the corpus, freight tables
 * and catalog cfg names (not auto, not off) exist, are of the right kind
 * and readable; a postgres backend's connection string parses.  0, or
 * FOLIO_ECONFIG with the reason, naming the option, in err.
 */
int folio_data_check(const struct folio_config *cfg, char *err,
                     size_t errlen);
void folio_data_free(struct folio_worker_data *d);
/*
 * folio_data_build - foliod --build-data: build the corpus index and the
 * freight environment of cfg into `dir` and write their checksums there
 * (shm/datafiles.h), for copying to several hosts.  Says what it built on
 * stdout.  0, or a FOLIO_E* with the reason in err.
 */
int folio_data_build(const struct folio_config *cfg, const char *dir,
                     char *err, size_t errlen);

/*
 * gen.c: folio_gen_new = folio_gen_open (configuration and listening
 * sockets) + folio_gen_load (the shared data; assigns the id).  Start-up
 * drops privileges between the two; a reload does both at once.  Each
 * returns the generation (owned by the caller: folio_gen_free), or NULL /
 * -1 with the reason in err.  folio_gen_params - what decide.c needs of
 * g.  folio_gen_free accepts NULL and keeps the sockets `keep` shares.
 * folio_gen_apply - m->cur serves: its settings apply to the master (log
 * level, heap sampling, counters log; the metrics listener started, or
 * moved if `old`, the generation it replaces, listened elsewhere).  At
 * start and after an upgrade old is NULL (the metrics socket an older
 * image bound, m->metrics_fd, is taken over).  0, or -1 with the first
 * failure in err (the rest is applied still).
 * folio_gen_apply_process - what cfg sets in this process alone: the log
 * level, the heap profiler's rate.
 */
struct folio_gen *folio_gen_new(struct folio_master *m, char *err,
                                size_t errlen);
struct folio_gen *folio_gen_open(struct folio_master *m, char *err,
                                 size_t errlen);
int folio_gen_load(struct folio_master *m, struct folio_gen *g, char *err,
                   size_t errlen);
void folio_gen_params(const struct folio_gen *g, struct folio_dec_gen *out);
int folio_gen_apply(struct folio_master *m, const struct folio_gen *old,
                    char *err, size_t errlen);
void folio_gen_apply_process(const struct folio_config *cfg);
void folio_gen_free(struct folio_gen *g, const struct folio_gen *keep);

/*
 * proc.c: worker processes, the mechanism (decide.c chooses).
 * folio_proc_spawn - fork worker `index` of generation g into stats slot
 * `slot`, with its channel watched; *pid on success.  0, or FOLIO_ESYS.
 * folio_proc_reap - reap one exited worker: its final CPU time folded
 * into the stats, the connections it handed over relayed, its channel
 * closed.  1 with its slot and wait status, 0 when none is left.
 * folio_proc_kill - send sig to slot's process (SIGABRT: then SIGCONT);
 * a slot with no pid yet is left alone.
 * folio_proc_retire - tell slot's worker to hand its connections over and
 * exit (RETIRE), or SIGTERM it if the channel fails.
 * folio_proc_signal_all - every worker (SIGUSR1: reopen logs).
 * folio_proc_watch - watch slot's channel (an upgraded image, for the
 * workers it took over); 0 or -1.
 * folio_proc_release - close every channel (exit path).
 */
int folio_proc_spawn(struct folio_master *m, struct folio_gen *g, int slot,
                     int index, pid_t *pid);
int folio_proc_reap(struct folio_master *m, int *slot, int *status);
void folio_proc_kill(struct folio_master *m, int slot, int sig);
void folio_proc_retire(struct folio_master *m, int slot);
void folio_proc_signal_all(struct folio_master *m, int sig);
int folio_proc_watch(struct folio_master *m, int slot);
void folio_proc_release(struct folio_master *m);

/*
 * reload.c: a SIGHUP's generation (validate-then-switch).
 * folio_reload_build - build the next generation into m->next; 0, or -1
 * with the reason in err (nothing changed).
 * folio_reload_switch - m->next serves: its settings apply
 * (folio_gen_apply), the old one is freed.
 * folio_reload_drop - free m->next (an aborted reload).
 */
int folio_reload_build(struct folio_master *m, char *err, size_t errlen);
void folio_reload_switch(struct folio_master *m);
void folio_reload_drop(struct folio_master *m);

/*
 * upgrade.c: a new foliod binary, taken up at a SIGHUP by re-executing
 * the master (same pid, same listening sockets, same stats region; the
 * workers stay its children and keep serving).
 * folio_upgrade_init - note which binary runs (at start).
 * folio_upgrade_changed - whether the file it came from is another now.
 * folio_upgrade_exec - check the new binary (--check-config, in a child),
 * write the state for it, and execve it.  Returns only if it could not:
 * -1 with the reason in err, and everything as it was.
 * folio_upgrade_token - what --check-config says (FOLIO_UPGRADE_CHECK set)
 * for a running master to take this binary up: the handover's version
 * and the stats region's layout, which the exec'd image maps as it is.
 * folio_upgrade_pending - whether this image was started by an upgrade.
 * folio_upgrade_resume - in that image: take over the state (generation,
 * sockets, region, workers, decisions).  0, or -1 with the reason in err.
 */
int folio_upgrade_init(struct folio_master *m);
int folio_upgrade_changed(const struct folio_master *m);
int folio_upgrade_exec(struct folio_master *m, char *err, size_t errlen);
const char *folio_upgrade_token(char *buf, size_t len);
int folio_upgrade_pending(void);
int folio_upgrade_resume(struct folio_master *m, char *err, size_t errlen);

/*
 * announce.c: what the world outside is told when a generation is ready.
 * folio_announce_open - before privileges are dropped: keep the ready
 * file open, for when its directory is not the user's.
 * folio_announce_ready - write the ready file; release a detached start's
 * waiting parent (once).
 * folio_announce_write_file - write `text` to `path` atomically; 0 or -1.
 */
void folio_announce_open(struct folio_master *m, const char *path);
void folio_announce_ready(struct folio_master *m);
int folio_announce_write_file(const char *path, const char *text);

/*
 * priv.c
 * folio_priv_init - resolve `user` (NULL: none, stay who we are; as root
 * main.c warns); as another user than root, accepts only that user.
 * p->active says a drop is due.
 * folio_priv_own - chown `path` to the user (group_only: its group), or
 * folio_priv_own_fd a descriptor; no-ops unless a drop is due; warns on
 * failure.
 * folio_priv_mkdirs - mkdir -p with `mode` for what it creates, which
 * becomes the user's when a drop is due (an existing directory keeps its
 * owner).  0, or -1 with errno.
 * folio_priv_drop - initgroups, setresgid, setresuid, then checks that
 * every id changed and that root cannot be regained.  0, or FOLIO_ESYS with
 * the reason in err.  Master only, before forking workers.
 */
int folio_priv_init(struct folio_priv *p, const char *user, int check_only,
                    char *err, size_t errlen);
void folio_priv_own(const struct folio_priv *p, const char *path,
                    int group_only);
void folio_priv_own_fd(const struct folio_priv *p, int fd, const char *what);
int folio_priv_mkdirs(const struct folio_priv *p, const char *path,
                      mode_t mode);
int folio_priv_drop(struct folio_priv *p, char *err, size_t errlen);

/*
 * signal.c
 * folio_signals_init - take TERM, INT, QUIT, HUP, USR1, USR2 and CHLD as
 * libevent events, each posting its event (FOLIO_EV_TERM, ...); ignore
 * SIGPIPE.  0 or -1.
 */
int folio_signals_init(struct folio_master *m);

/*
 * stats.c
 * folio_stats_publish - the decisions' view into the region's header
 * (state, workers by state, health, counters) and each slot (ws_mstate).
 * folio_stats_log_snapshot - SIGUSR2's counters lines.
 * folio_stats_log_start - (re)start the periodic counters line of the
 * serving generation's stats_log_interval; 0 or -1.
 */
void folio_stats_log_snapshot(struct folio_master *m);
void folio_stats_publish(struct folio_master *m);
int folio_stats_log_start(struct folio_master *m);

/*
 * metrics.c: metrics_listen's HTTP: /metrics, /healthz, /readyz.
 * folio_metrics_start - listen on the serving generation's address (or
 * take over `fd`, a socket an older image bound for it: -1 for none); 0,
 * or -1 with the reason in err.  folio_metrics_stop - close it.
 * folio_metrics_render - the Prometheus text into out.
 */
int folio_metrics_start(struct folio_master *m, int fd, char *err,
                        size_t errlen);
/* folio_metrics_check - cfg's metrics address parses, and is TCP: 0, or
 * FOLIO_ECONFIG with the reason in err. */
int folio_metrics_check(const struct folio_config *cfg, char *err,
                        size_t errlen);
void folio_metrics_stop(struct folio_master *m);
int folio_metrics_render(struct folio_master *m, struct evbuffer *out);

/*
 * metrics_conn.c: the metrics listener's connections: their limit, their
 * header deadline, out of descriptors at accept.
 * folio_mconn_start - follow the connections of m->metrics, bound by
 * `bound`; 0 or -1 (folio_mconn_stop cleans up).
 * folio_mconn_request - `req`, complete, is being answered.
 * folio_mconn_on_close - cb(evcon, arg) when req's connection closes (NULL:
 *     no more); a connection has one close callback, this file's: others
 *     ask it here, never evhttp_connection_set_closecb.
 * folio_mconn_quiesce - an upgrade: the listener accepts no more (the
 *     kernel queues what comes for the next image), replies say
 *     Connection: close, connections between requests close; quiet(m)
 *     once no connection is in a request or waits for its first one, or
 *     after QUIESCE_MS (the exec closes those left).  At once without a
 *     listener.
 * folio_mconn_resume - the upgrade did not exec: accept again.
 * folio_mconn_stop - free m->metrics, its listener and connections.
 * folio_mconn_render - its folio_metrics_http_* series.
 */
struct evhttp_bound_socket;
int folio_mconn_start(struct folio_master *m,
                      struct evhttp_bound_socket *bound);
void folio_mconn_request(struct folio_master *m, struct evhttp_request *req);
void folio_mconn_on_close(struct folio_master *m, struct evhttp_request *req,
                          void (*cb)(struct evhttp_connection *, void *),
                          void *arg);
void folio_mconn_quiesce(struct folio_master *m,
                         void (*quiet)(struct folio_master *));
void folio_mconn_resume(struct folio_master *m);
void folio_mconn_stop(struct folio_master *m);
void folio_mconn_render(struct folio_master *m, struct evbuffer *out);

/*
 * profile.c: /debug/pprof/ (PROTOCOL.md section 6).
 * folio_profile_http - answer `req` if its path is under /debug/pprof:
 * returns 1 (answered now or later, when the workers' profiles are in),
 * 0 if the path is not one of these.
 * folio_profile_on_done - a worker's FOLIO_CHAN_PROFILE_DONE, with the fd
 * it passed (-1: none), which this closes.
 * folio_profile_abort - drop the requests in flight, unanswered (the
 * metrics listener is going away).
 */
struct folio_chan_hdr;
int folio_profile_http(struct folio_master *m, struct evhttp_request *req);
void folio_profile_on_done(struct folio_master *m, struct folio_proc *p,
                           const struct folio_chan_hdr *h, const void *data,
                           int fd);
void folio_profile_abort(struct folio_master *m);

/*
 * selfstat.c: folio_metrics_process - the master's process_* series
 * (the Prometheus client libraries' set) onto the page.
 */
void folio_metrics_process(struct evbuffer *out);

/*
 * notify.c: systemd's notify protocol (NOTIFY_SOCKET).  folio_notify sends
 * one datagram of "KEY=VALUE" lines, formatted; a no-op returning 0 when
 * NOTIFY_SOCKET is unset.  Returns -1 if the send failed (logged once).
 */
int folio_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* folio_notify_reloading - RELOADING=1 with MONOTONIC_USEC. */
int folio_notify_reloading(void);

#endif
