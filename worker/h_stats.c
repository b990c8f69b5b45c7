/*
 * h_stats.c - server.stats: the counters of every worker and their totals,
 * read from the shared stats region without locks (admin socket only).
 * The reply's fields are generated from the X-macro lists of shm/stats.h
 * and documented in folio-rpc(7).  No allocation: the totals are summed
 * into a static slot.
 */
#include "config.h"

#include <string.h>
#include <time.h>

#include "shm/stats.h"
#include "src/clock.h"
#include "src/hist.h"
#include "src/rpc.h"
#include "worker/dispatch.h"
#include "worker/h_stats.h"
#include "worker/worker_int.h"

#define ONE(name, help) +1
enum {
    NCOUNTERS = 0 FOLIO_WORKER_COUNTERS(ONE)
};
#undef ONE

static void
kv_u(msgpack_packer *pk, const char *k, uint64_t v)
{
    folio_pack_cstr(pk, k);
    msgpack_pack_uint64(pk, v);
}

static void
kv_f(msgpack_packer *pk, const char *k, double v)
{
    folio_pack_cstr(pk, k);
    msgpack_pack_double(pk, v);
}

/* The counters every row and the totals share. */
static void
pack_counters(msgpack_packer *pk, const struct folio_worker_slot *s)
{
#define KV(name, help) kv_u(pk, #name, folio_stat_get(&s->ws_##name));
    FOLIO_WORKER_COUNTERS(KV)
#undef KV
    kv_u(pk, "conns_open", folio_stat_get(&s->ws_conns_open));
    kv_f(pk, "cpu_user_s", (double)folio_stat_get(&s->ws_cpu_user_us) / 1e6);
    kv_f(pk, "cpu_sys_s", (double)folio_stat_get(&s->ws_cpu_sys_us) / 1e6);
    kv_u(pk, "alloc_calls", folio_stat_get(&s->ws_alloc.ac_calls));
    kv_u(pk, "alloc_bytes", folio_stat_get(&s->ws_alloc.ac_bytes));
    kv_u(pk, "frees", folio_stat_get(&s->ws_alloc.ac_frees));
    kv_u(pk, "freed_bytes", folio_stat_get(&s->ws_alloc.ac_freed_bytes));
    kv_u(pk, "heap_inuse", folio_stat_get(&s->ws_heap_inuse));
    kv_u(pk, "output_bytes", folio_stat_get(&s->ws_output_bytes));
}
#define NCOMMON (NCOUNTERS + 9)

static uint64_t
row_calls(const struct folio_method_stats *ms, uint64_t *errors)
{
    uint64_t calls = 0, k;

    *errors = 0;
    for (k = 0; k < FOLIO_ST_MAX; k++) {
        calls += folio_stat_get(&ms->ms_codes[k]);
        if (k != 0)
            *errors += folio_stat_get(&ms->ms_codes[k]);
    }
    return calls;
}

static const char *
row_name(unsigned r)
{
    return r < folio_nmethods ? folio_methods[r].name : "(unknown)";
}

static void
pack_methods(msgpack_packer *pk, const struct folio_worker_slot *s)
{
    uint64_t hist[FOLIO_LAT_BUCKETS], calls, errors;
    unsigned r, k, n = 0, codes;

    for (r = 0; r < FOLIO_METHOD_ROWS; r++)
        n += row_calls(&s->ws_methods[r], &errors) > 0;
    msgpack_pack_map(pk, n);
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        const struct folio_method_stats *ms = &s->ws_methods[r];

        if ((calls = row_calls(ms, &errors)) == 0)
            continue;
        for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
            hist[k] = folio_stat_get(&ms->ms_hist[k]);
        folio_pack_cstr(pk, row_name(r));
        msgpack_pack_map(pk, 8);
        kv_u(pk, "calls", calls);
        kv_u(pk, "errors", errors);
        kv_f(pk, "mean_us",
             (double)folio_stat_get(&ms->ms_ns) / 1e3 / (double)calls);
        kv_f(pk, "p50_us", (double)folio_lat_percentile(hist, 0.5) / 1e3);
        kv_f(pk, "p90_us", (double)folio_lat_percentile(hist, 0.9) / 1e3);
        kv_f(pk, "p99_us", (double)folio_lat_percentile(hist, 0.99) / 1e3);
        kv_f(pk, "p999_us", (double)folio_lat_percentile(hist, 0.999) / 1e3);
        folio_pack_cstr(pk, "codes");
        for (codes = 0, k = 0; k < FOLIO_ST_MAX; k++)
            codes += folio_stat_get(&ms->ms_codes[k]) > 0;
        msgpack_pack_map(pk, codes);
        for (k = 0; k < FOLIO_ST_MAX; k++)
            if (folio_stat_get(&ms->ms_codes[k]) > 0)
                kv_u(pk, folio_status_name((int)k),
                     folio_stat_get(&ms->ms_codes[k]));
    }
}

static void
pack_errors_by_code(msgpack_packer *pk, const struct folio_worker_slot *s)
{
    uint64_t by[FOLIO_ST_MAX] = {0};
    unsigned r, k, n = 0;

    for (r = 0; r < FOLIO_METHOD_ROWS; r++)
        for (k = 1; k < FOLIO_ST_MAX; k++)
            by[k] += folio_stat_get(&s->ws_methods[r].ms_codes[k]);
    for (k = 1; k < FOLIO_ST_MAX; k++)
        n += by[k] > 0;
    msgpack_pack_map(pk, n);
    for (k = 1; k < FOLIO_ST_MAX; k++)
        if (by[k] > 0)
            kv_u(pk, folio_status_name((int)k), by[k]);
}

