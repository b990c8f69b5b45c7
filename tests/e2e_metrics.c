/*
 * e2e_metrics.c - the series of /metrics move as they should: the time a
 * request waits in the worker appears when 16 requests are in flight on a
 * connection and not with one; the comments store's fill ratio rises as
 * a small store fills and is high when a post first fails with error 8;
 * requests in flight go back to 0; a TCP listener's accept queue holds the
 * connections stopped workers do not accept; the master's process_* set;
 * a stopped worker's up and state series (with the watchdog).  And every
 * family of the page is described in foliod(8).
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/addr.h"
#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

/* The body of s's /metrics (malloc'd). */
static char *
page(void)
{
    struct folio_http_answer a;
    char err[512], *text;

    ck_assert_msg(folio_http_get(srv.metrics, "/metrics", E2E_HTTP_MS, &a, err,
                                 sizeof(err)) == 0,
                  "GET /metrics: %s", err);
    ck_assert_msg(a.status == 200, "GET /metrics: %d", a.status);
    ck_assert_ptr_nonnull(text = strdup(a.body.b_data));
    folio_http_answer_free(&a);
    return text;
}

/* The value of a series on a page, NAN if it is not there. */
static double
series(const char *text, const char *name)
{
    char pat[256];
    const char *p;

    snprintf(pat, sizeof(pat), "\n%s ", name);
    p = strstr(text, pat);
    return p != NULL ? strtod(p + strlen(pat), NULL) : NAN;
}

/* A histogram's cumulative buckets, from a page. */
struct hist {
    double le[40], n[40];
    int k;
    double sum, count;
};

/* `family` with the labels before le ("" or `method="x",`). */
static void
read_hist(const char *text, const char *family, const char *labels,
          struct hist *h)
{
    char pat[256], name[256];
    const char *p = text;

    memset(h, 0, sizeof(*h));
    snprintf(pat, sizeof(pat), "\n%s_bucket{%sle=\"", family, labels);
    while ((p = strstr(p, pat)) != NULL && h->k < 40) {
        p += strlen(pat);
        h->le[h->k] = strncmp(p, "+Inf", 4) == 0 ? INFINITY : strtod(p, NULL);
        p = strchr(p, ' ');
        ck_assert_ptr_nonnull(p);
        h->n[h->k++] = strtod(p + 1, NULL);
    }
    ck_assert_msg(h->k > 2, "no histogram %s{%s}", family, labels);
    if (labels[0] != '\0')
        snprintf(name, sizeof(name), "%s_sum{%.*s}", family,
                 (int)strlen(labels) - 1, labels);
    else
        snprintf(name, sizeof(name), "%s_sum", family);
    h->sum = series(text, name);
    h->count = h->n[h->k - 1];
}

/* The median of b - a: the bound of the bucket holding it, seconds. */
static double
median_between(const struct hist *a, const struct hist *b)
{
    double total = b->count - a->count;
    int i;

    ck_assert_int_eq(a->k, b->k);
    ck_assert(total > 0);
    for (i = 0; i < b->k; i++)
        if (b->n[i] - a->n[i] >= total / 2)
            return b->le[i];
    return INFINITY;
}

/* `rounds` batches of `depth` server.stats pipelined on the admin socket. */
static void
stats_batches(struct folio_client *a, int depth, int rounds)
{
    struct folio_reply r;
    int i, k;

    for (k = 0; k < rounds; k++) {
        for (i = 0; i < depth; i++)
            folio_client_request(a, 0, "server.stats", 0, NULL);
        ck_assert_int_eq(folio_client_flush(a), 0);
        for (i = 0; i < depth; i++) {
            ck_assert_int_eq(folio_client_reply(a, &r), 1);
            ck_assert_int_eq(r.code, 0);
        }
    }
}

/*
 * One at a time, a request does not wait: its median queue time is in
 * the first buckets.  Sixteen read at once wait behind each other: the
 * median waits several service times (7.5 on average).  Asserted: every
 * request counted, and the wait there at 16 (its median not below the
 * one at a time); the figures are printed.
 */
