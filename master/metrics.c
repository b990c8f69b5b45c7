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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "master/master_int.h"
#include "shm/comments.h"
#include "src/addr.h"
#include "src/clock.h"
#include "src/err.h"
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
    evbuffer_add_printf(b, "# HELP folio_%s %s\n# TYPE folio_%s %s\n", name,
                        help, name, type);
}

static const char *
row_name(unsigned r)
{
    return r < folio_nmethods ? folio_methods[r].name : "unknown";
}

static const char *
type_of(const struct folio_stat_desc *d)
{
    return d->kind == FOLIO_SK_COUNTER ? "counter" : "gauge";
}

/* A value of d in its family's base unit. */
static void
value(struct evbuffer *b, const struct folio_stat_desc *d, uint64_t raw)
{
    if (d->unit == FOLIO_SU_US)
        evbuffer_add_printf(b, " %.6f\n", folio_stat_base_units(d, raw));
    else
        evbuffer_add_printf(b, " %.0f\n", folio_stat_base_units(d, raw));
}

/*
 * A histogram of fine buckets (src/hist.h) as Prometheus buckets: a fine
 * bucket counts toward the first bound at or above its upper edge, within
 * the fine buckets' 6% resolution.  `labels`: "" or `name="value",`.
 */
static void
histogram(struct evbuffer *b, const char *family, const char *labels,
          const _Atomic uint64_t *h, uint64_t sum_ns)
{
    uint64_t cum = 0;
    unsigned j, k = 0;
    int n;

    for (j = 0; j < NLE; j++) {
        uint64_t le_ns = (uint64_t)(le_bounds[j] * 1e9 + 0.5);

        while (k < FOLIO_LAT_BUCKETS && folio_lat_bucket_upper(k) <= le_ns)
            cum += folio_stat_get(&h[k++]);
        evbuffer_add_printf(b, "folio_%s_bucket{%sle=\"%g\"} %llu\n", family,
                            labels, le_bounds[j], (unsigned long long)cum);
    }
    while (k < FOLIO_LAT_BUCKETS)
        cum += folio_stat_get(&h[k++]);
    evbuffer_add_printf(b, "folio_%s_bucket{%sle=\"+Inf\"} %llu\n", family,
                        labels, (unsigned long long)cum);
    /* The labels without their trailing comma, in braces, if any. */
    n = labels[0] != '\0' ? (int)strlen(labels) - 1 : 0;
    evbuffer_add_printf(b, "folio_%s_sum%s%.*s%s %.9f\n", family,
                        n > 0 ? "{" : "", n, labels, n > 0 ? "}" : "",
                        (double)sum_ns / 1e9);
    evbuffer_add_printf(b, "folio_%s_count%s%.*s%s %llu\n", family,
                        n > 0 ? "{" : "", n, labels, n > 0 ? "}" : "",
                        (unsigned long long)cum);
}

static void
render_methods(struct evbuffer *b, const struct folio_worker_slot *t)
{
    char labels[96];
    unsigned r, k;

    head(b, "requests_total", "counter",
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
    head(b, "request_duration_seconds", "histogram",
         "Time of requests in the worker, by method: from their bytes read "
         "to their reply packed, the wait behind the requests read with "
         "them included.");
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        const struct folio_method_stats *ms = &t->ws_methods[r];
        uint64_t count = 0;

        for (k = 0; k < FOLIO_ST_MAX; k++)
            count += folio_stat_get(&ms->ms_codes[k]);
        if (count == 0)
            continue;
        snprintf(labels, sizeof(labels), "method=\"%s\",", row_name(r));
        histogram(b, "request_duration_seconds", labels, ms->ms_hist,
                  folio_stat_get(&ms->ms_ns));
    }
    head(b, "request_queue_seconds", "histogram",
         "Time requests waited in the worker after their bytes were read, "
         "before their handler started.");
    histogram(b, "request_queue_seconds", "", t->ws_queue_hist,
              folio_stat_get(&t->ws_queue_ns));
}

