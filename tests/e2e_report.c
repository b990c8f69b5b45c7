/*
 * e2e_report.c - folio-bench's reports of a real run: --csv holds a line a
 * second (a round in the rounds mode) whose answers add up to the
 * summary's; --html is self-contained (nothing it would fetch); a second,
 * open-loop run drawn against the first (--baseline) carries the first's
 * series and --profile's top functions, and a --baseline that is not a
 * report is refused.  Opened in a real headless Chromium, the pages draw
 * with no script error: their charts hold the run's points (latency by
 * method, traffic, the server's share of the cores among them), their
 * tables the methods and the codes; a closed loop is warned of
 * coordinated omission; each method's spectrum stops where its answers do
 * (1 - 1/n); no x label runs off a chart; the second compares the runs
 * and shows the profile's top functions.  The browser part is a program
 * of its own, e2e_report_chromium (this file with E2E_CHROMIUM), which
 * requires chromium (e2e_require).
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check_run.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

/*
 * The CSV's data lines; *answers is the sum of its requests column (the
 * third), and the header must start as documented.  With lat != NULL,
 * *lat is the count of lines with latencies (a p50 above 0: an interval
 * whose answers the sample before already held has none).
 */
static int
csv_points_lat(const char *path, double *answers, int *lat)
{
    char *text = e2e_read_file(path), *p, *nl;
    int n = 0;

    ck_assert_msg(text != NULL, "no %s", path);
    ck_assert_msg(strncmp(text, "t_s,interval_s,requests,rps,errors,", 35) == 0,
                  "CSV header: %.80s", text);
    *answers = 0;
    for (p = strchr(text, '\n'); p != NULL && p[1] != '\0'; p = nl) {
        char *f = p + 1;

        nl = strchr(f, '\n');
        f = strchr(f, ',');
        ck_assert_ptr_nonnull(f);
        f = strchr(f + 1, ',');
        ck_assert_ptr_nonnull(f);
        *answers += strtod(f + 1, NULL);
        if (lat != NULL) {
            int k;

            for (k = 0; k < 4 && f != NULL; k++) /* requests to p50_us */
                f = strchr(f + 1, ',');
            ck_assert_ptr_nonnull(f);
            *lat += strtod(f + 1, NULL) > 0;
        }
        n++;
    }
    free(text);
    return n;
}

#ifdef E2E_CHROMIUM
/* The value of attribute `attr` of the element with id (in a dumped DOM). */
static double
attr_of(const char *dom, const char *id, const char *attr)
{
    char pat[128], want[64];
    const char *p, *end;

    snprintf(pat, sizeof(pat), "id=\"%s\"", id);
    snprintf(want, sizeof(want), " %s=\"", attr);
    if ((p = strstr(dom, pat)) == NULL)
        return NAN;
    while (p > dom && *p != '<')
        p--;
    end = strchr(p, '>');
    p = strstr(p, want);
    if (p == NULL || end == NULL || p > end)
        return NAN;
    return strtod(p + strlen(want), NULL);
}

/* The page at `html` as headless Chromium leaves it once drawn (malloc'd). */
static char *
rendered(const char *html)
{
    char dom[400], err[400], udd[400], cmd[2400], *text, *e;
    int status;

    snprintf(dom, sizeof(dom), "%s.dom", html);
    snprintf(err, sizeof(err), "%s.chromium.log", html);
    snprintf(udd, sizeof(udd), "%s/chromium-profile", srv.dir);
    snprintf(cmd, sizeof(cmd),
             "timeout 90 chromium --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update "
             "--disable-sync --no-first-run --enable-logging=stderr "
             "--user-data-dir='%s' --dump-dom 'file://%s' >'%s' 2>'%s'",
             udd, html, dom, err);
    status = system(cmd);
    ck_assert_msg(status == 0, "chromium failed (%d), see %s", status, err);
    ck_assert_ptr_nonnull(text = e2e_read_file(dom));
    e = e2e_read_file(err);
    ck_assert_msg(e == NULL || strstr(e, "Uncaught") == NULL,
                  "a script error: %s", e != NULL ? strstr(e, "Uncaught") : "");
    free(e);
    ck_assert_msg(strstr(text, "<body data-state=\"drawn\"") != NULL,
                  "the page did not draw: %.400s", strstr(text, "<body"));
    ck_assert_msg(isnan(attr_of(text, "errors", "data-errors")) &&
                      strstr(text, "data-errors=") == NULL,
                  "script errors: %.300s", strstr(text, "<pre id=\"errors\">"));
    return text;
}

