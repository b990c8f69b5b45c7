/*
 * e2e_prometheus.c - the dashboard and the rules against a real
 * Prometheus: promtool checks and tests dist/prometheus/folio-rules.yml;
 * then a Prometheus started here (a scrape every 500 ms, the rules
 * loaded) scrapes two foliod instances while folio-bench loads them, and
 * every `expr` of every panel of dist/grafana/folio.json, with the
 * dashboard's variables filled in as Grafana does (both instances, or one
 * in the row repeated for each), returns at least one series through the
 * HTTP API, and a panel drawn by worker one series per worker of each
 * instance: 4 for both instances' 2 workers, not 2 that add instances up;
 * the instance variable's query lists both instances; every rule is
 * healthy, every recording rule has series, no alert fires on the healthy
 * servers; and promtool reads foliod's /metrics.  prometheus and promtool
 * are required (e2e_require): without them the suite is skipped, or fails
 * when CI is set.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/client.h"
#include "tests/check_run.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

#define DASHBOARD FOLIO_SRCDIR "/dist/grafana/folio.json"
#define RULES FOLIO_SRCDIR "/dist/prometheus/folio-rules.yml"
#define RULES_TEST FOLIO_SRCDIR "/dist/prometheus/folio-rules.test.yml"

static struct e2e_server srv, srv2;
static pid_t prom = -1;
static char prom_addr[64];
static char prom_dir[128];

START_TEST(test_promtool_rules)
{
    ck_assert_msg(system("promtool check rules " RULES) == 0,
                  "promtool check rules failed");
    ck_assert_msg(system("promtool test rules " RULES_TEST) == 0,
                  "promtool test rules failed");
}
END_TEST

/* Prometheus's own parser reads foliod's page (e2e_stats has ours). */
START_TEST(test_promtool_metrics)
{
    static char text[1 << 20];
    struct folio_client *c;
    char tmp[] = "/tmp/folio-metrics.XXXXXX", cmd[256];
    int fd, i;

    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = 127.0.0.1:0\n", NULL),
                     0);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_http_status(srv.metrics, "/metrics", text,
                                     sizeof(text)),
                     200);
    ck_assert_ptr_nonnull(strstr(text, "folio_requests_total{"));
    ck_assert_int_ge(fd = mkstemp(tmp), 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", tmp);
    ck_assert_msg(system(cmd) == 0, "promtool check metrics failed");
    unlink(tmp);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static void
stop_prometheus(void)
{
    int st;

    if (prom > 0) {
        uint64_t deadline = e2e_deadline(2000);

        /* TERM, and a moment to exit by itself before the KILL */
        kill(prom, SIGTERM);
        while (waitpid(prom, &st, WNOHANG) == 0) {
            if (!e2e_wait_more(deadline)) {
                kill(prom, SIGKILL);
                waitpid(prom, &st, 0);
                break;
            }
        }
        prom = -1;
    }
    if (prom_dir[0] != '\0') {
        char cmd[200];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", prom_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", prom_dir);
        prom_dir[0] = '\0';
    }
}

/* Start prometheus scraping srv's metrics; wait until it is ready. */
static void
start_prometheus(void)
{
    char conf[256], data[256], log[256], text[1024], listen[96];
    uint64_t deadline;

    snprintf(prom_dir, sizeof(prom_dir), "/tmp/folio-prom.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(prom_dir));
    atexit(stop_prometheus);
    snprintf(conf, sizeof(conf), "%s/prometheus.yml", prom_dir);
    snprintf(data, sizeof(data), "--storage.tsdb.path=%s/data", prom_dir);
    snprintf(log, sizeof(log), "%s/prometheus.log", prom_dir);
    snprintf(text, sizeof(text),
             "global:\n"
             "  scrape_interval: 500ms\n"
             "  scrape_timeout: 400ms\n"
             "  evaluation_interval: 500ms\n"
             "rule_files:\n"
             "  - %s\n"
             "scrape_configs:\n"
             "  - job_name: folio\n"
             "    static_configs:\n"
             "      - targets: ['%s', '%s']\n",
             RULES, srv.metrics, srv2.metrics);
    ck_assert_int_eq(e2e_write_file(conf, text), 0);
    snprintf(prom_addr, sizeof(prom_addr), "127.0.0.1:%d", e2e_free_port());
    snprintf(listen, sizeof(listen), "--web.listen-address=%s", prom_addr);
    snprintf(text, sizeof(text), "--config.file=%s", conf);
    {
        const char *const argv[] = {"prometheus", text, data, listen,
                                    "--log.level=warn",
                                    "--storage.tsdb.retention.time=1h", NULL};

        prom = e2e_spawn(argv, log);
    }
    ck_assert_int_ge(prom, 0);
    deadline = e2e_deadline(30000);
    do {
        if (e2e_http_status(prom_addr, "/-/ready", NULL, 0) == 200)
            return;
        ck_assert_msg(waitpid(prom, NULL, WNOHANG) == 0,
                      "prometheus exited (see %s)", log);
    } while (e2e_wait_more(deadline));
    ck_abort_msg("prometheus not ready in 30 s");
}

/* %-encode a query for a URL. */
static void
urlencode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *s != '\0' && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || strchr("-_.~", c) != NULL) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    ck_assert_msg(*s == '\0', "query too long");
    out[n] = '\0';
}

