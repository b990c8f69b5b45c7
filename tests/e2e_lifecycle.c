/*
 * e2e_lifecycle.c - the process layer as an operator tries it:
 *
 *   watchdog        a SIGSTOPped worker (worker_timeout 2s) is logged with
 *                   its method, dumped and replaced, not before its
 *                   timeout; counted (how soon after: bench/lifecycle.sh)
 *   retiring stuck  SIGSTOP then HUP: the old worker is killed by the
 *                   master at shutdown_timeout
 *   HUPs queued     two HUPs 2 ms apart with a changed setting: the last
 *                   one wins
 *   kill -9 master  under load, then an immediate start: it binds
 *   health          /healthz and /readyz through reloads and a stop
 *   titles          ps shows master, workers and a retiring worker apart
 *                   (ps is required: procps)
 *   admin in drain  server.stats answers while a stop drains
 * (The slow-request log is in e2e_faults: it takes a slow disk.)
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

static void
start(const char *conf)
{
    struct rlimit no_core = {0, 0};

    /* The watchdog's SIGABRT would dump a core: not in the tests. */
    setrlimit(RLIMIT_CORE, &no_core);
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

/* The first NUL-terminated string of /proc/PID/cmdline: its title. */
static void
title_of(pid_t pid, char *buf, size_t len)
{
    char path[64];
    ssize_t n;
    int fd;

    buf[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    if ((fd = open(path, O_RDONLY)) == -1)
        return;
    n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
}

static double
stat_num(const char *a, const char *b)
{
    double v = e2e_server_stat(&srv, a, b, NULL);

    ck_assert_msg(!isnan(v), "server.stats: no %s.%s", a, b);
    return v;
}

/* server.methods: 19 bytes asking for 568 (its reply, measured). */
static const unsigned char greedy_req[] = {
    0x94, 0x00, 0x01, 0xae, 's', 'e', 'r', 'v', 'e', 'r',
    '.',  'm',  'e',  't',  'h', 'o', 'd', 's', 0x90};
#define GREEDY_REPLY 500 /* its reply's size, at least */

/*
 * Write requests on non-blocking fd until the socket takes no more or
 * `max` were sent, *off bytes of the next one being sent already (a
 * short write leaves one half sent: the next call goes on from there).
 * Returns how many were sent whole.
 */
static int
greedy_write(int fd, int max, size_t *off)
{
    ssize_t n;
    int i = 0;

    while (i < max) {
        n = write(fd, greedy_req + *off, sizeof(greedy_req) - *off);
        if (n <= 0)
            break;
        if ((*off += (size_t)n) == sizeof(greedy_req)) {
            *off = 0;
            i++;
        }
    }
    return i;
}

/* The most a socket's send buffer grows to (tcp_wmem's third figure). */
static double
wmem_max(void)
{
    long lo, def, max = 4194304;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld %ld", &lo, &def, &max) != 3)
            max = 4194304;
        fclose(f);
    }
    return (double)max;
}

/*
 * A greedy client that the server has accepted and whose replies it holds
 * (max_output_bytes): output_waits moved.  Then more requests, now that
 * the worker reads no more, until what it owes outweighs all that the
 * kernel can take off its hands (the server's send buffer, at its
 * largest, and the client's small window): else it could write every
 * reply and have nothing left to drain.
 */
static int
greedy_held(int nrequests)
{
    double w0 = stat_num("totals", "output_waits"), wmem;
    uint64_t deadline;
    size_t off = 0;
    int fd, sent;

    /* A small window: the replies stay in the server's output. */
    fd = e2e_tcp_connect(srv.addr, 4096);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    sent = greedy_write(fd, nrequests, &off);
    ck_assert_int_gt(sent, 1000);
    deadline = e2e_deadline(e2e_bound_ms(5000, 15000));
    while (stat_num("totals", "output_waits") <= w0)
        ck_assert_msg(e2e_wait_more(deadline),
                      "the greedy client's replies are not held");
    sent += greedy_write(fd, nrequests - sent, &off);
    wmem = wmem_max();
    ck_assert_msg((double)sent * GREEDY_REPLY > wmem + 65536,
                  "the greedy client sent only %d requests: the kernel may "
                  "take all their replies (tcp_wmem's maximum %.0f)",
                  sent, wmem);
    fprintf(stderr, "greedy client: %d requests sent, their replies held\n",
            sent);
    return fd;
}

