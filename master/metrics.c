/*
 * metrics.c - Prometheus text exposition (version 0.0.4) over HTTP,
 * served by the master with libevent's evhttp on metrics_listen, and the
 * health endpoints for load balancers (PROTOCOL.md section 6): /healthz
 * and /readyz, as decide.c judged it (the region's header says).
 * Everything comes from the shared stats region: totals that include the
 * workers that exited, and per-worker series labelled by worker index and
 * stats slot.  Names follow Prometheus's conventions: base units, _total
 * for counters.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "master/master_int.h"
#include "src/addr.h"
#include "src/hist.h"
#include "src/log.h"
#include "worker/dispatch.h"

/* Upper bounds of the duration histogram, in seconds. */
static const double le_bounds[] = {
    0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025,   0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   0.5,
    1,        2.5,     5,        10,
};
#define NLE (sizeof(le_bounds) / sizeof(le_bounds[0]))

static void
head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                        type);
}

static const char *
row_name(unsigned r)
{
    return r < folio_nmethods ? folio_methods[r].name : "unknown";
}

static void
render_methods(struct evbuffer *b, const struct folio_worker_slot *t)
{
    unsigned r, k, j;

    head(b, "folio_requests_total", "counter",
         "Requests and notifications answered, by method and status code.");
    for (r = 0; r < FOLIO_METHOD_ROWS; r++)
        for (k = 0; k < FOLIO_ST_MAX; k++) {
            uint64_t v = folio_stat_get(&t->ws_methods[r].ms_codes[k]);

            if (v > 0)
                evbuffer_add_printf(
                    b, "folio_requests_total{method=\"%s\",code=\"%s\"} %llu\n",
                    row_name(r), folio_status_name((int)k),
                    (unsigned long long)v);
        }
    head(b, "folio_request_duration_seconds", "histogram",
         "Server time per request (decode to reply packed), by method.");
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        const struct folio_method_stats *ms = &t->ws_methods[r];
        uint64_t count = 0, cum = 0;

        for (k = 0; k < FOLIO_ST_MAX; k++)
            count += folio_stat_get(&ms->ms_codes[k]);
        if (count == 0)
            continue;
        /*
         * A fine bucket counts toward the first bound at or above its
         * upper edge: within the fine buckets' 6% resolution.
         */
        k = 0;
        for (j = 0; j < NLE; j++) {
            uint64_t le_ns = (uint64_t)(le_bounds[j] * 1e9 + 0.5);

            while (k < FOLIO_LAT_BUCKETS &&
                   folio_lat_bucket_upper(k) <= le_ns) {
                cum += folio_stat_get(&ms->ms_hist[k]);
                k++;
            }
            evbuffer_add_printf(
                b,
                "folio_request_duration_seconds_bucket{method=\"%s\",le=\"%g\"}"
                " %llu\n",
                row_name(r), le_bounds[j], (unsigned long long)cum);
        }
        evbuffer_add_printf(b,
                            "folio_request_duration_seconds_bucket{method=\"%s\""
                            ",le=\"+Inf\"} %llu\n",
                            row_name(r), (unsigned long long)count);
        evbuffer_add_printf(
            b, "folio_request_duration_seconds_sum{method=\"%s\"} %.9f\n",
            row_name(r), (double)folio_stat_get(&ms->ms_ns) / 1e9);
        evbuffer_add_printf(
            b, "folio_request_duration_seconds_count{method=\"%s\"} %llu\n",
            row_name(r), (unsigned long long)count);
    }
}

/* One counter or gauge from the totals. */
static void
total(struct evbuffer *b, const char *name, const char *type,
      const char *help, uint64_t v)
{
    head(b, name, type, help);
    evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

typedef uint64_t (*slot_value)(const struct folio_worker_slot *s);

static uint64_t v_conns(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_conns_open); }
static uint64_t v_allocs(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_alloc.ac_calls); }
static uint64_t v_abytes(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_alloc.ac_bytes); }
static uint64_t v_frees(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_alloc.ac_frees); }
static uint64_t v_heap(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_heap_inuse); }
static uint64_t v_req(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_requests); }
static uint64_t v_rss(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_maxrss_kb) * 1024; }
static uint64_t v_out(const struct folio_worker_slot *s) { return folio_stat_get(&s->ws_output_bytes); }