/* The data-last-x of the line named `name` of chart `id`; NAN if none. */
static double
line_reach(const char *dom, const char *id, const char *name)
{
    char pat[128], want[160];
    const char *p, *end, *l;

    snprintf(pat, sizeof(pat), "id=\"%s\"", id);
    snprintf(want, sizeof(want), "data-name=\"%s\" data-last-x=\"", name);
    if ((p = strstr(dom, pat)) == NULL || (end = strstr(p, "</svg>")) == NULL ||
        (l = strstr(p, want)) == NULL || l > end)
        return NAN;
    return strtod(l + strlen(want), NULL);
}

/*
 * No label of an x axis centred so near a chart's right edge (the
 * viewBox is 720 wide) that half of it is cut: those are anchored at
 * their end.  Returns how many x labels were seen.
 */
static int
x_labels_inside(const char *dom)
{
    const char *p = dom;
    double x;
    int n = 0;

    while ((p = strstr(p, "<text x=\"")) != NULL) {
        const char *end = strchr(p, '>');

        x = strtod(p + 9, NULL);
        if (end != NULL && strstr(p, "text-anchor=\"middle\"") != NULL &&
            strstr(p, "text-anchor=\"middle\"") < end &&
            strstr(p, "class=\"tick\"") != NULL &&
            strstr(p, "class=\"tick\"") < end) {
            ck_assert_msg(x <= 690, "an x label centred at %g of 720", x);
            n++;
        }
        p += 9;
    }
    return n;
}

/* The answers of method m in the page's spectrum block; -1 if none. */
static double
spectrum_n(const char *page, const char *m)
{
    char pat[96];
    const char *p = strstr(page, "id=\"data-spectrum\">");

    snprintf(pat, sizeof(pat), "\"%s\":{\"n\":", m);
    if (p == NULL || (p = strstr(p, pat)) == NULL)
        return -1;
    return strtod(p + strlen(pat), NULL);
}
#endif

/*
 * A 3 s mixed run of folio-bench with --html and --csv into srv's
 * directory: its CSV's points (a line a second: how many is the clock's,
 * not asserted) add up to the summary; the page is self-contained.
 */
static int
mixed_report(const char *html, const char *csv, int *lat)
{
    struct bproc *b = malloc(sizeof(*b));
    double answers, summary_requests;
    char *page;
    int points;

    expect_status(b, 0, "-H", srv.addr, "-w", "mixed", "--mix",
                  "ping:30,freight:40,comments:30", "--catalog",
                  FOLIO_SRCDIR "/data/catalog.csv", "-c", "4", "-d", "3",
                  "--admin", srv.admin, "--html", html, "--csv", csv, "--json",
                  "-q");
    summary_requests = jnum(json_of(b), "requests");
    *lat = 0;
    points = csv_points_lat(csv, &answers, lat);
    fprintf(stderr,
            "%d points, %.0f answers in the CSV, %.0f in the "
            "summary\n",
            points, answers, summary_requests);
    ck_assert_msg(points >= 1, "no point in the CSV of a 3 s run");
    ck_assert_double_eq(answers, summary_requests);
    free(b);

    /* Self-contained: nothing the page would fetch. */
    ck_assert_ptr_nonnull(page = e2e_read_file(html));
    ck_assert_msg(
        strstr(page, "<link") == NULL && strstr(page, " src=") == NULL &&
            strstr(page, "url(") == NULL && strstr(page, "@import") == NULL &&
            strstr(page, "fetch(") == NULL &&
            strstr(page, "XMLHttpRequest") == NULL,
        "the report would fetch something");
    ck_assert_ptr_nonnull(strstr(page, "<script type=\"application/json\" "
                                       "id=\"data-series\">"));
    free(page);
    return points;
}

