/*
 * e2e_cli_comments.c - `folio comments list|post|delete` end to end
 * against foliod with a fresh comments store: human output (times masked)
 * against the golden file tests/cli/comments.ref, --json, the admin
 * socket for delete, and the server's errors (exit 1).
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "src/defaults.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

/* Replace each "YYYY-MM-DD HH:MM:SS UTC" with "@TIME@" (in place). */
static void
mask_times(char *s)
{
    static const char pat[] = "dddd-dd-dd dd:dd:dd UTC";
    size_t n = sizeof(pat) - 1, i;
    char *p;

    for (p = s; *p != '\0'; p++) {
        for (i = 0; i < n && p[i] != '\0'; i++)
            if (pat[i] == 'd' ? !isdigit((unsigned char)p[i]) : p[i] != pat[i])
                break;
        if (i == n) {
            memcpy(p, "@TIME@", 6);
            memmove(p + 6, p + n, strlen(p + n) + 1);
        }
    }
}

START_TEST(test_comments)
{
    static const struct {
        const char *args[8];
        const char *input;
        int admin, status;
    } cases[] = {
        {{"comments", "list", "/blog/hello"}, NULL, 0, 0},
        {{"comments", "list", "blog/hello"}, NULL, 0, 0},
        {{"comments", "list", "about.html"}, NULL, 0, 0},
        {{"comments", "post", "/blog/hello", "alice", "Nice post!"},
         NULL,
         0,
         0},
        {{"comments", "post", "blog/hello", "bob", "-"},
         "Two lines:\n\tand a tab\n",
         0,
         0},
        {{"comments", "post", "/about.html", "carol", "S\xc3\xa3o Paulo"},
         NULL,
         0,
         0},
        {{"comments", "list", "/blog/hello/"}, NULL, 0, 0},
        {{"comments", "list", "/about.html"}, NULL, 0, 0},
        {{"comments", "delete", "1"}, NULL, 1, 0},
        {{"comments", "list", "/blog/hello"}, NULL, 0, 0},
        {{"--json", "comments", "delete", "3"}, NULL, 1, 0},
        {{"comments", "delete", "1"}, NULL, 1, 1},
        {{"comments", "delete", "2"}, NULL, 0, 1},
        {{"comments", "post", "/blog/hello", "", "empty author"}, NULL, 0, 1},
        {{"comments", "post", "/blog/hello", "eve", "bell\x07"}, NULL, 0, 1},
    };
    char *transcript = NULL, *text, env[400];
    const char *argv[12];
    struct cli_opts o;
    struct cli_run r;
    size_t i, k, n;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    snprintf(env, sizeof(env), "FOLIO_ADMIN=%s", srv.admin);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = 0;
        /* Ordinary commands to -H; admin ones to FOLIO_ADMIN by default. */
        if (!cases[i].admin) {
            argv[n++] = "-H";
            argv[n++] = srv.addr;
        }
        for (k = 0; cases[i].args[k] != NULL; k++)
            argv[n++] = cases[i].args[k];
        argv[n] = NULL;
        memset(&o, 0, sizeof(o));
        o.env = (const char *const[]){env, NULL};
        o.input = cases[i].input;
        ck_assert_int_eq(cli_run(&r, &o, argv), 0);
        ck_assert_msg(r.status == cases[i].status, "case %zu: exit %d: %s%s", i,
                      r.status, r.out, r.err);
        mask_times(r.out);
        r.outlen = strlen(r.out);
        cli_transcript_add(&transcript, argv + (cases[i].admin ? 0 : 2), &r);
        cli_run_free(&r);
    }
    text = cli_subst(transcript, srv.addr, "@ADDR@");
    free(transcript);
    transcript = cli_subst(text, folio_default_paths()->run_dir, "@RUNDIR@");
    ck_assert_int_eq(cli_golden("comments", transcript), 0);
    free(text);
    free(transcript);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_comments_json)
{
    struct cli_run r;
    json_error_t jerr;
    json_t *j, *c0, *c1;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    ck_assert_int_eq(
        cli_run(&r, NULL,
                (const char *const[]){"-H", srv.addr, "comments", "post", "/p",
                                      "a", "one", NULL}),
        0);
    ck_assert_int_eq(r.status, 0);
    cli_run_free(&r);
    ck_assert_int_eq(
        cli_run(&r, NULL,
                (const char *const[]){"-H", srv.addr, "--json", "comments",
                                      "post", "/p", "b", "two", NULL}),
        0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_str_eq(json_string_value(json_object_get(j, "body")), "two");
    json_decref(j);
    cli_run_free(&r);
    ck_assert_int_eq(
        cli_run(&r, NULL,
                (const char *const[]){"-H", srv.addr, "--json", "comments",
                                      "list", "p", NULL}),
        0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_uint_eq(json_array_size(j), 2);
    c0 = json_array_get(j, 0);
    c1 = json_array_get(j, 1);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "path")), "/p/");
    ck_assert_str_eq(json_string_value(json_object_get(c0, "author")), "a");
    ck_assert(json_integer_value(json_object_get(c1, "id")) >
              json_integer_value(json_object_get(c0, "id")));
    ck_assert(json_integer_value(json_object_get(c1, "created_at")) >=
              json_integer_value(json_object_get(c0, "created_at")));
    json_decref(j);
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_cli_comments");
    TCase *tc = tcase_create("comments");

    tcase_add_test(tc, test_comments);
    tcase_add_test(tc, test_comments_json);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