/* A per-worker series over every live slot. */
static void
per_worker(struct folio_master *m, struct evbuffer *b, const char *name,
           const char *type, const char *help, slot_value fn)
{
    int i;

    head(b, name, type, help);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (!folio_dec_live(&m->dec, i))
            continue;
        evbuffer_add_printf(b, "%s{worker=\"%d\",slot=\"%d\"} %llu\n", name,
                            m->dec.procs[i].index, i,
                            (unsigned long long)fn(folio_stats_slot(
                                m->stats, (unsigned)i)));
    }
}

static uint64_t
v_ccache(const struct folio_worker_slot *s)
{
    return folio_stat_get(&s->ws_comments_cache_bytes);
}
static uint64_t
v_dbup(const struct folio_worker_slot *s)
{
    return folio_stat_get(&s->ws_comments_db_up);
}

/* The comments' postgres backend: its page cache and its connections. */
static const struct {
    const char *name, *help;
    size_t off; /* of the counter in struct folio_worker_slot */
} comments_counters[] = {
    {"folio_comments_cache_hits_total",
     "comments.list answered from the page cache (postgres backend).",
     offsetof(struct folio_worker_slot, ws_comments_cache_hits)},
    {"folio_comments_cache_misses_total",
     "comments.list asked of the database (postgres backend).",
     offsetof(struct folio_worker_slot, ws_comments_cache_misses)},
    {"folio_comments_cache_invalidations_total",
     "Cached pages dropped on a notification from PostgreSQL.",
     offsetof(struct folio_worker_slot, ws_comments_cache_invalidations)},
    {"folio_comments_db_connects_total",
     "Connections to the comments database made.",
     offsetof(struct folio_worker_slot, ws_comments_db_connects)},
    {"folio_comments_db_unavailable_total",
     "Comments calls answered 14 because the database was down.",
     offsetof(struct folio_worker_slot, ws_comments_db_unavailable)},
};

static void
render_comments(struct folio_master *m, struct evbuffer *b,
                const struct folio_worker_slot *t)
{
    size_t i;

    for (i = 0; i < sizeof(comments_counters) / sizeof(comments_counters[0]);
         i++)
        total(b, comments_counters[i].name, "counter",
              comments_counters[i].help,
              folio_stat_get((const _Atomic uint64_t *)(const void *)(
                  (const char *)t + comments_counters[i].off)));
    per_worker(m, b, "folio_comments_cache_bytes", "gauge",
               "Bytes held by each live worker's page cache.", v_ccache);
    per_worker(m, b, "folio_comments_db_up", "gauge",
               "1 while the live worker is connected to the database.",
               v_dbup);
}

