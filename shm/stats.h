/*
 * stats.h - the shared stats region: one cache-line-aligned slot per
 * worker process, written only by that worker (relaxed atomics, no lock
 * prefix: one writer), read by anyone without locks.  The master maps it
 * before forking; a slot carries the worker's pid and a spawn sequence
 * number so readers can tell a live worker's slot from a stale one.
 *
 * The statistics are listed once, in the lists below; the struct, the
 * aggregation and the replies are generated from them.
 */
#ifndef FOLIO_SHM_STATS_H
#define FOLIO_SHM_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/hist.h"
#include "src/stat.h" /* folio_stat_add, _set, _get: one writer per slot */

#define FOLIO_MAX_SLOTS 256
#define FOLIO_MAX_METHODS 31 /* + one row for unknown methods */
#define FOLIO_METHOD_ROWS (FOLIO_MAX_METHODS + 1)


/*
 * The statistics of a worker process, each listed once: the slot's
 * fields, the totals (folio_stats_sum), server.stats (worker/h_stats.c)
 * and the Prometheus page (master/metrics.c) are generated from these
 * lists, and each has one help text (memcached's THREAD_STATS_FIELDS).
 *
 * X(field, key, kind, unit, total, worker, label, help)
 *   field   the slot's ws_<field>
 *   key     its name in server.stats (folio-rpc(7))
 *   kind    FOLIO_SK_COUNTER   only grows; the totals keep what exited
 *                              workers counted
 *           FOLIO_SK_GAUGE     the current value; totals sum the live
 *                              workers
 *           FOLIO_SK_SHARED    one fact that every worker sees (the
 *                              comments store's size); totals take the
 *                              largest
 *           FOLIO_SK_PROCESS   a fact of each process only (its peak
 *                              resident set): no total
 *   unit    FOLIO_SU_ONE as counted; FOLIO_SU_US microseconds (seconds in
 *           server.stats, as a float, and in Prometheus); FOLIO_SU_KIB
 *           KiB (bytes in Prometheus)
 *   total   the Prometheus family of the total ("folio_" + it), or NULL
 *   worker  the family of the per-worker series, labelled worker and
 *           slot ("folio_" + it), or NULL
 *   label   the label that tells this field from the others of its
 *           families ("mode=\"user\""), or ""; fields of one family are
 *           listed next to each other, the first one's help is the
 *           family's
 *   help    what it counts
 */
#define FOLIO_SK_COUNTER 0
#define FOLIO_SK_GAUGE 1
#define FOLIO_SK_SHARED 2
#define FOLIO_SK_PROCESS 3
#define FOLIO_SU_ONE 0
#define FOLIO_SU_US 1
#define FOLIO_SU_KIB 2

