/*
 * e2e_man.c - the manual pages' examples are true.  Every page: each
 * literal line uses only the roff escapes a reader sees as typed (a `\n'
 * written where roff needs `\en' renders as `n'), and each command of its
 * EXAMPLES section, as mandoc renders it, is a complete shell command
 * (sh -n).  folio(1): its EXAMPLES are run, in order, against the real
 * foliod, and the output and exit status the page shows are what folio
 * prints and returns.  mandoc and the corpus are required
 * (e2e_require): without them the suite is skipped, or fails under CI.
 */
#include "config.h"

#include <check.h>
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"

static const char *const pages[] = {"foliod.8",    "foliod.conf.5",
                                    "folio-rpc.7", "folio-http.7",
                                    "folio.1",     "folio-bench.1"};

#define NPAGES (sizeof(pages) / sizeof(pages[0]))

/* A command of an EXAMPLES section and the lines the page shows after it. */
struct example {
    char cmd[2048];
    char out[4096]; /* the output lines shown, '\n'-terminated each */
    char input[512]; /* interactive: the lines typed after its prompts */
    int status;      /* from a following "$ echo $?" */
};

/* The rendered EXAMPLES section's literal lines of `page`, prefixes off. */
static char *
rendered_examples(const char *page)
{
    char cmd[1024], line[4096];
    size_t len = 0, cap = 65536;
    char *text = malloc(cap);
    int in = 0;
    FILE *p;

    ck_assert_ptr_nonnull(text);
    text[0] = '\0';
    snprintf(cmd, sizeof(cmd), "mandoc -T markdown %s/man/%s", FOLIO_BUILDDIR,
             page);
    ck_assert_ptr_nonnull(p = popen(cmd, "r"));
    while (fgets(line, sizeof(line), p) != NULL) {
        const char *l = line;

        if (strncmp(line, "# ", 2) == 0) {
            in = strcmp(line, "# EXAMPLES\n") == 0;
            continue;
        }
        if (!in)
            continue;
        /* .Bd -literal -offset indent renders as "> ", .Dl as a tab. */
        if (strncmp(l, "> ", 2) == 0)
            l += 2;
        else if (l[0] == '\t')
            l += 1;
        else
            continue;
        ck_assert(len + strlen(l) < cap);
        len += (size_t)snprintf(text + len, cap - len, "%s", l);
    }
    ck_assert_int_eq(pclose(p), 0);
    return text;
}

/*
 * Whether a literal line of roff source uses only escapes that render as
 * what they stand for; the offending escape in *bad.
 */
static int
escapes_ok(const char *s, const char **bad)
{
    static const char *const ok[] = {"\\e", "\\-", "\\&", "\\(aq", "\\(dq",
                                     "\\(ga", "\\(ti", "\\(ha", "\\(rs", "\\ "};

    for (; (s = strchr(s, '\\')) != NULL; s++) {
        size_t i, n = 0;

        for (i = 0; i < sizeof(ok) / sizeof(ok[0]) && n == 0; i++)
            if (strncmp(s, ok[i], strlen(ok[i])) == 0)
                n = strlen(ok[i]);
        if (n == 0) {
            *bad = s;
            return 0;
        }
        s += n - 1;
    }
    return 1;
}

START_TEST(test_escapes)
{
    char path[512], line[4096];
    int literal = 0, lineno = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/man/%s", FOLIO_BUILDDIR, pages[_i]);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    while (fgets(line, sizeof(line), f) != NULL) {
        const char *text = NULL, *bad;

        lineno++;
        if (strncmp(line, ".Bd -literal", 12) == 0)
            literal = 1;
        else if (strncmp(line, ".Ed", 3) == 0)
            literal = 0;
        else if (strncmp(line, ".Dl ", 4) == 0)
            text = line + 4;
        else if (literal && line[0] != '.')
            text = line;
        if (text != NULL && !escapes_ok(text, &bad))
            ck_abort_msg("man/%s.in:%d: the escape \"%.4s\" in a literal line "
                         "renders as something else than it reads (a "
                         "backslash is \\e): %s",
                         pages[_i], lineno, bad, line);
    }
    fclose(f);
}
END_TEST

