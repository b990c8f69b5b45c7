/*
 * worker.h - what the master needs to start a worker process.
 * The worker runs one libevent loop: it accepts on the listening sockets
 * it inherited, decodes msgpack-RPC, dispatches to the services' handlers
 * and writes replies, until told to stop or retire.
 */
#ifndef FOLIO_WORKER_H
#define FOLIO_WORKER_H

#include <stdint.h>

#include "src/addr.h"
#include "src/conf.h"

struct folio_worker_slot;
struct folio_stats_region;
struct folio_corpus;

/* A listening socket, bound by the master before fork. */
struct folio_listener {
    int fd;
    int admin; /* admin methods allowed on connections from it */
    int http;  /* the HTTP face's (http_listen), else msgpack-RPC's */
    int passed; /* systemd's (socket activation): never shut down */
    char name[FOLIO_ADDR_TEXT]; /* as bound, "127.0.0.1:7788", "unix:/..." */
    char spec[FOLIO_ADDR_TEXT]; /* as configured */
};

/* Data built once by the master and shared with its workers. */
struct folio_worker_data {
    const struct folio_corpus *corpus; /* NULL: no corpus configured */
    int freight; /* 1: tables imported in DATA_DIR/freight for workers */
};

struct folio_worker_args {
    int index;           /* logical worker number, 0..workers-1 */
    uint64_t generation; /* configuration generation */
    const struct folio_config *cfg;
    const struct folio_listener *listeners;
    int nlisteners;
    struct folio_worker_slot *slot; /* this worker's stats slot */
    struct folio_stats_region *stats; /* every slot, for server.stats */
    int chan_fd;                    /* the worker's end of the channel */
    const struct folio_worker_data *data;
};

/*
 * folio_worker_preload - load, in the master before it forks, what a
 * worker's SIGABRT backtrace needs (the unwinder), so that each worker
 * starts without loading it again.  Master only; idempotent.
 */
void folio_worker_preload(void);

/*
 * folio_worker_main - run a worker in the freshly forked child of the
 * master (its parent: the worker watches it die).  Never returns: exits 0
 * after a stop or retirement, FOLIO_EXIT_FATAL when it cannot start (the
 * master retries it later, with a long backoff).  On its way it publishes
 * in its slot a heartbeat (its loop's last turn) and its request in
 * progress, for the master's watchdog; SIGABRT writes a backtrace to the
 * log before the core dump.
 */
void folio_worker_main(const struct folio_worker_args *a)
    __attribute__((noreturn));

#endif
