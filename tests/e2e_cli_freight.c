/*
 * e2e_cli_freight.c - `folio quote` end to end against foliod serving the
 * example freight tables and catalog of data/: the options table (prices
 * as R$ 1.234,56), --json, and the server's errors (exit 1) against the
 * golden file tests/cli/freight.ref.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/cli_util.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

static void
start(void)
{
    ck_assert_int_eq(e2e_start(&srv,
                               "freight_dir = " FOLIO_SRCDIR "/data/freight\n"
                               "catalog = " FOLIO_SRCDIR "/data/catalog.csv\n",
                               NULL),
                     0);
}

START_TEST(test_quote)
{
    static const struct {
        const char *args[8];
        int status;
    } cases[] = {
        {{"quote", "01310-100", "1200g:2"}, 0},
        {{"quote", "01310100", "BOOK-00001", "BOOK-00002:3"}, 0},
        {{"quote", "69900-000", "800g/30x20x10"}, 0},
        {{"quote", "90010-000", "300g", "25000g/60x50x40"}, 0},
        {{"--json", "quote", "01310-100", "500g"}, 0},
        {{"call", "freight.quote",
          "[\"01310-100\", [{\"weight_g\": 500, \"qty\": 1}]]"},
         0},
        {{"quote", "00500-000", "500g"}, 1},
        {{"quote", "01310-100", "40000g"}, 1},
        {{"quote", "01310-100", "NO-SUCH-SKU"}, 1},
        {{"quote", "0131", "500g"}, 1},
        {{"quote", "01310-100", "500g:0"}, 1},
    };
    char *transcript = NULL, *text;
    const char *argv[12];
    struct cli_run r;
    size_t i, k, n;

    start();
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = 0;
        argv[n++] = "-H";
        argv[n++] = srv.addr;
        for (k = 0; cases[i].args[k] != NULL; k++)
            argv[n++] = cases[i].args[k];
        argv[n] = NULL;
        ck_assert_int_eq(cli_run(&r, NULL, argv), 0);
        ck_assert_msg(r.status == cases[i].status, "%s %s: exit %d: %s",
                      argv[3], argv[4], r.status, r.err);
        if (r.status == 1)
            ck_assert_msg(strncmp(r.err, "folio: ", 7) == 0 &&
                              strchr(r.err + 7, ':') != NULL,
                          "%s", r.err);
        cli_transcript_add(&transcript, argv + 2, &r);
        cli_run_free(&r);
    }
    text = cli_subst(transcript, srv.addr, "@ADDR@");
    ck_assert_int_eq(cli_golden("freight", text), 0);
    free(text);
    free(transcript);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_quote_uncovered_message)
{
    struct cli_run r;

    start();
    ck_assert_int_eq(cli_run(&r, NULL,
                             (const char *const[]){"-H", srv.addr, "quote",
                                                   "00999-999", "500g", NULL}),
                     0);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "folio: NOT_FOUND: ", 18) == 0, "%s", r.err);
    ck_assert_msg(strstr(r.err, "00999-999") != NULL, "%s", r.err);
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_cli_freight");
    TCase *tc = tcase_create("freight");

    tcase_add_test(tc, test_quote);
    tcase_add_test(tc, test_quote_uncovered_message);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
