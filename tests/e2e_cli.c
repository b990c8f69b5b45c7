/*
 * e2e_cli.c - the folio client end to end: the built binary run against
 * the real foliod (and against fake servers that refuse, never answer,
 * hang up or answer garbage), checking standard output, standard error
 * and every exit status; golden files in tests/cli/ where the output is
 * stable.  The services' commands have their own suites
 * (e2e_cli_corpus.c, e2e_cli_freight.c, e2e_cli_comments.c).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "src/client.h"
#include "src/defaults.h"
#include "src/mp.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void
start(void)
{
    ck_assert_msg(e2e_start(&srv, NULL, NULL) == 0, "foliod did not start");
}

static void
stop(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

/* Run folio; check the exit status. */
static void
run(struct cli_run *r, const struct cli_opts *o, const char *const *argv,
    int status)
{
    ck_assert_int_eq(cli_run(r, o, argv), 0);
    ck_assert_msg(r->status == status,
                  "folio %s...: exit %d, expected %d\nstdout: %s\nstderr: %s",
                  argv[0], r->status, status, r->out, r->err);
}

static void
has(const char *text, const char *needle)
{
    ck_assert_msg(strstr(text, needle) != NULL, "'%s' not in:\n%s", needle,
                  text);
}

/* A TCP port on 127.0.0.1 where nothing listens. */
static int
refused_port(void)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(fd >= 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* A listening socket on 127.0.0.1 (port in *port) that nobody accepts on. */
static int
listener_backlog(int *port, int backlog)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(fd >= 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, backlog), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

static int
listener(int *port)
{
    return listener_backlog(port, 8);
}

/*
 * A fake server: accepts one connection, reads the request, writes
 * `reply` (len bytes) and hangs up.  Returns its pid.
 */
static pid_t
fake_server(int lfd, const void *reply, size_t len)
{
    char buf[4096];
    pid_t pid = fork();
    int fd;

    ck_assert(pid >= 0);
    if (pid == 0) {
        alarm(20);
        if ((fd = accept(lfd, NULL, NULL)) >= 0) {
            if (read(fd, buf, sizeof(buf)) > 0 && len > 0 &&
                write(fd, reply, len) < 0)
                _exit(1);
            close(fd);
        }
        _exit(0); /* not exit(): the e2e atexit handler is the parent's */
    }
    return pid;
}

static void
reap(pid_t pid)
{
    int st;

    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* ---- without a server ---- */

START_TEST(test_help)
{
    struct cli_run r;
    char *text, want[64];

    run(&r, NULL, ARGS("--help"), 0);
    ck_assert_str_eq(r.err, "");
    text = cli_subst(r.out, folio_default_paths()->run_dir, "@RUNDIR@");
    ck_assert_int_eq(cli_golden("usage", text), 0);
    free(text);
    cli_run_free(&r);
    /* The synopsis is the man page's. */
    run(&r, NULL, ARGS("-h"), 0);
    text = cli_subst(r.out, folio_default_paths()->run_dir, "@RUNDIR@");
    ck_assert_int_eq(cli_golden("usage", text), 0);
    free(text);
    cli_run_free(&r);
    run(&r, NULL, ARGS("--version"), 0);
    snprintf(want, sizeof(want), "folio %s\n", PACKAGE_VERSION);
    ck_assert_str_eq(r.out, want);
    cli_run_free(&r);
}
END_TEST

START_TEST(test_usage_errors)
{
    /* Each is a usage error found before connecting: the address refuses. */
    static const char *const cases[][8] = {
        {"bogus"},
        {"--bogus", "ping"},
        {"--timeout", "soon", "ping"},
        {"--timeout"},
        {"-H", "@ADDR@", "-U", "/nonexistent.sock", "ping"},
        {"-H", "127.0.0.1:abc", "ping"},
        {"-H", "127.0.0.1:65536", "ping"},
        {"-p", "http", "ping"},
        {"-h", "127.0.0.1:1", "-p", "7788", "ping"},
        {"cuont", "x"},
        {"--jsno", "ping"},
        {"count"},
        {"count", "a", "b"},
        {"count", "a", "--limit", "3"},
        {"search", "a", "--limit", "-1"},
        {"stats", "--watch", "0"},
        {"ping", "extra"},
        {"comments"},
        {"comments", "edit", "1"},
        {"comments", "lsit", "/p"},
        {"comments", "post", "/p", "alice"},
        {"comments", "delete", "one"},
        {"quote", "01310-100"},
        {"quote", "01310-100", "1200g:two"},
        {"quote", "01310-100", ":3"},
        {"quote", "01310-100", "800g/30x20"},
        {"call"},
        {"call", "server.ping", "[1,"},
        {"call", "server.ping", "{\"a\": 1, \"a\": 2}"},
        {"call", "server.ping", "[{\"$bin\": \"not base64!\"}]"},
        {"call", "server.ping", "[{\"$ext\": [300, \"AA==\"]}]"},
        {"call", "server.ping", "[]", "extra"},
        {"-r", "0", "ping"},
        {"-r", "twice", "ping"},
        {"-i", "0.5", "ping"},
        {"-r", "2", "-i", "soon", "ping"},
        {"-r", "2", "stats", "--watch", "1"},
        {"-r", "2"},
        {"--latency", "ping"},
        {"--interactive", "ping"},
    };
    char addr[64], *transcript = NULL, *text;
    const char *argv[12];
    struct cli_run r;
    size_t i, j, n;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", refused_port());
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = 0;
        argv[n++] = "-H";
        argv[n++] = addr;
        for (j = 0; cases[i][j] != NULL; j++)
            argv[n++] = strcmp(cases[i][j], "@ADDR@") == 0 ? addr : cases[i][j];
        argv[n] = NULL;
        run(&r, NULL, argv, 2);
        ck_assert_str_eq(r.out, "");
        ck_assert_msg(strncmp(r.err, "folio: ", 7) == 0, "%s", r.err);
        has(r.err, "usage: folio ");
        cli_transcript_add(&transcript, argv + 2, &r);
        cli_run_free(&r);
    }
    text = cli_subst(transcript, addr, "@ADDR@");
    ck_assert_int_eq(cli_golden("usage_errors", text), 0);
    free(text);
    free(transcript);
}
END_TEST

START_TEST(test_server_down)
{
    struct cli_run r;
    char addr[64], want[512];

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", refused_port());
    /* Which address, from which setting, and what to check. */
    run(&r, NULL, ARGS("-H", addr, "ping"), 3);
    snprintf(want, sizeof(want),
             "folio: cannot connect to %s (-H): Connection refused: is foliod "
             "running there?\n",
             addr);
    ck_assert_str_eq(r.err, want);
    ck_assert_str_eq(r.out, "");
    cli_run_free(&r);
    /* -p alone: the loopback's port; -h HOST -p PORT, as redis-cli. */
    run(&r, NULL, ARGS("-p", strchr(addr, ':') + 1, "ping"), 3);
    has(r.err, "cannot connect to 127.0.0.1:");
    has(r.err, " (-p): Connection refused");
    cli_run_free(&r);
    run(&r, NULL, ARGS("-h", "127.0.0.1", "-p", strchr(addr, ':') + 1, "ping"),
        3);
    has(r.err, "folio: cannot connect to 127.0.0.1:");
    cli_run_free(&r);
    /* FOLIO_ADDR is read the same way, and said. */
    snprintf(want, sizeof(want), "FOLIO_ADDR=%s", addr);
    run(&r, &(struct cli_opts){.env = ARGS(want)}, ARGS("count", "x"), 3);
    has(r.err, " (from FOLIO_ADDR): Connection refused");
    cli_run_free(&r);
    /* A Unix socket that is not there; the admin socket by FOLIO_ADMIN. */
    run(&r, NULL, ARGS("-U", "/nonexistent/folio.sock", "ping"), 3);
    ck_assert_str_eq(r.err, "folio: cannot connect to "
                            "/nonexistent/folio.sock (-U): No such file or "
                            "directory: is foliod running there?\n");
    cli_run_free(&r);
    /* FOLIO_ADMIN set: no advice to set it. */
    run(&r,
        &(struct cli_opts){.env = ARGS("FOLIO_ADMIN=/nonexistent/admin.sock")},
        ARGS("stats"), 3);
    ck_assert_str_eq(r.err, "folio: cannot connect to /nonexistent/admin.sock "
                            "(from FOLIO_ADMIN): No such file or directory: "
                            "is foliod running there?\n");
    cli_run_free(&r);
    /* The default admin socket: where it is, and how to give another. */
    run(&r, NULL, ARGS("comments", "delete", "1"), 3);
    snprintf(want, sizeof(want),
             "folio: cannot connect to %.300s (the default admin socket; set by "
             "-U, FOLIO_ADMIN): ",
             folio_default_paths()->admin_socket);
    has(r.err, want);
    has(r.err, ": is foliod running?\n");
    cli_run_free(&r);
    /* The default server, and the settings that change it. */
    run(&r, NULL, ARGS("--timeout", "1", "ping"), 3);
    if (strstr(r.err, "Connection refused") != NULL)
        ck_assert_str_eq(r.err, "folio: cannot connect to 127.0.0.1:7788 (the "
                                "default; set by -H, FOLIO_ADDR): Connection "
                                "refused: is foliod running?\n");
    cli_run_free(&r);
}
END_TEST

START_TEST(test_server_silent)
{
    struct cli_run r;
    char addr[64], want[128];
    int port, fd = listener(&port);

    /* Connected (the backlog takes it), never read, never answered. */
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    run(&r, NULL, ARGS("-H", addr, "--timeout", "1", "ping"), 3);
    snprintf(want, sizeof(want), "folio: no reply from %s within 1 s\n", addr);
    ck_assert_str_eq(r.err, want);
    ck_assert_msg(r.ms >= 900 && r.ms < (uint64_t)e2e_bound_ms(5000, 15000),
                  "took %llu ms",
                  (unsigned long long)r.ms);
    cli_run_free(&r);
    run(&r, NULL, ARGS("-H", addr, "--timeout", "0.3", "methods"), 3);
    has(r.err, "within 0.3 s");
    cli_run_free(&r);
    close(fd);
}
END_TEST

START_TEST(test_connect_timeout)
{
    struct sockaddr_in sa = {0};
    struct cli_run r;
    char addr[64], want[128];
    int port, fd = listener_backlog(&port, 0), c[4], i;

    /* A full accept queue: Linux drops further SYNs, connect() waits. */
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    for (i = 0; i < 4; i++) {
        ck_assert((c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) >=
                  0);
        connect(c[i], (struct sockaddr *)&sa, sizeof(sa));
    }
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    run(&r, NULL, ARGS("-H", addr, "--timeout", "1", "ping"), 3);
    snprintf(want, sizeof(want),
             "folio: cannot connect to %s (-H): timed out after 1 s\n", addr);
    ck_assert_str_eq(r.err, want);
    ck_assert_msg(r.ms >= 900 && r.ms < (uint64_t)e2e_bound_ms(5000, 15000),
                  "took %llu ms",
                  (unsigned long long)r.ms);
    cli_run_free(&r);
    for (i = 0; i < 4; i++)
        close(c[i]);
    close(fd);
}
END_TEST

START_TEST(test_server_hangs_up)
{
    struct cli_run r;
    char addr[64], want[128];
    int port, fd = listener(&port);
    pid_t pid = fake_server(fd, NULL, 0);

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    run(&r, NULL, ARGS("-H", addr, "ping"), 3);
    snprintf(want, sizeof(want),
             "folio: %s closed the connection without a reply\n", addr);
    ck_assert_str_eq(r.err, want);
    cli_run_free(&r);
    reap(pid);
    close(fd);
}
END_TEST

START_TEST(test_server_garbage)
{
    static const unsigned char not_msgpack[] = {0xc1};
    /* A well-formed response, but to another msgid. */
    static const unsigned char other_id[] = {0x94, 0x01, 0x63, 0xc0, 0xc0};
    struct cli_run r;
    char addr[64];
    int port, fd = listener(&port);
    pid_t pid;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    pid = fake_server(fd, not_msgpack, sizeof(not_msgpack));
    run(&r, NULL, ARGS("-H", addr, "ping"), 3);
    has(r.err, "not a msgpack-RPC response");
    cli_run_free(&r);
    reap(pid);
    pid = fake_server(fd, other_id, sizeof(other_id));
    run(&r, NULL, ARGS("-H", addr, "ping"), 3);
    has(r.err, "not a msgpack-RPC response");
    cli_run_free(&r);
    reap(pid);
    close(fd);
}
END_TEST

/* ---- against foliod ---- */

START_TEST(test_ping)
{
    struct cli_run r;
    char env[400], want[256], *end;
    double ms;

    start();
    run(&r, NULL, ARGS("-H", srv.addr, "ping"), 0);
    snprintf(want, sizeof(want), "pong from %s in ", srv.addr);
    ck_assert_msg(strncmp(r.out, want, strlen(want)) == 0, "%s", r.out);
    ms = strtod(r.out + strlen(want), &end);
    ck_assert_msg(ms >= 0 && ms < e2e_bound_ms(5000, 15000) &&
                      strcmp(end, " ms\n") == 0,
                  "%s",
                  r.out);
    ck_assert_str_eq(r.err, "");
    cli_run_free(&r);
    run(&r, NULL, ARGS("--json", "-H", srv.addr, "ping"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    /* Options after the command; the admin socket with -U. */
    run(&r, NULL, ARGS("ping", "-U", srv.admin, "--json"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    /* --socket, and --unix as folio-bench once spelled it. */
    run(&r, NULL, ARGS("--socket", srv.admin, "--json", "ping"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    run(&r, NULL, ARGS("--unix", srv.admin, "--json", "ping"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    /* FOLIO_ADDR when there is no -H. */
    snprintf(env, sizeof(env), "FOLIO_ADDR=%s", srv.addr);
    run(&r, &(struct cli_opts){.env = ARGS(env)}, ARGS("--json", "ping"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    /* Durations with their units, as folio-bench and foliod take them. */
    run(&r, NULL,
        ARGS("-H", srv.addr, "--json", "--timeout", "2500ms", "-r", "2", "-i",
             "10ms", "ping"),
        0);
    ck_assert_str_eq(r.out, "\"pong\"\n\"pong\"\n");
    cli_run_free(&r);
    stop();
}
END_TEST

START_TEST(test_methods)
{
    struct folio_client *c;
    struct folio_reply rep;
    struct folio_mp_cur cur;
    struct cli_run r;
    json_t *j, *v;
    json_error_t jerr;
    const char *name, *sig;
    uint32_t n, nlen, slen, i;
    char line[512], *server_lines, *p, *q;
    size_t len = 0, col;

    start();
    run(&r, NULL, ARGS("-H", srv.addr, "methods"), 0);
    ck_assert_str_eq(r.err, "");
    /*
     * The server.* lines are stable; other services come and go and move
     * the signatures' column, so check the column is the same on every
     * line, then compare with one space less.
     */
    server_lines = calloc(1, r.outlen + 1);
    col = 0;
    for (p = r.out; (q = strchr(p, '\n')) != NULL; p = q + 1) {
        size_t w = strcspn(p, " "), gap = strspn(p + w, " ");

        ck_assert_msg(gap >= 2, "%.*s", (int)(q - p), p);
        if (col == 0)
            col = w + gap;
        ck_assert_msg(w + gap == col, "not aligned: %.*s", (int)(q - p), p);
        if (strncmp(p, "server.", 7) == 0)
            len += (size_t)snprintf(server_lines + len, r.outlen + 1 - len,
                                    "%.*s  %.*s\n", (int)w, p,
                                    (int)(q - p - (long)col), p + col);
    }
    ck_assert_int_eq(cli_golden("methods_server", server_lines), 0);
    free(server_lines);

    /* Every method the server lists is one line, and --json is the map. */
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(folio_client_call0(c, "server.methods", &rep), 1);
    cur = rep.result;
    ck_assert_int_eq(folio_mp_read_map(&cur, &n), 0);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(folio_mp_read_str(&cur, &name, &nlen), 0);
        ck_assert_int_eq(folio_mp_read_str(&cur, &sig, &slen), 0);
        snprintf(line, sizeof(line), "%.*s ", (int)nlen, name);
        has(r.out, line);
    }
    ck_assert_int_eq((int)(strchr(r.out, '\0') - r.out) > 0, 1);
    for (i = 0, p = r.out; (p = strchr(p, '\n')) != NULL; p++)
        i++;
    ck_assert_uint_eq(i, n);
    cli_run_free(&r);
    run(&r, NULL, ARGS("-H", srv.addr, "methods", "--json"), 0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_uint_eq(json_object_size(j), n);
    ck_assert_ptr_nonnull(v = json_object_get(j, "server.ping"));
    ck_assert_str_eq(json_string_value(v), "-> \"pong\"");
    json_decref(j);
    cli_run_free(&r);
    folio_client_close(c);
    stop();
}
END_TEST

START_TEST(test_call)
{
    static const char *const cases[][6] = {
        {"call", "server.ping"},
        {"call", "server.ping", "[]"},
        {"--json", "call", "server.ping"},
        {"call", "server.ping", "[1]"},
        {"call", "server.ping", "1"},
        {"call", "no.such", "[1, \"x\", {\"a\": null}, [true, 2.5]]"},
        {"call", "server.stats"},
    };
    char *transcript = NULL, *text, env[400];
    const char *argv[10];
    struct cli_run r;
    json_error_t jerr;
    json_t *j;
    size_t i, k, n;

    start();
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = 0;
        argv[n++] = "-H";
        argv[n++] = srv.addr;
        for (k = 0; cases[i][k] != NULL; k++)
            argv[n++] = cases[i][k];
        argv[n] = NULL;
        ck_assert_int_eq(cli_run(&r, NULL, argv), 0);
        ck_assert(r.status == 0 || r.status == 1);
        cli_transcript_add(&transcript, argv + 2, &r);
        cli_run_free(&r);
    }
    text = cli_subst(transcript, srv.addr, "@ADDR@");
    free(transcript);
    transcript = text;
    text = cli_subst(transcript, folio_default_paths()->run_dir, "@RUNDIR@");
    ck_assert_int_eq(cli_golden("call", text), 0);
    free(text);
    free(transcript);

    /* JSON-PARAMS from standard input. */
    run(&r, &(struct cli_opts){.input = "[]\n"},
        ARGS("-H", srv.addr, "call", "server.ping", "-"), 0);
    ck_assert_str_eq(r.out, "\"pong\"\n");
    cli_run_free(&r);
    /* An admin method goes to FOLIO_ADMIN by itself. */
    snprintf(env, sizeof(env), "FOLIO_ADMIN=%s", srv.admin);
    run(&r, &(struct cli_opts){.env = ARGS(env)}, ARGS("call", "server.stats"),
        0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert(json_is_array(json_object_get(j, "workers")));
    ck_assert(json_is_integer(
        json_object_get(json_object_get(j, "totals"), "requests")));
    json_decref(j);
    cli_run_free(&r);
    stop();
}
END_TEST

/* The pids of the workers' table rows in `out`. */
static int
table_pids(const char *out, long *pids, int max)
{
    const char *p = strstr(out, "    PID STATE");
    int n = 0;
    long pid;

    if (p == NULL)
        return -1;
    while ((p = strchr(p, '\n')) != NULL && n < max) {
        p++;
        if (sscanf(p, "%ld ready ", &pid) != 1)
            break;
        pids[n++] = pid;
    }
    return n;
}

START_TEST(test_stats)
{
    struct cli_run r;
    char env[400], head[128], want[600];
    long pids[16];
    pid_t live[16];
    json_error_t jerr;
    json_t *j;
    const char *p;
    int n, i, k, frames;

    start();
    /* A call for the method table to show. */
    run(&r, NULL, ARGS("-H", srv.addr, "ping"), 0);
    cli_run_free(&r);
    snprintf(env, sizeof(env), "FOLIO_ADMIN=%s", srv.admin);
    run(&r, &(struct cli_opts){.env = ARGS(env)}, ARGS("stats"), 0);
    ck_assert_str_eq(r.err, "");
    snprintf(head, sizeof(head), "foliod %s, pid %d, up ", PACKAGE_VERSION,
             (int)srv.pid);
    ck_assert_msg(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
    has(r.out, "rates since start\n");
    has(r.out, "    PID STATE    UPTIME   REQUESTS     REQ/S  CPU% ALLOC/REQ"
               "       HEAP CONNS\n");
    has(r.out, "\n  TOTAL  ");
    has(r.out, "\nMETHOD                      CALLS  ERRORS  MEAN_US   P50_US"
               "   P99_US  P999_US\nserver.ping      ");
    /* One row per live worker. */
    n = table_pids(r.out, pids, 16);
    ck_assert_int_eq(n, e2e_workers(&srv, live, 16));
    for (i = 0; i < n; i++) {
        for (k = 0; k < n && live[k] != (pid_t)pids[i]; k++)
            ;
        ck_assert_msg(k < n, "pid %ld is not a worker", pids[i]);
    }
    ck_assert(strstr(r.out, "\033[") == NULL);
    cli_run_free(&r);

    run(&r, &(struct cli_opts){.env = ARGS(env)}, ARGS("--json", "stats"), 0);
    ck_assert_ptr_nonnull(j = json_loads(r.out, 0, &jerr));
    ck_assert_int_eq(json_integer_value(
                         json_object_get(json_object_get(j, "server"), "pid")),
                     srv.pid);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "workers")), n);
    json_decref(j);
    cli_run_free(&r);

    /* --watch: until interrupted; the second sample has interval rates. */
    run(&r,
        &(struct cli_opts){.env = ARGS(env), .until = "rates over the last"},
        ARGS("stats", "--watch", "0.2"), 0);
    for (frames = 0, p = r.out; (p = strstr(p, "foliod ")) != NULL; p++)
        frames++;
    ck_assert_int_ge(frames, 2);
    ck_assert(strstr(r.out, "\033[") == NULL); /* not a terminal */
    ck_assert_str_eq(r.err, "");
    cli_run_free(&r);
    run(&r, &(struct cli_opts){.env = ARGS(env), .until = "}\n{"},
        ARGS("stats", "--watch", "0.2", "--json"), 0);
    for (frames = 0, p = r.out; *p != '\0'; p = strchr(p, '\n') + 1) {
        ck_assert_ptr_nonnull(
            j = json_loadb(p, (size_t)(strchr(p, '\n') - p), 0, &jerr));
        ck_assert(json_is_object(json_object_get(j, "totals")));
        json_decref(j);
        frames++;
    }
    ck_assert_int_ge(frames, 2);
    cli_run_free(&r);

    /* Not on the admin socket: the server says no, folio says how. */
    run(&r, NULL, ARGS("-H", srv.addr, "stats"), 1);
    snprintf(want, sizeof(want),
             "folio: PERMISSION_DENIED: server.stats is allowed on the admin "
             "socket only\n"
             "folio: admin methods take foliod's admin socket (its "
             "--admin-socket, by default %.300s): give it with -U SOCKET or "
             "FOLIO_ADMIN=SOCKET\n",
             folio_default_paths()->admin_socket);
    ck_assert_str_eq(r.err, want);
    ck_assert_str_eq(r.out, "");
    cli_run_free(&r);
    stop();
}
END_TEST

static Suite *
cli_suite(void)
{
    Suite *s = suite_create("e2e_cli");
    TCase *tc = tcase_create("offline");

    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_server_down);
    tcase_add_test(tc, test_server_silent);
    tcase_add_test(tc, test_connect_timeout);
    tcase_add_test(tc, test_server_hangs_up);
    tcase_add_test(tc, test_server_garbage);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("server");
    tcase_add_test(tc, test_ping);
    tcase_add_test(tc, test_methods);
    tcase_add_test(tc, test_call);
    tcase_add_test(tc, test_stats);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(cli_suite());
}