/*
 * A worker process's state as the master sees it (decide.c: it knows a
 * stalled one), named as folio_workers' `state` label; NULL for none.
 */
static const char *const state_names[FOLIO_WS_NSTATES] = {
#define LABEL(NAME, value, count, name, help) [FOLIO_WS_##NAME] = #count,
    FOLIO_WORKER_STATE_LIST(LABEL)
#undef LABEL
};

static unsigned
state_of(const struct folio_master *m, unsigned slot)
{
    int st = m->dec.procs[slot].state;

    /* DOWN is a count, no process's state. */
    return st > FOLIO_WS_FREE && st < FOLIO_WS_NSTATES && st != FOLIO_WS_DOWN
               ? (unsigned)st
               : FOLIO_WS_FREE;
}

/*
 * folio_worker_up{worker}: each configured worker of the serving
 * generation, 1 while a process of it serves; folio_worker_state: each
 * process, 1 for its state.
 */
static void
render_workers(struct folio_master *m, struct evbuffer *b)
{
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    const struct folio_dec_gen *g = &m->dec.cur;
    uint64_t now = folio_mono_ms();
    unsigned i, n;
    int k;

    head(b, "workers", "gauge",
         "Worker processes by the master's view of them; down: configured "
         "workers without a process.");
#define STATE(name, help)                                                      \
    evbuffer_add_printf(b, "folio_workers{state=\"" #name "\"} %llu\n",        \
                        (unsigned long long)folio_stat_get(&h->sh_w_##name));
    FOLIO_WORKER_STATES(STATE)
#undef STATE
    head(b, "worker_up", "gauge",
         "1 while a process of the worker (by number, of the serving "
         "generation) accepts connections; 0 while it has none, is "
         "starting, or is stalled.");
    for (k = 0; k < g->nworkers && k < FOLIO_MAX_WORKERS; k++) {
        int up = 0;

        for (i = 0; i < FOLIO_MAX_SLOTS && !up; i++)
            up = folio_dec_live(&m->dec, (int)i) &&
                 m->dec.procs[i].index == k && m->dec.procs[i].gen == g->id &&
                 state_of(m, i) == FOLIO_WS_READY;
        evbuffer_add_printf(b, "folio_worker_up{worker=\"%d\"} %d\n", k, up);
    }
    head(b, "worker_heartbeat_age_seconds", "gauge",
         "Since each worker process's loop last turned (it turns ten times "
         "a second when idle): a stalled worker's grows.");
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        uint64_t beat;

        if (!folio_dec_live(&m->dec, (int)i))
            continue;
        beat = folio_stat_get(&folio_stats_slot(m->stats, i)->ws_beat_ms);
        evbuffer_add_printf(
            b,
            "folio_worker_heartbeat_age_seconds{worker=\"%d\",slot=\"%u\"} "
            "%.3f\n",
            m->dec.procs[i].index, i,
            beat != 0 && now > beat ? (double)(now - beat) / 1e3 : 0.0);
    }
    head(b, "worker_state", "gauge",
         "Each worker process's state: 1 for the one it is in.");
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (!folio_dec_live(&m->dec, (int)i))
            continue;
        for (n = 0; n < FOLIO_WS_NSTATES; n++)
            if (n != FOLIO_WS_FREE && n != FOLIO_WS_DOWN)
                evbuffer_add_printf(
                    b,
                    "folio_worker_state{worker=\"%d\",slot=\"%u\","
                    "state=\"%s\"} %d\n",
                    m->dec.procs[i].index, i, state_names[n],
                    state_of(m, i) == n);
    }
}

/*
 * folio_worker_loop_turn_seconds: the turns of each worker process's loop
 * (worker/loop.c), the time each kept every other request waiting.
 */