/* The next example command of text at *pos (continuations joined). */
static int
next_example(const char **pos, struct example *ex)
{
    const char *p = *pos, *eol;
    size_t n = 0, o = 0, in = 0;

    memset(ex, 0, sizeof(*ex));
    while (*p != '\0' && strncmp(p, "$ ", 2) != 0 && strncmp(p, "# ", 2) != 0)
        p = strchr(p, '\n') != NULL ? strchr(p, '\n') + 1 : p + strlen(p);
    if (*p == '\0')
        return 0;
    p += 2;
    for (;;) {
        eol = strchr(p, '\n');
        if (eol == NULL)
            eol = p + strlen(p);
        ck_assert(n + (size_t)(eol - p) + 2 < sizeof(ex->cmd));
        memcpy(ex->cmd + n, p, (size_t)(eol - p));
        n += (size_t)(eol - p);
        p = *eol != '\0' ? eol + 1 : eol;
        if (n == 0 || ex->cmd[n - 1] != '\\')
            break;
        ex->cmd[n++] = '\n';
    }
    ex->cmd[n] = '\0';
    /* The lines shown after it, up to the next command. */
    while (*p != '\0' && strncmp(p, "$ ", 2) != 0 && strncmp(p, "# ", 2) != 0) {
        const char *prompt;

        eol = strchr(p, '\n');
        if (eol == NULL)
            eol = p + strlen(p);
        /* "folio ADDR> cmd": typed at the interactive prompt. */
        if (strncmp(p, "folio ", 6) == 0 &&
            (prompt = memchr(p, '>', (size_t)(eol - p))) != NULL &&
            prompt[1] == ' ') {
            ck_assert(in + (size_t)(eol - prompt) + 1 < sizeof(ex->input));
            memcpy(ex->input + in, prompt + 2, (size_t)(eol - prompt - 2));
            in += (size_t)(eol - prompt - 2);
            ex->input[in++] = '\n';
        } else {
            ck_assert(o + (size_t)(eol - p) + 2 < sizeof(ex->out));
            memcpy(ex->out + o, p, (size_t)(eol - p));
            o += (size_t)(eol - p);
            ex->out[o++] = '\n';
        }
        p = *eol != '\0' ? eol + 1 : eol;
    }
    ex->out[o] = '\0';
    ex->input[in] = '\0';
    /* "$ echo $?" and its answer belong to the command before. */
    if (strncmp(p, "$ echo $?\n", 10) == 0) {
        ex->status = atoi(p + 10);
        p = strchr(p + 10, '\n') != NULL ? strchr(p + 10, '\n') + 1 : "";
    }
    *pos = p;
    return 1;
}

START_TEST(test_commands_parse)
{
    char *text;
    const char *pos;
    struct example ex;
    struct cli_run r;
    int n = 0;

    text = rendered_examples(pages[_i]);
    for (pos = text; next_example(&pos, &ex); n++) {
        ck_assert_int_eq(cli_run(&r, &(struct cli_opts){.prog = "sh"},
                                 (const char *const[]){"-n", "-c", ex.cmd,
                                                       NULL}),
                         0);
        ck_assert_msg(r.status == 0,
                      "man/%s, EXAMPLES: not a complete shell command as "
                      "rendered:\n  %s\nsh -n: %s",
                      pages[_i], ex.cmd, r.err);
        cli_run_free(&r);
    }
    /* folio-rpc(7) shows no commands; every other page does. */
    if (strcmp(pages[_i], "folio-rpc.7") != 0)
        ck_assert_msg(n > 0, "man/%s: no command found in EXAMPLES", pages[_i]);
    free(text);
}
END_TEST

/* text with every "YYYY-MM-DD HH:MM:SS" replaced by a fixed one. */
static char *
fixed_dates(const char *text)
{
    regex_t re;
    regmatch_t m;
    char *out = strdup(text), *p;

    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(regcomp(&re,
                             "[0-9]{4}-[0-9]{2}-[0-9]{2} "
                             "[0-9]{2}:[0-9]{2}:[0-9]{2}",
                             REG_EXTENDED),
                     0);
    for (p = out; regexec(&re, p, 1, &m, 0) == 0; p += m.rm_eo)
        memcpy(p + m.rm_so, "2000-01-01 00:00:00", 19);
    regfree(&re);
    return out;
}

/*
 * Commands of folio(1)'s EXAMPLES that do not end by themselves; each is
 * covered by its own suite (e2e_cli_session: --watch; e2e_profile).
 */
static const char *const not_run[] = {
    "stats --watch",  /* until Ctrl-C */
    "pprof -http",    /* serves a page until stopped */
};