/* GET an API path of prometheus: its JSON's "data" (decref the root). */
static json_t *
api(const char *path, json_t **root)
{
    struct folio_http_answer a;
    json_error_t jerr;
    char err[512];
    int status;

    ck_assert_msg(
        folio_http_get(prom_addr, path, E2E_HTTP_MS, &a, err, sizeof(err)) == 0,
        "GET %s: %s", path, err);
    status = a.status;
    *root = json_loads(a.body.b_data, 0, &jerr);
    ck_assert_msg(*root != NULL, "GET %s: %d, not JSON: %.300s", path, status,
                  a.body.b_data);
    folio_http_answer_free(&a);
    ck_assert_msg(
        status == 200 &&
            strcmp(json_string_value(json_object_get(*root, "status")) ?: "",
                   "success") == 0,
        "GET %s: %d %s", path, status,
        json_string_value(json_object_get(*root, "error")) ?: "");
    return json_object_get(*root, "data");
}

/* An instant query: how many series it returns. */
static size_t
query(const char *expr)
{
    char enc[4096], path[4200];
    json_t *root, *data;
    size_t n;

    urlencode(expr, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
    data = api(path, &root);
    n = json_array_size(json_object_get(data, "result"));
    json_decref(root);
    return n;
}

/* Replace every `from` in buf (cap bytes) with `to`. */
static void
subst(char *buf, size_t cap, const char *from, const char *to)
{
    char tmp[4096], *p;
    size_t fl = strlen(from);

    while ((p = strstr(buf, from)) != NULL) {
        ck_assert(strlen(buf) - fl + strlen(to) < cap);
        snprintf(tmp, sizeof(tmp), "%s%s", to, p + fl);
        memcpy(p, tmp, strlen(tmp) + 1);
    }
}

/*
 * The dashboard's variables as Grafana fills them: both instances (a
 * multi-value variable, as a regex), or one for the row repeated by
 * instance; every method.
 */
static void
fill_variables(const char *expr, int one, char *out, size_t cap)
{
    char both[300];

    ck_assert(strlen(expr) < cap);
    snprintf(out, cap, "%s", expr);
    snprintf(both, sizeof(both), "(%s|%s)", srv.metrics, srv2.metrics);
    subst(out, cap, "$__rate_interval", "5s");
    subst(out, cap, "$__interval", "1s");
    subst(out, cap, "$__range", "1m");
    subst(out, cap, "$instance", one ? srv.metrics : both);
    subst(out, cap, "$method", ".*");
    ck_assert_msg(strchr(out, '$') == NULL, "a variable left in %s", out);
}

/*
 * Every expr of the panels of `panels` (rows' panels too, and the panels
 * after a repeated row, up to the next row, as its own): each must return
 * a series, and one drawn by worker ({{worker}} in its legend) one per
 * worker of each instance it covers.  The failures.
 */
static int
check_panels(json_t *panels, int *nexpr, int *nworker)
{
    char expr[4096];
    size_t i, j, n, want;
    int bad = 0, repeated = 0;

    for (i = 0; i < json_array_size(panels); i++) {
        json_t *p = json_array_get(panels, i),
               *targets = json_object_get(p, "targets");
        const char *title = json_string_value(json_object_get(p, "title"));
        const char *type = json_string_value(json_object_get(p, "type"));

        if (type != NULL && strcmp(type, "row") == 0)
            repeated = json_string_value(json_object_get(p, "repeat")) != NULL;
        bad += check_panels(json_object_get(p, "panels"), nexpr, nworker);
        for (j = 0; j < json_array_size(targets); j++) {
            json_t *t = json_array_get(targets, j);
            const char *e = json_string_value(json_object_get(t, "expr"));
            const char *legend =
                json_string_value(json_object_get(t, "legendFormat"));

            if (e == NULL)
                continue;
            fill_variables(e, repeated, expr, sizeof(expr));
            (*nexpr)++;
            n = query(expr);
            want = legend != NULL && strstr(legend, "{{worker}}") != NULL
                       ? (repeated ? 2 : 4)
                       : 0;
            if (n == 0 || (want != 0 && n != want)) {
                fprintf(stderr,
                        "panel \"%s\"%s: %zu series (want %s) for %s\n",
                        title, repeated ? " (repeated by instance)" : "", n,
                        want != 0 ? (want == 2 ? "2" : "4") : "some", expr);
                bad++;
            }
            *nworker += want != 0;
        }
    }
    return bad;
}

/* Wait until prometheus has `n` scrapes of each foliod. */
static void
wait_scrapes(int n)
{
    uint64_t deadline = e2e_deadline(30000);
    char expr[400];
    json_t *root, *data, *v;
    double got = 0;

    snprintf(expr, sizeof(expr),
             "min(count_over_time(folio_build_info{instance=~\"%s|%s\"}[1m]))",
             srv.metrics, srv2.metrics);
    do {
        char enc[512], path[600];

        urlencode(expr, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
        data = api(path, &root);
        v = json_array_get(json_object_get(data, "result"), 0);
        got = v != NULL ? atof(json_string_value(json_array_get(
                                   json_object_get(v, "value"), 1))
                                   ?: "0")
                        : 0;
        json_decref(root);
        if (got >= n)
            return;
    } while (e2e_wait_more(deadline));
    ck_abort_msg("prometheus scraped each foliod %g times in 30 s", got);
}

static void
check_rules(void)
{
    json_t *root, *groups, *rules, *r;
    size_t i, j;
    int nrec = 0, nalert = 0, bad = 0;
    const char *health, *type, *name;

    groups = json_object_get(api("/api/v1/rules", &root), "groups");
    ck_assert_int_eq(json_array_size(groups), 2);
    for (i = 0; i < json_array_size(groups); i++) {
        rules = json_object_get(json_array_get(groups, i), "rules");
        for (j = 0; j < json_array_size(rules); j++) {
            r = json_array_get(rules, j);
            health = json_string_value(json_object_get(r, "health"));
            type = json_string_value(json_object_get(r, "type"));
            name = json_string_value(json_object_get(r, "name"));
            ck_assert_ptr_nonnull(name);
            if (health == NULL || strcmp(health, "ok") != 0) {
                fprintf(stderr, "rule %s: health %s, %s\n", name, health ?: "?",
                        json_string_value(json_object_get(r, "lastError"))
                            ?: "");
                bad++;
            }
            if (type != NULL && strcmp(type, "recording") == 0) {
                nrec++;
                if (query(name) == 0) {
                    fprintf(stderr, "recording rule %s: no series\n", name);
                    bad++;
                }
            } else {
                nalert++;
                if (strcmp(json_string_value(json_object_get(r, "state")) ?: "",
                           "firing") == 0) {
                    fprintf(stderr, "alert %s fires on a healthy server\n",
                            name);
                    bad++;
                }
            }
        }
    }
    json_decref(root);
    ck_assert_int_ge(nrec, 8);
    ck_assert_int_ge(nalert, 8);
    ck_assert_msg(bad == 0, "%d rules unhealthy, empty or firing", bad);
}

/* Each rule was evaluated once at least (rules are evaluated in groups). */
static void
wait_rules_evaluated(void)
{
    uint64_t deadline = e2e_deadline(20000);
    json_t *root, *groups;
    size_t i;
    int fresh = 0;

    do {
        groups = json_object_get(api("/api/v1/rules", &root), "groups");
        fresh = json_array_size(groups) > 0;
        for (i = 0; i < json_array_size(groups); i++) {
            const char *t = json_string_value(
                json_object_get(json_array_get(groups, i), "lastEvaluation"));

            fresh = fresh && t != NULL && strncmp(t, "0001", 4) != 0;
        }
        json_decref(root);
    } while (!fresh && e2e_wait_more(deadline));
    ck_assert_msg(fresh, "the rules were not evaluated in 20 s");
}

START_TEST(test_dashboard_under_load)
{
    struct bproc ping, comments, ping2;
    const char *ping_argv[16], *comments_argv[16], *ping2_argv[16];
    char hostarg[160], host2arg[160], path[512], enc[256];
    json_error_t jerr;
    json_t *dash, *root, *values, *annotations;
    size_t i;
    int nexpr = 0, nworker = 0, bad, found = 0;

    dash = json_load_file(DASHBOARD, 0, &jerr);
    ck_assert_msg(dash != NULL, "%s:%d: %s", DASHBOARD, jerr.line, jerr.text);
    ck_assert_int_eq(e2e_start(&srv,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 2\n",
                               NULL),
                     0);
    ck_assert_int_eq(e2e_start(&srv2,
                               "metrics_listen = 127.0.0.1:0\n"
                               "workers = 2\n",
                               NULL),
                     0);
    start_prometheus();
    /* Load at a modest rate: pings, and comments posted and listed. */
    snprintf(hostarg, sizeof(hostarg), "%s", srv.addr);
    ping_argv[0] = "open";
    ping_argv[1] = "-q";
    ping_argv[2] = "-H";
    ping_argv[3] = hostarg;
    ping_argv[4] = "-R";
    ping_argv[5] = "2000";
    ping_argv[6] = "-c";
    ping_argv[7] = "4";
    ping_argv[8] = "-P";
    ping_argv[9] = "4";
    ping_argv[10] = "-d";
    ping_argv[11] = "60";
    ping_argv[12] = NULL;
    bspawn(&ping, ping_argv);
    memcpy(comments_argv, ping_argv, sizeof(ping_argv));
    comments_argv[5] = "300";
    comments_argv[7] = "2";
    comments_argv[9] = "1";
    comments_argv[12] = "-w";
    comments_argv[13] = "comments";
    comments_argv[14] = "--write-ratio=0.3";
    comments_argv[15] = NULL;
    bspawn(&comments, comments_argv);
    /* The second instance's pings. */
    snprintf(host2arg, sizeof(host2arg), "%s", srv2.addr);
    memcpy(ping2_argv, ping_argv, sizeof(ping_argv));
    ping2_argv[3] = host2arg;
    ping2_argv[5] = "500";
    bspawn(&ping2, ping2_argv);
    wait_scrapes(12);
    wait_rules_evaluated();

    /* The instance variable lists both foliods. */
    urlencode("folio_build_info", enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/label/instance/values?match[]=%s",
             enc);
    values = api(path, &root);
    for (i = 0; i < json_array_size(values); i++) {
        const char *v = json_string_value(json_array_get(values, i)) ?: "";

        if (strcmp(v, srv.metrics) == 0)
            found |= 1;
        if (strcmp(v, srv2.metrics) == 0)
            found |= 2;
    }
    json_decref(root);
    ck_assert_msg(found == 3,
                  "label_values(folio_build_info, instance) lacks %s or %s",
                  srv.metrics, srv2.metrics);

    bad = check_panels(json_object_get(dash, "panels"), &nexpr, &nworker);
    fprintf(stderr,
            "%d panel queries evaluated (%d drawn by worker), %d wrong\n",
            nexpr, nworker, bad);
    ck_assert_int_ge(nexpr, 40);
    ck_assert_int_ge(nworker, 15);
    ck_assert_msg(bad == 0, "%d of the dashboard's %d queries return nothing",
                  bad, nexpr);
    /* The annotations' queries are valid PromQL (they may match nothing). */
    annotations = json_object_get(json_object_get(dash, "annotations"), "list");
    for (i = 0; i < json_array_size(annotations); i++) {
        const char *e = json_string_value(
            json_object_get(json_array_get(annotations, i), "expr"));
        char expr[4096];

        if (e != NULL) {
            fill_variables(e, 0, expr, sizeof(expr));
            query(expr);
        }
    }
    check_rules();
    json_decref(dash);

    kill(ping.pid, SIGINT);
    kill(comments.pid, SIGINT);
    kill(ping2.pid, SIGINT);
    ck_assert_int_eq(bfinish(&ping, 20000), 0);
    ck_assert_int_eq(bfinish(&comments, 20000), 0);
    ck_assert_int_eq(bfinish(&ping2, 20000), 0);
    stop_prometheus();
    ck_assert_int_eq(e2e_stop(&srv), 0);
    ck_assert_int_eq(e2e_stop(&srv2), 0);
}
END_TEST

static Suite *
prometheus_suite(void)
{
    Suite *s = suite_create("e2e_prometheus");
    TCase *tc = tcase_create("prometheus");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_promtool_rules);
    tcase_add_test(tc, test_promtool_metrics);
    tcase_add_test(tc, test_dashboard_under_load);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    e2e_require("prometheus", "prometheus");
    e2e_require("promtool", "prometheus");
    return folio_check_run(prometheus_suite());
}
