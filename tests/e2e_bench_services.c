/*
 * e2e_bench_services.c - folio-bench end to end, the services' workloads
 * against the real foliod.  One source, a program per service
 * (E2E_BENCH_PART), so that each joins TESTS when its service lands:
 *   1  corpus: the shakesapp rounds, a wrong count caught, --queries, --corpus
 *   2  freight: carts, uncovered CEPs expected NOT_FOUND
 *   3  comments: Zipf pages, posts that stay
 *   4  mixed: every service at once
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/client.h"
#include "src/mp.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

#ifndef E2E_BENCH_PART
#error "E2E_BENCH_PART: 1 corpus, 2 freight, 3 comments, 4 mixed"
#endif

static struct e2e_server srv;

/* Parts 2 and 4 start through start_with(). */
static void start(const char *conf) __attribute__((unused));

static void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

static void
stop_clean(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

#if E2E_BENCH_PART != 3
/* A temporary directory for a test's files (the server has its own). */
static char fixtures[64];

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void
fixtures_make(void)
{
    snprintf(fixtures, sizeof(fixtures), "/tmp/folio-bench-e2e.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fixtures));
}

static void
fixtures_remove(void)
{
    if (fixtures[0] != '\0')
        nftw(fixtures, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    fixtures[0] = '\0';
}
#endif

#if E2E_BENCH_PART == 1
/* ------------------------------------------------------------------ */
/* corpus                                                              */

static void
start_corpus(const char *dir)
{
    char conf[1200];

    if (dir == NULL)
        dir = e2e_corpus();
    ck_assert_msg(dir != NULL, "no corpus (configure --with-corpus)");
    snprintf(conf, sizeof(conf), "corpus = %s\n", dir);
    start(conf);
}

START_TEST(test_rounds_shakesapp)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;

    start_corpus(NULL);
    expect_status(b, 0, "rounds", "-H", srv.addr, "--rounds", "5");
    ck_assert_int_eq(count_lines_with(b->out, "Simulated 20 requests in "), 5);
    ck_assert_ptr_nonnull(strstr(b->out, "the shakesapp mix (4 queries, 4 "
                                         "checked)"));
    expect_status(b, 0, "rounds", "-H", srv.addr, "--rounds", "3", "-n", "40",
                  "-c", "8", "-t", "2", "--json");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "ok"), 120);
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    free(b);
    stop_clean();
}
END_TEST

/* Copy the corpus, one more "hello" line in one file: 350, not 349. */
static void
modified_corpus(char *dir, size_t len)
{
    const char *src = e2e_corpus();
    char path[1200], from[1200], buf[65536];
    struct dirent *de;
    DIR *d;
    FILE *in, *out;
    size_t n;

    ck_assert_ptr_nonnull(src);
    snprintf(dir, len, "%s/corpus", fixtures);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    d = opendir(src);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(from, sizeof(from), "%s/%s", src, de->d_name);
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        in = fopen(from, "rb");
        out = fopen(path, "wb");
        ck_assert(in != NULL && out != NULL);
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
            ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
        if (strcmp(de->d_name, "hamlet.txt") == 0)
            fputs("HAMLET\tHello, hello, who goes there?\n", out);
        fclose(in);
        ck_assert_int_eq(fclose(out), 0);
    }
    closedir(d);
}

START_TEST(test_rounds_catch_wrong_count)
{
    struct bproc *b = malloc(sizeof(*b));
    char dir[1300];

    fixtures_make();
    modified_corpus(dir, sizeof(dir));
    start_corpus(dir);
    expect_status(b, 4, "rounds", "-H", srv.addr, "--rounds", "200");
    ck_assert_msg(strstr(b->err, "corpus.match_count \"hello\" answered 350, "
                                 "expected 349") != NULL,
                  "%s", b->err);
    ck_assert_msg(count_lines_with(b->out, "Simulated ") < 200,
                  "the rounds stop at the first wrong count");
    free(b);
    stop_clean();
    fixtures_remove();
}
END_TEST

