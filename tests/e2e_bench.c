/*
 * e2e_bench.c - folio-bench end to end: the built folio-bench runs as a
 * subprocess against the real foliod (and, for the failures foliod
 * never makes, against a small fake server in this process).  Each mode
 * and workload runs; the counts add up (sent = ok + errors); thresholds
 * and wrong answers set the exit status; the open loop reports a stall
 * of the server's workers (SIGSTOP for a second) that the closed loop
 * hides.
 *
 * One source, several programs: E2E_BENCH_PART picks the tests.
 *   0  engine: modes, output, thresholds, the stall (server.ping only)
 *   1  corpus: the shakesapp rounds, a wrong count caught, --queries, --corpus
 *   2  freight: carts, uncovered CEPs expected NOT_FOUND
 *   3  comments: Zipf pages, posts that stay
 *   4  mixed: every service at once
 * A part whose service has not landed in main yet is built but kept out
 * of TESTS (tests/include.am).
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/client.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"

#ifndef E2E_BENCH_PART
#define E2E_BENCH_PART 0
#endif

#define OUT_MAX (256 * 1024)

/* Helpers not every part uses. */
#define HELPER static __attribute__((unused))

static struct e2e_server srv;

/* ------------------------------------------------------------------ */
/* folio-bench as a subprocess.                                        */

struct bproc {
    pid_t pid;
    int ofd, efd; /* its stdout and stderr, or -1 at EOF */
    char out[OUT_MAX];
    size_t olen;
    char err[OUT_MAX];
    size_t elen;
    int status; /* exit status, 128 + signal, or -1 */
};

static const char *
bench_path(void)
{
    const char *p = getenv("FOLIO_BENCH");

    return p != NULL && *p != '\0' ? p : FOLIO_BUILDDIR "/folio-bench";
}

