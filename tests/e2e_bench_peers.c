/*
 * e2e_bench_peers.c - folio-bench driving folio's peers with its own
 * engine (--proto), so that every comparison of BENCHMARKS.md uses one
 * client: a real redis-server and a real memcached started here, and
 * foliod itself in the raw mode.  Each run's every answer must be
 * counted right, and --server-pid must give the server's CPU.
 *
 * Two programs: e2e_bench_peers (E2E_PEERS) requires redis-server and
 * memcached (e2e_require: skipped without them, failed when CI is set);
 * e2e_bench_proto, the raw mode and the usage errors, requires nothing.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "src/addr.h"
#include "tests/check_run.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

#ifdef E2E_PEERS
struct peer {
    pid_t pid;
    int port;
    char addr[64];
    char pid_text[24];
};

static struct peer redis, memc;

/* Ask `req`, wait for a reply starting with `want`: the server serves. */
static int
answers(const char *addr, const char *req, const char *want, int timeout_ms)
{
    struct folio_addr a;
    char err[256], buf[256];
    uint64_t end = e2e_deadline(timeout_ms);
    ssize_t n;
    int fd;

    if (folio_addr_parse(addr, &a, err, sizeof(err)) != 0)
        return -1;
    do {
        if ((fd = folio_addr_connect(&a, 500)) != -1) {
            if (send(fd, req, strlen(req), MSG_NOSIGNAL) ==
                    (ssize_t)strlen(req) &&
                (n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
                buf[n] = '\0';
                close(fd);
                return strncmp(buf, want, strlen(want)) == 0 ? 0 : -1;
            }
            close(fd);
        }
    } while (e2e_wait_more(end));
    return -1;
}

static int
spawn(struct peer *p, const char *const argv[])
{
    p->pid = e2e_spawn(argv, NULL);
    snprintf(p->pid_text, sizeof(p->pid_text), "%ld", (long)p->pid);
    return p->pid > 0 ? 0 : -1;
}

static void
stop(struct peer *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
}

static void
stop_all(void)
{
    stop(&redis);
    stop(&memc);
}

/* Outside the tests: no Check assertion here. */
static void
die(const char *what, const char *addr)
{
    fprintf(stderr, "e2e_bench_peers: %s %s\n", what, addr);
    stop_all();
    exit(EXIT_FAILURE);
}

static void
start_redis(void)
{
    char port[16];
    const char *argv[] = {"redis-server", "--port", port,       "--bind",
                    "127.0.0.1",    "--save", "",         "--appendonly",
                    "no",           "--daemonize", "no", NULL};

    redis.port = e2e_free_port();
    snprintf(port, sizeof(port), "%d", redis.port);
    snprintf(redis.addr, sizeof(redis.addr), "127.0.0.1:%d", redis.port);
    if (spawn(&redis, argv) != 0 ||
        answers(redis.addr, "PING\r\n", "+PONG", 10000) != 0)
        die("redis-server did not start on", redis.addr);
}

static void
start_memcached(void)
{
    char port[16];
    const char *argv[] = {"memcached", "-l", "127.0.0.1", "-p", port, "-U", "0",
                    "-t", "2", "-u", "nobody", NULL};

    memc.port = e2e_free_port();
    snprintf(port, sizeof(port), "%d", memc.port);
    snprintf(memc.addr, sizeof(memc.addr), "127.0.0.1:%d", memc.port);
    if (spawn(&memc, argv) != 0 ||
        answers(memc.addr, "version\r\n", "VERSION ", 10000) != 0)
        die("memcached did not start on", memc.addr);
}

#endif

/* Every answer of the run counted right, and the server's CPU read. */
static void
assert_all_ok(const struct bproc *b, int want_cpu)
{
    const char *j = json_of(b);

    assert_counts_add_up(j);
    ck_assert_msg(jnum(j, "sent") > 0, "nothing sent: %s", j);
    ck_assert_msg(jnum(j, "ok") == jnum(j, "sent"), "not all ok: %s", j);
    if (want_cpu) {
        ck_assert_msg(jnum_in(j, "server", "cpu_us_per_req") > 0,
                      "no server CPU: %s", j);
        /* folio-bench's own, its ended threads' too */
        ck_assert_msg(jnum_in(j, "client", "cpu_us_per_req") > 0,
                      "no client CPU: %s", j);
    }
}

#ifdef E2E_PEERS
START_TEST(test_redis)
{
    struct bproc b;

    expect_status(&b, 0, "--proto", "resp", "-H", redis.addr, "-c", "4", "-n",
                  "4000", "--json", "--server-pid", redis.pid_text);
    assert_all_ok(&b, 1);
    /* A GET of a comments.list-sized value, pipelined. */
    expect_status(&b, 0, "--proto", "resp", "-w", "get", "--value-size",
                  "6292", "-H", redis.addr, "-c", "4", "-P", "8", "-n", "4000",
                  "--json");
    assert_all_ok(&b, 0);
    expect_status(&b, 0, "--proto", "resp", "-w", "set", "-H", redis.addr,
                  "-c", "2", "-n", "1000", "--json");
    assert_all_ok(&b, 0);
    /* The open loop too. */
    expect_status(&b, 0, "open", "--proto", "resp", "-R", "2000", "-d", "1",
                  "-H", redis.addr, "-c", "4", "--json");
    assert_all_ok(&b, 0);
}
END_TEST

START_TEST(test_memcached)
{
    struct bproc b;

    expect_status(&b, 0, "--proto", "memcache", "-H", memc.addr, "-c", "4",
                  "-n", "4000", "--json", "--server-pid", memc.pid_text);
    assert_all_ok(&b, 1);
    expect_status(&b, 0, "--proto", "memcache", "-w", "get", "--value-size",
                  "1000", "-H", memc.addr, "-c", "4", "-P", "16", "-n",
                  "8000", "--json");
    assert_all_ok(&b, 0);
    expect_status(&b, 0, "--proto", "memcache", "-w", "set", "-H", memc.addr,
                  "-c", "2", "-n", "1000", "--json");
    assert_all_ok(&b, 0);
    /* RESP spoken to memcached: its replies are not RESP. */
    expect_status(&b, 3, "--proto", "resp", "-H", memc.addr, "-c", "1", "-n",
                  "10", "--json");
    ck_assert_ptr_nonnull(strstr(b.err, "malformed reply"));
}
END_TEST

#else
/* foliod through the raw mode: a fixed msgpack ping, 9-byte replies. */
START_TEST(test_raw_foliod)
{
    struct e2e_server srv;
    struct bproc b;
    char pid[24];

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    snprintf(pid, sizeof(pid), "%ld", (long)srv.pid);
    expect_status(&b, 0, "--proto", "raw", "--raw-request",
                  "\\x94\\x00\\x01\\xabserver.ping\\x90", "--raw-reply-len",
                  "9", "-H", srv.addr, "-c", "4", "-P", "4", "-n", "4000",
                  "--json", "--server-pid", pid);
    assert_all_ok(&b, 1);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_usage)
{
    struct bproc b;

    expect_status(&b, 2, "--proto", "gopher");
    expect_status(&b, 2, "--proto", "resp", "--admin", "/nonexistent");
    expect_status(&b, 2, "--raw-request", "x");
    expect_status(&b, 2, "--proto", "raw", "--raw-request", "\\q",
                  "--raw-reply-len", "1");
    expect_status(&b, 2, "--proto", "raw", "--raw-request", "x");
    expect_status(&b, 2, "--proto", "memcache", "-w", "corpus");
    expect_status(&b, 2, "rounds", "--proto", "resp");
}
END_TEST

#endif

static Suite *
suite(void)
{
#ifdef E2E_PEERS
    Suite *s = suite_create("e2e_bench_peers");
    TCase *tc = tcase_create("peers");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_redis);
    tcase_add_test(tc, test_memcached);
#else
    Suite *s = suite_create("e2e_bench_proto");
    TCase *tc = tcase_create("proto");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_raw_foliod);
    tcase_add_test(tc, test_usage);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    int rc;

    signal(SIGPIPE, SIG_IGN);
#ifdef E2E_PEERS
    e2e_require("redis-server", "redis-server");
    e2e_require("memcached", "memcached");
    start_redis();
    start_memcached();
#endif
    rc = folio_check_run(suite());
#ifdef E2E_PEERS
    stop_all();
#endif
    return rc;
}
