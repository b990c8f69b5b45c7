/*
 * e2e_bench.c - folio-bench end to end, its engine: the built folio-bench
 * runs as a subprocess against the real foliod on server.ping (and, for
 * the failures foliod never makes, against a small fake server in this
 * process).  Every mode runs; the counts add up (sent = ok + errors);
 * thresholds and wrong answers set the exit status; the open loop reports
 * a stall of the server's workers (SIGSTOP for a second) that the closed
 * loop hides.  The services' workloads: e2e_bench_services.c.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

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

/* ------------------------------------------------------------------ */
/* A fake server for what foliod never does: errors on ping, wrong     */
/* answers, connections closed under load.                             */

enum fake_mode { FAKE_ERRORS, FAKE_WRONG, FAKE_CLOSE, FAKE_SILENT };

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
            if (fc->f->mode == FAKE_SILENT)
                continue; /* read, never answered */
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
    /* --socket as folio spells it; --unix, the old spelling, still works. */
    expect_status(b, 0, "--socket", path, "-n", "100", "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "ok"), 100);
    expect_status(b, 0, "--unix", path, "-n", "100", "--json", "-q");
    ck_assert_double_eq(jnum(json_of(b), "ok"), 100);
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
    /* -q: the summary alone, no line per round (nor on stderr). */
    expect_status(b, 0, "rounds", "-w", "ping", "-H", srv.addr, "-n", "10",
                  "--rounds", "50", "-q");
    ck_assert_msg(strstr(b->out, "Simulated") == NULL, "%s", b->out);
    ck_assert_msg(b->elen == 0, "stderr: %s", b->err);
    ck_assert_ptr_nonnull(strstr(b->out, "rounds: 50 rounds of 10"));
    ck_assert_ptr_nonnull(strstr(b->out, "sent 500: 500 ok"));
    expect_status(b, 0, "rounds", "-w", "ping", "-H", srv.addr, "--rounds", "3",
                  "--json", "-q");
    ck_assert_msg(b->elen == 0, "stderr: %s", b->err);
    ck_assert_double_eq(jnum(json_of(b), "rounds"), 3);
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
    ck_assert_double_eq(jcheck(j, "max-errors", "passed"), 0);
    ck_assert_double_eq(jcheck(j, "max-errors", "limit"), 0);
    ck_assert_double_eq(jcheck(j, "max-errors", "measured"), 200);
    /* The message names the codes. */
    ck_assert_msg(strstr(b->err, "200 unexpected errors (8 RESOURCE_EXHAUSTED "
                                 "200), more than --max-errors 0") != NULL,
                  "%s", b->err);
    /* Two thresholds missed: both reported, text and JSON. */
    expect_status(b, 1, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-p99", "1ns", "--json", "-q");
    j = json_of(b);
    ck_assert_double_eq(jcheck(j, "max-errors", "passed"), 0);
    ck_assert_double_eq(jcheck(j, "max-p99", "passed"), 0);
    ck_assert_double_eq(jcheck(j, "max-p99", "limit"), 0.001);
    ck_assert(jcheck(j, "max-p99", "measured") > 0);
    ck_assert_int_eq(count_lines_with(b->err, "folio-bench: "), 2);
    ck_assert_ptr_nonnull(strstr(b->err, "more than --max-errors 0"));
    ck_assert_ptr_nonnull(strstr(b->err, "is over --max-p99 1ns"));
    expect_status(b, 1, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-p99", "1ns", "-q");
    ck_assert_ptr_nonnull(
        strstr(b->out, "threshold --max-errors 0: FAILED, 200 unexpected "
                       "errors (8 RESOURCE_EXHAUSTED 200)\n"));
    ck_assert_ptr_nonnull(strstr(b->out, "threshold --max-p99 1ns: FAILED, "
                                         "p99 "));
    expect_status(b, 0, "-H", f.addr, "-c", "1", "-P", "4", "-n", "400",
                  "--max-errors", "200", "-q");
    ck_assert_ptr_nonnull(strstr(b->out, "8 RESOURCE_EXHAUSTED 200"));
    ck_assert_ptr_nonnull(
        strstr(b->out, "threshold --max-errors 200: passed, 200 unexpected"));
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
    const char *j;
    uint64_t t0;

    fake_start(&f, FAKE_WRONG, 0);
    expect_status(b, 4, "-H", f.addr, "-c", "2", "-n", "100", "-q");
    ck_assert_ptr_nonnull(
        strstr(b->err, "server.ping answered \"pung\", expected \"pong\""));
    /* Counted apart from ok; the first stops the run at once. */
    t0 = e2e_now_ms();
    expect_status(b, 4, "-H", f.addr, "-c", "2", "-d", "20", "--json", "-q");
    /* not the 20 s it asked for: the suite's bound, below that */
    ck_assert_msg(e2e_now_ms() - t0 < (uint64_t)e2e_bound_ms(10000, 15000),
                  "a wrong answer stops the run");
    j = json_of(b);
    assert_counts_add_up(j);
    ck_assert_double_eq(jnum(j, "ok"), 0);
    ck_assert(jnum(j, "wrong") >= 1);
    ck_assert_double_eq(jnum(j, "status"), 4);
    expect_status(b, 4, "open", "-H", f.addr, "-R", "1000", "-d", "20", "-q");
    ck_assert_ptr_nonnull(strstr(b->out, " 0 ok, "));
    ck_assert_ptr_nonnull(strstr(b->out, "WRONG answers "));
    ck_assert_ptr_nonnull(strstr(b->out, "the run stopped at the first"));
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

/* A server that reads and never answers: nothing to take percentiles of. */
START_TEST(test_no_replies)
{
    struct bproc *b = malloc(sizeof(*b));
    struct fake f;
    const char *j;

    fake_start(&f, FAKE_SILENT, 0);
    expect_status(b, 3, "-H", f.addr, "-c", "2", "-d", "0.5", "--timeout",
                  "0.3s", "-q");
    ck_assert_ptr_nonnull(strstr(b->out, "  latency: no replies\n"));
    ck_assert_ptr_null(strstr(b->out, "p50"));
    expect_status(b, 3, "-H", f.addr, "-c", "2", "-d", "0.5", "--timeout",
                  "0.3s", "--max-p99", "1s", "--json", "-q");
    j = json_of(b);
    ck_assert_double_eq(jnum(j, "requests"), 0);
    ck_assert_ptr_nonnull(strstr(j, "\"p50_us\":null"));
    ck_assert_ptr_nonnull(strstr(j, "\"max_us\":null"));
    /* A p99 limit cannot pass on no replies. */
    ck_assert_double_eq(jcheck(j, "max-p99", "passed"), 0);
    ck_assert(isnan(jcheck(j, "max-p99", "measured")));
    free(b);
}
END_TEST

/*
 * What can be checked before the run is, and fails at once with exit 2:
 * nothing listens at the address, so a check that came after connecting
 * would exit 3 instead.
 */
START_TEST(test_prerun_checks)
{
    struct bproc *b = malloc(sizeof(*b));
    char dir[64] = "/tmp/folio-bench-pre.XXXXXX", cat[128], addr[64];
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(addr, sizeof(addr), "127.0.0.1:1");
    expect_status(b, 2, "-H", addr, "-n", "10", "--hgrm",
                  "/nonexistent/lat.hgrm");
    ck_assert_ptr_nonnull(strstr(b->err, "--hgrm /nonexistent/lat.hgrm: "
                                         "No such file or directory"));
    expect_status(b, 2, "-H", addr, "-n", "10", "--admin",
                  "/nonexistent/admin.sock");
    ck_assert_ptr_nonnull(strstr(b->err, "--admin /nonexistent/admin.sock: "
                                         "cannot connect"));
    expect_status(b, 2, "-H", addr, "-n", "10", "--server-pid", "999999999");
    ck_assert_ptr_nonnull(
        strstr(b->err, "--server-pid 999999999: no such process"));
    /* A file that is not a catalog: the README. */
    snprintf(cat, sizeof(cat), "%s/README.md", FOLIO_SRCDIR);
    expect_status(b, 2, "-H", addr, "-w", "freight", "--catalog", cat);
    ck_assert_msg(strstr(b->err, "README.md:1: not a SKU catalog") != NULL,
                  "%s", b->err);
    /* A catalog with a bad row: its line and column. */
    snprintf(cat, sizeof(cat), "%s/catalog.csv", dir);
    f = fopen(cat, "w");
    ck_assert_ptr_nonnull(f);
    fputs(
        "\xef\xbb\xbfSKU;Weight_g;length_cm;width_cm;height_cm;price_cents\r\n"
        "BOOK-1;400;23;16;3;49,90\r\n\r\n\"MUG;7\";350;12;9;ten;2990\n",
        f);
    ck_assert_int_eq(fclose(f), 0);
    expect_status(b, 2, "-H", addr, "-w", "mixed", "--catalog", cat);
    ck_assert_msg(strstr(b->err, "catalog.csv:4:5: height_cm: 'ten' is not "
                                 "a number") != NULL,
                  "%s", b->err);
    f = fopen(cat, "w");
    ck_assert_ptr_nonnull(f);
    fputs("sku,weight_g,length_cm,width_cm,height_cm,price_cents\n", f);
    ck_assert_int_eq(fclose(f), 0);
    expect_status(b, 2, "-H", addr, "-w", "freight", "--catalog", cat);
    ck_assert_ptr_nonnull(strstr(b->err, "no SKUs after the header"));
    remove(cat);
    rmdir(dir);
    free(b);
}
END_TEST

/* A report that cannot be written fails the run (exit 2). */
START_TEST(test_report_write_error)
{
    struct bproc *b = malloc(sizeof(*b));
    static const char *argv[] = {"-H", NULL, "-n", "50", "-q", NULL, NULL};
    int st;

    start(NULL);
    argv[1] = srv.addr;
    for (int json = 0; json <= 1; json++) {
        argv[5] = json ? "--json" : NULL;
        st = bspawn_out(b, argv, "/dev/full");
        ck_assert_msg(st == 2, "exit %d: %s", st, b->err);
        ck_assert_msg(strstr(b->err, "folio-bench: writing the report: No "
                                     "space left on device") != NULL,
                      "%s", b->err);
    }
    free(b);
    stop_clean();
}
END_TEST

#define HELP_COL 30 /* where --help's descriptions start */

/*
 * What --help says of `opt` ("--connections"): the text of its entry in
 * the options from column HELP_COL on, over its lines, without the
 * newlines: its description, then its default in [].
 */
static const char *
help_line(const char *help, const char *opt, char *buf, size_t len)
{
    const char *p = strstr(help, "\noptions:\n"), *line, *nl;
    size_t n = strlen(opt), k = 0;

    ck_assert_ptr_nonnull(p);
    /* Its line: "  -c, --connections conns ..." or "      --warmup ...". */
    do {
        p = strstr(p + 1, opt);
        ck_assert_msg(p != NULL, "--help does not describe %s", opt);
        for (line = p; line[-1] != '\n'; line--)
            ;
    } while (!(p[n] == ' ' || p[n] == '\n') || p - line > 6);
    buf[0] = '\0';
    for (;;) {
        nl = strchr(line, '\n');
        if (nl == NULL)
            nl = line + strlen(line);
        if (nl - line > HELP_COL && k + 1 < len)
            k += (size_t)snprintf(buf + k, len - k, "%s%.*s", k > 0 ? " " : "",
                                  (int)(nl - line - HELP_COL), line + HELP_COL);
        /* The entry goes on while lines start in the description's column. */
        if (*nl == '\0' || strspn(nl + 1, " ") < HELP_COL)
            break;
        line = nl + 1;
    }
    return buf;
}

/*
 * --help describes each option of the man page's OPTIONS, as foliod and
 * folio do: a description after it, and its default where it has one.
 */
static void
help_describes_options(const char *help, const char *man)
{
    static const struct {
        const char *opt, *def;
    } defaults[] = {
        {"--host", "[127.0.0.1:7788]"},
        {"--connections", "[50"},
        {"--pipeline", "[1]"},
        {"--duration", "[5s unless -n"},
        {"--warmup", "[0]"},
        {"--rounds", "[0]"},
        {"--workload", "[ping"},
        {"--uncovered", "[7.5]"},
        {"--write-ratio", "[0.01]"},
        {"--pages", "[1000]"},
        {"--zipf", "[1]"},
        {"--mix", "[corpus:40,"},
        {"--max-errors", "[0]"},
        {"--timeout", "[10s]"},
        {"--seed", "[0]"},
        {"--metrics", "[$FOLIO_METRICS"},
        {"--proto", "[msgpack]"},
        {"--value-size", "[3]"},
        {"--key", "[folio-bench:key]"},
    };
    char line[512], buf[1024], opt[2 + 64];
    const char *p;
    int in_options = 0, described = 0;
    size_t i;
    FILE *f = fopen(man, "r");

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, ".Sh ", 4) == 0)
            in_options = strncmp(line, ".Sh OPTIONS", 11) == 0;
        if (!in_options || strncmp(line, ".It Fl", 6) != 0)
            continue;
        /* Each --NAME of the item: ".It Fl c Ar conns , Fl \-connections" */
        for (p = line; (p = strstr(p, "Fl \\-")) != NULL; p += 5) {
            if (sscanf(p, "Fl \\-%63[a-z0-9-]", opt + 2) != 1)
                continue;
            opt[0] = opt[1] = '-';
            help_line(help, opt, buf, sizeof(buf));
            /* What it does, before its default. */
            ck_assert_msg(strcspn(buf, "[") >= 12,
                          "--help: %s has no description: %s", opt, buf);
            described++;
        }
    }
    fclose(f);
    ck_assert_int_ge(described, 40);
    for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        help_line(help, defaults[i].opt, buf, sizeof(buf));
        ck_assert_msg(strstr(buf, defaults[i].def) != NULL,
                      "--help: %s lacks its default %s: %s", defaults[i].opt,
                      defaults[i].def, buf);
    }
}

