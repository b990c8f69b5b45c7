/*
 * stats.h - the shared stats region: one cache-line-aligned slot per
 * worker process, written only by that worker (relaxed atomics, no lock
 * prefix: one writer), read by anyone without locks.  The master maps it
 * before forking; a slot carries the worker's pid and a spawn sequence
 * number so readers can tell a live worker's slot from a stale one.
 *
 * The counters are listed once, in FOLIO_WORKER_COUNTERS; the struct, the
 * aggregation and the replies are generated from that list.
 */
#ifndef FOLIO_SHM_STATS_H
#define FOLIO_SHM_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/hist.h"

#define FOLIO_MAX_SLOTS 256
#define FOLIO_MAX_METHODS 31 /* + one row for unknown methods */
#define FOLIO_METHOD_ROWS (FOLIO_MAX_METHODS + 1)


/* X(name, help): counters that only grow. */
#define FOLIO_WORKER_COUNTERS(X)                                               \
    X(requests, "requests answered")                                           \
    X(notifications, "notifications executed")                                \
    X(errors, "error responses sent")                                          \
    X(bytes_in, "bytes read from clients")                                     \
    X(bytes_out, "bytes written to clients")                                   \
    X(conns_accepted, "connections accepted or adopted")                       \
    X(conns_rejected, "connections refused: over max_connections, or out "    \
                      "of file descriptors")                                   \
    X(conns_handed_off, "connections handed to a newer worker")                \
    X(protocol_errors, "connections closed for malformed input")               \
    X(timeouts, "connections closed idle or too slow")                        \
    X(comments_cache_hits, "comments.list answered from the page cache")       \
    X(comments_cache_misses, "comments.list asked of the database")            \
    X(comments_cache_invalidations, "pages dropped on a NOTIFY or commit")      \
    X(comments_db_connects, "connections to the comments database made")       \
    X(comments_db_unavailable, "comments calls answered 14: database down")    \
    X(output_waits, "requests that waited for room for their replies")

/* X(name, help): gauges, the current value. */
#define FOLIO_WORKER_GAUGES(X)                                                 \
    X(conns_open, "connections open")                                          \
    X(cpu_user_us, "CPU time in user mode, microseconds")                      \
    X(cpu_sys_us, "CPU time in the kernel, microseconds")                      \
    X(heap_inuse, "heap bytes in use, mmapped blocks too (mallinfo2)")          \
    X(maxrss_kb, "peak resident set, KiB")                                     \
    X(comments_cache_bytes, "bytes held by the comments page cache")           \
    X(comments_db_up, "1 while connected to the comments database")           \
    X(output_bytes, "output buffered beyond the connections' base size "      \
                    "(bounded by max_output_total)")

enum folio_worker_state {
    FOLIO_WS_FREE = 0, /* no process */
    FOLIO_WS_STARTING, /* forked, not yet accepting */
    FOLIO_WS_READY,    /* accepting */
    FOLIO_WS_RETIRING, /* handing its connections to a newer worker */
    FOLIO_WS_STOPPING, /* draining before exit */
    FOLIO_WS_HUNG      /* the master's view only: stalled, being killed */
};

/*
 * X(name, help): how many workers the master counts in each state, in the
 * header (sh_w_<name>); server.stats and the folio_workers{state} gauge
 * are generated from this list.  "down" counts the configured workers
 * that have no process (waiting for a restart, after a crash or a fatal
 * exit): with serving, starting and hung it adds up to the configured
 * workers.
 */
#define FOLIO_WORKER_STATES(X)                                                 \
    X(serving, "accepting connections")                                        \
    X(starting, "started, not yet accepting")                                  \
    X(hung, "stalled past worker_timeout, being killed and replaced")          \
    X(down, "configured, without a process: waiting to be restarted")          \
    X(retiring, "of an older generation, handing connections over")           \
    X(stopping, "draining before they exit")

/* The master's state, in the header's sh_state. */
enum folio_server_state {
    FOLIO_SS_STARTING = 0, /* the first generation is not ready yet */
    FOLIO_SS_SERVING,
    FOLIO_SS_RELOADING, /* a new generation is starting */
    FOLIO_SS_STOPPING
};

/* Room for a method name in a slot (the longest is much shorter). */
#define FOLIO_SLOT_METHOD 32

struct folio_method_stats {
    _Atomic uint64_t ms_codes[FOLIO_ST_MAX]; /* answers by status; [0] = ok */
    _Atomic uint64_t ms_ns; /* total service time */
    _Atomic uint64_t ms_hist[FOLIO_LAT_BUCKETS];
};

