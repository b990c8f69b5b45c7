/*
 * e2e_cli_session.c - folio beyond one-shot commands, end to end against
 * foliod: each command's help (folio help CMD, CMD --help; golden file
 * tests/cli/help.ref), the interactive mode fed lines on standard input
 * and typed at on a pseudo-terminal (prompt, line editing, history,
 * completion, Ctrl-C), a command repeated (-r N -i SEC) and --latency.
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static struct e2e_server srv;

static int
count(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

START_TEST(test_help)
{
    static const char *const cases[][5] = {
        {"help", "count"},
        {"help", "search"},
        {"search", "--help"},
        {"quote", "--help"},
        {"help", "comments"},
        {"comments", "delete", "--help"},
        {"--help", "stats"},
        {"help", "ping"},
        {"help", "methods"},
        {"help", "call"},
        {"help", "help"},
        {"help", "nope"},
        {"help", "comments", "edit"},
    };
    char *transcript = NULL;
    struct cli_run r;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(cli_run(&r, NULL, cases[i]), 0);
        ck_assert_int_eq(r.status,
                         i + 2 < sizeof(cases) / sizeof(cases[0]) ? 0 : 2);
        cli_transcript_add(&transcript, cases[i], &r);
        cli_run_free(&r);
    }
    ck_assert_int_eq(cli_golden("help", transcript), 0);
    free(transcript);
    /* help alone is --help. */
    cli_expect(&r, NULL, ARGS("help"), 0);
    cli_has(r.out, "usage: folio [-H HOST:PORT | -h HOST -p PORT | -U SOCKET]");
    cli_has(r.out, "folio [options] help [COMMAND]\n");
    cli_run_free(&r);
}
END_TEST