/* Counters that only grow. */
#define FOLIO_WORKER_COUNTERS(X)                                               \
    X(requests, "requests", FOLIO_SK_COUNTER, FOLIO_SU_ONE, NULL,              \
      "worker_requests_total", "",                                             \
      "Requests answered (by method and code: folio_requests_total).")        \
    X(notifications, "notifications", FOLIO_SK_COUNTER, FOLIO_SU_ONE,          \
      "notifications_total", "worker_notifications_total", "",                 \
      "Notifications executed (never answered).")                              \
    X(errors, "errors", FOLIO_SK_COUNTER, FOLIO_SU_ONE, "errors_total",        \
      "worker_errors_total", "",                                               \
      "Error replies sent, malformed requests' included.")                     \
    X(bytes_in, "bytes_in", FOLIO_SK_COUNTER, FOLIO_SU_ONE,                    \
      "received_bytes_total", "worker_received_bytes_total", "",               \
      "Bytes read from clients.")                                              \
    X(bytes_out, "bytes_out", FOLIO_SK_COUNTER, FOLIO_SU_ONE,                  \
      "sent_bytes_total", "worker_sent_bytes_total", "",                       \
      "Bytes written to clients.")                                             \
    X(conns_accepted, "conns_accepted", FOLIO_SK_COUNTER, FOLIO_SU_ONE,        \
      "connections_accepted_total", "worker_connections_accepted_total", "",   \
      "Connections accepted, or taken over from a retiring worker.")          \
    X(conns_rejected, "conns_rejected", FOLIO_SK_COUNTER, FOLIO_SU_ONE,        \
      "connections_rejected_total", "worker_connections_rejected_total", "",   \
      "Connections refused over max_connections or for want of file "         \
      "descriptors.")                                                          \
    X(conns_handed_off, "conns_handed_off", FOLIO_SK_COUNTER, FOLIO_SU_ONE,    \
      "connections_handed_off_total", "worker_connections_handed_off_total",   \
      "", "Connections handed to a newer worker at a reload or recycling.")    \
    X(protocol_errors, "protocol_errors", FOLIO_SK_COUNTER, FOLIO_SU_ONE,      \
      "protocol_errors_total", "worker_protocol_errors_total", "",             \
      "Connections closed for malformed input.")                               \
    X(timeouts, "timeouts", FOLIO_SK_COUNTER, FOLIO_SU_ONE,                    \
      "connection_timeouts_total", "worker_connection_timeouts_total", "",     \
      "Connections closed idle or too slow.")                                  \
    X(cpu_user_us, "cpu_user_s", FOLIO_SK_COUNTER, FOLIO_SU_US,                \
      "cpu_seconds_total", "worker_cpu_seconds_total", "mode=\"user\"",        \
      "CPU time of the workers, by mode (user, system); totals include "       \
      "the workers that exited.")                                              \
    X(cpu_sys_us, "cpu_sys_s", FOLIO_SK_COUNTER, FOLIO_SU_US,                  \
      "cpu_seconds_total", "worker_cpu_seconds_total", "mode=\"system\"",      \
      "CPU time in the kernel.")                                               \
    X(busy_polls, "busy_polls", FOLIO_SK_COUNTER, FOLIO_SU_ONE,                \
      "busy_polls_total", NULL, "",                                            \
      "Times a worker waited busy_poll_us without sleeping, after a turn "   \
      "that served.")                                                          \
    X(busy_poll_hits, "busy_poll_hits", FOLIO_SK_COUNTER, FOLIO_SU_ONE,        \
      "busy_poll_hits_total", NULL, "",                                        \
      "Busy polls after which work was there: wake-ups saved.")               \
    X(poll_yields, "poll_yields", FOLIO_SK_COUNTER, FOLIO_SU_ONE,              \
      "poll_yields_total", NULL, "",                                           \
      "Times a worker gave its CPU to others (poll_yield) before polling, "    \
      "after a turn that served.")                                             \
    X(comments_cache_hits, "comments_cache_hits", FOLIO_SK_COUNTER,            \
      FOLIO_SU_ONE, "comments_cache_hits_total", NULL, "",                     \
      "comments.list answered from the worker's page cache.")       \
    X(comments_cache_misses, "comments_cache_misses", FOLIO_SK_COUNTER,        \
      FOLIO_SU_ONE, "comments_cache_misses_total", NULL, "",                   \
      "comments.list asked of the store (not in the page cache).")               \
    X(comments_cache_invalidations, "comments_cache_invalidations",            \
      FOLIO_SK_COUNTER, FOLIO_SU_ONE, "comments_cache_invalidations_total",    \
      NULL, "", "Page cache invalidations: a page on a notification from "    \
      "PostgreSQL, or the whole cache after a commit to the LMDB store.")     \
    X(comments_db_connects, "comments_db_connects", FOLIO_SK_COUNTER,          \
      FOLIO_SU_ONE, "comments_db_connects_total", NULL, "",                    \
      "Connections to the comments database made.")                            \
    X(comments_db_unavailable, "comments_db_unavailable", FOLIO_SK_COUNTER,    \
      FOLIO_SU_ONE, "comments_db_unavailable_total", NULL, "",                 \
      "Comments calls answered 14 because the database was down.")            \
    X(output_waits, "output_waits", FOLIO_SK_COUNTER, FOLIO_SU_ONE,            \
      "output_waits_total", NULL, "",                                          \
      "Requests that waited for room for their replies (max_output_bytes, "   \
      "max_output_total).")                                                    \
    X(profile_symbol_lookups, "profile_symbol_lookups", FOLIO_SK_COUNTER,      \
      FOLIO_SU_ONE, NULL, "worker_profile_symbol_lookups_total", "",           \
      "Addresses the worker named for its profiles: none, the master names "  \
      "them (foliod(8), PROFILING).")                                          \
    X(http_requests, "http_requests", FOLIO_SK_COUNTER, FOLIO_SU_ONE,          \
      "http_requests_total", NULL, "",                                         \
      "HTTP requests answered (http_listen), counted by method too when "     \
      "a method answered them.")                                               \
    X(http_errors, "http_errors", FOLIO_SK_COUNTER, FOLIO_SU_ONE,              \
      "http_errors_total", NULL, "",                                           \
      "HTTP answers with a status of 400 or more.")                            \
    X(accepts_forced, "accepts_forced", FOLIO_SK_COUNTER, FOLIO_SU_ONE,        \
      "accepts_forced_total", NULL, "",                                        \
      "Connections a worker ahead of the others took all the same: no other " \
      "took them within a millisecond (a stalled or busy peer).")