START_TEST(test_queue_time_at_16_in_flight)
{
    struct hist q0, q1, q2, d0, d1;
    struct folio_client *a;
    double q_one, q_sixteen, d_one;
    char *text;

    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 1\n",
                               NULL),
                     0);
    a = e2e_connect_admin(&srv);
    ck_assert_ptr_nonnull(a);
    stats_batches(a, 1, 20); /* warm up */
    text = page();
    read_hist(text, "folio_request_queue_seconds", "", &q0);
    read_hist(text, "folio_request_duration_seconds",
              "method=\"server.stats\",", &d0);
    free(text);
    stats_batches(a, 1, 300);
    text = page();
    read_hist(text, "folio_request_queue_seconds", "", &q1);
    read_hist(text, "folio_request_duration_seconds",
              "method=\"server.stats\",", &d1);
    free(text);
    stats_batches(a, 16, 40);
    text = page();
    read_hist(text, "folio_request_queue_seconds", "", &q2);
    free(text);
    q_one = median_between(&q0, &q1);
    q_sixteen = median_between(&q1, &q2);
    d_one = median_between(&d0, &d1);
    fprintf(stderr,
            "queue median: %g s one at a time, %g s at 16 in flight; "
            "server.stats median %g s\n",
            q_one, q_sixteen, d_one);
    /* 300 one at a time, then 40 x 16 (page() is not an RPC). */
    ck_assert_double_eq(q1.count - q0.count, 300);
    ck_assert_double_eq(q2.count - q1.count, 640);
    ck_assert_double_eq(d1.count - d0.count, 300);
    ck_assert_msg(q_sixteen >= q_one,
                  "at 16 in flight the median wait is %g s, one at a time "
                  "%g s",
                  q_sixteen, q_one);
    ck_assert(q2.sum > q1.sum && q1.sum >= q0.sum);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Comment i on a page of its own, its body body_len bytes: the code. */
static int
post(struct folio_client *c, int i, size_t body_len, struct folio_reply *r)
{
    static char body[65536];
    char path[64];

    memset(body, 'a' + i % 26, sizeof(body));
    snprintf(path, sizeof(path), "/fill/%d", i);
    if (e2e_comment_post(c, path, "filler", body, body_len, r) != 0)
        return -1;
    return r->code;
}

static double
fill_ratio(void)
{
    char *text = page();
    double used = series(text, "folio_comments_store_bytes"),
           max = series(text, "folio_comments_store_max_bytes");

    free(text);
    ck_assert_msg(!isnan(used) && !isnan(max) && max == 1 << 20,
                  "store %g of %g bytes", used, max);
    return used / max;
}

/* A 1 MiB store filled with 60 KiB comments until a post fails. */
START_TEST(test_comments_fill_ratio)
{
    struct folio_client *c;
    struct folio_reply r;
    double before, after_four, last = 0;
    int i, code = 0;

    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "comments_max_size = 1M\n",
                               NULL),
                     0);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    before = fill_ratio();
    ck_assert_msg(before > 0 && before < 0.2, "an empty store %g full", before);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(post(c, i, 60000, &r), 0);
    after_four = fill_ratio();
    ck_assert_msg(after_four >= before + 0.2,
                  "four 60 KB posts took the fill from %g to %g", before,
                  after_four);
    for (i = 4; i < 40; i++) {
        last = fill_ratio();
        if ((code = post(c, i, 60000, &r)) != 0)
            break;
    }
    ck_assert_msg(code == FOLIO_ST_RESOURCE_EXHAUSTED,
                  "the store did not fill: code %d after %d posts", code, i);
    /* The alert's 80% came before the first failed post. */
    ck_assert_msg(last >= 0.8, "the first post failed at %g full", last);
    ck_assert(fill_ratio() >= last);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * Requests in flight, under held replies (group-commit posts) and
 * pipelined pings, come back to 0 for every worker.
 */