struct folio_worker_slot {
    _Atomic uint64_t ws_pid;
    _Atomic uint64_t ws_seq;   /* spawn sequence number, never reused */
    _Atomic uint32_t ws_index; /* logical worker number */
    _Atomic uint32_t ws_state; /* enum folio_worker_state, as the worker says */
    _Atomic uint64_t ws_generation; /* configuration generation */
    _Atomic uint64_t ws_start_ms;   /* Unix ms */
    /*
     * The watchdog's view (STYLE.md section 8), written by the worker: the
     * monotonic ms of its loop's last turn, and its current request (busy)
     * or else its last one: method row, start (monotonic ms), the peer of
     * its connection (folio_addr_pack).
     */
    _Atomic uint64_t ws_beat_ms;
    _Atomic uint64_t ws_req_start_ms;
    _Atomic uint32_t ws_req_row;
    _Atomic uint32_t ws_req_busy;
    _Atomic uint64_t ws_req_peer[3];
    _Atomic uint32_t ws_mstate; /* written by the master: its view of the
                                   worker (enum folio_worker_state) */
#define FOLIO_X_FIELD(name, help) _Atomic uint64_t ws_##name;
    FOLIO_WORKER_COUNTERS(FOLIO_X_FIELD)
    FOLIO_WORKER_GAUGES(FOLIO_X_FIELD)
#undef FOLIO_X_FIELD
    struct folio_alloc_counters ws_alloc;
    struct folio_method_stats ws_methods[FOLIO_METHOD_ROWS];
} __attribute__((aligned(64)));

/* Server-wide facts, written by the master only. */
struct folio_stats_header {
    _Atomic uint64_t sh_seq;        /* odd while the master folds a slot */
    _Atomic uint64_t sh_master_pid;
    _Atomic uint64_t sh_start_ms;   /* Unix ms */
    _Atomic uint64_t sh_generation; /* serving generation */
    _Atomic uint64_t sh_workers;    /* its configured workers */
    _Atomic uint64_t sh_restarts;   /* workers replaced after dying */
    _Atomic uint64_t sh_reloads;    /* completed reloads */
    _Atomic uint64_t sh_reload_failures;
    _Atomic uint64_t sh_recycles;   /* replaced after max_requests_per_worker */
    _Atomic uint64_t sh_worker_timeouts; /* killed by the watchdog */
    _Atomic uint64_t sh_state;      /* enum folio_server_state */
    _Atomic uint64_t sh_serving;    /* of sh_workers, how many accept */
    _Atomic uint64_t sh_healthy;    /* 1: a worker serves, not stopping */
    _Atomic uint64_t sh_ready;      /* 1: every configured worker serves */
    _Atomic uint64_t sh_nslots;     /* slots in the region (attach checks) */
#define FOLIO_X_STATE(name, help) _Atomic uint64_t sh_w_##name;
    FOLIO_WORKER_STATES(FOLIO_X_STATE)
#undef FOLIO_X_STATE
} __attribute__((aligned(64)));

struct folio_stats_region;

/*
 * folio_stats_create - map a shared region of `nslots` zeroed slots.  It
 * lives in a memory file (memfd_create, close-on-exec) so that a master
 * that re-executes itself (an upgrade) can map it again from the
 * descriptor; where there is none, anonymous shared memory (children
 * inherit either).  Master only, before forking.  Returns 0, FOLIO_EINVAL
 * or FOLIO_ESYS (logged).
 */
int folio_stats_create(unsigned nslots, struct folio_stats_region **out);

/*
 * folio_stats_attach - map the region of memory file `fd` (from
 * folio_stats_fd of the master's previous image); on success the region
 * owns fd (folio_stats_destroy closes it), on failure the caller still
 * does.  Returns 0, or FOLIO_ECORRUPT when its size or slot count is not
 * that of a region, FOLIO_ENOMEM, FOLIO_ESYS (logged).  Master only, at
 * start.
 */
int folio_stats_attach(int fd, struct folio_stats_region **out);

/* folio_stats_fd - the region's memory file, or -1 (anonymous memory). */
int folio_stats_fd(const struct folio_stats_region *r);

/* folio_stats_destroy - unmap; accepts NULL. */
void folio_stats_destroy(struct folio_stats_region *r);

/* folio_stats_nslots - slots in the region. */
unsigned folio_stats_nslots(const struct folio_stats_region *r);

/* folio_stats_slot - slot i (< nslots): a pointer into the mapping. */
struct folio_worker_slot *folio_stats_slot(struct folio_stats_region *r,
                                           unsigned i);

/* folio_stats_header_of - the server-wide header. */
struct folio_stats_header *folio_stats_header_of(struct folio_stats_region *r);

/*
 * folio_stats_retired - the slot holding what exited workers counted
 * (written by the master only, by folio_stats_fold).
 */
struct folio_worker_slot *folio_stats_retired(struct folio_stats_region *r);

/*
 * folio_stats_fold - master only: add slot i's counters to the retired
 * slot and clear slot i, so the totals never go backwards.  Readers see
 * the fold as one step (a sequence lock in the header).
 */
void folio_stats_fold(struct folio_stats_region *r, unsigned i);

/*
 * folio_stats_sum - add slot `s`'s counters (X-macro counters, CPU,
 * allocation counters, method rows) into `acc`; gauges too when
 * `gauges` is set.  acc is private memory, not shared.
 */
void folio_stats_sum(struct folio_worker_slot *acc,
                     const struct folio_worker_slot *s, int gauges);

/*
 * folio_stats_total - acc = retired + every live slot, consistent with
 * respect to folds (retries while one is in progress).  Any process.
 */
void folio_stats_total(struct folio_stats_region *r,
                       struct folio_worker_slot *acc);

/* folio_stats_state_name - "starting", "ready", ... */
const char *folio_stats_state_name(unsigned state);

/* One writer per slot: plain load and store, no locked instruction. */
static inline void
folio_stat_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c,
                          atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void
folio_stat_set(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t
folio_stat_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