#define ONE(name, help) +1
enum {
    NSTATES = 0 FOLIO_WORKER_STATES(ONE)
};
#undef ONE

static const char *
server_state_name(uint64_t st)
{
    switch (st) {
    case FOLIO_SS_STARTING:
        return "starting";
    case FOLIO_SS_SERVING:
        return "serving";
    case FOLIO_SS_RELOADING:
        return "reloading";
    case FOLIO_SS_STOPPING:
        return "stopping";
    }
    return "unknown";
}

/* "request": the one in progress (busy) or the last; nil before any. */
static void
pack_request(msgpack_packer *pk, const struct folio_worker_slot *s,
             uint64_t mono)
{
    uint64_t start = folio_stat_get(&s->ws_req_start_ms);
    unsigned row = atomic_load(&s->ws_req_row);
    int busy = atomic_load(&s->ws_req_busy) != 0;

    folio_pack_cstr(pk, "request");
    if (start == 0) {
        msgpack_pack_nil(pk);
        return;
    }
    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "method");
    folio_pack_cstr(pk, row_name(row));
    folio_pack_cstr(pk, "busy");
    if (busy)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    kv_u(pk, "started_ms_ago", mono > start ? mono - start : 0);
}

int
folio_h_server_stats(struct folio_call *call)
{
    static struct folio_worker_slot total;
    struct folio_stats_region *r = call->w->args->stats;
    struct folio_stats_header *h = folio_stats_header_of(r);
    msgpack_packer *pk = call->pk;
    uint64_t now = folio_unix_ms(), mono = folio_mono_ms(), start, beat;
    uint32_t mstate;
    unsigned i, n = 0, nslots = folio_stats_nslots(r);

    folio_stats_total(r, &total);
    msgpack_pack_map(pk, 3);

    folio_pack_cstr(pk, "server");
    start = folio_stat_get(&h->sh_start_ms);
    msgpack_pack_map(pk, 15);
    folio_pack_cstr(pk, "version");
    folio_pack_cstr(pk, PACKAGE_VERSION);
    kv_u(pk, "pid", folio_stat_get(&h->sh_master_pid));
    kv_f(pk, "start_time", (double)start / 1e3);
    kv_f(pk, "uptime_s", start != 0 ? (double)(now - start) / 1e3 : 0.0);
    kv_u(pk, "generation", folio_stat_get(&h->sh_generation));
    kv_u(pk, "workers", folio_stat_get(&h->sh_workers));
    kv_u(pk, "restarts", folio_stat_get(&h->sh_restarts));
    kv_u(pk, "reloads", folio_stat_get(&h->sh_reloads));
    kv_u(pk, "reload_failures", folio_stat_get(&h->sh_reload_failures));
    kv_u(pk, "recycles", folio_stat_get(&h->sh_recycles));
    /* The master's view: what it serves with, and the shortfall. */
    folio_pack_cstr(pk, "state");
    folio_pack_cstr(pk, server_state_name(folio_stat_get(&h->sh_state)));
    kv_u(pk, "serving", folio_stat_get(&h->sh_serving));
    kv_u(pk, "worker_timeouts", folio_stat_get(&h->sh_worker_timeouts));
    folio_pack_cstr(pk, "worker_states");
    msgpack_pack_map(pk, NSTATES);
#define KV(name, help) kv_u(pk, #name, folio_stat_get(&h->sh_w_##name));
    FOLIO_WORKER_STATES(KV)
#undef KV
    folio_pack_cstr(pk, "healthy");
    if (folio_stat_get(&h->sh_healthy))
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);

    folio_pack_cstr(pk, "totals");
    msgpack_pack_map(pk, NCOMMON + 2);
    pack_counters(pk, &total);
    folio_pack_cstr(pk, "errors_by_code");
    pack_errors_by_code(pk, &total);
    folio_pack_cstr(pk, "methods");
    pack_methods(pk, &total);

    folio_pack_cstr(pk, "workers");
    for (i = 0; i < nslots; i++)
        n += folio_stat_get(&folio_stats_slot(r, i)->ws_pid) != 0;
    msgpack_pack_array(pk, n);
    for (i = 0; i < nslots && n > 0; i++) {
        struct folio_worker_slot *s = folio_stats_slot(r, i);
        uint64_t pid = folio_stat_get(&s->ws_pid), st;

        if (pid == 0)
            continue;
        n--;
        st = folio_stat_get(&s->ws_start_ms);
        mstate = atomic_load(&s->ws_mstate);
        msgpack_pack_map(pk, 10 + NCOMMON);
        kv_u(pk, "slot", i);
        kv_u(pk, "index", atomic_load(&s->ws_index));
        kv_u(pk, "pid", pid);
        kv_u(pk, "generation", folio_stat_get(&s->ws_generation));
        /* The master's view first: it knows a hung worker for one. */
        folio_pack_cstr(pk, "state");
        folio_pack_cstr(pk, folio_stats_state_name(
                                mstate != 0 ? mstate
                                            : atomic_load(&s->ws_state)));
        beat = folio_stat_get(&s->ws_beat_ms);
        kv_u(pk, "heartbeat_age_ms", beat != 0 && mono > beat ? mono - beat : 0);
        pack_request(pk, s, mono);
        kv_f(pk, "start_time", (double)st / 1e3);
        kv_f(pk, "uptime_s", st != 0 ? (double)(now - st) / 1e3 : 0.0);
        kv_u(pk, "maxrss_kb", folio_stat_get(&s->ws_maxrss_kb));
        pack_counters(pk, s);
    }
    return 0;
}