static void
render_turns(struct folio_master *m, struct evbuffer *b)
{
    char labels[64];
    unsigned i;

    head(b, "worker_loop_turn_seconds", "histogram",
         "Turns of each worker process's event loop, from its poll's return "
         "to the next poll: how long the requests behind a turn waited.");
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        const struct folio_worker_slot *s;

        if (!folio_dec_live(&m->dec, (int)i))
            continue;
        s = folio_stats_slot(m->stats, i);
        snprintf(labels, sizeof(labels), "worker=\"%d\",slot=\"%u\",",
                 m->dec.procs[i].index, i);
        histogram(b, "worker_loop_turn_seconds", labels, s->ws_turn_hist,
                  folio_stat_get(&s->ws_turn_ns));
    }
}

/* The families of FOLIO_WORKER_STATS: totals, then per live worker. */
static void
render_stats(struct folio_master *m, struct evbuffer *b,
             const struct folio_worker_slot *t)
{
    const char *last = "";
    unsigned k, i;

    for (k = 0; k < folio_worker_nstats; k++) {
        const struct folio_stat_desc *d = &folio_worker_stat_descs[k];

        if (d->total == NULL)
            continue;
        if (strcmp(d->total, last) != 0)
            head(b, d->total, type_of(d), d->help);
        last = d->total;
        evbuffer_add_printf(b, "folio_%s%s%s%s", d->total,
                            d->label[0] != '\0' ? "{" : "", d->label,
                            d->label[0] != '\0' ? "}" : "");
        value(b, d, folio_stat_raw(t, d));
    }
    for (k = 0; k < folio_worker_nstats; k++) {
        const struct folio_stat_desc *d = &folio_worker_stat_descs[k];

        if (d->worker == NULL)
            continue;
        if (strcmp(d->worker, last) != 0)
            head(b, d->worker, type_of(d), d->help);
        last = d->worker;
        for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
            if (!folio_dec_live(&m->dec, (int)i))
                continue;
            evbuffer_add_printf(b, "folio_%s{worker=\"%d\",slot=\"%u\"%s%s}",
                                d->worker, m->dec.procs[i].index, i,
                                d->label[0] != '\0' ? "," : "", d->label);
            value(b, d, folio_stat_raw(folio_stats_slot(m->stats, i), d));
        }
    }
}

/*
 * The accept queue of each TCP listener: Linux's TCP_INFO on a listening
 * socket gives its length (tcpi_unacked) and its bound (tcpi_sacked).
 */
static void
render_listen_queues(struct folio_master *m, struct evbuffer *b)
{
    const struct folio_gen *g = m->cur;
    struct tcp_info ti[FOLIO_MAX_SOCKETS];
    int ok[FOLIO_MAX_SOCKETS], i, n = g != NULL ? g->nlisteners : 0;

    for (i = 0; i < n; i++) {
        socklen_t len = sizeof(ti[i]);

        memset(&ti[i], 0, sizeof(ti[i]));
        ok[i] = getsockopt(g->listeners[i].fd, IPPROTO_TCP, TCP_INFO, &ti[i],
                           &len) == 0 &&
                ti[i].tcpi_state == TCP_LISTEN;
    }
    head(b, "listen_queue_length", "gauge",
         "Connections waiting to be accepted, by TCP listener.");
    for (i = 0; i < n; i++)
        if (ok[i])
            evbuffer_add_printf(b,
                                "folio_listen_queue_length{listener=\"%s\"} "
                                "%u\n",
                                g->listeners[i].name, ti[i].tcpi_unacked);
    head(b, "listen_queue_max", "gauge",
         "The bound of the accept queue (the listen backlog), by TCP "
         "listener.");
    for (i = 0; i < n; i++)
        if (ok[i])
            evbuffer_add_printf(b,
                                "folio_listen_queue_max{listener=\"%s\"} %u\n",
                                g->listeners[i].name, ti[i].tcpi_sacked);
}