/* Read what the greedy client was sent until the server closes. */
static size_t
drain_client(int fd)
{
    char buf[65536];
    size_t total = 0;
    ssize_t n;
    struct pollfd p = {fd, POLLIN, 0};

    while (poll(&p, 1, 15000) == 1 &&
           ((n = read(fd, buf, sizeof(buf))) > 0 ||
            (n < 0 && errno == EAGAIN)))
        total += n > 0 ? (size_t)n : 0;
    close(fd);
    return total;
}

/*
 * Close the greedy client at once (a reset: SO_LINGER 0), its replies
 * unread: the worker holding them closes its connection and may exit.
 * After a reload, drain_client would read them all (22 MB in 0.2 s) and
 * then wait out its 15 s poll: the retiring worker hands the drained
 * connection to the new generation, which keeps it open.
 */
static void
reset_client(int fd)
{
    struct linger l = {1, 0};

    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
    close(fd);
}

/* ---- the watchdog ---- */

START_TEST(test_watchdog_sigstop)
{
    struct folio_client *c;
    pid_t before[4], after[4];
    uint64_t t0, deadline, replaced = 0;
    int n, ok = 0;

    start("workers = 1\nworker_timeout = 2s\nmetrics_listen = 127.0.0.1:0\n");
    c = e2e_connect(&srv);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_workers(&srv, before, 4), 1);
    ck_assert_int_eq(kill(before[0], SIGSTOP), 0);
    t0 = e2e_now_ms();
    /* A new worker, the stopped one gone (the suite's bound: generous). */
    deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
    do {
        n = e2e_workers(&srv, after, 4);
        if (n >= 1 && !e2e_pid_in(before[0], after, n) && replaced == 0)
            replaced = e2e_now_ms() - t0;
        if (replaced != 0 && (c = e2e_connect(&srv)) != NULL) {
            ok = e2e_ping(c) == 0;
            folio_client_close(c);
        }
    } while (!ok && e2e_wait_more(deadline));
    ck_assert_msg(ok, "no new worker serving %d s after the SIGSTOP",
                  e2e_bound_ms(10000, 20000) / 1000);
    fprintf(stderr, "watchdog: the stopped worker replaced %llu ms after "
                    "SIGSTOP (worker_timeout 2 s)\n",
            (unsigned long long)replaced);
    ck_assert(replaced >= 1900); /* not before worker_timeout */
    /* The log: what it was doing, its backtrace, the kill. */
    ck_assert_int_eq(e2e_wait_log(&srv, "killed by the watchdog", 5000), 0);
    ck_assert(e2e_log_has(&srv, "hung: its loop has not turned for"));
    ck_assert(e2e_log_has(&srv, "the last, server.ping from 127.0.0.1:"));
    ck_assert(e2e_log_has(&srv, "SIGABRT: backtrace of worker 0"));
    ck_assert(e2e_log_has(&srv, "folio_worker_main"));
    /* Counted, in server.stats and the metrics. */
    ck_assert(stat_num("server", "worker_timeouts") == 1);
    ck_assert(e2e_metric(&srv, "folio_worker_timeouts_total") == 1);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_stopped_retiring_killed)
{
    struct folio_client *c;
    pid_t before[4], after[4];
    uint64_t t0, deadline, gone = 0;
    int n;

    start("workers = 1\nworker_timeout = 0\nshutdown_timeout = 1s\n");
    ck_assert_int_eq(e2e_workers(&srv, before, 4), 1);
    ck_assert_int_eq(kill(before[0], SIGSTOP), 0);
    t0 = e2e_now_ms();
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    c = e2e_connect(&srv);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    /* Killed at shutdown_timeout (1 s) and its grace (1 s), not never. */
    deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
    do {
        n = e2e_workers(&srv, after, 4);
        if (!e2e_pid_in(before[0], after, n)) {
            gone = e2e_now_ms() - t0;
            break;
        }
    } while (e2e_wait_more(deadline));
    ck_assert_msg(gone != 0, "the stopped old worker is still there");
    fprintf(stderr, "retiring: the stopped old worker killed %llu ms after "
                    "the HUP (shutdown_timeout 1 s)\n",
            (unsigned long long)gone);
    ck_assert(gone >= 1000);
    ck_assert(e2e_log_has(&srv, "still draining after shutdown_timeout"));
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- HUPs never lost ---- */

static void
set_workers(int n)
{
    char text[8192];
    FILE *f;
    size_t len;
    char *p;

    ck_assert_ptr_nonnull(f = fopen(srv.conf, "r"));
    len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    ck_assert_ptr_nonnull(p = strstr(text, "workers = "));
    p[10] = (char)('0' + n);
    ck_assert_int_eq(e2e_write_file(srv.conf, text), 0);
}

static int
ready_workers(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen(srv.ready, "r");

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "workers %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* A corpus of its own, 1 MB: its index takes a while to build. */
static void
corpus_file(const char *dir, int k)
{
    char path[512];
    unsigned x = 12345u + (unsigned)k;
    FILE *f;
    int i, j;

    snprintf(path, sizeof(path), "%s/part%02d.txt", dir, k);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    for (i = 0; i < 20000; i++) {
        for (j = 0; j < 8; j++) {
            x = x * 1103515245u + 12345u;
            fprintf(f, "%sw%u", j > 0 ? " " : "", (x >> 8) % 50000);
        }
        fputc('\n', f);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/*
 * A corpus of its own in srv's directory (one 1 MB file, part00.txt)
 * into dir[len], named in srv's configuration for the next reload.
 */
static void
corpus_of_own(char *dir, size_t len)
{
    FILE *f;

    snprintf(dir, len, "%s/corpus", srv.dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    corpus_file(dir, 0);
    ck_assert_ptr_nonnull(f = fopen(srv.conf, "a"));
    fprintf(f, "corpus = %s\n", dir);
    ck_assert_int_eq(fclose(f), 0);
}

/* The HUPs that came during a reload (logged, then run after it). */
static int
hups_queued(void)
{
    return e2e_log_count(&srv, "reload in progress: SIGHUP queued");
}

START_TEST(test_two_hups_last_wins)
{
    char corpus[400];
    uint64_t deadline;
    pid_t pids[8];
    int round, seen;

    start(NULL); /* workers = 2, from e2e_start */
    corpus_of_own(corpus, sizeof(corpus));
    /* Rounds until the second HUP came during the first reload twice (a
     * test descheduled for the whole build misses it: under a busy loop
     * on both cores, 1 of 3), 8 at most; each round's last must win. */
    for (round = 1; round <= 8 && (round <= 3 || hups_queued() < 2);
         round++) {
        /*
         * The first HUP's reload reads 1 worker, then builds the index of
         * a changed corpus; the second HUP, with 3, comes during it.
         */
        corpus_file(corpus, round);
        set_workers(1);
        seen = e2e_log_count(&srv, "freight: no tables");
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        deadline = e2e_deadline(10000);
        while (e2e_log_count(&srv, "freight: no tables") == seen)
            ck_assert(e2e_wait_more(deadline));
        set_workers(3);
        e2e_pace_ms(2); /* the second HUP, 2 ms after the first */
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        deadline = e2e_deadline(20000 + e2e_bound_ms(0, 3000));
        while (ready_workers() != 3)
            ck_assert_msg(e2e_wait_more(deadline),
                          "round %d: the last configuration (3 workers) is "
                          "not served; the ready file says %d",
                          round, ready_workers());
        deadline = e2e_deadline(10000);
        while (e2e_workers(&srv, pids, 8) != 3)
            ck_assert_msg(e2e_wait_more(deadline), "round %d: %d workers",
                          round, e2e_workers(&srv, pids, 8));
        /* Back to 2 for the next round. */
        set_workers(2);
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        deadline = e2e_deadline(20000);
        while (ready_workers() != 2)
            ck_assert(e2e_wait_more(deadline));
    }
    /* The case was there: a second HUP during a reload. */
    ck_assert_int_ge(hups_queued(), 1);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- kill -9 of the master, then a start at once ---- */

static pid_t
bench_bg(const char *const *args)
{
    const char *argv[32];
    const char *p = getenv("FOLIO_BENCH");
    int n = 0, i, fd;
    pid_t pid;

    argv[n++] = p != NULL && *p != '\0' ? p : FOLIO_BUILDDIR "/folio-bench";
    argv[n++] = "-H";
    argv[n++] = srv.addr;
    for (i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if ((fd = open("/dev/null", O_WRONLY)) >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

START_TEST(test_kill9_master_then_start)
{
    const char *const ping[] = {"-c", "50", "-P", "64", "-d", "60",
                                "--max-errors", "100%", "-q", NULL};
    char conf[8192], port[32], addr[128];
    const char *colon;
    pid_t bench;
    int round, st;

    start("workers = 2\nshutdown_timeout = 3s\n");
    /* From now on the port is fixed: a restart must bind it again. */
    colon = strrchr(srv.addr, ':');
    snprintf(port, sizeof(port), "%s", colon + 1);
    snprintf(addr, sizeof(addr), "%s", srv.addr);
    {
        char text[8192], *p;
        FILE *f = fopen(srv.conf, "r");
        size_t len;

        ck_assert_ptr_nonnull(f);
        len = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[len] = '\0';
        ck_assert_ptr_nonnull(p = strstr(text, "listen = 127.0.0.1:0\n"));
        snprintf(conf, sizeof(conf), "%.*slisten = 127.0.0.1:%s\n%s",
                 (int)(p - text), text, port, p + strlen("listen = 127.0.0.1:0\n"));
        ck_assert_int_eq(e2e_write_file(srv.conf, conf), 0);
    }
    bench = bench_bg(ping);
    for (round = 0; round < 5; round++) {
        uint64_t deadline;

        /* Busy workers, as under load: folio-bench's requests answered. */
        ck_assert_int_eq(e2e_wait_ready(&srv, 1, E2E_READY_MS), 0);
        deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
        while (!(e2e_server_stat(&srv, "totals", "requests", NULL) >= 100))
            ck_assert_msg(e2e_wait_more(deadline),
                          "round %d: folio-bench's load is not served", round);
        ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(srv.pid, &st, 0), srv.pid);
        srv.pid = -1;
        ck_assert_msg(e2e_restart(&srv, NULL) == 0,
                      "round %d: foliod could not start right after the "
                      "master was killed",
                      round);
        ck_assert_str_eq(srv.addr, addr);
    }
    ck_assert(!e2e_log_has(&srv, "Address already in use"));
    kill(bench, SIGKILL);
    waitpid(bench, NULL, 0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- health endpoints ---- */

static int
health(const char *path, char *body, size_t len)
{
    return e2e_http_status(srv.metrics, path, body, len);
}

/*
 * server.stats' server.state ("serving", "reloading", "stopping"...), on a
 * new admin connection: a stopping worker closes one after its answer.
 */
static void
server_state(char *out, size_t len)
{
    struct folio_client *a = e2e_connect_admin(&srv);
    struct folio_reply r;
    struct folio_mp_cur c;
    const char *key, *v;
    uint32_t n, m, k, j, kl, vl;

    out[0] = '\0';
    ck_assert_msg(a != NULL, "the admin socket is closed");
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    c = r.result;
    ck_assert_int_eq(folio_mp_read_map(&c, &n), 0);
    for (k = 0; k < n && out[0] == '\0'; k++) {
        ck_assert_int_eq(folio_mp_read_str(&c, &key, &kl), 0);
        if (!folio_mp_str_eq(key, kl, "server")) {
            folio_mp_skip(&c);
            continue;
        }
        ck_assert_int_eq(folio_mp_read_map(&c, &m), 0);
        for (j = 0; j < m; j++) {
            ck_assert_int_eq(folio_mp_read_str(&c, &key, &kl), 0);
            if (folio_mp_str_eq(key, kl, "state") &&
                folio_mp_read_str(&c, &v, &vl) == 0) {
                snprintf(out, len, "%.*s", (int)vl, v);
                break;
            }
            folio_mp_skip(&c);
        }
    }
    folio_client_close(a);
    ck_assert_msg(out[0] != '\0', "server.stats has no server.state");
}

/*
 * /healthz and /readyz through reloads: 200 before, during (checks sent
 * once the master has logged "reloading" and before the new generation is
 * ready: a changed 1 MB corpus to index makes each reload last) and
 * after; 503 through a stop that drains.  (Through an upgrade: e2e_load.)
 */
START_TEST(test_health_through_reload_and_stop)
{
    char body[256], conf[600], corpus[400];
    uint64_t deadline;
    int round, fd, checks = 0, during = 0, seen, ready;

    start("workers = 2\nmetrics_listen = 127.0.0.1:0\nmax_output_bytes = "
          "4096\nshutdown_timeout = 5s\n");
    corpus_of_own(corpus, sizeof(corpus));
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(health("/healthz", body, sizeof(body)), 200);
    ck_assert_str_eq(body, "ok\n");
    ck_assert_int_eq(health("/readyz", body, sizeof(body)), 200);
    ck_assert_str_eq(body, "ok\n");
    /* A query string changes nothing. */
    ck_assert_int_eq(health("/healthz?verbose=1", body, sizeof(body)), 200);
    ck_assert_str_eq(body, "ok\n");
    /* Through reloads: never anything but 200 for either. */
    for (round = 0; round < 5; round++) {
        /* Another 1 MB file instead of the last: an index to build. */
        snprintf(conf, sizeof(conf), "%s/part%02d.txt", corpus, round);
        ck_assert_int_eq(unlink(conf), 0);
        corpus_file(corpus, round + 1);
        seen = e2e_log_count(&srv, "[notice] reloading");
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        deadline = e2e_deadline(30000);
        /* The master has begun: the checks from now on are during it. */
        while (e2e_log_count(&srv, "[notice] reloading") == seen)
            ck_assert_msg(e2e_wait_more(deadline), "round %d: no reload",
                          round);
        do {
            ready = e2e_wait_ready(&srv, (uint64_t)round + 3, 0) == 0;
            ck_assert_int_eq(health("/healthz", body, sizeof(body)), 200);
            ck_assert_str_eq(body, "ok\n");
            ck_assert_int_eq(health("/readyz", body, sizeof(body)), 200);
            ck_assert_str_eq(body, "ok\n");
            checks++;
            during += !ready;
        } while (!ready && e2e_wait_more(deadline));
        ck_assert_msg(ready, "round %d: generation %d not ready", round,
                      round + 3);
    }
    fprintf(stderr, "health: %d checks through 5 reloads, %d of them sent "
                    "during one, all 200\n",
            checks, during);
    ck_assert_msg(during > 0, "no check was made while a reload was on");
    ck_assert_int_eq(health("/readyz", NULL, 0), 200);
    /* A stop that drains (a client reads nothing): 503, both. */
    fd = greedy_held(40000);
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "stopping: draining", 5000), 0);
    ck_assert_int_eq(health("/healthz", body, sizeof(body)), 503);
    ck_assert_str_eq(body, "stopping\n");
    ck_assert_int_eq(health("/readyz", body, sizeof(body)), 503);
    ck_assert_str_eq(body, "stopping\n");
    drain_client(fd);
    ck_assert_int_eq(e2e_wait_exit(&srv, 10000), 0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- process titles ---- */

START_TEST(test_titles)
{
    char t[256], want[128];
    pid_t pids[8];
    uint64_t deadline;
    int n, i, fd, seen = 0;

    /* The retiring worker stays until its client drains (not killed at
     * the suite's 5 s while a loaded machine is still telling the new
     * generation ready: seen once in distcheck). */
    start("workers = 2\nmax_output_bytes = 4096\nshutdown_timeout = 120s\n");
    title_of(srv.pid, t, sizeof(t));
    ck_assert_str_eq(t, "foliod: master (generation 1)");
    n = e2e_workers(&srv, pids, 8);
    ck_assert_int_eq(n, 2);
    for (i = 0; i < n; i++) {
        title_of(pids[i], t, sizeof(t));
        ck_assert_msg(strcmp(t, "foliod: worker 0 (generation 1)") == 0 ||
                          strcmp(t, "foliod: worker 1 (generation 1)") == 0,
                      "worker title '%s'", t);
    }
    /* ps(1) shows the same (procps, required). */
    {
        char cmd[128], line[256];
        FILE *p;

        snprintf(cmd, sizeof(cmd), "ps -o args= -p %ld", (long)srv.pid);
        ck_assert_ptr_nonnull(p = popen(cmd, "r"));
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
        pclose(p);
        line[strcspn(line, "\n")] = '\0';
        while (strlen(line) > 0 && line[strlen(line) - 1] == ' ')
            line[strlen(line) - 1] = '\0';
        ck_assert_str_eq(line, "foliod: master (generation 1)");
    }
    /* A reload: one old worker cannot finish (its client reads nothing). */
    fd = greedy_held(40000);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    deadline = e2e_deadline(e2e_bound_ms(5000, 15000));
    do {
        n = e2e_workers(&srv, pids, 8);
        for (i = 0; i < n; i++) {
            title_of(pids[i], t, sizeof(t));
            if (strncmp(t, "foliod: retiring worker ", 24) == 0 &&
                strstr(t, "(generation 1)") != NULL)
                seen = 1;
        }
    } while (!seen && e2e_wait_more(deadline));
    ck_assert_msg(seen, "no retiring worker's title seen (%d processes, the "
                  "last '%s')", n, t);
    title_of(srv.pid, t, sizeof(t));
    ck_assert_str_eq(t, "foliod: master (generation 2)");
    snprintf(want, sizeof(want), "foliod: worker 0 (generation 2)");
    for (i = 0, seen = 0; i < n; i++) {
        title_of(pids[i], t, sizeof(t));
        seen += strcmp(t, want) == 0;
    }
    ck_assert_int_eq(seen, 1);
    reset_client(fd);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- the admin socket through a drain ---- */

START_TEST(test_admin_socket_through_drain)
{
    struct folio_client *a;
    struct folio_reply r;
    uint64_t deadline;
    char state[32];
    pid_t pids[4];
    uint32_t len;
    int fd, i, n, most = 0;

    /* shutdown_timeout: the drain must outlast the test's questions, however
     * slow the machine (ASan at load 23 took more than 5 s); send_timeout
     * too, or the greedy client, which takes no reply, is closed 30 s
     * after its socket filled and the drain ends under the questions
     * (seen once in a CI rehearsal under ASan: server.stats unanswered). */
    start("workers = 2\nmax_output_bytes = 4096\nshutdown_timeout = 60s\n"
          "send_timeout = 0\n");
    fd = greedy_held(40000);
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    /*
     * The idle worker exits at once, the greedy client's drains: wait for
     * that (an admin connection the exiting one accepted would be closed
     * unanswered: a race the report of issue 24 names).
     */
    ck_assert_int_eq(e2e_wait_log(&srv, "stopping: draining", 5000), 0);
    deadline = e2e_deadline(e2e_bound_ms(30000, 60000));
    while ((n = e2e_workers(&srv, pids, 4)) != 1) {
        most = n > most ? n : most;
        if (!e2e_wait_more(deadline)) {
            e2e_print_log(&srv); /* why, for the reader of the failure */
            ck_abort_msg("%d workers drain (%d seen at most, %d now)", n, most,
                         e2e_workers(&srv, pids, 4));
        }
    }
    /* The state the server reports: its log line comes a moment before. */
    do
        server_state(state, sizeof(state));
    while (strcmp(state, "stopping") != 0 && e2e_wait_more(deadline));
    ck_assert_str_eq(state, "stopping");
    /* Watchable: the operator asks, several times, while it drains. */
    for (i = 0; i < 3; i++) {
        a = e2e_connect_admin(&srv);
        ck_assert_msg(a != NULL, "the admin socket is closed during the drain");
        ck_assert_int_eq(e2e_stats(a, &r), 0);
        ck_assert_int_eq(folio_mp_read_map(&r.result, &len), 0);
        folio_client_close(a);
        server_state(state, sizeof(state));
        ck_assert_str_eq(state, "stopping");
    }
    ck_assert_uint_gt(drain_client(fd), 0);
    ck_assert_int_eq(e2e_wait_exit(&srv, 10000), 0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
lifecycle_suite(void)
{
    Suite *s = suite_create("e2e_lifecycle");
    TCase *tc = tcase_create("watchdog");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_watchdog_sigstop);
    tcase_add_test(tc, test_stopped_retiring_killed);
    suite_add_tcase(s, tc);
    tc = tcase_create("signals");
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_two_hups_last_wins);
    tcase_add_test(tc, test_kill9_master_then_start);
    suite_add_tcase(s, tc);
    tc = tcase_create("operator");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_health_through_reload_and_stop);
    tcase_add_test(tc, test_titles);
    tcase_add_test(tc, test_admin_socket_through_drain);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    e2e_require("ps", "procps"); /* test_titles */
    return folio_check_run(lifecycle_suite());
}