START_TEST(test_usage)
{
    struct bproc *b = malloc(sizeof(*b));
    char man[512], line[512];
    FILE *f;
    int checked = 0;

    expect_status(b, 0, "--help");
    ck_assert_ptr_nonnull(strstr(b->out, "usage: folio-bench"));
    /* --help mirrors the man page's synopsis: every option is in both. */
    snprintf(man, sizeof(man), "%s/man/folio-bench.1", FOLIO_BUILDDIR);
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
    help_describes_options(b->out, man);
    expect_status(b, 2, "--bogus");
    expect_status(b, 2, "sideways");
    expect_status(b, 2, "-c", "0");
    expect_status(b, 2, "-P", "5000");
    expect_status(b, 2, "open"); /* needs -R */
    expect_status(b, 2, "ramp"); /* needs --stages */
    expect_status(b, 2, "--stages", "10s");
    expect_status(b, 2, "-w", "nothing");
    expect_status(b, 2, "--max-p99", "soon");
    /* A bare number: which unit? Not guessed (seconds elsewhere). */
    expect_status(b, 2, "--max-p99", "1");
    ck_assert_ptr_nonnull(strstr(b->err, "bad duration '1': give its unit, "
                                         "as in 5ms or 250us"));
    expect_status(b, 2, "-w", "corpus", "--queries", "/nonexistent");
    ck_assert_ptr_nonnull(strstr(b->err, "/nonexistent"));
    /* --path and --body are --proto http's, and -w http's. */
    expect_status(b, 2, "--path", "/status");
    expect_status(b, 2, "--proto", "http", "-w", "freight", "--path", "/x");
    ck_assert_ptr_nonnull(strstr(b->err, "-w http's"));
    /* Nobody listens: exit 3. */
    expect_status(b, 3, "-H", "127.0.0.1:1", "-n", "1");
    ck_assert_ptr_nonnull(strstr(b->err, "cannot connect to 127.0.0.1:1 (-H): "
                                         "Connection refused: is the server "
                                         "running there?"));
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
    /* A run that stops before it starts leaves an old file alone... */
    ck_assert_int_eq(e2e_write_file(hgrm, "an old distribution\n"), 0);
    expect_status(b, 2, "-H", srv.addr, "-n", "10", "--hgrm", hgrm,
                  "--admin", "/nonexistent/admin.sock");
    f = fopen(hgrm, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    ck_assert_str_eq(line, "an old distribution\n");
    fclose(f);
    /* ... a run replaces it (the first line checked below). */
    expect_status(b, 0, "-H", srv.addr, "-c", "2", "-n", "2000", "--hgrm", hgrm,
                  "--admin", srv.admin, "--server-pid", pid, "--json", "-q");
    j = json_of(b);
    /* Requests and allocations from server.stats, CPU from /proc. */
    ck_assert_msg(strstr(j, "\"server\":{\"source\":\"server.stats\","
                            "\"cpu_source\":\"proc\"") != NULL,
                  "%s", j);
    /* Its requests are ours (and the reading's own call, maybe). */
    ck_assert_msg(fabs(jnum_in(j, "server", "requests") - 2000) <= 2, "%s", j);
    /* /proc's schedstat is exact: 2000 requests took some of it */
    ck_assert_msg(jnum_in(j, "server", "cpu_s") > 0, "%s", j);
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
    /* Neither can be read: the run does not start (test_prerun_checks). */
    expect_status(b, 2, "-H", srv.addr, "-c", "2", "-n", "100", "--admin",
                  "/nonexistent.sock", "-q");
    ck_assert_ptr_nonnull(strstr(b->err, "--admin /nonexistent.sock: "));
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
 * open loop's p99 shows the second (its requests were due meanwhile), the
 * closed loop's max does.  That the closed loop's p99 hides it (only its
 * 4 requests in flight saw it) depends on how many it made: printed.
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
    e2e_pace_ms(1000); /* the stall itself, not a synchronization */
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
    fprintf(stderr, "stall of 1 s: open loop p99 %.0f us; closed loop p99 "
                    "%.0f us over %.0f requests\n",
            jnum(jo, "p99_us"), jnum(jc, "p99_us"), jnum(jc, "requests"));
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
    tcase_add_test(tc, test_no_replies);
    tcase_add_test(tc, test_prerun_checks);
    tcase_add_test(tc, test_report_write_error);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_hgrm_and_server_figures);
    tcase_add_test(tc, test_stall_open_vs_closed);
    suite_add_tcase(s, tc);
}

int
main(void)
{
    Suite *s = suite_create("bench");

    add_tests(s);
    return folio_check_run(s);
}
