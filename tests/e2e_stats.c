/*
 * e2e_stats.c - the counters, end to end: server.stats moves by exactly
 * what was sent, a killed worker's counts stay in the totals, the metrics
 * page is valid Prometheus text (promtool when installed, and a strict
 * parser here), the periodic window line, and the zero-allocation proof:
 * after warm-up, 10,000 requests of each read method leave the heap
 * allocation counter where it was.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/addr.h"
#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

#define NUM(r, ...) e2e_stat_num((r), __VA_ARGS__, (const char *)NULL)

/* Send n requests of `method` (no params) pipelined, read n replies. */
static void
pipelined(struct folio_client *c, const char *method, int n, int want_code)
{
    struct folio_reply r;
    int i;

    for (i = 0; i < n; i++)
        folio_client_request(c, 0, method, 0, NULL);
    ck_assert_int_eq(folio_client_flush(c), 0);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, want_code);
    }
}

START_TEST(test_counters_move_exactly)
{
    struct folio_client *c, *a;
    struct folio_reply r;
    msgpack_packer *pk;
    double req0, notif0, err0, ping0, unimpl0, inval0;
    int i;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    c = e2e_connect(&srv);
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    req0 = NUM(&r, "totals", "requests");
    notif0 = NUM(&r, "totals", "notifications");
    err0 = NUM(&r, "totals", "errors");
    ping0 = NUM(&r, "totals", "methods", "server.ping", "calls");
    if (isnan(ping0))
        ping0 = 0;
    unimpl0 = NUM(&r, "totals", "errors_by_code", "UNIMPLEMENTED");
    inval0 = NUM(&r, "totals", "errors_by_code", "INVALID_ARGUMENT");
    ck_assert(!isnan(req0) && !isnan(notif0) && !isnan(err0));
    ck_assert_double_eq(NUM(&r, "server", "workers"), 2);
    ck_assert_double_eq(NUM(&r, "server", "generation"), 1);
    ck_assert_double_eq(NUM(&r, "server", "pid"), srv.pid);

    pipelined(c, "server.ping", 1000, 0);
    pipelined(c, "no.such.method", 7, FOLIO_ST_UNIMPLEMENTED);
    for (i = 0; i < 5; i++) {
        pk = folio_client_request(c, 0, "server.ping", 1, NULL);
        msgpack_pack_int(pk, i);
    }
    folio_client_flush(c);
    for (i = 0; i < 5; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, FOLIO_ST_INVALID_ARGUMENT);
    }
    for (i = 0; i < 3; i++)
        folio_client_request(c, 1, "server.ping", 0, NULL);
    folio_client_flush(c);
    ck_assert_int_eq(e2e_ping(c), 0); /* the notifications are done */

    ck_assert_int_eq(e2e_stats(a, &r), 0);
    /* +1 for the first server.stats, +1 for the last ping. */
    ck_assert_double_eq(NUM(&r, "totals", "requests"),
                        req0 + 1 + 1000 + 7 + 5 + 1);
    ck_assert_double_eq(NUM(&r, "totals", "notifications"), notif0 + 3);
    ck_assert_double_eq(NUM(&r, "totals", "errors"), err0 + 12);
    ck_assert_double_eq(NUM(&r, "totals", "methods", "server.ping", "calls"),
                        ping0 + 1000 + 5 + 3 + 1);
    ck_assert_double_eq(NUM(&r, "totals", "methods", "server.ping", "errors"),
                        5);
    ck_assert_double_eq(NUM(&r, "totals", "errors_by_code", "UNIMPLEMENTED"),
                        (isnan(unimpl0) ? 0 : unimpl0) + 7);
    ck_assert_double_eq(
        NUM(&r, "totals", "errors_by_code", "INVALID_ARGUMENT"),
        (isnan(inval0) ? 0 : inval0) + 5);
    ck_assert_double_eq(NUM(&r, "totals", "methods", "(unknown)", "calls"), 7);
    ck_assert(NUM(&r, "totals", "methods", "server.ping", "p99_us") > 0);
    ck_assert(NUM(&r, "totals", "bytes_in") > 1000 * 15);
    ck_assert(NUM(&r, "totals", "conns_open") >= 2);
    ck_assert(!isnan(NUM(&r, "workers", "#1", "pid")));
    ck_assert(isnan(NUM(&r, "workers", "#2", "pid")));
    /*
     * CPU: refreshed on the workers' tick, so after one it holds their
     * start and these requests: more than nothing (rusage counts us).
     */
    ck_assert_int_eq(e2e_wait_tick(&srv, e2e_bound_ms(5000, 15000)), 0);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    ck_assert_msg(NUM(&r, "totals", "cpu_user_s") +
                          NUM(&r, "totals", "cpu_sys_s") >
                      0,
                  "the workers' CPU: %g s user, %g s system",
                  NUM(&r, "totals", "cpu_user_s"),
                  NUM(&r, "totals", "cpu_sys_s"));
    folio_client_close(c);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_admin_only)
{
    struct folio_client *c;
    struct folio_reply r;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    c = e2e_connect(&srv);
    ck_assert_int_eq(folio_client_call0(c, "server.stats", &r), 1);
    ck_assert_int_eq(r.code, FOLIO_ST_PERMISSION_DENIED);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_killed_worker_counts_kept)
{
    struct folio_client *c, *a;
    struct folio_reply r;
    double before, pid;
    uint64_t deadline;
    int i, n;

    ck_assert_int_eq(e2e_start(&srv, "workers = 1\n", NULL), 0);
    c = e2e_connect(&srv);
    pipelined(c, "server.ping", 500, 0);
    folio_client_close(c);
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    before = NUM(&r, "totals", "requests");
    pid = NUM(&r, "workers", "#0", "pid");
    ck_assert(before >= 500);
    folio_client_close(a);
    ck_assert_int_eq(kill((pid_t)pid, SIGKILL), 0);
    /* Wait for the replacement, then compare. */
    deadline = e2e_now_ms() + 5000;
    for (;;) {
        a = e2e_connect_admin(&srv);
        n = a != NULL && e2e_stats(a, &r) == 0;
        if (n && NUM(&r, "server", "restarts") == 1 &&
            !isnan(NUM(&r, "workers", "#0", "pid")) &&
            NUM(&r, "workers", "#0", "pid") != pid)
            break;
        folio_client_close(a);
        ck_assert_msg(e2e_now_ms() < deadline, "no replacement worker");
    }
    /* +1: the stats call that read `before` was counted after it answered. */
    ck_assert_double_ge(NUM(&r, "totals", "requests"), before + 1);
    ck_assert_double_le(NUM(&r, "totals", "requests"), before + 1 + 100);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    ck_assert_double_ge(NUM(&r, "totals", "requests"), before + 3);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static void
http_get(const char *addr, const char *path, struct folio_http_answer *a)
{
    char err[512];

    ck_assert_msg(
        folio_http_get(addr, path, E2E_HTTP_MS, a, err, sizeof(err)) == 0,
        "GET http://%s%s: %s", addr, path, err);
}

/*
 * A strict reading of the text exposition format: every sample's family
 * has HELP and TYPE lines first, names and label names are well formed,
 * values parse, counters end in _total, histogram buckets are cumulative
 * and end with +Inf equal to _count.
 */
static void
check_exposition(const char *body, double *ping_ok)
{
    char family[128] = "", type[32] = "", name[128], line[1024];
    const char *p = body, *nl;
    double last_bucket = -1, v;
    int have_help = 0, samples = 0;

    *ping_ok = -1;
    while (*p != '\0') {
        size_t len;
        char *q, *end;

        nl = strchr(p, '\n');
        ck_assert_msg(nl != NULL, "last line lacks a newline");
        len = (size_t)(nl - p);
        ck_assert_uint_lt(len, sizeof(line));
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        if (strncmp(line, "# HELP ", 7) == 0) {
            ck_assert_int_eq(sscanf(line + 7, "%127s", family), 1);
            have_help = 1;
            type[0] = '\0';
            last_bucket = -1;
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            ck_assert_int_eq(sscanf(line + 7, "%127s %31s", name, type), 2);
            ck_assert_str_eq(name, family);
            ck_assert(strcmp(type, "counter") == 0 ||
                      strcmp(type, "gauge") == 0 ||
                      strcmp(type, "histogram") == 0);
            if (strcmp(type, "counter") == 0)
                ck_assert_msg(strlen(family) > 6 &&
                                  strcmp(family + strlen(family) - 6,
                                         "_total") == 0,
                              "counter %s lacks _total", family);
            continue;
        }
        ck_assert_msg(line[0] != '#', "stray comment: %s", line);
        ck_assert_msg(have_help && type[0] != '\0', "no HELP/TYPE: %s", line);
        /* name */
        for (q = line; *q != '\0' && *q != '{' && *q != ' '; q++)
            ck_assert_msg(isalnum((unsigned char)*q) || *q == '_' ||
                              *q == ':',
                          "bad name: %s", line);
        ck_assert_msg(strncmp(line, family, strlen(family)) == 0,
                      "%s outside its family %s", line, family);
        if (*q == '{') {
            /* labels: name="value",... */
            q++;
            while (*q != '}') {
                ck_assert_msg(isalpha((unsigned char)*q) || *q == '_',
                              "bad label: %s", line);
                while (isalnum((unsigned char)*q) || *q == '_')
                    q++;
                ck_assert_msg(q[0] == '=' && q[1] == '"', "bad label: %s",
                              line);
                q += 2;
                while (*q != '"') {
                    ck_assert_msg(*q != '\0', "open label: %s", line);
                    if (*q == '\\')
                        q++;
                    q++;
                }
                q++;
                if (*q == ',')
                    q++;
            }
            q++;
        }
        ck_assert_msg(*q == ' ', "no value: %s", line);
        v = strtod(q + 1, &end);
        ck_assert_msg(end != q + 1 && (*end == '\0' || *end == ' '),
                      "bad value: %s", line);
        if (strcmp(type, "histogram") == 0 && strstr(line, "_bucket{")) {
            ck_assert_msg(v >= last_bucket, "buckets not cumulative: %s",
                          line);
            last_bucket = strstr(line, "le=\"+Inf\"") ? -1 : v;
        }
        if (strncmp(line,
                    "folio_requests_total{method=\"server.ping\",code=\"OK\"}",
                    52) == 0)
            *ping_ok = v;
        samples++;
    }
    ck_assert_int_gt(samples, 20);
}

START_TEST(test_metrics_prometheus)
{
    struct folio_client *c;
    struct folio_http_answer a;
    double ping_ok;
    char *text;

    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = 127.0.0.1:0\n", NULL),
                     0);
    ck_assert_msg(srv.metrics[0] != '\0', "no metrics line in the ready file");
    c = e2e_connect(&srv);
    pipelined(c, "server.ping", 321, 0);
    folio_client_close(c);
    http_get(srv.metrics, "/metrics", &a);
    ck_assert_int_eq(a.status, 200);
    ck_assert_ptr_nonnull(strstr(a.head.b_data, "text/plain; version=0.0.4"));
    text = a.body.b_data;
    check_exposition(text, &ping_ok);
    ck_assert_double_eq(ping_ok, 321);
    ck_assert_ptr_nonnull(strstr(text, "folio_worker_cpu_seconds_total{"));
    ck_assert_ptr_nonnull(strstr(text, "folio_worker_heap_inuse_bytes{"));
    ck_assert_ptr_nonnull(
        strstr(text, "folio_request_duration_seconds_bucket{method=\"server."
                     "ping\",le=\"+Inf\"} 321"));
    /* Prometheus's own parser reads it too: e2e_prometheus. */
    folio_http_answer_free(&a);
    http_get(srv.metrics, "/nope", &a);
    ck_assert_int_eq(a.status, 404);
    folio_http_answer_free(&a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_window_line)
{
    ck_assert_int_eq(e2e_start(&srv, "stats_log_interval = 200ms\n", NULL), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "window: worker 0", 5000), 0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * The oracle of the zero-allocation hot path: warm up, then 10,000 more
 * requests, and the workers' allocation counter must not move.
 */
static void
assert_no_alloc(const char *method)
{
    struct folio_client *c[4], *a;
    struct folio_reply r;
    double before, after;
    int i, k;

    for (i = 0; i < 4; i++) {
        c[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(c[i]);
    }
    a = e2e_connect_admin(&srv);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 4; i++)
            pipelined(c[i], method, 500, 0);
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    }
    before = NUM(&r, "totals", "alloc_calls");
    for (k = 0; k < 5; k++)
        for (i = 0; i < 4; i++)
            pipelined(c[i], method, 500, 0);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    after = NUM(&r, "totals", "alloc_calls");
    ck_assert_msg(after == before,
                  "%s: 10,000 requests made %.0f heap allocations", method,
                  after - before);
    for (i = 0; i < 4; i++)
        folio_client_close(c[i]);
    folio_client_close(a);
}

/*
 * Start a one-worker foliod with conf, send it 100 pings one at a time,
 * and read its server.stats into r.  Returns the admin connection, whose
 * buffer r points into: the caller closes it once r is read; the server
 * is left running.
 */
static struct folio_client *
hundred_pings(const char *conf, struct folio_reply *r)
{
    struct folio_client *c, *a;
    int i;

    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    c = e2e_connect(&srv);
    a = e2e_connect_admin(&srv);
    for (i = 0; i < 100; i++)
        pipelined(c, "server.ping", 1, 0);
    ck_assert_int_eq(e2e_stats(a, r), 0);
    folio_client_close(c);
    return a;
}

/*
 * busy_poll_us: a worker that polls without sleeping after each turn
 * finds the next ping of a client that sends it as soon as it has its
 * reply (10 ms is far longer than that round trip, even under the
 * sanitizers); by default it never busy-polls, nor yields.
 */
START_TEST(test_busy_poll)
{
    struct folio_client *a;
    struct folio_reply r;
    double polls, hits;

    a = hundred_pings("workers = 1\n", &r);
    ck_assert_double_eq(NUM(&r, "totals", "busy_polls"), 0);
    ck_assert_double_eq(NUM(&r, "totals", "busy_poll_hits"), 0);
    ck_assert_double_eq(NUM(&r, "totals", "poll_yields"), 0);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);

    a = hundred_pings("workers = 1\nbusy_poll_us = 10000\n", &r);
    polls = NUM(&r, "totals", "busy_polls");
    hits = NUM(&r, "totals", "busy_poll_hits");
    printf("busy poll: %.0f polls, %.0f found the next request, of 100 "
           "pings one at a time\n",
           polls, hits);
    ck_assert_msg(polls >= 100 && hits >= 10 && hits <= polls,
                  "%.0f busy polls, %.0f hits for 100 pings", polls, hits);
    folio_client_close(a);
    assert_no_alloc("server.ping");
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * poll_yield: after each turn that served (here: each ping's), the worker
 * yields its CPU before it polls, and still answers every ping (never on
 * by default: test_busy_poll).
 */
START_TEST(test_poll_yield)
{
    struct folio_client *a;
    struct folio_reply r;
    double yields;

    a = hundred_pings("workers = 1\npoll_yield = on\n", &r);
    yields = NUM(&r, "totals", "poll_yields");
    printf("poll yield: %.0f yields for 100 pings one at a time\n", yields);
    ck_assert_msg(yields >= 50, "%.0f yields for 100 pings", yields);
    ck_assert_double_eq(NUM(&r, "totals", "busy_polls"), 0);
    folio_client_close(a);
    assert_no_alloc("server.ping");
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_zero_alloc_read_paths)
{
    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    assert_no_alloc("server.ping");
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
stats_suite(void)
{
    Suite *s = suite_create("e2e_stats");
    TCase *tc = tcase_create("stats");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_counters_move_exactly);
    tcase_add_test(tc, test_admin_only);
    tcase_add_test(tc, test_killed_worker_counts_kept);
    tcase_add_test(tc, test_metrics_prometheus);
    tcase_add_test(tc, test_window_line);
    tcase_add_test(tc, test_zero_alloc_read_paths);
    tcase_add_test(tc, test_busy_poll);
    tcase_add_test(tc, test_poll_yield);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(stats_suite());
}