START_TEST(test_in_flight_settles)
{
    struct folio_client *c[4];
    struct folio_reply r;
    char *text, *p;
    uint64_t deadline;
    int i, k, busy;

    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = 127.0.0.1:0\n", NULL),
                     0);
    for (i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(c[i] = e2e_connect(&srv));
    for (k = 0; k < 20; k++)
        for (i = 0; i < 4; i++) {
            ck_assert_int_eq(post(c[i], k * 4 + i, 100, &r), 0);
            ck_assert_int_eq(e2e_ping(c[i]), 0);
        }
    /* The gauge is written after the reply went out: wait for it. */
    deadline = e2e_deadline(5000);
    do {
        text = page();
        busy = 0;
        for (p = text;
             (p = strstr(p, "\nfolio_worker_requests_in_flight{")) != NULL; p++)
            busy += strtod(strchr(p, ' ') + 1, NULL) != 0;
        ck_assert_ptr_nonnull(
            strstr(text, "\nfolio_worker_requests_in_flight{"));
        free(text);
    } while (busy > 0 && e2e_wait_more(deadline));
    ck_assert_msg(busy == 0, "%d workers still have requests in flight", busy);
    for (i = 0; i < 4; i++)
        folio_client_close(c[i]);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Workers stopped: the connections made meanwhile wait in the queue. */
START_TEST(test_listen_queue)
{
    struct folio_addr a;
    pid_t pids[8];
    char name[200], why[256], *text;
    int fds[5], n, i;
    double len, max;

    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 2\n",
                               NULL),
                     0);
    snprintf(name, sizeof(name), "folio_listen_queue_max{listener=\"%s\"}",
             srv.addr);
    text = page();
    max = series(text, name);
    free(text);
    ck_assert_msg(max > 0, "%s: %g", name, max);
    n = e2e_workers(&srv, pids, 8);
    ck_assert_int_eq(n, 2);
    for (i = 0; i < n; i++)
        ck_assert_int_eq(kill(pids[i], SIGSTOP), 0);
    ck_assert_int_eq(folio_addr_parse(srv.addr, &a, why, sizeof(why)), 0);
    for (i = 0; i < 5; i++)
        ck_assert_int_ge(fds[i] = folio_addr_connect(&a, 5000), 0);
    snprintf(name, sizeof(name), "folio_listen_queue_length{listener=\"%s\"}",
             srv.addr);
    text = page();
    len = series(text, name);
    free(text);
    for (i = 0; i < n; i++)
        kill(pids[i], SIGCONT);
    ck_assert_msg(len == 5, "%s is %g with 5 connections waiting", name, len);
    for (i = 0; i < 5; i++)
        close(fds[i]);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* A process's CPU seconds by /proc/PID/stat (utime + stime, in ticks). */
static double
proc_cpu_s(pid_t pid)
{
    unsigned long long ut, st;
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    ck_assert_int_eq(fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u "
                               "%*u %*u %llu %llu",
                            &ut, &st),
                     2);
    fclose(f);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