START_TEST(test_corpus_workloads)
{
    struct bproc *b = malloc(sizeof(*b));
    char q[400];
    const char *j;

    fixtures_make();
    start_corpus(NULL);
    /* The shakesapp mix in a closed loop: every count checked. */
    expect_status(b, 0, "-w", "corpus", "-H", srv.addr, "-c", "4", "-d", "0.5",
                  "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert(jnum(j, "ok") > 0);
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    /* --queries, some with their counts. */
    snprintf(q, sizeof(q), "%s/queries.txt", fixtures);
    ck_assert_int_eq(e2e_write_file(q, "hello\t349\nworld\t728\nlove\n"
                                       "To Be, Or Not To Be\t1\n"),
                     0);
    expect_status(b, 0, "-w", "corpus", "--queries", q, "-H", srv.addr, "-c",
                  "2", "-n", "1000", "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "ok"), 1000);
    /* Substrings of the corpus, their counts worked out by folio-bench. */
    expect_status(b, 0, "open", "-w", "corpus", "--corpus", e2e_corpus(), "-H",
                  srv.addr, "-R", "2000", "-d", "0.5", "--json", "-q");
    j = json_of(b);
    ck_assert_ptr_nonnull(strstr(j, "substrings of the corpus (256 queries"));
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    ck_assert_double_eq(jnum(j, "errors"), 0);
    expect_status(b, 0, "-w", "corpus", "--stages", "0.3s:4,0.3s:0", "-H",
                  srv.addr, "-q");
    free(b);
    stop_clean();
    fixtures_remove();
}
END_TEST

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("corpus");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_rounds_shakesapp);
    tcase_add_test(tc, test_rounds_catch_wrong_count);
    tcase_add_test(tc, test_corpus_workloads);
    suite_add_tcase(s, tc);
}
#endif /* part 1 */

#if E2E_BENCH_PART == 2 || E2E_BENCH_PART == 4
/* ------------------------------------------------------------------ */
/* freight: one carrier covering 01000-000..99999-999 up to 1000 kg,    */
/* and a small catalog.                                                */

static char catalog[400];

static const char *
freight_conf(void)
{
    static char conf[1200];
    char dir[400], path[500];

    snprintf(dir, sizeof(dir), "%s/freight", fixtures);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/fastcargo.csv", dir);
    ck_assert_int_eq(
        e2e_write_file(path,
                       "ZipCodeStart,ZipCodeEnd,PolygonName,WeightStart,"
                       "WeightEnd,AbsoluteMoneyCost,PricePercent,"
                       "PriceByExtraWeight,MaxVolume,TimeCost,Country,"
                       "MinimumValueInsurance\n"
                       "01000000,49999999,,0,1000000,12.50,1,0.01,1000000000,"
                       "2.00:00:00,BRA,0\n"
                       "50000000,99999999,,0,1000000,20.00,1,0.02,1000000000,"
                       "4.12:00:00,BRA,0\n"),
        0);
    snprintf(catalog, sizeof(catalog), "%s/catalog.csv", fixtures);
    ck_assert_int_eq(e2e_write_file(catalog,
                                    "sku,weight_g,length_cm,width_cm,height_cm,"
                                    "price_cents\n"
                                    "BOOK-1,400,23,16,3,4990\n"
                                    "MUG-7,350,12,9,10,2990\n"
                                    "LAMP-2,1800,30,30,45,15900\n"
                                    "SHIRT-M,200,30,25,2,7990\n"
                                    "KETTLE,1200,25,20,25,12900\n"
                                    "PEN-10,80,15,5,2,1290\n"
                                    "CHAIR,8000,60,55,90,45900\n"
                                    "PLANT,2500,30,30,60,8900\n"
                                    "SOCKS,100,20,10,3,1990\n"
                                    "BOARD,3000,60,40,5,19900\n"
                                    "TENT,4200,60,25,25,39900\n"
                                    "DRILL,2100,35,30,10,29900\n"),
                     0);
    snprintf(conf, sizeof(conf), "freight_dir = %s\ncatalog = %s\n", dir,
             catalog);
    return conf;
}