int
folio_metrics_render(struct folio_master *m, struct evbuffer *b)
{
    static struct folio_worker_slot t;
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    int i;

    folio_stats_total(m->stats, &t);
    head(b, "folio_build_info", "gauge", "foliod's version.");
    evbuffer_add_printf(b, "folio_build_info{version=\"%s\"} 1\n",
                        PACKAGE_VERSION);
    head(b, "folio_start_time_seconds", "gauge",
         "When the master started, seconds since the Unix epoch.");
    evbuffer_add_printf(b, "folio_start_time_seconds %.3f\n",
                        (double)folio_stat_get(&h->sh_start_ms) / 1e3);
    total(b, "folio_generation", "gauge",
          "Configuration generation being served (1 + reloads).",
          folio_stat_get(&h->sh_generation));
    total(b, "folio_workers_configured", "gauge",
          "Workers of the serving generation's configuration.",
          folio_stat_get(&h->sh_workers));
    head(b, "folio_workers", "gauge",
         "Worker processes by the master's view of them; down: configured "
         "workers without a process.");
#define STATE(name, help)                                                      \
    evbuffer_add_printf(b, "folio_workers{state=\"" #name "\"} %llu\n",       \
                        (unsigned long long)folio_stat_get(&h->sh_w_##name));
    FOLIO_WORKER_STATES(STATE)
#undef STATE
    total(b, "folio_worker_timeouts_total", "counter",
          "Workers killed by the watchdog (worker_timeout).",
          folio_stat_get(&h->sh_worker_timeouts));
    total(b, "folio_worker_restarts_total", "counter",
          "Workers replaced after they died.",
          folio_stat_get(&h->sh_restarts));
    total(b, "folio_reloads_total", "counter", "Reloads completed.",
          folio_stat_get(&h->sh_reloads));
    total(b, "folio_reload_failures_total", "counter",
          "Reloads that failed and kept the old generation.",
          folio_stat_get(&h->sh_reload_failures));
    total(b, "folio_worker_recycles_total", "counter",
          "Workers replaced after max_requests_per_worker requests.",
          folio_stat_get(&h->sh_recycles));
    render_methods(b, &t);
    total(b, "folio_notifications_total", "counter",
          "Notifications executed (never answered).",
          folio_stat_get(&t.ws_notifications));
    total(b, "folio_received_bytes_total", "counter",
          "Bytes read from clients.", folio_stat_get(&t.ws_bytes_in));
    total(b, "folio_sent_bytes_total", "counter", "Bytes written to clients.",
          folio_stat_get(&t.ws_bytes_out));
    total(b, "folio_connections_accepted_total", "counter",
          "Connections accepted or taken over from a retiring worker.",
          folio_stat_get(&t.ws_conns_accepted));
    total(b, "folio_connections_rejected_total", "counter",
          "Connections refused over max_connections or for want of file "
          "descriptors.",
          folio_stat_get(&t.ws_conns_rejected));
    total(b, "folio_connections_handed_off_total", "counter",
          "Connections handed to a newer worker at reload or recycling.",
          folio_stat_get(&t.ws_conns_handed_off));
    total(b, "folio_protocol_errors_total", "counter",
          "Connections closed for malformed input.",
          folio_stat_get(&t.ws_protocol_errors));
    total(b, "folio_connection_timeouts_total", "counter",
          "Connections closed idle or too slow.",
          folio_stat_get(&t.ws_timeouts));
    total(b, "folio_output_waits_total", "counter",
          "Requests that waited for room for their replies (max_output_bytes, "
          "max_output_total).",
          folio_stat_get(&t.ws_output_waits));
    head(b, "folio_cpu_seconds_total", "counter",
         "CPU time of all workers, including those that exited.");
    evbuffer_add_printf(b, "folio_cpu_seconds_total{mode=\"user\"} %.6f\n",
                        (double)folio_stat_get(&t.ws_cpu_user_us) / 1e6);
    evbuffer_add_printf(b, "folio_cpu_seconds_total{mode=\"system\"} %.6f\n",
                        (double)folio_stat_get(&t.ws_cpu_sys_us) / 1e6);
    total(b, "folio_allocations_total", "counter",
          "Heap allocation calls in all workers, including those that exited.",
          folio_stat_get(&t.ws_alloc.ac_calls));

    head(b, "folio_worker_cpu_seconds_total", "counter",
         "CPU time of each live worker.");
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        struct folio_worker_slot *s;

        if (!folio_dec_live(&m->dec, i))
            continue;
        s = folio_stats_slot(m->stats, (unsigned)i);
        evbuffer_add_printf(
            b,
            "folio_worker_cpu_seconds_total{worker=\"%d\",slot=\"%d\","
            "mode=\"user\"} %.6f\n"
            "folio_worker_cpu_seconds_total{worker=\"%d\",slot=\"%d\","
            "mode=\"system\"} %.6f\n",
            m->dec.procs[i].index, i,
            (double)folio_stat_get(&s->ws_cpu_user_us) / 1e6,
            m->dec.procs[i].index, i,
            (double)folio_stat_get(&s->ws_cpu_sys_us) / 1e6);
    }
    per_worker(m, b, "folio_worker_requests_total", "counter",
               "Requests answered by each live worker.", v_req);
    per_worker(m, b, "folio_worker_allocations_total", "counter",
               "Heap allocation calls of each live worker.", v_allocs);
    per_worker(m, b, "folio_worker_allocated_bytes_total", "counter",
               "Bytes handed out by the heap to each live worker.", v_abytes);
    per_worker(m, b, "folio_worker_frees_total", "counter",
               "free() calls of each live worker.", v_frees);
    per_worker(m, b, "folio_worker_heap_inuse_bytes", "gauge",
               "Heap bytes in use in each live worker.", v_heap);
    per_worker(m, b, "folio_worker_max_resident_bytes", "gauge",
               "Peak resident set of each live worker.", v_rss);
    per_worker(m, b, "folio_connections", "gauge",
               "Connections open on each live worker.", v_conns);
    per_worker(m, b, "folio_worker_output_bytes", "gauge",
               "Output buffered beyond the connections' base size in each "
               "live worker (bounded by max_output_total).",
               v_out);
    render_comments(m, b, &t);
    return 0;
}

static void
serve_metrics(struct folio_master *m, struct evhttp_request *req,
              struct evbuffer *b)
{
    folio_metrics_render(m, b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", b);
}

/* /healthz and /readyz: 200 "ok", or 503 with the reason. */
static void
serve_health(struct folio_master *m, struct evhttp_request *req,
             struct evbuffer *b, int readiness)
{
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    unsigned long long configured = folio_stat_get(&h->sh_workers),
                       serving = folio_stat_get(&h->sh_serving);
    int ok = folio_stat_get(readiness ? &h->sh_ready : &h->sh_healthy) != 0;

    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control",
                      "no-store");
    if (ok) {
        evbuffer_add_printf(b, "ok\n");
        evhttp_send_reply(req, 200, "OK", b);
        return;
    }
    if (folio_stat_get(&h->sh_state) == FOLIO_SS_STOPPING)
        evbuffer_add_printf(b, "stopping\n");
    else
        evbuffer_add_printf(b, "%llu of %llu workers serving\n", serving,
                            configured);
    evhttp_send_reply(req, 503, "Service Unavailable", b);
}

/* The paths served (PROTOCOL.md section 6). */
enum route { R_METRICS, R_HEALTHZ, R_READYZ };

static const struct {
    const char *path;
    enum route route;
} routes[] = {
    {"/", R_METRICS},
    {"/metrics", R_METRICS},
    {"/healthz", R_HEALTHZ},
    {"/readyz", R_READYZ},
};

static void
on_request(struct evhttp_request *req, void *arg)
{
    struct folio_master *m = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    struct evbuffer *b;
    size_t i;

    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
        evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
        evhttp_send_error(req, 405, "Method Not Allowed");
        return;
    }
    if (folio_profile_http(m, req)) /* /debug/pprof/: profile.c */
        return;
    for (i = 0; path != NULL && i < sizeof(routes) / sizeof(routes[0]); i++)
        if (strcmp(path, routes[i].path) == 0)
            break;
    if (path == NULL || i == sizeof(routes) / sizeof(routes[0])) {
        evhttp_send_error(req, 404,
                          "Not Found: try /metrics, /healthz, /readyz or "
                          "/debug/pprof/");
        return;
    }
    if ((b = evbuffer_new()) == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    switch (routes[i].route) {
    case R_METRICS:
        serve_metrics(m, req, b);
        break;
    case R_HEALTHZ:
    case R_READYZ:
        serve_health(m, req, b, routes[i].route == R_READYZ);
        break;
    }
    evbuffer_free(b);
}

int
folio_metrics_start(struct folio_master *m, int fd, char *err, size_t errlen)
{
    const char *spec = m->cur->cfg.metrics_listen;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct folio_addr a;
    char why[256];

    if (spec == NULL) {
        if (fd != -1)
            close(fd);
        return 0;
    }
    if (folio_addr_parse(spec, &a, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "metrics address %s", why);
        if (fd != -1)
            close(fd);
        return -1;
    }
    if (a.family == AF_UNIX) {
        snprintf(err, errlen, "metrics_listen %s: HTTP needs a TCP address",
                 spec);
        if (fd != -1)
            close(fd);
        return -1;
    }
    if (fd == -1 && (fd = folio_addr_listen(&a, 64, 0, why, sizeof(why))) == -1) {
        snprintf(err, errlen, "cannot listen for metrics on %s: %s: %s", spec,
                 why, strerror(errno));
        return -1;
    }
    if ((m->metrics = evhttp_new(m->base)) == NULL ||
        evhttp_accept_socket_with_handle(m->metrics, fd) == NULL) {
        snprintf(err, errlen, "evhttp failed for %s", spec);
        close(fd);
        folio_metrics_stop(m);
        return -1;
    }
    m->metrics_fd = fd;
    evhttp_set_allowed_methods(m->metrics, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(m->metrics, 10);
    evhttp_set_max_headers_size(m->metrics, 16384);
    evhttp_set_max_body_size(m->metrics, 0);
    evhttp_set_gencb(m->metrics, on_request, m);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        folio_addr_format((struct sockaddr *)&ss, sl, m->metrics_name,
                          sizeof(m->metrics_name));
    else
        snprintf(m->metrics_name, sizeof(m->metrics_name), "%s", spec);
    folio_log_notice("metrics on http://%s/metrics", m->metrics_name);
    return 0;
}

void
folio_metrics_stop(struct folio_master *m)
{
    folio_profile_abort(m);
    if (m->metrics != NULL)
        evhttp_free(m->metrics); /* closes the bound socket */
    m->metrics = NULL;
    m->metrics_fd = -1;
    m->metrics_name[0] = '\0';
}