START_TEST(test_process_series)
{
    double now = (double)time(NULL), v;
    char *text;

    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = 127.0.0.1:0\n", NULL),
                     0);
    text = page();
    v = series(text, "process_start_time_seconds");
    ck_assert_msg(v > now - 120 && v <= now + 1, "started at %f, now %f", v,
                  now);
    /* The master's CPU so far: some, and what /proc says (a tick apart). */
    v = series(text, "process_cpu_seconds_total");
    ck_assert_msg(v > 0 && v <= proc_cpu_s(srv.pid) + 2.0 / sysconf(_SC_CLK_TCK),
                  "process_cpu_seconds_total %g, /proc %g", v,
                  proc_cpu_s(srv.pid));
    ck_assert(series(text, "process_resident_memory_bytes") > 1e6);
    ck_assert(series(text, "process_virtual_memory_bytes") >=
              series(text, "process_resident_memory_bytes"));
    v = series(text, "process_open_fds");
    ck_assert_msg(v >= 5 && v < series(text, "process_max_fds"), "%g fds open",
                  v);
    ck_assert_msg(strstr(text, "# TYPE process_cpu_seconds_total counter\n"),
                  "no TYPE for process_cpu_seconds_total");
    ck_assert_double_eq(series(text, "folio_worker_up{worker=\"0\"}"), 1);
    ck_assert_double_eq(series(text, "folio_worker_up{worker=\"1\"}"), 1);
    free(text);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A SIGSTOPped worker no longer looks fine: its heartbeat age grows past
 * a second while the others' stay small; once the watchdog (worker_timeout
 * 2s) judges it stalled, its state goes to "hung" and its worker number's
 * up to 0 (each for a few milliseconds: the sampling here may miss them),
 * its replacement serves as the same worker number, and the kill is
 * counted.
 */
START_TEST(test_stopped_worker_series)
{
    char up[96], other[96], age[160], other_age[160], hung[160], *text;
    uint64_t t0, deadline, stale_at = 0;
    double pid, idx, slot, oslot, v;
    int gone = 0, other_down = 0, saw_hung = 0, saw_down = 0, i;

    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 2\nworker_timeout = 2s\n",
                               NULL),
                     0);
    pid = e2e_server_stat(&srv, "workers", "#0", "pid", NULL);
    idx = e2e_server_stat(&srv, "workers", "#0", "index", NULL);
    slot = e2e_server_stat(&srv, "workers", "#0", "slot", NULL);
    oslot = e2e_server_stat(&srv, "workers", "#1", "slot", NULL);
    ck_assert(pid > 0 && (idx == 0 || idx == 1) && slot >= 0 && oslot >= 0);
    snprintf(up, sizeof(up), "folio_worker_up{worker=\"%.0f\"}", idx);
    snprintf(other, sizeof(other), "folio_worker_up{worker=\"%.0f\"}", 1 - idx);
    snprintf(
        age, sizeof(age),
        "folio_worker_heartbeat_age_seconds{worker=\"%.0f\",slot=\"%.0f\"}",
        idx, slot);
    snprintf(
        other_age, sizeof(other_age),
        "folio_worker_heartbeat_age_seconds{worker=\"%.0f\",slot=\"%.0f\"}",
        1 - idx, oslot);
    snprintf(hung, sizeof(hung),
             "folio_worker_state{worker=\"%.0f\",slot=\"%.0f\","
             "state=\"hung\"}",
             idx, slot);
    text = page();
    ck_assert_double_eq(series(text, up), 1);
    ck_assert_double_eq(series(text, hung), 0);
    /* Younger than worker_timeout: else the watchdog would judge it hung. */
    ck_assert_msg(series(text, age) < 2, "%s is %g before the stop", age,
                  series(text, age));
    free(text);
    ck_assert_int_eq(kill((pid_t)pid, SIGSTOP), 0);
    t0 = e2e_now_ms();
    deadline = e2e_deadline(e2e_bound_ms(15000, 25000));
    for (i = 0; !gone; i++) {
        text = page();
        v = series(text, age);
        if (v >= 1 && stale_at == 0) {
            stale_at = e2e_now_ms() - t0;
            ck_assert_msg(series(text, other_age) < v,
                          "the running worker's heartbeat is %g s old, the "
                          "stopped one's %g s",
                          series(text, other_age), v);
        }
        saw_hung |= series(text, hung) == 1;
        saw_down |= series(text, up) == 0;
        /* The stopped process's series go with it; its number serves. */
        gone = stale_at != 0 && isnan(v) && series(text, up) == 1;
        other_down |= series(text, other) != 1;
        free(text);
        if (!gone && !e2e_wait_more(deadline))
            break;
    }
    fprintf(stderr,
            "stopped worker %.0f: heartbeat a second old %llu ms after "
            "SIGSTOP; replaced %d after %llu ms (hung seen %d, up 0 seen "
            "%d, %d pages)\n",
            idx, (unsigned long long)stale_at, gone,
            (unsigned long long)(e2e_now_ms() - t0), saw_hung, saw_down, i);
    ck_assert_msg(stale_at != 0, "%s never passed 1 s after a SIGSTOP", age);
    ck_assert_msg(gone, "the stopped worker was not replaced");
    ck_assert_msg(!other_down, "%s left 1 meanwhile", other);
    ck_assert_double_eq(e2e_metric(&srv, "folio_worker_timeouts_total"), 1);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * server.stats and the page come from one list: the same facts, and
 * what has no total (a process's peak RSS) is only per worker.
 */
START_TEST(test_stats_and_page_agree)
{
    struct folio_client *a;
    struct folio_reply r;
    char *text;
    double v;

    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 1\n",
                               NULL),
                     0);
    ck_assert_ptr_nonnull(a = e2e_connect_admin(&srv));
    stats_batches(a, 4, 5);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    text = page();
    v = e2e_stat_num(&r, "totals", "comments_bytes", NULL);
    ck_assert_msg(v > 0 && v == series(text, "folio_comments_store_bytes"),
                  "comments_bytes %g", v);
    ck_assert_double_eq(e2e_stat_num(&r, "totals", "in_flight", NULL), 1);
    ck_assert(e2e_stat_num(&r, "totals", "queue", "p50_us", NULL) > 0);
    /* A peak: it may have grown between the two reads, never shrunk. */
    ck_assert(e2e_stat_num(&r, "workers", "#0", "maxrss_kb", NULL) * 1024 <=
              series(text, "folio_worker_max_resident_bytes{worker=\"0\","
                           "slot=\"0\"}"));
    ck_assert(isnan(e2e_stat_num(&r, "totals", "maxrss_kb", NULL)));
    ck_assert_double_eq(e2e_stat_num(&r, "server", "workers", NULL),
                        series(text, "folio_workers_configured"));
    free(text);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Whether text names `word`, not as part of a longer name. */
