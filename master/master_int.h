/*
 * master_int.h - the master process's state, shared by the master/ files.
 * The master never serves requests: it owns what is built once (listening
 * sockets, shared data, the stats region) and the workers' lifecycle.
 */
#ifndef FOLIO_MASTER_INT_H
#define FOLIO_MASTER_INT_H

#include <sys/types.h>

#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

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
    struct folio_listener listeners[FOLIO_MAX_LISTEN + 1];
    int nlisteners;
    struct folio_worker_data data;
};

enum proc_state {
    PROC_FREE = 0,
    PROC_STARTING,
    PROC_READY,
    PROC_RETIRING,
    PROC_STOPPING
};

/* A worker process; procs[i] uses stats slot i. */
struct folio_proc {
    pid_t pid;
    int index;           /* logical worker number */
    uint64_t seq;        /* spawn sequence number */
    uint64_t generation;
    int state;           /* enum proc_state */
    int chan;            /* master's end of the channel */
    struct event *ev_chan;
    uint64_t spawned_ms;
    int replaces;        /* slot of the worker this one replaces, or -1 */
    int reaped;          /* exited: only its hand-overs are still read */
};

/* Per logical worker: respawn throttling. */
struct folio_index {
    int fails;           /* consecutive early deaths */
    struct event *ev_respawn;
};

struct folio_master {
    int argc;
    char **argv;
    struct event_base *base;
    struct folio_gen *cur;  /* serving */
    struct folio_gen *next; /* being started by a reload */
    uint64_t next_gen_id;
    uint64_t spawn_seq;
    struct folio_stats_region *stats;
    struct folio_proc procs[FOLIO_MAX_SLOTS];
    struct folio_index idx[FOLIO_MAX_WORKERS];
    struct event *ev_sig[8];
    struct event *ev_deadline;  /* stop or reload deadline */
    int stopping;
    int quitting;
    int ready_reported;         /* `ready` logged for cur */
    unsigned rr;                /* round robin for adopted connections */
    int ready_pipe;             /* daemon: tell the waiting parent, or -1 */
    int exit_code;
    struct event *ev_stats_log; /* periodic counters line, if configured */
    struct evhttp *metrics;     /* Prometheus endpoint, if configured */
    int metrics_fd;             /* its listening socket, or -1 */
    char metrics_name[FOLIO_ADDR_TEXT];
    struct folio_priv priv;     /* --user */
};

extern struct folio_master *folio_master;

/*
 * activate.c: sockets passed by systemd (LISTEN_PID, LISTEN_FDS).
 * folio_activate_init - take them over at start (checked, non-blocking,
 * close-on-exec) and clear the variables; 0, or -1 with the reason in err.
 * folio_activate_take - a copy of the passed socket bound to `a`, or -1.
 * folio_activate_has - whether one is bound to `a` (its file is systemd's).
 * folio_activate_report - warn about passed sockets no address took.
 * folio_activate_close - close them (master at exit; workers after fork).
 */
int folio_activate_init(char *err, size_t errlen);
int folio_activate_take(const struct folio_addr *a);
int folio_activate_has(const struct folio_addr *a);
void folio_activate_report(void);
void folio_activate_close(void);

/* listen.c */
int folio_listen_open(struct folio_gen *g, const struct folio_gen *reuse,
                      char *err, size_t errlen);
void folio_listen_close(struct folio_gen *g, const struct folio_gen *keep);

/* data.c: what the workers share, loaded once per generation */
int folio_data_load(const struct folio_config *cfg,
                    struct folio_worker_data *d, char *err, size_t errlen);
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
 * drops privileges between the two; a reload does both at once.
 */
struct folio_gen *folio_gen_new(struct folio_master *m, char *err,
                                size_t errlen);
struct folio_gen *folio_gen_open(struct folio_master *m, char *err,
                                 size_t errlen);
int folio_gen_load(struct folio_master *m, struct folio_gen *g, char *err,
                   size_t errlen);
void folio_gen_free(struct folio_gen *g, const struct folio_gen *keep);

/* proc.c */
int folio_proc_spawn(struct folio_master *m, struct folio_gen *g, int index,
                     int replaces);
void folio_proc_reap(struct folio_master *m);
void folio_proc_signal_all(struct folio_master *m, int sig);
int folio_proc_count(const struct folio_master *m, uint64_t gen, int state);
void folio_proc_retire(struct folio_master *m, struct folio_proc *p);

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

/* reload.c */
void folio_reload_start(struct folio_master *m);
void folio_reload_check(struct folio_master *m);
void folio_reload_abort(struct folio_master *m, const char *why);

/* signal.c */
int folio_signals_init(struct folio_master *m);
void folio_stop(struct folio_master *m, int quit);

/* stats.c */
void folio_stats_log_snapshot(struct folio_master *m);
void folio_stats_publish(struct folio_master *m);
int folio_stats_log_start(struct folio_master *m);

/* metrics.c */
int folio_metrics_start(struct folio_master *m, char *err, size_t errlen);
void folio_metrics_stop(struct folio_master *m);
int folio_metrics_render(struct folio_master *m, struct evbuffer *out);

/*
 * notify.c: systemd's notify protocol (NOTIFY_SOCKET).  folio_notify sends
 * one datagram of "KEY=VALUE" lines, formatted; a no-op returning 0 when
 * NOTIFY_SOCKET is unset.  Returns -1 if the send failed (logged once).
 * Master only, in loop context.
 */
int folio_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* folio_notify_reloading - RELOADING=1 with MONOTONIC_USEC. */
int folio_notify_reloading(void);

/* main.c */
void folio_master_ready(struct folio_master *m);
void folio_master_check_done(struct folio_master *m);
uint64_t folio_master_now_ms(void);

#endif
