/*
 * e2e_demo.c - the README's demo (bench/demo.sh, `make demo`) as a new
 * user runs it, with a short load: the built foliod on the default data
 * (the build's corpus, required, and data/'s example tables, no option
 * needed),
 * one question of each kind with folio (a count, a quote, a comment
 * posted and listed), shakesapp's rounds and a closed loop, all clean.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"

START_TEST(test_demo)
{
    static char builddir[] = "BUILDDIR=" FOLIO_BUILDDIR;
    struct cli_run r;
    char script[512];

    snprintf(script, sizeof(script), "%s/bench/demo.sh", FOLIO_SRCDIR);
    ck_assert_int_eq(
        cli_run(
            &r,
            &(struct cli_opts){
                .prog = "sh",
                .env = (const char *const[]){builddir, "DEMO_SECS=0.3", NULL},
                .deadline_ms = 60000},
            (const char *const[]){script, NULL}),
        0);
    ck_assert_msg(r.status == 0, "demo exited %d\n%s\n%s", r.status, r.out,
                  r.err);
    /* The example tables of data/, found by a foliod not installed. */
    cli_has(r.out, "freight: 2 carriers, ");
    cli_has(r.out, " SKUs from ");
    cli_has(r.out, "$ folio quote 01310-100 BOOK-00001:2\n");
    cli_has(r.out, "economy  SP-Capital  R$ ");
    /* A comments question too. */
    cli_has(r.out, "comment #1 posted on /demo/hello/\n");
    cli_has(r.out, "$ folio comments list demo/hello\n#1  demo  ");
    cli_has(r.out, "    Hello from the demo\n");
    cli_has(r.out, "$ folio count 'to be, or not to be'\n1\n");
    cli_has(r.out, "Simulated 20 requests in ");
    cli_has(r.out,
            "== folio-bench: server.ping, 50 connections, 0.3 seconds ==");
    ck_assert(strstr(r.out, "UNAVAILABLE") == NULL);
    ck_assert(strstr(r.out, "[crit]") == NULL);
    cli_has(r.out, "[notice] stopped");
    cli_run_free(&r);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_demo");
    TCase *tc = tcase_create("demo");

    e2e_require_corpus(); /* the build's corpus, as the demo serves it */
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_demo);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