/* Start folio-bench with `argv` (NULL-terminated, without argv[0]). */
static void
bspawn(struct bproc *b, const char *const *argv)
{
    const char *args[64];
    int o[2], e[2], n = 0;

    memset(b, 0, sizeof(*b));
    args[n++] = bench_path();
    while (*argv != NULL && n < 63)
        args[n++] = *argv++;
    args[n] = NULL;
    ck_assert_int_eq(pipe(o), 0);
    ck_assert_int_eq(pipe(e), 0);
    b->pid = fork();
    ck_assert_int_ne(b->pid, -1);
    if (b->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(o[1], STDOUT_FILENO);
        dup2(e[1], STDERR_FILENO);
        close(o[0]);
        close(o[1]);
        close(e[0]);
        close(e[1]);
        execv(args[0], (char *const *)args);
        fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    b->ofd = o[0];
    b->efd = e[0];
    b->status = -1;
}

static void
slurp(int *fd, char *buf, size_t *len)
{
    ssize_t n;

    n = read(*fd, buf + *len, OUT_MAX - 1 - *len);
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    *len += (size_t)n;
    buf[*len] = '\0';
}

/*
 * Read its output until stderr holds `needle` (NULL: until both pipes
 * close) or `timeout_ms` passes.  Returns 0 when found (or closed).
 */
HELPER int
bpump(struct bproc *b, const char *needle, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    struct pollfd p[2];
    int np, left;

    for (;;) {
        if (needle != NULL && strstr(b->err, needle) != NULL)
            return 0;
        if (b->ofd == -1 && b->efd == -1)
            return needle == NULL ? 0 : -1;
        left = (int)(deadline - e2e_now_ms());
        if ((int64_t)(deadline - e2e_now_ms()) <= 0)
            return -1;
        np = 0;
        if (b->ofd != -1)
            p[np++] = (struct pollfd){b->ofd, POLLIN, 0};
        if (b->efd != -1)
            p[np++] = (struct pollfd){b->efd, POLLIN, 0};
        if (poll(p, (nfds_t)np, left) <= 0)
            continue;
        for (int i = 0; i < np; i++) {
            if (p[i].revents == 0)
                continue;
            if (p[i].fd == b->ofd)
                slurp(&b->ofd, b->out, &b->olen);
            else
                slurp(&b->efd, b->err, &b->elen);
        }
    }
}

/* Wait for the end; returns the exit status. */
static int
bfinish(struct bproc *b, int timeout_ms)
{
    int st;

    if (bpump(b, NULL, timeout_ms) != 0) {
        fprintf(stderr, "folio-bench did not finish in %d ms: killed\n",
                timeout_ms);
        kill(b->pid, SIGKILL);
    }
    if (b->ofd != -1)
        close(b->ofd);
    if (b->efd != -1)
        close(b->efd);
    ck_assert_int_eq(waitpid(b->pid, &st, 0), b->pid);
    b->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return b->status;
}

/* Run folio-bench to the end: its exit status. */
static int
brun(struct bproc *b, ...)
{
    const char *argv[64];
    va_list ap;
    int n = 0;

    va_start(ap, b);
    while (n < 63 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    bspawn(b, argv);
    return bfinish(b, 30000);
}

/* Run folio-bench with the arguments; its exit status must be `want`. */
#define expect_status(b, want, ...)                                            \
    do {                                                                       \
        int st_ = brun((b), __VA_ARGS__, NULL);                                \
        ck_assert_msg(                                                         \
            st_ == (want),                                                     \
            "folio-bench exited %d, not %d; stdout:\n%s\nstderr:\n%s", st_,    \
            (want), (b)->out, (b)->err);                                       \
    } while (0)

/* A number from the JSON summary: the first "key": in it, NAN if none. */
HELPER double
jnum(const char *json, const char *key)
{
    char pat[96];
    const char *p;

    snprintf(pat, sizeof(pat), "\"%s\":", key);
    if ((p = strstr(json, pat)) == NULL)
        return NAN;
    return strtod(p + strlen(pat), NULL);
}

/* A number inside the object "obj":{...} (not nested further). */
HELPER double
jnum_in(const char *json, const char *obj, const char *key)
{
    char pat[96], sub[4096];
    const char *p, *end;
    size_t n;

    snprintf(pat, sizeof(pat), "\"%s\":{", obj);
    if ((p = strstr(json, pat)) == NULL)
        return NAN;
    p += strlen(pat);
    if ((end = strchr(p, '}')) == NULL)
        return NAN;
    n = (size_t)(end - p) < sizeof(sub) - 1 ? (size_t)(end - p)
                                            : sizeof(sub) - 1;
    memcpy(sub, p, n);
    sub[n] = '\0';
    return jnum(sub, key);
}

/* The JSON summary is the last line of stdout. */
HELPER const char *
json_of(const struct bproc *b)
{
    const char *p = strrchr(b->out, '{');

    while (p != NULL && p > b->out && p[-1] != '\n')
        p--;
    ck_assert_msg(p != NULL && strstr(p, "\"mode\"") != NULL,
                  "no JSON summary in: %s", b->out);
    return p;
}

/* sent = ok + errors, errors = error replies + lost, requests = answers. */
HELPER void
assert_counts_add_up(const char *j)
{
    double sent = jnum(j, "sent"), ok = jnum(j, "ok"), err = jnum(j, "errors"),
           rep = jnum(j, "error_replies"), lost = jnum(j, "lost"),
           req = jnum(j, "requests");

    ck_assert_msg(!isnan(sent) && !isnan(ok) && !isnan(err), "%s", j);
    ck_assert_msg(sent == ok + err, "sent %.0f != ok %.0f + errors %.0f", sent,
                  ok, err);
    ck_assert_msg(err == rep + lost, "errors %.0f != replies %.0f + lost %.0f",
                  err, rep, lost);
    ck_assert_msg(req == ok + rep, "requests %.0f != ok + error replies", req);
}

HELPER int
count_lines_with(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

HELPER void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

HELPER void
stop_clean(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

#if E2E_BENCH_PART == 1 || E2E_BENCH_PART == 2 || E2E_BENCH_PART == 4
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

#if E2E_BENCH_PART == 0
/* ------------------------------------------------------------------ */
/* A fake server for what foliod never does: errors on ping, wrong     */
/* answers, connections closed under load.                             */

enum fake_mode { FAKE_ERRORS, FAKE_WRONG, FAKE_CLOSE };

struct fake {
    int lfd;
    enum fake_mode mode;
    int close_after;
    char addr[64];
    pthread_t th;
};

struct fake_conn {
    struct fake *f;
    int fd;
};

static void *
fake_serve(void *arg)
{
    struct fake_conn *fc = arg;
    struct folio_buf in;
    struct folio_mp_scan scan;
    struct folio_rpc_msg m;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    const char *why;
    ssize_t n;
    int answered = 0, r;

    folio_buf_init(&in, 65536, 0);
    folio_mp_scan_init(&scan, 1 << 20, 32);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    for (;;) {
        folio_buf_reserve(&in, 4096);
        n = read(fc->fd, in.b_data + in.b_len, folio_buf_space(&in));
        if (n <= 0)
            break;
        in.b_len += (size_t)n;
        msgpack_sbuffer_clear(&sb);
        while (folio_buf_pending(&in) > 0) {
            r = folio_mp_scan(&scan, in.b_data + in.b_off,
                              folio_buf_pending(&in));
            if (r != FOLIO_MP_DONE)
                break;
            if (folio_rpc_parse(in.b_data + in.b_off, (size_t)scan.pos, &m,
                                &why) != 0)
                goto out;
            folio_buf_consume(&in, (size_t)scan.pos);
            folio_mp_scan_reset(&scan);
            if (fc->f->mode == FAKE_CLOSE && answered == fc->f->close_after) {
                /* FIN after the answers (a close with unread input would
                 * reset the connection), then wait for the client. */
                if (sb.size > 0)
                    send(fc->fd, sb.data, sb.size, MSG_NOSIGNAL);
                shutdown(fc->fd, SHUT_WR);
                while (read(fc->fd, in.b_data, in.b_cap) > 0)
                    ;
                goto out;
            }
            if (fc->f->mode == FAKE_ERRORS && m.msgid % 2 == 1) {
                folio_rpc_pack_error(&pk, m.msgid, 8, "busy", 4);
            } else {
                folio_rpc_pack_result_head(&pk, m.msgid);
                folio_pack_cstr(&pk,
                                fc->f->mode == FAKE_WRONG ? "pung" : "pong");
            }
            answered++;
        }
        if (sb.size > 0 &&
            send(fc->fd, sb.data, sb.size, MSG_NOSIGNAL) != (ssize_t)sb.size)
            break;
    }
out:
    msgpack_sbuffer_destroy(&sb);
    folio_buf_free(&in);
    close(fc->fd);
    free(fc);
    return NULL;
}

static void *
fake_accept(void *arg)
{
    struct fake *f = arg;
    struct fake_conn *fc;
    pthread_t th;
    int fd;

    while ((fd = accept(f->lfd, NULL, NULL)) != -1) {
        fc = malloc(sizeof(*fc));
        fc->f = f;
        fc->fd = fd;
        pthread_create(&th, NULL, fake_serve, fc);
        pthread_detach(th);
    }
    return NULL;
}

/* Listen on a free loopback port; runs until the test process exits. */
static void
fake_start(struct fake *f, enum fake_mode mode, int close_after)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    memset(f, 0, sizeof(*f));
    f->mode = mode;
    f->close_after = close_after;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(f->lfd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(f->lfd, 64), 0);
    ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    ck_assert_int_eq(pthread_create(&f->th, NULL, fake_accept, f), 0);
}

/* ------------------------------------------------------------------ */
/* Engine: every mode on server.ping.                                  */

START_TEST(test_closed_n)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;

    start(NULL);
    expect_status(b, 0, "-H", srv.addr, "-c", "4", "-P", "4", "-n", "3000",
                  "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "sent"), 3000);
    ck_assert_double_eq(jnum(j, "ok"), 3000);
    ck_assert_double_eq(jnum(j, "wrong"), 0);
    ck_assert_double_eq(jnum_in(j, "server.ping", "sent"), 3000);
    ck_assert(jnum(j, "p50_us") > 0 && jnum(j, "p99_us") >= jnum(j, "p50_us"));
    ck_assert(jnum(j, "max_us") >= jnum(j, "p99_us"));
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_closed_duration_warmup_text)
{
    struct bproc *b = malloc(sizeof(*b));
    unsigned long long sent, ok, err;
    const char *p;

    start(NULL);
    /* The human summary; progress lines on stderr each second. */
    expect_status(b, 0, "closed", "-H", srv.addr, "-c", "3", "-t", "2", "-d",
                  "1.1", "--warmup", "0.2");
    ck_assert_msg(strstr(b->out, "folio-bench closed loop, 3 connections, 2 "
                                 "threads") != NULL,
                  "%s", b->out);
    p = strstr(b->out, "  sent ");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(
        sscanf(p, "  sent %llu: %llu ok, %llu errors", &sent, &ok, &err), 3);
    ck_assert(sent > 0);
    ck_assert_uint_eq(sent, ok + err);
    ck_assert_uint_eq(err, 0);
    ck_assert_ptr_nonnull(strstr(b->out, "latency p50 "));
    ck_assert_ptr_nonnull(strstr(b->err, "req/s, 0 errors, p99 "));
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_unix_socket)
{
    struct bproc *b = malloc(sizeof(*b));
    char path[400];

    start("listen = unix:${DIR}/bench.sock\n");
    snprintf(path, sizeof(path), "%s/bench.sock", srv.dir);
    expect_status(b, 0, "-U", path, "-c", "2", "-n", "500", "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "ok"), 500);
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_open_loop_rate)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;
    double sent;

    start(NULL);
    expect_status(b, 0, "-H", srv.addr, "-R", "2000", "-c", "4", "-d", "0.6",
                  "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_ptr_nonnull(strstr(j, "\"mode\":\"open\""));
    ck_assert_double_eq(jnum(j, "rate"), 2000);
    /* On schedule: 1200 due in 0.6 s, give or take a slot per thread. */
    sent = jnum(j, "sent") + jnum(j, "behind");
    ck_assert_msg(sent >= 1195 && sent <= 1205, "sent+behind %.0f", sent);
    /* -n bounds the open loop too. */
    expect_status(b, 0, "open", "-H", srv.addr, "-R", "5000", "-n", "700",
                  "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "sent"), 700);
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_ramp)
{
    struct bproc *b = malloc(sizeof(*b));
    const char *j;
    uint64_t t0;

    start(NULL);
    t0 = e2e_now_ms();
    expect_status(b, 0, "-H", srv.addr, "--stages", "300ms:6,500ms:12,300ms:0",
                  "--json");
    ck_assert_msg(e2e_now_ms() - t0 >= 1100, "the stages last 1.1 s");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_ptr_nonnull(strstr(j, "\"mode\":\"ramp\""));
    ck_assert_double_eq(jnum(j, "connections"), 12);
    ck_assert(jnum(j, "sent") > 0);
    ck_assert_double_eq(jnum(j, "errors"), 0);
    /* The progress line shows the users running. */
    ck_assert_msg(strstr(b->err, " users") != NULL, "%s", b->err);
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_rounds_ping)
{
    struct bproc *b = malloc(sizeof(*b));

    start(NULL);
    expect_status(b, 0, "rounds", "-w", "ping", "-H", srv.addr, "-n", "10",
                  "--rounds", "3");
    ck_assert_int_eq(count_lines_with(b->out, "Simulated 10 requests in "), 3);
    ck_assert_int_eq(count_lines_with(b->out, " reqs / sec\n"), 3);
    ck_assert_ptr_nonnull(strstr(b->out, ", rate of "));
    ck_assert_ptr_nonnull(strstr(b->out, "rounds: 3 rounds of 10"));
    /* With --json the rounds go to stderr and the summary stays JSON. */
    expect_status(b, 0, "rounds", "-w", "ping", "-H", srv.addr, "--rounds", "2",
                  "--json");
    ck_assert_int_eq(count_lines_with(b->err, "Simulated 20 requests in "), 2);
    ck_assert_double_eq(jnum(json_of(b), "rounds"), 2);
    ck_assert_double_eq(jnum(json_of(b), "sent"), 40);
    free(b);
    stop_clean();
}
END_TEST

START_TEST(test_thresholds)
{
    struct bproc *b = malloc(sizeof(*b));
    struct fake f;
    const char *j;

    start(NULL);
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "300", "--max-p99",
                  "10s", "-q");
    expect_status(b, 1, "-H", srv.addr, "-c", "2", "-n", "300", "--max-p99",
                  "1ns", "-q");
    ck_assert_ptr_nonnull(strstr(b->err, "is over --max-p99"));
    stop_clean();

    /* Every other answer is an error 8. */
    fake_start(&f, FAKE_ERRORS, 0);
    /* One connection: msgids 1..400, every odd one an error. */
    expect_status(b, 1, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "sent"), 400);
    ck_assert_double_eq(jnum(j, "errors"), 200);
    ck_assert_double_eq(jnum_in(j, "errors_by_code", "8"), 200);
    ck_assert_double_eq(jnum(j, "unexpected_errors"), 200);
    ck_assert_double_eq(jnum(j, "status"), 1);
    expect_status(b, 0, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-errors", "200", "-q");
    ck_assert_ptr_nonnull(strstr(b->out, "8 RESOURCE_EXHAUSTED 200"));
    expect_status(b, 1, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-errors", "199", "-q");
    expect_status(b, 0, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-errors", "50%", "-q");
    expect_status(b, 1, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-errors", "49%", "-q");
    /* Rounds stop after the round whose errors pass --max-errors. */
    expect_status(b, 1, "rounds", "-w", "ping", "-H", f.addr, "--rounds", "50");
    ck_assert_int_eq(count_lines_with(b->out, "Simulated "), 1);
    expect_status(b, 0, "rounds", "-w", "ping", "-H", f.addr, "-c", "1",
                  "--rounds", "5", "--max-errors", "50%");
    ck_assert_int_eq(count_lines_with(b->out, "Simulated "), 5);
    free(b);
}
END_TEST

START_TEST(test_wrong_answer)
{
    struct bproc *b = malloc(sizeof(*b));
    struct fake f;

    fake_start(&f, FAKE_WRONG, 0);
    expect_status(b, 4, "-H", f.addr, "-c", "2", "-n", "100", "-q");
    ck_assert_ptr_nonnull(
        strstr(b->err, "server.ping answered \"pung\", expected \"pong\""));
    /* Rounds stop at the first wrong answer. */
    expect_status(b, 4, "rounds", "-w", "ping", "-H", f.addr, "--rounds", "50");
    ck_assert_int_eq(count_lines_with(b->out, "Simulated "), 1);
    free(b);
}
END_TEST

START_TEST(test_lost_when_closed)
{
    struct bproc *b = malloc(sizeof(*b));
    struct fake f;
    const char *j;

    /* The server closes each connection after 100 answers. */
    fake_start(&f, FAKE_CLOSE, 100);
    expect_status(b, 3, "-H", f.addr, "-c", "2", "-t", "1", "-P", "4", "-d",
                  "5", "--json", "-q");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "ok"), 200);
    ck_assert_double_eq(jnum(j, "lost"), 8);
    ck_assert_ptr_nonnull(strstr(b->err, "closed the connection"));
    free(b);
}
END_TEST

START_TEST(test_usage)
{
    struct bproc *b = malloc(sizeof(*b));
    char man[512], line[512];
    FILE *f;
    int checked = 0;

    expect_status(b, 0, "--help");
    ck_assert_ptr_nonnull(strstr(b->out, "usage: folio-bench"));
    /* --help mirrors the man page's synopsis: every option is in both. */
    snprintf(man, sizeof(man), "%s/man/folio-bench.1", FOLIO_SRCDIR);
    f = fopen(man, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char opt[64];

        if (strncmp(line, ".Sh DESCRIPTION", 15) == 0)
            break;
        if (sscanf(line, ".Op Fl \\-%63[a-z0-9-]", opt) == 1) {
            char want[80];

            snprintf(want, sizeof(want), "[--%s", opt);
            ck_assert_msg(strstr(b->out, want) != NULL, "--help lacks %s",
                          want);
            checked++;
        }
    }
    fclose(f);
    ck_assert_int_ge(checked, 15);
    expect_status(b, 2, "--bogus");
    expect_status(b, 2, "sideways");
    expect_status(b, 2, "-c", "0");
    expect_status(b, 2, "-P", "5000");
    expect_status(b, 2, "open"); /* needs -R */
    expect_status(b, 2, "ramp"); /* needs --stages */
    expect_status(b, 2, "--stages", "10s");
    expect_status(b, 2, "-w", "nothing");
    expect_status(b, 2, "--max-p99", "soon");
    expect_status(b, 2, "-w", "corpus", "--queries", "/nonexistent");
    ck_assert_ptr_nonnull(strstr(b->err, "/nonexistent"));
    /* Nobody listens: exit 3. */
    expect_status(b, 3, "-H", "127.0.0.1:1", "-n", "1");
    free(b);
}
END_TEST

START_TEST(test_hgrm_and_server_figures)
{
    struct bproc *b = malloc(sizeof(*b));
    char hgrm[400], pid[32], line[256], last[256] = "";
    unsigned long long total = 0;
    const char *j;
    FILE *f;
    int lines = 0, footer = 0;

    start(NULL);
    snprintf(hgrm, sizeof(hgrm), "%s/lat.hgrm", srv.dir);
    snprintf(pid, sizeof(pid), "%d", (int)srv.pid);
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "2000", "--hgrm", hgrm,
                  "--admin", srv.admin, "--server-pid", pid, "--json", "-q");
    j = json_of(b);
    /* Requests and allocations from server.stats, CPU from /proc. */
    ck_assert_msg(strstr(j, "\"server\":{\"source\":\"server.stats\","
                            "\"cpu_source\":\"proc\"") != NULL,
                  "%s", j);
    /* Its requests are ours (and the reading's own call, maybe). */
    ck_assert_msg(fabs(jnum_in(j, "server", "requests") - 2000) <= 2, "%s", j);
    ck_assert(jnum_in(j, "server", "cpu_s") >= 0);
    /* server.ping allocates nothing (a connection's set-up may, once). */
    ck_assert_msg(jnum_in(j, "server", "allocs_per_req") <= 0.01, "%s", j);
    /* server.stats alone: its CPU; /proc alone: no allocations. */
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "1000", "--admin",
                  srv.admin, "--json", "-q");
    j = json_of(b);
    ck_assert_ptr_nonnull(strstr(j, "\"cpu_source\":\"server.stats\""));
    ck_assert(!isnan(jnum_in(j, "server", "allocs_per_req")));
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "1000", "--server-pid",
                  pid, "--json", "-q");
    j = json_of(b);
    ck_assert_ptr_nonnull(strstr(j, "\"server\":{\"source\":\"proc\""));
    ck_assert_double_eq(jnum_in(j, "server", "requests"), 1000);
    ck_assert(isnan(jnum_in(j, "server", "allocs")));
    /* Neither can be read: the run goes on, the reason is printed. */
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "100", "--admin",
                  "/nonexistent.sock", "-q");
    ck_assert_ptr_nonnull(strstr(b->out, "server: cannot connect"));
    /* The distribution of the first run. */
    f = fopen(hgrm, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    ck_assert_msg(strstr(line, "Value") && strstr(line, "Percentile") &&
                      strstr(line, "TotalCount") &&
                      strstr(line, "1/(1-Percentile)"),
                  "%s", line);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "#[", 2) == 0) {
            footer++;
            if (strstr(line, "Total count") != NULL)
                ck_assert_int_eq(sscanf(strstr(line, "Total count"),
                                        "Total count = %llu", &total),
                                 1);
        } else if (line[0] != '\n') {
            lines++;
            snprintf(last, sizeof(last), "%s", line);
        }
    }
    fclose(f);
    ck_assert_int_eq(footer, 3);
    ck_assert_int_ge(lines, 10);
    ck_assert_msg(strstr(last, "1.000000") && strstr(last, "inf"), "%s", last);
    ck_assert_uint_eq(total, 2000);
    free(b);
    stop_clean();
}
END_TEST