static int
names(const char *text, const char *word)
{
    const char *p = text;
    size_t n = strlen(word);

    while ((p = strstr(p, word)) != NULL) {
        if ((p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            !(isalnum((unsigned char)p[n]) || p[n] == '_'))
            return 1;
        p += n;
    }
    return 0;
}

/* Every family of the page is described in foliod(8). */
START_TEST(test_families_documented)
{
    char *text, *man, *p, fam[128];
    int missing = 0, n = 0;

    ck_assert_ptr_nonnull(man = e2e_read_file(FOLIO_BUILDDIR "/man/foliod.8"));
    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = 127.0.0.1:0\n", NULL),
                     0);
    text = page();
    for (p = text; (p = strstr(p, "# TYPE ")) != NULL; p++) {
        if (sscanf(p, "# TYPE %127s", fam) != 1)
            continue;
        n++;
        if (!names(man, fam)) {
            fprintf(stderr, "foliod(8) does not describe %s\n", fam);
            missing++;
        }
    }
    free(text);
    free(man);
    ck_assert_int_gt(n, 40);
    ck_assert_msg(missing == 0, "%d families undocumented", missing);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
metrics_suite(void)
{
    Suite *s = suite_create("e2e_metrics");
    TCase *tc = tcase_create("series");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_queue_time_at_16_in_flight);
    tcase_add_test(tc, test_comments_fill_ratio);
    tcase_add_test(tc, test_in_flight_settles);
    tcase_add_test(tc, test_listen_queue);
    tcase_add_test(tc, test_process_series);
    tcase_add_test(tc, test_stopped_worker_series);
    tcase_add_test(tc, test_stats_and_page_agree);
    tcase_add_test(tc, test_families_documented);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(metrics_suite());
}