int
folio_metrics_render(struct folio_master *m, struct evbuffer *b)
{
    static struct folio_worker_slot t;
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    unsigned k;

    folio_stats_total(m->stats, &t);
    head(b, "build_info", "gauge", "foliod's version.");
    evbuffer_add_printf(b, "folio_build_info{version=\"%s\"} 1\n",
                        PACKAGE_VERSION);
    head(b, "start_time_seconds", "gauge",
         "When the master started, seconds since the Unix epoch.");
    evbuffer_add_printf(b, "folio_start_time_seconds %.3f\n",
                        (double)folio_stat_get(&h->sh_start_ms) / 1e3);
    for (k = 0; k < folio_server_nstats; k++) {
        const struct folio_stat_desc *d = &folio_server_stat_descs[k];

        head(b, d->total, type_of(d), d->help);
        evbuffer_add_printf(b, "folio_%s", d->total);
        value(b, d, folio_stat_raw(h, d));
    }
    render_workers(m, b);
    render_methods(b, &t);
    render_stats(m, b, &t);
    render_turns(m, b);
    head(b, "comments_store_max_bytes", "gauge",
         "The comments store's ceiling (comments_max_size).");
    evbuffer_add_printf(
        b, "folio_comments_store_max_bytes %llu\n",
        (unsigned long long)(m->cur == NULL ? 0
                             : m->cur->cfg.comments_max_size != 0
                                 ? m->cur->cfg.comments_max_size
                                 : FOLIO_COMMENTS_MAX_SIZE_DEFAULT));
    render_listen_queues(m, b);
    folio_mconn_render(m, b);
    folio_metrics_process(b);
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

    folio_mconn_request(m, req); /* its header's deadline is met */
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

/* cfg's metrics address, parsed into *a: 0, or -1 with the reason. */
static int
metrics_addr(const struct folio_config *cfg, struct folio_addr *a, char *err,
             size_t errlen)
{
    char why[256], name[300];

    folio_config_name(cfg, "metrics-listen", name, sizeof(name));
    if (folio_addr_parse(cfg->metrics_listen, a, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", name, why);
        return -1;
    }
    if (a->family == AF_UNIX) {
        snprintf(err, errlen, "%s: %s: HTTP needs a TCP address", name,
                 cfg->metrics_listen);
        return -1;
    }
    return 0;
}

int
folio_metrics_check(const struct folio_config *cfg, char *err, size_t errlen)
{
    struct folio_addr a;

    if (cfg->metrics_listen == NULL)
        return 0;
    return metrics_addr(cfg, &a, err, errlen) == 0 ? 0 : FOLIO_ECONFIG;
}

int
folio_metrics_start(struct folio_master *m, int fd, char *err, size_t errlen)
{
    const char *spec = m->cur->cfg.metrics_listen;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct evhttp_bound_socket *bound = NULL;
    struct folio_addr a;
    char why[256];

    if (spec == NULL) {
        if (fd != -1)
            close(fd);
        return 0;
    }
    if (metrics_addr(&m->cur->cfg, &a, err, errlen) != 0) {
        if (fd != -1)
            close(fd);
        return -1;
    }
    if (fd == -1 && (fd = folio_addr_listen(&a, 64, 0, why, sizeof(why))) == -1) {
        folio_listen_error(err, errlen, &m->cur->cfg, "metrics-listen", spec,
                           why, errno);
        return -1;
    }
    if ((m->metrics = evhttp_new(m->base)) == NULL ||
        (bound = evhttp_accept_socket_with_handle(m->metrics, fd)) == NULL ||
        folio_mconn_start(m, bound) != 0) {
        snprintf(err, errlen, "evhttp failed for %s", spec);
        if (bound == NULL)
            close(fd);
        folio_metrics_stop(m);
        return -1;
    }
    m->metrics_fd = fd;
    evhttp_set_allowed_methods(m->metrics, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
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
    folio_mconn_stop(m); /* frees m->metrics: closes the bound socket */
    m->metrics_fd = -1;
    m->metrics_name[0] = '\0';
}