static void
start_mixed(char *html, char *csv, size_t len)
{
    ck_assert_int_eq(e2e_start(&srv,
                               "workers = 2\n"
                               "metrics_listen = 127.0.0.1:0\n"
                               "freight_dir = " FOLIO_SRCDIR "/data/freight\n"
                               "catalog = " FOLIO_SRCDIR "/data/catalog.csv\n",
                               NULL),
                     0);
    snprintf(html, len, "%s/report.html", srv.dir);
    snprintf(csv, len, "%s/series.csv", srv.dir);
}

/*
 * The second run, open loop, drawn against the first (at `html`) into
 * html2 with a CPU profile into prof: the page carries the baseline's
 * series and the profile's top functions; its points are returned.  The
 * rate keeps the workers busy enough for the profile to hold samples (at
 * 2,000 pings/s a worker is idle nearly always: ITIMER_PROF then fires
 * seldom, none in 3 s on a loaded machine).  A --baseline that is not a
 * report, or without --html, is refused before the run.
 */
static int
compared_report(const char *html, const char *html2, const char *prof,
                const char *csv)
{
    struct bproc *b = malloc(sizeof(*b));
    char *page;
    int points;

    expect_status(b, 0, "-H", srv.addr, "-w", "mixed", "--mix",
                  "ping:30,freight:40,comments:30", "--catalog",
                  FOLIO_SRCDIR "/data/catalog.csv", "-R", "10000", "-c", "4",
                  "-d", "3", "--admin", srv.admin, "--html", html2,
                  "--baseline", html, "--profile", prof, "--metrics",
                  srv.metrics, "-q");
    ck_assert_ptr_nonnull(page = e2e_read_file(html2));
    ck_assert_ptr_nonnull(strstr(page, "id=\"data-baseline-series\">"));
    ck_assert_msg(strstr(page, "id=\"data-profile\">{\"file\"") != NULL &&
                      strstr(page, "\"rows\":[[") != NULL,
                  "no profile's functions in the page: %.300s",
                  strstr(page, "id=\"data-profile\">"));
    points = (int)jnum(strstr(page, "id=\"data-series\">") + 17, "n");
    free(page);
    expect_status(b, 2, "-H", srv.addr, "-n", "10", "--html", html2,
                  "--baseline", csv, "-q");
    ck_assert_ptr_nonnull(strstr(b->err, "not a folio-bench --html report"));
    expect_status(b, 2, "-H", srv.addr, "-n", "10", "--baseline", html, "-q");
    free(b);
    return points;
}