/* Gauges: the current value. */
#define FOLIO_WORKER_GAUGES(X)                                                 \
    X(conns_open, "conns_open", FOLIO_SK_GAUGE, FOLIO_SU_ONE, NULL,            \
      "worker_connections", "", "Connections open.")                           \
    X(in_flight, "in_flight", FOLIO_SK_GAUGE, FOLIO_SU_ONE, NULL,              \
      "worker_requests_in_flight", "",                                         \
      "Requests being served: a handler running, or a reply held for the "     \
      "comments store's group commit.")                                        \
    X(heap_inuse, "heap_inuse", FOLIO_SK_GAUGE, FOLIO_SU_ONE, NULL,            \
      "worker_heap_inuse_bytes", "",                                           \
      "Heap bytes in use, large mmapped blocks included (mallinfo2).")         \
    X(maxrss_kb, "maxrss_kb", FOLIO_SK_PROCESS, FOLIO_SU_KIB, NULL,            \
      "worker_max_resident_bytes", "", "Peak resident set.")                   \
    X(comments_bytes, "comments_bytes", FOLIO_SK_SHARED, FOLIO_SU_ONE,         \
      "comments_store_bytes", NULL, "",                                        \
      "Bytes of the comments store in use (its pages up to the last one "      \
      "written), against comments_max_size.")                                  \
    X(comments_cache_bytes, "comments_cache_bytes", FOLIO_SK_GAUGE,            \
      FOLIO_SU_ONE, NULL, "comments_cache_bytes", "",                          \
      "Bytes held by the page cache of the comments' postgres backend.")       \
    X(comments_db_up, "comments_db_up", FOLIO_SK_GAUGE, FOLIO_SU_ONE, NULL,    \
      "comments_db_up", "", "1 while connected to the comments database.")     \
    X(output_bytes, "output_bytes", FOLIO_SK_GAUGE, FOLIO_SU_ONE, NULL,        \
      "worker_output_bytes", "",                                               \
      "Output held for clients beyond the connections' base buffers: their "  \
      "buffers' growth, and each shared page they send once (bounded by "     \
      "max_output_total).")                                                    \
    X(comments_writer_waiting, "comments_writer_waiting", FOLIO_SK_GAUGE,      \
      FOLIO_SU_ONE, NULL, "comments_writer_waiting", "",                       \
      "1 while the worker's writer thread waits for the LMDB comments "       \
      "store's writer lock (another process holds it).")                       \
    X(comments_writer_holding, "comments_writer_holding", FOLIO_SK_GAUGE,      \
      FOLIO_SU_ONE, NULL, "comments_writer_holding", "",                       \
      "1 while the worker's writer thread holds the LMDB comments store's "   \
      "writer lock (a transaction: its writes, its synced commit).")           \
    X(loop_turn_max_us, "loop_turn_max_s", FOLIO_SK_PROCESS, FOLIO_SU_US,      \
      NULL, "worker_loop_turn_max_seconds", "",                                \
      "The longest turn of the worker's loop in the last 10 seconds (its "    \
      "poll's return to the next poll): the longest any request waited "      \
      "behind others' work.")

/*
 * The heap allocation counters: fields of the slot's ws_alloc (struct
 * folio_alloc_counters, src/alloc.h, which src/alloc.c writes).
 */
#define FOLIO_WORKER_ALLOCS(X)                                                 \
    X(alloc.ac_calls, "alloc_calls", FOLIO_SK_COUNTER, FOLIO_SU_ONE,           \
      "allocations_total", "worker_allocations_total", "",                     \
      "Heap allocation calls (malloc, calloc, realloc, memalign).")            \
    X(alloc.ac_bytes, "alloc_bytes", FOLIO_SK_COUNTER, FOLIO_SU_ONE,           \
      "allocated_bytes_total", "worker_allocated_bytes_total", "",             \
      "Bytes handed out by the heap.")                                         \
    X(alloc.ac_frees, "frees", FOLIO_SK_COUNTER, FOLIO_SU_ONE, "frees_total",  \
      "worker_frees_total", "", "free() calls of a non-NULL pointer.")         \
    X(alloc.ac_freed_bytes, "freed_bytes", FOLIO_SK_COUNTER, FOLIO_SU_ONE,     \
      "freed_bytes_total", "worker_freed_bytes_total", "",                     \
      "Bytes given back to the heap.")

