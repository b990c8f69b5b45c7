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
};

extern struct folio_master *folio_master;

/* listen.c */
int folio_listen_open(struct folio_gen *g, const struct folio_gen *reuse,
                      char *err, size_t errlen);
void folio_listen_close(struct folio_gen *g, const struct folio_gen *keep);

/* data.c: what the workers share, loaded once per generation */
int folio_data_load(const struct folio_config *cfg,
                    struct folio_worker_data *d, char *err, size_t errlen);
void folio_data_free(struct folio_worker_data *d);

/* gen.c */
struct folio_gen *folio_gen_new(struct folio_master *m, char *err,
                                size_t errlen);
void folio_gen_free(struct folio_gen *g, const struct folio_gen *keep);

/* proc.c */
int folio_proc_spawn(struct folio_master *m, struct folio_gen *g, int index,
                     int replaces);
void folio_proc_reap(struct folio_master *m);
void folio_proc_signal_all(struct folio_master *m, int sig);
int folio_proc_count(const struct folio_master *m, uint64_t gen, int state);
void folio_proc_retire(struct folio_master *m, struct folio_proc *p);

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

/* main.c */
void folio_master_ready(struct folio_master *m);
void folio_master_check_done(struct folio_master *m);
uint64_t folio_master_now_ms(void);

#endif