/*
 * The workers stop for a second in the middle of two runs at once: the
 * open loop's p99 shows the second, the closed loop's hides it (only its
 * few requests in flight saw it).
 */
START_TEST(test_stall_open_vs_closed)
{
    struct bproc *o = malloc(sizeof(*o)), *c = malloc(sizeof(*c));
    static const char *oargs[] = {"open", "-R",     "1000", "-c", "4", "-d",
                                  "2.6",  "--json", "-H",   NULL, NULL};
    static const char *cargs[] = {"closed", "-c", "4",  "-d", "2.6",
                                  "--json", "-q", "-H", NULL, NULL};
    pid_t w[16];
    int nw, i;
    const char *jo, *jc;

    start(NULL);
    oargs[9] = srv.addr;
    cargs[8] = srv.addr;
    nw = e2e_workers(&srv, w, 16);
    ck_assert_int_ge(nw, 1);
    bspawn(o, oargs);
    bspawn(c, cargs);
    /* The first progress line: a second into the run, load flowing. */
    ck_assert_int_eq(bpump(o, "req/s", 5000), 0);
    for (i = 0; i < nw; i++)
        kill(w[i], SIGSTOP);
    poll(NULL, 0, 1000); /* the stall itself, not a synchronization */
    for (i = 0; i < nw; i++)
        kill(w[i], SIGCONT);
    ck_assert_msg(bfinish(o, 15000) == 0, "open: %s", o->err);
    ck_assert_msg(bfinish(c, 15000) == 0, "closed: %s", c->err);
    jo = json_of(o);
    jc = json_of(c);
    assert_counts_add_up(jo);
    assert_counts_add_up(jc);
    ck_assert_msg(jnum(jo, "max_us") >= 950000, "open max %.0f us",
                  jnum(jo, "max_us"));
    ck_assert_msg(jnum(jo, "p99_us") >= 800000, "open p99 %.0f us",
                  jnum(jo, "p99_us"));
    ck_assert_msg(jnum(jc, "max_us") >= 900000, "closed max %.0f us",
                  jnum(jc, "max_us"));
    ck_assert_msg(jnum(jc, "p99_us") < 500000, "closed p99 %.0f us",
                  jnum(jc, "p99_us"));
    free(o);
    free(c);
    stop_clean();
}
END_TEST

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("modes");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_closed_n);
    tcase_add_test(tc, test_closed_duration_warmup_text);
    tcase_add_test(tc, test_unix_socket);
    tcase_add_test(tc, test_open_loop_rate);
    tcase_add_test(tc, test_ramp);
    tcase_add_test(tc, test_rounds_ping);
    suite_add_tcase(s, tc);
    tc = tcase_create("outcome");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_thresholds);
    tcase_add_test(tc, test_wrong_answer);
    tcase_add_test(tc, test_lost_when_closed);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_hgrm_and_server_figures);
    tcase_add_test(tc, test_stall_open_vs_closed);
    suite_add_tcase(s, tc);
}
#endif /* part 0 */

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

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("freight");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_freight);
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

static void
add_tests(Suite *s)
{
    TCase *tc = tcase_create("mixed");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mixed);
    suite_add_tcase(s, tc);
}
#endif /* part 4 */

int
main(void)
{
    static const char *const names[] = {"bench", "bench-corpus",
                                        "bench-freight", "bench-comments",
                                        "bench-mixed"};
    Suite *s = suite_create(names[E2E_BENCH_PART]);
    SRunner *sr;
    int failed;

    add_tests(s);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