#ifdef E2E_CHROMIUM
/* The page, opened in a real headless Chromium, draws the run. */
START_TEST(test_html_in_chromium)
{
    char html[300], html2[300], csv[300], prof[300];
    char *page, *text;
    double posts;
    int points, points2, lat;

    start_mixed(html, csv, sizeof(html));
    snprintf(html2, sizeof(html2), "%s/report2.html", srv.dir);
    snprintf(prof, sizeof(prof), "%s/cpu.pb.gz", srv.dir);
    points = mixed_report(html, csv, &lat);
    /* The posts (1% of comments): a few dozen answers. */
    ck_assert_ptr_nonnull(page = e2e_read_file(html));
    posts = spectrum_n(page, "comments.post");
    free(page);
    points2 = compared_report(html, html2, prof, csv);

    text = rendered(html);
    /* The charts hold the run's points: those of the CSV. */
    ck_assert_double_eq(attr_of(text, "throughput", "data-points"), points);
    /* The latencies, those of the points that have them: every one but
     * the last, at least. */
    ck_assert_int_ge(lat, points - 1);
    ck_assert_double_eq(attr_of(text, "latency", "data-points"), lat);
    ck_assert_double_eq(attr_of(text, "method-latency", "data-points"), lat);
    ck_assert_double_eq(attr_of(text, "bytes", "data-points"), points);
    ck_assert_double_eq(attr_of(text, "server-cores", "data-points"), points);
    ck_assert_double_eq(attr_of(text, "server-cpu", "data-points"), points);
    ck_assert_double_eq(attr_of(text, "server-allocs", "data-points"), points);
    /* A closed loop: warned of coordinated omission. */
    ck_assert_ptr_nonnull(strstr(text, "id=\"warn\" style=\"display: block;\">"
                                       "Coordinated omission: in the closed"));
    ck_assert_ptr_nonnull(
        strstr(text, "id=\"compare-card\" style=\"display: none;\""));
    /* A method's spectrum stops where its answers do; the all's goes on. */
    ck_assert_msg(posts > 1 && line_reach(text, "spectrum", "comments.post") <=
                                   log10(posts) + 1e-6,
                  "comments.post: %g answers, its spectrum reaches %g", posts,
                  line_reach(text, "spectrum", "comments.post"));
    ck_assert(line_reach(text, "spectrum", "all") >
              line_reach(text, "spectrum", "comments.post"));
    ck_assert_int_gt(x_labels_inside(text), 20);
    ck_assert_msg(attr_of(text, "spectrum", "data-points") > 10,
                  "a spectrum of %g points",
                  attr_of(text, "spectrum", "data-points"));
    /* freight's uncovered CEPs: NOT_FOUND, expected. */
    ck_assert(attr_of(text, "codes", "data-points") >= 1);
    ck_assert_ptr_nonnull(strstr(text, "NOT_FOUND"));
    ck_assert_double_eq(attr_of(text, "methods", "data-rows"), 4);
    ck_assert_ptr_nonnull(strstr(text, "<td>freight.quote</td>"));
    free(text);

    /* Against the baseline, with the profile's top functions; open loop. */
    text = rendered(html2);
    ck_assert_double_eq(attr_of(text, "throughput", "data-points"), points2);
    ck_assert_double_eq(attr_of(text, "compare", "data-rows"), 11);
    ck_assert_msg(attr_of(text, "profile", "data-rows") >= 1, "%.300s",
                  strstr(text, "id=\"profile\""));
    ck_assert_ptr_nonnull(strstr(text, "answers/s (baseline)"));
    ck_assert_ptr_nonnull(strstr(text, "class=\"line dash\""));
    ck_assert_ptr_nonnull(strstr(text, "<div id=\"warn\"></div>"));
    free(text);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST
#else
/*
 * The report of a mixed run: CSV and page, and a second run against it
 * (drawn in e2e_report_chromium).
 */
START_TEST(test_html_and_csv)
{
    char html[300], csv[300], html2[300], prof[300];
    int lat;

    start_mixed(html, csv, sizeof(html));
    mixed_report(html, csv, &lat);
    snprintf(html2, sizeof(html2), "%s/report2.html", srv.dir);
    snprintf(prof, sizeof(prof), "%s/cpu.pb.gz", srv.dir);
    compared_report(html, html2, prof, csv);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Rounds: a point a round; an unwritable report is exit status 2. */
START_TEST(test_csv_rounds)
{
    struct bproc *b = malloc(sizeof(*b));
    char csv[300];
    double answers;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    snprintf(csv, sizeof(csv), "%s/rounds.csv", srv.dir);
    expect_status(b, 0, "rounds", "-w", "ping", "-H", srv.addr, "-n", "50",
                  "--rounds", "4", "--csv", csv, "-q");
    ck_assert_int_eq(csv_points_lat(csv, &answers, NULL), 4);
    ck_assert_double_eq(answers, 200);
    expect_status(b, 2, "-w", "ping", "-H", srv.addr, "-d", "0.2", "--html",
                  "/nonexistent/report.html", "-q");
    ck_assert_ptr_nonnull(strstr(b->err, "--html /nonexistent/report.html"));
    ck_assert_int_eq(e2e_stop(&srv), 0);
    free(b);
}
END_TEST
#endif

static Suite *
report_suite(void)
{
#ifdef E2E_CHROMIUM
    Suite *s = suite_create("e2e_report_chromium");
    TCase *tc = tcase_create("chromium");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_html_in_chromium);
#else
    Suite *s = suite_create("e2e_report");
    TCase *tc = tcase_create("report");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_html_and_csv);
    tcase_add_test(tc, test_csv_rounds);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
#ifdef E2E_CHROMIUM
    e2e_require("chromium", "chromium");
#endif
    return folio_check_run(report_suite());
}