/* Every statistic of a worker, in the order of its reports. */
#define FOLIO_WORKER_STATS(X)                                                  \
    FOLIO_WORKER_COUNTERS(X) FOLIO_WORKER_GAUGES(X) FOLIO_WORKER_ALLOCS(X)

/*
 * X(field, key, kind, family, help): the server-wide facts of the
 * region's header (sh_<field>), written by the master: kind as above
 * (FOLIO_SK_COUNTER or FOLIO_SK_GAUGE), family as `total`.
 */
#define FOLIO_SERVER_GAUGES(X)                                                 \
    X(generation, "generation", FOLIO_SK_GAUGE, "generation",                  \
      "Configuration generation being served (1 + reloads).")                  \
    X(workers, "workers", FOLIO_SK_GAUGE, "workers_configured",                \
      "Workers of the serving generation's configuration.")

/*
 * The master's own counters, counted where it decides (master/decide.h's
 * struct folio_dec has a field of each name), published in the header,
 * and carried across an upgrade in this order (master/decide_save.c): a
 * counter is added at the end.
 */
#define FOLIO_MASTER_COUNTERS(X)                                               \
    X(restarts, "restarts", FOLIO_SK_COUNTER, "worker_restarts_total",         \
      "Workers replaced after they died.")                                     \
    X(reloads, "reloads", FOLIO_SK_COUNTER, "reloads_total",                   \
      "Reloads completed.")                                                    \
    X(reload_failures, "reload_failures", FOLIO_SK_COUNTER,                    \
      "reload_failures_total",                                                 \
      "Reloads that failed and kept the old generation.")                      \
    X(recycles, "recycles", FOLIO_SK_COUNTER, "worker_recycles_total",         \
      "Workers replaced after max_requests_per_worker requests.")              \
    X(worker_timeouts, "worker_timeouts", FOLIO_SK_COUNTER,                    \
      "worker_timeouts_total",                                                 \
      "Workers killed by the watchdog (worker_timeout).")

/* Every fact of the header, in the order of its reports. */
#define FOLIO_SERVER_STATS(X) FOLIO_SERVER_GAUGES(X) FOLIO_MASTER_COUNTERS(X)

/* One statistic, as the lists above describe it (folio_stats_descs). */
struct folio_stat_desc {
    const char *key;    /* server.stats */
    const char *total;  /* Prometheus family after "folio_", or NULL */
    const char *worker; /* ... of the per-worker series, or NULL */
    const char *label;  /* "" or one label, name="value" */
    const char *help;
    unsigned kind; /* FOLIO_SK_* */
    unsigned unit; /* FOLIO_SU_* */
    size_t off;    /* of its _Atomic uint64_t in the slot or header */
};

/*
 * The states of a worker process, listed once: the enum, their names,
 * the master's counts in the header (sh_w_<count>), server.stats'
 * worker_states and the folio_workers{state} gauge are generated from
 * this list, in its order.  Each row is R(X, NAME, value, count, name,
 * help), so that a list of all the columns and one of the counts alone
 * can be taken from it:
 *   NAME   the enum's FOLIO_WS_<NAME>
 *   value  its number, in the slots (ws_state, ws_mstate) and in the
 *          master's state saved for an upgrade: workers started by an
 *          older binary read it across the upgrade, so it never changes
 *   count  its name as a count, and the `state` label of the metrics
 *   name   its name in server.stats' workers and in the logs
 *   help   what the count counts
 * DOWN is no process's state: it counts the configured workers that have
 * no process (waiting for a restart, after a crash or a fatal exit); with
 * serving, starting and hung it adds up to the configured workers.
 */
#define FOLIO_WORKER_STATE_ROWS(R, X)                                          \
    R(X, READY, 2, serving, "ready", "accepting connections")                  \
    R(X, STARTING, 1, starting, "starting", "started, not yet accepting")      \
    R(X, HUNG, 5, hung, "hung",                                                \
      "stalled past worker_timeout, being killed and replaced")                \
    R(X, DOWN, 6, down, "down",                                                \
      "configured, without a process: waiting to be restarted")                \
    R(X, RETIRING, 3, retiring, "retiring",                                    \
      "of an older generation, handing connections over")                      \
    R(X, STOPPING, 4, stopping, "stopping", "draining before they exit")