/* Lines on standard input: each a command, as on the command line. */
START_TEST(test_interactive_lines)
{
    struct cli_run r;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    cli_expect(&r,
               &(struct cli_opts){
                   .input =
                       "ping\n"
                       "\n"
                       "# a comment\n"
                       "--json ping\n"
                       "comments post blog/repl \"ann\" 'it''s \"quoted\"'\n"
                       "comments list blog/repl\n"
                       "count\n"
                       "help ping\n"
                       "bogus\n"
                       "call server.ping '[]'\n"
                       "comments post 'unterminated\n"
                       "-r 2 --json ping\n"
                     "--latency -r 2 -i 0.001\n"},
               ARGS("-H", srv.addr), 0);
    cli_has(r.out, "pong from ");
    cli_has(r.out, "\"pong\"\n");
    cli_has(r.out, "comment #1 posted on /blog/repl/\n");
    cli_has(r.out, "#1  ann  ");
    cli_has(r.out, "    its \"quoted\"\n");
    cli_has(r.out, "usage: folio [options] ping\n\nserver.ping, and how long");
    /* A bad line is reported; the session goes on. */
    cli_has(r.err, "folio: count: missing arguments\n");
    cli_has(r.err, "folio: unknown command 'bogus'\n");
    cli_has(r.err, "folio: a quote that does not end\n");
    ck_assert_int_eq(count(r.out, "\"pong\"\n"), 4);
    cli_has(r.out, " ms, 2 samples:\n");
    ck_assert(strstr(r.out, "> ") == NULL); /* no prompt off a terminal */
    cli_run_free(&r);
    /* The status is the last command's; quit stops reading. */
    cli_expect(&r, &(struct cli_opts){.input = "ping\nbogus\n"},
               ARGS("-H", srv.addr), 2);
    cli_run_free(&r);
    cli_expect(&r, &(struct cli_opts){.input = "bogus\nping\nquit\nbogus\n"},
               ARGS("-i", "-H", srv.addr), 0);
    ck_assert_int_eq(count(r.err, "unknown command"), 1);
    cli_run_free(&r);
    cli_expect(&r, &(struct cli_opts){.input = "stats\n"},
               ARGS("--interactive", "-U", srv.admin), 0);
    cli_has(r.out, "    PID STATE");
    cli_run_free(&r);
    /* End of input at once: nothing to do. */
    cli_expect(&r, NULL, ARGS("-H", srv.addr), 0);
    ck_assert_str_eq(r.out, "");
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

/* On a terminal: the prompt, editing keys, history, completion, Ctrl-C. */
START_TEST(test_interactive_tty)
{
    struct cli_pty p;
    char home[64] = "/tmp/folio-home.XXXXXX", env[96], prompt[160], hist[128];
    char *text = NULL;
    FILE *f;
    long len;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    ck_assert_ptr_nonnull(mkdtemp(home));
    snprintf(env, sizeof(env), "HOME=%s", home);
    snprintf(prompt, sizeof(prompt), "folio %s> ", srv.addr);
    ck_assert_int_eq(cli_pty_start(&p, ARGS(env), ARGS("-H", srv.addr)), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    cli_pty_send(&p, "ping\r");
    ck_assert_int_eq(cli_pty_expect(&p, "pong from ", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* Up arrow: the last line again; Ctrl-A, a word typed before it. */
    cli_pty_send(&p, "\033[A\001--json \r");
    ck_assert_int_eq(cli_pty_expect(&p, "\"pong\"", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* Tab completes a command's name. */
    cli_pty_send(&p, "meth\t\r");
    ck_assert_int_eq(cli_pty_expect(&p, "server.ping", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* Ctrl-C stops a command that repeats, and the prompt comes back. */
    cli_pty_send(&p, "-r -1 -i 0.05 ping\r");
    ck_assert_int_eq(cli_pty_expect(&p, "pong from ", 10000), 0);
    cli_pty_send(&p, "\003");
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* --latency on a terminal: the line that changes, then Ctrl-C. */
    cli_pty_send(&p, "--latency -i 0.01\r");
    ck_assert_int_eq(cli_pty_expect(&p, " samples", 10000), 0);
    cli_pty_send(&p, "\003");
    ck_assert_int_eq(cli_pty_expect(&p, "latency (ms)", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    cli_pty_send(&p, "quit\r");
    ck_assert_int_eq(cli_pty_finish(&p, 10000), 0);
    /* The history is kept for the next session. */
    snprintf(hist, sizeof(hist), "%s/.folio_history", home);
    ck_assert_ptr_nonnull(f = fopen(hist, "r"));
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    cli_has(text, "ping\n");
    cli_has(text, "--json"); /* libedit's file: spaces as \040 */
    free(text);
    /* A new session: up arrow finds the last session's lines; Ctrl-D. */
    ck_assert_int_eq(cli_pty_start(&p, ARGS(env), ARGS("-H", srv.addr)), 0);
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    cli_pty_send(&p, "\033[A\r");
    ck_assert_int_eq(cli_pty_expect(&p, "quit", 10000), 0);
    ck_assert_int_eq(cli_pty_finish(&p, 10000), 0);
    nftw(home, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * As redis-cli's: "not connected> " while the server is away, the
 * server's prompt once it answers; Tab completes every word (a
 * subcommand, a method of server.methods, a command's choices); the hint
 * says what a command takes next; help lists the mode's own commands;
 * a misspelt command gets the near one.
 */
START_TEST(test_interactive_completion)
{
    struct cli_pty p;
    char home[64] = "/tmp/folio-home.XXXXXX", env[96], addr[64], prompt[96];
    char port[16];

    ck_assert_ptr_nonnull(mkdtemp(home));
    snprintf(env, sizeof(env), "HOME=%s", home);
    snprintf(port, sizeof(port), "%d", e2e_free_port());
    snprintf(addr, sizeof(addr), "127.0.0.1:%s", port);
    snprintf(prompt, sizeof(prompt), "folio %s> ", addr);
    /* Nobody there yet. */
    ck_assert_int_eq(cli_pty_start(&p, ARGS(env), ARGS("-p", port)), 0);
    ck_assert_int_eq(cli_pty_expect(&p, "not connected> ", 10000), 0);
    ck_assert_int_eq(e2e_start(&srv, NULL, ARGS("--listen", addr)), 0);
    cli_pty_send(&p, "\r"); /* an empty line tries again */
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* The hint of a group's subcommands; one completed, and its hint. */
    cli_pty_send(&p, "comments ");
    ck_assert_int_eq(cli_pty_expect(&p, "list|post|delete", 10000), 0);
    cli_pty_send(&p, "l\t");
    ck_assert_int_eq(cli_pty_expect(&p, "ist", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, "PATH", 10000), 0);
    cli_pty_send(&p, "\025count "); /* Ctrl-U: the line goes */
    ck_assert_int_eq(cli_pty_expect(&p, "QUERY", 10000), 0);
    /* The server's methods: a family listed, then one completed. */
    cli_pty_send(&p, "\025call corpus.\t");
    ck_assert_int_eq(
        cli_pty_expect(&p, "corpus.match_count  corpus.search", 10000), 0);
    cli_pty_send(&p, "\025call corpus.m\t");
    ck_assert_int_eq(cli_pty_expect(&p, "atch_count", 10000), 0);
    /* A command's choices. */
    cli_pty_send(&p, "\025profile \t");
    ck_assert_int_eq(cli_pty_expect(&p, "cpu  heap  allocs", 10000), 0);
    cli_pty_send(&p, "\025");
    ck_assert_int_eq(cli_pty_expect(&p, prompt, 10000), 0);
    /* The mode's help, and a slip. */
    cli_pty_send(&p, "help\r");
    ck_assert_int_eq(cli_pty_expect(&p, "clear the screen", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, "quit", 10000), 0);
    cli_pty_send(&p, "cuont x\r");
    ck_assert_int_eq(cli_pty_expect(&p, "did you mean 'count'?", 10000), 0);
    /* The server goes: the prompt says so. */
    ck_assert_int_eq(e2e_stop(&srv), 0);
    cli_pty_send(&p, "ping\r");
    ck_assert_int_eq(cli_pty_expect(&p, "Connection refused", 10000), 0);
    ck_assert_int_eq(cli_pty_expect(&p, "not connected> ", 10000), 0);
    cli_pty_send(&p, "quit\r");
    /* The session's status is its last command's: the ping refused. */
    ck_assert_int_eq(cli_pty_finish(&p, 10000), 3);
    nftw(home, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}
END_TEST

START_TEST(test_repeat)
{
    struct cli_run r;
    char addr[64];

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    cli_expect(&r, NULL, ARGS("-H", srv.addr, "-r", "3", "-i", "0.1", "ping"),
               0);
    ck_assert_int_eq(count(r.out, "pong from "), 3);
    ck_assert_msg(r.ms >= 200, "3 runs 0.1 s apart took %llu ms",
                  (unsigned long long)r.ms);
    cli_run_free(&r);
    cli_expect(&r, NULL,
               ARGS("--json", "-r", "2", "count", "x", "-H", srv.addr), 1);
    ck_assert_int_eq(count(r.err, "folio: UNAVAILABLE: "), 2);
    cli_run_free(&r);
    /* Until interrupted: Ctrl-C ends it, exit 0. */
    cli_expect(&r, &(struct cli_opts){.until = "pong\"\n\"pong"},
               ARGS("-H", srv.addr, "--repeat", "-1", "--interval", "0.01",
                    "--json", "ping"),
               0);
    ck_assert_int_ge(count(r.out, "\"pong\""), 2);
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* No server: each run says so; the status is 3. */
    snprintf(addr, sizeof(addr), "127.0.0.1:1");
    cli_expect(&r, NULL, ARGS("-H", addr, "-r", "2", "ping"), 3);
    ck_assert_int_eq(count(r.err, "cannot connect"), 2);
    cli_run_free(&r);
}
END_TEST

START_TEST(test_latency)
{
    struct cli_run r;
    json_error_t jerr;
    json_t *j, *h;
    size_t i;
    json_int_t total = 0;

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    cli_expect(&r, NULL,
               ARGS("-H", srv.addr, "--latency", "-r", "50", "-i", "0.001"), 0);
    cli_has(r.out, "min ");
    cli_has(r.out, " ms, avg ");
    cli_has(r.out, " ms, max ");
    cli_has(r.out, " ms, 50 samples:\n");
    cli_has(r.out, "  latency (ms)    samples      %\n");
    cli_has(r.out, "  <=  ");
    ck_assert(strstr(r.out, "\033[") == NULL); /* not a terminal */
    cli_run_free(&r);
    cli_expect(&r, NULL, ARGS("-H", srv.addr, "--latency", "-r", "5", "--json"),
               0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "samples")), 5);
    ck_assert(json_real_value(json_object_get(j, "min_ms")) <=
              json_real_value(json_object_get(j, "avg_ms")));
    ck_assert(json_real_value(json_object_get(j, "avg_ms")) <=
              json_real_value(json_object_get(j, "max_ms")));
    h = json_object_get(j, "histogram");
    for (i = 0; i < json_array_size(h); i++)
        total += json_integer_value(
            json_object_get(json_array_get(h, i), "samples"));
    ck_assert_int_eq(total, 5);
    json_decref(j);
    cli_run_free(&r);
    cli_expect(&r, NULL, ARGS("-H", srv.addr, "--latency", "ping"), 2);
    cli_has(r.err, "--latency takes no command");
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* The server goes away: what was measured, and exit 3. */
    cli_expect(&r, NULL, ARGS("-H", "127.0.0.1:1", "--latency", "-r", "3"), 3);
    cli_has(r.out, "no samples\n");
    cli_run_free(&r);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_cli_session");
    TCase *tc = tcase_create("session");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_interactive_lines);
    tcase_add_test(tc, test_interactive_tty);
    tcase_add_test(tc, test_interactive_completion);
    tcase_add_test(tc, test_repeat);
    tcase_add_test(tc, test_latency);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