/* Start foliod on the freight fixtures (and `more` configuration). */
static void
start_with(const char *(*conf_fn)(void), const char *more)
{
    char conf[2400];

    fixtures_make();
    snprintf(conf, sizeof(conf), "%s%s", conf_fn(), more != NULL ? more : "");
    start(conf);
}
#endif

#if E2E_BENCH_PART == 2
/* A catalog file of the test's own. */
static const char *
catalog_path(void)
{
    static char path[128];

    if (fixtures[0] == '\0')
        fixtures_make();
    snprintf(path, sizeof(path), "%s/own-catalog.csv", fixtures);
    return path;
}

START_TEST(test_freight)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;

    start_with(freight_conf, NULL);
    expect_status(b, 0, "-w", "freight", "--catalog", catalog, "--uncovered",
                  "20", "-H", srv.addr, "-c", "4", "-d", "0.6", "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert(jnum(j, "ok") > 0);
    /* Uncovered CEPs: NOT_FOUND, expected, not held against the run. */
    ck_assert(jnum(j, "expected_errors") > 0);
    ck_assert_double_eq(jnum_in(j, "errors_by_code", "5"),
                        jnum(j, "expected_errors"));
    ck_assert_double_eq(jnum(j, "unexpected_errors"), 0);
    ck_assert_double_eq(jnum(j, "error_replies"), jnum(j, "expected_errors"));
    /* About a fifth of them. */
    ck_assert_msg(jnum(j, "expected_errors") > 0.1 * jnum(j, "sent") &&
                      jnum(j, "expected_errors") < 0.3 * jnum(j, "sent"),
                  "%s", j);
    /* Without a catalog: items by weight; and none uncovered. */
    expect_status(b, 0, "-w", "freight", "--uncovered", "0", "-H", srv.addr,
                  "-R", "1000", "-d", "0.5", "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "errors"), 0);
    free(b);
    stop_clean();
    fixtures_remove();
}
END_TEST

/*
 * The example tables and catalog of data/, as the README runs them: the
 * defaults are valid for that data.  Their heaviest band ends at 30 kg,
 * which a few random carts pass: OUT_OF_RANGE, expected like the
 * uncovered CEPs' NOT_FOUND.
 */
START_TEST(test_freight_shipped_data)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;

    start("freight_dir = " FOLIO_SRCDIR "/data/freight\n"
          "catalog = " FOLIO_SRCDIR "/data/catalog.csv\n");
    expect_status(b, 0, "-w", "freight", "-H", srv.addr, "-c", "4", "-d", "1",
                  "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "unexpected_errors"), 0);
    ck_assert_msg(jnum_in(j, "expected_by_code", "11") > 0, "%s", j);
    ck_assert_msg(jnum_in(j, "expected_by_code", "5") > 0, "%s", j);
    ck_assert_ptr_nonnull(strstr(j, "\"expected_codes\":[5,11]"));
    expect_status(b, 0, "-w", "freight", "--catalog",
                  FOLIO_SRCDIR "/data/catalog.csv", "-H", srv.addr, "-c", "4",
                  "-d", "1", "--max-p99", "10s", "-q");
    ck_assert_msg(strstr(b->out, "11 OUT_OF_RANGE ") != NULL &&
                      strstr(b->out, " (expected)") != NULL,
                  "%s", b->out);
    ck_assert_ptr_nonnull(
        strstr(b->out, "threshold --max-errors 0: passed, 0 unexpected"));
    /* An unknown SKU stays unexpected: a catalog the server lacks. */
    ck_assert_int_eq(e2e_write_file(catalog_path(),
                                    "sku,weight_g,length_cm,width_cm,"
                                    "height_cm,price_cents\n"
                                    "NO-SUCH-SKU,100,1,1,1,100\n"),
                     0);
    expect_status(b, 1, "-w", "freight", "--catalog", catalog_path(), "-H",
                  srv.addr, "--uncovered", "0", "-n", "200", "--json", "-q");
    ck_assert_double_eq(jnum_in(json_of(b), "unexpected_by_code", "5"), 200);
    free(b);
    stop_clean();
    fixtures_remove();
}
END_TEST

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("freight");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_freight);
    tcase_add_test(tc, test_freight_shipped_data);
    suite_add_tcase(s, tc);
}
#endif /* part 2 */