#define FOLIO_WS_ROW_ALL(X, ...) X(__VA_ARGS__)
#define FOLIO_WS_ROW_COUNT(X, NAME, value, count, name, help) X(count, help)
/* X(NAME, value, count, name, help): every column. */
#define FOLIO_WORKER_STATE_LIST(X) FOLIO_WORKER_STATE_ROWS(FOLIO_WS_ROW_ALL, X)
/* X(count, help): the counts. */
#define FOLIO_WORKER_STATES(X) FOLIO_WORKER_STATE_ROWS(FOLIO_WS_ROW_COUNT, X)

enum folio_worker_state {
    FOLIO_WS_FREE = 0, /* no process */
#define FOLIO_X_ENUM(NAME, value, count, name, help) FOLIO_WS_##NAME = value,
    FOLIO_WORKER_STATE_LIST(FOLIO_X_ENUM)
#undef FOLIO_X_ENUM
};

/* The numbers run from FREE to the last: arrays are indexed by them. */
#define FOLIO_WS_ONE(NAME, value, count, name, help) +1
enum { FOLIO_WS_NSTATES = 1 FOLIO_WORKER_STATE_LIST(FOLIO_WS_ONE) };
#undef FOLIO_WS_ONE

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
    /*
     * Time in the worker, from when the request's bytes were read to its
     * reply packed (the wait behind the requests read with it included):
     * total and histogram.
     */
    _Atomic uint64_t ms_ns;
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
    /*
     * Since when (monotonic ms) the comments store's writer lock has been
     * as ws_comments_writer_waiting and _holding say: written by the
     * worker's writer thread, with them (worker/comments_writer.c).
     */
    _Atomic uint64_t ws_writer_since_ms;
#define FOLIO_X_FIELD(field, key, kind, unit, total, worker, label, help)     \
    _Atomic uint64_t ws_##field;
    FOLIO_WORKER_COUNTERS(FOLIO_X_FIELD)
    FOLIO_WORKER_GAUGES(FOLIO_X_FIELD)
#undef FOLIO_X_FIELD
    struct folio_alloc_counters ws_alloc; /* FOLIO_WORKER_ALLOCS */
    /*
     * How long requests waited in the worker after their bytes were read,
     * before their handler started (queued behind the requests read with
     * them): total and histogram.
     */
    _Atomic uint64_t ws_queue_ns;
    _Atomic uint64_t ws_queue_hist[FOLIO_LAT_BUCKETS];
    /*
     * The turns of the worker's loop (worker/loop.c), from its poll's
     * return to its next poll: total and histogram (the longest is
     * ws_loop_turn_max_us).
     */
    _Atomic uint64_t ws_turn_ns;
    _Atomic uint64_t ws_turn_hist[FOLIO_LAT_BUCKETS];
    struct folio_method_stats ws_methods[FOLIO_METHOD_ROWS];
} __attribute__((aligned(64)));

/* Server-wide facts, written by the master only. */
struct folio_stats_header {
    _Atomic uint64_t sh_seq;        /* odd while the master folds a slot */
    _Atomic uint64_t sh_master_pid;
    _Atomic uint64_t sh_start_ms;   /* Unix ms */
#define FOLIO_X_FIELD(field, key, kind, family, help) _Atomic uint64_t sh_##field;
    FOLIO_SERVER_STATS(FOLIO_X_FIELD)
#undef FOLIO_X_FIELD
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
 * The lists as tables, in their order: folio_worker_stat_descs[] of
 * FOLIO_WORKER_STATS (offsets into struct folio_worker_slot),
 * folio_server_stat_descs[] of FOLIO_SERVER_STATS (into struct
 * folio_stats_header; their worker and label are NULL and "").
 */
extern const struct folio_stat_desc folio_worker_stat_descs[];
extern const unsigned folio_worker_nstats;
extern const struct folio_stat_desc folio_server_stat_descs[];
extern const unsigned folio_server_nstats;

/* folio_stat_raw - the value of d in `base` (a slot or the header). */
uint64_t folio_stat_raw(const void *base, const struct folio_stat_desc *d);

/*
 * folio_stat_base_units - a raw value of d in its Prometheus family's
 * base unit (seconds, bytes).
 */
double folio_stat_base_units(const struct folio_stat_desc *d, uint64_t raw);

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
 * folio_stats_sum - add slot `s`'s counters (FOLIO_SK_COUNTER of the
 * lists, the queue time, the method rows) into `acc`; the gauges too when
 * `gauges` is set (summed; FOLIO_SK_SHARED: the larger kept).  acc is
 * private memory, not shared.
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

#endif