START_TEST(test_folio_examples_run)
{
    struct e2e_server srv;
    char conf[1024], path[4096], addr_env[160], admin_env[400], metrics[160],
        prefix[1300], dir[600];
    const char *c = e2e_corpus(), *pos;
    struct example ex;
    struct cli_run r;
    char *text;
    int ran = 0;

    snprintf(conf, sizeof(conf),
             "corpus = %s\nfreight_dir = %s/data/freight\n"
             "catalog = %s/data/catalog.csv\nmetrics_listen = 127.0.0.1:0\n",
             c, FOLIO_SRCDIR, FOLIO_SRCDIR);
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
    snprintf(path, sizeof(path), "PATH=%s:%s", FOLIO_BUILDDIR,
             getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(addr_env, sizeof(addr_env), "FOLIO_ADDR=%s", srv.addr);
    snprintf(admin_env, sizeof(admin_env), "FOLIO_ADMIN=%s", srv.admin);
    snprintf(metrics, sizeof(metrics), "FOLIO_METRICS=%s", srv.metrics);
    snprintf(dir, sizeof(dir), "%s/examples", srv.dir);
    snprintf(prefix, sizeof(prefix), "mkdir -p '%s' && cd '%s' && ", dir, dir);

    text = rendered_examples("folio.1");
    for (pos = text; next_example(&pos, &ex);) {
        char *cmd, *cmd2, *want, *got, *want2, *script;
        size_t i, skip = 0;

        for (i = 0; i < sizeof(not_run) / sizeof(not_run[0]); i++)
            skip |= strstr(ex.cmd, not_run[i]) != NULL;
        if (skip)
            continue;
        /*
         * The page's addresses are the defaults; the test's are its own.
         * Its profiles' lengths are a user's: 1 s here (the same options,
         * 14 s less of a suite that CI runs three times).
         */
        cmd = cli_subst(ex.cmd, "127.0.0.1:7788", srv.addr);
        cmd2 = cli_subst(cmd, "/tmp/folio/admin.sock", srv.admin);
        free(cmd);
        cmd = cli_subst(cmd2, "--seconds 10", "--seconds 1");
        free(cmd2);
        cmd2 = cli_subst(cmd, "--every 5s --seconds 2",
                         "--every 2s --seconds 1");
        ck_assert_ptr_nonnull(script = malloc(strlen(prefix) + strlen(cmd2) + 1));
        strcpy(script, prefix);
        strcat(script, cmd2);
        ck_assert_int_eq(
            cli_run(&r,
                    &(struct cli_opts){
                        .prog = "sh",
                        .env = (const char *const[]){path, addr_env, admin_env,
                                                     metrics, NULL},
                        .input = ex.input[0] != '\0' ? ex.input : NULL,
                        .deadline_ms = e2e_bound_ms(30000, 90000)},
                    (const char *const[]){"-c", script, NULL}),
            0);
        ck_assert_msg(r.status == ex.status,
                      "folio(1) example `%s': exit %d, the page says %d\n"
                      "stdout: %s\nstderr: %s",
                      ex.cmd, r.status, ex.status, r.out, r.err);
        if (ex.out[0] != '\0') {
            /* What the page shows: stdout, or stderr for an error. */
            want = cli_subst(ex.out, "127.0.0.1:7788", srv.addr);
            want2 = fixed_dates(want);
            got = fixed_dates(ex.status == 0 ? r.out : r.err);
            ck_assert_msg(strcmp(got, want2) == 0,
                          "folio(1) example `%s' prints\n%s\nthe page shows\n%s",
                          ex.cmd, got, want2);
            free(want);
            free(want2);
            free(got);
        }
        cli_run_free(&r);
        free(cmd);
        free(cmd2);
        free(script);
        ran++;
    }
    free(text);
    ck_assert_int_ge(ran, 10);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_man");
    TCase *tc = tcase_create("pages");
    TCase *run = tcase_create("run");

    e2e_require("mandoc", "mandoc"); /* the pages as rendered */
    e2e_require_corpus();            /* folio(1)'s examples ask it */
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_escapes, 0, (int)NPAGES);
    tcase_add_loop_test(tc, test_commands_parse, 0, (int)NPAGES);
    suite_add_tcase(s, tc);
    tcase_set_timeout(run, 120);
    tcase_add_test(run, test_folio_examples_run);
    suite_add_tcase(s, run);
    return folio_check_run(s);
}
