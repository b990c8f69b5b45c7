/*
 * e2e_cli_corpus.c - `folio count` and `folio search` end to end against
 * foliod serving the Shakespeare corpus (the reference counts of
 * PROTOCOL.md section 3): human output and --json against the golden
 * file tests/cli/corpus.ref, and the server's errors (exit 1).
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

START_TEST(test_count_and_search)
{
    static const char *const cases[][8] = {
        {"count", "hello"},
        {"count", "world"},
        {"count", "to be, or not to be"},
        {"count", "INSOLENCE"},
        {"--json", "count", "hello"},
        {"search", "to be, or not to be"},
        {"search", "insolence", "--limit", "3"},
        {"search", "insolence", "--offset", "12", "--limit", "5"},
        {"search", "--offset", "20", "insolence"},
        {"search", "insolence", "--limit", "0"},
        {"search", "zzqqzzqq"},
        {"--json", "search", "insolence", "--limit", "2"},
        {"call", "corpus.match_count", "[\"hello\"]"},
        {"count", ""},
        {"search", "insolence", "--limit", "5000"},
    };
    char conf[1200], *transcript = NULL, *text;
    const char *argv[12], *corpus = e2e_corpus();
    struct cli_run r;
    size_t i, k, n;

    ck_assert_msg(corpus != NULL, "no corpus (configure --with-corpus=DIR)");
    snprintf(conf, sizeof(conf), "corpus = %s\n", corpus);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = 0;
        argv[n++] = "-H";
        argv[n++] = srv.addr;
        for (k = 0; cases[i][k] != NULL; k++)
            argv[n++] = cases[i][k];
        argv[n] = NULL;
        ck_assert_int_eq(cli_run(&r, NULL, argv), 0);
        /* Results exit 0; the last two are the server's errors. */
        ck_assert_int_eq(r.status,
                         i + 2 < sizeof(cases) / sizeof(cases[0]) ? 0 : 1);
        cli_transcript_add(&transcript, argv + 2, &r);
        cli_run_free(&r);
    }
    text = cli_subst(transcript, srv.addr, "@ADDR@");
    ck_assert_int_eq(cli_golden("corpus", text), 0);
    free(text);
    free(transcript);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_search_json_is_the_result)
{
    char conf[1200];
    const char *corpus = e2e_corpus();
    struct cli_run r;
    json_error_t jerr;
    json_t *j, *line;

    ck_assert_msg(corpus != NULL, "no corpus (configure --with-corpus=DIR)");
    snprintf(conf, sizeof(conf), "corpus = %s\n", corpus);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    ck_assert_int_eq(
        cli_run(&r, NULL,
                (const char *const[]){"-H", srv.addr, "--json", "search",
                                      "hello", "--limit", "1000", NULL}),
        0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 349);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "lines")), 349);
    line = json_array_get(json_object_get(j, "lines"), 0);
    ck_assert(json_is_string(json_object_get(line, "work")));
    ck_assert(json_is_integer(json_object_get(line, "line")));
    ck_assert(json_is_string(json_object_get(line, "text")));
    json_decref(j);
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_cli_corpus");
    TCase *tc = tcase_create("corpus");

    e2e_require_corpus();
    tcase_add_test(tc, test_count_and_search);
    tcase_add_test(tc, test_search_json_is_the_result);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