#if E2E_BENCH_PART == 3
START_TEST(test_comments)
{
    struct bproc *b = malloc(sizeof(*b));
    struct folio_client *c;
    struct folio_reply r;
    const char *j;
    uint32_t n = 0;

    start(NULL);
    expect_status(b, 0, "-w", "comments", "--write-ratio", "0.2", "--pages",
                  "50", "-H", srv.addr, "-c", "4", "-d", "0.6", "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "errors"), 0);
    ck_assert(jnum_in(j, "comments.list", "sent") > 0);
    ck_assert(jnum_in(j, "comments.post", "sent") > 0);
    /* The most popular page got posts, and they stayed. */
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(
        folio_client_call_str(c, "comments.list", "/bench/page-1/", &r), 1);
    ck_assert_int_eq(r.code, 0);
    ck_assert_int_eq(folio_mp_read_array(&r.result, &n), 0);
    ck_assert_uint_gt(n, 0);
    folio_client_close(c);
    /* Reads only, ramped. */
    expect_status(b, 0, "-w", "comments", "--write-ratio", "0", "-H", srv.addr,
                  "--stages", "0.3s:6,0.3s:0", "--json", "-q");
    ck_assert_double_eq(jnum_in(json_of(b), "comments.list", "errors"), 0);
    free(b);
    stop_clean();
}
END_TEST

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("comments");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_comments);
    suite_add_tcase(s, tc);
}
#endif /* part 3 */

#if E2E_BENCH_PART == 4
START_TEST(test_mixed)
{
    struct bproc *b = malloc(sizeof(*b));
    char more[1200];
    const char *j;

    ck_assert_ptr_nonnull(e2e_corpus());
    snprintf(more, sizeof(more), "corpus = %s\n", e2e_corpus());
    start_with(freight_conf, more);
    expect_status(b, 0, "-w", "mixed", "--catalog", catalog, "-H", srv.addr,
                  "-c", "4", "-d", "0.6", "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert(jnum_in(j, "corpus.match_count", "sent") > 0);
    ck_assert(jnum_in(j, "freight.quote", "sent") > 0);
    ck_assert(jnum_in(j, "comments.list", "sent") > 0);
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    ck_assert_double_eq(jnum(j, "unexpected_errors"), 0);
    expect_status(b, 0, "rounds", "-w", "mixed", "--mix", "corpus:1,ping:1",
                  "-H", srv.addr, "--rounds", "3");
    free(b);
    stop_clean();
    fixtures_remove();
}
END_TEST

/* The mixed workload's defaults on data/'s tables, as the README runs it. */
START_TEST(test_mixed_shipped_data)
{
    struct bproc *b = malloc(sizeof(*b));
    char conf[2000];
    const char *j;

    ck_assert_ptr_nonnull(e2e_corpus());
    snprintf(conf, sizeof(conf),
             "corpus = %s\nfreight_dir = %s/data/freight\n"
             "catalog = %s/data/catalog.csv\n",
             e2e_corpus(), FOLIO_SRCDIR, FOLIO_SRCDIR);
    start(conf);
    expect_status(b, 0, "-w", "mixed", "--catalog",
                  FOLIO_SRCDIR "/data/catalog.csv", "-H", srv.addr, "-c", "4",
                  "-d", "1", "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "unexpected_errors"), 0);
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    free(b);
    stop_clean();
}
END_TEST

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("mixed");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mixed);
    tcase_add_test(tc, test_mixed_shipped_data);
    suite_add_tcase(s, tc);
}
#endif /* part 4 */

int
main(void)
{
    static const char *const names[] = {"", "bench-corpus", "bench-freight",
                                        "bench-comments", "bench-mixed"};
    Suite *s = suite_create(names[E2E_BENCH_PART]);

#if E2E_BENCH_PART == 1 || E2E_BENCH_PART == 4
    e2e_require_corpus();
#endif
    add_tests(s);
    return folio_check_run(s);
}
