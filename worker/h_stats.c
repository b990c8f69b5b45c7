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

/*
 * The statistics of FOLIO_WORKER_STATS: a worker's (`totals` 0) or the
 * totals (FOLIO_SK_PROCESS ones have none).  Returns how many entries
 * it packed, or with pk NULL would pack.
 */
static unsigned
pack_stats(msgpack_packer *pk, const struct folio_worker_slot *s, int totals)
{
    unsigned k, n = 0;

    for (k = 0; k < folio_worker_nstats; k++) {
        const struct folio_stat_desc *d = &folio_worker_stat_descs[k];

        if (totals && d->kind == FOLIO_SK_PROCESS)
            continue;
        n++;
        if (pk == NULL)
            continue;
        if (d->unit == FOLIO_SU_US)
            kv_f(pk, d->key, folio_stat_base_units(d, folio_stat_raw(s, d)));
        else
            kv_u(pk, d->key, folio_stat_raw(s, d));
    }
    return n;
}

/* mean_us, p50_us, p90_us, p99_us, p999_us of a latency histogram. */
#define NLATENCY 5
static void
pack_latency(msgpack_packer *pk, const _Atomic uint64_t *h, uint64_t ns,
             uint64_t calls)
{
    uint64_t hist[FOLIO_LAT_BUCKETS];
    unsigned k;

    for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
        hist[k] = folio_stat_get(&h[k]);
    kv_f(pk, "mean_us", calls > 0 ? (double)ns / 1e3 / (double)calls : 0.0);
    kv_f(pk, "p50_us", (double)folio_lat_percentile(hist, 0.5) / 1e3);
    kv_f(pk, "p90_us", (double)folio_lat_percentile(hist, 0.9) / 1e3);
    kv_f(pk, "p99_us", (double)folio_lat_percentile(hist, 0.99) / 1e3);
    kv_f(pk, "p999_us", (double)folio_lat_percentile(hist, 0.999) / 1e3);
}

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
    uint64_t calls, errors;
    unsigned r, k, n = 0, codes;

    for (r = 0; r < FOLIO_METHOD_ROWS; r++)
        n += row_calls(&s->ws_methods[r], &errors) > 0;
    msgpack_pack_map(pk, n);
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        const struct folio_method_stats *ms = &s->ws_methods[r];

        if ((calls = row_calls(ms, &errors)) == 0)
            continue;
        folio_pack_cstr(pk, row_name(r));
        msgpack_pack_map(pk, 3 + NLATENCY);
        kv_u(pk, "calls", calls);
        kv_u(pk, "errors", errors);
        pack_latency(pk, ms->ms_hist, folio_stat_get(&ms->ms_ns), calls);
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
    msgpack_pack_map(pk, 8 + folio_server_nstats);
    folio_pack_cstr(pk, "version");
    folio_pack_cstr(pk, PACKAGE_VERSION);
    kv_u(pk, "pid", folio_stat_get(&h->sh_master_pid));
    kv_f(pk, "start_time", (double)start / 1e3);
    kv_f(pk, "uptime_s", start != 0 ? (double)(now - start) / 1e3 : 0.0);
    for (i = 0; i < folio_server_nstats; i++)
        kv_u(pk, folio_server_stat_descs[i].key,
             folio_stat_raw(h, &folio_server_stat_descs[i]));
    /* The master's view: what it serves with, and the shortfall. */
    folio_pack_cstr(pk, "state");
    folio_pack_cstr(pk, server_state_name(folio_stat_get(&h->sh_state)));
    kv_u(pk, "serving", folio_stat_get(&h->sh_serving));
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
    msgpack_pack_map(pk, pack_stats(NULL, &total, 1) + 3);
    pack_stats(pk, &total, 1);
    folio_pack_cstr(pk, "queue");
    msgpack_pack_map(pk, NLATENCY);
    pack_latency(pk, total.ws_queue_hist, folio_stat_get(&total.ws_queue_ns),
                 folio_stat_get(&total.ws_requests) +
                     folio_stat_get(&total.ws_notifications));
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
        msgpack_pack_map(pk, 9 + pack_stats(NULL, s, 0));
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
        pack_stats(pk, s, 0);
    }
    return 0;
}
